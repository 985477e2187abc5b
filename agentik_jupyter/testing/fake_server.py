"""A fake LLM server on 127.0.0.1 that speaks the real wire formats, for offline tests.

It answers `POST /v1/chat/completions` (OpenAI-compatible) and `POST /v1/messages`
(Anthropic), streamed or not, with scripted replies, records every request, and
injects faults (HTTP errors, a reset mid-stream, a truncated stream, a malformed
event, an in-band error, a slow first byte, a redirect). `pace` streams at a model's speed
(chunks a second, on a fixed schedule) and `first_frame_at` says when each stream began. Use it
to test an agent notebook without a network::

    from agentik_jupyter.testing import FakeLLMServer, Reply
    with FakeLLMServer() as srv:
        srv.push(Reply.tool_calls([{"name": "list_variables", "args": {}}]), Reply.text("Done."))
        os.environ.update(srv.env())        # LLM_PROVIDER, LLM_MODEL, LLM_API_KEY, LLM_BASE_URL

Or as a process: ``python -m agentik_jupyter.testing.fake_server --port 0 --script replies.json``.
"""

from __future__ import annotations

import argparse
import json
import socket
import struct
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from agentik_jupyter.testing import _wire as W
from agentik_jupyter.testing.replies import FAULTS, HTTP_FAULTS, Fault, RecordedRequest, Reply, ToolCallReply

__all__ = [
    "FAULTS",
    "Fault",
    "FakeLLMServer",
    "RecordedRequest",
    "Reply",
    "Responder",
    "ToolCallReply",
    "echo_responder",
]

Responder = Callable[[RecordedRequest], "Reply | str"]

DEFAULT_MODEL = "fake-model"
DEFAULT_API_KEY = "fake-key"
DEFAULT_SLOW_SECONDS = 5.0
DEFAULT_ERROR_MESSAGES = {
    401: "Incorrect API key provided.",
    403: "Your key may not use this model.",
    404: "The model does not exist or you do not have access to it.",
    429: "Rate limit reached. Please try again later.",
    500: "The server had an error while processing your request.",
    503: "The server is overloaded. Please try again later.",
}
STREAM_ERROR_MESSAGE = "Overloaded: the upstream model failed mid-answer."


def echo_responder(request: RecordedRequest) -> Reply:
    """The default answer when nothing is scripted: a deterministic echo of the last user text."""
    return Reply.text(f"Echo: {request.last_user_text()}")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # TCP_NODELAY, as real providers' servers: each chunk leaves at once
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path.split("?")[0].rstrip("/").endswith("/models"):
            self._send_json(200, {"object": "list", "data": [{"id": DEFAULT_MODEL, "object": "model"}]})
        else:
            self._send_json(404, {"error": {"message": f"No route for GET {self.path}"}})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        route = self.path.split("?")[0].rstrip("/")
        api: Literal["openai", "anthropic", "other"] = (
            "openai" if route.endswith("/chat/completions") else "anthropic" if route.endswith("/messages") else "other"
        )
        headers = {k.lower(): v for k, v in self.headers.items()}
        request = RecordedRequest(method="POST", path=self.path, headers=headers, body=body, api=api)
        fake = self.server.fake
        fake._record(request)
        try:
            if api == "other":
                self._send_json(404, {"error": {"message": f"No route for POST {self.path}"}})
            elif not isinstance(body, dict):
                self._send_json(400, {"error": {"message": "The request body is not a JSON object."}})
            else:
                fake._respond(self, request, fake._next_reply(request))
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True
            fake._hung_up(request)

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _abort(self) -> None:
        """Reset the TCP connection (RST), as a crashing proxy or server would."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
        except OSError:
            pass


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeLLMServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients hang up mid-answer on purpose (timeouts, Stop); no traceback for that."""
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class FakeLLMServer:
    """A real HTTP server on a free loopback port, in a daemon thread. See the module docstring."""

    def __init__(
        self,
        *,
        chunk_delay: float = 0.0,
        pace: float = 0.0,
        host: str = "127.0.0.1",
        port: int = 0,
        replies: Iterable[Reply] = (),
        responder: Responder | None = None,
    ) -> None:
        self.chunk_delay = chunk_delay
        self.pace = pace
        """Streamed frames a second (0: as fast as the socket takes them). Frame i of a stream
        leaves at its first frame's time + i / pace, so the rate does not drift with the writes."""
        self.first_frame_at: list[float] = []
        """`time.perf_counter()` when each streamed response's first frame began to be written, in order."""
        self._address = (host, port)
        self._queue: deque[Reply] = deque(replies)
        self._responder: Responder = responder or echo_responder
        self._requests: list[RecordedRequest] = []
        self._cache_text: dict[str, str] = {}  # the last request's text per wire format: its prompt cache
        self._hangups: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._ids = 0
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle ----

    def start(self) -> FakeLLMServer:
        if self._httpd is not None:
            return self
        self._stopping.clear()
        self._httpd = _HTTPServer(self._address, _Handler)
        self._httpd.fake = self
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="FakeLLMServer", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._httpd = None

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- addresses ----

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("FakeLLMServer is not started; call start() first")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{self._address[0]}:{self.port}"

    @property
    def base_url(self) -> str:
        """LLM_BASE_URL for `openai-compatible` (the adapter posts `/v1/chat/completions`)."""
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """LLM_BASE_URL for `anthropic` (the adapter posts `/v1/messages`)."""
        return self.url

    def env(
        self, provider: str = "openai-compatible", *, model: str = DEFAULT_MODEL, api_key: str = DEFAULT_API_KEY
    ) -> dict[str, str]:
        """The LLM_* variables that point the agent at this server."""
        base = self.anthropic_base_url if provider == "anthropic" else self.base_url
        return {"LLM_PROVIDER": provider, "LLM_MODEL": model, "LLM_API_KEY": api_key, "LLM_BASE_URL": base}

    # ---- script ----

    def push(self, *replies: Reply | str) -> FakeLLMServer:
        """Queue replies, answered first-in first-out; a str is `Reply.text(str)`."""
        with self._lock:
            self._queue.extend(Reply.text(r) if isinstance(r, str) else r for r in replies)
        return self

    def set_responder(self, responder: Responder | None) -> None:
        """Answer with `responder(request)` when the queue is empty (None restores the echo)."""
        self._responder = responder or echo_responder

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def hangups(self) -> list[RecordedRequest]:
        """Requests whose client closed the connection before the reply was written."""
        with self._lock:
            return list(self._hangups)

    @property
    def last_request(self) -> RecordedRequest | None:
        with self._lock:
            return self._requests[-1] if self._requests else None

    def clear(self) -> None:
        """Forget recorded requests and queued replies."""
        with self._lock:
            self._requests.clear()
            self._queue.clear()

    # ---- serving (called from handler threads) ----

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _hung_up(self, request: RecordedRequest) -> None:
        with self._lock:
            self._hangups.append(request)

    def _next_reply(self, request: RecordedRequest) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        reply = self._responder(request)
        return Reply.text(reply) if isinstance(reply, str) else reply

    def _new_id(self, prefix: str) -> str:
        with self._lock:
            self._ids += 1
            return f"{prefix}fake{self._ids}"

    def _respond(self, h: _Handler, request: RecordedRequest, reply: Reply) -> None:
        if reply.raw_body is not None:
            h.send_response(reply.raw_status)
            h.send_header("Content-Type", reply.raw_content_type)
            h.send_header("Content-Length", str(len(reply.raw_body)))
            h.end_headers()
            h.wfile.write(reply.raw_body)
            h.wfile.flush()
            return
        fault = reply.fault_kind
        if fault == "slow_first_byte":
            if self._stopping.wait(DEFAULT_SLOW_SECONDS if reply.delay is None else reply.delay):
                h.close_connection = True
                return
            fault = None
        anthropic = request.api == "anthropic"
        if fault == "redirect":
            h.send_response(307)
            h.send_header("Location", reply.location or "/elsewhere")
            h.send_header("Content-Length", "0")
            h.end_headers()
            h.wfile.flush()
            return
        if fault in HTTP_FAULTS:
            status = HTTP_FAULTS[fault]
            message = reply.message or DEFAULT_ERROR_MESSAGES[status]
            headers: dict[str, str] = {}
            if reply.retry_after is not None:
                headers["retry-after"] = f"{reply.retry_after:g}"
            if reply.retry_after_ms is not None:
                headers["retry-after-ms"] = f"{reply.retry_after_ms:g}"
            body = W.anthropic_error(status, message) if anthropic else W.openai_error(status, message)
            h._send_json(status, body, headers)
            return
        model = str(request.body.get("model") or DEFAULT_MODEL)
        with self._lock:
            prompt, self._cache_text[request.api] = W.prompt_of(
                request.body, request.api, self._cache_text.get(request.api, "")
            )
        if not request.stream:
            self._respond_json(h, reply, fault, anthropic=anthropic, model=model, prompt=prompt)
            return
        if anthropic:
            frames = W.anthropic_stream(reply, model=model, prompt=prompt, new_id=self._new_id)
        else:
            options = request.body.get("stream_options") or {}
            include_usage = bool(isinstance(options, dict) and options.get("include_usage"))
            frames = W.openai_stream(
                reply, model=model, prompt=prompt, include_usage=include_usage, new_id=self._new_id
            )
        cut = max(1, len(frames) // 2)
        if fault in ("reset", "truncated"):
            frames = frames[:cut]
        elif fault == "malformed_sse":
            frames = [*frames[:cut], b'data: {"choices": [{"delta": {"content": "trunc\n\n', *frames[cut:]]
        elif fault == "stream_error":
            message = reply.message or STREAM_ERROR_MESSAGE
            bad = W.anthropic_stream_error(message) if anthropic else W.openai_stream_error(message)
            frames = [*frames[:cut], bad]
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream; charset=utf-8")
        h.send_header("Cache-Control", "no-cache")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        self._stream(h, frames)
        if fault == "reset":
            h._abort()
            return
        h.wfile.write(b"0\r\n\r\n")
        h.wfile.flush()

    def _stream(self, h: _Handler, frames: list[bytes]) -> None:
        """Write the frames as HTTP chunks, `chunk_delay` apart or on the `pace` schedule."""
        started = 0.0
        for i, frame in enumerate(frames):
            if self.pace and i:
                wait = started + i / self.pace - time.perf_counter()
                if wait > 0 and self._stopping.wait(wait):
                    return
            if not i:  # the time is taken before the write: a client may read the frame before it returns
                started = time.perf_counter()
                with self._lock:
                    self.first_frame_at.append(started)
            h.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
            h.wfile.flush()
            if self.chunk_delay and self._stopping.wait(self.chunk_delay):
                return

    def _respond_json(
        self, h: _Handler, reply: Reply, fault: str | None, *, anthropic: bool, model: str, prompt: W.Prompt
    ) -> None:
        if anthropic:
            payload = W.anthropic_json(reply, model=model, prompt=prompt, new_id=self._new_id)
        else:
            payload = W.openai_json(reply, model=model, prompt=prompt, new_id=self._new_id)
        if fault == "stream_error":
            message = reply.message or STREAM_ERROR_MESSAGE
            payload = W.anthropic_error(503, message) if anthropic else W.openai_error(503, message)
        data = json.dumps(payload).encode()
        if fault in ("malformed_sse", "truncated"):
            data = data[: len(data) // 2]
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        if fault == "reset":
            h.wfile.write(data[: len(data) // 2])
            h._abort()
            return
        h.wfile.write(data)
        h.wfile.flush()


def _load_script(path: str | None) -> list[Reply]:
    if not path:
        return []
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    entries = data.get("replies", []) if isinstance(data, dict) else data
    return [Reply.from_dict(e) if isinstance(e, dict) else Reply.text(str(e)) for e in entries]


def main(argv: list[str] | None = None) -> int:
    """Run the fake server in the foreground until interrupted; print its base URLs first."""
    parser = argparse.ArgumentParser(
        prog="python -m agentik_jupyter.testing.fake_server", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument(
        "--script", help="JSON list of replies: {text}, {tool_calls, text?}, {fault, retry_after?, ...}"
    )
    parser.add_argument("--chunk-delay", type=float, default=0.0, help="seconds between streamed chunks")
    parser.add_argument("--pace", type=float, default=0.0, help="streamed chunks a second, on a fixed schedule")
    args = parser.parse_args(argv)
    server = FakeLLMServer(
        chunk_delay=args.chunk_delay, pace=args.pace, host=args.host, port=args.port, replies=_load_script(args.script)
    )
    server.start()
    print(f"LLM_BASE_URL={server.base_url}", flush=True)
    print(f"ANTHROPIC_BASE_URL={server.anthropic_base_url}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
