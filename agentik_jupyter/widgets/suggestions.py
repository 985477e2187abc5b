"""`@` in the panel's text box suggests the kernel's variable names, clickable to complete.

Names and type names only, from `type()` (the suggester never reads an object), computed on
the kernel's main loop from the box's value as the user types. The buttons are made the
first time they are needed and then reused, so typing costs a few trait updates, not new
widgets.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ipywidgets import Button, HBox, Layout, Text

from agentik_jupyter.core.mainloop import main_thread_callback

MAX_SHOWN = 6
# `@` then a (possibly empty) name at the end of the text: the mention being typed.
TYPING = re.compile(r"(?<![\w@.])@([A-Za-z_]\w*)?$")

Suggester = Callable[[str], list[tuple[str, str]]]


class MentionSuggestions:
    """A row of `@name (type)` buttons under `box` while its last word starts with `@`."""

    def __init__(self, box: Text, suggester: Callable[[], Suggester | None]) -> None:
        self.box = box
        self._suggester = suggester
        self.names: list[str] = []
        self.widget = HBox(layout=Layout(display="none", flex_flow="row wrap"))
        self._buttons: list[Button] = []

    def update(self, text: str) -> None:
        """Show the names matching the mention being typed at the end of `text` (or hide)."""
        match = TYPING.search(text)
        suggest = self._suggester()
        found = suggest(match.group(1) or "")[:MAX_SHOWN] if match and suggest is not None else []
        self.names = [name for name, _ in found]
        if not found:
            self.widget.layout.display = "none"
            return
        while len(self._buttons) < len(found):
            self._buttons.append(self._make_button(len(self._buttons)))
        for button, (name, kind) in zip(self._buttons, found):
            button.description, button.tooltip = f"@{name}", f"{name}: {kind}"
            button.layout.display = ""
        for button in self._buttons[len(found) :]:
            button.layout.display = "none"
        self.widget.children = tuple(self._buttons)
        self.widget.layout.display = "flex"

    def complete(self, name: str) -> None:
        """Replace the mention being typed with `@name ` and hide the list."""
        text = self.box.value
        match = TYPING.search(text)
        if match is not None:
            self.box.value = f"{text[: match.start()]}@{name} "
        self.names = []
        self.widget.layout.display = "none"
        self.box.focus()  # the click took the focus: give it back so typing goes on in the box

    def _make_button(self, index: int) -> Button:
        button = Button(layout=Layout(width="auto"), button_style="")
        button.add_class("agentik-mention")
        button.on_click(main_thread_callback(lambda _: self._clicked(index)))
        return button

    def _clicked(self, index: int) -> None:
        if index < len(self.names):
            self.complete(self.names[index])
