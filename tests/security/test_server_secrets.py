"""The Jupyter server's side: SSE deltas and the server's own log carry no key.

A real Jupyter Server with the key only in its environment and the fake provider over HTTP.
The provider spells the key out across stream chunks: no run of SSE events holds it, what a
reader has seen after each event is how the masked text begins, and the
streamed text joined is the masked `end` content. Then requests that make our handlers log
(a provider error that quotes the key, a query string and a `Referer` carrying it, a path
outside the root) leave the key in no line of the server's log output.
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx2
import pytest

from agentik_jupyter.security.scrub import scrub
from agentik_jupyter.testing import FakeLLMServer, Reply
from tests.jupyter_servers import RunningServer, server_fixtures

from .test_key_never_leaves import KEY, MASK, assert_clean
from .test_streamed_secrets import ANSWER, CHUNKS, REASONING

pytestmark = pytest.mark.timeout(180)


llm, server = server_fixtures(api_key=KEY)


def headers(server: RunningServer, **extra: str) -> dict[str, str]:
    return {"Authorization": f"token {server.token}", **extra}


def sse_events(server: RunningServer, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    events: list[tuple[str, dict[str, Any]]] = []
    with httpx2.stream(
        "POST",
        f"{server.url}/agentik/api/chat",
        json=body,
        headers=headers(server, Accept="text/event-stream"),
        timeout=60,
    ) as r:
        assert r.status_code == 200, r.read()
        kind = ""
        for line in r.iter_lines():
            if line.startswith("event:"):
                kind = line.partition(":")[2].strip()
            elif line.startswith("data:"):
                events.append((kind, json.loads(line.partition(":")[2])))
    return events


def assert_streamed_clean(kind: str, events: list[tuple[str, dict[str, Any]]], expected: str) -> None:
    """The `kind` events hold the key in no run of them and leave no start of it for the next one.

    However the reads fell (one event per provider chunk, or several chunks in one), a key split
    over two events shows in the run of events that spans them; and what a reader has seen after
    each event is how the masked text begins, so no event ends with a start of the key that a
    later one completes (or masks: `sk-agen` + `[hidden: …]` is not how the masked text goes on).
    """
    texts = [data["text"] for k, data in events if k == kind]
    for first in range(len(texts)):
        for last in range(first + 1, len(texts) + 1):
            assert_clean(f"{kind} events {first}..{last - 1} joined", "".join(texts[first:last]))
    seen = ""
    for index, text in enumerate(texts):
        seen += text
        assert expected.startswith(seen), f"after {kind} event {index} ({text!r}) the reader has {seen!r}"
    assert seen == expected


def test_sse_deltas_never_carry_the_key_split_across_chunks(server: RunningServer, llm: FakeLLMServer) -> None:
    assert all(KEY not in piece for piece in Reply.text(ANSWER, chunks=CHUNKS).pieces()), "the provider cuts the key"
    llm.push(Reply.text(ANSWER, chunks=CHUNKS, reasoning=REASONING))
    llm.chunk_delay = 0.02  # paced like a model, so the route mostly reads the chunks one by one
    try:
        events = sse_events(server, {"messages": [{"role": "user", "content": "What is my key?"}]})
    finally:
        llm.chunk_delay = 0.0
    kinds = [kind for kind, _ in events]
    assert kinds[0] == "start" and kinds[-1] == "end"
    assert_clean("an SSE event", json.dumps(events))
    expected = scrub(ANSWER, {"LLM_API_KEY": KEY})
    assert MASK in expected and events[-1][1]["content"] == expected
    assert_streamed_clean("delta", events, expected)
    assert_streamed_clean("reasoning", events, scrub(REASONING, {"LLM_API_KEY": KEY}))


def wait_for_log(server: RunningServer, needle: str, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        log = server.log()
        if needle in log or time.monotonic() > deadline:
            return log
        time.sleep(0.1)


def test_the_server_log_holds_no_key(server: RunningServer, llm: FakeLLMServer) -> None:
    body = {"messages": [{"role": "user", "content": "hi"}]}
    llm.push(Reply.fault("401", message=f"Incorrect API key provided: {KEY}"))
    r = httpx2.post(f"{server.url}/agentik/api/chat", json=body, headers=headers(server), timeout=60)
    assert r.status_code == 502
    llm.push(Reply.fault("403", message=f"key {KEY} has no access"))
    events = sse_events(server, body)
    assert events[-1][0] == "error"
    referer = f"http://127.0.0.1/lab?note={KEY}"
    r = httpx2.get(
        f"{server.url}/agentik/api/sessions",
        params={"path": f"../{KEY}.ipynb"},
        headers=headers(server, Referer=referer),
        timeout=30,
    )
    assert r.status_code == 400
    r = httpx2.get(
        f"{server.url}/agentik/api/sessions/{KEY}",
        params={"path": f"{KEY}.txt", "limit": KEY},
        headers=headers(server, Referer=referer),
        timeout=30,
    )
    assert r.status_code == 400
    log = wait_for_log(server, "agentik chat")
    assert_clean("the server's log", log)
    lines = [line for line in log.splitlines() if "agentik" in line]
    assert any("LLM provider error" in line and MASK in line for line in lines), "\n".join(lines)
    assert sum("/agentik/api/sessions" in line and MASK in line for line in lines) >= 2, "\n".join(lines)
