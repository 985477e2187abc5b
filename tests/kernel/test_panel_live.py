"""The chat panel keeps up with its session, in a real kernel, read as the frontend reads it.

The panel's widget tree is rebuilt from the kernel's iopub messages alone (comm_open states
plus every update), as JupyterLab's widget manager would draw it: a `%%agent` cell run while
the panel is shown, in the panel's session, appears in the panel (the question, the answer,
its tool card), background or `--wait`; a turn the panel sent appears once; a stopped turn is
marked "■ Stopped" live and again when the session is re-rendered from the sessions file.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import pytest

from agentik_jupyter.testing import FakeLLMServer, Reply
from tests.kernel_support import AGENT_EXPR, RawKernel, kernel_env, wait_for

pytestmark = pytest.mark.timeout(150)

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
STOPPED = "■ Stopped"
LONG_ANSWER = " ".join(f"word{i}" for i in range(400))  # ~20 s at 0.05 s a chunk


class Frontend:
    """Widget models as a frontend holds them: the states the kernel opened and updated."""

    def __init__(self, kernel: RawKernel) -> None:
        self.kernel = kernel

    def models(self) -> dict[str, dict[str, Any]]:
        models: dict[str, dict[str, Any]] = {}
        for m in self.kernel.iopub:
            content = m["content"]
            if m["msg_type"] == "comm_open":
                models[content["comm_id"]] = dict(content["data"].get("state", {}))
            elif m["msg_type"] == "comm_msg" and content["comm_id"] in models:
                data = content.get("data", {})
                if data.get("method") in ("update", "echo_update"):
                    models[content["comm_id"]].update(data.get("state", {}))
            elif m["msg_type"] == "comm_close":
                models.pop(content["comm_id"], None)
        return models

    def text(self, root: str) -> str:
        """The text a reader sees under the widget `root` (HTML values, descriptions), in order."""
        models = self.models()
        out: list[str] = []

        def walk(model_id: str) -> None:
            state = models.get(model_id)
            if state is None:
                return
            layout = models.get(str(state.get("layout", "")).removeprefix("IPY_MODEL_"), {})
            if layout.get("display") == "none":
                return
            value = state.get("value")
            if isinstance(value, str) and state.get("_model_name") == "HTMLModel":
                out.append(html.unescape(re.sub(r"<[^>]+>", "", value)))
            for child in state.get("children", []) or []:
                walk(str(child).removeprefix("IPY_MODEL_"))

        walk(root)
        return "\n".join(t for t in out if t.strip())

    def transcript(self, root: str) -> str:
        """The text of the panel's conversation: its scrolling box (not the title nor the status line)."""
        models = self.models()
        for child in models[root].get("children", []):
            state = models.get(str(child).removeprefix("IPY_MODEL_"), {})
            layout = models.get(str(state.get("layout", "")).removeprefix("IPY_MODEL_"), {})
            if layout.get("overflow") == "auto" or layout.get("overflow_y") == "auto":
                return self.text(str(child).removeprefix("IPY_MODEL_"))
        raise AssertionError("the panel has no scrolling conversation")


def panel_root(kernel: RawKernel, panel_msg_id: str) -> str:
    """The model id of the panel the `%agent panel` request displayed."""
    for m in kernel.iopub:
        if m["parent_header"].get("msg_id") == panel_msg_id and m["msg_type"] == "display_data":
            data = m["content"]["data"]
            if WIDGET_MIME in data:
                return str(data[WIDGET_MIME]["model_id"])
    raise AssertionError("the panel was not displayed")


def open_panel(kernel: RawKernel) -> str:
    msg_id = kernel.submit("%agent panel")
    assert kernel.collect(msg_id).ok
    wait_for(lambda: kernel.drain(0.05) or _has_display(kernel, msg_id), 10, "the panel")
    return panel_root(kernel, msg_id)


def _has_display(kernel: RawKernel, msg_id: str) -> bool:
    return any(m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "display_data" for m in kernel.iopub)


def shows(frontend: Frontend, root: str, *texts: str) -> bool:
    frontend.kernel.drain(0.05)
    seen = frontend.transcript(root)
    return all(t in seen for t in texts)


def test_cell_turns_of_the_panels_session_appear_in_the_panel(tmp_path: Path) -> None:
    db_path = tmp_path / "live.agentik.db"
    with FakeLLMServer(chunk_delay=0.02) as server:
        kernel = RawKernel(kernel_env(server, AGENTIK_DB_PATH=str(db_path)), tmp_path)
        try:
            kernel.text("%load_ext agentik_jupyter")
            kernel.text("import pandas as pd\nsales = pd.DataFrame({'units': [1, 2, 3]})")
            server.push("Before the panel. END-ZERO")
            assert kernel.execute("%%agent --wait\nA question before the panel").ok
            root = open_panel(kernel)
            fe = Frontend(kernel)
            wait_for(lambda: shows(fe, root, "A question before the panel", "END-ZERO"), 10, "the history")

            # a background cell: its question, its tool card and its answer reach the panel
            server.push(
                Reply.tool_calls([{"name": "describe_dataframe", "args": {"name": "sales"}}]),
                Reply.text("The frame has three rows. END-BACKGROUND"),
            )
            assert kernel.execute("%%agent\nDescribe sales from a cell").ok
            wait_for(
                lambda: shows(fe, root, "Describe sales from a cell", "describe_dataframe", "END-BACKGROUND"),
                20,
                "the background cell's turn in the panel",
            )
            kernel.wait_until(f"not {AGENT_EXPR}.session.busy")

            # a --wait cell
            server.push("A waited answer. END-WAITED")
            assert kernel.execute("%%agent --wait\nA waited question from a cell").ok
            wait_for(
                lambda: shows(fe, root, "A waited question from a cell", "END-WAITED"),
                10,
                "the --wait cell's turn in the panel",
            )

            text = fe.transcript(root)
            for once in (
                "A question before the panel",
                "Describe sales from a cell",
                "END-BACKGROUND",
                "A waited question from a cell",
                "END-WAITED",
            ):
                assert text.count(once) == 1, (once, text)
            assert (
                text.index("END-ZERO")
                < text.index("Describe sales")
                < text.index("END-BACKGROUND")
                < text.index("A waited question")
                < text.index("END-WAITED")
            )
        finally:
            kernel.close()


def test_a_turn_the_panel_sends_appears_once(tmp_path: Path) -> None:
    db_path = tmp_path / "sent.agentik.db"
    with FakeLLMServer(chunk_delay=0.02) as server:
        kernel = RawKernel(kernel_env(server, AGENTIK_DB_PATH=str(db_path)), tmp_path)
        try:
            kernel.text("%load_ext agentik_jupyter")
            root = open_panel(kernel)
            fe = Frontend(kernel)
            models = fe.models()
            (box,) = [k for k, s in models.items() if s.get("_model_name") == "TextModel"]
            (send,) = [k for k, s in models.items() if s.get("description") == "Send"]
            server.push("Sent from the panel. END-PANEL")
            kernel.send_comm_msg(box, {"method": "update", "state": {"value": "Panel question"}, "buffer_paths": []})
            kernel.drain(0.2)
            kernel.click(send)
            wait_for(lambda: shows(fe, root, "Panel question", "END-PANEL"), 15, "the panel's own turn")
            kernel.wait_until(f"not {AGENT_EXPR}.session.busy")
            kernel.drain(0.3)
            text = fe.transcript(root)
            assert text.count("Panel question") == 1 and text.count("END-PANEL") == 1, text
        finally:
            kernel.close()


def test_a_stopped_cell_turn_is_marked_live_and_after_a_resume(tmp_path: Path) -> None:
    db_path = tmp_path / "stop.agentik.db"
    with FakeLLMServer(chunk_delay=0.05) as server:
        kernel = RawKernel(kernel_env(server, AGENTIK_DB_PATH=str(db_path)), tmp_path)
        try:
            kernel.text("%load_ext agentik_jupyter")
            server.push("First. END-FIRST")
            assert kernel.execute("%%agent --wait\nFirst question").ok
            root = open_panel(kernel)
            fe = Frontend(kernel)

            server.push(LONG_ANSWER)
            assert kernel.execute("%%agent\nA long essay from a cell").ok
            wait_for(lambda: shows(fe, root, "A long essay from a cell", "word5"), 15, "the long answer streaming")
            assert kernel.execute("%agent stop").ok
            kernel.wait_until(f"not {AGENT_EXPR}.session.busy")
            wait_for(lambda: shows(fe, root, STOPPED), 10, "the Stopped mark, live")
            live = fe.transcript(root)
            assert live.count(STOPPED) == 1 and live.index("word5") < live.index(STOPPED), live
            assert "word399" not in live

            # the same session re-rendered from the sessions file: the mark is still there, once
            conversation = kernel.value(f"{AGENT_EXPR}.session.conversation_id")
            root = open_panel(kernel)
            wait_for(lambda: shows(fe, root, "A long essay from a cell"), 10, "the reopened panel")
            assert kernel.execute(f"%agent resume {conversation}").ok
            kernel.drain(0.5)
            wait_for(
                lambda: shows(fe, root, "First question", "A long essay from a cell", STOPPED),
                10,
                "the resumed session, its stopped turn marked",
            )
            text = fe.transcript(root)
            assert text.count(STOPPED) == 1 and "Interrupted by the user" not in text, text
            assert text.index("A long essay from a cell") < text.index(STOPPED)
        finally:
            kernel.close()


def test_a_temporary_cell_does_not_cut_the_panel_off_its_session(tmp_path: Path) -> None:
    """The quickstart's order: `%agent panel`, a `--temp` cell, then more cells of the session."""
    db_path = tmp_path / "temp.agentik.db"
    with FakeLLMServer(chunk_delay=0.02) as server:
        kernel = RawKernel(kernel_env(server, AGENTIK_DB_PATH=str(db_path)), tmp_path)
        try:
            kernel.text("%load_ext agentik_jupyter")
            server.push("First. END-FIRST")
            assert kernel.execute("%%agent --wait\nFirst question").ok
            root = open_panel(kernel)
            fe = Frontend(kernel)
            server.push("Off the record. END-TEMP")
            assert kernel.execute("%%agent --wait --temp\nA temporary question").ok
            server.push("Back in the session. END-BACK")
            assert kernel.execute("%%agent --wait\nA question after the temporary one").ok
            wait_for(
                lambda: shows(fe, root, "A question after the temporary one", "END-BACK"),
                10,
                "the session's next cell turn in the panel",
            )
            text = fe.transcript(root)
            assert "END-TEMP" not in text and "A temporary question" not in text, text  # not part of the session
        finally:
            kernel.close()
