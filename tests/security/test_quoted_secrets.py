"""A secret is masked whatever the quoting: repr() and JSON escape a quote or a backslash in it.

A key holding `'` and `\\` is written `Ab\\'cd…\\\\ij…` by repr() of a text that also holds a `"`
(an f-string of a dict, a list of strings, an error message), `…\\\\ij…` by json.dumps, and twice
escaped when one wraps the other. Each of those, whole or cut to a head and a tail, must be masked
by the one scrubber at the tool boundary, in a tool's result, an inspected variable and an error,
without scrubbing the value before repr(). Here the key's plain runs are shorter than a piece, so
only its escaped forms and their pieces can catch it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentik_jupyter.security.scrub import scrub
from agentik_jupyter.security.stream import StreamScrubber
from agentik_jupyter.testing import FakeLLMServer, Reply
from agentik_jupyter.tools.inspection import inspect_value
from agentik_jupyter.tools.namespace import short_repr
from tests.kernel_support import NotebookKernel, file_bytes, kernel_env

pytestmark = pytest.mark.timeout(180)

KEY = "Ab'cdEfgh\\ijKlmn'opQrst\\uvWxyz0'12345\\67Tail"
"""A service key with quotes and backslashes; no plain run of it is 12 characters long."""
ENV = {"SERVICE_API_KEY": KEY}
MASK = "[hidden: SERVICE_API_KEY]"
NOTE = 'a "quoted" word'
"""A `"` in the text around the key: repr() then quotes with `'` and escapes the key's `'`."""
PIECE = 12


def escaped_forms() -> dict[str, str]:
    """The key as repr() and JSON write it, computed here without the product's scrubber."""
    single = repr('"' + KEY)[2:-1]  # a `"` in the text: repr quotes with `'` and escapes the key's
    return {
        "raw": KEY,
        "repr": repr(KEY)[1:-1],
        "repr escaping '": single,
        "json": json.dumps(KEY)[1:-1],
        "json of repr": json.dumps(single)[1:-1],
        "repr of json": repr('"' + json.dumps(KEY))[3:-2],
    }


def assert_no_piece(where: str, text: str) -> None:
    for name, form in escaped_forms().items():
        for i in range(len(form) - PIECE + 1):
            piece = form[i : i + PIECE]
            at = text.find(piece)
            assert at < 0, f"a piece of the key ({name}: {piece!r}) is in {where}: …{text[max(0, at - 60) : at + 80]}…"


def test_the_key_s_forms_differ_and_have_no_plain_piece() -> None:
    forms = escaped_forms()
    assert forms["repr escaping '"] != forms["repr"] and forms["json of repr"] != forms["repr of json"]
    assert "\\'" in forms["repr escaping '"] and "\\\\" in forms["json"]
    assert max(len(run) for run in KEY.replace("'", "\\").split("\\")) < PIECE


@pytest.mark.parametrize(
    "shown",
    [
        pytest.param(lambda: repr(KEY), id="repr"),
        pytest.param(lambda: repr(['say "hi"', KEY]), id="repr-of-a-list"),
        pytest.param(lambda: f"{ {'key': KEY, 'note': NOTE} }", id="f-string-of-a-dict"),
        pytest.param(lambda: json.dumps({"key": KEY}), id="json"),
        pytest.param(lambda: json.dumps({"config": repr({"key": KEY, "q": '"'})}), id="json-of-a-repr"),
        pytest.param(lambda: repr('"' + json.dumps({"key": KEY})), id="repr-of-json"),
        pytest.param(lambda: str(ValueError(f'bad key {KEY!r} in "settings"')), id="error"),
        pytest.param(lambda: repr(RuntimeError('"', KEY)), id="repr-of-an-error"),
    ],
)
def test_a_quoted_key_is_masked_whole(shown, monkeypatch: pytest.MonkeyPatch) -> None:
    text = shown()
    masked = scrub(text, ENV)
    assert MASK in masked
    assert_no_piece("the scrubbed text", masked)


def test_a_quoted_key_cut_to_a_head_and_a_tail_is_masked() -> None:
    for form in escaped_forms().values():
        text = f"head {form[:20]}… [cut] …{form[-20:]} end; {form[10:30]}"
        masked = scrub(text, ENV)
        assert masked.startswith("head ") and masked.endswith(MASK) and masked.count(MASK) == 3, masked
        assert_no_piece("the scrubbed cut", masked)


@pytest.mark.parametrize("size", [1, 2, 5, 13])
def test_a_streamed_answer_quoting_the_key_ends_equal_to_the_saved_masked_answer(size: int) -> None:
    forms = escaped_forms()
    answer = (
        f"Your settings: {json.dumps({'key': KEY})}; as Python: {f'{ {KEY: NOTE} }'}; "
        f"cut: {forms['repr escaping ' + chr(39)][:22]}… and {forms['json of repr'][-25:]}. Done."
    )
    scrubber, shown = StreamScrubber(ENV), ""
    for start in range(0, len(answer), size):
        shown += scrubber.push(answer[start : start + size])
        assert_no_piece("the streamed text so far", shown)
    shown += scrubber.finish()
    assert shown == scrub(answer, ENV) and shown.count(MASK) == 4 and shown.endswith(". Done.")


def test_an_inspected_string_and_dict_holding_the_key_show_no_piece(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERVICE_API_KEY", KEY)
    long_text = 'config "a": ' + KEY + " " + "x" * 2_500 + KEY
    for name, value in (
        ("settings", f'config "a": {KEY} end'),
        ("long_text", long_text),
        ("holder", {"key": KEY, "nested": [KEY, '"' + KEY * 10]}),
    ):
        out = inspect_value(name, value)
        sent = scrub(out.text)  # what leaves the tool: the orchestrator scrubs every result
        assert MASK in sent and name in sent
        assert_no_piece(f"the inspection of {name}", sent)
    assert_no_piece("a short repr", scrub(short_repr(['"', KEY * 5], 120)))


SETUP = """
import json, os
from agentik_jupyter import tool
key = os.environ["SERVICE_API_KEY"]
holder = {"key": key, "note": 'a "quoted" word', "items": ['"' + key] * 3}
as_json = json.dumps({"key": key})
long_text = 'config "a": ' + key + " " + "x" * 2500 + key

@tool(policy="auto")
def connection_settings() -> str:
    \"\"\"The connection settings.\"\"\"
    note = 'a "quoted" word'
    return f"{ {'key': os.environ['SERVICE_API_KEY'], 'note': note} }"

@tool(policy="auto")
def connect() -> str:
    \"\"\"Connects.\"\"\"
    key = os.environ["SERVICE_API_KEY"]
    raise ValueError(f'refused key {key!r} in "settings" ' + json.dumps(key))
del key
"""


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[NotebookKernel, FakeLLMServer, Path]]:
    tmp = tmp_path_factory.mktemp("quoted")
    db = tmp / "quoted.agentik.db"
    with FakeLLMServer() as server:
        kernel = NotebookKernel(
            kernel_env(server, AGENTIK_DB_PATH=str(db), AGENTIK_APPROVE="auto", SERVICE_API_KEY=KEY), tmp
        )
        try:
            kernel.run("%load_ext agentik_jupyter")
            kernel.run(SETUP)
            calls = [{"name": "inspect_variable", "args": {"name": n}} for n in ("holder", "as_json", "long_text")]
            calls += [{"name": "connection_settings", "args": {}}, {"name": "connect", "args": {}}]
            server.push(Reply.tool_calls(calls), Reply.text("Looked at them."))
            kernel.run("%%agent --wait\nWhat are my settings?")
            yield kernel, server, db
        finally:
            kernel.close()


def test_the_model_was_told_the_key_is_hidden(session: tuple[NotebookKernel, FakeLLMServer, Path]) -> None:
    _, server, _ = session
    results = [m for m in server.requests[-1].messages if m.get("role") == "tool"]
    assert len(results) == 5, results
    text = json.dumps(results)
    assert "holder: dict" in text and "refused key" in text and "quoted" in text
    assert text.count(MASK) >= 6


def test_no_request_output_or_row_holds_a_piece_of_the_key(session: tuple[NotebookKernel, FakeLLMServer, Path]) -> None:
    kernel, server, db = session
    for request in server.requests:
        assert_no_piece("a request the model received", json.dumps(request.body))
    assert_no_piece("the agent cell's outputs", json.dumps(kernel.nb.cells[-1].outputs))
    assert_no_piece("the saved notebook", kernel.saved())
    data = file_bytes(db).decode("utf-8", "replace")
    assert MASK in data
    assert_no_piece("the sessions file", data)
