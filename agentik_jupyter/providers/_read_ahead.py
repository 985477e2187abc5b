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
from typing import AsyncIterator

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


async def read_ahead(source: AsyncIterator[ProviderDelta]) -> AsyncIterator[ProviderDelta]:
    """`source`'s deltas, read by a task of their own and merged per hand-over.

    An error of `source` is raised after the deltas that came before it; closing or
    cancelling the consumer (Stop) cancels the task, which closes `source` (and its
    response) in the task that opened it.
    """
    pending: list[ProviderDelta] = []
    arrived = asyncio.Event()
    failure: list[BaseException] = []
    finished = False

    async def pump() -> None:
        nonlocal finished
        try:
            async for delta in source:
                pending.append(delta)
                arrived.set()
        except Exception as exc:  # handed to the consumer, after what came before it
            failure.append(exc)
        finally:
            finished = True
            arrived.set()
            await source.aclose()  # type: ignore[attr-defined]

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
