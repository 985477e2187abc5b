"""Each value is scrubbed or redacted where that is guaranteed to work, and no secret leaks.

Where a value was scrubbed twice, the second pass (AgentikError's, `clip`'s, the tool boundary's)
covers the first. Where two passes stay, these tests show what the first one catches that the
second cannot:

- `redact_url` on the URL a provider error names (and on a bad LLM_BASE_URL): the error's own
  pass finds URLs in free text with a pattern that ends at a space or a quote, so a password
  holding one (httpx2 requests `user:pa'ss@host` as it is) would be shown; and the scrubber
  does not know a base URL that is not in the environment (`stream_chat(environ=…)`).

An inspected string is scrubbed once, after `repr()`: the scrubber knows a secret's escaped
forms (tests/security/test_quoted_secrets.py).
"""

from __future__ import annotations

import socket

import pytest

from agentik_jupyter.core.chat_route import stream_chat
from agentik_jupyter.errors import ConfigurationError, ProviderConnectionError
from agentik_jupyter.providers.config import load_config
from agentik_jupyter.security.scrub import scrub
from agentik_jupyter.tools.dataframes import describe_frame
from agentik_jupyter.tools.inspection import inspect_value
from agentik_jupyter.types import ChatMessage

pytestmark = pytest.mark.timeout(120)

PASSWORD = 'pa ss"wd'
"""A proxy password with a space and a quote: the URL in free text ends before it."""
APOSTROPHE_PASSWORD = "pa'sswd9"
"""A password httpx2 keeps as it is in the URL it requests (it encodes a space and `"`)."""
QUOTED_KEY = "Abc'defGhijk\\lmnop1234567890xyz"
"""A key with a quote and a backslash: repr() writes it `Abc\\'defGhijk\\\\lmnop…`."""
TOKEN = "ghp_Q7vK2mX9pL4nR8tW1yZ6bC3dF5gH0jSaE2rT6uI9oP1lK4jH7gF3dS8aZ5"
PIECE = 8


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def assert_no_piece(secret: str, where: str, text: str) -> None:
    for i in range(len(secret) - PIECE + 1):
        piece = secret[i : i + PIECE]
        assert piece not in text, f"{piece!r} of the secret is in {where}: {text[:600]}"


async def test_an_unreachable_provider_is_named_without_a_password_free_text_redaction_misses() -> None:
    port = closed_port()
    env = {
        "LLM_PROVIDER": "openai-compatible",
        "LLM_MODEL": "m",
        "LLM_API_KEY": "sk-test-redact-once-0001",
        "LLM_BASE_URL": f"http://proxyuser:{APOSTROPHE_PASSWORD}@127.0.0.1:{port}/v1",
    }
    with pytest.raises(ProviderConnectionError) as caught:
        async for _ in stream_chat([ChatMessage(role="user", content="Hello?")], None, [], environ=env):
            pass
    said = str(caught.value)
    assert f"127.0.0.1:{port}/v1" in said and "***@" in said
    assert "pa'ss" not in said and "sswd9" not in said, said


def test_a_base_url_that_is_not_http_is_named_without_its_password() -> None:
    env = {
        "LLM_PROVIDER": "openai-compatible",
        "LLM_MODEL": "m",
        "LLM_API_KEY": "sk-test-redact-once-0001",
        "LLM_BASE_URL": f"ftp://proxyuser:{PASSWORD}@gateway.example/v1",
    }
    with pytest.raises(ConfigurationError) as caught:
        load_config(env)
    said = str(caught.value)
    assert "gateway.example/v1" in said and "is not an http(s) URL" in said
    assert "pa ss" not in said and 'ss"wd' not in said, said


def test_a_string_holding_a_key_with_a_quote_is_inspected_without_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERVICE_API_KEY", QUOTED_KEY)
    value = f'config "a": {QUOTED_KEY} end'
    out = inspect_value("settings", value)
    sent = scrub(out.text)  # what leaves the tool: the orchestrator scrubs every result
    assert "[hidden: SERVICE_API_KEY]" in sent and "config " in sent
    for where, text in (("the text", sent), ("the display", scrub(out.display["text/plain"]))):
        assert_no_piece(QUOTED_KEY, where, text)
        assert_no_piece(repr(QUOTED_KEY)[1:-1], where, text)


@pytest.mark.parametrize("size", [40, 1_980])  # (1,980: the head cut at 2,000 bytes cuts the token)
def test_bytes_holding_a_token_are_inspected_without_it(monkeypatch: pytest.MonkeyPatch, size: int) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    value = (b"x" * size + TOKEN.encode() + b"\n") * 3
    sent = scrub(inspect_value("blob", value).text)
    assert "[hidden: GITHUB_TOKEN]" in sent and "bytes" in sent
    assert_no_piece(TOKEN, "the inspected bytes", sent)


def test_a_polars_head_masks_a_token_in_every_column_it_fits(monkeypatch: pytest.MonkeyPatch) -> None:
    pl = pytest.importorskip("polars")
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    frame = pl.DataFrame({f"column_{i}": [f"{TOKEN}", "plain", f"{TOKEN}"] for i in range(14)})
    out = describe_frame("keys", frame)
    assert "first 3 rows" in out.text and "[hidden: GITHUB_TOKEN]" in out.text and "plain" in out.text
    assert_no_piece(TOKEN, "the description", out.text)
    assert_no_piece(TOKEN, "the preview", out.display["text/html"])
