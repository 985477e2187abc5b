"""`python -m bench.soak --seconds N --seed S [--steps K] [--collaboration MODE] [--plan OP,OP,…]`: run the soak, print what it did; exit 1 on a violation."""

from __future__ import annotations

import argparse
import random
import sys

from .steps import run
from .world import COLLABORATION


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__)
    parser.add_argument("--seconds", type=float, default=180.0, help="how long to run (default 180)")
    parser.add_argument("--seed", type=int, default=None, help="the seed (default: a random one, printed)")
    parser.add_argument("--steps", type=int, default=None, help="run exactly this many steps (a replay)")
    parser.add_argument("--no-pages", action="store_true", help="a Jupyter server without pages (no Chromium)")
    parser.add_argument(
        "--collaboration",
        choices=COLLABORATION,
        default="alternate",
        help="jupyter-collaboration: off, on, or alternate (off at first, switched at each server restart; the default)",
    )
    parser.add_argument(
        "--plan", default=None, help="run these operations in order (comma-separated names) instead of drawing them"
    )
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(1_000_000)
    print(f"soak: seed {seed}", flush=True)
    outcome = run(
        args.seconds,
        seed,
        steps=args.steps,
        pages=not args.no_pages,
        collaboration=args.collaboration,
        plan=args.plan.split(",") if args.plan else None,
        log=lambda line: print(line, flush=True),
    )
    print(outcome.report(), flush=True)
    return 0 if outcome.ok else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
