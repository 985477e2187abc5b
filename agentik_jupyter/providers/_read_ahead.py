"""Read a stream ahead of its consumer, and hand over what arrived as merged deltas.

A provider's server writes faster than Python parses: one socket read brings hundreds of
events, and httpx2 still hands them over one HTTP chunk at a time. Parsing them is cheap
next to what each delta costs further on (the orchestrator's events, the stores, the
view), so a task parses everything already received and the consumer takes the lot as
one delta per kind when it next runs. The task yields to the loop only where a read
must wait for the network, so nothing is held back: a slow stream still arrives token
by token, and a fast one costs the turn one event per read instead of one per token.
"""

from __future__ import annotations

import asyncio
from typing import AsyncIterator, Protocol

import httpx2

from ._http import error_from_transport
from .base import ProviderDelta, ReasoningDelta, TextDelta, ToolCallArgsDelta


def merge(batch: list[ProviderDelta]) -> list[ProviderDelta]:
    """Neighbouring text, reasoning and same-call argument deltas joined; order kept."""
    out: list[ProviderDelta] = []
    parts: list[str] = []
    for delta in batch:
        last = out[-1] if out else None
        if (
            last is not None
            and type(delta) is type(last)
            and (
                type(delta) in (TextDelta, ReasoningDelta)
                or (type(delta) is ToolCallArgsDelta and delta.index == last.index)  # type: ignore[attr-defined]
            )
        ):
            parts.append(delta.text)  # type: ignore[union-attr]
            continue
        _join(out, parts)
        out.append(delta)
        parts = [delta.text] if type(delta) in (TextDelta, ReasoningDelta, ToolCallArgsDelta) else []  # type: ignore[union-attr]
    _join(out, parts)
    return out


def _join(out: list[ProviderDelta], parts: list[str]) -> None:
    if len(parts) > 1:
        out[-1] = out[-1].model_copy(update={"text": "".join(parts)})


class StreamAssembly(Protocol):
    """One wire format's assembly of a streamed body, fed its bytes as they come."""

    done: bool
    """Set when the stream said it is over (the body's end is then not waited for)."""

    def feed(self, chunk: bytes, out: list[ProviderDelta]) -> None:
        """Add to `out` the deltas these bytes complete; a typed error (with the partial answer)
        is raised after the deltas before it were added."""
        ...

    def end(self) -> list[ProviderDelta]:
        """The deltas owed once the body has ended, or the error of a stream cut short."""
        ...


async def read_ahead(response: httpx2.Response, url: str, assembly: StreamAssembly) -> AsyncIterator[ProviderDelta]:
    """The deltas of `response`'s body, read and assembled by a task of their own, merged per hand-over.

    The task iterates the body itself (no generator between the bytes and the assembly). An
    error is raised after the deltas that came before it; closing or cancelling the consumer
    (Stop) cancels the task, and the response is closed by whoever opened it.
    """
    pending: list[ProviderDelta] = []
    arrived = asyncio.Event()
    failure: list[BaseException] = []
    finished = False

    async def pump() -> None:
        nonlocal finished
        try:
            async for chunk in response.aiter_bytes():
                assembly.feed(chunk, pending)
                if pending:
                    arrived.set()
                if assembly.done:
                    break
            pending.extend(assembly.end())
        except httpx2.HTTPError as exc:
            failure.append(error_from_transport(exc, url, in_stream=True))
        except Exception as exc:  # handed to the consumer, after what came before it
            failure.append(exc)
        finally:
            finished = True
            arrived.set()

    task = asyncio.get_running_loop().create_task(pump())
    try:
        while True:
            await arrived.wait()
            arrived.clear()
            batch, pending[:] = pending[:], []
            for delta in merge(batch) if len(batch) > 1 else batch:
                yield delta
            if finished and not pending:
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
