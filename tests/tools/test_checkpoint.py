"""Checkpoints before agent code runs: what the AST says it changes, and restoring it exactly."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pandas.testing as pdt
import pytest

from agentik_jupyter.tools.checkpoint import KEEP_TURNS, Checkpoints
from agentik_jupyter.tools.code_effects import analyze


def test_the_ast_names_bindings_in_place_changes_and_outside_effects() -> None:
    effects = analyze(
        "import numpy as np\n"
        "df = df.dropna()\n"
        "df2 = df.head()\n"
        "del y\n"
        "df['x'] = 0\n"
        "sales.loc[0, 'units'] = -1\n"
        "items.append(3)\n"
        "frame.drop(columns=['a'], inplace=True)\n"
        "total += 1\n"
        "for i, row in enumerate(rows): pass\n"
        "def helper(a):\n    local = a\n    return local\n"
        "[k for k in range(3)]\n"
        "sales.to_csv('sales.csv')\n"
        "text = df.to_csv()\n"
        "with open('notes.txt', 'w') as fh: fh.write('x')\n"
        "open('read.txt').read()\n"
        "requests.post('https://example.com')\n"
    )
    assert effects.bound == {"np", "df", "df2", "y", "total", "i", "row", "helper", "text", "fh"}
    assert {"df", "sales", "items", "frame", "total"} <= effects.mutated
    assert "local" not in effects.bound and "k" not in effects.bound
    assert "writes to sales.csv" in effects.outside and "writes to notes.txt" in effects.outside
    assert not any("read.txt" in note for note in effects.outside)
    assert any(note.startswith("uses the network") for note in effects.outside)


def test_a_turn_is_restored_exactly_and_new_names_go() -> None:
    ns: dict = {"df": pd.DataFrame({"a": [1.0, None, 3.0]}), "sales": pd.DataFrame({"units": [5, 6]}), "y": 7}
    ns["arr"] = np.arange(5)
    before = {k: (v.copy() if hasattr(v, "copy") else v) for k, v in ns.items()}
    old_y = ns["y"]
    cp = Checkpoints(ns)
    cp.begin_turn("turn_1", "conv", 0)
    code = "df = df.dropna()\ndf2 = df.head()\ndel y\ndf['x'] = 0\nsales.loc[0, 'units'] = -1\narr *= 2"
    assert cp.before_run(code) == []
    exec(code, ns)
    assert ns["sales"].loc[0, "units"] == -1 and "y" not in ns
    done = cp.restore(["turn_1"])
    assert ns["y"] is old_y  # a rebound name gets its very object back
    pdt.assert_frame_equal(ns["df"], before["df"])
    pdt.assert_frame_equal(ns["sales"], before["sales"])
    np.testing.assert_array_equal(ns["arr"], before["arr"])
    assert ns["y"] == 7 and "df2" not in ns
    assert done.removed == ["df2"] and {"df", "sales", "y", "arr"} <= set(done.restored)


def test_over_the_budget_an_in_place_change_is_named_and_not_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTIK_REWIND_BUDGET", "1")
    ns: dict = {"big": np.zeros(2 * 1024 * 1024 // 8 * 2)}  # 4 MB
    cp = Checkpoints(ns)
    cp.begin_turn("t", None, 0)
    warned = cp.cannot_undo("big[0] = 1\nbig.tofile('big.bin')")
    assert warned == ["writes to big.bin", "changes `big` (4.0 MB) in place, over the rewind budget"]
    assert cp.before_run("big[0] = 1") == ["changes `big` (4.0 MB) in place, over the rewind budget"]
    ns["big"][0] = 1
    done = cp.restore(["t"])
    assert done.not_restored == ["changes `big` (4.0 MB) in place, over the rewind budget"] and ns["big"][0] == 1


def test_old_turns_are_released_and_say_so() -> None:
    ns: dict = {"x": [1]}
    cp = Checkpoints(ns)
    for i in range(KEEP_TURNS + 1):
        cp.begin_turn(f"t{i}", None, i)
        cp.before_run("x.append(1)")
    assert cp.find("t0").released == f"older than the newest {KEEP_TURNS} turns"
    assert cp.find("t1").released is None
    done = cp.restore(["t0"], preview=True)
    assert done.not_restored and "can no longer be rewound" in done.not_restored[0]


def test_old_objects_kept_for_rebound_names_count_against_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTIK_REWIND_BUDGET", "10")
    ns: dict = {"arr": np.zeros(4 * 1024 * 1024 // 8)}  # 4 MB
    cp = Checkpoints(ns)
    for i in range(4):
        cp.begin_turn(f"t{i}", None, i)
        cp.before_run("arr = arr + 1")  # each turn keeps the 4 MB array it replaced
        ns["arr"] = ns["arr"] + 1
    assert [t.released is None for t in cp.turns] == [False, False, True, True]
    assert "past the rewind budget" in (cp.find("t0").released or "")


def test_aliases_and_the_users_own_functions_are_checkpointed_too() -> None:
    ns: dict = {"df": pd.DataFrame({"a": [1, 2]}), "items": [1, 2]}
    ns["view"] = ns["df"]  # the user's alias, made before the turn
    exec("def clean(frame):\n    frame['a'] = 0\n", ns)
    ns["clean"].__module__ = "__main__"  # (as a function defined in a notebook cell is)
    before = ns["df"].copy()
    cp = Checkpoints(ns)
    cp.begin_turn("t", None, 0)
    code = "clean(df)\nalias = items\nalias.append(3)"
    cp.before_run(code)
    exec(code, ns)
    assert ns["df"]["a"].tolist() == [0, 0] and ns["items"] == [1, 2, 3]
    done = cp.restore(["t"])
    pdt.assert_frame_equal(ns["df"], before)  # changed inside the user's function
    assert ns["view"] is ns["df"]  # the alias comes back as the same object
    assert ns["items"] == [1, 2] and "alias" not in ns  # changed through a name the code made
    assert {"df", "items", "view"} <= set(done.restored)


def test_a_cell_added_with_set_next_input_and_a_new_working_directory_are_named() -> None:
    effects = analyze("get_ipython().set_next_input('x = 1')\nos.chdir('/tmp')")
    assert "adds a cell to the notebook (set_next_input), which rewind does not remove" in effects.outside
    assert "changes the working directory (os.chdir(…))" in effects.outside


def test_code_built_at_run_time_is_named_as_what_rewind_cannot_undo() -> None:
    cp = Checkpoints({})
    assert cp.cannot_undo("exec('x = 1')") == [
        "runs code built at run time (exec(…)), which can't be read before it runs"
    ]
    assert cp.cannot_undo("y = eval('1 + 1')")[0].startswith("runs code built at run time (eval(…))")
    assert cp.cannot_undo("obj.eval('a + b')") == []  # a method (pandas' DataFrame.eval), not the builtin
