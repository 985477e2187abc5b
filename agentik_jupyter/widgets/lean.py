"""Widgets that open with only the state the page does not already know.

ipywidgets sends every synced trait when a widget opens (~600 bytes for one line of HTML), yet
the page's model starts from the same defaults (its `defaults()`): no classes, no tooltip, an
empty description, the view of its own kind. A view opens several widgets a turn, so these
leave out each trait whose value is that default; the model's kind (`_model_*`, which the page
needs to make the model) always crosses, and a later change of any trait is an update as usual.
Only the opening is lean: a state asked for again (the page reconnecting, `request_states`)
is whole, since the page merges it into the models it kept and a left-out key would keep a
stale value there.
"""

from __future__ import annotations

from typing import Any

from ipywidgets import HTML, Button, HBox, VBox

KIND = ("_model_name", "_model_module", "_model_module_version")
PAGE_DEFAULTS: dict[str, Any] = {
    "_dom_classes": [],
    "_view_count": None,
    "tabbable": None,
    "tooltip": None,
    "description": "",
    "description_allow_html": False,
    "placeholder": "\u200b",
    "box_style": "",
    "button_style": "",
    "disabled": False,
    "icon": "",
    "value": "",
    "tail": "",
}
"""Traits whose page-side default (ipywidgets 8's models, and ours) is this value."""
VIEW_KIND = ("_view_name", "_view_module", "_view_module_version")
"""Left out when they are the class's own (the page's model has the same default)."""


class Lean:
    """Mixin for a DOMWidget: opens without the page's defaults (see the module)."""

    KEEP: tuple[str, ...] = ()
    """Traits always sent: the page's default for this kind differs from PAGE_DEFAULTS."""
    _opening = False

    def open(self) -> None:
        self._opening = True
        try:
            super().open()  # type: ignore[misc]
        finally:
            self._opening = False

    def get_state(self, key: Any = None, drop_defaults: bool = False) -> dict[str, Any]:
        state: dict[str, Any] = super().get_state(key, drop_defaults)  # type: ignore[misc]
        if key is not None or not self._opening:
            return state
        traits = self.traits()  # type: ignore[attr-defined]
        for name in list(state):
            if name in KIND or name in self.KEEP:
                continue
            value = state[name]
            if name in VIEW_KIND:
                if value == traits[name].default_value:
                    del state[name]
            elif name in PAGE_DEFAULTS and _same(value, PAGE_DEFAULTS[name]):
                del state[name]
        return state


def _same(value: Any, default: Any) -> bool:
    if isinstance(default, list):
        return isinstance(value, (list, tuple)) and list(value) == default
    return type(value) is type(default) and value == default


class LeanHTML(Lean, HTML):
    """An HTML widget opened lean."""


class LeanButton(Lean, Button):
    """A Button opened lean. Its page model defaults `tooltip` to '' and shows
    `tooltip ?? description` on hover: the None that means "the description" must cross."""

    KEEP = ("tooltip",)


class LeanHBox(Lean, HBox):
    """An HBox opened lean."""


class LeanVBox(Lean, VBox):
    """A VBox opened lean."""
