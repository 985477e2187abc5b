"""pytest plugin for the nbval run: compare the human-readable outputs only.

The transcript's text/html and JSON forms carry timings and call ids that differ
on every run; its text/plain form holds the same conversation without them.
"""

from __future__ import annotations

from typing import Any

SKIPPED = ("text/html", "application/vnd.agentik.transcript+json")


def pytest_collection_modifyitems(session: Any, config: Any, items: list[Any]) -> None:
    for item in items:
        parent = item.parent
        if hasattr(parent, "skip_compare") and SKIPPED[0] not in parent.skip_compare:
            parent.skip_compare = tuple(parent.skip_compare) + SKIPPED
