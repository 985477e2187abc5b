"""Widget messages on a kernel subshell, as JupyterLab with ipykernel 7 sends them.

The widget manager sends comm messages on a subshell: their callbacks run in a thread
named `subshell-<uuid>` with its own event loop. A client reproduces that without a
browser: `create_subshell_request` on the control channel, then the panel's text-box
`update` and `submit` messages (and a Stop click) with that `subshell_id` in the header.
The agent's work must still happen on the kernel's main loop, so a `%%agent` cell run
while the panel's answer streams is served as soon as that answer ends, and Stop works.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from agentik_jupyter.testing import FakeLLMServer, Reply
from tests.kernel_support import AGENT_EXPR, RawKernel, audit, kernel_env, roles, user_texts, wait_for

pytestmark = pytest.mark.timeout(120)

PANEL_ANSWER = " ".join(f"panel{i}" for i in range(30))  # ~1.5 s at 0.05 s per chunk
LONG_ANSWER = " ".join(f"word{i}" for i in range(400))  # ~20 s
PROMPT_S = 3.0


def create_subshell(kernel: RawKernel) -> str:
    msg = kernel.kc.session.msg("create_subshell_request", {})
    kernel.kc.control_channel.send(msg)
    reply = kernel.kc.get_control_msg(timeout=10)
    assert reply["content"]["status"] == "ok", reply["content"]
    return str(reply["content"]["subshell_id"])


def send_on_subshell(kernel: RawKernel, subshell_id: str, comm_id: str, data: dict[str, Any]) -> None:
    msg = kernel.kc.session.msg("comm_msg", {"comm_id": comm_id, "data": data})
    msg["header"]["subshell_id"] = subshell_id
    kernel.kc.shell_channel.send(msg)


def echoed(kernel: RawKernel, comm_id: str) -> bool:
    return any(
        m["msg_type"] == "comm_msg"
        and m["content"]["comm_id"] == comm_id
        and m["content"]["data"].get("method") == "echo_update"
        for m in kernel.iopub
    )


def comm_of(kernel: RawKernel, model: str, **state: str) -> str:
    found = [
        m["content"]["comm_id"]
        for m in kernel.comm_opens(model)
        if all(v in str(m["content"]["data"].get("state", {}).get(k, "")) for k, v in state.items())
    ]
    assert found, f"no {model} with {state}"
    return str(found[-1])


def test_panel_send_on_a_subshell_runs_on_the_main_loop(tmp_path: Path) -> None:
    db_path = tmp_path / "sub.agentik.db"
    with FakeLLMServer(chunk_delay=0.05) as server:
        kernel = RawKernel(kernel_env(server, AGENTIK_DB_PATH=str(db_path)), tmp_path)
        try:
            kernel.text("%load_ext agentik_jupyter")
            server.push("First answer.")
            assert kernel.execute("%%agent --wait\nFirst question.").ok
            assert kernel.execute("%agent panel").ok
            kernel.drain(0.3)
            box = comm_of(kernel, "TextModel", placeholder="Ask the agent")
            subshell = create_subshell(kernel)

            # Typing and Enter in the panel, as the widget manager sends them (on its subshell).
            server.push(Reply.text(PANEL_ANSWER))
            send_on_subshell(
                kernel, subshell, box, {"method": "update", "state": {"value": "Panel question."}, "buffer_paths": []}
            )
            # The kernel's echo of that update is published under the subshell's message, and from
            # then on ipykernel routes this widget's messages to the subshell's thread and loop.
            wait_for(lambda: kernel.drain(0.05) or echoed(kernel, box), 5, "the text box's echo_update")
            send_on_subshell(kernel, subshell, box, {"method": "custom", "content": {"event": "submit"}})
            wait_for(lambda: len(server.requests) >= 2, 10, "the panel's request")
            assert user_texts(server.requests[1])[-1] == "Panel question."

            # While the panel's answer streams, a background `%%agent` cell asks for a long answer:
            # it goes after the panel's turn and its request leaves as soon as that turn ends.
            server.push(Reply.text(LONG_ANSWER))
            asked = time.monotonic()
            ex = kernel.execute("%%agent\nWrite a long essay.")
            assert ex.ok, ex.text
            wait_for(lambda: len(server.requests) >= 3, PANEL_WAIT_S, "the cell's request to leave")
            assert time.monotonic() - asked < PANEL_WAIT_S
            assert user_texts(server.requests[2])[-1] == "Write a long essay."

            # Stop, clicked on the subshell, stops the cell's turn within a second.
            s = f"{AGENT_EXPR}.session"
            kernel.wait_until(f"{s}.agent_store.status == 'responding'", timeout=10)
            stops = [
                m["content"]["comm_id"]
                for m in ex.messages
                if m["msg_type"] == "comm_open" and m["content"]["data"].get("state", {}).get("description") == "Stop"
            ]
            assert len(stops) == 1
            clicked = time.monotonic()
            send_on_subshell(kernel, subshell, stops[0], {"method": "custom", "content": {"event": "click"}})
            kernel.wait_until(f"not {s}.busy", timeout=5, interval=0.02)
            assert time.monotonic() - clicked < 1.5
            kernel.drain(0.3)
            entries = audit(db_path)
            assert roles(entries).count("UserMessage") == 3
            assert entries[-1].record.code == "interrupted"
            assert len(server.requests) == 3
        finally:
            kernel.close()


PANEL_WAIT_S = 1.5 + PROMPT_S


def test_a_page_message_while_a_wait_cell_runs_reports_idle_for_itself(tmp_path: Path) -> None:
    """Why JupyterLab's kernel indicator can say Idle while a `--wait` cell shows [*] (README):
    a message the page sends on a subshell during the turn (a Stop, an approval, the notebook's
    answer to the agent) is reported busy then idle for itself, before the cell's own idle;
    JupyterLab's indicator shows the latest report, whichever message it is about."""
    with FakeLLMServer() as server:
        kernel = RawKernel(kernel_env(server, AGENTIK_DB_PATH=str(tmp_path / "i.agentik.db")), tmp_path)
        try:
            kernel.text("%load_ext agentik_jupyter")
            subshell = create_subshell(kernel)
            server.push(Reply.text("Late answer.", first_byte_after=PROMPT_S))
            cell = kernel.submit("%%agent --wait\nTake your time.")
            wait_for(lambda: server.requests, 10, "the turn's request")
            send_on_subshell(kernel, subshell, "no-such-comm", {})
            done = kernel.collect(cell)
            assert done.ok, done.text
            states = [
                (m["parent_header"].get("msg_type"), m["content"]["execution_state"])
                for m in kernel.iopub
                if m["msg_type"] == "status" and m["parent_header"].get("msg_type") in {"comm_msg", "execute_request"}
            ]
            assert states[-3:] == [("comm_msg", "busy"), ("comm_msg", "idle"), ("execute_request", "idle")], states
        finally:
            kernel.close()
