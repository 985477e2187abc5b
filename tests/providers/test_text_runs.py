"""Chunks read in one go: a run of whole text events is read from its bytes at once
(`TextTemplate.frames`, `OpenAIStream.feed_many`), and the answer, its deltas' text and
its errors are always what the full parse of each event gives.

The reference is the same stream fed chunk by chunk with the template switched off.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from agentik_jupyter.providers._read_ahead import merge
from agentik_jupyter.providers._text_template import TextTemplate
from agentik_jupyter.providers.base import TextDelta
from agentik_jupyter.providers.openai_compatible import OpenAIStream
from tests.providers.test_text_template import OPENAI_STREAMS, stream_frames

PIECES = [
    b'"',
    b"\\",
    b"a",
    b"n",
    b"u",
    b"d83d",
    b"de00",
    b"00e9",
    b"\n",
    b"\x01",
    b"\x7f",
    b"\xc3",
    b"\xa9",
    b"\xe2\x80\xa8",
    b"\xff",
    b"}",
    b" ",
    b"\\n",
    b'\\"',
    b"\\u00e9",
    b"\\ud83d",
    b"\\ude00",
    b"x",
]


def frame(middle: bytes) -> bytes:
    head = b'data: {"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "'
    return head + middle + b'"}, "finish_reason": null}]}\n\n'


def outcome(stream: OpenAIStream, feed: Any) -> tuple[str, Any, Any]:
    """(the text handed on, the response, the error) of one way of feeding a stream."""
    out: list[Any] = []
    try:
        feed(stream, out)
        out += stream.end()
    except Exception as exc:
        text = "".join(d.text for d in merge(out) if isinstance(d, TextDelta))
        return text, None, (type(exc).__name__, str(exc), getattr(exc, "partial", None))
    text = "".join(d.text for d in merge(out) if isinstance(d, TextDelta))
    return text, out[-1].response, None


def reference(frames: list[bytes], monkeypatch: pytest.MonkeyPatch) -> tuple[str, Any, Any]:
    with monkeypatch.context() as m:
        m.setattr(TextTemplate, "match", lambda self, data: None)
        m.setattr(TextTemplate, "frame", lambda self, chunk: None)
        m.setattr(TextTemplate, "frames", lambda self, chunks: None)
        return outcome(OpenAIStream(), lambda s, out: [s.feed(f, out) for f in frames])


def in_batches(frames: list[bytes], size: int) -> Any:
    def feed(stream: OpenAIStream, out: list[Any]) -> None:
        for i in range(0, len(frames), size):
            stream.feed_many(frames[i : i + size], out)

    return feed


def test_runs_of_frames_read_as_the_full_parse_whatever_their_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fuzz: streams of events whose text bytes are anything (quotes, escapes, halves of a
    surrogate pair or of a UTF-8 character, control bytes, bytes that are not UTF-8)."""
    rng = random.Random(14)
    runs = 0
    real = TextTemplate.frames

    def counted(self: TextTemplate, chunks: list[bytes]) -> str | None:
        nonlocal runs
        text = real(self, chunks)
        runs += text is not None
        return text

    monkeypatch.setattr(TextTemplate, "frames", counted)
    for n in range(300):
        clean = ["".join(rng.choice("abc de") for _ in range(rng.randint(1, 5))) for _ in range(rng.randint(20, 60))]
        frames = stream_frames(clean)
        for _ in range(rng.randint(0, 3)):  # a few events with odd bytes among the usual ones
            middle = b"".join(rng.choice(PIECES) for _ in range(rng.randint(1, 4)))
            frames.insert(rng.randint(1, len(frames) - 2), frame(middle))
        size = rng.choice([8, 16, 33, 1000])
        fast = outcome(OpenAIStream(), in_batches(frames, size))
        assert fast == reference(frames, monkeypatch), (n, frames)
    assert runs > 200  # runs were read at once (not all: a run with an odd event is split)


@pytest.mark.parametrize(
    "middles",
    [
        [b"\\ud83d", b"\\ude00"],  # a surrogate pair split over two events stays two halves, as parsed
        [b"caf\xc3", b"\xa9 au lait"],  # a UTF-8 character split over two events is not joined
        [b"tab\\there", b"\\\\ and \\/"],
        [b"\xe2\x80\xa8 separator", b"\x7f"],
    ],
)
def test_text_split_oddly_over_events_reads_as_the_full_parse(
    middles: list[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    frames = stream_frames(["one ", "two "] * 8)
    frames[6:6] = [frame(m) for m in middles]
    assert outcome(OpenAIStream(), in_batches(frames, 1000)) == reference(frames, monkeypatch)


def test_a_run_is_one_piece_of_bare_text() -> None:
    texts = [f"w{i} " for i in range(40)]
    stream, out = OpenAIStream(), []
    stream.feed_many(stream_frames(texts)[:-2], out)
    assert out[0] == TextDelta(text="w0 ")  # parsed: the template is learned from it
    assert len(out) <= 12 and "".join(o for o in out[1:] if isinstance(o, str)) == "".join(texts[1:])
    assert max(len(o) for o in out[1:] if isinstance(o, str)) >= 8 * len("w10 ")  # read a run at a time


def test_the_answer_limit_stops_a_run_at_the_same_event(monkeypatch: pytest.MonkeyPatch) -> None:
    frames = stream_frames(["abcd"] * 40)

    def small(feed: Any) -> Any:
        def run(stream: OpenAIStream, out: list[Any]) -> None:
            stream.limit.limit = 50
            feed(stream, out)

        return run

    fast = outcome(OpenAIStream(), small(in_batches(frames, 1000)))
    with monkeypatch.context() as m:
        for name in ("match", "frame", "frames"):
            m.setattr(TextTemplate, name, lambda self, x: None)
        slow = outcome(OpenAIStream(), small(lambda s, out: [s.feed(f, out) for f in frames]))
    assert fast == slow and fast[2] is not None and "passed 50 characters" in fast[2][1]
    assert fast[0] == "abcd" * 12 and fast[2][2].content == "abcd" * 13


def test_nothing_after_done_is_read() -> None:
    frames = [*stream_frames(["a", "b"] * 10), b"data: not json at all\n\n", *stream_frames(["zz"] * 10)]
    text, response, error = outcome(OpenAIStream(), in_batches(frames, 1000))
    assert error is None and text == "ab" * 10 == response.content


@pytest.mark.parametrize("path", OPENAI_STREAMS, ids=[p.stem for p in OPENAI_STREAMS])
@pytest.mark.parametrize("size", [8, 64, 100_000])
def test_recorded_streams_read_in_runs_as_parsed(path: Path, size: int, monkeypatch: pytest.MonkeyPatch) -> None:
    body = path.read_bytes()
    frames = [part + b"\n\n" for part in body.split(b"\n\n") if part] if b"\n\n" in body else [body]
    assert outcome(OpenAIStream(), in_batches(frames, size)) == reference(frames, monkeypatch)
