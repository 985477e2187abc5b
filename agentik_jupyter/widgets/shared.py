"""Layouts and styles shared by every view's widgets, and the widgets built on them.

In ipywidgets 8 every DOMWidget gets a Layout widget of its own, and an HTML or a Button a
Style widget too, unless given one: three `comm_open`s, each with its full state, for one
line of HTML. Here each kind of layout or style is created once per kernel and shared, so
a turn opens only the widgets that show something. A shared layout is never changed after
it is made (that would change every view using it): to hide a view, swap its layout.

A turn's parts carry classes (`agentik-live`, `agentik-user`, `agentik-assistant`,
`agentik-approval`...) that labextension/style/index.css styles for the live view, the transcript
and the chat panel alike, and the same look inline (widgets/look.py: frames in these shared
layouts, button colours in these shared styles, the rest in the HTML), for a frontend that
renders ipywidgets without our lab extension (VS Code, Colab).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ipywidgets import HTML, Box, Button, HBox, Layout, VBox, Widget
from ipywidgets.widgets.widget_button import ButtonStyle
from ipywidgets.widgets.widget_string import HTMLStyle

from agentik_jupyter.widgets import look
from agentik_jupyter.widgets.lean import LeanButton, LeanHBox, LeanHTML, LeanVBox

W = TypeVar("W", bound=Widget)

LAYOUTS: dict[str, dict[str, str]] = {
    "plain": {},
    "flex": {"flex": "1 1 auto"},
    "hidden": {"display": "none"},
    "tight": {"margin": "0"},
    "auto": {"width": "auto"},
    "live": look.LIVE_FRAME,
    "approval": look.APPROVAL_FRAME,
    "approval_done": look.APPROVAL_DONE_FRAME,
}
BUTTON_STYLES: dict[str, dict[str, str]] = {"": {}, "accept": look.ACCEPT_BUTTON, "reject": look.REJECT_BUTTON}

_made: dict[str, Widget] = {}


def _shared(key: str, make: Callable[[], W]) -> W:
    widget = _made.get(key)
    if widget is None or getattr(widget, "comm", None) is None:  # first use, or closed (Widget.close_all)
        widget = _made[key] = make()
    return widget


def layout(name: str = "plain") -> Layout:
    """The shared Layout called `name` (see LAYOUTS)."""
    return _shared(f"layout:{name}", lambda: Layout(**LAYOUTS[name]))


def html_style() -> HTMLStyle:
    return _shared("style:html", HTMLStyle)


def button_style(name: str = "") -> ButtonStyle:
    """The shared ButtonStyle called `name` ("", "accept", "reject": see BUTTON_STYLES)."""
    return _shared(f"style:button:{name}", lambda: ButtonStyle(**BUTTON_STYLES[name]))


WIDGET_VIEW_MIME = "application/vnd.jupyter.widget-view+json"


def view_bundle(widget: Widget) -> dict[str, Any]:
    """The bundle that shows `widget`, without ipywidgets' text/plain: that is the widget's repr,
    which walks all its traits and its children's (a place's text is ours to say, or none)."""
    if widget._view_name is None:
        return {}
    return {WIDGET_VIEW_MIME: {"version_major": 2, "version_minor": 0, "model_id": widget.model_id}}


def placeholder() -> Box:
    """One empty box per kernel, shown in the place of every `--wait` view not built yet: the
    place costs a display, not a widget (see `TurnView`). Never changed."""
    return _shared("box:placeholder", lambda: LeanVBox(layout=layout("plain")))


def html(value: str = "", layout_name: str = "plain", classes: tuple[str, ...] = ()) -> HTML:
    """An HTML widget on the shared layout and style: one comm_open, lean (widgets/lean.py)."""
    return LeanHTML(value=value, layout=layout(layout_name), style=html_style(), _dom_classes=classes)


LIVE_CLASSES = ("agentik-live",)
"""A turn's live view (its box): framed like the transcript that replaces it."""
ANSWER_CLASSES = ("agentik-assistant", "jp-RenderedHTMLCommon", "jp-RenderedMarkdown")
"""An answer's element everywhere (live view, transcript, panel): JupyterLab's Markdown look."""
APPROVAL_CLASSES = ("agentik-approval",)
APPROVAL_DONE_CLASS = "agentik-approval-done"
"""A card that asks the user (approval, trust), and one that was answered."""


ACCEPT_CLASSES = ("agentik-button", "agentik-button-accept")
REJECT_CLASSES = ("agentik-button", "agentik-button-reject")
PLAIN_CLASSES = ("agentik-button",)
"""JupyterLab's accept / reject / plain look for the cards' buttons (labextension/style/index.css)."""
KIND_CLASSES = {"accept": ACCEPT_CLASSES, "reject": REJECT_CLASSES, "": PLAIN_CLASSES}


def button(description: str, layout_name: str = "plain", *, kind: str = "", **traits: Any) -> Button:
    """A Button on a shared layout and style: one comm_open, lean (widgets/lean.py). `kind`
    ("accept", "reject" or "" for plain) gives it its classes and its colours inline."""
    traits.setdefault("_dom_classes", KIND_CLASSES[kind])
    return LeanButton(description=description, layout=layout(layout_name), style=button_style(kind), **traits)


def box(
    kind: type[Box], children: tuple[Widget, ...] = (), layout_name: str = "plain", classes: tuple[str, ...] = ()
) -> Box:
    kind = LEAN_BOXES.get(kind, kind)
    return kind(children=children, layout=layout(layout_name), _dom_classes=classes)


LEAN_BOXES: dict[type[Box], type[Box]] = {HBox: LeanHBox, VBox: LeanVBox}


def retire(widget: Widget, *, blank_over: int = 1_000) -> None:
    """Close a finished view and everything under it (frees the models in the kernel and the
    frontend). Long HTML values are blanked first: runners such as nbclient keep the last state
    of every widget in the saved notebook and ignore closes."""
    if isinstance(widget, Box):
        for child in widget.children:
            retire(child, blank_over=blank_over)
    if isinstance(widget, HTML) and len(widget.value) > blank_over:
        widget.value = ""
    widget.close()
