"""Our server-sent events decoder gives the events httpx2's EventSource gives, however cut.

The recorded provider streams of the conformance corpus are fed whole, at every cut point
in two, and in random pieces; hand-written streams cover what the recordings lack (CR and
CRLF line ends split between chunks, a BOM, comments, `event:` names, multi-line data).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import httpx2
import pytest

from agentik_jupyter.errors import MalformedResponseError
from agentik_jupyter.providers._sse import SSEDecoder

CORPUS = Path(__file__).parents[1] / "data" / "conformance"
STREAMS = sorted(
    p.with_suffix(".response")
    for p in CORPUS.glob("*.json")
    if p.name != "cases.json" and json.loads(p.read_text()).get("streaming")
)


def httpx2_events(body: bytes) -> list[tuple[str, str]]:
    """What httpx2's EventSource reads from the same body (events that carry something)."""
    response = httpx2.Response(
        200,
        headers={"content-type": "text/event-stream"},
        content=body,
        request=httpx2.Request("GET", "http://127.0.0.1/"),
    )
    return [(e.event, e.data) for e in httpx2.EventSource(response) if e.data or e.event != "message"]


def decoded(pieces: list[str]) -> list[tuple[str, str]]:
    decoder = SSEDecoder()
    out = [event for piece in pieces for event in decoder.feed(piece)]
    decoder.close()
    return [(name, data) for name, data in out if data or name != "message"]


def cut(text: str, points: list[int]) -> list[str]:
    bounds = [0, *sorted(points), len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:])]


def test_the_corpus_has_streams() -> None:
    assert len(STREAMS) >= 15


@pytest.mark.parametrize("path", STREAMS, ids=[p.stem for p in STREAMS])
def test_recorded_streams_decode_as_httpx2_does(path: Path) -> None:
    body = path.read_bytes()
    expected = httpx2_events(body)
    assert expected, "the recording has events"
    text = body.decode()
    assert decoded([text]) == expected
    for at in range(1, len(text), max(1, len(text) // 300)):
        assert decoded(cut(text, [at])) == expected, f"cut at {at}"
    rng = random.Random(path.name)
    for _ in range(20):
        points = rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(1, 60)))
        assert decoded(cut(text, points)) == expected


HAND_WRITTEN = [
    "data: one\n\ndata: two\n\n",
    "data: a\r\n\r\ndata: b\r\rdata: c\n\n",
    ": a comment\ndata: x\n: another\n\n",
    'event: delta\ndata: {"t": 1}\n\nevent: end\ndata: {}\n\n',
    "data: first line\ndata: second line\n\n",
    "data:no space\n\ndata:  two spaces\n\n",
    "id: 7\nretry: 10\ndata: with an id\n\n",
    "event: ping\n\n",
    "data: unicode \u2028 and \u00e9 and \U0001f600\n\n",
    "data: cut at the end, never dispatched",
    "data: x\n\n\n\n\ndata: y\n\n",
]


@pytest.mark.parametrize("text", HAND_WRITTEN)
def test_hand_written_streams_decode_as_httpx2_does_at_every_cut(text: str) -> None:
    expected = httpx2_events(text.encode())
    assert decoded([text]) == expected
    for a in range(1, len(text)):
        assert decoded(cut(text, [a])) == expected, f"cut at {a}"
        for b in range(a + 1, len(text), 3):
            assert decoded(cut(text, [a, b])) == expected, f"cut at {a}, {b}"


def test_a_leading_bom_is_dropped_as_the_standard_says() -> None:
    """httpx2 reads `\\ufeffdata` as an unknown field and loses the event; the WHATWG rules drop the BOM."""
    for pieces in (["\ufeffdata: after a BOM\n\n"], ["\ufeff", "data: after a BOM\n\n"]):
        assert decoded(pieces) == [("message", "after a BOM")]


def test_the_usual_chunk_is_one_event() -> None:
    decoder = SSEDecoder()
    assert decoder.feed('data: {"a": 1}\n\n') == [("message", '{"a": 1}')]
    assert decoder.feed("data: [DONE]\n\n") == [("message", "[DONE]")]


def test_an_event_that_never_ends_is_refused_before_it_fills_memory() -> None:
    decoder = SSEDecoder(max_event_chars=1_000)
    decoder.feed("data: " + "x" * 500)
    with pytest.raises(MalformedResponseError, match="passed 1,000 characters"):
        decoder.feed("y" * 600)
    with pytest.raises(MalformedResponseError):
        SSEDecoder(max_event_chars=1_000).feed("data: " + "x" * 2_000 + "\n\n")
    many_lines = SSEDecoder(max_event_chars=1_000)
    with pytest.raises(MalformedResponseError):
        for _ in range(200):
            many_lines.feed("data: xxxxxxxx\n")
