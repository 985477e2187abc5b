"""The offline demo model walks through every feature the quickstart names, as a new user meets it.

The responder is driven with requests in both wire formats (every code argument it can emit
must compile, whatever the column is called), then the whole walk runs in a real kernel with
the demo started inside it, as the quickstart does, and the tests read what the user sees:
the transcripts, the approval card, the status footer, the fix proposal.
"""

from __future__ import annotations

import base64
import html
import io
import json
import re
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest
from PIL import Image

from agentik_jupyter.notebook.cells import PROPOSAL_LINE
from agentik_jupyter.testing.demo import MENU, demo_responder
from agentik_jupyter.testing.demo_code import valid
from agentik_jupyter.testing.replies import RecordedRequest, Reply
from tests.image_support import png_base64
from tests.kernel_support import Execution, RawKernel, kernel_env, transcript

SYSTEM = "You help in a notebook.\nVariables:\n- sales: pandas.DataFrame (100, 3)\n- rng: numpy.Generator\n"
BUILTIN = (
    "list_variables inspect_variable describe_dataframe get_cell_history run_code insert_cell "
    "read_notebook edit_cell delete_cell run_cells"
).split()
COLUMNS = ["units", "it's", 'say "hi"', "a'b\"c", "back\\slash", "two words", "'''", '"""', "ünïcode", "x)]}"]
CODE_ARGS = {"run_code": "code", "insert_cell": "source", "edit_cell": "new_source"}


def openai_request(question: str, *extra: dict[str, Any]) -> RecordedRequest:
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}, *extra]
    tools = [{"type": "function", "function": {"name": n, "parameters": {}}} for n in BUILTIN]
    return RecordedRequest("POST", "/v1/chat/completions", {}, {"messages": messages, "tools": tools}, "openai")


def anthropic_request(question: str) -> RecordedRequest:
    body = {
        "system": SYSTEM,
        "messages": [{"role": "user", "content": [{"type": "text", "text": question}]}],
        "tools": [{"name": n, "input_schema": {}} for n in BUILTIN],
    }
    return RecordedRequest("POST", "/v1/messages", {}, body, "anthropic")


def code_of(reply: Reply) -> list[str]:
    return [str(c.args[CODE_ARGS[c.name]]) for c in reply.calls if c.name in CODE_ARGS]


@pytest.mark.parametrize("column", COLUMNS)
def test_every_code_the_demo_writes_compiles_whatever_the_column_is_called(column: str) -> None:
    quoted = f"`{column}`"
    questions = [
        f"Plot the {quoted} column of sales.",
        f"Plot column {quoted} of sales as a histogram.",
        f"How many values are missing in the {quoted} column of sales?",
        f"What is the mean of the {quoted} column of sales?",
        f"Insert a cell that sums the {quoted} column by region.",
        f"Insert a new cell that describes the {quoted} column of sales.",
        "Plot sales.",
        "Plot the units column of sales.",
        "Insert a cell that sums the units column by region.",
    ]
    emitted = []
    for question in questions:
        for request in (openai_request(question), anthropic_request(question)):
            emitted += code_of(demo_responder(request))
    assert len(emitted) == 2 * len(questions), emitted
    for code in emitted:
        assert valid(code), code
        compile(code, "<demo>", "exec")  # plain Python too: no magics in what the demo writes
    plot = code_of(demo_responder(openai_request(f"Plot the {quoted} column of sales.")))[0]
    assert f"sales[{column!r}]" in plot


def test_a_plot_answer_comes_from_the_users_question_not_the_image_follow_up() -> None:
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "run_code", "arguments": json.dumps({"code": "x"})}}
        ],
    }
    result = {"role": "tool", "tool_call_id": "c1", "content": "Figure 1: a histogram titled sales['units']"}
    images = {
        "role": "user",
        "content": [
            {"type": "text", "text": "The 1 image(s) the tool results above produced:"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        ],
    }
    reply = demo_responder(openai_request("Plot the units column of sales.", call, result, images))
    assert not reply.calls
    assert "You asked" not in reply.content and "image(s)" not in reply.content
    assert "figure" in reply.content.lower()


def jpeg_base64(width: int, height: int) -> str:
    picture = Image.new("RGB", (width, height), "blue")
    out = io.BytesIO()
    picture.save(out, format="JPEG")
    return base64.b64encode(out.getvalue()).decode("ascii")


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_the_demo_says_it_received_the_questions_images_and_their_sizes(api: str) -> None:
    """The demo sees no picture, but says how many arrived and what it can tell (kind, pixels, bytes),
    alone or before what it answers to the question's words."""
    pictures = [("image/png", png_base64(300, 200)), ("image/jpeg", jpeg_base64(64, 48))]
    for question, expect in (("What is this?", "Which variables do I have?"), ("Describe sales.", "describe")):
        if api == "openai":
            parts = [{"type": "image_url", "image_url": {"url": f"data:{m};base64,{d}"}} for m, d in pictures]
            request = openai_request(question)
            request.body["messages"][-1]["content"] = [{"type": "text", "text": question}, *parts]
        else:
            blocks = [{"type": "image", "source": {"type": "base64", "media_type": m, "data": d}} for m, d in pictures]
            request = anthropic_request(question)
            request.body["messages"][-1]["content"] += blocks
        reply = demo_responder(request)
        assert reply.content.startswith("I received 2 image(s) with your question: a 300×200 PNG of "), reply.content
        assert "a 64×48 JPEG of " in reply.content and expect in reply.content + str(reply.calls), reply
    if api == "openai":  # an image sent without a word is a question too
        alone = openai_request("")
        alone.body["messages"][-1]["content"] = [parts[0]]
        assert demo_responder(alone).content.startswith("I received 1 image(s)")


def test_a_failed_tool_is_called_a_failure_and_a_denied_one_a_choice() -> None:
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "run_code", "arguments": "{}"}}],
    }
    failed = demo_responder(
        openai_request(
            "Plot the nope column of sales.",
            call,
            {"role": "tool", "tool_call_id": "c1", "content": "Error: the code raised KeyError: 'nope'"},
        )
    ).content
    denied = demo_responder(
        openai_request(
            "Plot the units column of sales.",
            call,
            {"role": "tool", "tool_call_id": "c1", "content": "Error: The user did not approve running 'run_code'."},
        )
    ).content
    assert "failed" in failed and "KeyError: 'nope'" in failed and "did not run" not in failed
    assert "did not approve" in denied and "failed" not in denied


def test_hello_lists_what_the_demo_understands_without_echoing() -> None:
    reply = demo_responder(openai_request("Hello! What can you do?"))
    assert reply.content == MENU and "You asked" not in reply.content
    for feature in (
        "list_variables",
        "describe_dataframe",
        "inspect_variable",
        "run_code",
        "insert_cell",
        "edit_cell",
        "read_notebook",
        "get_cell_history",
        "@sales",
        "%agent fix",
        "Stop",
        "export",
    ):
        assert feature in MENU, feature


# ---- the walk in a real kernel ----

NOTEBOOK_CELLS = [
    ("c-data", "import pandas as pd\nsales = pd.DataFrame({'region': ['north', 'south'] * 5, 'units': range(10)})"),
    ("c-fail", "average = sale['units'].mean()"),
]


def _button(kernel: RawKernel, description: str, seen: int, timeout: float = 20.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        kernel.drain(0.05)
        found = [
            m["content"]["comm_id"]
            for m in kernel.comm_opens("ButtonModel")[seen:]
            if m["content"]["data"]["state"].get("description") == description
        ]
        if found:
            return found[-1]
    raise TimeoutError(f"no {description!r} button appeared")


def _in_cell(kernel: RawKernel, code: str, cell_id: str) -> Execution:
    """Execute as JupyterLab does: the request names the cell it runs."""
    content = {
        "code": code,
        "silent": False,
        "store_history": True,
        "user_expressions": {},
        "allow_stdin": False,
        "stop_on_error": True,
    }
    msg = kernel.kc.session.msg("execute_request", content, metadata={"cellId": cell_id})
    kernel.kc.shell_channel.send(msg)
    msg_id = msg["header"]["msg_id"]
    kernel._open[msg_id] = Execution(msg_id)
    return kernel.collect(msg_id)


def _entries(ex: Execution) -> list[dict[str, Any]]:
    return list(transcript(ex.outputs)["application/vnd.agentik.transcript+json"]["entries"])


def _tools(ex: Execution) -> list[dict[str, Any]]:
    return [e for e in _entries(ex) if e["role"] == "tool"]


def _answer(ex: Execution) -> str:
    """The turn's answers as a reader sees them: an answer's JSON entry keeps only its start
    (`in_html`), the whole is the bundle's HTML (inline code shown with its backticks here)."""
    bundle = transcript(ex.outputs)
    markup = "".join(bundle.get("text/html") or "")
    texts = []
    for i, e in enumerate(_entries(ex)):
        if e["role"] == "assistant" and e.get("in_html"):
            part = markup.split(f'data-agentik-entry="{i}">', 1)[1].split('</div><div class="agentik-', 1)[0]
            texts.append(html.unescape(re.sub(r"<[^>]+>", "", re.sub(r"</?code>", "`", part))))
        elif e["role"] == "assistant":
            texts.append(e["content"])
    return "\n".join(texts)


@pytest.fixture(scope="module")
def walk(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("walk")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src, id=cid) for cid, src in NOTEBOOK_CELLS]
    nbformat.write(nb, tmp / "walk.ipynb")
    env = kernel_env(
        None, AGENTIK_WAIT="1", AGENTIK_DB_PATH=str(tmp / "walk.agentik.db"), JPY_SESSION_NAME=str(tmp / "walk.ipynb")
    )
    kernel = RawKernel(env, tmp)
    try:
        kernel.text("from agentik_jupyter.testing import demo\ndemo.start()\n%load_ext agentik_jupyter")
        assert _in_cell(kernel, NOTEBOOK_CELLS[0][1], "c-data").ok
        yield kernel
    finally:
        kernel.close()


pytestmark = pytest.mark.timeout(240)


def test_walk_hello_variables_describe_inspect(walk: RawKernel) -> None:
    hello = walk.execute("%%agent --wait\nHello! What can you do?")
    assert "You asked" not in _answer(hello) and "edit_cell" in _answer(hello)
    for question, tool in [
        ("Which variables do I have?", "list_variables"),
        ("Describe the sales DataFrame for me.", "describe_dataframe"),
        ("Inspect the variable sales.", "inspect_variable"),
    ]:
        ex = walk.execute(f"%%agent --wait\n{question}")
        (card,) = _tools(ex)
        assert card["name"] == tool and card["error"] is None and "sales" in card["result"], card
        assert "✓ Done" in transcript(ex.outputs)["text/plain"]


def test_walk_plot_asks_first_then_runs_valid_code_and_answers_without_a_leak(walk: RawKernel) -> None:
    seen = len(walk.comm_opens("ButtonModel"))
    pending = walk.submit("%%agent --wait\nPlot the units column of sales.")
    walk.click(_button(walk, "Approve", seen))
    ex = walk.collect(pending, timeout=60)
    (card,) = _tools(ex)
    assert card["name"] == "run_code" and card["error"] is None, card
    assert valid(card["args"]["code"]) and "sales['units']" in card["args"]["code"]
    assert "image/png" in (card["display"] or {}), "the plot shows in the card"
    answer = _answer(ex)
    assert "You asked" not in answer and "image(s)" not in answer and "figure" in answer.lower()
    assert "✓ Done" in transcript(ex.outputs)["text/plain"]


def test_walk_a_failing_tool_is_not_reported_done(walk: RawKernel) -> None:
    walk.text("%agent policy run_code auto")
    try:
        ex = walk.execute("%%agent --wait\nPlot the `no such` column of sales.")
    finally:
        walk.text("%agent policy run_code ask")
    (card,) = _tools(ex)
    assert card["error"] is not None and "no such" in card["error"]
    plain = transcript(ex.outputs)["text/plain"]
    assert "✓ Done" not in plain and "⚠ Finished with 1 failed tool call" in plain
    assert "failed" in _answer(ex) and "did not run" not in _answer(ex)
    html = transcript(ex.outputs)["text/html"]
    assert "✓ Done" not in html and "failed tool call" in html


def test_walk_compute_insert_and_mention(walk: RawKernel) -> None:
    walk.text("%agent policy run_code auto")
    try:
        ex = walk.execute("%%agent --wait\nHow many values are missing in sales?")
    finally:
        walk.text("%agent policy run_code ask")
    (card,) = _tools(ex)
    assert card["name"] == "run_code" and card["error"] is None and "units" in card["result"]
    ex = walk.execute("%%agent --wait\nInsert a cell that sums the units column by region.")
    (card,) = _tools(ex)
    assert card["name"] == "insert_cell" and card["args"]["source"] == "sales.groupby('region')['units'].sum()"
    proposed = [p for p in ex.reply.get("payload", []) if p.get("source") == "set_next_input"]
    assert proposed and "groupby('region')" in proposed[0]["text"], "the new cell reaches the frontend"
    ex = walk.execute("%%agent --wait\nHow are the units in @sales spread?")
    assert not _tools(ex), "the mention attached the data: no tool call needed"
    entries = _entries(ex)
    assert entries[0] == {"role": "user", "content": "How are the units in @sales spread?"}
    assert "units" in _answer(ex) and "Attached by" not in _answer(ex)


def test_walk_edit_a_cell_reads_first_and_proposes_a_diff(walk: RawKernel) -> None:
    ex = walk.execute("%%agent --wait\nAdd a comment to the cell that makes sales.")
    tools = _tools(ex)
    assert [t["name"] for t in tools] == ["read_notebook", "read_notebook", "edit_cell"], tools
    assert tools[1]["args"] == {"cell_id": "c-data"} and tools[2]["args"]["cell_id"] == "c-data"
    new = tools[2]["args"]["new_source"]
    assert valid(new) and new.endswith(NOTEBOOK_CELLS[0][1]) and new.startswith("# Defines sales")
    assert "+# Defines sales" in tools[2]["result"], "the diff is in the card"
    assert "diff" in _answer(ex)


def test_walk_delete_reads_first_and_names_one_cell_or_none(walk: RawKernel) -> None:
    """The demo deletes the cell the question names (the last one it inserted, or the one cell
    holding a quoted text), never a guess; without the extension the deletion waits in the card."""
    path = Path(walk.value("__import__('os').environ['JPY_SESSION_NAME']"))
    saved = path.read_text(encoding="utf-8")
    nb = nbformat.read(path, as_version=4)
    nb.cells += [
        nbformat.v4.new_code_cell(f"{PROPOSAL_LINE}\nold_total = 1", id="c-inserted"),
        nbformat.v4.new_code_cell("kept = 2  # soakmine7", id="c-mine"),
    ]
    nbformat.write(nb, path)
    try:
        ex = walk.execute("%%agent --wait\nRemove the cell you inserted.")
        tools = _tools(ex)
        assert [t["name"] for t in tools] == ["read_notebook", "delete_cell"], tools
        assert tools[1]["args"] == {"cell_id": "c-inserted"}
        assert tools[1]["result"].startswith("Not applied") and "-old_total = 1" in tools[1]["result"]
        assert "delete the cell by hand" in _answer(ex)
        mine = _tools(walk.execute("%%agent --wait\nDelete the cell that holds soakmine7."))
        assert mine[-1]["name"] == "delete_cell" and mine[-1]["args"] == {"cell_id": "c-mine"}, mine
        ex = walk.execute("%%agent --wait\nDelete the cell that holds `units`.")
        assert [t["name"] for t in _tools(ex)] == ["read_notebook"], "two cells hold it: no deletion"
        assert "I deleted nothing: 2 cells hold `units`" in _answer(ex)
        assert nbformat.read(path, as_version=4).cells[-1].id == "c-mine"  # the file is untouched
    finally:
        path.write_text(saved, encoding="utf-8")


@pytest.mark.parametrize(
    ("result", "said"),
    [
        ("The user accepted: cell c-1 was deleted.", "the cell is deleted"),
        ("The user rejected the edit: cell c-1 is unchanged. Ask what they want instead.", "the cell stays"),
    ],
)
def test_the_demo_says_what_became_of_its_deletion(result: str, said: str) -> None:
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "d1", "type": "function", "function": {"name": "delete_cell", "arguments": '{"cell_id": "c-1"}'}}
        ],
    }
    reply = demo_responder(
        openai_request(
            "Delete the cell that holds x_1.", call, {"role": "tool", "tool_call_id": "d1", "content": result}
        )
    )
    assert not reply.calls and said in reply.content, reply


def test_walk_fix_proposes_the_corrected_cell_and_the_bubble_is_one_line(walk: RawKernel) -> None:
    failed = _in_cell(walk, NOTEBOOK_CELLS[1][1], "c-fail")
    assert not failed.ok
    ex = walk.execute("%agent fix", timeout=60)
    entries = _entries(ex)
    question = entries[0]["content"]
    assert question.startswith("Fix the failed cell [") and "NameError: name 'sale' is not defined" in question
    assert "\n" not in question and "ipykernel" not in question and "Traceback" not in question
    tools = _tools(ex)
    assert [t["name"] for t in tools] == ["read_notebook", "edit_cell"], tools
    edit = tools[1]["args"]
    assert edit == {"cell_id": "c-fail", "new_source": "average = sales['units'].mean()"}
    assert "typo for `sales`" in _answer(ex)
    walk.text(edit["new_source"])  # the proposal runs
    assert walk.value("average") == 4.5
    state = walk.value(
        f"[m.content for m in {'__import__(' + repr('agentik_jupyter') + ').current_session()'}"
        ".chat_store.messages if m.role == 'user'][-1]"
    )
    assert state.startswith(question + "\n\nAttached by %agent fix") and "Traceback" in state, "the model got it all"


def test_walk_sessions_and_export_are_explained(walk: RawKernel) -> None:
    sessions = _answer(walk.execute("%%agent --wait\nHow do I see my sessions?"))
    export = _answer(walk.execute("%%agent --wait\nHow do I export what you did?"))
    assert "%agent sessions" in sessions and "%agent resume" in sessions
    assert "%agent export" in export


def test_a_resumed_fix_turn_shows_the_users_line_not_the_attached_details() -> None:
    from agentik_jupyter.notebook.fix import HEADER
    from agentik_jupyter.types import ChatMessage
    from agentik_jupyter.widgets.panel import user_html
    from agentik_jupyter.widgets.transcript import transcript_bundle

    shown = "Fix the failed cell [3]: NameError: name 'x' is not defined"
    content = f'{shown}\n\n{HEADER}\n\nThe traceback:\n  File "/tmp/ipykernel_1/2.py", line 1'
    bubble = user_html(content)
    assert "Fix the failed cell [3]" in bubble and "ipykernel" not in bubble and "Attached" not in bubble
    bundle = transcript_bundle([ChatMessage(role="user", content=content), ChatMessage(role="assistant", content="ok")])
    assert bundle["text/plain"].splitlines()[0] == f"You: {shown}"
    assert "ipykernel" not in bundle["text/html"]


def test_a_question_that_names_a_users_tool_calls_it_with_the_word_beside_its_parameter() -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "region_share",
                "parameters": {"type": "object", "properties": {"region": {"type": "string"}}},
            },
        }
    ]
    body = {
        "messages": [{"role": "user", "content": "What share of the units did the north region sell?"}],
        "tools": tools,
    }
    reply = demo_responder(RecordedRequest("POST", "/v1/chat/completions", {}, body, "openai"))
    assert [(c.name, c.args) for c in reply.calls] == [("region_share", {"region": "north"})]


def test_the_status_line_of_a_turn_whose_tool_failed_does_not_say_done() -> None:
    from agentik_jupyter.core.store import AgentStore
    from agentik_jupyter.widgets.status import StatusLine

    line = StatusLine(AgentStore(), clock=lambda: 10.0)
    line.begin(at=8.0)
    line.end("complete", None, failed_tools=2)
    assert line.text() == "⚠ Finished with 2 failed tool calls · 2.0 s"
    line.end("complete", None)
    assert line.text().startswith("✓ Done")


def test_the_anthropic_form_of_a_finished_plot_is_read_the_same_way() -> None:
    body = {
        "system": SYSTEM,
        "tools": [{"name": n, "input_schema": {}} for n in BUILTIN],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Plot the units column of sales."}]},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "run_code", "input": {"code": "x"}}],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": [
                            {"type": "text", "text": "Figure 1: a histogram"},
                            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
                        ],
                    }
                ],
            },
        ],
    }
    reply = demo_responder(RecordedRequest("POST", "/v1/messages", {}, body, "anthropic"))
    assert not reply.calls and "figure" in reply.content.lower() and "You asked" not in reply.content


def _after(question: str, tool: str, result: str) -> str:
    """The demo's answer once `tool` returned `result` for `question`."""
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": tool, "arguments": "{}"}}],
    }
    return demo_responder(
        openai_request(question, call, {"role": "tool", "tool_call_id": "c1", "content": result})
    ).content


def test_a_described_frame_shows_as_many_first_rows_as_it_says() -> None:
    rows = [f"{i}  north     {i}  10.0{i}" for i in range(5)]
    profile = [f"  c{i}: int64; no nulls; min 1, max 9" for i in range(8)]
    result = "\n".join(["pandas DataFrame 'sales': 100 rows × 8 columns", "columns (8 of 8 profiled):", *profile,
                        "first 5 rows:", "  region  units  price", *rows])  # fmt: skip
    answer = _after("Describe the sales DataFrame for me.", "describe_dataframe", result)
    assert "first 5 rows:" in answer and all(row in answer for row in rows), answer


def test_the_notebook_summary_says_what_the_notebook_holds() -> None:
    result = (
        "Notebook study.ipynb: 4 cells (saved version on disk)\n\n"
        "[0] id=a1 markdown\n# Sales study\n\n"
        "[1] id=b2 code, In [1]\nimport pandas as pd\n  -> result: None\n\n"
        "[2] id=c3 markdown\n## Cleaning\nDrop the empty rows.\n\n"
        "[3] id=d4 code\n%%agent --wait\nDescribe sales.\n"
    )
    answer = _after("Read my notebook and tell me what it does.", "read_notebook", result)
    assert "`study.ipynb` has 4 cells: 2 code cells (1 of them run) and 2 Markdown cells." in answer, answer
    assert "1 of the code cells asks the agent" in answer and "- Sales study\n- Cleaning" in answer
    assert "id=" not in answer and "Here is what" not in answer
