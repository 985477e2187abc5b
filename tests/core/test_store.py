"""The session-shell store scenarios, in Python."""

from __future__ import annotations

from agentik_jupyter.core.store import AgentStore, ChatStore
from agentik_jupyter.types import AgentContext, ChatMessage


def test_message_lifecycle() -> None:
    store = ChatStore()
    seen: list[int] = []
    unsubscribe = store.subscribe(lambda s: seen.append(len(s.messages)))
    store.add_message(ChatMessage(role="user", content="hello"))
    store.add_message(ChatMessage(role="assistant", content="hi"))
    assert [m.content for m in store.messages] == ["hello", "hi"]
    assert seen == [1, 2]
    unsubscribe()
    store.clear_messages()
    assert store.messages == () and seen == [1, 2]


def test_error_persists_until_cleared_and_stops_loading() -> None:
    store = ChatStore()
    store.set_loading(True)
    store.set_error("LLM provider error")
    assert store.error == "LLM provider error" and store.loading is False
    store.add_message(ChatMessage(role="user", content="again"))
    assert store.error == "LLM provider error"
    store.set_error(None)
    assert store.error is None


def test_tool_execution_tracking_and_reset() -> None:
    store = AgentStore()
    statuses: list[tuple[str, str | None]] = []
    store.subscribe(lambda s: statuses.append((s.status, s.active_tool)))
    store.set_active_tool("echo_context")
    store.set_status("processing")
    assert (store.status, store.active_tool) == ("processing", "echo_context")
    store.reset()
    assert (store.status, store.active_tool) == ("idle", None)
    assert statuses[-1] == ("idle", None)


def test_context_is_kept_across_reset() -> None:
    store = AgentStore()
    ctx = AgentContext(notebook_path="/x/a.ipynb", execution_count=4)
    store.set_context(ctx)
    store.reset()
    assert store.context == ctx


def test_persist_hook_sees_messages_before_listeners() -> None:
    store = ChatStore()
    order: list[str] = []
    store.add_persist_hook(lambda m: order.append(f"persist:{m.content}"))
    store.subscribe(lambda s: order.append(f"listen:{len(s.messages)}"))
    store.add_message(ChatMessage(role="user", content="q"))
    assert order == ["persist:q", "listen:1"]


def test_failing_listener_does_not_break_the_store() -> None:
    store = ChatStore()

    def bad(_: object) -> None:
        raise RuntimeError("widget gone")

    store.subscribe(bad)
    store.add_message(ChatMessage(role="user", content="q"))
    assert len(store.messages) == 1
