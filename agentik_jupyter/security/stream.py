"""The scrubber for text that arrives in pieces: a model's answer streamed as deltas.

Scrubbing each delta alone misses a key split across two of them (`sk-abc` + `def…`), and a
piece of a secret (`pieces.py`) is masked from where it starts to where it ends, which may be
in a later delta. `StreamScrubber` lets through, scrubbed, the longest start of what it received
that no later text can change: it ends before anything that could still begin a whole form of
a secret or a piece (the longest end of the text that is part of a secret: usually a character
or two), and never inside a form or a piece already there. What it lets through, joined with
`finish()`, is exactly `scrub()` of the whole text, so the live view and the stored answer
agree. The secrets are read once, when the stream starts.
"""

from __future__ import annotations

from collections.abc import Mapping

from agentik_jupyter.security.scrub import current_secrets, masks_for


class StreamScrubber:
    """Feed deltas to `push`, show what it returns; `finish()` returns the held-back rest."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._masks = masks_for(current_secrets(environ))
        forms = self._masks.names
        self._longest = max((len(form) for form in forms), default=0)
        self._by_first: dict[str, list[str]] = {}
        for form in forms:
            self._by_first.setdefault(form[0], []).append(form)
        self._active = bool(forms) or bool(self._masks.pieces)
        self._buffer = ""

    @property
    def held(self) -> int:
        """Characters received but not yet let through."""
        return len(self._buffer)

    def push(self, text: str) -> str:
        """The part of everything received so far that can be shown now, scrubbed."""
        if not self._active:
            return text
        buffer = self._buffer + text
        cut = self._safe_cut(buffer)
        self._buffer = buffer[cut:]
        return self._masks.apply(buffer[:cut])

    def finish(self) -> str:
        """Everything still held, scrubbed: the stream has ended, nothing more can complete it."""
        rest, self._buffer = self._buffer, ""
        return self._masks.apply(rest) if rest else rest

    def _safe_cut(self, buffer: str) -> int:
        """The largest position where `scrub(buffer[:cut] + anything)` starts with `scrub(buffer[:cut])`:
        no form or piece that more text could complete begins before it, and no form's
        occurrence or piece found in `buffer` straddles it."""
        pieces = self._masks.pieces
        cut = self._possible_start(buffer, max(len(buffer) - self._longest + 1, 0))
        spans = []
        if pieces:
            cut = min(cut, pieces.open_end(buffer))
            spans = pieces.spans(buffer)
        while cut > 0:
            start = self._straddling(buffer, cut)
            if start is None:
                start = next((s for s, e, _ in spans if s < cut < e), None)
            if start is None:
                return cut
            cut = start
        return 0

    def _straddling(self, buffer: str, cut: int) -> int | None:
        """The start of the first whole form found in `buffer` that begins before `cut` and ends after it."""
        for position in range(max(cut - self._longest + 1, 0), cut):
            for form in self._by_first.get(buffer[position], ()):
                if position + len(form) > cut and buffer.startswith(form, position):
                    return position
        return None

    def _possible_start(self, buffer: str, start: int) -> int:
        """The first position from `start` where a secret's form could begin, given more text.

        A form that is there whole is decided unless a longer one could still match at its start."""
        end = len(buffer)
        for position in range(start, end):
            for form in self._by_first.get(buffer[position], ()):
                if len(form) > end - position and form.startswith(buffer[position:]):
                    return position
        return end


__all__ = ["StreamScrubber"]
