"""The soak: a seeded random sequence of operations on one notebook in a real Jupyter server, invariants checked after every step.

`python -m bench.soak --seconds N --seed S` runs it; a violation prints the seed and the step, and
`--seed S --steps K` replays it (see bench/README.md).
"""

from .steps import OPERATIONS, Outcome, run

__all__ = ["OPERATIONS", "Outcome", "run"]
