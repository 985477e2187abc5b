"""Read a stream ahead of its consumer, and hand over what arrived as merged deltas.

A provider's server writes faster than Python parses: one socket read brings hundreds of
events, and httpx2 still hands them over one HTTP chunk at a time. A task collects the
chunks; when the consumer next runs (the task then waits for the network), the chunks read
meanwhile are assembled together, a run of plain text events at once (`feed_many`), and the
consumer takes the lot as one delta per kind. A fast stream costs the turn one event per read
instead of one per token. A stream at a model's pace (a token every few milliseconds) is
handed over at most HANDOVER_HZ times a second while it flows: the first words and the end at
once, the tokens in between gathered for up to 1 / HANDOVER_HZ seconds (the live view shows
at most 12 updates a second, `widgets/stream.py`; each hand-over wakes the turn, its stores
and its views). Tokens further apart than that still arrive one by one, and so does
everything in the first FREE_S after the first words, so the turn can tell an answer read in
a burst (about to end) from one that comes at a model's pace (see `TurnView`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, Protocol, Union

import httpx2

from agentik_jupyter.providers import _constants as C
from agentik_jupyter.providers._http import error_from_transport
from agentik_jupyter.providers.base import ProviderDelta, ReasoningDelta, TextDelta, ToolCallArgsDelta

HANDOVER_HZ = 20.0
"""The most hand-overs a second while a stream flows (see the module's docstring)."""
FREE_S = 0.05
"""How long after the first words every arrival is handed over at once."""

Assembled = Union[ProviderDelta, str]
"""What an assembly hands over: a delta, or a bare string of answer text (a `TextDelta` without
the cost of building one per token)."""


def _key(item: Assembled) -> Any:
    """Items with equal keys (not None) join into one delta: text, reasoning, one call's arguments."""
    kind = type(item)
    if kind is str or kind is TextDelta:
        return TextDelta
    if kind is ReasoningDelta:
        return ReasoningDelta
    if kind is ToolCallArgsDelta:
        return item.index  # type: ignore[union-attr]
    return None


def merge(batch: list[Assembled]) -> list[ProviderDelta]:
    """Neighbouring text, reasoning and same-call argument deltas joined, bare strings made
    text deltas; order kept."""
    out: list[ProviderDelta] = []
    run: list[Assembled] = []
    key: Any = None
    for item in batch:
        item_key = _key(item)
        if item_key is not None and item_key == key and type(item_key) is type(key):
            run.append(item)
            continue
        _close(out, run)
        run, key = [item], item_key
    _close(out, run)
    return out


def _close(out: list[ProviderDelta], run: list[Assembled]) -> None:
    if not run:
        return
    first = run[0]
    if len(run) == 1:
        out.append(TextDelta(text=first) if type(first) is str else first)  # type: ignore[arg-type]
        return
    text = "".join(item if type(item) is str else item.text for item in run)  # type: ignore[union-attr]
    if type(first) is str:
        out.append(TextDelta(text=text))
    else:
        out.append(first.model_copy(update={"text": text}))  # type: ignore[union-attr]


def unencoded(response: httpx2.Response) -> bool:
    """Whether the body is still to be read and comes as it is (no gzip, deflate...): its raw
    chunks are then its bytes, without `aiter_bytes`' decoder and re-chunker per chunk (~0.5 µs
    each, a thousand a turn). A body already read (a response built with its content) is not."""
    if response.is_stream_consumed:
        return False
    encodings = response.headers.get_list("content-encoding", split_commas=True)
    return all(value.strip().lower() == "identity" for value in encodings)


class StreamAssembly(Protocol):
    """One wire format's assembly of a streamed body, fed its bytes as they come."""

    @property
    def done(self) -> bool:
        """Set when the stream said it is over (the body's end is then not waited for)."""
        ...

    def feed_many(self, chunks: list[bytes], out: list[Assembled]) -> None:
        """Add to `out` the deltas (or bare text) these bytes complete, read in one go (nothing
        after the stream's end); a typed error (with the partial answer) is raised after the
        deltas before it were added."""
        ...

    def end(self) -> list[ProviderDelta]:
        """The deltas owed once the body has ended, or the error of a stream cut short."""
        ...


class ChunkFeeder(Protocol):
    """An assembly fed one chunk at a time (the fallback of `feed_many`)."""

    @property
    def done(self) -> bool: ...

    def feed(self, chunk: bytes, out: list[Any]) -> None: ...


def feed_each(stream: ChunkFeeder, chunks: list[bytes], out: list[Any]) -> None:
    """`stream.feed` each chunk in turn, none after the stream said it is over."""
    for chunk in chunks:
        if stream.done:
            return
        stream.feed(chunk, out)


async def read_ahead(response: httpx2.Response, url: str, assembly: StreamAssembly) -> AsyncIterator[ProviderDelta]:
    """The deltas of `response`'s body, read by a task of their own, merged per hand-over.

    The task only collects the body's chunks; they are assembled together when the consumer
    next runs (the task then waits for the network), or every `FEED_EVERY_CHUNKS` while the
    network keeps the task busy, so a runaway answer is stopped at its limit as it is read.
    An error is raised after the deltas that came before it; closing or cancelling the
    consumer (Stop) cancels the task, and the response is closed by whoever opened it.
    """
    chunks: list[bytes] = []
    pending: list[Assembled] = []
    arrived = asyncio.Event()
    failure: list[BaseException] = []
    body_over = False
    cut: list[BaseException] = []  # the transport error that ended the body, if one did
    loop = asyncio.get_running_loop()
    handed = float("-inf")  # when text, reasoning or a call's arguments were last handed over
    free_until = float("inf")  # the end of the first words' FREE_S
    waking: list[asyncio.Future[None]] = []  # the consumer's gathering pause, ended early by the body's end

    def wake() -> None:
        for pause in waking:
            if not pause.done():
                pause.set_result(None)
        waking.clear()

    async def gather(seconds: float) -> None:
        """Let more chunks arrive for `seconds`, unless the body ends first.

        A future and a timer: an `asyncio.Event` awaited with `wait_for` (a task per pause on
        Python 3.11) or under `asyncio.timeout` (a cancellation per pause) costs 4-8 µs more
        per pause, and neither measured as fast in `python -m bench paced_turns kernel_turns`."""
        pause = loop.create_future()
        waking.append(pause)
        timer = loop.call_later(seconds, wake)
        try:
            await pause
        finally:
            timer.cancel()

    def assemble() -> None:
        if chunks and not failure:
            batch = chunks[:]
            chunks.clear()
            try:
                assembly.feed_many(batch, pending)
            except Exception as exc:  # handed to the consumer, after what came before it
                failure.append(exc)

    async def pump() -> None:
        nonlocal body_over
        try:
            async for chunk in response.aiter_raw() if unencoded(response) else response.aiter_bytes():
                chunks.append(chunk)
                arrived.set()
                if len(chunks) >= C.FEED_EVERY_CHUNKS:
                    assemble()
                    if failure or assembly.done:
                        break
        except httpx2.HTTPError as exc:
            cut.append(error_from_transport(exc, url, in_stream=True))
        except Exception as exc:
            cut.append(exc)
        finally:
            body_over = True
            arrived.set()
            wake()

    task = loop.create_task(pump())
    try:
        while True:
            await arrived.wait()
            now = loop.time()
            soon = handed + 1 / HANDOVER_HZ - now
            if soon > 0 and now > free_until and not body_over:
                await gather(soon)
            arrived.clear()
            assemble()
            over = bool(failure) or assembly.done or body_over
            if over and not failure:
                if cut and not assembly.done:
                    failure.append(cut[0])
                else:
                    try:
                        pending.extend(assembly.end())
                    except Exception as exc:
                        failure.append(exc)
            batch, pending[:] = pending[:], []
            if any(_key(item) is not None for item in batch):  # (words, not the stream's opening)
                handed = loop.time()
                free_until = min(free_until, handed + FREE_S)
            for delta in merge(batch):
                yield delta
            if over:
                break
        if failure:
            raise failure[0]
    finally:
        task.cancel()  # nothing when it has finished
        try:
            await task
        except asyncio.CancelledError:
            if not task.cancelled():
                raise
