"""`@name` in a question attaches that variable's bounded description to the message.

The model would otherwise spend a tool call (and a round trip) to look at the data
the user is pointing at. The description is the one `inspect_variable` gives
(a DataFrame profile, an array summary, a bounded repr), so the same limits and
refusals apply; names that are not user variables (an e-mail address, a
decorator in pasted code) are left as they are.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from agentik_jupyter.notebook.attachments import take
from agentik_jupyter.notebook.out_mentions import out_images, without_out_mentions
from agentik_jupyter.notebook.shown_images import image_cells
from agentik_jupyter.notebook.tools import NotebookPath
from agentik_jupyter.tools.namespace import type_name, user_variables
from agentik_jupyter.tools.registry import ToolRegistry
from agentik_jupyter.types import Question, ToolOutput

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

MAX_MENTIONS = 5
MENTION_BUDGET_CHARS = 6_000
OUT_SUGGESTIONS = 3
MENTION = re.compile(r"(?<![\w@.])@([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)")
HEADER = "Attached by @mention (the variables' current state in the kernel):"

Describe = Callable[[str], Awaitable[str]]


def mentioned_names(text: str, is_known: Callable[[str], bool]) -> list[str]:
    """Distinct mentioned names, in order of first mention, that name a user variable."""
    seen: list[str] = []
    for match in MENTION.finditer(text):
        name = match.group(1)
        if name not in seen and is_known(name.split(".", 1)[0]):
            seen.append(name)
    return seen


async def attach_mentions(text: str, names: list[str], describe: Describe) -> str:
    """`text` with a section describing each mentioned variable, within MENTION_BUDGET_CHARS."""
    if not names:
        return text
    shown = names[:MAX_MENTIONS]
    share = MENTION_BUDGET_CHARS // len(shown)
    blocks = []
    for name in shown:
        try:
            body = await describe(name)
        except Exception as exc:  # a refused or failing look is reported, never raised
            body = f"could not be read: {exc}"
        if len(body) > share:
            body = body[:share] + f"\n… [{len(body) - share} more chars: use inspect_variable({name!r})]"
        blocks.append(f"### @{name}\n{body}")
    if len(names) > len(shown):
        blocks.append(f"({len(names) - len(shown)} more mention(s) not attached; use inspect_variable)")
    return f"{text}\n\n{HEADER}\n\n" + "\n\n".join(blocks)


async def expand_mentions(
    shell: InteractiveShell, registry: ToolRegistry, text: str, notebook_path: NotebookPath | None = None
) -> str | Question:
    """The question as the model gets it: with the `@name` variables of this shell attached,
    described by the registry's `inspect_variable` (so its limits and refusals apply), then
    what was held for it (a fix turn's failed cell: attachments.hold), then the images of the
    cells mentioned as `@out[n]` (a Question, with the images to send)."""
    expanded = await _with_mentions(shell, registry, text)
    held = take(shell, text)
    expanded = expanded if held is None else f"{expanded}\n\n{held}"
    shown = await out_images(shell, text, notebook_path)
    if shown is None:
        return expanded
    section, images, withheld = shown
    return Question(text=f"{expanded}\n\n{section}", images=images, withheld=withheld)


async def _with_mentions(shell: InteractiveShell, registry: ToolRegistry, text: str) -> str:
    tool = registry.get("inspect_variable")
    if "@" not in text or tool is None:
        return text
    user_ns, hidden = shell.user_ns, getattr(shell, "user_ns_hidden", {})
    names = mentioned_names(
        without_out_mentions(text), lambda n: n in user_ns and n not in hidden and not n.startswith("_")
    )

    async def describe(name: str) -> str:
        result = tool.execute(name=name)
        if inspect.isawaitable(result):
            result = await result
        return result.text if isinstance(result, ToolOutput) else str(result)

    return await attach_mentions(text, names, describe)


def suggest_names(shell: InteractiveShell, prefix: str, limit: int = 8) -> list[tuple[str, str]]:
    """The user variables whose names start with `prefix` (case-insensitive), with their type
    names: what the panel offers as the user types `@`. Read from the names and `type()` only,
    so no object of the user's runs any code for it. Then, for a prefix of `out`, the newest cells
    that showed images, as `out[n]`."""
    wanted = prefix.lower()
    found = [
        (name, type_name(value))
        for name, value in user_variables(shell.user_ns, getattr(shell, "user_ns_hidden", None))
        if name.lower().startswith(wanted)
    ]
    found.sort(key=lambda item: (not item[0].startswith(prefix), item[0].lower()))
    if prefix and "out".startswith(wanted):
        images = image_cells(shell)[:OUT_SUGGESTIONS]
        found = found[: limit - len(images)] + [(f"out[{n}]", f"{k} image(s) cell [{n}] showed") for n, k in images]
    return found[:limit]
