"""The answer as a stream output: first words at once, then a bounded rate, each piece once, nothing hidden."""

from __future__ import annotations

import asyncio

from agentik_jupyter.types import AppendText, ToolCall, ToolCallEvent
from agentik_jupyter.widgets.body import TurnBody
from agentik_jupyter.widgets.plain_stream import HOLD_S, RATE_HZ, PlainStream
from tests.widgets_support import FakeClock


def _stream(clock: FakeClock, *, after: bool = False) -> tuple[PlainStream, list[str]]:
    written: list[str] = []
    return PlainStream(written.append, clock=clock, after=after), written


def test_the_first_words_go_as_they_come_then_rate_hz_writes_a_second() -> None:
    clock = FakeClock()
    stream, written = _stream(clock)
    at: list[float] = []
    stream._write = lambda text: (written.append(text), at.append(clock.now))  # type: ignore[method-assign]
    stream.append("The")
    assert written == ["The"]  # (no wait for the first words)
    for _ in range(1000):  # 4 characters every 4 ms: 1,000 characters a second for 4 s
        clock.advance(0.004)
        stream.append("abcd")
    assert len("".join(written[:2])) >= 24 and at[1] <= 0.024  # the first 24 as soon as they came (at 24 ms)
    gaps = [b - a for a, b in zip(at, at[1:], strict=False)]
    assert max(gaps) <= 1 / RATE_HZ + 0.004 and RATE_HZ >= 10  # at least ten writes a second while it streams
    assert len(written) <= 4 * RATE_HZ + 8
    stream.finish()
    assert "".join(written) == "The" + "abcd" * 1000  # every piece once, in order


def test_text_that_waits_goes_out_at_the_next_write_or_the_end() -> None:
    clock = FakeClock()
    stream, written = _stream(clock)
    first = "The first words, as they come. "
    stream.append(first)
    stream.append("two ")  # (too soon after the first words: kept; no loop here to time it)
    assert written == [first]
    clock.advance(1 / RATE_HZ)
    stream.append("three")
    assert written == [first, "two three"]


def test_a_view_the_transcript_replaces_does_not_write_its_rest() -> None:
    clock = FakeClock()
    stream, written = _stream(clock)
    shown = "Shown: the first words of it. "
    stream.append(shown)
    stream.append("not needed")
    assert stream.finish(exact=False) == shown + "not needed"
    assert written == [shown]
    stream.append("late")
    assert written == [shown]


def test_a_timer_writes_what_waits_while_the_model_pauses() -> None:
    async def main() -> list[str]:
        written: list[str] = []
        stream = PlainStream(written.append)  # (the real clock, and the loop's timer)
        stream.append("The first words, as they come. ")
        stream.append("second")
        await asyncio.sleep(1.5 / RATE_HZ)
        return written

    assert asyncio.run(main()) == ["The first words, as they come. ", "second"]


def test_hidden_characters_and_escape_sequences_show_as_badges() -> None:
    stream, written = _stream(FakeClock())
    stream.append("ok \x1b[8mhidden\x1b[0m \u202eevil")
    text = "".join(written)
    assert "\x1b" not in text and "\u202e" not in text
    assert "<U+001B ESC>" in text and "<U+202E RLO>" in text and "hidden" in text


def test_a_body_with_plain_writes_its_text_segments_apart_and_keeps_cards_as_widgets() -> None:
    written: list[str] = []
    body = TurnBody(clock=FakeClock(), plain=written.append)
    body.handle(AppendText(text="Let me count."))
    body.handle(ToolCallEvent(call=ToolCall(id="c1", name="count_rows", args={})))
    body.handle(AppendText(text="There are 41."))
    body.finish()
    assert "".join(written) == "Let me count.\n\nThere are 41."
    assert body.text == "Let me count.There are 41."
    assert len(body.items) == 1 and body.streamed_plain  # (the card; no widget for the text)


def test_an_answer_read_in_a_burst_writes_nothing_one_at_its_pace_shows_after_the_hold() -> None:
    async def main() -> tuple[list[str], list[str]]:
        burst: list[str] = []
        stream = PlainStream(burst.append, hold_s=HOLD_S)
        for word in "The whole answer came in one read.".split():
            stream.append(word + " ")
        stream.finish(exact=False)  # (the turn ended: its transcript shows the answer)
        paced: list[str] = []
        stream = PlainStream(paced.append, hold_s=HOLD_S)
        stream.append("The ")
        await asyncio.sleep(2 * HOLD_S)
        return burst, paced

    burst, paced = asyncio.run(main())
    assert burst == []  # the cell's outputs are a quick turn's: nothing to clear
    assert paced == ["The "]
