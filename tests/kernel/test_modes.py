"""Modes in a real kernel with the fake model: where the mode is set and kept, what Ask offers, and
what Auto runs without a card (and what it still asks, saying why)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.tools.plan import PLAN_MIME
from agentik_jupyter.types import ToolCallRecord, ToolResultRecord
from agentik_jupyter.widgets.transcript import TRANSCRIPT_MIME
from tests.kernel_support import AGENT_EXPR, RawKernel, audit, kernel_env, sql, transcript

pytestmark = pytest.mark.timeout(240)
DEMO = Path(__file__).parents[1] / "mcp_servers" / "demo_server.py"
SESSION = f"{AGENT_EXPR}.session"
READERS = {"list_variables", "inspect_variable", "describe_dataframe", "get_cell_history", "read_notebook"}


def offered(request: Any) -> set[str]:
    return {t["function"]["name"] for t in request.body["tools"]}


def system_prompt(request: Any) -> str:
    return "".join(m["content"] for m in request.body["messages"] if m["role"] == "system")


def tool_results(request: Any) -> list[str]:
    return [m["content"] for m in request.messages if m.get("role") == "tool"]


def test_the_mode_is_set_per_session_and_per_turn_and_kept_after_a_restart(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with FakeLLMServer() as llm:
        llm.push(*(Reply.text(t) for t in ("Planned.", "Agent turn.", "On the side.", "After the restart.")))
        kernel = RawKernel(kernel_env(llm, AGENTIK_DB_PATH=str(db), AGENTIK_MODE="ask"), tmp_path)
        try:
            kernel.text("%load_ext agentik_jupyter")
            assert "Mode: Ask" in kernel.text("%agent mode")  # AGENTIK_MODE is the default
            wrong = kernel.text("%agent mode yolo")
            assert wrong.strip() == "agentik: unknown mode 'yolo': use ask, agent, auto or plan"
            assert "unknown mode 'fast': use ask, agent, auto or plan" in kernel.text("%%agent --mode fast\nHi.")
            assert "Mode: Plan" in kernel.text("%agent mode PLAN")
            ex = kernel.execute("%%agent --wait\nWhat would you do?")
            assert ex.ok and "Planned." in transcript(ex.outputs)["text/plain"]
            assert sql(db, "SELECT mode FROM conversation") == [("plan",)]  # saved with the session
            assert "propose_plan" in offered(llm.requests[0]) and "run_code" not in offered(llm.requests[0])
            ex = kernel.execute("%%agent --wait --mode agent\nJust do it.")  # this turn only
            assert ex.ok and "run_code" in offered(llm.requests[1]) and "propose_plan" not in offered(llm.requests[1])
            assert "Mode: Plan" in kernel.text("%agent mode")
            assert "mode:     Plan" in kernel.text("%agent status")
            assert "AGENTIK_MODE               ask" in kernel.text("%agent config")
            assert kernel.execute("%%agent --wait --temp\nA side question.").ok  # asks as its session
            assert "propose_plan" in offered(llm.requests[2]) and "run_code" not in offered(llm.requests[2])
        finally:
            kernel.close()
        kernel = RawKernel(kernel_env(llm, AGENTIK_DB_PATH=str(db)), tmp_path)  # a restart, no AGENTIK_MODE
        try:
            kernel.text("%load_ext agentik_jupyter")
            assert "Mode: Plan" in kernel.text("%agent mode")  # the resumed session's
            assert kernel.execute("%%agent --wait\nAnd now?").ok
            assert "propose_plan" in offered(llm.requests[3]) and "run_code" not in offered(llm.requests[3])
        finally:
            kernel.close()


def test_ask_offers_only_the_readers_and_refuses_the_rest(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"demo": {"command": sys.executable, "args": [str(DEMO)]}}}))
    with FakeLLMServer() as llm:
        llm.push(
            Reply.tool_calls([{"name": "run_code", "args": {"code": "ran = 1"}}]),
            Reply.text("Run `df.describe()` yourself."),
        )
        env = kernel_env(llm, AGENTIK_DB_PATH=str(tmp_path / "a.db"), AGENTIK_MCP_CONFIG=str(config))
        kernel = RawKernel(env, tmp_path)
        try:
            kernel.text("%load_ext agentik_jupyter")
            kernel.text("%agent mode ask")
            ex = kernel.execute("%%agent --wait\nDescribe the data.", timeout=90)
            assert ex.ok, ex.text
            assert "Run `df.describe()` yourself." in transcript(ex.outputs)["text/plain"]
            first = llm.requests[0]
            # the readers, and the one MCP tool that declares readOnlyHint; no run_code, no edits, no other MCP tool
            assert offered(first) == READERS | {"demo__add"}
            assert "show it in a ```python block for the user to run" in system_prompt(first)
            (refused,) = tool_results(llm.requests[1])
            assert "not available in Ask mode" in refused
            assert kernel.value("'ran' in globals()") is False  # nothing ran
            listing = kernel.text("%agent tools")
            assert "In Ask mode the model is offered these tools" in listing
            assert "demo__add" in listing and "run_code" not in listing and "demo__fail" not in listing
            assert not kernel.comm_opens("ButtonModel") or not any(
                m["content"]["data"]["state"].get("description") == "Approve" for m in kernel.comm_opens("ButtonModel")
            )
        finally:
            kernel.close()


def _texts(kernel: RawKernel) -> list[str]:
    """Every widget value the kernel sent (opened or updated): what the page shows."""
    found = []
    for m in kernel.iopub:
        if m["msg_type"] in {"comm_open", "comm_msg"}:
            state = (m["content"].get("data") or {}).get("state") or {}
            if isinstance(state.get("value"), str):
                found.append(state["value"])
    return found


def _deny_next(kernel: RawKernel, seen: int, timeout: float = 60.0) -> str:
    """Wait for the next Auto card (after `seen` of them), press its Deny; returns what it said."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        kernel.drain(0.05)
        cards = [t for t in _texts(kernel) if "Auto asks:" in t]
        denies = [
            m["content"]["comm_id"]
            for m in kernel.comm_opens("ButtonModel")
            if m["content"]["data"]["state"].get("description") == "Deny"
        ]
        if len(cards) > seen and len(denies) > seen:
            kernel.click(denies[seen])
            return cards[seen]
    raise TimeoutError(f"no Auto card number {seen + 1}")


def test_auto_runs_what_rewind_takes_back_and_asks_for_the_rest(tmp_path: Path) -> None:
    in_kernel = "df['x'] = 0\nnew_var = 41"
    asking = [
        ("df.to_csv('sales.csv')", "writes to sales.csv"),
        ("import subprocess\nsubprocess.run(['true'])", "runs shell commands or magics (subprocess.run(…))"),
        ("import socket\nsocket.create_connection(('127.0.0.1', 9))", "uses the network"),
        ("big[0] = 1.0", "changes `big` (4.0 MB) in place, over the rewind budget"),
    ]
    with FakeLLMServer() as llm:
        llm.push(
            Reply.tool_calls([{"name": "run_code", "args": {"code": in_kernel}}]),
            Reply.text("Changed them."),
            Reply.tool_calls([{"name": "run_code", "args": {"code": code}} for code, _ in asking]),
            Reply.text("Nothing else ran."),
        )
        env = kernel_env(llm, AGENTIK_DB_PATH=str(tmp_path / "u.db"), AGENTIK_REWIND_BUDGET="1")
        kernel = RawKernel(env, tmp_path)
        try:
            kernel.text("%load_ext agentik_jupyter")
            kernel.text(
                "import numpy as np, pandas as pd\ndf = pd.DataFrame({'x': [1, 2, 3]})\nbig = np.zeros(512 * 1024)"
            )
            kernel.text("%agent mode auto")
            ex = kernel.execute("%%agent --wait\nZero x and keep 41.", timeout=60)
            assert ex.ok and "Changed them." in transcript(ex.outputs)["text/plain"]
            question = transcript(ex.outputs)["application/vnd.agentik.transcript+json"]["entries"][0]
            assert question == {"role": "user", "content": "Zero x and keep 41.", "mode": "Auto"}  # as the header
            assert not any(
                m["content"]["data"]["state"].get("description") == "Approve" for m in kernel.comm_opens("ButtonModel")
            ), "in-kernel changes ran without a card"
            assert kernel.value("df['x'].tolist()") == [0, 0, 0] and kernel.value("new_var") == 41
            assert "Mode: Auto" in system_prompt(llm.requests[0])
            kernel.text("%agent rewind")
            assert kernel.value("df['x'].tolist()") == [1, 2, 3]
            assert kernel.value("'new_var' in globals()") is False

            assert kernel.execute("%%agent\nNow the rest.").ok
            said = [_deny_next(kernel, n) for n in range(len(asking))]
            kernel.wait_until(f"not {SESSION}.busy", timeout=60)
            for (code, reason), card in zip(asking, said, strict=True):
                assert "Auto asks:" in card and reason in card, (code, card)
            assert not (tmp_path / "sales.csv").exists() and kernel.value("float(big[0])") == 0.0
            assert all("did not approve" in r for r in tool_results(llm.requests[-1]))
            assert kernel.value(f"{AGENT_EXPR}.gate.auto_ran") == 1
        finally:
            kernel.close()


def _comm(kernel: RawKernel, model: str, description: str | None = None, timeout: float = 60.0) -> str:
    """The newest widget of `model` (a Button: with this description) the kernel opened."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        kernel.drain(0.05)
        found = [
            m["content"]["comm_id"]
            for m in kernel.comm_opens(model)
            if description is None or m["content"]["data"]["state"].get("description") == description
        ]
        if found:
            return found[-1]
    raise TimeoutError(f"no {model} {description or ''} appeared")


def _saved_transcripts(kernel: RawKernel) -> list[dict[str, Any]]:
    """The transcripts finished turns showed (in place of their live view): what the notebook saves."""
    found = []
    for m in kernel.iopub:
        if m["msg_type"] in {"display_data", "update_display_data"} and TRANSCRIPT_MIME in m["content"]["data"]:
            found.append(m["content"]["data"])
        if m["msg_type"] in {"comm_open", "comm_msg"}:
            state = (m["content"].get("data") or {}).get("state") or {}
            for out in state.get("outputs") or []:
                if TRANSCRIPT_MIME in (out.get("data") or {}):
                    found.append(out["data"])
    return found


def _set(kernel: RawKernel, comm_id: str, **state: Any) -> None:
    """What a frontend sends when the user types in a widget or ticks it."""
    kernel.send_comm_msg(comm_id, {"method": "update", "state": state, "buffer_paths": []})


def test_plan_waits_for_run_the_plan_then_runs_the_edited_steps_and_ticks_them(tmp_path: Path) -> None:
    plan = {"steps": ["Make total", "Double it"]}
    with FakeLLMServer() as llm:
        llm.push(
            Reply.tool_calls([{"name": "propose_plan", "args": plan}]),
            Reply.tool_calls(
                [
                    {"name": "run_code", "args": {"code": "total = 21"}},
                    {"name": "plan_step", "args": {"step": 1, "status": "done", "note": "21"}},
                ]
            ),
            Reply.tool_calls(
                [
                    {"name": "run_code", "args": {"code": "total = total * 2"}},
                    {"name": "plan_step", "args": {"step": 2, "status": "done"}},
                    {"name": "plan_step", "args": {"step": 3, "status": "failed", "note": "no printer"}},
                ]
            ),
            Reply.text("Total is 42."),
            Reply.tool_calls([{"name": "propose_plan", "args": {"steps": ["Delete everything"]}}]),
            Reply.text("Fine, what would you like instead?"),
        )
        kernel = RawKernel(kernel_env(llm, AGENTIK_DB_PATH=str(tmp_path / "p.db")), tmp_path)
        try:
            kernel.text("%load_ext agentik_jupyter")
            kernel.text("%agent mode plan")
            assert kernel.execute("%%agent\nMake a total and double it.").ok
            run = _comm(kernel, "ButtonModel", "Run the plan")
            card = next(t for t in _texts(kernel) if "agentik-plan-steps" in t and "Double it" in t)
            assert "nothing runs until you run it" in card
            first = llm.requests[0]
            assert "propose_plan" in offered(first) and "run_code" not in offered(first)
            assert offered(first) - {"propose_plan"} <= READERS
            assert "Mode: Plan" in system_prompt(first)
            assert any('You <span class="agentik-mode">· Plan</span>' in t for t in _texts(kernel))  # the header
            kernel.drain(0.5)  # (checking that nothing more happens while the card waits)
            assert len(llm.requests) == 1 and kernel.value("'total' in globals()") is False

            kernel.click(_comm(kernel, "ButtonModel", "Edit"))
            editor = _comm(kernel, "TextareaModel")
            _set(kernel, editor, value="Make total\nDouble it\nPrint it")
            _set(kernel, _comm(kernel, "CheckboxModel"), value=True)  # in Auto: no card for in-kernel code
            kernel.click(run)
            kernel.wait_until(f"not {SESSION}.busy", timeout=60)
            assert kernel.value("total") == 42
            after = llm.requests[1]
            assert {"run_code", "plan_step"} <= offered(after) and "propose_plan" not in offered(after)
            carried = tool_results(after)[-1]
            assert "ran the plan (as they edited it), in Auto mode" in carried
            assert "1. Make total\n2. Double it\n3. Print it" in carried
            assert "Mode: Auto" in system_prompt(after)
            ticked = [t for t in _texts(kernel) if "Print it" in t and "agentik-plan-steps" in t][-1]
            assert "✓ Make total" in ticked and "✓ Double it" in ticked and "✗ Print it" in ticked
            assert "no printer" in ticked
            assert any("Running the plan in Auto, as edited" in t for t in _texts(kernel))
            assert any('You <span class="agentik-mode">· Auto</span>' in t for t in _texts(kernel))  # as it ran
            assert not any(
                m["content"]["data"]["state"].get("description") == "Approve" for m in kernel.comm_opens("ButtonModel")
            )
            kernel.wait_until("True", timeout=5)  # (the transcript follows the turn's end on the loop)
            saved = _saved_transcripts(kernel)[-1]  # the notebook keeps the plan's card, ticked
            (card,) = [e for e in saved[TRANSCRIPT_MIME]["entries"] if e["role"] == "plan"]
            assert card["steps"] == ["Make total", "Double it", "Print it"]
            assert card["status"] == ["done", "done", "failed"] and card["notes"][2] == "no printer"
            assert (card["decision"], card["mode"], card["edited"]) == ("approved", "auto", True)
            assert "✓ Make total" in saved["text/html"] and "✗ Print it" in saved["text/html"]
            assert (
                "[plan] ▶ Running the plan in Auto, as edited: ✓ Make total · ✓ Double it · ✗ Print it"
                in (saved["text/plain"])
            )

            assert kernel.execute("%%agent\nClean up.").ok  # the session stays in Plan
            kernel.drain(0.2)
            rejects = [
                m["content"]["comm_id"]
                for m in kernel.comm_opens("ButtonModel")
                if m["content"]["data"]["state"].get("description") == "Reject"
            ]
            deadline = time.monotonic() + 60
            while len(rejects) < 2 and time.monotonic() < deadline:
                kernel.drain(0.05)
                rejects = [
                    m["content"]["comm_id"]
                    for m in kernel.comm_opens("ButtonModel")
                    if m["content"]["data"]["state"].get("description") == "Reject"
                ]
            kernel.click(rejects[-1])
            kernel.wait_until(f"not {SESSION}.busy", timeout=60)
            rejected = llm.requests[-1]
            assert "rejected the plan" in tool_results(rejected)[-1]
            assert "run_code" not in offered(rejected)
            assert any("Plan rejected: nothing ran" in t for t in _texts(kernel))
        finally:
            kernel.close()
        kernel = RawKernel(kernel_env(llm, AGENTIK_DB_PATH=str(tmp_path / "p.db")), tmp_path)  # a restart
        try:
            kernel.text("%load_ext agentik_jupyter")
            kernel.text("%agent resume")
            kernel.text("%agent panel")  # the resumed session's turns, drawn from the sessions file
            kernel.drain(0.5)
            cards = [t for t in _texts(kernel) if "agentik-plan-steps" in t]
            assert any(
                "✓ Make total" in t and "✓ Double it" in t and "✗ Print it" in t and "no printer" in t for t in cards
            ), cards
            assert any("Running the plan in Auto, as edited" in t for t in cards)
            assert any("Delete everything" in t and "Plan rejected: nothing ran" in t for t in cards)
        finally:
            kernel.close()
    plans = [
        e.record.call.args["steps"]
        for e in audit(tmp_path / "p.db")
        if isinstance(e.record, ToolCallRecord) and e.record.call.name == "propose_plan"
    ]
    assert plans == [["Make total", "Double it"], ["Delete everything"]]  # saved with the turns, as data
    decided = [
        e.record.result.display[PLAN_MIME]
        for e in audit(tmp_path / "p.db")
        if isinstance(e.record, ToolResultRecord) and e.record.result.name == "propose_plan"
    ]
    assert [(d["steps"], d["decision"], d["mode"], d["edited"]) for d in decided] == [
        (["Make total", "Double it", "Print it"], "approved", "auto", True),
        (["Delete everything"], "denied", None, False),
    ]


def test_the_panels_picker_sets_the_sessions_mode_and_follows_it(tmp_path: Path) -> None:
    db = tmp_path / "k.db"
    with FakeLLMServer() as llm:
        llm.push(Reply.text("Hello."))
        kernel = RawKernel(kernel_env(llm, AGENTIK_DB_PATH=str(db)), tmp_path)
        try:
            kernel.text("%load_ext agentik_jupyter")
            assert kernel.execute("%%agent --wait\nHello.").ok
            kernel.text("%agent panel")
            picker = _comm(kernel, "DropdownModel")
            opened = next(m for m in kernel.comm_opens("DropdownModel") if m["content"]["comm_id"] == picker)
            assert opened["content"]["data"]["state"]["_options_labels"] == ["Ask", "Agent", "Auto", "Plan"]
            assert any("Mode: Agent" in t for t in _texts(kernel))  # the status line
            _set(kernel, picker, index=2)  # the user picks Auto
            kernel.wait_until(f"{SESSION}.mode == 'auto'", timeout=30)
            assert "Mode: Auto" in kernel.text("%agent mode")
            assert sql(db, "SELECT mode FROM conversation") == [("auto",)]
            kernel.text("%agent mode ask")  # set elsewhere: the picker and the line follow
            kernel.drain(0.3)
            updates = [
                m["content"]["data"]["state"]
                for m in kernel.iopub
                if m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == picker
            ]
            assert updates and updates[-1].get("index") == 0
            assert [t for t in _texts(kernel) if "Mode: " in t][-1].endswith("Mode: Ask</span>")
        finally:
            kernel.close()
