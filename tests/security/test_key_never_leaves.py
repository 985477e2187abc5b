"""The key never leaves: a whole session in a real kernel, then every place a secret could land.

With a recognisable key, one kernel runs successful turns, tools that read the key from a
variable, from `os.environ`, from a cell that set it with `%env`, a tool whose display bundle
carries it, every provider fault the fake server injects (with the key echoed in the error
body, as some proxies do) and a provider that redirects. Then the test looks for the key, in
its raw, escaped, URL-encoded and base64 forms, in each cell's output, the saved notebook with
its widget state, every byte of the sessions file, the package's log lines and every request
body the model received (only the configured host's auth header may carry it).
"""

from __future__ import annotations

import base64
import json
import logging
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentik_jupyter.core.chat_route import handle
from agentik_jupyter.errors import ChatRouteError, ConfigurationError
from agentik_jupyter.providers.config import load_config
from agentik_jupyter.security.scrub import install_log_filter, scrub
from agentik_jupyter.testing import FakeLLMServer, Reply
from tests.kernel_support import NotebookKernel, file_bytes, kernel_env, output_text

pytestmark = pytest.mark.timeout(240)

KEY = "sk-agentik-LEAKCHECK-1234567890"
KEY2 = "sk-agentik-LEAKCHECK-second-0987654321"
"""Set with `%env` in the middle of the session: it must be masked from then on."""
MASK = "[hidden: LLM_API_KEY]"


def leaked_forms(key: str) -> dict[str, str]:
    """How a key can be written, computed here without the product's scrubber."""
    forms = {
        "raw": key,
        "without prefix": key[3:],
        "url-encoded": urllib.parse.quote(key, safe=""),
        "base64": base64.b64encode(key.encode()).decode().rstrip("="),
    }
    for prefix in ("user:", "u:", "ab:"):
        encoded = base64.b64encode(f"{prefix}{key}".encode()).decode()
        start = -(-8 * len(prefix) // 6)
        forms[f"base64 of {prefix}key"] = encoded[start : start + 20]
    return forms


def assert_clean(where: str, text: str) -> None:
    for key in (KEY, KEY2):
        for name, form in leaked_forms(key).items():
            assert form not in text, (
                f"the key ({name}) appears in {where}: …{text[max(0, text.find(form) - 80) : text.find(form) + 80]}…"
            )


def test_scrub_masks_every_form_and_reads_the_environment_at_call_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_API_KEY", KEY)
    monkeypatch.setenv("WAREHOUSE_PASSWORD", "hunter2-but-longer")
    monkeypatch.setenv("SHORT_TOKEN", "abc")
    monkeypatch.setenv("CACHE_KEY_DIR", "/tmp/cache-keys")
    text = " | ".join(
        [
            KEY,
            repr(KEY + "\n"),
            json.dumps({"k": KEY}),
            urllib.parse.quote(KEY, safe=""),
            base64.b64encode(f"user:{KEY}".encode()).decode(),
            "pw=hunter2-but-longer",
            "abc",
            "/tmp/cache-keys",
        ]
    )
    masked = scrub(text)
    assert_clean("scrubbed text", masked)
    assert masked.count(MASK) == 5 and "[hidden: WAREHOUSE_PASSWORD]" in masked
    assert "abc" in masked and "/tmp/cache-keys" in masked  # too short / a path: not secrets
    monkeypatch.setenv("LLM_API_KEY", KEY2)  # a new key set mid-session counts at once
    assert scrub(f"new {KEY2}") == f"new {MASK}"
    monkeypatch.setenv("WAREHOUSE_PASSWORD", "another-long-password")  # a changed value, same names
    assert scrub("another-long-password hunter2-but-longer") == "[hidden: WAREHOUSE_PASSWORD] hunter2-but-longer"
    monkeypatch.delenv("WAREHOUSE_PASSWORD")  # a secret gone from the environment is not masked
    assert scrub("another-long-password") == "another-long-password"


def test_a_key_with_a_line_break_is_rejected_without_showing_it() -> None:
    env = {"LLM_PROVIDER": "openai-compatible", "LLM_MODEL": "m", "LLM_API_KEY": "sk-abc\ndef-0123456789"}
    with pytest.raises(ConfigurationError) as caught:
        load_config(env)
    message = str(caught.value)
    assert "LLM_API_KEY" in message and "whitespace" in message
    assert "abc" not in message and "def-0123" not in message and "\\n" not in message


def test_log_records_of_the_package_are_masked(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("LLM_API_KEY", KEY)
    install_log_filter()
    log = logging.getLogger("agentik_jupyter.some.module")
    with caplog.at_level(logging.INFO, logger="agentik_jupyter"):
        log.info("calling with %s", KEY)
        try:
            raise RuntimeError(f"bad key {KEY}")
        except RuntimeError:
            log.exception("failed")
    text = caplog.text + "".join(r.getMessage() for r in caplog.records)
    assert MASK in text
    assert_clean("log records", text)


async def test_route_replies_and_error_bodies_are_masked(
    fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = fake_llm.env(api_key=KEY)
    monkeypatch.setenv("LLM_API_KEY", KEY)  # the server process's own key, which the scrubber reads
    body = {"messages": [{"role": "user", "content": "hi"}]}
    fake_llm.push(Reply.text(f"Your key is {KEY}, base64 {base64.b64encode(KEY.encode()).decode()}"))
    reply = await handle(body, [], environ=env)
    assert_clean("a route reply", json.dumps(reply))
    assert MASK in reply["content"]
    fake_llm.push(Reply.fault("401", message=f"Incorrect API key provided: {KEY}"))
    with pytest.raises(ChatRouteError) as caught:
        await handle(body, [], environ=env)
    assert_clean("a route error body", json.dumps(caught.value.body))


# ---- the whole session in a real kernel ----

SETUP = """
import base64, logging, os
from agentik_jupyter import tool
from agentik_jupyter.types import ToolOutput
_handler = logging.FileHandler({log!r})
_handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
logging.getLogger("agentik_jupyter").addHandler(_handler)
logging.getLogger("agentik_jupyter").setLevel(logging.DEBUG)
secret_holder = os.environ["LLM_API_KEY"]
settings = {{"auth": "Bearer " + secret_holder, "basic": base64.b64encode(("user:" + secret_holder).encode()).decode(),
            "escaped": repr(secret_holder + "\\n"), "nested": [{{"token": secret_holder}}]}}

@tool(policy="auto")
def show_credentials() -> ToolOutput:
    \"\"\"Shows the connection settings.\"\"\"
    key = os.environ["LLM_API_KEY"]
    return ToolOutput(text="settings: " + key, display={{"text/html": "<b>" + key + "</b>", "text/plain": key,
                                                         "application/json": {{"key": key}}}})

@tool(policy="auto")
def failing_tool() -> str:
    \"\"\"Fails.\"\"\"
    raise RuntimeError("could not connect with " + os.environ["LLM_API_KEY"])

logging.getLogger("agentik_jupyter.user").warning("configured with %s", secret_holder)
try:
    raise ValueError(secret_holder)
except ValueError:
    logging.getLogger("agentik_jupyter.user").exception("a traceback carrying the key")
"""

FAULTS = [
    "401",
    "403",
    "404",
    "429",
    "500",
    "503",
    "reset",
    "truncated",
    "malformed_sse",
    "stream_error",
    "slow_first_byte",
]
READ_TIMEOUT = 2
"""LLM_TIMEOUT in the kernel: the slow first byte trips it in seconds."""
RETRIED = {"500", "503"}
"""Answered again by the retry policy (twice more) before the turn fails."""


class Session:
    def __init__(self, tmp: Path, server: FakeLLMServer, elsewhere: FakeLLMServer) -> None:
        self.server, self.elsewhere = server, elsewhere
        self.db = tmp / "leak.agentik.db"
        self.log = tmp / "agentik.log"
        self.kernel = NotebookKernel(
            kernel_env(
                server, api_key=KEY, AGENTIK_DB_PATH=str(self.db), AGENTIK_APPROVE="auto", LLM_TIMEOUT=str(READ_TIMEOUT)
            ),
            tmp,
        )
        self.own_cells: set[int] = set()

    def agent(self, text: str, *replies: Reply) -> str:
        self.server.push(*replies)
        return output_text(self.kernel.run(f"%%agent --wait\n{text}").outputs)


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    tmp = tmp_path_factory.mktemp("leak")
    with FakeLLMServer() as server, FakeLLMServer() as elsewhere:
        s = Session(tmp, server, elsewhere)
        try:
            s.kernel.run("%load_ext agentik_jupyter")
            s.kernel.run(SETUP.format(log=str(s.log)))
            s.agent("Hello!", Reply.text("Hello, how can I help?"))
            for name in ("secret_holder", "settings", "os.environ"):
                s.agent(
                    f"What is in {name}?",
                    Reply.tool_calls([{"name": "inspect_variable", "args": {"name": name}}]),
                    Reply.text("Looked."),
                )
            s.agent(
                "Show the credentials.",
                Reply.tool_calls([{"name": "show_credentials"}, {"name": "failing_tool"}]),
                Reply.text("Shown."),
            )
            for fault in FAULTS:
                copies = 3 if fault in RETRIED else 1
                reply = Reply.fault(fault, message=f"upstream said no to {KEY}", delay=READ_TIMEOUT + 2)
                s.agent(f"Fault {fault}", *[reply] * copies)
            redirect = Reply.fault("redirect", location=elsewhere.base_url + "/chat/completions")
            s.redirect_text = s.agent("Through the redirect", redirect)
            s.own_cells.add(len(s.kernel.nb.cells))
            s.kernel.run(f"%%capture\n%env LLM_API_KEY={KEY2}")  # the user's own cell; its output is captured
            s.agent(
                "What did I run?",
                Reply.tool_calls([{"name": "get_cell_history", "args": {"last_n": 3}}]),
                Reply.text("You set a variable."),
            )
            s.agent("Last question.", Reply.text("All good."))
            yield s
        finally:
            s.kernel.close()


def test_the_session_really_used_the_key(session: Session) -> None:
    auth = [r.headers.get("authorization", "") for r in session.server.requests]
    assert f"Bearer {KEY}" in auth and f"Bearer {KEY2}" in auth
    tool_results = json.dumps([r.messages for r in session.server.requests])
    assert MASK in tool_results, "the tools read the key, and the model was told it is hidden"


def test_no_cell_output_shows_the_key(session: Session) -> None:
    for n, cell in enumerate(session.kernel.nb.cells):
        if n not in session.own_cells:
            assert_clean(f"cell {n} ({cell.source.splitlines()[0]!r})", json.dumps(cell.outputs))


def test_the_saved_notebook_and_its_widget_state_hold_no_key(session: Session) -> None:
    saved = session.kernel.saved()
    assert "application/vnd.jupyter.widget-state+json" in saved
    assert_clean("the saved notebook", saved.replace(f"%env LLM_API_KEY={KEY2}", ""))


def test_no_db_row_holds_the_key(session: Session) -> None:
    data = file_bytes(session.db).decode("utf-8", "replace")
    assert MASK in data
    assert_clean("the sessions file", data)


def test_no_log_line_holds_the_key(session: Session) -> None:
    text = session.log.read_text()
    assert "configured with" in text and MASK in text
    assert_clean("the log", text)


def test_requests_carry_the_key_only_in_the_auth_header(session: Session) -> None:
    for request in session.server.requests:
        assert_clean("a request body", json.dumps(request.body))
        others = {k: v for k, v in request.headers.items() if k != "authorization"}
        assert_clean("a request header", json.dumps(others) + request.path)


def test_a_redirect_is_not_followed_and_says_where_it_pointed(session: Session) -> None:
    assert session.elsewhere.requests == [], "the redirect target received the request (and the key)"
    assert "307" in session.redirect_text and f"127.0.0.1:{session.elsewhere.port}" in session.redirect_text
    assert "/chat/completions" not in session.redirect_text
