"""A finished turn's transcript shown again, marked "↶ Rewound", once the turn is rewound.

A cell's transcript is what a saved notebook keeps of its turn. Opened later, with a kernel that does
not know the turn (a restart, another day), a rewound turn would read "✓ Done" like any other: so
when a turn is rewound in the kernel that showed it (its Rewind, the panel's, `%agent rewind`), its
transcript is replaced where it is shown (a display id, or its Output widget) by one that says so,
and the notebook saved after that keeps the mark.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ipywidgets import Output

from agentik_jupyter.types import ChatMessage
from agentik_jupyter.widgets.publish import update_now
from agentik_jupyter.widgets.transcript import transcript_bundle
from agentik_jupyter.widgets.turn_rewind import controls_of

Show = Callable[[dict[str, Any]], None]


def in_output(output: Output) -> Show:
    """Shows a bundle as the Output widget's only output."""

    def show(bundle: dict[str, Any]) -> None:
        output.outputs = ({"output_type": "display_data", "data": bundle, "metadata": {}},)

    return show


def at_handle(handle: Any) -> Show:
    """Shows a bundle in the place of a display handle."""
    return lambda bundle: update_now(handle, bundle)


def show_when_rewound(
    session: Any, message_id: str | None, show: Show, messages: Sequence[ChatMessage], **transcript: Any
) -> None:
    """Once the turn asked by `message_id` is rewound, `show` its transcript (`transcript_bundle` of
    `messages` and `transcript`) marked rewound. Keeps only these, not the turn's view."""
    if not message_id or getattr(session, "temporary", False):
        return
    kept = list(messages)
    controls_of(session).watch(message_id, lambda: show(transcript_bundle(kept, rewound=True, **transcript)))
