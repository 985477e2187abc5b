"""The chat route parses a body once: `load_body` turns bytes into JSON (the one place nesting is
checked), `normalise` takes that parsed JSON, and `parse_request` validates it without parsing again."""

from __future__ import annotations

import json

import pytest

from agentik_jupyter.core.chat_route import load_body, parse_request
from agentik_jupyter.errors import ChatRouteError
from agentik_jupyter.server.sse import normalise

CALL = {"id": "c1", "name": "row_count", "args": {"table": "a"}}


def test_normalise_takes_parsed_json_and_accepts_camel_case_tool_calls() -> None:
    raw = json.dumps(
        {"messages": [{"role": "user", "content": "rows?"}, {"role": "assistant", "content": "", "toolCalls": [CALL]}]}
    )
    request = parse_request(normalise(load_body(raw)), environ={})
    assert request.messages[1].tool_calls is not None and request.messages[1].tool_calls[0].name == "row_count"


def test_normalise_leaves_snake_case_alone_and_other_shapes_as_they_are() -> None:
    both = {"messages": [{"role": "assistant", "tool_calls": [CALL], "toolCalls": []}]}
    assert normalise(both) == both  # both spellings: the validator names the stray one
    for other in (None, [], "text", {"messages": "no list"}):
        assert normalise(other) == other


def test_bytes_are_checked_for_nesting_where_they_are_parsed() -> None:
    deep = '{"messages": []' + ', "context": ' + "[" * 100 + "]" * 100 + "}"
    for call in (lambda: load_body(deep), lambda: parse_request(deep, environ={})):
        with pytest.raises(ChatRouteError) as info:
            call()
        assert info.value.status == 400 and "nested" in info.value.body["message"]
