"""Rewind: take back a session's latest turns — the kernel's variables and the conversation.

`plan_rewind(session, number)` says what rewinding back to before turn `number` (the latest turn
when None) would do, without doing it; `apply_rewind` does it: the variables come back from the
turns' checkpoints (tools/checkpoint.py), the turns leave working memory so the next request to
the model no longer has them, and the audit log, which keeps every message, gets a "rewound"
record on each. The command (`%agent rewind`) and the panel's Rewind button share this.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agentik_jupyter.core.session import Session
from agentik_jupyter.persistence import TurnRow
from agentik_jupyter.tools.checkpoint import Restored

NOTHING = "Nothing to rewind: this session has no turn yet."
REWOUND_PREFIX = "Rewound turn"  # how a rewound record begins (the panel shows it as a mark, not an error)
RECORD_LINES = 5  # the printout's lines the audit log's record keeps (the cells' lines are not in it)


class RewindError(ValueError):
    """The rewind asked for cannot be done (no such turn, a turn is running, nothing saved); nothing changed."""


@dataclass
class RewindPlan:
    """What a rewind does: the turns it drops and what happens to the variables."""

    conversation_id: str
    turns: list[TurnRow]
    variables: Restored = field(default_factory=Restored)
    no_checkpoint: list[int] = field(default_factory=list)  # turns run before this kernel kept checkpoints
    cell_lines: list[str] = field(default_factory=list)  # what happens to the cells (notebook/revert.py says)
    cell_names: dict[str, str] = field(default_factory=dict)  # cell id -> how the preview named it

    @property
    def first(self) -> int:
        return self.turns[0].number

    def lines(self, done: bool) -> list[str]:
        """The preview (done=False) or the printout (done=True), one fact a line."""
        numbers = ", ".join(str(t.number) for t in self.turns)
        head = "Rewound" if done else "Rewind would take back"
        turns = "turn" if len(self.turns) == 1 else "turns"
        out = [f"{head} {turns} {numbers} (back to before turn {self.first})."]
        v = self.variables
        out.append("names restored: " + (", ".join(v.restored) or "none"))
        out.append("names removed: " + (", ".join(v.removed) or "none"))
        dropped = "; ".join(f"{t.number}: {_short(t.question)}" for t in self.turns)
        out.append(
            ("turns dropped from the conversation: " if done else "turns to drop from the conversation: ") + dropped
        )
        missing = list(v.not_restored)
        if self.no_checkpoint:
            which = ", ".join(str(n) for n in self.no_checkpoint)
            missing.append(f"the variables of turn {which}: no checkpoint in this kernel (run before it started)")
        out.append(("could not restore: " if done else "cannot restore: ") + ("; ".join(missing) or "nothing"))
        return out + self.cell_lines

    def unrecorded(self) -> list[str]:
        """The printout's lines its record does not keep (what happened to the cells)."""
        return self.lines(done=True)[RECORD_LINES:]

    def record(self) -> str:
        """The audit log's rewound record: what the rewind did to the variables and the conversation."""
        head, *rest = self.lines(done=True)[:RECORD_LINES]
        return f"{head} " + "; ".join(rest)


def _short(text: str, limit: int = 50) -> str:
    line = " ".join(text.split())
    return repr(line if len(line) <= limit else line[: limit - 1] + "…")


async def plan_rewind(session: Session, number: int | None = None) -> RewindPlan:
    """What rewinding to before turn `number` (None: the latest turn) would do; raises RewindError."""
    if session.busy or session.queued:
        raise RewindError("a turn is running: wait for it or stop it (%agent stop), then rewind")
    if session.db is None or session.conversation_id is None:
        if session.temporary:
            raise RewindError("a temporary session (--temp) is not saved, so its turns cannot be rewound")
        raise RewindError(NOTHING)
    rows = [t for t in await session.db.turns(session.conversation_id) if not t.rewound]
    if not rows:
        raise RewindError(NOTHING)
    if number is None:
        chosen = rows[-1:]
    else:
        chosen = [t for t in rows if t.number >= number]
        if not chosen or chosen[0].number != number:
            have = ", ".join(str(t.number) for t in rows)
            raise RewindError(f"there is no turn {number} to rewind in this session (its turns: {have})")
    plan = RewindPlan(session.conversation_id, chosen)
    checkpoints = session.checkpoints
    if checkpoints is not None:
        plan.variables = checkpoints.restore([t.turn_id for t in chosen], preview=True)
    plan.no_checkpoint = [t.number for t in chosen if checkpoints is None or checkpoints.find(t.turn_id) is None]
    return plan


async def apply_rewind(session: Session, plan: RewindPlan) -> RewindPlan:
    """Do the rewind planned: variables back, turns out of working memory, a record in the audit log.

    The transcript is reloaded from the audit log, where the turns now show as rewound."""
    if session.busy or session.queued:
        raise RewindError("a turn is running: wait for it or stop it (%agent stop), then rewind")
    if session.db is None or session.conversation_id != plan.conversation_id:
        raise RewindError("the session changed since the preview: ask for the rewind again")
    ids = [t.turn_id for t in plan.turns]
    await session.db.rewind_turns(plan.conversation_id, ids, plan.record())  # first: a failed write changes nothing
    if session.checkpoints is not None:
        plan.variables = session.checkpoints.restore(ids)
        session.checkpoints.forget(ids)
    await session.resume(plan.conversation_id)
    return plan
