"""Run every benchmark and write bench/results.json.

Each benchmark reports a ratio against a baseline measured in the same run on
the same machine, so the numbers compare across machines; absolute times are
kept for context only.
"""

from __future__ import annotations

import asyncio
import json
import platform
import sys
import time
from pathlib import Path

from .cases import BENCHMARKS

OUT = Path(__file__).with_name("results.json")


def main() -> int:
    results: dict[str, object] = {
        "python": sys.version.split()[0],
        "machine": platform.machine(),
        "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "benchmarks": {},
    }
    for name, fn in BENCHMARKS.items():
        started = time.perf_counter()
        value = asyncio.run(fn()) if asyncio.iscoroutinefunction(fn) else fn()
        value["seconds"] = round(time.perf_counter() - started, 2)
        results["benchmarks"][name] = value  # type: ignore[index]
        print(f"{name}: {json.dumps(value)}")
    OUT.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
