"""The soak's steps and its driver: a seeded random sequence of operations on one notebook, the invariants checked after each.

Every draw from the seeded `random.Random` depends only on the seed and the steps before, never on
timing, so `--seed S --steps K` replays the same K operations.
"""

from __future__ import annotations

import contextlib
import random
import sqlite3
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from .checks import USER_CELL, Ledger, settled, user_source
from .page import Browser, Page, decide
from .world import SoakError, World, world

EDIT = "Add a comment to the cell that makes sales."
QUESTIONS = (
    "Which variables do I have?",
    "Read my notebook.",
    "Insert a cell that sums the units column by region.",
    EDIT,
    "How do sessions work?",
)
"""Short turns of the demo model: tool calls that read, insert and propose an edit, and plain answers."""
LONG = "Write a long essay, please."
"""A turn that streams for a few seconds: the one that is cut off, or outlives a rename."""
PAGE_TYPING = "abcdefghijklmnopqrstuvwxyz ABC 0123456789 _=+.,;:éüß漢字🙂"
"""What the user types in the page (no brackets or quotes: the editor may close them; no newline:
the file splits the source into lines, which the save's wait looks for whole)."""
TYPING = "abcdefghijklmnopqrstuvwxyz ABC 0123456789 _=+()[]{}.,;:'\"\\\n\téüß漢字🙂"
NAMES = ("soak", "analysis", "renamed", "notes-2026", "ünïcode name", "final final")
FOLDERS = ("", "sub", "sub/deeper", "other folder")
SAVED_WAIT_S = 90.0

SALES = "import pandas as pd\nsales = pd.DataFrame({'region': ['n', 's'], 'units': [3, 4]})"


@dataclass
class Soak:
    """One run: its world, what it did, and where it is."""

    world: World
    rng: random.Random
    seed: int
    ledger: Ledger = field(default_factory=Ledger)
    step: int = 0
    done: Counter[str] = field(default_factory=Counter)
    browser: Browser | None = None

    def marker(self, what: str) -> str:
        return f"soak{what}{self.seed}x{self.step}"


# ---- operations (each draws from the rng the same way whatever happens) ----


def ask(soak: Soak) -> None:
    """A short turn of the demo model, to its end."""
    question = soak.rng.choice(QUESTIONS)
    marker = soak.marker("q")
    soak.ledger.questions.append(marker)
    soak.world.execute(f"%%agent --wait\n{question} ({marker})")


def type_text(soak: Soak) -> None:
    """The user types into their cell, and the page saves (with collaboration: in a page, into the
    shared document)."""
    if soak.world.collaborative:
        typed = _page_typed(soak.rng)
        with _browser(soak).page(soak.world) as page:
            _type_in_page(soak, page, typed)
        return
    _type(soak, _typed(soak.rng))


def type_mid_turn(soak: Soak) -> None:
    """The user types and saves while a turn runs."""
    question = soak.rng.choice(QUESTIONS)
    typed = _page_typed(soak.rng) if soak.world.collaborative else _typed(soak.rng)
    marker = soak.marker("q")
    soak.ledger.questions.append(marker)
    with contextlib.ExitStack() as stack:
        page = stack.enter_context(_browser(soak).page(soak.world)) if soak.world.collaborative else None
        if page is not None and question == EDIT:
            # In the open page the edit would wait on its diff for the user's decision, which this
            # step does not make (page_edit does): the user asks something else while they type.
            question = QUESTIONS[1]
        msg_id = soak.world.send(f"%%agent --wait\n{question} ({marker})")
        if page is not None:
            _type_in_page(soak, page, typed)
        else:
            _type(soak, typed)
        soak.world.wait(msg_id)


def rename(soak: Soak) -> None:
    """Rename in the same folder (JupyterLab's Rename)."""
    name = soak.rng.choice(NAMES)
    folder = soak.world.path.rpartition("/")[0]
    _move(soak, f"{folder}/{name}" if folder else name)


def move(soak: Soak) -> None:
    """Move to another folder, keeping the name (a drag in the file browser)."""
    folder = soak.rng.choice(FOLDERS)
    name = soak.world.path.rpartition("/")[2].removesuffix(".ipynb")
    _move(soak, f"{folder}/{name}" if folder else name)


def rename_mid_turn(soak: Soak) -> None:
    """Rename while a long turn streams; the turn goes on to its end, its rows in the new file."""
    name = soak.rng.choice(NAMES)
    msg_id = _begin_long_turn(soak)
    folder = soak.world.path.rpartition("/")[0]
    _move(soak, f"{folder}/{name}" if folder else name)
    soak.world.wait(msg_id)


def restart_kernel_mid_turn(soak: Soak) -> None:
    """Kernel › Restart while a long turn streams."""
    _begin_long_turn(soak)
    soak.world.restart_kernel()


def restart_server_mid_turn(soak: Soak) -> None:
    """The Jupyter server stops while a long turn streams (its kernels go with it) and starts again;
    the notebook is opened again."""
    _begin_long_turn(soak)
    soak.world.restart_server()
    soak.world.open_kernel()


def page_mid_turn(soak: Soak) -> None:
    """The notebook open in a page: a long turn begins, the user types in the page and saves, the
    page is closed mid-turn and opened again; the turn runs on to its end."""
    typed = _page_typed(soak.rng)
    with _browser(soak).page(soak.world) as page:
        msg_id = _begin_long_turn(soak)
        _type_in_page(soak, page, typed)
        reply = soak.world.poll(msg_id)  # (a loaded machine may have finished the turn by now)
        soak.done["page_closed_mid_turn" if reply is None else "page_closed_after_turn"] += 1
        page.reopen()
        if reply is None:
            soak.world.wait(msg_id)


def page_edit(soak: Soak) -> None:
    """The user writes a cell and runs it, then asks the agent to comment it in the open page; the
    agent's diff shows on the cell and the user accepts or rejects it, and saves."""
    _page_edit(soak, 1)


def page_edit_two_pages(soak: Soak) -> None:
    """`page_edit` with the notebook open in two pages (two tabs; with collaboration, two views of
    one shared document): the diff shows in the page the kernel asks, the decision there counts
    once, and that page saves."""
    _page_edit(soak, 2)


def _page_edit(soak: Soak, pages: int) -> None:
    accept = soak.rng.random() < 0.5
    name = soak.marker("v")
    line = f"{name} = {soak.step}"
    if not soak.world.collaborative:  # (with collaboration the user writes it in the page)
        content = soak.world.read_notebook()
        content["cells"].append(nbformat.v4.new_code_cell(line))
        soak.world.save_notebook(content)
        soak.world.execute(line)
    change = f"# Defines {name}. (comment added by the agent)"  # the demo's edit (demo_code.with_comment)
    marker = soak.marker("q")
    soak.ledger.questions.append(marker)
    with contextlib.ExitStack() as stack:
        opened = [stack.enter_context(_browser(soak).page(soak.world)) for _ in range(pages)]
        if soak.world.collaborative:
            opened[0].add_cell(line)
            opened[0].save(lambda: line in soak.world.file().read_text(encoding="utf-8"))
            soak.world.execute(line)
        msg_id = soak.world.send(f"%%agent --wait\nAdd a comment to the cell that makes {name}. ({marker})")
        page = decide_during_turn(soak, msg_id, opened, line, accept)
        if page is not None and accept:
            page.save(lambda: change in soak.world.file().read_text(encoding="utf-8"))
    if page is not None:
        soak.done["accepted" if accept else "rejected"] += 1
    else:
        # The kernel asked no page: a request no page answered within the last minute makes it
        # show its edits in the turn's tool card for a while (notebook/requests.py). Not applied.
        soak.done["page_edit_without_diff"] += 1
    (soak.ledger.accepted if page is not None and accept else soak.ledger.rejected).append(change)
    soak.ledger.kept.append(line)


def decide_during_turn(soak: Soak, msg_id: str, pages: list[Page], holding: str, accept: bool) -> Page | None:
    """Accept or Reject the diff on the cell holding `holding` in whichever page shows it, while the
    turn `msg_id` runs; then wait for the turn's end. None: no page showed a diff before it ended."""
    reply: list[dict[str, object]] = []

    def ended() -> bool:
        got = soak.world.poll(msg_id)
        if got is not None:
            reply.append(got)
        return bool(reply)

    page = decide(pages, holding, "Accept" if accept else "Reject", ended)
    if not reply:
        soak.world.wait(msg_id)
    return page


def page_delete(soak: Soak) -> None:
    """In the open page the user asks the agent for a cell (as from the chat panel: it goes below the
    active cell) and then to delete that cell (never one the user wrote); the deletion shows as a diff
    on the cell, the user accepts or rejects it and saves."""
    accept = soak.rng.random() < 0.5
    column = f"{soak.marker('d')}end"  # (soakd1x5end is not in soakd1x50end)
    asked, deleting = soak.marker("q"), soak.marker("r")
    soak.ledger.questions += [asked, deleting]
    soak.world.execute(SALES)  # (the user runs the cell that makes `sales`: a restart may have lost it)
    with _browser(soak).page(soak.world) as opened:
        opened.select_last_cell()  # (the user's cell stays where it is)
        soak.world.execute(f"%%agent\nInsert a new cell that describes the `{column}` column of sales. ({asked})")
        # The deletion is asked at once: it waits in the kernel for the insert's turn to end.
        msg_id = soak.world.send(f"%%agent --wait\nDelete the cell that holds {column}. ({deleting})")
        page = decide_during_turn(soak, msg_id, [opened], column, accept)
        if page is None and not opened.cells_holding(column):
            # The kernel asked no page (a request no page answered lately): the cell went to a
            # payload no page shows. Nothing to delete.
            soak.done["page_delete_without_insert"] += 1
            return
        gone = page is not None and accept
        opened.save(lambda: (column in soak.world.file().read_text(encoding="utf-8")) != gone)
    if page is None:
        soak.done["page_delete_without_diff"] += 1
    else:
        soak.done["deletion_accepted" if accept else "deletion_rejected"] += 1
    (soak.ledger.deleted if gone else soak.ledger.kept).append(column)


Operation = Callable[[Soak], None]
OPERATIONS: dict[str, tuple[int, Operation]] = {
    "ask": (6, ask),
    "type": (6, type_text),
    "type_mid_turn": (3, type_mid_turn),
    "rename": (2, rename),
    "move": (2, move),
    "rename_mid_turn": (2, rename_mid_turn),
    "restart_kernel_mid_turn": (1, restart_kernel_mid_turn),
    "restart_server_mid_turn": (1, restart_server_mid_turn),
}
"""Each operation with its weight in the draw."""
PAGE_OPERATIONS: dict[str, tuple[int, Operation]] = {
    "page_mid_turn": (2, page_mid_turn),
    "page_edit": (3, page_edit),
    "page_edit_two_pages": (2, page_edit_two_pages),
    "page_delete": (3, page_delete),
}
"""Operations with a page in Chromium (left out with `pages=False`)."""


# ---- helpers ----


def _typed(rng: random.Random) -> str:
    return "".join(rng.choice(TYPING) for _ in range(rng.randint(1, 40)))


def _page_typed(rng: random.Random) -> str:
    return "".join(rng.choice(PAGE_TYPING) for _ in range(rng.randint(1, 30)))


def _browser(soak: Soak) -> Browser:
    if soak.browser is None:
        raise SoakError("a page step without a browser")
    return soak.browser


def _type_in_page(soak: Soak, page: Page, typed: str) -> None:
    """The user types at the end of their cell in `page` and saves; the file holds it all."""
    page.type_into_users_cell(typed, soak.ledger.typed)
    expected = soak.ledger.typed + typed
    try:
        page.save(lambda: user_source(soak.world.file()) == expected)
    except SoakError as exc:  # say what the file holds instead: a slow save and lost typing differ there
        held = user_source(soak.world.file())
        shown = "no user cell" if held is None else f"the user's cell ends {held[-80:]!r} ({len(held)} chars)"
        raise SoakError(f"{exc}: {shown}; the page typed up to {expected[-80:]!r} ({len(expected)} chars)") from exc
    soak.ledger.typed += typed


def _type(soak: Soak, typed: str) -> None:
    content = soak.world.read_notebook()
    for cell in content["cells"]:
        if cell.get("id") == USER_CELL:
            cell["source"] = soak.ledger.typed + typed
            break
    else:
        raise SoakError("the user's cell is not in the notebook the server gives")
    soak.world.save_notebook(content)
    soak.ledger.typed += typed


def _move(soak: Soak, stem: str) -> None:
    new_path = f"{stem}.ipynb"
    if new_path == soak.world.path:
        return
    if (soak.world.root / new_path).exists():
        raise SoakError(f"{new_path} is taken")  # (only the soak's notebook lives here)
    soak.world.move(new_path)


def _begin_long_turn(soak: Soak) -> str:
    """Start a long turn and return once its question is in the sessions file (it is mid-turn then)."""
    marker = soak.marker("q")
    soak.ledger.questions.append(marker)
    msg_id = soak.world.send(f"%%agent --wait\n{LONG} ({marker})")
    deadline = time.monotonic() + SAVED_WAIT_S
    while not _saved(soak.world.sessions_file(), marker):
        if time.monotonic() > deadline:
            break  # the check after the step reports the missing question
        time.sleep(0.05)
    return msg_id


def _saved(db: Path, marker: str) -> bool:
    if not db.exists():
        return False
    try:
        con = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True, timeout=5)
        try:
            rows = con.execute("SELECT 1 FROM message WHERE role = 'user' AND payload_json LIKE ?", (f"%{marker}%",))
            return rows.fetchone() is not None
        finally:
            con.close()
    except sqlite3.Error:
        return False


def _setup(w: World) -> None:
    """The notebook: a cell that makes `sales` (what the demo's edit turns change) and the user's cell."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(SALES), nbformat.v4.new_raw_cell("")]
    nb.cells[1]["id"] = USER_CELL
    w.save_notebook(nb)
    w.open_kernel()
    w.execute(SALES)


def operations(pages: bool) -> dict[str, tuple[int, Operation]]:
    return {**OPERATIONS, **PAGE_OPERATIONS} if pages else dict(OPERATIONS)


def draw(rng: random.Random, ops: dict[str, tuple[int, Operation]]) -> str:
    names = list(ops)
    return rng.choices(names, weights=[ops[n][0] for n in names])[0]


# ---- the driver ----


@dataclass
class Outcome:
    seed: int
    steps: int
    seconds: float
    done: dict[str, int]
    violations: list[str]
    failed_step: int | None = None
    failed_op: str | None = None
    error: str | None = None
    pages: bool = True
    collaboration: str = "off"
    plan: Sequence[str] | None = None

    @property
    def ok(self) -> bool:
        return not self.violations and self.error is None

    def report(self) -> str:
        head = f"soak seed {self.seed}: {self.steps} steps in {self.seconds:.0f} s, violations: {len(self.violations)}"
        lines = [head, "steps done: " + ", ".join(f"{k} {v}" for k, v in sorted(self.done.items()))]
        if self.failed_step is not None:
            what = "VIOLATION" if self.violations else "ERROR"
            lines.append(f"{what} at step {self.failed_step} ({self.failed_op}), seed {self.seed}:")
            lines += [f"  - {v}" for v in self.violations] + ([f"  - {self.error}"] if self.error else [])
            flag = f" --collaboration {self.collaboration}" if self.pages else " --no-pages"
            what = f"--plan {','.join(self.plan[: self.failed_step])}" if self.plan else f"--steps {self.failed_step}"
            lines.append(f"replay: python -m bench.soak --seed {self.seed} {what}{flag}")
        return "\n".join(lines)


def run(
    seconds: float,
    seed: int,
    *,
    steps: int | None = None,
    base: Path | None = None,
    pages: bool = True,
    collaboration: str = "alternate",
    plan: Sequence[str] | None = None,
    cdp: str | None = None,
    log: Callable[[str], None] = print,
) -> Outcome:
    """Run the soak for `seconds` (or exactly `steps` steps), checking the invariants after each;
    with `pages`, in JupyterLab with our extension and with page steps in Chromium (launched, or
    the one at the DevTools endpoint `cdp`), and jupyter-collaboration `collaboration` ("off",
    "on", or "alternate": off at first and switched at each server restart). Without pages there
    is no collaboration: with it the user types in pages only. A `plan` names the operations to
    run, in order, instead of drawing them (their own draws still come from the seed)."""
    rng = random.Random(seed)
    ops = operations(pages)
    collaboration = collaboration if pages else "off"
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        base = base or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        w = stack.enter_context(world(base, lab=pages, collaboration=collaboration))
        browser = stack.enter_context(Browser(cdp)) if pages else None
        soak = Soak(w, rng, seed, browser=browser)
        outcome = Outcome(seed, 0, 0.0, {}, [], pages=pages, collaboration=collaboration, plan=plan)
        try:
            _setup(w)
            if plan is not None:
                unknown = sorted(set(plan) - set(ops))
                if unknown:
                    raise SoakError(f"no such operation{'s' if len(unknown) > 1 else ''}: {', '.join(unknown)}")
                steps = len(plan)
            while (soak.step < steps) if steps is not None else (time.monotonic() - started < seconds):
                soak.step += 1
                name = plan[soak.step - 1] if plan is not None else draw(rng, ops)
                outcome.failed_step, outcome.failed_op = soak.step, name
                shared = w.collaborative
                ops[name][1](soak)
                soak.done[name] += 1
                if shared:
                    soak.done["with_collaboration"] += 1
                found = settled(w.file(), w.root, soak.ledger)
                if found:
                    outcome.violations = found
                    break
                mode = ", collaboration" if shared else ""
                log(f"step {soak.step}: {name} ok ({w.path}{mode}, {time.monotonic() - started:.0f} s)")
            else:
                outcome.failed_step = outcome.failed_op = None
        except SoakError as exc:
            outcome.error = str(exc)
        if browser is not None and browser.conflicts:
            soak.done["file_changed_overwritten"] = browser.conflicts
        outcome.steps, outcome.done = soak.step, dict(soak.done)
        outcome.seconds = time.monotonic() - started
        return outcome
