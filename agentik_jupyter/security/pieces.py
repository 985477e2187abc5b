"""Pieces of a secret: any PIECE_CHARS-long part of one is masked, not only the whole value.

A bounded view cuts long values (a repr's head and tail, a table cell's first characters), and a
cut copy no longer matches the whole secret; the head of one copy and the tail of another can
rebuild it. So every run of PIECE_CHARS or more characters that is part of a known secret is
masked wherever it stands.

Kept cheap because it runs on every answer and tool output. Since 2 * GRAM - 1 <= PIECE_CHARS,
every piece holds a GRAM-gram that starts at a multiple of GRAM; those grams of the text
(len / GRAM short slices, `aligned_grams`) are intersected with the secrets' grams in one set
operation. Usually that is empty and the text is done (the scrubber tests whole forms of
PIECE_CHARS or more the same way, with the same grams). Otherwise each occurrence of a shared gram is grown both ways
along the secret it came from; every maximal match of PIECE_CHARS or more is masked. Which
matches are found does not depend on where the text starts, so a streamed answer masked in
parts is masked as the whole is (stream.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

PIECE_CHARS = 12
"""The shortest part of a secret that is masked on its own."""
GRAM = 6
"""Look-up stride and key length; 2 * GRAM - 1 <= PIECE_CHARS."""
_SEPARATORS = re.compile(r"[\s\[\]]+")
"""Sources are cut here: a piece never holds whitespace or brackets, so a mask (`[hidden: X]`) and a
line break always end one, and a streamed answer's words are let through as they arrive."""

Span = tuple[int, int, str]
Masker = Callable[[str], str]


def aligned_grams(text: str) -> set[str]:
    """The text's GRAM-grams that start at multiples of GRAM: every stretch of PIECE_CHARS or
    more characters holds one of them, wherever it starts."""
    return set([text[q : q + GRAM] for q in range(0, len(text) - GRAM + 1, GRAM)])


def grams_of(strings: Iterable[str]) -> frozenset[str]:
    """Every GRAM-gram of `strings`."""
    return frozenset(s[i : i + GRAM] for s in strings for i in range(len(s) - GRAM + 1))


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
        self._gram_set = frozenset(self._grams)
        self._joined = "\n".join(self._sources)
        self.alphabet = frozenset(alphabet)
        """Every character a piece can hold (never whitespace or a bracket)."""

    def __bool__(self) -> bool:
        return bool(self._sources)

    def spans(self, text: str, grams: set[str] | None = None) -> list[Span]:
        """(start, end, name) of the pieces in `text`, merged where they overlap, in order.
        `grams` are the text's aligned grams when the caller has them already."""
        if not self._sources or len(text) < PIECE_CHARS:
            return []
        shared = self._gram_set.intersection(aligned_grams(text) if grams is None else grams)
        if not shared:
            return []
        found: list[Span] = []
        grown: dict[tuple[int, int], tuple[int, int]] = {}
        """(source, where the source would start in the text) -> the last match grown along it."""
        for gram in shared:
            hits = self._grams[gram]
            at = text.find(gram)
            while at >= 0:
                for index, offset in hits:
                    diagonal = (index, at - offset)
                    last = grown.get(diagonal)
                    if last is not None and last[0] <= at < last[1]:
                        continue  # inside a match along this source already grown
                    start, end = grown[diagonal] = self._grow(text, at, self._sources[index], offset)
                    if end - start >= PIECE_CHARS:
                        found.append((start, end, self._names[index]))
                at = text.find(gram, at + 1)
        return _merged(found)

    def open_end(self, text: str) -> int:
        """Where the longest end of `text` that is part of a source starts (len(text) if none):
        a piece that more text would complete can start there, not before."""
        start = len(text)
        while start > 0 and text[start - 1] in self.alphabet and text[start - 1 :] in self._joined:
            start -= 1
        return start

    @staticmethod
    def _grow(text: str, at: int, source: str, offset: int) -> tuple[int, int]:
        """The longest stretch around text[at:at+GRAM] that equals `source` around `offset`."""
        left = _common_length(text, at, source, offset, -1)
        right = _common_length(text, at + GRAM, source, offset + GRAM, 1)
        return at - left, at + GRAM + right

    def mask(self, text: str, mask: Masker, grams: set[str] | None = None) -> str:
        """`text` with each piece replaced by `mask(name)`."""
        spans = self.spans(text, grams)
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


def _common_length(text: str, at: int, source: str, offset: int, step: int) -> int:
    """How many characters agree going right from (at, offset), or left before them (step -1),
    found by halving with slice comparisons (C speed) rather than character by character."""
    if step > 0:
        most = min(len(text) - at, len(source) - offset)
        same = lambda n: text[at : at + n] == source[offset : offset + n]  # noqa: E731
    else:
        most = min(at, offset)
        same = lambda n: text[at - n : at] == source[offset - n : offset]  # noqa: E731
    low, high = 0, most
    while low < high:
        middle = (low + high + 1) // 2
        if same(middle):
            low = middle
        else:
            high = middle - 1
    return low


def _merged(spans: list[Span]) -> list[Span]:
    """Overlapping spans as one (named after the first); spans that only touch stay two, as
    they are when a stream is masked in parts cut where they meet."""
    if len(spans) < 2:
        return spans
    spans.sort()
    out = [spans[0]]
    for start, end, name in spans[1:]:
        last_start, last_end, last_name = out[-1]
        if start < last_end:
            out[-1] = (last_start, max(last_end, end), last_name)
        else:
            out.append((start, end, name))
    return out
