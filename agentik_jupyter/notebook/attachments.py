"""What a question carries that the user did not type: @mention descriptions, a fix's traceback.

The model gets the whole text (question, a blank line, then sections that each begin
"Attached by ..."); the user sees only what they asked, wherever a question is shown again
(the panel, a conversation's transcript). A fix turn's question is a short line the user can
read, and its details wait here until the turn starts (`hold`), when the session's expander
adds them (`take`): the same path @mentions take.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

ATTACHED = "\n\nAttached by "
"""How every attached section begins; a question is shown up to the first one."""
MAX_HELD = 20

_held: dict[int, dict[str, str]] = {}


def shown_text(content: str) -> str:
    """The question as the user asked it: the text before its first attached section."""
    return content.split(ATTACHED, 1)[0]


def hold(shell: InteractiveShell, question: str, attachment: str) -> None:
    """Attach `attachment` (a whole section, "Attached by ..." first) to turns that ask `question`.
    The latest wins: a turn queued, stopped before it began and asked again gets today's details."""
    held = _held.setdefault(id(shell), {})
    held.pop(question, None)
    held[question] = attachment
    while len(held) > MAX_HELD:
        held.pop(next(iter(held)))


def take(shell: InteractiveShell, question: str) -> str | None:
    """The section held for `question`, if any."""
    return _held.get(id(shell), {}).get(question)
