"""The scrubber for text that arrives in pieces: a model's answer streamed as deltas.

Scrubbing each delta alone misses a key split across two of them (`sk-abc` + `def…`).
`StreamScrubber` keeps back the end of what it received as long as it could still be the
start of a secret (at most the longest masked form minus one character), and lets the rest
through scrubbed. What it lets through, joined with `finish()`, is exactly `scrub()` of the
whole text, so the live view and the stored answer agree. The secrets are read once, when
the stream starts.
"""

from __future__ import annotations

from collections.abc import Mapping

from .scrub import current_secrets, mask, secret_patterns


class StreamScrubber:
    """Feed deltas to `push`, show what it returns; `finish()` returns the held-back rest."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._pattern, self._names = secret_patterns(current_secrets(environ))
        self._hold = max((len(form) for form in self._names), default=1) - 1
        self._by_first: dict[str, list[str]] = {}
        for form in self._names:
            self._by_first.setdefault(form[0], []).append(form)
        self._buffer = ""

    @property
    def held(self) -> int:
        """Characters received but not yet let through."""
        return len(self._buffer)

    def push(self, text: str) -> str:
        """The part of everything received so far that can be shown now, scrubbed."""
        if self._pattern is None:
            return text
        buffer = self._buffer + text
        final = len(buffer) - self._hold  # a match starting before here is complete and decided
        out: list[str] = []
        pos = 0
        for match in self._pattern.finditer(buffer):
            if match.start() >= final:
                break
            out.append(buffer[pos : match.start()])
            out.append(mask(self._names[match.group(0)]))
            pos = match.end()
        cut = self._possible_start(buffer, max(pos, final))
        out.append(buffer[pos:cut])
        self._buffer = buffer[cut:]
        return "".join(out)

    def finish(self) -> str:
        """Everything still held, scrubbed: the stream has ended, nothing more can complete it."""
        rest, self._buffer = self._buffer, ""
        if self._pattern is None or not rest:
            return rest
        return self._pattern.sub(lambda m: mask(self._names[m.group(0)]), rest)

    def _possible_start(self, buffer: str, start: int) -> int:
        """The first position from `start` where a secret's form could begin (given more text)."""
        end = len(buffer)
        for position in range(max(start, 0), end):
            for form in self._by_first.get(buffer[position], ()):
                size = min(len(form), end - position)
                if buffer.startswith(form[:size], position):
                    return position
        return end


__all__ = ["StreamScrubber"]
