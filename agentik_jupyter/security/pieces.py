"""Pieces of a secret: any PIECE_CHARS-long part of one is masked, not only the whole value.

A bounded view cuts long values (a repr's head and tail, a table cell's first characters), and a
cut copy no longer matches the whole secret; the head of one copy and the tail of another can
rebuild it. So every run of PIECE_CHARS or more characters that is part of a known secret is
masked wherever it stands.

Kept cheap because it runs on every answer and tool output: one regex finds the runs of
characters that occur in the secrets (ordinary words are mostly shorter than PIECE_CHARS), and
inside a run only every GRAM-th position is looked up in a dict of the secrets' GRAM-grams.
Since 2 * GRAM - 1 <= PIECE_CHARS, every piece holds a gram that starts at one of those
positions; a hit is then grown both ways against the secret it came from.
"""

from __future__ import annotations

import re
from typing import Callable, Iterable

PIECE_CHARS = 12
"""The shortest part of a secret that is masked on its own."""
GRAM = 6
"""Look-up stride and key length; 2 * GRAM - 1 <= PIECE_CHARS."""
_SEPARATORS = re.compile(r"[\s\[\]]+")
"""Sources are cut here: a piece never holds whitespace or brackets, so a mask (`[hidden: X]`) and a
line break always end a run, and a streamed answer's words are let through as they arrive."""

Span = tuple[int, int, str]
Masker = Callable[[str], str]


def piece_sources(value: str) -> list[str]:
    """The parts of `value` (split at whitespace and brackets) long enough to have pieces."""
    return [part for part in _SEPARATORS.split(value) if len(part) >= PIECE_CHARS]


class PieceIndex:
    """Finds the pieces of a set of named sources in a text."""

    def __init__(self, sources: Iterable[tuple[str, str]]) -> None:
        self._sources: list[str] = []
        self._names: list[str] = []
        self._grams: dict[str, list[tuple[int, int]]] = {}
        alphabet: set[str] = set()
        for name, source in sources:
            if len(source) < PIECE_CHARS or source in self._sources:
                continue
            index = len(self._sources)
            self._sources.append(source)
            self._names.append(name)
            alphabet.update(source)
            for offset in range(len(source) - GRAM + 1):
                self._grams.setdefault(source[offset : offset + GRAM], []).append((index, offset))
        self.alphabet = frozenset(alphabet)
        """Every character a piece can hold (never whitespace or a bracket)."""
        self.alphabet_text = "".join(sorted(alphabet))
        chars = "".join(re.escape(c) for c in self.alphabet_text)
        self._runs = re.compile(f"[{chars}]{{{PIECE_CHARS},}}") if chars else None

    def __bool__(self) -> bool:
        return bool(self._sources)

    def spans(self, text: str) -> list[Span]:
        """(start, end, name) of the pieces in `text`, merged where they touch, in order."""
        found: list[Span] = []
        grams, sources = self._grams, self._sources
        if self._runs is None:
            return found
        for run in self._runs.finditer(text):
            start, end = run.span()
            covered = start
            for q in range(start, end - GRAM + 1, GRAM):
                if q + GRAM <= covered:
                    continue  # inside a piece already found: any piece through here touches it
                hits = grams.get(text[q : q + GRAM])
                if not hits:
                    continue
                for index, offset in hits:
                    source = sources[index]
                    left = 0
                    while q - left > start and offset - left > 0 and text[q - left - 1] == source[offset - left - 1]:
                        left += 1
                    right = GRAM
                    while q + right < end and offset + right < len(source) and text[q + right] == source[offset + right]:
                        right += 1
                    if left + right >= PIECE_CHARS:
                        found.append((q - left, q + right, self._names[index]))
                        covered = max(covered, q + right)
        return _merged(found)

    def mask(self, text: str, mask: Masker) -> str:
        """`text` with each piece replaced by `mask(name)`."""
        if not self._sources or len(text) < PIECE_CHARS:
            return text
        spans = self.spans(text)
        if not spans:
            return text
        out: list[str] = []
        pos = 0
        for start, end, name in spans:
            out.append(text[pos:start])
            out.append(mask(name))
            pos = end
        out.append(text[pos:])
        return "".join(out)


def _merged(spans: list[Span]) -> list[Span]:
    """Overlapping or touching spans as one (named after the first)."""
    if len(spans) < 2:
        return spans
    spans.sort()
    out = [spans[0]]
    for start, end, name in spans[1:]:
        last_start, last_end, last_name = out[-1]
        if start <= last_end:
            out[-1] = (last_start, max(last_end, end), last_name)
        else:
            out.append((start, end, name))
    return out
