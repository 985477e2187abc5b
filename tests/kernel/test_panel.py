"""The chat panel in a real kernel, driven as JupyterLab drives it (comm messages on a kernel
subshell): "Show older" on a resumed long session draws only the older page, and typing `@`
in the box offers the kernel's variables as buttons that complete the name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentik_jupyter.testing import FakeLLMServer
from tests.core.test_history import write_long_session
from tests.kernel.test_subshell import comm_of, create_subshell, send_on_subshell
from tests.kernel_support import AGENT_EXPR, RawKernel, kernel_env, wait_for

pytestmark = pytest.mark.timeout(120)


def html_opens(kernel: RawKernel, text: str) -> list[dict[str, Any]]:
    return [m for m in kernel.comm_opens("HTMLModel") if text in str(m["content"]["data"]["state"].get("value", ""))]


def described(kernel: RawKernel, description: str) -> list[str]:
    """Widgets whose description the kernel set to `description` (at creation or later)."""
    return [
        m["content"]["comm_id"]
        for m in kernel.iopub
        if m["msg_type"] in ("comm_open", "comm_msg")
        and m["content"].get("data", {}).get("state", {}).get("description") == description
    ]


def value_updates(kernel: RawKernel, comm_id: str) -> list[str]:
    """The values the kernel set on a widget (what the frontend's box shows)."""
    return [
        m["content"]["data"]["state"]["value"]
        for m in kernel.iopub
        if m["msg_type"] == "comm_msg"
        and m["content"]["comm_id"] == comm_id
        and "value" in m["content"]["data"].get("state", {})
    ]


def test_show_older_and_mention_suggestions_in_the_kernel(tmp_path: Path) -> None:
    db_path = tmp_path / "long.agentik.db"
    write_long_session(db_path, 50)
    s = f"{AGENT_EXPR}.session"
    with FakeLLMServer() as server:
        kernel = RawKernel(kernel_env(server, AGENTIK_DB_PATH=str(db_path)), tmp_path)
        try:
            kernel.text("%load_ext agentik_jupyter")
            kernel.text("import pandas as pd\nsales = pd.DataFrame({'units': [1, 2]})\nsales_q = 3")
            assert kernel.execute("%agent panel").ok
            kernel.drain(0.3)
            assert html_opens(kernel, "Question 10<") and not html_opens(kernel, "Question 9<")
            subshell = create_subshell(kernel)

            older = comm_of(kernel, "ButtonModel", description="Show older")
            last_drawn = len(html_opens(kernel, "Last answer"))
            send_on_subshell(kernel, subshell, older, {"method": "custom", "content": {"event": "click"}})
            kernel.wait_until(f"not {s}.has_older", timeout=10)
            wait_for(lambda: kernel.drain(0.05) or html_opens(kernel, "Question 0<"), 5, "the older page drawn")
            kernel.drain(0.3)
            for i in range(50):
                assert len(html_opens(kernel, f"Question {i}<")) == 1, i
            assert len(html_opens(kernel, "Last answer")) == last_drawn  # what was shown was not drawn again
            assert kernel.value(f"[m.content for m in {s}.chat_store.messages if m.role == 'user'][0]") == "Question 0"

            box = comm_of(kernel, "TextModel", placeholder="Ask the agent")
            send_on_subshell(
                kernel, subshell, box, {"method": "update", "state": {"value": "Compare @sa"}, "buffer_paths": []}
            )
            wait_for(lambda: kernel.drain(0.05) or described(kernel, "@sales_q"), 5, "the @ suggestions")
            (choice,) = described(kernel, "@sales")
            send_on_subshell(kernel, subshell, choice, {"method": "custom", "content": {"event": "click"}})
            wait_for(
                lambda: kernel.drain(0.05) or "Compare @sales " in value_updates(kernel, box),
                5,
                "the completed name in the box",
            )
        finally:
            kernel.close()
