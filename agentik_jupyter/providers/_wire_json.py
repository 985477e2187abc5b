"""A request body's JSON with the history's messages serialised once, not at every request.

Every request carries the whole conversation: late in a session that is hundreds of
kilobytes of JSON, encoded again for each model call of each turn (twice in a turn with a
tool call) while only its last messages are new. `WireJSON` keeps the JSON of each flat wire
message (all its values strings: the usual question, answer and tool result) of the last
request and reuses it when the same message comes again. The bytes are exactly what httpx2's
`json=` gives for the same body.
"""

from __future__ import annotations

import json
from typing import Any

MessageKey = tuple[tuple[str, str], ...]


def dumps(value: Any) -> str:
    """JSON as httpx2 writes a `json=` body: no spaces, UTF-8 kept, no NaN."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


class WireJSON:
    """The serialised wire messages of the last request, reused by the next one."""

    def __init__(self) -> None:
        self._json: dict[MessageKey, str] = {}

    def messages(self, wire: list[dict[str, Any]]) -> str:
        """`dumps(wire)`, the messages seen in the last request taken from it.

        A message is keyed by its items, so one that changed is a new key; only the messages
        of this request are kept, so the cache holds at most one history."""
        previous = self._json
        kept: dict[MessageKey, str] = {}
        parts: list[str] = []
        for item in wire:
            key: MessageKey = tuple(item.items())
            try:
                text = previous.get(key)  # equal to a kept key: all its values the same strings
            except TypeError:  # a list or an object in it (tool calls, images): not kept
                parts.append(dumps(item))
                continue
            if text is None:
                text = dumps(item)
                if any(type(value) is not str for value in item.values()):
                    parts.append(text)
                    continue
            kept[key] = text
            parts.append(text)
        self._json = kept
        return "[" + ",".join(parts) + "]"

    def body(self, body: dict[str, Any]) -> bytes:
        """`body` (its first keys `model` and `messages`) as the bytes httpx2's `json=` sends."""
        keys = list(body)
        if keys[:2] != ["model", "messages"] or len(keys) < 3:
            return dumps(body).encode("utf-8")
        rest = {key: body[key] for key in keys[2:]}
        head = dumps({"model": body["model"]})[:-1]
        return f'{head},"messages":{self.messages(body["messages"])},{dumps(rest)[1:]}'.encode()
