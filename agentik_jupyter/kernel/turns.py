"""A cell's turn: show its view in the cell's output and queue the turn, or await it (`--wait`).

When the turn ends, the static transcript (text, HTML and the agentik JSON) is left in the cell:
with `--wait` as a new output while the cell still runs (what nbclient and nbval record; nbval
ignores display updates); in the background form by replacing the live view in place through its
display id, so the frontend saves the transcript with the notebook; the turn's Rewind control then
takes a second place shown below it (with `--wait`, the view's own place above the transcript).
With our lab extension that Rewind is a plain output it draws (widgets/rewind_output.py), and the
second place is shown holding nothing, not a widget: a saved notebook then holds no widget there.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentik_jupyter.errors import OptionsError
from agentik_jupyter.kernel.agent import get_agent
from agentik_jupyter.kernel.live_cells import follow_cell
from agentik_jupyter.kernel.turn_options import TurnOptions, parse_options, wait_by_default
from agentik_jupyter.notebook import page as frontend
from agentik_jupyter.notebook.cells import CellAnchor, anchored, asking_cell_id
from agentik_jupyter.notebook.requests import asked_from, asking_page
from agentik_jupyter.security.scrub import scrub
from agentik_jupyter.tools.modes import label
from agentik_jupyter.widgets import TurnView
from agentik_jupyter.widgets.cell_outputs import CellOutputs
from agentik_jupyter.widgets.publish import can_stream, display_now, update_now
from agentik_jupyter.widgets.rewind_output import rewind_bundle
from agentik_jupyter.widgets.shared import placeholder
from agentik_jupyter.widgets.turn_view import bare

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell


_transcripts: weakref.WeakKeyDictionary[asyncio.Future[Any], Callable[[], None]] = weakref.WeakKeyDictionary()
"""A background turn's task -> shows its transcript in its cell's place."""


def show_transcript_again(task: asyncio.Future[Any]) -> None:
    """Publish a finished background turn's transcript again, from the cell that calls this.
    ipykernel sends a message with the parent of the cell whose context made it: the turn's own
    update goes out as its cell's, after that cell ended, and a runner such as nbclient (which
    listens to the running cell only) never saves it. `%agent stop` calls this for the turns it
    stopped, so the notebook it saves shows what they said and that they stopped."""
    show = _transcripts.get(task)
    if show is not None and task.done():
        show()


def _display(view: TurnView) -> Any:
    """Display the view with a display id; the handle later swaps it for the transcript in place.
    Its bundle as it is (raw): IPython would add a repr as text/plain to a place that has none."""
    return display_now(view._repr_mimebundle_(), raw=True, display_id=True)


def start_cell_turn(
    shell: InteractiveShell, opts: TurnOptions, text: str, outputs: CellOutputs | None = None
) -> tuple[Any, asyncio.Task[Any]]:
    """Show this cell's view and queue its turn (it runs after the turns queued before it);
    `outputs`: the running cell's other outputs, watched (a `--wait` cell without our extension)."""
    text = scrub(text.rstrip())  # the view shows what the session sends
    agent = get_agent(shell)
    session = agent.session_for(temporary=opts.temp, new=opts.new)
    mode = label(opts.mode or session.effective_mode)  # the header says it (a restart's session: as resumed)
    cell_id = asking_cell_id(shell)
    shown = follow_cell(shell, cell_id)  # a page opened later shows what this cell shows (kernel/live_cells.py)
    if opts.wait:  # the cell runs until the end: the view shows itself once its answer is requested
        view = TurnView(session, text, wait=True, show=_display, outputs=outputs, mode=mode)
    else:  # the cell returns now: the view must be in its output before it does
        handle: Any = None
        rewind_place: Any = None
        view = TurnView(
            session,
            text,
            wait=True,
            mode=mode,
            display=lambda bundle: update_now(handle, bundle),
            rewind_at=None if session.temporary else lambda bundle: update_now(rewind_place, bundle),
        )
        handle = _display(view)
        if not session.temporary:  # the turn's Rewind control goes below the transcript, in a place shown now
            empty = rewind_bundle() if frontend.rewind_output() else bare(placeholder())  # (no widget if drawn)
            rewind_place = display_now(empty, raw=True, display_id=True)
    anchor = CellAnchor(cell_id=cell_id, in_request=opts.wait)

    def on_start() -> None:
        session.approval_presenter = view.present_approval
        view.attach()

    # insert_cell proposals go below this cell, and the page that ran it answers the turn's
    # requests to the notebook (the task copies the context)
    with anchored(anchor), asked_from(asking_page(shell)):
        task = session.start_turn(
            text,
            model=opts.model,
            prepare=lambda: agent.prepare(session, new=opts.new, session_id=opts.session),
            on_start=on_start,
            cell_id=anchor.cell_id,
            mode=opts.mode,
        )
    view.track(task)
    if not opts.wait:
        task.add_done_callback(lambda _: view.finish())
        _transcripts[task] = lambda: update_now(handle, view.finish())
    if shown is not None:  # (after the view's own callback: its transcript is shown by then)
        task.add_done_callback(lambda _: shown.end())
    return view, task


async def run_cell_turn(shell: InteractiveShell, line: str, text: str) -> None:
    """The `--wait` form: the cell awaits its turn, then leaves the transcript in its output."""
    try:
        opts = parse_options(line)
    except OptionsError as exc:
        print(f"agentik: {exc}")
        return
    # Without our extension the answer streams as the cell's text output, which the end clears:
    # what else the cell shows meanwhile is watched from here, to be shown again. Not in a batch
    # run (AGENTIK_WAIT: nbclient, nbval, papermill): nbval ignores `clear_output` and would keep
    # the streamed text as an output the saved notebook does not have; widgets it does not see.
    outputs = CellOutputs() if not frontend.live_text() and can_stream() and not wait_by_default() else None
    if outputs is not None:
        outputs.start()
    try:
        view, task = start_cell_turn(shell, opts, text, outputs)
        try:
            await asyncio.wait([task])
        except asyncio.CancelledError:
            # Jupyter's Interrupt cancels the awaiting cell: it stops this turn (Interrupt = Stop).
            view.session.cancel(task)
            await asyncio.wait([task])
        view.finish()
    finally:
        if outputs is not None:
            outputs.stop()
