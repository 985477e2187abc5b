"""A finished turn's Rewind when our lab extension draws it: a plain output, never a widget, and the
control comm's `rewind_state` / `rewind_preview` / `rewind` behind it. A real kernel that is told,
as the extension tells it, that the frontend draws the Rewind output; the fake LLM server over HTTP.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.widgets.rewind_output import REWIND_MIME
from agentik_jupyter.widgets.transcript import TRANSCRIPT_MIME
from agentik_jupyter.widgets.turn_rewind import ELSEWHERE_NOTE, REWOUND_NOTE
from tests.kernel.test_control_fix import answer, open_control
from tests.kernel_support import RawKernel, kernel_env, wait_for

pytestmark = pytest.mark.timeout(180)

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def answer_hello(kernel: RawKernel, features: dict[str, int]) -> None:
    """What the extension does on the kernel's hello: open its reply comm with its features."""
    msg = kernel.kc.session.msg(
        "comm_open", {"comm_id": uuid.uuid4().hex, "target_name": "agentik.frontend.reply", "data": features}
    )
    kernel.kc.shell_channel.send(msg)


def final_outputs(kernel: RawKernel, parent: str) -> list[dict[str, Any]]:
    """What the frontend keeps of a cell: its displays, each as its display id's last update left it."""
    shown: list[dict[str, Any]] = []
    by_id: dict[str, dict[str, Any]] = {}
    for m in kernel.iopub:
        kind, content = m["msg_type"], m["content"]
        display_id = (content.get("transient") or {}).get("display_id")
        if kind == "display_data" and m["parent_header"].get("msg_id") == parent:
            entry = {"data": content["data"]}
            shown.append(entry)
            if display_id:
                by_id[display_id] = entry
        elif kind == "update_display_data" and display_id in by_id:
            by_id[display_id]["data"] = content["data"]
    return [e["data"] for e in shown]


def ask(kernel: RawKernel, data: dict[str, Any]) -> dict[str, Any]:
    comm_id, _ = open_control(kernel, data)
    return answer(kernel, comm_id)


@pytest.mark.parametrize("wait", [True, False], ids=["wait", "background"])
def test_a_turn_ends_with_a_rewind_output_and_no_widget(tmp_path: Path, wait: bool) -> None:
    s = "__import__('agentik_jupyter').current_session()"
    with FakeLLMServer() as llm:
        env = kernel_env(llm, AGENTIK_APPROVE="auto", AGENTIK_DB_PATH=str(tmp_path / "r.db"))
        kernel = RawKernel(env, tmp_path)
        try:
            kernel.text("%load_ext agentik_jupyter")
            answer_hello(kernel, {"live_text": 1, "rewind": 1})
            kernel.wait_until("__import__('agentik_jupyter.notebook.page').notebook.page.rewind_output()")
            kernel.text("x = 1")
            magic = "%%agent --wait" if wait else "%%agent"
            turns = []
            for n in (1, 2):
                llm.push(
                    Reply.tool_calls([{"name": "run_code", "args": {"code": f"x = {n + 1}"}}]), Reply.text("Done.")
                )
                ex = kernel.execute(f"{magic}\nTurn {n}.")
                assert ex.ok
                kernel.wait_until(f"not {s}.busy", timeout=30)
                kernel.drain(0.2)
                outputs = final_outputs(kernel, ex.messages[0]["parent_header"]["msg_id"])
                assert not [o for o in outputs if WIDGET_VIEW in o], outputs  # a saved cell holds no widget
                (rewind,) = [o for o in outputs if o.get(REWIND_MIME)]
                assert outputs[-1] is rewind and rewind["text/plain"] == ""  # at the end of the turn
                assert [o for o in outputs if TRANSCRIPT_MIME in o]
                assert set(rewind[REWIND_MIME]) == {"session", "turn"}
                turns.append(rewind[REWIND_MIME])
            assert not [
                m for m in kernel.comm_opens("ButtonModel") if m["content"]["data"]["state"]["description"] == "Rewind"
            ]
            assert kernel.value("x") == 3

            first, second = ({"session": t["session"], "turn": t["turn"]} for t in turns)
            assert ask(kernel, {"action": "rewind_state", **first}) == {
                "ok": True,
                "state": "ready",
                "note": None,
                "number": 1,
            }
            preview = ask(kernel, {"action": "rewind_preview", **second})
            assert preview["ok"] and preview["lines"][0].startswith("Rewind would take back turn 2")
            assert "names restored: x" in preview["lines"]
            assert kernel.value("x") == 3  # asked, not done
            done = ask(kernel, {"action": "rewind", **second})
            assert done["ok"] and done["lines"][0].startswith("Rewound turn 2") and done["note"] == REWOUND_NOTE
            assert kernel.value("x") == 2
            assert ask(kernel, {"action": "rewind_state", **second})["state"] == "rewound"
            assert ask(kernel, {"action": "rewind_state", **first})["state"] == "ready"
            # every Rewind of a notebook asks in one request (one read of the turns)
            many = ask(kernel, {"action": "rewind_states", "turns": [first, second, {"session": "x", "turn": "y"}]})
            assert [one["state"] for one in many["states"]] == ["ready", "rewound", "elsewhere"]
            refused = ask(kernel, {"action": "rewind_states", "turns": "all"})
            assert refused["ok"] is False
            again = ask(kernel, {"action": "rewind", **second})  # no preview shown for it now
            assert again == {"ok": False, "error": "Nothing rewound: ask for the preview again."}
            other = ask(kernel, {"action": "rewind_state", "session": "elsewhere", "turn": first["turn"]})
            assert other["state"] == "elsewhere"
            asked = ask(kernel, {"action": "rewind_preview", "session": "elsewhere", "turn": first["turn"]})
            assert asked["state"] == "elsewhere" and asked["note"] == ELSEWHERE_NOTE and "lines" not in asked
            bad = ask(kernel, {"action": "rewind_preview", "session": "x\ny", "turn": first["turn"]})
            assert bad == {"ok": False, "error": "That is not a turn of a session."}
        finally:
            kernel.close()


def test_a_temporary_turn_leaves_no_widget_and_no_rewind(tmp_path: Path) -> None:
    """A `--temp` turn can't be rewound: its `--wait` view's place ends holding nothing."""
    with FakeLLMServer() as llm:
        llm.push(Reply.text("Hello."))
        kernel = RawKernel(kernel_env(llm, AGENTIK_DB_PATH=str(tmp_path / "t.db")), tmp_path)
        try:
            kernel.text("%load_ext agentik_jupyter")
            answer_hello(kernel, {"rewind": 1})
            kernel.wait_until("__import__('agentik_jupyter.notebook.page').notebook.page.rewind_output()")
            ex = kernel.execute("%%agent --wait --temp\nHi.")
            assert ex.ok
            kernel.drain(0.2)
            outputs = final_outputs(kernel, ex.messages[0]["parent_header"]["msg_id"])
            assert not [o for o in outputs if WIDGET_VIEW in o], outputs
            assert [o for o in outputs if TRANSCRIPT_MIME in o] and not [o for o in outputs if o.get(REWIND_MIME)]
        finally:
            kernel.close()


def test_a_new_kernel_says_a_saved_turn_is_elsewhere_and_creates_no_agent(tmp_path: Path) -> None:
    with FakeLLMServer() as llm:
        kernel = RawKernel(kernel_env(llm, AGENTIK_DB_PATH=str(tmp_path / "n.db")), tmp_path)
        try:
            kernel.text("%load_ext agentik_jupyter")
            got = ask(kernel, {"action": "rewind_state", "session": "abc", "turn": "def"})
            assert got["ok"] and got["state"] == "elsewhere"
            assert kernel.value(
                "__import__('agentik_jupyter.kernel.agent').kernel.agent.peek_agent(get_ipython()) is None"
            )
        finally:
            kernel.close()


def test_without_the_extension_the_rewind_stays_a_widget(tmp_path: Path) -> None:
    with FakeLLMServer() as llm:
        llm.push(Reply.text("Hello."))
        kernel = RawKernel(kernel_env(llm, AGENTIK_DB_PATH=str(tmp_path / "w.db")), tmp_path)
        try:
            kernel.text("%load_ext agentik_jupyter")
            ex = kernel.execute("%%agent --wait\nHi.")
            assert ex.ok
            wait_for(lambda: kernel.drain(0.05) or kernel.comm_opens("ButtonModel"), 15, "the widget Rewind")
            assert not [o for o in ex.outputs if REWIND_MIME in o.get("data", {})]
        finally:
            kernel.close()
