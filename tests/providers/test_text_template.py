"""The text template: a chunk read without `json.loads` gives exactly what the full parse gives.

The template is learned from a parsed text-only chunk and proved with a probe; a later chunk
that fits it is read from its bytes. Whatever the bytes between the template's ends, the
answer is the full parse's text or None (the chunk is then parsed), never another text.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from agentik_jupyter.errors import MalformedResponseError
from agentik_jupyter.providers import _text_template
from agentik_jupyter.providers._openai_assembly import ChatCompletionAccumulator, only_text
from agentik_jupyter.providers._read_ahead import merge
from agentik_jupyter.providers._text_template import PROBE, TextTemplate
from agentik_jupyter.providers.base import TextDelta
from agentik_jupyter.providers.openai_compatible import OpenAIStream

CORPUS = Path(__file__).parents[1] / "data" / "conformance"
OPENAI_STREAMS = sorted(
    p.with_suffix(".response")
    for p in CORPUS.glob("*.json")
    if p.name != "cases.json" and not p.name.startswith("anthropic") and json.loads(p.read_text()).get("streaming")
)


def chunk(text: str, *, ensure_ascii: bool = True, extra: str = "") -> str:
    body = {
        "id": "c1",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}],
    }
    return json.dumps(body, ensure_ascii=ensure_ascii)[:-1] + extra + "}"


def learned(data: str) -> TextTemplate:
    template = TextTemplate(only_text)
    template.learn(data, json.loads(data))
    return template


def full_parse(data: str) -> str | None:
    try:
        return only_text(json.loads(data))
    except ValueError:
        return None


@pytest.mark.parametrize(
    "text",
    [
        "The ",
        'a "quoted" word',
        "two\n\nlines",
        "tab\there",
        "back\\slash",
        "é and ü",
        "😀 emoji",
        "\u2028 separator",
        "",
        "}]},{",
    ],
)
@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_a_chunk_that_fits_reads_as_the_full_parse(text: str, ensure_ascii: bool) -> None:
    template = learned(chunk("first words"))
    data = chunk(text, ensure_ascii=ensure_ascii)
    assert template.match(data) == text == full_parse(data)


def test_nothing_matches_before_a_template_is_learned() -> None:
    assert TextTemplate(only_text).match(chunk("hi")) is None


def test_a_chunk_of_another_shape_goes_to_the_full_parse() -> None:
    template = learned(chunk("hi"))
    finish = json.dumps(
        {"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    )
    assert template.match(finish) is None
    assert template.match(chunk("hi", extra=', "usage": {"prompt_tokens": 1}')) is None
    assert template.match('{"error": {"message": "overloaded"}}') is None


def test_middles_that_break_the_string_go_to_the_full_parse() -> None:
    """A middle that ends the string early, escapes its closing quote or holds a raw control
    character is not read from the bytes."""
    template = learned(chunk("hi"))
    prefix, suffix = chunk("hi").split('"hi"')
    for middle in ['x", "role": "user', "x\\", 'a\\"', "raw\nnewline", "nul\x00", 'x"}]}, "y": {"z": "']:
        data = prefix + '"' + middle + '"' + suffix
        got = template.match(data)
        assert got is None or got == full_parse(data), middle
    assert template.match(prefix + '"x", "role": "user"' + suffix) is None


def test_random_middles_never_give_another_text() -> None:
    """Fuzz: the template gives the full parse's text or None; when the bytes are not valid
    JSON it always gives None, so the full parse raises as it did before."""
    rng = random.Random(14)
    alphabet = ['"', "\\", "a", "n", "u", "0", "d", "8", "}", "]", ",", ":", " ", "\n", "\x01", "é", "/", "t"]
    template = learned(chunk("seed"))
    prefix, suffix = chunk("seed").split('"seed"')
    for _ in range(20_000):
        middle = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))
        data = prefix + '"' + middle + '"' + suffix
        got = template.match(data)
        try:
            expected = only_text(json.loads(data))
        except ValueError:
            assert got is None, repr(middle)
            continue
        assert got is None or got == expected, repr(middle)


def test_a_text_found_twice_or_the_probe_in_the_bytes_teaches_nothing() -> None:
    twice = json.dumps({"id": "hi", "choices": [{"index": 0, "delta": {"content": "hi"}}]})
    assert learned(twice).match(twice.replace('"content": "hi"', '"content": "yo"')) is None
    probe = chunk("hi", extra=f', "x": "{PROBE}"')
    assert learned(probe).match(chunk("yo", extra=f', "x": "{PROBE}"')) is None


def test_a_duplicated_key_is_not_taken_for_the_text() -> None:
    """JSON keeps the last of two equal keys: the first one's bytes are not the text."""
    data = '{"choices": [{"index": 0, "delta": {"content": "old", "content": "new"}}]}'
    assert only_text(json.loads(data)) == "new"
    template = learned(data)
    other = data.replace('"old"', '"x"')
    assert template.match(other) in (None, "new")


def test_learning_stops_after_its_limit() -> None:
    template = TextTemplate(only_text)
    for n in range(_text_template.MAX_LEARNS + 2):
        data = chunk(f"t{n}", extra=f', "n": {n}')
        template.learn(data, json.loads(data))
    assert template.match(chunk("x", extra=f', "n": {_text_template.MAX_LEARNS + 1}')) is None
    assert template.match(chunk("x", extra=f', "n": {_text_template.MAX_LEARNS - 1}')) == "x"


def stream_frames(texts: list[str]) -> list[bytes]:
    frames = [f"data: {chunk(t)}\n\n".encode() for t in texts]
    done = {
        "id": "c1",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
    }
    return [*frames, f"data: {json.dumps(done)}\n\n".encode(), b"data: [DONE]\n\n"]


def assembled(frames: list[bytes]) -> tuple[list[object], object]:
    stream, out = OpenAIStream(), []
    for frame in frames:
        stream.feed(frame, out)
    out += stream.end()
    return out, out[-1].response  # type: ignore[attr-defined]


def test_the_stream_hands_fitting_chunks_on_as_bare_text_and_merges_them() -> None:
    texts = ["Hello", ", ", "wor", "ld", "!\n\n", '"q"']
    out, response = assembled(stream_frames(texts))
    assert [o for o in out if isinstance(o, str)] == texts[1:]  # the first one taught the template
    assert merge([o for o in out if isinstance(o, (str, TextDelta))]) == [TextDelta(text="".join(texts))]
    assert response.content == "".join(texts)


def test_a_bad_chunk_after_fitting_ones_still_fails_with_the_text_so_far() -> None:
    frames = stream_frames(["one ", "two "])[:2] + [b'data: {"choices": [{"delta": {"content": "x"\n\n']
    stream, out = OpenAIStream(), []
    with pytest.raises(MalformedResponseError) as err:
        for frame in frames:
            stream.feed(frame, out)
    assert err.value.partial.content == "one two "  # type: ignore[attr-defined]
    assert out[-1] == "two "


def test_the_answer_limit_counts_fitting_chunks() -> None:
    stream, out = OpenAIStream(), []
    stream.limit.limit = 10
    with pytest.raises(Exception, match="passed 10 characters") as err:
        for frame in stream_frames(["abcd"] * 5):
            stream.feed(frame, out)
    assert "".join(o if isinstance(o, str) else o.text for o in out) == "abcd" * 2  # type: ignore[union-attr]
    assert err.value.partial.content == "abcd" * 3  # type: ignore[attr-defined]


@pytest.mark.parametrize("path", OPENAI_STREAMS, ids=[p.stem for p in OPENAI_STREAMS])
def test_recorded_streams_assemble_as_without_the_template(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every recorded OpenAI-compatible stream gives the same deltas and response, or the same
    error, with and without the template (the full parse is the reference)."""

    def run() -> tuple[list[object], object]:
        stream, out = OpenAIStream(), []
        try:
            stream.feed(path.read_bytes(), out)
            out += stream.end()
        except Exception as exc:  # the recorded error cases
            return merge(out), (type(exc).__name__, str(exc), getattr(exc, "partial", None))
        return merge(out), None

    fast = run()
    monkeypatch.setattr(TextTemplate, "match", lambda self, data: None)
    monkeypatch.setattr(TextTemplate, "frame", lambda self, chunk: None)
    assert fast == run()


def test_a_frame_that_fits_reads_as_the_full_parse_whatever_its_bytes() -> None:
    """Fuzz on whole `data: …` frames: bytes that are not UTF-8, newlines, CRs, quotes and
    backslashes between the template's ends give the full parse's text or None."""
    rng = random.Random(9)
    template = learned(chunk("seed"))
    prefix, suffix = chunk("seed").split('"seed"')
    pieces = [b'"', b"\\", b"a", b"n", b"\n", b"\r", b"\x01", b"\xc3", b"\xa9", b"\xff", b"}", b" ", b"u00e9"]
    read = 0
    for _ in range(20_000):
        middle = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 6)))
        data = prefix.encode() + b'"' + middle + b'"' + suffix.encode()
        got = template.frame(b"data: " + data + b"\n\n")
        if got is None:
            continue
        read += 1
        assert b"\n" not in middle and b"\r" not in middle
        assert got == only_text(json.loads(data.decode())), middle
    assert read > 1_000  # the usual frames were read from their bytes


def test_a_template_with_a_newline_reads_no_frames() -> None:
    data = '{"choices": [{"index": 0,\n "delta": {"content": "hi"}}]}'
    template = learned(data)
    assert template.match(data.replace('"hi"', '"yo"')) == "yo"
    assert template.frame(f"data: {data.replace('hi', 'yo')}\n\n".encode()) is None


def test_the_stream_cut_anywhere_gives_the_same_answer() -> None:
    """Chunks that are not whole events (a frame cut in two, two frames in one) go through the
    decoders, and the answer is the same."""
    texts = ["Hel", "lo ", "wé", "rld", ' "q" ', "\\n", "end"]
    body = b"".join(stream_frames(texts))
    whole = assembled([body])[1]
    for at in range(1, len(body), 7):
        out, response = assembled([body[:at], body[at:]])
        assert response == whole and response.content == "".join(texts), at


def test_the_accumulator_keeps_the_text_it_was_handed() -> None:
    acc = ChatCompletionAccumulator()
    assert acc.add_text("ab") is True
    assert acc.add_text("") is False
    assert acc.snapshot().content == "ab"
