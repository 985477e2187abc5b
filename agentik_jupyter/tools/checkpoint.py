"""Checkpoints of the user's namespace, one per agent turn, so `%agent rewind` can take a turn back.

Before each approved run_code (and each "Accept and run") the code's AST (code_effects.py) says
which names it may bind, rebind or delete and which objects it may change in place. The old
objects of rebound names are kept by reference (no copy). Objects changed in place are
snapshotted: pandas objects by `copy(deep=False)`, which pandas' copy-on-write (the default from
pandas 3) makes a true snapshot at no cost until the original is written; numpy arrays and plain
containers by a copy, within `AGENTIK_REWIND_BUDGET` MB a turn. What cannot be snapshotted (over
the budget, objects of unknown kinds) and what happens outside the kernel (files, databases, the
network) is said before the code runs. The newest `KEEP_TURNS` turns keep their checkpoints, within
the budget in all; older ones are released and say so.
"""

from __future__ import annotations

import copy
import logging
import os
import sys
import types
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from agentik_jupyter.tools.code_effects import Effects, analyze

log = logging.getLogger(__name__)

BUDGET_ENV = "AGENTIK_REWIND_BUDGET"
DEFAULT_BUDGET_MB = 512.0
KEEP_TURNS = 20
KEEP_RECORDS = 500  # turns remembered at all (released ones say so when asked to rewind)
MB = 1024 * 1024
_ABSENT = object()  # the name did not exist before the turn: rewinding removes it
_IMMUTABLE = (int, float, complex, str, bytes, bool, type(None), tuple, frozenset, range)
_CONTAINERS = (list, dict, set, bytearray, deque)


def budget_bytes() -> int:
    """`AGENTIK_REWIND_BUDGET` (MB) in bytes; unset or not a number: 512 MB (a bad value is logged)."""
    raw = os.environ.get(BUDGET_ENV, "").strip()
    if not raw:
        return int(DEFAULT_BUDGET_MB * MB)
    try:
        value = float(raw)
    except ValueError:
        log.warning("%s=%r is not a number of MB; using %s", BUDGET_ENV, raw, DEFAULT_BUDGET_MB)
        value = DEFAULT_BUDGET_MB
    return max(0, int(value * MB))


def human_size(n: int) -> str:
    for unit, size in (("GB", 1024**3), ("MB", MB), ("KB", 1024)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


def _pandas_cow() -> bool:
    """Whether pandas' copy-on-write is on (always from pandas 3), so a shallow copy is a snapshot."""
    pandas = sys.modules.get("pandas")
    if pandas is None:
        return False
    try:
        if int(pandas.__version__.split(".")[0]) >= 3:
            return True
        return bool(pandas.options.mode.copy_on_write is True)
    except Exception:
        return False


def _is_pandas(obj: Any) -> bool:
    module = type(obj).__module__
    return (module == "pandas" or module.startswith("pandas.")) and hasattr(obj, "copy")


def _is_numpy(obj: Any) -> bool:
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(obj, numpy.ndarray)


def snapshot_cost(obj: Any) -> int | None:
    """Bytes a snapshot of `obj` holds now; None: no snapshot can be taken of its kind."""
    if isinstance(obj, _IMMUTABLE):
        return 0
    if _is_pandas(obj):
        if _pandas_cow():
            return 0  # shares the data until the original is written, and then only the blocks written
        try:
            return int(obj.memory_usage(deep=False).sum()) if hasattr(obj, "memory_usage") else 0
        except Exception:
            return 0
    if _is_numpy(obj):
        return int(obj.nbytes)
    if isinstance(obj, _CONTAINERS):
        return sys.getsizeof(obj)
    return None


def take_snapshot(obj: Any) -> Any:
    if isinstance(obj, _IMMUTABLE):
        return obj
    if _is_pandas(obj):
        return obj.copy(deep=not _pandas_cow())
    if _is_numpy(obj):
        return obj.copy()
    return copy.copy(obj)


def size_of(obj: Any) -> int:
    """The object's own data, for naming it on the card (`big` (2.1 GB))."""
    try:
        if _is_pandas(obj) and hasattr(obj, "memory_usage"):
            usage = obj.memory_usage(deep=False)
            return int(usage.sum()) if hasattr(usage, "sum") else int(usage)
        if _is_numpy(obj):
            return int(obj.nbytes)
        return sys.getsizeof(obj)
    except Exception:
        return 0


@dataclass
class TurnCheckpoint:
    """What one turn's code changed and how to take it back."""

    turn_id: str
    conversation_id: str | None
    position: int  # messages in the conversation when the turn began
    saved: dict[str, Any] = field(default_factory=dict)  # name -> old object, snapshot or _ABSENT
    snapshots: set[str] = field(default_factory=set)  # the names in `saved` held as snapshots
    lost: dict[str, str] = field(default_factory=dict)  # name -> why it cannot be restored
    outside: list[str] = field(default_factory=list)  # effects outside the kernel
    cost: int = 0  # bytes of the snapshots taken
    held: int = 0  # bytes of the old objects kept for rebound names (alive only because of the checkpoint)
    runs: int = 0  # code runs checkpointed
    released: str | None = None  # why the checkpoint was let go (it can no longer be rewound)
    cells: list[dict[str, str]] = field(default_factory=list)  # the agent's cell edits and inserts, in order

    def release(self, why: str) -> None:
        self.saved.clear()
        self.snapshots.clear()
        self.cost = self.held = 0
        self.released = why


@dataclass
class Restored:
    """What restoring turns did (or, for a preview, would do)."""

    restored: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    not_restored: list[str] = field(default_factory=list)


@dataclass
class Staged:
    """A checkpoint taken before code runs, not yet part of its turn."""

    owner: Checkpoints
    turn: TurnCheckpoint | None
    cannot_undo: list[str]
    lost: dict[str, str]
    outside: list[str]
    saved: dict[str, Any] = field(default_factory=dict)
    snapshots: set[str] = field(default_factory=set)
    cost: int = 0
    held: int = 0

    def commit(self) -> None:
        turn = self.turn
        if turn is None or turn.released is not None:
            return
        for name, value in self.saved.items():
            if name not in turn.saved and name not in turn.lost:
                turn.saved[name] = value
                if name in self.snapshots:
                    turn.snapshots.add(name)
        for name, why in self.lost.items():
            if name not in turn.saved:
                turn.lost.setdefault(name, why)
        turn.outside.extend(note for note in self.outside if note not in turn.outside)
        turn.cost += self.cost
        turn.held += self.held
        turn.runs += 1
        self.owner._within_budget()


class Checkpoints:
    """The turns' checkpoints of one namespace (one per IPython shell: `checkpoints_for`)."""

    def __init__(self, namespace: dict[str, Any], transform: Callable[[str], str] | None = None) -> None:
        self.namespace = namespace
        self.transform = transform or (lambda code: code)
        self.turns: list[TurnCheckpoint] = []
        self.current: TurnCheckpoint | None = None

    # ---- turns ----

    def begin_turn(self, turn_id: str, conversation_id: str | None, position: int) -> TurnCheckpoint:
        """A new turn's checkpoint (empty until its code runs); the oldest past `KEEP_TURNS` are released."""
        turn = TurnCheckpoint(turn_id, conversation_id, position)
        self.turns.append(turn)
        self.current = turn
        kept = [t for t in self.turns if t.released is None]
        for old in kept[:-KEEP_TURNS]:
            old.release(f"older than the newest {KEEP_TURNS} turns")
        del self.turns[:-KEEP_RECORDS]  # a released turn is a few names; the oldest go altogether
        return turn

    def note_cell(self, change: dict[str, str]) -> None:
        """Remember a change the agent made to the notebook in this turn: `{"kind": "edit", "cell_id",
        "old", "new"}`, `{"kind": "insert", "cell_id", "source"}` or `{"kind": "delete", "cell_id", "old",
        "cell_type", "after"}` (rewind reverts it on the page: a deleted cell comes back below `after`)."""
        if self.current is not None:
            self.current.cells.append(dict(change))

    def cell_changes(self, turn_ids: list[str]) -> list[dict[str, str]]:
        """The turns' cell changes, newest first: the order to undo them in."""
        changes = [c for turn_id in turn_ids if (t := self.find(turn_id)) is not None for c in t.cells]
        return changes[::-1]

    def find(self, turn_id: str) -> TurnCheckpoint | None:
        return next((t for t in self.turns if t.turn_id == turn_id), None)

    def forget(self, turn_ids: Iterable[str]) -> None:
        """Drop the checkpoints of rewound turns."""
        gone = set(turn_ids)
        self.turns = [t for t in self.turns if t.turn_id not in gone]
        if self.current is not None and self.current.turn_id in gone:
            self.current = None

    # ---- before code runs ----

    def effects(self, code: str) -> Effects:
        try:
            source = self.transform(code)
        except Exception:
            source = code
        effects = analyze(source)
        for func, names in effects.passed.items():  # the user's own function may change what it is given
            if func in effects.bound or _users_function(self.namespace.get(func)):
                effects.mutated.update(name for name in names if name in self.namespace)
        return effects

    def cannot_undo(self, code: str) -> list[str]:
        """What rewinding could not take back if `code` ran now: for the approval card, before Run."""
        effects = self.effects(code)
        return [*effects.outside, *self._plan(effects, self.current)[1].values()]

    def before_run(self, code: str) -> list[str]:
        """Checkpoint what `code` may change into the current turn; returns what cannot be undone."""
        staged = self.stage(code)
        staged.commit()
        return staged.cannot_undo

    def stage(self, code: str) -> Staged:
        """Take the checkpoint for `code` now; it joins the turn on `commit()` (once the code did run,
        as after "Accept and run", where the page runs the cell)."""
        effects = self.effects(code)
        turn = self.current
        to_snapshot, lost = self._plan(effects, turn)
        staged = Staged(self, turn, [*effects.outside, *lost.values()], lost, effects.outside)
        if turn is None or turn.released is not None:
            return staged
        ns = self.namespace
        for name in sorted(effects.mutated | effects.bound):
            if name in turn.saved or name in turn.lost:
                continue  # the turn already holds what it was before this turn
            if name in to_snapshot:
                try:
                    staged.saved[name] = take_snapshot(ns[name])
                    staged.snapshots.add(name)
                    staged.cost += to_snapshot[name]
                    continue
                except Exception as exc:
                    staged.lost[name] = f"`{name}` could not be copied ({type(exc).__name__})"
            if name in effects.bound:
                old = staged.saved[name] = ns.get(name, _ABSENT)
                if old is not _ABSENT and not isinstance(old, (int, float, bool, type(None))):
                    staged.held += size_of(old)
        self._share_with_aliases(staged, turn)
        return staged

    def _share_with_aliases(self, staged: Staged, turn: TurnCheckpoint) -> None:
        """Other names bound to an object snapshotted here get the same snapshot back (`a = df` earlier,
        then the code changes `df` in place: `a` changed too, and both come back as one object)."""
        originals = {id(self.namespace[name]): name for name in staged.snapshots if name in self.namespace}
        if not originals:
            return
        for name, value in list(self.namespace.items()):
            found = originals.get(id(value))
            if found is None or name == found or name in staged.saved or name in turn.saved or name.startswith("_"):
                continue
            staged.saved[name] = staged.saved[found]
            staged.snapshots.add(name)

    def _plan(self, effects: Effects, turn: TurnCheckpoint | None) -> tuple[dict[str, int], dict[str, str]]:
        """The names to snapshot (with their cost) and those that cannot be restored (with why)."""
        ns = self.namespace
        budget = budget_bytes()
        spent = turn.cost if turn is not None else 0
        to_snapshot: dict[str, int] = {}
        lost: dict[str, str] = {}
        for name in sorted(effects.mutated):
            if name not in ns or (turn is not None and (name in turn.saved or name in turn.lost)):
                continue
            obj = ns[name]
            cost = snapshot_cost(obj)
            if cost is None:
                lost[name] = f"changes `{name}` (a {type(obj).__name__}) in place"
            elif spent + cost > budget:
                lost[name] = f"changes `{name}` ({human_size(size_of(obj))}) in place, over the rewind budget"
            else:
                to_snapshot[name] = cost
                spent += cost
        return to_snapshot, lost

    def _within_budget(self) -> None:
        """Release the oldest turns' checkpoints while all of them together (snapshots, and the old objects
        kept alive for rebound names) pass the budget."""
        budget = budget_bytes()
        kept = [t for t in self.turns if t.released is None]
        total = sum(t.cost + t.held for t in kept)  # the newest turn keeps its checkpoint whatever its size
        for old in kept[:-1]:
            if total <= budget:
                break
            total -= old.cost + old.held
            old.release(f"past the rewind budget ({human_size(budget)})")

    # ---- rewinding ----

    def restore(self, turn_ids: list[str], *, preview: bool = False) -> Restored:
        """Put back what the turns changed, newest first (`turn_ids` oldest first); `preview` only says."""
        ns = self.namespace
        result = Restored()
        final: dict[str, Any] = {}
        for turn_id in reversed(turn_ids):
            turn = self.find(turn_id)
            if turn is None or turn.released is not None:
                continue
            for name, value in turn.saved.items():
                final[name] = value  # an older turn's state of the name wins
        for name in sorted(final):
            value = final[name]
            if value is _ABSENT:
                if name in ns:
                    result.removed.append(name)
                    if not preview:
                        del ns[name]
            else:
                result.restored.append(name)
                if not preview:
                    ns[name] = value
        held: set[str] = set()  # names an older rewound turn holds from before it changed them
        for turn_id in turn_ids:
            turn = self.find(turn_id)
            if turn is None:
                continue
            if turn.released is not None:
                result.not_restored.append(
                    f"the variables this turn changed can no longer be rewound (its checkpoint was released: "
                    f"{turn.released})"
                )
                continue
            result.not_restored.extend(why for name, why in turn.lost.items() if name not in held)
            result.not_restored.extend(turn.outside)
            held.update(turn.saved)
        return result


def _users_function(obj: Any) -> bool:
    """A function the user defined in the notebook (its code may change its arguments in place)."""
    return isinstance(obj, types.FunctionType) and obj.__module__ == "__main__"


_by_shell: dict[int, Checkpoints] = {}


def checkpoints_for(shell: Any) -> Checkpoints:
    """The shell's checkpoints (one per IPython shell, created on first use)."""
    found = _by_shell.get(id(shell))
    if found is None or found.namespace is not shell.user_ns:
        found = _by_shell[id(shell)] = Checkpoints(shell.user_ns, getattr(shell, "transform_cell", None))
    return found
