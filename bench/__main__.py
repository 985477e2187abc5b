"""Run every benchmark, check the bounds, and write bench/results.json.

`python -m bench` runs them all (`make bench`); `python -m bench NAME …` runs only those.
Each figure that compares is a ratio against a baseline measured in the same run on the
same machine; absolute times are kept for context. The exit status is 1 when a benchmark
failed or a figure is outside its bound (bench/bounds.py), and 0 otherwise.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from .bounds import check
from .cases import BENCHMARKS

OUT = Path(__file__).with_name("results.json")


def _run(fn: Any) -> dict[str, Any]:
    started = time.perf_counter()
    try:
        value = asyncio.run(fn()) if asyncio.iscoroutinefunction(fn) else fn()
    except Exception as exc:  # one broken benchmark must not hide the others' figures
        traceback.print_exc()
        value = {"error": f"{type(exc).__name__}: {exc}"}
    value["seconds"] = round(time.perf_counter() - started, 2)
    return value


def main(argv: list[str]) -> int:
    names = argv or list(BENCHMARKS)
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}")
        return 2
    results: dict[str, Any] = {
        "python": sys.version.split()[0],
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "benchmarks": {},
    }
    for name in names:
        value = _run(BENCHMARKS[name])
        results["benchmarks"][name] = value
        print(f"{name}: {json.dumps(value)}", flush=True)
    rows = check(results["benchmarks"])
    results["bounds"] = rows
    failed = [r for r in rows if r["pass"] is False]
    errors = [n for n, v in results["benchmarks"].items() if "error" in v]
    results["all_within_bounds"] = not failed and not errors
    OUT.write_text(json.dumps(results, indent=2) + "\n")
    for r in rows:
        mark = {True: "pass", False: "FAIL", None: "n/a "}[r["pass"]]
        print(f"{mark}  {r['figure']} = {r['value']} (bound ≤ {r['bound']}): {r['what']}")
    print(f"wrote {OUT}")
    return 1 if failed or errors else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
