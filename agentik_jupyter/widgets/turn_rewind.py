"""A Rewind control on each turn (a `%%agent` cell's view, each turn of the panel's transcript).

Pressed, it shows what rewinding back to before that turn would do (what `%agent rewind N
--preview` prints), asks, and does it on "Rewind now". A turn that can no longer be rewound (it
was rewound, or its checkpoint was released) says so instead of offering the button. The turn is
known by its question's message id; its number and state are read again from the sessions file
whenever the conversation changes or a turn ends (one read for all the session's controls), so
a control follows rewinds made elsewhere (`%agent rewind`, another control, the panel).
A control opens one widget, its button; when it has more to show (the preview, a note) a box takes
the button's place through `place(old, new)`, which its host gives (the cell's display, the panel).
A host that can show HTML without a widget (a cell's display) gives `note_at` too: a turn that can
never be rewound again (rewound, or its checkpoint released) then shows its note there and its
button is closed, so an old turn costs no widget and no more refreshes.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Callable
from typing import Any

from ipywidgets import HBox, VBox, Widget

from agentik_jupyter.core.mainloop import main_thread_callback
from agentik_jupyter.core.rewind import RewindError, RewindPlan
from agentik_jupyter.notebook.revert import plan as plan_rewind
from agentik_jupyter.notebook.revert import rewind as apply_rewind
from agentik_jupyter.persistence import TurnRow
from agentik_jupyter.security.scrub import scrub
from agentik_jupyter.types import End, Event
from agentik_jupyter.widgets.markdown import escape
from agentik_jupyter.widgets.shared import box, button, html

log = logging.getLogger(__name__)

CLASSES = ("agentik-turn-rewind",)
REWOUND_NOTE = "↶ This turn was rewound."
ELSEWHERE_NOTE = "This turn is not in the current session: resume its session to rewind it."


def lines_html(lines: list[str]) -> str:
    """A preview or a printout: its first line in bold, the facts below it."""
    items = "".join(f"<li>{escape(line)}</li>" for line in lines[1:])
    return f'<div class="agentik-rewind"><b>{escape(lines[0])}</b><ul>{items}</ul></div>'


def notes_html(lines: list[str]) -> str:
    """Facts without a heading, those that say something happened (not "…: none"): a host that shows
    the rewind's record shows only what it does not hold, when there is any."""
    facts = [line for line in lines if not line.endswith(": none")]
    return f'<ul class="agentik-rewind">{"".join(f"<li>{escape(line)}</li>" for line in facts)}</ul>' if facts else ""


def released_note(number: int, why: str) -> str:
    return f"Turn {number} can no longer be rewound: its checkpoint was released ({why})."


def note_for(row: TurnRow | None, released: str | None) -> str | None:
    """Why a turn cannot be rewound (None: it can), from its row in the current session (None:
    not there) and why its checkpoint was released (None: it was not)."""
    if row is None:
        return ELSEWHERE_NOTE
    if row.rewound:
        return REWOUND_NOTE
    if released is not None:
        return released_note(row.number, released)
    return None


def failure_text(exc: Exception) -> str:
    """Why nothing was rewound, as the user reads it (a failure that is not the user's is logged too)."""
    if not isinstance(exc, RewindError):
        log.exception("the rewind failed", exc_info=exc)
    why = str(exc) if isinstance(exc, RewindError) else f"{type(exc).__name__}: {exc}"
    return f"Nothing rewound: {scrub(why)}"


async def turn_rows(session: Any) -> dict[str, TurnRow]:
    """The turns of the session's current conversation, by their question's message id."""
    if session.db is None or session.conversation_id is None:
        return {}
    return {r.message_id: r for r in await session.db.turns(session.conversation_id)}


def released_why(session: Any, row: TurnRow | None) -> str | None:
    """Why the turn's checkpoint was released (None: it was not, or there is none to release)."""
    checkpoints = getattr(session, "checkpoints", None)
    found = checkpoints.find(row.turn_id) if checkpoints is not None and row is not None else None
    return found.released if found is not None else None


Place = Callable[[Widget, Widget], Any]
NoteAt = Callable[[str], Any]


def final(note: str | None) -> bool:
    """Whether the note is for good: a rewound turn stays rewound, and a released checkpoint is the
    oldest kept, so no rewind can reach past it (a turn of another session can be resumed)."""
    return note is not None and note != ELSEWHERE_NOTE


class TurnRewind:
    """One turn's control; `widget` goes at the end of the turn. Made by `rewind_control`."""

    def __init__(
        self, session: Any, message_id: str, place: Place, *, quiet_rewound: bool = False, note_at: NoteAt | None = None
    ) -> None:
        self.session = session
        self.place = place
        self.note_at = note_at
        self.message_id = message_id
        self.quiet_rewound = quiet_rewound  # a rewound turn shows nothing (its host says it: the panel)
        self.row: TurnRow | None = None
        self.note: str | None = None  # why this turn cannot be rewound (shown instead of the button)
        self.plan: RewindPlan | None = None
        self.task: asyncio.Task[Any] | None = None
        self.button = button(
            "Rewind",
            icon="undo",
            tooltip="Take this turn back, and the turns after it (shows what it would do, asks first)",
        )
        self.button.on_click(main_thread_callback(lambda _: self._start(self.preview())))
        self.widget: Widget = self.button  # the button alone, until there is more to show
        self._box: Any = None
        self._message: Any = None  # made when needed: the preview, the outcome or the note
        self.outcome = ""  # the last rewind's printout (or why nothing was rewound), as HTML
        self.busy = False  # a preview or a rewind is on its way
        self._drawn: str | None = None  # the note shown now
        self._choices: Any = None

    # ---- what the user sees ----

    def _say(self, value: str) -> Any:
        if self._message is None:
            self._message = html(value)
        else:
            self._message.value = value
        return self._message

    def _ask(self) -> Any:
        if self._choices is None:
            confirm = button("Rewind now", icon="undo", kind="reject")
            cancel = button("Cancel")
            confirm.on_click(main_thread_callback(lambda _: self._start(self.confirm())))
            cancel.on_click(main_thread_callback(lambda _: self.cancel()))
            self._choices = box(HBox, (confirm, cancel))
        return self._choices

    def _show(self, *children: Any) -> None:
        if self.widget.comm is None:  # (its host closed it)
            return
        if self._box is not None:
            self._box.children = children
        elif children != (self.button,):
            self._box = box(VBox, children, classes=CLASSES)
            old, self.widget = self.widget, self._box
            self.place(old, self._box)

    def _idle(self, outcome: str | None = None) -> None:
        """The button (or why there is none), below the last outcome (`outcome` replaces it)."""
        if outcome is not None:
            self.outcome = outcome
        shown, self._drawn = self.outcome, self.note
        if self.note is not None and not (self.quiet_rewound and self.note == REWOUND_NOTE):
            shown += f"<em>{escape(self.note)}</em>"
        if self.note_at is not None and final(self.note) and self._box is None and self.widget is self.button:
            self.note_at(shown)  # (nothing left to press: no widget for it; the closed button ends its refreshes)
            self.button.close()
            return
        self._show(*((self._say(shown),) if shown else ()), *(() if self.note is not None else (self.button,)))

    def update(self, row: TurnRow | None, released: str | None) -> None:
        """The turn's state as read from the sessions file (None: not in the current session)."""
        self.row = row
        self.note = note = note_for(row, released)
        if note != self._drawn and self.plan is None and not self.busy:  # (a preview on show stays until answered)
            self._idle()

    # ---- actions ----

    def _start(self, work: Any) -> None:
        if self.busy:
            work.close()
            return
        self.busy = True
        self.task = asyncio.get_running_loop().create_task(work)
        self.task.add_done_callback(lambda _: setattr(self, "busy", False))

    async def preview(self) -> None:
        """Show what rewinding back to before this turn would do, and ask."""
        await controls_of(self.session).refresh()
        if self.note is not None or self.row is None:
            self._idle()
            return
        try:
            self.plan = await plan_rewind(self.session, self.row.number)
        except Exception as exc:
            self._failed(exc)
            return
        self._show(self._say(lines_html(self.plan.lines(done=False))), self._ask())

    async def confirm(self) -> None:
        plan, self.plan = self.plan, None
        if plan is None:
            return
        self._show(self._say("<em>Rewinding…</em>"))
        try:
            done = await apply_rewind(self.session, plan)
        except Exception as exc:
            self._failed(exc)
            return
        self.outcome = notes_html(done.unrecorded()) if self.quiet_rewound else lines_html(done.lines(done=True))
        await controls_of(self.session).refresh()  # (this turn is rewound now: the note says so)
        self._idle()

    def cancel(self) -> None:
        self.plan = None
        self._idle("")

    def _failed(self, exc: Exception) -> None:
        """Why nothing was rewound, above the button."""
        self._idle(f"<em>{escape(failure_text(exc))}</em>")


MAX_WATCHED = 500
"""The most finished turns whose transcripts are shown again marked when they are rewound (the latest)."""


class SessionControls:
    """The live controls of one session, brought up to date together (one read of its turns), and
    the finished turns to tell when they are rewound (`watch`)."""

    def __init__(self, session: Any) -> None:
        self._session = weakref.ref(session)  # (the session holds this through its subscriptions)
        self.controls: weakref.WeakSet[TurnRewind] = weakref.WeakSet()
        self.watched: dict[str, Callable[[], None]] = {}  # by the turn's question's message id
        self._due: asyncio.Task[Any] | None = None
        self._again = False  # a change came while the due refresh was on its way: read once more
        self._whole = False  # the due refresh brings every control up to date (else only the new ones)
        self._new: weakref.WeakSet[TurnRewind] = weakref.WeakSet()  # added since the last read
        self._rows: dict[str, TurnRow] | None = None  # the last read, while no change came since
        self._changes = 0  # changes that may concern every control (a read taken before one is stale)
        self._seen = self._tip(session.chat_store.messages)
        session.chat_store.subscribe(self._on_chat)
        session.on_event(self._on_event)

    @staticmethod
    def _tip(messages: Any) -> tuple[int, Any]:
        return len(messages), (messages[-1] if messages else None)

    def _on_chat(self, state: Any) -> None:
        """A rewind or a resume sets the messages anew (the transcript reloaded); a turn that runs
        only adds messages after the same ones, and no older turn's state changes then (no read)."""
        messages = state.messages
        count, last = self._seen
        self._seen = self._tip(messages)
        if not (count and len(messages) >= count and messages[count - 1] is last):
            self.soon()

    def _on_event(self, event: Event) -> None:
        if isinstance(event, End):  # a new turn may have released older turns' checkpoints
            self.soon()

    def add(self, control: TurnRewind) -> None:
        """A new control is read once (its turn may already be out of reach); adding one changes
        no other control, so the others are not updated for it."""
        self.controls.add(control)
        self._new.add(control)
        self._schedule()

    def watch(self, message_id: str, rewound: Callable[[], None]) -> None:
        """Call `rewound()` once, when the turn asked by `message_id` is rewound (here or elsewhere)."""
        self.watched[message_id] = rewound
        while len(self.watched) > MAX_WATCHED:
            del self.watched[next(iter(self.watched))]

    def soon(self) -> None:
        """Refresh every control once the current work on the loop is done (many changes, one read;
        a change while that read is on its way gets a read of its own after it)."""
        self._changes += 1
        self._rows = None
        self._whole = True
        self._schedule()

    def _schedule(self) -> None:
        if not (self.controls or self.watched):
            return
        if self._due is not None and not self._due.done():
            self._again = True
            return
        try:
            self._due = asyncio.get_running_loop().create_task(self._refresh_soon())
        except RuntimeError:
            pass

    async def _refresh_soon(self) -> None:
        await asyncio.sleep(0)
        self._again = True
        while self._again:
            self._again = False
            whole, self._whole = self._whole, False
            await self._refresh(whole)

    async def refresh(self) -> None:
        """Read the session's turns and bring every control up to date."""
        await self._refresh(True)

    async def _refresh(self, whole: bool) -> None:
        session = self._session()
        controls, watched = (self.controls, self.watched) if whole else (self._new, {})
        live = [c for c in controls if c.widget.comm is not None]
        self._new = weakref.WeakSet()
        if session is None or not (live or watched):
            return
        rows = self._rows
        if whole or rows is None or any(c.message_id not in rows for c in live):
            changes = self._changes
            try:
                rows = await turn_rows(session)
            except Exception:
                log.exception("could not read the session's turns")
                return
            if changes == self._changes:
                self._rows = rows
        by_message = rows  # (a new control's turn, read since the last change: that read holds it)
        for control in live:
            row = by_message.get(control.message_id)
            control.update(row, released_why(session, row))
        for message_id in [m for m in watched if (row := by_message.get(m)) is not None and row.rewound]:
            try:
                self.watched.pop(message_id)()
            except Exception:
                log.exception("could not show the rewound turn's transcript again")


_controls: weakref.WeakKeyDictionary[Any, SessionControls] = weakref.WeakKeyDictionary()


def controls_of(session: Any) -> SessionControls:
    found = _controls.get(session)
    if found is None:
        found = _controls[session] = SessionControls(session)
    return found


def rewind_control(
    session: Any, message_id: str | None, place: Place, *, quiet_rewound: bool = False, note_at: NoteAt | None = None
) -> TurnRewind | None:
    """A Rewind control for the turn asked by the message `message_id`; None for a turn that was
    never saved (a temporary session, a turn that did not start). `place(old, new)` puts `new`
    where the host shows `old`; `quiet_rewound`: a rewound turn's control shows nothing (a host that
    says so already); `note_at(html)` shows a note for good without a widget, where the host can."""
    if not message_id or getattr(session, "temporary", False):
        return None
    control = TurnRewind(session, message_id, place, quiet_rewound=quiet_rewound, note_at=note_at)
    controls_of(session).add(control)
    return control
