"""The scrubber for text that arrives in pieces: a model's answer streamed as deltas.

Scrubbing each delta alone misses a key split across two of them (`sk-abc` + `def…`), and a
piece of a secret is masked only when its whole run of characters is known (`pieces.py`).
`StreamScrubber` lets through, scrubbed, the longest start of what it received that no later
text can change: it ends before anything that could still begin a whole form of a secret, never
inside a form's occurrence, and never inside a run of the characters secrets are made of
(ordinary words end at the next space). What it lets through, joined with `finish()`, is exactly
`scrub()` of the whole text, so the live view and the stored answer agree. The secrets are read
once, when the stream starts.
"""

from __future__ import annotations

from collections.abc import Mapping

from .scrub import current_secrets, masks_for


class StreamScrubber:
    """Feed deltas to `push`, show what it returns; `finish()` returns the held-back rest."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._masks = masks_for(current_secrets(environ))
        forms = self._masks.names
        self._longest = max((len(form) for form in forms), default=0)
        self._by_first: dict[str, list[str]] = {}
        for form in forms:
            self._by_first.setdefault(form[0], []).append(form)
        self._alphabet = self._masks.pieces.alphabet
        self._alphabet_text = self._masks.pieces.alphabet_text
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
        no form that more text could complete begins before it, no form's occurrence and no run
        straddles it."""
        end = len(buffer)
        cut = self._possible_start(buffer, max(end - self._longest + 1, 0))
        while cut > 0:
            if self._inside_run(buffer, cut):
                cut = len(buffer[:cut].rstrip(self._alphabet_text))
                continue
            start = self._straddling(buffer, cut)
            if start is None:
                return cut
            cut = start
        return 0

    def _inside_run(self, buffer: str, cut: int) -> bool:
        """Whether `cut` splits a run of secret characters (at the end: the run may go on)."""
        alphabet = self._alphabet
        return buffer[cut - 1] in alphabet and (cut == len(buffer) or buffer[cut] in alphabet)

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
