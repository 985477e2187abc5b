"""A view's widgets open with only the state the page does not already know.

ipywidgets sends every synced trait when a widget opens, ~600 bytes for one line of HTML, though
the page's model starts from the same defaults (its `defaults()`: no classes, no tooltip, an
empty description, the view of its own kind). A paced turn opens five or six such widgets; the
defaults alone were ~1 KB of its frontend bytes. The model's kind (`_model_*`), which the page
needs to make it, and everything that differs from the defaults still crosses.
"""

from __future__ import annotations

from typing import Any

from ipywidgets import HBox, VBox

from agentik_jupyter.widgets.live_text import LiveText
from agentik_jupyter.widgets.shared import box, button, button_style, html, html_style, layout, view_bundle
from tests.widgets_support import CommLog, comm_log  # noqa: F401  (a fixture)

KIND = {"_model_name", "_model_module", "_model_module_version"}
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
    "_view_module": "@jupyter-widgets/controls",
    "_view_module_version": "2.0.0",
}


def opened(log: CommLog) -> list[dict[str, Any]]:
    return [payload["state"] for kind, _, _, payload in log.messages if kind == "comm_open"]


def test_a_views_widgets_open_without_the_pages_defaults(comm_log: CommLog) -> None:
    layout("plain"), layout("tight"), html_style(), button_style()  # (shared: opened once per kernel)
    comm_log.reset()
    status = html("")
    question = html('<div class="agentik-user">Q</div>')
    stop = button("Stop", icon="stop", tooltip="Stop this turn", _dom_classes=("agentik-button",))
    footer = box(HBox, (status, stop))
    root = box(VBox, (question, footer), classes=("agentik-live",))
    live = LiveText("", "<p>The</p>", layout=layout("tight"))
    states = opened(comm_log)
    assert len(states) == 6
    for state in states:
        assert KIND <= set(state), state  # the page makes the model from these
        assert "layout" in state, state
        defaults = {k: v for k, v in state.items() if PAGE_DEFAULTS.get(k, object()) == v}
        assert not defaults, (state["_model_name"], defaults)
    by_name = {s["_model_name"]: s for s in states}
    assert by_name["ButtonModel"]["description"] == "Stop" and by_name["ButtonModel"]["icon"] == "stop"
    assert by_name["ButtonModel"]["tooltip"] == "Stop this turn"
    assert list(by_name["ButtonModel"]["_dom_classes"]) == ["agentik-button"]
    assert list(by_name["VBoxModel"]["_dom_classes"]) == ["agentik-live"]
    assert by_name["LiveTextModel"]["tail"] == "<p>The</p>"
    assert by_name["LiveTextModel"].get("_view_name", "LiveTextView") == "LiveTextView"
    assert sum(size for kind, _, size, _ in comm_log.messages if kind == "comm_open") <= 2_200
    for widget in (live, root, footer, stop, question, status):
        widget.close()


def test_a_changed_default_still_crosses(comm_log: CommLog) -> None:
    """A later change of a trait left out at the opening is an update like any other."""
    stop = button("Stop", disabled=True)
    assert opened(comm_log)[-1]["disabled"] is True
    comm_log.reset()
    stop.disabled = False
    updates = [payload["state"] for kind, _, _, payload in comm_log.messages if kind == "comm_msg"]
    assert updates == [{"disabled": False}]
    stop.close()


def test_a_button_without_a_tooltip_keeps_its_hover_text(comm_log: CommLog) -> None:
    """The page's ButtonModel defaults `tooltip` to '' (not null) and shows `tooltip ?? description`
    on hover: a Button opened without `tooltip: null` would lose the description as its hover text."""
    button_style(), layout("plain")
    comm_log.reset()
    approve = button("Approve")
    state = opened(comm_log)[0]
    assert "tooltip" in state and state["tooltip"] is None
    approve.close()


def test_a_state_asked_for_again_is_whole(comm_log: CommLog) -> None:
    """After a reconnect the page asks for every widget's state and merges it into the models it
    kept: a key left out would keep the page's stale value (a Stop shown disabled, an old tail)."""
    layout("tight")
    live = LiveText("", "<p>The</p>", layout=layout("tight"))
    stop = button("Stop", disabled=True)
    stop.disabled = False
    live.reset("<p>The end.</p>")
    again = live.get_state()
    assert again["value"] == "<p>The end.</p>" and again["tail"] == ""
    assert stop.get_state()["disabled"] is False
    assert "_dom_classes" in stop.get_state() and "_view_name" in stop.get_state()
    live.close(), stop.close()


def test_a_place_shows_the_widget_as_ipywidgets_would_without_its_repr(comm_log: CommLog) -> None:
    """The bundle that shows a widget in a cell's place is ipywidgets' own, less its text/plain (the
    repr of every trait, which no viewer of the place reads: the place says its own text, or none)."""
    for widget in (html("<b>x</b>"), button("Rewind", icon="undo"), box(VBox, (html("y"),))):
        theirs = dict(widget._repr_mimebundle_())
        del theirs["text/plain"]
        assert view_bundle(widget) == theirs
