"""A credential in LLM_BASE_URL is never shown.

Only LLM_API_KEY was treated as the provider's secret, so a proxy password in the base URL's
userinfo (`https://user:pw@host/v1`) or a key in its query (`?api-key=…`) showed in
`%agent status`, `%agent config`, the error of a turn that could not reach the provider, and
the sessions file. Here a real kernel is configured with such a URL pointing at a closed port:
each of those places names the host and port (so the user can tell which endpoint is meant)
and holds neither the password nor the query key.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentik_jupyter.security.scrub import scrub
from agentik_jupyter.security.urls import redact_url
from tests.kernel_support import NotebookKernel, file_bytes, kernel_env, output_text

pytestmark = pytest.mark.timeout(180)

PASSWORD = "Pr0xy-pw-8c41e2"
QUERY_KEY = "qk-5a9d03b7e6"
SHORT_KEY = "abc"
HIDDEN = (PASSWORD, QUERY_KEY, f"key={SHORT_KEY}")


def closed_port() -> int:
    """A port nothing listens on: bound, then released."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def assert_hidden(where: str, text: str) -> None:
    for secret in HIDDEN:
        assert secret not in text, f"{secret!r} is in {where}: {text[:600]}"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://user:pw@host.example/v1", "https://***@host.example/v1"),
        ("https://host.example:8443/v1?key=abc", "https://host.example:8443/v1?key=***"),
        ("http://u@h/v1?api-key=k1&api-version=2024-06-01#frag", "http://***@h/v1?api-key=***&api-version=***"),
        ("http://localhost:11434/v1", "http://localhost:11434/v1"),
        ("not a url", "not a url"),
    ],
)
def test_redact_url_strips_userinfo_and_query_values(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_the_base_urls_credentials_are_masked_wherever_they_slip_through() -> None:
    env = {"LLM_BASE_URL": f"https://proxyuser:{PASSWORD}@gateway.example/v1?api-key={QUERY_KEY}&key={SHORT_KEY}"}
    said = f"auth {PASSWORD} failed; retry with api-key={QUERY_KEY} or key={SHORT_KEY}; {env['LLM_BASE_URL']}"
    masked = scrub(said, env)
    assert_hidden("the scrubbed text", masked)
    assert "[hidden: LLM_BASE_URL]" in masked and "auth " in masked


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[NotebookKernel, Path, int]]:
    tmp = tmp_path_factory.mktemp("base-url")
    db = tmp / "url.agentik.db"
    port = closed_port()
    base_url = f"http://proxyuser:{PASSWORD}@127.0.0.1:{port}/v1?api-key={QUERY_KEY}&key={SHORT_KEY}"
    env = kernel_env(
        None,
        LLM_PROVIDER="openai-compatible",
        LLM_MODEL="demo",
        LLM_API_KEY="sk-base-url-test-0001",
        LLM_BASE_URL=base_url,
        AGENTIK_DB_PATH=str(db),
    )
    nb = NotebookKernel(env, tmp)
    try:
        nb.run("%load_ext agentik_jupyter")
        yield nb, db, port
    finally:
        nb.close()


def test_agent_status_names_the_host_without_the_credentials(kernel: tuple[NotebookKernel, Path, int]) -> None:
    nb, _, port = kernel
    text = nb.text("%agent status")
    assert f"127.0.0.1:{port}/v1" in text and "endpoint:" in text
    assert_hidden("%agent status", text)


def test_agent_config_shows_the_base_url_without_the_credentials(kernel: tuple[NotebookKernel, Path, int]) -> None:
    nb, _, port = kernel
    text = nb.text("%agent config")
    assert "LLM_BASE_URL" in text and f"127.0.0.1:{port}/v1" in text
    assert_hidden("%agent config", text)


def test_an_unreachable_provider_error_and_the_sessions_file_hold_no_credential(
    kernel: tuple[NotebookKernel, Path, int],
) -> None:
    nb, db, port = kernel
    cell = nb.run("%%agent --wait\nHello?", allow_error=True)
    shown = output_text(cell.outputs) + json.dumps(cell.outputs)
    assert "Could not reach the provider" in shown and f"127.0.0.1:{port}" in shown
    assert_hidden("the error the cell showed", shown)
    assert_hidden("the saved notebook", nb.saved())
    data = file_bytes(db).decode("utf-8", "replace")
    assert "Could not reach the provider" in data
    assert_hidden("the sessions file", data)


def test_the_adapters_repr_drops_the_url_credentials() -> None:
    """An adapter printed in a traceback or a debugger shows host and path, never the proxy password or query key."""
    from agentik_jupyter.providers.anthropic import AnthropicAdapter
    from agentik_jupyter.providers.openai_compatible import OpenAICompatibleAdapter

    url = "https://proxyuser:Pr0xyPassw0rd@llm.example/v1?api-key=QueryKey12345"
    for adapter in (OpenAICompatibleAdapter(api_key="k", base_url=url), AnthropicAdapter(api_key="k", base_url=url)):
        shown = repr(adapter)
        assert "llm.example/v1" in shown
        assert "Pr0xyPassw0rd" not in shown and "QueryKey12345" not in shown, shown
