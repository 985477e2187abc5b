"""A project `mcp.json` starts nothing and expands nothing until the user trusts it.

A notebook folder arrives with an `mcp.json` beside the notebook: a stdio server whose
start leaves a mark on disk, and an HTTP server whose URL and header carry
`${LLM_API_KEY}`. In a real kernel: the first turn and `%agent tools` start nothing (no
mark), the trust card lists what the file would run (variable names, never values);
`%agent mcp trust` starts it; a changed file asks again, and the card's Trust button
(clicked as the frontend does) trusts the new version. `AGENTIK_APPROVE=auto` changes
none of this. No output carries the key.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agentik_jupyter.security.trust import TrustStore, digest
from agentik_jupyter.testing import FakeLLMServer, Reply
from tests.kernel_support import SECRET_KEY, RawKernel, kernel_env, output_text

pytestmark = pytest.mark.timeout(180)
MARKING = Path(__file__).parent.parent / "mcp_servers" / "marking_server.py"


def write_config(folder: Path, mark: Path, *, extra_args: list[str] | None = None) -> Path:
    config = folder / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "demo": {
                        "command": sys.executable,
                        "args": [str(MARKING), str(mark), *(extra_args or [])],
                        "env": {"DEMO_TOKEN": "${LLM_API_KEY}"},
                        "policy": "auto",
                    },
                    "remote": {
                        "url": "http://127.0.0.1:9/mcp?key=${LLM_API_KEY}",
                        "headers": {"Authorization": "Bearer ${LLM_API_KEY}"},
                    },
                }
            },
            indent=1,
        )
    )
    return config


def widget_states(kernel: RawKernel, model: str) -> list[dict[str, Any]]:
    return [m["content"]["data"]["state"] | {"comm_id": m["content"]["comm_id"]} for m in kernel.comm_opens(model)]


def click_on_subshell(kernel: RawKernel, comm_id: str) -> None:
    """A Button click sent on a kernel subshell, as JupyterLab's widget manager does (ipykernel 7)."""
    request = kernel.kc.session.msg("create_subshell_request", {})
    kernel.kc.control_channel.send(request)
    reply = kernel.kc.get_control_msg(timeout=10)
    assert reply["content"]["status"] == "ok", reply["content"]
    click = kernel.kc.session.msg(
        "comm_msg", {"comm_id": comm_id, "data": {"method": "custom", "content": {"event": "click"}}}
    )
    click["header"]["subshell_id"] = reply["content"]["subshell_id"]
    kernel.kc.shell_channel.send(click)


def every_output(kernel: RawKernel) -> str:
    return json.dumps([m["content"] for m in kernel.iopub])


def test_project_mcp_json_waits_for_trust(tmp_path: Path) -> None:
    project, data_dir = tmp_path / "project", tmp_path / "data"
    project.mkdir()
    mark = tmp_path / "server-started.json"
    config = write_config(project, mark)
    with FakeLLMServer() as server:
        server.push(Reply.text("First answer."), Reply.text("Second answer."))
        env = kernel_env(
            server,
            AGENTIK_DB_PATH=str(tmp_path / "s.db"),
            AGENTIK_APPROVE="auto",  # answers tool approvals only, never trust
            JUPYTER_DATA_DIR=str(data_dir),
            JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
        )
        kernel = RawKernel(env, project)
        try:
            kernel.text("%load_ext agentik_jupyter")
            turn = kernel.execute("%%agent --wait\nHello", timeout=60)
            assert turn.ok, turn.text
            time.sleep(1.0)  # a started server would have written its mark by now
            assert not mark.exists(), "the project's stdio server ran before trust"
            offered = {t["function"]["name"] for t in server.requests[0].body.get("tools", [])}
            assert not any(name.startswith(("demo__", "remote__")) for name in offered)

            cards = [s for s in widget_states(kernel, "HTMLModel") if "Trust this MCP config?" in s["value"]]
            assert len(cards) == 1, "the first turn shows the trust card in its cell"
            card = cards[0]["value"]
            assert str(MARKING) in card and "127.0.0.1:9/mcp?key=${LLM_API_KEY}" in card
            assert "${LLM_API_KEY}" in card and "DEMO_TOKEN" in card and "auto" in card

            tools = kernel.text("%agent tools")
            assert "demo (stdio, policy ask): untrusted" in tools and "not trusted" in tools, tools
            assert not mark.exists(), "%agent tools started the untrusted server"

            trusted = kernel.execute("%agent mcp trust")
            assert trusted.ok, trusted.text
            kernel.wait_until(f"__import__('pathlib').Path({str(mark)!r}).exists()", timeout=30)
            state = kernel.text("%agent mcp")
            assert "project file: trusted" in state and "demo (stdio, policy auto): ready" in state, state
            assert "remote (http, policy ask): failed" in state and "${LLM_API_KEY}" in state, state
            stored = TrustStore(data_dir / "agentik" / "trusted.json")
            assert stored.is_trusted(config, digest(config.read_bytes()))

            mark.unlink()
            config = write_config(project, mark, extra_args=["--changed"])
            changed = kernel.text("%agent tools")
            assert "demo (stdio, policy ask): untrusted" in changed, changed
            assert "demo__add" not in changed, "the old version's tools outlived the change"
            time.sleep(1.0)
            assert not mark.exists(), "a changed file ran without asking again"
            cards = [s for s in widget_states(kernel, "HTMLModel") if "Trust this MCP config?" in s["value"]]
            assert len(cards) == 2, "the changed file shows a new card"

            trust_buttons = [s for s in widget_states(kernel, "ButtonModel") if s.get("description") == "Trust"]
            click_on_subshell(kernel, trust_buttons[-1]["comm_id"])  # as JupyterLab sends it
            kernel.wait_until(f"__import__('pathlib').Path({str(mark)!r}).exists()", timeout=30)
            assert "demo (stdio, policy auto): ready" in kernel.text("%agent tools")
            assert stored.is_trusted(config, digest(config.read_bytes()))

            untrusted = kernel.text("%agent mcp untrust")
            assert "Not trusted" in untrusted
            assert "demo (stdio, policy ask): untrusted" in kernel.text("%agent tools")
            kernel.drain(0.5)
            assert SECRET_KEY not in every_output(kernel), "an output carried the expanded key"
            assert SECRET_KEY not in output_text(turn.outputs)
        finally:
            kernel.close()


def test_user_config_is_trusted_and_failure_notices_mask_expanded_values(tmp_path: Path) -> None:
    """The file named by AGENTIK_MCP_CONFIG is the user's: it runs at once; its errors show `${VAR}`."""
    mark = tmp_path / "server-started.json"
    config = write_config(tmp_path, mark)
    with FakeLLMServer() as server:
        server.push(Reply.text("Answer."))
        env = kernel_env(
            server,
            AGENTIK_DB_PATH=str(tmp_path / "s.db"),
            AGENTIK_MCP_CONFIG=str(config),
            JUPYTER_DATA_DIR=str(tmp_path / "data"),
            JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
        )
        kernel = RawKernel(env, tmp_path)
        try:
            kernel.text("%load_ext agentik_jupyter")
            turn = kernel.execute("%%agent --wait\nHello", timeout=60)
            assert turn.ok, turn.text
            assert mark.exists()
            shown = output_text(turn.outputs)
            assert "MCP server 'remote' failed" in shown and "key=${LLM_API_KEY}" in shown, shown
            cards = [s for s in widget_states(kernel, "HTMLModel") if "Trust this MCP config?" in s["value"]]
            assert not cards, "the user's own file needs no trust card"
            kernel.drain(0.5)
            assert SECRET_KEY not in every_output(kernel)
        finally:
            kernel.close()
