"""A Rewind control on each turn (a `%%agent` cell's view, each turn of the panel's transcript).

Pressed, it shows what rewinding back to before that turn would do (what `%agent rewind N
--preview` prints), asks, and does it on "Rewind now". A turn that can no longer be rewound (it
was rewound, or its checkpoint was released) says so instead of offering the button. The turn is
known by its question's message id; its number and state are read again from the sessions file
whenever the conversation changes or a turn ends (one read for all the session's controls), so
a control follows rewinds made elsewhere (`%agent rewind`, another control, the panel).
A control opens one widget, its button; when it has more to show (the preview, a note) a box takes
the button's place through `place(old, new)`, which its host gives (the cell's display, the panel).
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


class TurnRewind:
    """One turn's control; `widget` goes at the end of the turn. Made by `rewind_control`."""

    def __init__(self, session: Any, message_id: str, place: Place) -> None:
        self.session = session
        self.place = place
        self.message_id = message_id
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
        if self.note is not None:
            shown += f"<em>{escape(self.note)}</em>"
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
        self.outcome = lines_html(done.lines(done=True))
        await controls_of(self.session).refresh()  # (this turn is rewound now: the note says so)
        self._idle()

    def cancel(self) -> None:
        self.plan = None
        self._idle("")

    def _failed(self, exc: Exception) -> None:
        """Why nothing was rewound, above the button."""
        self._idle(f"<em>{escape(failure_text(exc))}</em>")


class SessionControls:
    """The live controls of one session, brought up to date together (one read of its turns)."""

    def __init__(self, session: Any) -> None:
        self._session = weakref.ref(session)  # (the session holds this through its subscriptions)
        self.controls: weakref.WeakSet[TurnRewind] = weakref.WeakSet()
        self._due: asyncio.Task[Any] | None = None
        session.chat_store.subscribe(lambda _state: self.soon())
        session.on_event(self._on_event)

    def _on_event(self, event: Event) -> None:
        if isinstance(event, End):  # a new turn may have released older turns' checkpoints
            self.soon()

    def add(self, control: TurnRewind) -> None:
        self.controls.add(control)
        self.soon()

    def soon(self) -> None:
        """Refresh once the current work on the loop is done (many changes, one read)."""
        if not self.controls or (self._due is not None and not self._due.done()):
            return
        try:
            self._due = asyncio.get_running_loop().create_task(self._refresh_soon())
        except RuntimeError:
            pass

    async def _refresh_soon(self) -> None:
        await asyncio.sleep(0)
        await self.refresh()

    async def refresh(self) -> None:
        session = self._session()
        live = [c for c in self.controls if c.widget.comm is not None]
        if session is None or not live:
            return
        try:
            by_message = await turn_rows(session)
        except Exception:
            log.exception("could not read the session's turns")
            return
        for control in live:
            row = by_message.get(control.message_id)
            control.update(row, released_why(session, row))


_controls: weakref.WeakKeyDictionary[Any, SessionControls] = weakref.WeakKeyDictionary()


def controls_of(session: Any) -> SessionControls:
    found = _controls.get(session)
    if found is None:
        found = _controls[session] = SessionControls(session)
    return found


def rewind_control(session: Any, message_id: str | None, place: Place) -> TurnRewind | None:
    """A Rewind control for the turn asked by the message `message_id`; None for a turn that was
    never saved (a temporary session, a turn that did not start). `place(old, new)` puts `new`
    where the host shows `old`."""
    if not message_id or getattr(session, "temporary", False):
        return None
    control = TurnRewind(session, message_id, place)
    controls_of(session).add(control)
    return control
