"""Rewind's checkpoints: their time before a run_code, their memory on a big frame, and their release.

- `before_run_ms`: the checkpoint before a run_code (IPython's transform, the AST, the snapshots)
  in a namespace of 1,000 names, median of 50 turns.
- `big_frame`: a turn that changes a DataFrame of `AGENTIK_BENCH_FRAME_GB` (default 2) GB in place
  (one value set with .loc, one column multiplied in place): the RSS it adds over the same change
  with no checkpoint would be the snapshot's cost (pandas' copy-on-write copies only the columns
  written); then the rewind is checked to give back exactly the frame before the turn.
- `release`: 25 turns keep at most the newest 20 checkpoints; turns that snapshot more than the
  budget release the oldest ones, and the released turns say they can no longer be rewound.
"""

from __future__ import annotations

import gc
import os
import statistics
import time
from typing import Any

ROWS = 1 << 20  # 8 MB a float64 column: a column copied stays far below the 50 MB bound
GB = 1024**3


def _rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _shell() -> Any:
    from IPython.core.interactiveshell import InteractiveShell

    return InteractiveShell.instance()


def _before_run_ms() -> float:
    import numpy as np
    import pandas as pd

    from agentik_jupyter.tools.checkpoint import Checkpoints

    shell = _shell()
    ns: dict[str, Any] = {}
    for i in range(1_000):
        kind = i % 4
        ns[f"v{i}"] = (
            pd.DataFrame({"a": np.arange(1_000), "b": np.ones(1_000)})
            if kind == 0
            else np.arange(1_000)
            if kind == 1
            else list(range(100))
            if kind == 2
            else i
        )
    code = "v0 = v0.dropna()\nv4['x'] = 0\nv8.loc[0, 'a'] = -1\nv1 *= 2\nv2.append(1)\nnew = v12.head()\ndel v3"
    checkpoints = Checkpoints(ns, shell.transform_cell)
    times = []
    for turn in range(50):
        checkpoints.begin_turn(f"turn_{turn}", None, turn)
        started = time.perf_counter()
        checkpoints.before_run(code)
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 3)


def _big_frame() -> dict[str, Any]:
    import numpy as np
    import pandas as pd
    import pandas.testing as pdt

    from agentik_jupyter.tools.checkpoint import Checkpoints

    gigabytes = float(os.environ.get("AGENTIK_BENCH_FRAME_GB", "2"))
    columns = max(2, int(gigabytes * GB / (ROWS * 8)))
    values = np.random.default_rng(0).random((columns, ROWS)).T  # column-major: each column is contiguous
    frame = pd.DataFrame(values, columns=[f"c{i}" for i in range(columns)], copy=False)
    del values
    ns: dict[str, Any] = {"df": frame}
    expected_c0, expected_c1 = frame["c0"].copy(), frame["c1"].copy()
    code = "df.loc[0, 'c0'] = -1.0\ndf['c1'] *= 2"
    checkpoints = Checkpoints(ns, _shell().transform_cell)
    checkpoints.begin_turn("turn_big", None, 0)
    gc.collect()
    before = _rss_mb()
    started = time.perf_counter()
    cannot = checkpoints.before_run(code)
    checkpoint_ms = (time.perf_counter() - started) * 1000
    exec(code, ns)
    gc.collect()
    added = _rss_mb() - before
    changed = ns["df"].loc[0, "c0"] == -1.0
    checkpoints.restore(["turn_big"])
    back = ns["df"]
    exact = True
    try:
        pdt.assert_series_equal(back["c0"], expected_c0)
        pdt.assert_series_equal(back["c1"], expected_c1)
        assert list(back.columns) == list(frame.columns) and back.shape == frame.shape
        assert all(np.shares_memory(back[c].to_numpy(), frame[c].to_numpy()) for c in list(back.columns)[2:12])
    except AssertionError:
        exact = False
    return {
        "frame_gb": round(columns * ROWS * 8 / GB, 2),
        "columns": columns,
        "rows": ROWS,
        "checkpoint_ms": round(checkpoint_ms, 3),
        "rss_added_mb": round(added, 1),
        "changed_by_the_turn": bool(changed),
        "rewound_exactly": exact,
        "mismatches": 0 if exact and changed else 1,
        "cannot_undo": cannot,
    }


def _release() -> dict[str, Any]:
    import numpy as np

    from agentik_jupyter.tools.checkpoint import KEEP_TURNS, Checkpoints

    ns: dict[str, Any] = {"items": [1, 2, 3]}
    checkpoints = Checkpoints(ns)
    for turn in range(KEEP_TURNS + 5):
        checkpoints.begin_turn(f"turn_{turn}", None, turn)
        checkpoints.before_run("items.append(1)")
    kept = [t for t in checkpoints.turns if t.released is None]
    oldest = checkpoints.restore(["turn_0"], preview=True).not_restored
    saved = os.environ.get("AGENTIK_REWIND_BUDGET")
    os.environ["AGENTIK_REWIND_BUDGET"] = "10"  # MB
    try:
        arrays = Checkpoints({"arr": np.zeros(4 * 1024 * 1024 // 8)})  # 4 MB a snapshot
        for turn in range(5):
            arrays.begin_turn(f"a{turn}", None, turn)
            arrays.before_run("arr[0] = 1")
        held = sum(t.cost + t.held for t in arrays.turns if t.released is None)
        over_budget = max(0, held - 10 * 1024 * 1024)
        budget_said = arrays.restore(["a0"], preview=True).not_restored
    finally:
        if saved is None:
            os.environ.pop("AGENTIK_REWIND_BUDGET", None)
        else:
            os.environ["AGENTIK_REWIND_BUDGET"] = saved
    return {
        "turns": KEEP_TURNS + 5,
        "kept_turns": len(kept),
        "released_silent": int(
            not any("can no longer be rewound" in said for said in oldest)
            or not any("past the rewind budget" in said for said in budget_said)
        ),
        "oldest_says": oldest[:1] + budget_said[:1],
        "bytes_over_budget": over_budget,
    }


def checkpoints() -> dict[str, Any]:
    return {"before_run_ms": _before_run_ms(), "release": _release(), "big_frame": _big_frame()}
