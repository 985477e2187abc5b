"""The agent's state in one kernel: tools, the session file, the current session.

Created on the first turn (not at `%load_ext`), so loading the extension stays
cheap. Everything that touches the disk runs off the kernel's event loop.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentik_jupyter.core import mainloop
from agentik_jupyter.core.outside_calls import OutsideCalls
from agentik_jupyter.core.session import Session
from agentik_jupyter.core.transport import default_transport
from agentik_jupyter.ids import check_session_id
from agentik_jupyter.kernel import interrupt
from agentik_jupyter.kernel.mcp_servers import ensure_mcp
from agentik_jupyter.notebook.instructions import finder_for
from agentik_jupyter.notebook.mentions import expand_mentions, suggest_names
from agentik_jupyter.notebook.tools import register_notebook_tools
from agentik_jupyter.persistence import DB_PATH_ENV, AsyncSessionDB, ConversationInfo, DBLocation, locate_db
from agentik_jupyter.persistence.owner import open_for_notebook
from agentik_jupyter.tools.approval import CALLER, CODE_TOOL, ApprovalGate, NowhereToAsk
from agentik_jupyter.tools.checkpoint import checkpoints_for
from agentik_jupyter.tools.context import register_context_tools, variables_of
from agentik_jupyter.tools.plan import register_plan_tools
from agentik_jupyter.tools.registry import ToolRegistry, default_registry
from agentik_jupyter.types import AgentContext, AgentMode

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from agentik_jupyter.mcp import MCPManager

log = logging.getLogger(__name__)

NO_PANEL = (
    "{client}'s {tool} waits for the user's approval, but no chat panel is open in {notebook} to show its"
    " card: ask the user to run `%agent panel` in {notebook}, then call again."
)


class KernelAgent:
    """One per IPython shell: `get_agent(shell)` creates or returns it."""

    def __init__(self, shell: InteractiveShell) -> None:
        self.shell = shell
        self.panel: Any = None  # the chat panel `%agent panel` showed last (an outside agent's cards go there)
        self.registry: ToolRegistry = default_registry
        register_context_tools(self.registry, shell)
        self.location: DBLocation = locate_db(shell.user_ns, os.environ, Path.cwd())
        register_notebook_tools(
            self.registry,
            shell,
            lambda: self.location.notebook_path,
            approve=lambda call, definition: self.gate(call, definition),
            auto=lambda: self._turn_mode() == "auto",  # edits land at once in Auto (Rewind takes them back)
        )
        self.instructions = finder_for(self.location.notebook_path)
        self.db: AsyncSessionDB | None = None
        self.binding_note: str | None = None  # said once: the stranger's file set aside when the file opened
        self.session: Session | None = None
        self.gate = ApprovalGate(present=self._present_approval, scope=self._conversation_scope, mode=self._turn_mode)
        self.mcp: MCPManager | None = None  # made on first use (kernel/mcp_servers.py)
        self.trust_cards_shown: set[str] = set()  # the MCP files (by sha256) whose trust card was shown
        self.gate.notes_for = self._cannot_undo
        register_plan_tools(self.registry, self._present_approval, self._run_plan, self._running_plan)
        self._needs_resume = False
        self._saved: Session | None = None  # the saved session while `--temp` turns run
        self._outside: OutsideCalls | None = None
        loop = mainloop.capture()
        if loop is not None:
            interrupt.install(
                getattr(shell, "kernel", None), self._running_turn, self._mark_interrupted, self.interrupt, loop
            )

    def outside_calls(self) -> OutsideCalls:
        """The MCP clients' calls (core/outside_calls.py): in the notebook session's queue, through
        this kernel's approval gate, each client a session of its own in the sessions file."""
        session = self.session if self.session is not None else self.session_for()  # (a --temp one too)
        if self._outside is None or self._outside.session is not session:
            previous = self._outside
            self._outside = OutsideCalls(session, self.open_db, checkpoints_for(self.shell))
            if previous is not None:  # the clients keep their sessions when the notebook's session changes
                self._outside.conversations, self._outside.calls = previous.conversations, previous.calls
        return self._outside

    def _conversation_scope(self) -> str:
        """ "Always" answers belong to the current conversation (a temporary one by its object), or to
        the outside client whose call asks."""
        caller = CALLER.get()
        if caller is not None:
            return f"outside-{caller}"
        session = self.session
        if session is None:
            return ""
        return session.conversation_id or f"temporary-{id(session)}"

    def _turn_mode(self) -> AgentMode:
        """The running turn's mode, as the approval gate asks it first; an outside client's call runs
        in the session's mode as it is now (no turn of ours set it)."""
        session = self.session
        if session is None:
            return "agent"
        return session.effective_mode if CALLER.get() is not None else session.orchestrator.mode

    def _run_plan(self, plan: Any) -> None:
        """The user ran the plan: the rest of the turn is in its mode, with run_code and plan_step offered."""
        if self.session is not None:
            self.session.orchestrator.mode = plan.run_mode
            self.session.orchestrator.plan = plan

    def _running_plan(self) -> object | None:
        return self.session.orchestrator.plan if self.session is not None else None

    def _cannot_undo(self, call: Any) -> list[str]:
        """What a rewind could not take back if this run_code ran: said on the approval card."""
        code = call.args.get("code") if call.name == CODE_TOOL else None
        return checkpoints_for(self.shell).cannot_undo(code) if isinstance(code, str) else []

    def _running_turn(self) -> Any:
        session = self.session
        return session._task if session is not None and session.busy else None

    def _mark_interrupted(self) -> None:
        if self.session is not None:
            self.session.request_stop()

    def interrupt(self) -> int:
        """Jupyter's Interrupt: stop the running turn and empty the queue."""
        return self.session.stop_all() if self.session is not None else 0

    def _present_approval(self, request: Any) -> None:
        session = self.session
        if request.requester is not None:  # an outside agent's call: no cell of the notebook is its own
            self._present_in_panel(request)
            return
        if session is None or session.approval_presenter is None:
            raise RuntimeError("no approval view")
        session.approval_presenter(request)

    def _present_in_panel(self, request: Any) -> None:
        """The card in the open chat panel, not in the view of the last turn (a finished `%%agent`
        cell, which nobody watches); with no panel open, the call is refused saying how to open one."""
        panel = self.panel
        if panel is None or panel.widget.comm is None:  # (never shown, or closed)
            where = Path(self.location.notebook_path or "").name or "the notebook"
            raise NowhereToAsk(NO_PANEL.format(client=request.requester, tool=request.tool_name, notebook=where))
        panel.present_approval(request)

    async def open_db(self) -> AsyncSessionDB:
        """Open the notebook's sessions file; a stranger's file found under its name is set aside (owner.py)."""
        if self.db is None:
            notebook = None if os.environ.get(DB_PATH_ENV, "").strip() else self.location.notebook_path
            db, note = await asyncio.to_thread(open_for_notebook, self.location.db_path, notebook)
            self.db = AsyncSessionDB(db)
            self.binding_note = note
        return self.db

    async def follow_notebook(self, notebook: Path) -> bool:
        """The notebook was renamed or moved: from now on its sessions file is beside its new path.

        True when this kernel had the file open and moved it (after every write already asked for).
        """
        old = self.location.db_path
        self.location = locate_db(self.shell.user_ns, os.environ, Path.cwd())
        self.instructions = finder_for(self.location.notebook_path)
        if self.db is None or self.location.db_path == old:
            return False
        await self.db.relocate(self.location.db_path)
        return True

    def session_for(self, temporary: bool = False, new: bool = False) -> Session:
        """The Session object the next turn goes to (its DB is attached in `prepare`)."""
        if temporary:
            if self.session is None or not self.session.temporary or new:
                mode = self.session.mode if self.session is not None else None
                if self.session is not None and not self.session.temporary:
                    self._saved = self.session  # the panel and later cells keep this one, not a copy
                self.session = self._make_session(temporary=True)
                self.session.mode = mode  # a temporary turn asks as the session it sits beside
            return self.session
        if self.session is None or self.session.temporary:
            if self._saved is not None:
                self.session, self._saved = self._saved, None
            else:
                self.session = self._make_session()
                self._needs_resume = True
        return self.session

    async def prepare(self, session: Session, *, new: bool = False, session_id: str | None = None) -> None:
        """Run inside the turn: open the file, then continue, switch or start a conversation.

        After a kernel restart the first turn continues the notebook's latest session.
        `session_id` (`--session`) must be a session id (ids.py), as one read from the file is.
        """
        if session_id is not None:
            check_session_id(session_id)
        await self.ensure_mcp()
        if session.temporary:
            return
        if session.db is None:
            session.db = await self.open_db()
            if self.binding_note:
                print(f"agentik: {self.binding_note}", file=sys.stderr)
        if new:
            session.new_conversation()
        elif session_id is not None and session_id != session.conversation_id:
            await session.resume(session_id)
        elif self._needs_resume:
            await session.resume()
        self._needs_resume = False

    async def resume_session(self, conversation_id: str) -> ConversationInfo:
        """Continue this session in the notebook, as `%agent resume ID` does (the sidebar's
        Continue here, over the control comm). Refused while a turn runs: the running turn
        writes to the conversation it started in."""
        check_session_id(conversation_id)
        session = self.session_for()
        if session.busy or session.queued:
            raise RuntimeError("a turn is running: wait for it or stop it (%agent stop), then continue here")
        if session.db is None:
            session.db = await self.open_db()
        info = await session.resume(conversation_id)
        if info is None:
            raise RuntimeError("this session has no sessions file to resume from")
        self._needs_resume = False
        return info

    async def next_session(self) -> Session:
        """The session the next turn goes to, with its file open and, after a kernel restart, the
        notebook's latest session resumed (which that turn continues): its saved mode is there."""
        session = self.session_for()
        if not session.temporary:
            if session.db is None:
                session.db = await self.open_db()
            if self._needs_resume:
                await session.resume()
                self._needs_resume = False
        return session

    async def set_mode(self, mode: AgentMode) -> None:
        """`%agent mode NAME`: the next session's mode from now on, saved with it."""
        await (await self.next_session()).set_mode(mode)

    def active_session_id(self) -> str | None:
        """The saved session the next turn continues (None: a new or temporary one, or none yet)."""
        session = self.session
        if session is None or session.temporary or self._needs_resume:
            return None
        return session.conversation_id

    def _make_session(self, temporary: bool = False) -> Session:
        session = Session(default_transport(), self.registry, temporary=temporary, approver=self.gate)
        session.context_provider = self.context
        session.checkpoints = checkpoints_for(self.shell)
        session.expander = lambda question: expand_mentions(
            self.shell, self.registry, question, lambda: self.location.notebook_path
        )
        session.name_suggester = lambda prefix: suggest_names(self.shell, prefix)
        return session

    def context(self, cell_id: str | None = None) -> AgentContext:
        """What the model is told about the notebook for this turn."""
        path = self.location.notebook_path
        return AgentContext(
            notebook_path=str(path) if path else None,
            cell_id=cell_id,
            variables=variables_of(self.shell),
            execution_count=getattr(self.shell, "execution_count", None),
            instructions=self.instructions.prompt_text(),
        )

    async def ensure_mcp(self) -> None:
        """Start the trusted MCP servers on the first turn, or show the trust card (kernel/mcp_servers.py)."""
        await ensure_mcp(self)

    def close(self) -> None:
        if self.mcp is not None:
            try:
                self.mcp.close()
            except Exception:
                log.exception("closing MCP servers failed")
        if self.db is not None:
            self.db.db.close()


_agents: dict[int, KernelAgent] = {}


def peek_agent(shell: InteractiveShell) -> KernelAgent | None:
    """The shell's agent if a turn or command has created it (asking never creates one)."""
    return _agents.get(id(shell))


def get_agent(shell: InteractiveShell) -> KernelAgent:
    agent = _agents.get(id(shell))
    if agent is None:
        agent = _agents[id(shell)] = KernelAgent(shell)
    return agent


def forget_agent(shell: InteractiveShell) -> None:
    agent = _agents.pop(id(shell), None)
    if agent is not None:
        agent.close()
