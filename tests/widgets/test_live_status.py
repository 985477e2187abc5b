"""An append-only view opens three widgets: the question with the answer, the status with Stop, their box.

With our lab extension (notebook/page.py) a turn's view was the question and the status line as
two HTML widgets, Stop, an HBox for the line and Stop, the box, and a LiveText for the answer:
six opens (~2.6 KB of a paced turn's ~16 KB) and an update when the answer came. The question now
opens with the LiveText the answer streams into (`head`), and the status line and Stop are one
widget of the extension (`LiveStatus`, drawn by labextension/src/livetext_widget.ts). Without the
extension the view is ipywidgets' own, as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agentik_jupyter.notebook import page as frontend
from agentik_jupyter.widgets.live_status import LiveStatus
from agentik_jupyter.widgets.turn_view import TurnView
from tests.widgets.test_views import session
from tests.widgets_support import CommLog, comm_log  # noqa: F401


@pytest.fixture
def extension() -> Iterator[None]:
    frontend._features["live_text"] = 1  # (what the extension's answer to the handshake sets)
    yield
    frontend.forget()


def click(widget: Any, event: str = "stop") -> None:
    """The page's Stop click, as the extension sends it (a custom message on the widget's comm)."""
    widget._handle_msg({"content": {"data": {"method": "custom", "content": {"event": event}}}, "buffers": []})


def test_an_append_only_view_opens_the_question_with_its_answer_and_the_line_with_stop(
    comm_log: CommLog, extension: None
) -> None:
    s = session([])
    view = TurnView(s, "What is in <df>?")
    opened = [data["state"] for kind, _, _, data in comm_log.messages if kind == "comm_open"]
    names = [state["_model_name"] for state in opened]
    assert sorted(n for n in names if not n.endswith(("LayoutModel", "StyleModel"))) == [
        "LiveStatusModel",
        "LiveTextModel",
        "VBoxModel",
    ], names
    (live,) = [state for state in opened if state["_model_name"] == "LiveTextModel"]
    assert "agentik-user" in live["head"] and "What is in &lt;df&gt;?" in live["head"]
    assert view.status.widget is view.stop_button  # (one widget: the line and Stop)
    assert not view.stop_button.disabled  # (the session is idle: the turn may start at once)
    view.finish()


def test_stop_on_the_page_stops_and_a_disabled_stop_does_nothing(comm_log: CommLog) -> None:
    line = LiveStatus(value='<span class="agentik-status">✎ Responding… 0.3 s</span>', disabled=True)
    clicks: list[Any] = []
    line.on_click(clicks.append)
    click(line)
    assert clicks == []  # (disabled: the page shows it greyed, and a stale click is ignored)
    line.disabled = False
    click(line)
    assert clicks == [line]
    click(line, "click")  # (a client that clicks it as ipywidgets' Button)
    assert clicks == [line, line]
    line.close()


def test_without_the_extension_the_view_is_ipywidgets_own(comm_log: CommLog) -> None:
    frontend.forget()
    view = TurnView(session([]), "Q?")
    names = [data["state"]["_model_name"] for kind, _, _, data in comm_log.messages if kind == "comm_open"]
    assert "LiveStatusModel" not in names and "LiveTextModel" not in names
    assert {"HTMLModel", "ButtonModel", "HBoxModel", "VBoxModel"} <= set(names)
    view.finish()
