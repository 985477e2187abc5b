"""The Rewind on each turn, in a real kernel, driven through the widgets as a page drives them: each
`%%agent` cell's turn ends with its own Rewind; pressed, it shows that turn's preview and asks, and
"Rewind now" takes back that turn and the ones after it. A turn whose checkpoint was released, or
that was rewound, says so instead of offering the button (for good: as plain HTML in the cell, its
button closed). The fake LLM server over real HTTP.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.widgets.turn_rewind import ELSEWHERE_NOTE, REWOUND_NOTE
from tests.kernel.test_rewind import html_updates
from tests.kernel.test_subshell import create_subshell, send_on_subshell
from tests.kernel_support import RawKernel, kernel_env, wait_for

pytestmark = pytest.mark.timeout(180)

CLICK = {"method": "custom", "content": {"event": "click"}}


def buttons(kernel: RawKernel, description: str) -> list[str]:
    """The comm ids of the buttons whose description is exactly `description`, oldest first."""
    return [
        m["content"]["comm_id"]
        for m in kernel.comm_opens("ButtonModel")
        if m["content"]["data"].get("state", {}).get("description") == description
    ]


def run_code_turn(llm: FakeLLMServer, code: str) -> None:
    llm.push(Reply.tool_calls([{"name": "run_code", "args": {"code": code}}]), Reply.text("Done."))


def displayed(kernel: RawKernel, text: str) -> bool:
    """Some display (or its update) shows HTML containing `text`, without a widget."""
    return any(
        m["msg_type"] in ("display_data", "update_display_data")
        and text in str(m["content"]["data"].get("text/html", ""))
        for m in kernel.iopub
    )


def shows(kernel: RawKernel, text: str, what: str) -> None:
    wait_for(lambda: kernel.drain(0.05) or html_updates(kernel, text) or displayed(kernel, text), 15, what)


def closed(kernel: RawKernel, comm_id: str) -> bool:
    return any(m["msg_type"] == "comm_close" and m["content"]["comm_id"] == comm_id for m in kernel.iopub)


@pytest.mark.parametrize("wait", [True, False], ids=["wait", "background"])
def test_each_cell_turn_has_its_own_rewind(tmp_path: Path, wait: bool) -> None:
    s = "__import__('agentik_jupyter').current_session()"
    with FakeLLMServer() as llm:
        env = kernel_env(
            llm, AGENTIK_APPROVE="auto", AGENTIK_DB_PATH=str(tmp_path / "t.db"), AGENTIK_REWIND_BUDGET="0.01"
        )
        kernel = RawKernel(env, tmp_path)
        try:
            kernel.text("%load_ext agentik_jupyter")
            kernel.text("x = 1\na = list(range(800))\nb = list(range(800))")  # ~6 KB each: two pass the budget
            magic = "%%agent --wait" if wait else "%%agent"
            for n, code in enumerate(["a.append(-1)", "x = 2\nb.append(-1)", "x = 3"], start=1):
                run_code_turn(llm, code)
                assert kernel.execute(f"{magic}\nTurn {n}.").ok
                kernel.wait_until(f"not {s}.busy", timeout=30)
                wait_for(
                    lambda n=n: kernel.drain(0.05) or len(buttons(kernel, "Rewind")) == n, 15, f"turn {n}'s Rewind"
                )
            assert kernel.value("(x, len(a), len(b))") == [3, 801, 801]
            # turn 2 passed the budget with turn 1: turn 1's checkpoint was released, and its control says so
            shows(
                kernel,
                "Turn 1 can no longer be rewound: its checkpoint was released (past the rewind budget",
                "turn 1's note",
            )

            first, second, third = buttons(kernel, "Rewind")
            assert closed(kernel, first)  # nothing to press there any more
            subshell = create_subshell(kernel)
            send_on_subshell(kernel, subshell, second, CLICK)
            shows(kernel, "Rewind would take back turns 2, 3 (back to before turn 2).", "turn 2's preview")
            assert html_updates(kernel, "names restored: b, x")
            assert kernel.value("x") == 3  # asked, not done
            send_on_subshell(kernel, subshell, buttons(kernel, "Rewind now")[-1], CLICK)
            kernel.wait_until("x == 1 and len(b) == 800", timeout=15)
            shows(kernel, "Rewound turns 2, 3 (back to before turn 2).", "the outcome")
            shows(kernel, REWOUND_NOTE, "the rewound turns' note")
            assert kernel.value("len(a)") == 801  # turn 1 was not rewound
        finally:
            kernel.close()


def turn_buttons(messages: list[dict[str, Any]]) -> list[str]:
    """The per-turn Rewind buttons opened by these messages, oldest first."""
    return [
        m["content"]["comm_id"]
        for m in messages
        if m["msg_type"] == "comm_open"
        and m["content"]["data"].get("state", {}).get("description") == "Rewind"
        and str(m["content"]["data"]["state"].get("tooltip", "")).startswith("Take this turn back")
    ]


def test_each_turn_of_the_panel_has_its_own_rewind(tmp_path: Path) -> None:
    s = "__import__('agentik_jupyter').current_session()"
    with FakeLLMServer() as llm:
        env = kernel_env(llm, AGENTIK_APPROVE="auto", AGENTIK_DB_PATH=str(tmp_path / "p.db"))
        kernel = RawKernel(env, tmp_path)
        try:
            kernel.text("%load_ext agentik_jupyter")
            kernel.text("x = 1")
            for n in (1, 2):
                run_code_turn(llm, f"x = {n + 1}")
                assert kernel.execute(f"%%agent --wait\nTurn {n}.").ok
            panel = kernel.execute("%agent panel")
            assert panel.ok
            drawn = turn_buttons(panel.messages)
            assert len(drawn) == 2  # the panel's transcript: a Rewind at the end of each turn
            run_code_turn(llm, "x = 4")
            third = kernel.execute("%%agent --wait\nTurn 3.")
            assert third.ok
            assert len(turn_buttons(third.messages)) == 2  # the cell's, and the panel's at the end of its turn
            assert kernel.value("x") == 4

            subshell = create_subshell(kernel)
            send_on_subshell(kernel, subshell, drawn[1], CLICK)
            shows(kernel, "Rewind would take back turns 2, 3 (back to before turn 2).", "turn 2's preview")
            assert html_updates(kernel, "names restored: x")
            send_on_subshell(kernel, subshell, buttons(kernel, "Rewind now")[-1], CLICK)
            kernel.wait_until(f"x == 2 and not {s}.busy", timeout=15)
            shows(kernel, REWOUND_NOTE, "the rewound turns' note")
            # turn 1 was not rewound: the panel, drawn again, still offers its Rewind
            assert kernel.value(f"[m.content for m in {s}.chat_store.messages if m.role == 'user']") == [
                "Turn 1.",
                "Turn 2.",
                "Turn 3.",
            ]
        finally:
            kernel.close()


def test_a_turn_of_another_session_says_to_resume_it(tmp_path: Path) -> None:
    with FakeLLMServer() as llm:
        llm.push(Reply.text("Hello."))
        kernel = RawKernel(kernel_env(llm, AGENTIK_DB_PATH=str(tmp_path / "n.db")), tmp_path)
        try:
            kernel.text("%load_ext agentik_jupyter")
            assert kernel.execute("%%agent --wait\nHi.").ok
            assert len(buttons(kernel, "Rewind")) == 1
            assert not html_updates(kernel, ELSEWHERE_NOTE)
            kernel.text("%agent new")
            shows(kernel, ELSEWHERE_NOTE, "the note of a turn in another session")
        finally:
            kernel.close()
