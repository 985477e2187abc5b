"""The async facade: off the event loop, in order, and cancellation-proof."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import pytest

from agentik_jupyter.persistence import AsyncSessionDB, ConversationNotFoundError
from agentik_jupyter.types import AssistantMessage, ChatMessage, ErrorRecord, ToolCall, ToolCallRecord, UserMessage


@pytest.fixture
async def adb(tmp_path: Path) -> AsyncSessionDB:
    store = await AsyncSessionDB.open(tmp_path / "nb.agentik.db")
    yield store
    await store.aclose()


def hold_write_lock(path: Path) -> sqlite3.Connection:
    """Another process's writer, as far as SQLite can tell: it holds the write lock until commit."""
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    return other


async def test_round_trip_through_the_facade(adb: AsyncSessionDB) -> None:
    conv = await adb.create_conversation()
    user = ChatMessage(role="user", content="q")
    turn = await adb.begin_turn(conv.id, UserMessage(id=user.id, content="q"))
    await adb.append(conv.id, turn, AssistantMessage(content="a"))
    await adb.commit_turn(conv.id, turn, [user, ChatMessage(role="assistant", content="a")])
    assert [m.content for m in await adb.working_memory(conv.id)] == ["q", "a"]
    assert len((await adb.audit_log(conv.id)).entries) == 2
    assert (await adb.latest_conversation()).id == conv.id
    assert [c.id for c in await adb.list_conversations()] == [conv.id]
    assert (await adb.rename_conversation(conv.id, "t")).title == "t"
    assert (await adb.get_conversation(conv.id)).message_count == 2
    await adb.fail_turn(conv.id, turn, "x", "code")
    await adb.interrupt_turn(conv.id, await adb.begin_turn(conv.id, UserMessage(content="q2")), [])
    assert await adb.delete_conversation(conv.id)
    with pytest.raises(ConversationNotFoundError):
        await adb.get_conversation(conv.id)
    assert adb.path.name == "nb.agentik.db"


async def test_a_turn_begins_with_the_history_before_its_question(adb: AsyncSessionDB) -> None:
    conv = await adb.create_conversation()
    history, first = await adb.begin_turn_after_history(conv.id, UserMessage(content="q1"))
    assert history == []
    user = (await adb.working_memory(conv.id))[0]
    await adb.commit_turn(conv.id, first, [user, ChatMessage(role="assistant", content="a1")])
    history, second = await adb.begin_turn_after_history(conv.id, UserMessage(content="q2"))
    assert [m.content for m in history] == ["q1", "a1"] and second != first
    assert [m.content for m in await adb.working_memory(conv.id)] == ["q1", "a1", "q2"]
    with pytest.raises(ConversationNotFoundError):
        await adb.begin_turn_after_history("no-such-conversation", UserMessage(content="q"))


async def test_event_loop_stays_free_while_sqlite_waits(adb: AsyncSessionDB) -> None:
    conv = await adb.create_conversation()
    other = hold_write_lock(adb.path)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticking = asyncio.create_task(ticker())
    write = asyncio.create_task(adb.begin_turn(conv.id, UserMessage(content="q")))
    await asyncio.sleep(0.5)
    assert not write.done()
    other.execute("COMMIT")
    other.close()
    await write
    ticking.cancel()
    assert ticks >= 10  # a blocked loop would not have ticked at all


async def test_cancelled_write_still_lands(adb: AsyncSessionDB) -> None:
    conv = await adb.create_conversation()
    turn = await adb.begin_turn(conv.id, UserMessage(content="q"))
    other = hold_write_lock(adb.path)
    record = AssistantMessage(content="the answer that was being saved")
    task = asyncio.create_task(adb.append(conv.id, turn, record))
    await asyncio.sleep(0.2)  # the write has started and is waiting for the lock
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    other.execute("COMMIT")
    other.close()
    await adb.drain()
    assert [e.record for e in (await adb.audit_log(conv.id)).entries][-1] == record


async def test_interrupt_after_cancel_lands_after_the_pending_write(adb: AsyncSessionDB) -> None:
    """Stop pressed while a tool call is being saved: the call row still comes before the marker."""
    conv = await adb.create_conversation()
    user = ChatMessage(role="user", content="q")
    turn = await adb.begin_turn(conv.id, UserMessage(id=user.id, content="q"))
    call = ToolCall(id="c1", name="slow")
    other = hold_write_lock(adb.path)

    async def the_turn() -> None:
        try:
            await adb.append(conv.id, turn, AssistantMessage(tool_calls=[call]))
            await adb.append(conv.id, turn, ToolCallRecord(call=call))
        except asyncio.CancelledError:
            await adb.interrupt_turn(conv.id, turn, [user])
            raise

    task = asyncio.create_task(the_turn())
    await asyncio.sleep(0.2)
    task.cancel()
    await asyncio.sleep(0.05)
    other.execute("COMMIT")
    other.close()
    with pytest.raises(asyncio.CancelledError):
        await task
    kinds = [(e.record.kind, getattr(e.record, "code", None)) for e in (await adb.audit_log(conv.id)).entries]
    assert kinds == [("user", None), ("assistant", None), ("error", "interrupted")]
    assert [(m.role, m.content) for m in await adb.working_memory(conv.id)] == [("user", "q")]  # the question only


async def test_calls_run_in_the_order_they_were_made(adb: AsyncSessionDB) -> None:
    conv = await adb.create_conversation()
    turn = await adb.begin_turn(conv.id, UserMessage(content="q"))
    tasks = [asyncio.create_task(adb.append(conv.id, turn, ErrorRecord(message=str(i)))) for i in range(20)]
    await asyncio.sleep(0)  # every call has been made (a task cancelled before it ran made none)
    for task in tasks[::3]:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await adb.drain()
    messages = [e.record.message for e in (await adb.audit_log(conv.id)).entries[1:]]
    assert messages == [str(i) for i in range(20)]


async def test_failed_orphan_write_is_logged(adb: AsyncSessionDB, caplog: pytest.LogCaptureFixture) -> None:
    other = hold_write_lock(adb.path)
    task = asyncio.create_task(adb.begin_turn("conv_missing", UserMessage(content="q")))
    await asyncio.sleep(0.1)
    task.cancel()
    other.execute("COMMIT")
    other.close()
    await adb.drain()
    await asyncio.sleep(0)
    assert "after its turn was cancelled" in caplog.text


async def test_aclose_waits_for_pending_writes(tmp_path: Path) -> None:
    adb = await AsyncSessionDB.open(tmp_path / "x.agentik.db")
    conv = await adb.create_conversation()
    started = time.monotonic()
    pending = [asyncio.create_task(adb.fail_turn(conv.id, None, str(i))) for i in range(5)]
    await asyncio.sleep(0)
    await adb.aclose()
    assert all(t.done() for t in pending) and time.monotonic() - started < 10
    await asyncio.to_thread(lambda: None)
    reopened = await AsyncSessionDB.open(tmp_path / "x.agentik.db")
    assert len((await reopened.audit_log(conv.id)).entries) == 5
    await reopened.aclose()


class TripCounter:
    """Counts the facade's trips to its worker thread (the real trip still runs)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from agentik_jupyter.persistence import async_session

        self.trips = 0
        real = async_session._in_thread

        def counted(loop, fn, *args):  # type: ignore[no-untyped-def]
            self.trips += 1
            return real(loop, fn, *args)

        monkeypatch.setattr(async_session, "_in_thread", counted)


async def test_calls_made_while_the_worker_is_busy_go_together_in_order(
    adb: AsyncSessionDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call waits in a queue while the worker runs; the queued ones share the next trip."""
    import threading

    counter = TripCounter(monkeypatch)
    release, ran = threading.Event(), []

    def slow() -> str:
        release.wait(5)
        ran.append("slow")
        return "slow"

    def fails() -> None:
        ran.append("fails")
        raise ValueError("this one")

    first = adb.submit(slow)
    await asyncio.sleep(0.05)  # the worker runs `slow` now
    later = [adb.submit(ran.append, "b"), adb.submit(fails), adb.submit(lambda: ran.append("d") or "d")]
    release.set()
    assert await first == "slow"
    results = await asyncio.gather(*later, return_exceptions=True)
    assert ran == ["slow", "b", "fails", "d"]
    assert results[0] is None and isinstance(results[1], ValueError) and results[2] == "d"
    assert counter.trips == 2


async def test_a_records_write_and_the_commit_after_it_take_one_trip(
    adb: AsyncSessionDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    conv = await adb.create_conversation()
    user = ChatMessage(role="user", content="q")
    turn = await adb.begin_turn(conv.id, UserMessage(id=user.id, content="q"))
    counter = TripCounter(monkeypatch)
    answer = AssistantMessage(content="a")
    written = adb.append_soon(conv.id, turn, answer)  # as the write-through does
    await adb.commit_turn(conv.id, turn, [user, ChatMessage(id=answer.id, role="assistant", content="a")])
    assert written.done() and counter.trips == 1
    assert [e.record.kind for e in (await adb.audit_log(conv.id)).entries] == ["user", "assistant"]


def test_facade_mirrors_every_store_method() -> None:
    from agentik_jupyter.persistence import SessionDB

    public = {name for name in vars(SessionDB) if not name.startswith("_") and callable(getattr(SessionDB, name))}
    public -= {"close"}  # aclose on the facade
    assert all(asyncio.iscoroutinefunction(getattr(AsyncSessionDB, name)) for name in public)
