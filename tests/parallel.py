"""How the suite spreads over pytest-xdist workers: a module at a time, the slow ones first.

`make test` runs `pytest -n N --dist loadgroup`; `conftest.py` hands xdist this scheduler. A work
unit is a whole module (its module-scoped kernel, server and page serve its tests in file order,
as in a serial run), or a named group (`@pytest.mark.xdist_group("alone")`: tests that must not
share their worker with each other, such as the install walk and the collaboration walk, run one
after another on one worker). Units go out in collection order, which `slow_first` sorts so the
soak (3 minutes, one module) and the long browser walks start first and the short unit tests fill the gaps at the end.
"""

from __future__ import annotations

import pytest
from xdist.scheduler.loadgroup import LoadGroupScheduling

SLOW_FIRST = (
    "tests/soak/",
    "tests/browser/",
    "tests/install/",
    "tests/notebooks/",
    "tests/engines/",
    "tests/kernel/",
    "tests/server/",
)
"""Directories whose modules are long (a browser, a server, kernels): sent to workers first."""


class ModuleOrGroupScheduling(LoadGroupScheduling):
    """xdist's loadgroup, except that an ungrouped test goes with its module, not alone."""

    def _split_scope(self, nodeid: str) -> str:
        if nodeid.rfind("@") > nodeid.rfind("]"):
            return nodeid.split("@")[-1]
        return nodeid.split("::", 1)[0]


def slow_first(items: list[pytest.Item]) -> None:
    """Sort modules so SLOW_FIRST's directories come first, in their order; a module's own tests
    keep their file order (the sort is stable and keyed by directory only)."""

    def rank(item: pytest.Item) -> int:
        path = item.nodeid
        for index, prefix in enumerate(SLOW_FIRST):
            if path.startswith(prefix):
                return index
        return len(SLOW_FIRST)

    items.sort(key=rank)
