"""Replay every recorded provider response in tests/data/conformance through our adapters.

Each case is served from a loopback HTTP server exactly as recorded; streaming cases
are served three ways (one write, 7-byte and 1-byte chunked transfer) and must
assemble identically. Comparison rules follow the corpus README.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agentik_jupyter.errors import BadRequestError, NotFoundError, ProviderError, RateLimitError, StreamError
from agentik_jupyter.providers._http import NO_RETRY
from agentik_jupyter.providers.anthropic import AnthropicAdapter
from agentik_jupyter.providers.base import (
    ChatParams,
    ProviderChatResponse,
    ReasoningDelta,
    StreamDone,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallStart,
)
from agentik_jupyter.providers.openai_compatible import OpenAICompatibleAdapter
from agentik_jupyter.types import ChatMessage

CORPUS = Path(__file__).parents[1] / "data" / "conformance"
# Where the corpus was recorded: beside the repository in the project's own workspace only.
# When it is there, the copy above must not have drifted from it (refresh with a plain `cp -r`).
UPSTREAM = Path(__file__).resolve().parents[3] / "shared" / "conformance"
EXPECTED_CASES = 44


def _case_ids() -> list[str]:
    return [case["id"] for case in json.loads((CORPUS / "cases.json").read_text())["cases"]]


CASE_IDS = _case_ids()
STREAM_IDS = [c for c in CASE_IDS if json.loads((CORPUS / f"{c}.json").read_text())["streaming"]]


def test_corpus_is_present() -> None:
    """The corpus ships in the repository, with the README naming where each recording came from."""
    assert len(CASE_IDS) == EXPECTED_CASES
    assert "Where the recordings come from" in (CORPUS / "README.md").read_text()
    for case_id in CASE_IDS:
        assert (CORPUS / f"{case_id}.json").is_file() and (CORPUS / f"{case_id}.response").is_file(), case_id


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.skipif(not UPSTREAM.is_dir(), reason="no ../shared/conformance beside the repository")
def test_copy_matches_upstream_corpus() -> None:
    """The repository's copy is byte for byte the recorded corpus beside it."""
    ours, upstream = _files(CORPUS), _files(UPSTREAM)
    assert sorted(ours) == sorted(upstream)
    changed = [name for name in ours if ours[name] != upstream[name]]
    assert not changed, f"tests/data/conformance differs from {UPSTREAM}: {changed}"


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that stops reading after an error event resets the connection; that is fine."""


class _Served:
    def __init__(self, meta: dict[str, Any], body: bytes, chunk: int | None) -> None:
        self.meta, self.body, self.chunk = meta, body, chunk
        self.paths: list[str] = []
        served = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                served.paths.append(self.path)
                self.send_response(served.meta["http_status"])
                self.send_header("Content-Type", served.meta["content_type"])
                if served.chunk is None:
                    self.send_header("Content-Length", str(len(served.body)))
                    self.end_headers()
                    self.wfile.write(served.body)
                    return
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                size = served.chunk
                frames = b"".join(
                    b"%x\r\n%s\r\n" % (len(served.body[i : i + size]), served.body[i : i + size])
                    for i in range(0, len(served.body), size)
                )
                for i in range(0, len(frames), 4096):
                    self.wfile.write(frames[i : i + 4096])
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")

        self.server = _QuietServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        self.root = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[_Served] = []

    def start(case_id: str, chunk: int | None) -> _Served:
        meta = json.loads((CORPUS / f"{case_id}.json").read_text())
        served = _Served(meta, (CORPUS / f"{case_id}.response").read_bytes(), chunk)
        servers.append(served)
        return served

    yield start
    for served in servers:
        served.close()


def _adapter(served: _Served) -> OpenAICompatibleAdapter | AnthropicAdapter:
    if served.meta["api"] == "anthropic-messages":
        return AnthropicAdapter(api_key="dummy-key", base_url=served.root, retry=NO_RETRY)
    return OpenAICompatibleAdapter(api_key="dummy-key", base_url=served.root + "/v1", retry=NO_RETRY)


class _Seen:
    """What a user of `stream()` saw, rebuilt from the deltas alone."""

    def __init__(self) -> None:
        self.text, self.reasoning = "", ""
        self.calls: dict[int, dict[str, str]] = {}

    def add(self, delta: Any) -> None:
        if isinstance(delta, TextDelta):
            self.text += delta.text
        elif isinstance(delta, ReasoningDelta):
            self.reasoning += delta.text
        elif isinstance(delta, ToolCallStart):
            self.calls[delta.index] = {"id": delta.id, "name": delta.name, "args": ""}
        elif isinstance(delta, ToolCallArgsDelta):
            self.calls[delta.index]["args"] += delta.text


async def _run(served: _Served) -> tuple[ProviderChatResponse | None, ProviderError | None, _Seen]:
    adapter = _adapter(served)
    params = ChatParams(model="test-model", messages=[ChatMessage(role="user", content="hi")])
    seen = _Seen()
    try:
        if served.meta["streaming"]:
            response = None
            async for delta in adapter.stream(params):
                seen.add(delta)
                if isinstance(delta, StreamDone):
                    response = delta.response
            return response, None, seen
        return await adapter.chat(params), None, seen
    except ProviderError as exc:
        return None, exc, seen
    finally:
        await adapter.aclose()


def _same_text(actual: str | None, expected: str | None) -> bool:
    return (actual or "") == (expected or "")


def _check_result(result: ProviderChatResponse, expected: dict[str, Any], api: str, *, partial: bool) -> None:
    assert _same_text(result.content, expected["content"]), "content differs"
    assert _same_text(result.reasoning, expected.get("reasoning")), "reasoning differs"
    if expected.get("reasoning_field"):
        assert result.reasoning_field == expected["reasoning_field"]
    assert len(result.tool_calls) == len(expected["tool_calls"]), "tool call count differs"
    for got, want in zip(result.tool_calls, expected["tool_calls"]):
        assert got.id == want["id"]
        assert got.name == want["name"]
        assert got.args == want["arguments"]
        assert got.parse_error is None
        if api == "openai-chat" and "arguments_raw" in want:
            assert _same_text(got.arguments_raw, want["arguments_raw"])
    if api == "openai-chat":
        assert (result.finish_reason or None) == (expected.get("finish_reason") or None)
    else:
        assert result.finish_reason == expected.get("stop_reason")
        assert result.stop_sequence == expected.get("stop_sequence")
        blocks = expected.get("content_blocks") or []
        assert [b.get("type") for b in result.content_blocks or []] == [b["type"] for b in blocks]
    if expected.get("usage") and not partial:
        assert result.usage is not None
        assert result.usage.input_tokens == expected["usage"]["input_tokens"]
        assert result.usage.output_tokens == expected["usage"]["output_tokens"]


_ERROR_TYPES = {400: BadRequestError, 404: NotFoundError, 429: RateLimitError, 200: StreamError}


async def _check_case(served: _Served) -> ProviderChatResponse | None:
    meta = served.meta
    expected = meta["expected"]
    result, error, seen = await _run(served)
    want_error = expected.get("error")
    if want_error is None:
        assert error is None, f"unexpected error: {error}"
        assert result is not None
        _check_result(result, expected, meta["api"], partial=False)
    else:
        assert error is not None, "expected an error"
        assert isinstance(error, _ERROR_TYPES[want_error["status"]])
        assert error.status == want_error["status"]
        assert error.in_stream == want_error["in_stream"]
        assert want_error["message"] in str(error)
        result = error.partial
        if meta["streaming"]:
            assert result is not None
            _check_result(result, expected, meta["api"], partial=True)
    if meta["streaming"] and result is not None:
        assert seen.text == (result.content or "")
        assert seen.reasoning == (result.reasoning or "")
        assert [(c["id"], c["name"]) for c in seen.calls.values()] == [(c.id, c.name) for c in result.tool_calls]
        for streamed, call in zip(seen.calls.values(), result.tool_calls):
            assert streamed["args"] == (call.arguments_raw or "")
    path = "/v1/messages" if meta["api"] == "anthropic-messages" else "/v1/chat/completions"
    assert served.paths == [path]
    return result


@pytest.mark.parametrize("case_id", CASE_IDS)
async def test_case(case_id: str, serve: Any) -> None:
    await _check_case(serve(case_id, None))


@pytest.mark.parametrize("chunk", [7, 1])
@pytest.mark.parametrize("case_id", STREAM_IDS)
async def test_case_chunked(case_id: str, chunk: int, serve: Any) -> None:
    whole = await _check_case(serve(case_id, None))
    chunked = await _check_case(serve(case_id, chunk))
    assert (whole.model_dump() if whole else None) == (chunked.model_dump() if chunked else None)
