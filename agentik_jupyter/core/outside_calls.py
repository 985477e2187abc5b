"""An outside agent's tool calls (over MCP) as turns of a session of its own in the sessions file.

Each MCP client (named by its `initialize`, e.g. "claude-code") gets one conversation in the
notebook's sessions file, titled with its name; each of its calls is a turn there (the question
says who called what, the answer is the call and its result), so the audit log keeps every call
and the sidebar lists the client. A call takes a checkpoint as our own turns do, so `rewind`
takes back what the client's run_code changed.

The call itself runs through an Orchestrator of its own (`run_call`: the registry's checks, the
tool's policy, then the notebook session's orchestrator's approver, asked at call time: the
kernel's approval gate our agent's calls pass), queued in the notebook session's turn queue (one at
a time per kernel, behind a running turn; Stop ends it). It keeps what it does in the session's
AgentStore, with the client's name as its `caller`: the panel's status line and cards read that store,
and the queue runs one turn or call at a time, so they never share it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from agentik_jupyter.core.orchestrator import STOPPED_CALL, Approver, Orchestrator, TurnOutcome
from agentik_jupyter.core.rewind import RewindPlan
from agentik_jupyter.core.session import Session
from agentik_jupyter.core.store import ChatStore
from agentik_jupyter.core.write_through import WriteThrough
from agentik_jupyter.persistence import AsyncSessionDB, ConversationNotFoundError
from agentik_jupyter.tools.approval import CALLER
from agentik_jupyter.tools.checkpoint import Checkpoints
from agentik_jupyter.types import (
    ChatMessage,
    End,
    StartResponse,
    ToolCall,
    ToolDefinition,
    ToolResult,
    UserMessage,
)

KERNEL_DIED = "The kernel died or was restarted before this call finished; what it did is lost."
NOTHING_TO_REWIND = "Nothing to rewind: {client} has made no call in this kernel that can still be rewound."


class OutsideCalls:
    """The calls of every outside client of one kernel."""

    def __init__(
        self,
        session: Session,
        open_db: Callable[[], Awaitable[AsyncSessionDB | None]],
        checkpoints: Checkpoints | None,
    ) -> None:
        self.session = session
        self.open_db = open_db
        self.checkpoints = checkpoints
        self.orchestrator = Orchestrator(
            session.orchestrator.transport,  # never asked: an outside call has no model of ours
            session.orchestrator.registry,
            ChatStore(),
            session.agent_store,  # what the panel shows of the running turn (see above)
            approver=self._approve,
        )
        self._writing: tuple[AsyncSessionDB | None, str | None, str | None] = (None, None, None)
        self._audit = WriteThrough(lambda: self._writing)  # the call's records, as a turn's are written
        self.orchestrator.on_event(self._audit.event)
        self.orchestrator.on_event(session.show_event)  # the panel shows the call's card live
        self.conversations: dict[str, str] = {}  # client name -> its conversation id
        self.calls: dict[str, list[str]] = {}  # client name -> the turn ids of its calls, oldest first

    async def _approve(self, call: ToolCall, definition: ToolDefinition) -> bool:
        """The notebook session's own approver, asked at call time: whatever decides for our agent's
        calls (the approval gate, and what wraps it) decides for the client's."""
        approver: Approver | None = self.session.orchestrator.approver
        return await approver(call, definition) if approver is not None else False

    def start(self, client: str, call: ToolCall) -> tuple[asyncio.Task[TurnOutcome], asyncio.Future[ToolResult]]:
        """Queue the call behind the session's turns; the task (to cancel) and the call's result."""
        return self.session.queue_outside(lambda: self._call(client, call))

    async def _call(self, client: str, call: ToolCall) -> ToolResult:
        CALLER.set(client)  # this task's own context: the turns keep theirs
        db = await self.open_db()
        user = UserMessage(content=f"{client} called {call.name}")
        conversation, turn_id = await self._begin(db, client, user) if db is not None else (None, None)
        self._writing = (db, conversation, turn_id)
        try:
            assistant = ChatMessage(role="assistant", content="", tool_calls=[call])
            self._audit.message(assistant)
            await self._audit.drain()  # the call is in the audit log before it runs (a kernel may die under it)
            # who runs what, before the panel's line opens on it (run_call's end clears it)
            self.orchestrator.agent_store.set(caller=client, status="processing", active_tool=call.name)
            self.orchestrator.emit(StartResponse(iteration=0))  # a turn's body opens in the panel
            self.orchestrator.mode = self.session.effective_mode  # the session's mode holds for the client
            try:
                result = await self.orchestrator.run_call(call)
            except asyncio.CancelledError:  # Stop, or the client cancelled: the call's turn says so
                self.orchestrator.emit(End(reason="interrupted"))
                await self._stopped(call, user, assistant)
                raise
            self.orchestrator.emit(End(reason="complete"))
            answer = ChatMessage(role="tool", content=result.error or str(result.result), tool_result=result)
            self._audit.message(answer)
            await self._audit.drain()
            if db is not None and conversation is not None and turn_id is not None:
                await db.commit_turn(conversation, turn_id, [user.chat_message(), assistant, answer])
        finally:
            self._writing = (None, None, None)
        return result

    async def _stopped(self, call: ToolCall, user: UserMessage, assistant: ChatMessage) -> None:
        db, conversation, turn_id = self._writing
        stopped = ToolResult(tool_call_id=call.id, name=call.name, error=STOPPED_CALL)
        answer = ChatMessage(role="tool", content=STOPPED_CALL, tool_result=stopped)
        self._audit.message(answer)
        await self._audit.drain()
        if db is not None and conversation is not None and turn_id is not None:
            await db.interrupt_turn(conversation, turn_id, [user.chat_message(), assistant, answer])

    async def _begin(self, db: AsyncSessionDB, client: str, user: UserMessage) -> tuple[str, str]:
        conversation = self.conversations.get(client)
        if conversation is None:  # the kernel restarted since the client's last call: it goes on there
            conversation = await self._earlier_session(db, client)
        for _attempt in range(2):
            if conversation is None:
                conversation = (await db.create_conversation(title=client)).id
            self.conversations[client] = conversation
            try:
                history, turn_id = await db.begin_turn_after_history(conversation, user)
            except ConversationNotFoundError:  # deleted from the sidebar: the next call starts another
                conversation = None
                continue
            if self.checkpoints is not None:
                self.checkpoints.begin_turn(turn_id, conversation, len(history))
            self.calls.setdefault(client, []).append(turn_id)
            return conversation, turn_id
        raise RuntimeError("could not start the call's turn in the sessions file")

    async def _earlier_session(self, db: AsyncSessionDB, client: str) -> str | None:
        """The client's latest session in the file (titled with its name, its first turn one of its
        calls), its last call closed if the kernel died under it; None when it has none."""
        for info in await db.list_conversations(limit=200):
            if info.title != client:
                continue
            turns = await db.turns(info.id)
            if not turns or not turns[0].question.startswith(f"{client} called "):
                continue  # the user's own session of that name
            last = turns[-1].turn_id
            page = await db.audit_log(info.id, limit=20, whole_turns=True)
            kinds = {e.record.kind for e in page.entries if e.turn_id == last}
            if not kinds & {"tool_result", "error"}:
                await db.fail_turn(info.id, last, KERNEL_DIED, code="kernel_died")
            return info.id
        return None

    def rewind(self, client: str, calls: int = 1) -> tuple[asyncio.Task[TurnOutcome], asyncio.Future[ToolResult]]:
        """Take back the client's latest `calls` calls: the variables their code changed, and the calls
        out of its session (marked rewound in the audit log). Queued like a call."""
        return self.session.queue_outside(lambda: self._rewind(client, max(1, calls)))

    def _changed_since(self, taken: list[str]) -> list[str]:
        """Names the calls changed that a later turn not being rewound (our agent's) changed again."""
        if self.checkpoints is None:
            return []
        turns = self.checkpoints.turns
        chosen = [i for i, t in enumerate(turns) if t.turn_id in taken]
        if not chosen:
            return []
        names = {name for t in turns if t.turn_id in taken for name in t.saved}
        later = [t for t in turns[chosen[0] + 1 :] if t.turn_id not in taken]
        return sorted({name for t in later for name in t.saved if name in names})

    async def _rewind(self, client: str, calls: int) -> ToolResult:
        conversation, ids = self.conversations.get(client), self.calls.get(client) or []
        db = await self.open_db()
        if conversation is None or not ids or db is None:
            return ToolResult(tool_call_id="rewind", name="rewind", result=NOTHING_TO_REWIND.format(client=client))
        chosen_ids = ids[-calls:]
        rows = [t for t in await db.turns(conversation) if t.turn_id in chosen_ids and not t.rewound]
        if not rows:
            return ToolResult(tool_call_id="rewind", name="rewind", result=NOTHING_TO_REWIND.format(client=client))
        plan = RewindPlan(conversation, rows)
        taken = [t.turn_id for t in rows]
        clash = self._changed_since(taken)
        if clash:
            return ToolResult(
                tool_call_id="rewind",
                name="rewind",
                error=f"Refused: the notebook's own turns changed {', '.join(clash)} after your calls did; "
                "rewinding would undo the user's work. Ask the user to rewind in the notebook.",
            )
        if self.checkpoints is not None:
            plan.variables = self.checkpoints.restore(taken, preview=True)
        await db.rewind_turns(conversation, taken, plan.record())
        if self.checkpoints is not None:
            plan.variables = self.checkpoints.restore(taken)
            self.checkpoints.forget(taken)
        self.calls[client] = [i for i in ids if i not in taken]
        return ToolResult(tool_call_id="rewind", name="rewind", result="\n".join(plan.lines(done=True)))
