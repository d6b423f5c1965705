"""Where values first occur in a trace's texts: the string search behind the provenance rule.

Texts are *normalised* before they are compared: case folded (``str.casefold``), every run of
whitespace (as ``str.split`` sees it, NUL included) made one space, and leading and trailing
whitespace removed. The texts of one kind (untrusted outputs, or trusted texts) are joined, in
trace order, into one *corpus* with NUL between them. A normalised value never contains NUL, so
it can only occur inside one text, and the offset of its first occurrence in the corpus names the
earliest step whose text contains it.

:func:`first_occurrences` finds the first occurrence of each of ``k`` distinct values in a corpus
of ``n`` characters. Up to :data:`FIND_LIMIT` values it runs ``str.find`` once per value, at C
speed; ``str.find`` is linear in ``n`` plus the value's length, so the cost is at most
``FIND_LIMIT`` passes over the corpus. Above that it builds an Aho-Corasick automaton of the
values and scans the corpus once, in time linear in ``n`` plus the total length of the values,
stopping as soon as every value has been seen. The automaton runs in Python: one pass of it
costs about as much as several hundred passes of ``str.find`` (``benchmarks/perf/taint_search.py``
measures where it starts to win; the limit is below that). Both give identical results (a
property test checks them against each other and against plain search).

:class:`GrowingCorpus` is the runtime monitor's form of a corpus, for a run that is still going
on: steps are appended as they are recorded, and each value is looked up in the text recorded
since its previous lookup only (see the class).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable
from typing import Final

__all__ = [
    "FIND_LIMIT",
    "KEYS",
    "Corpus",
    "GrowingCorpus",
    "first_occurrences",
    "mark",
    "normalise",
]

FIND_LIMIT: Final = 512
SEPARATOR: Final = "\x00"
MARK: Final = "\x01"
# every position that is not inside a run of alphanumeric characters ([^\W_]: str.isalnum)
_CUTS: Final = re.compile(r"(?<![^\W_])|(?![^\W_])")


def normalise(text: str) -> str:
    """Case folded, whitespace runs (and NUL) collapsed to one space, ends stripped."""
    return " ".join(text.replace(SEPARATOR, " ").casefold().split())


def mark(text: str) -> str:
    """``text`` with :data:`MARK` inserted at every position that is not inside a run of
    alphanumeric characters (``str.isalnum``): at both ends, and between two characters unless
    both are alphanumeric. NUL and MARK in ``text`` become spaces first.

    A value occurs in a text *as a whole token run* (bounded: not starting or ending inside a run
    of alphanumeric characters of the text, so ``13`` is not in ``2013`` but is in ``a-13.``)
    exactly when ``mark(value)`` occurs in ``mark(text)``: a marked value starts and ends with
    MARK, which can only stand where the text has a cut, and between its characters it holds
    MARK exactly where the text does, as the characters on both sides are the same. A property
    test checks this against a direct search. Linear: one ``re.sub`` at C speed.
    """
    return _CUTS.sub(MARK, text.replace(SEPARATOR, " ").replace(MARK, " "))


def token_key(text: str) -> str:
    """The form of a text or a value for matching ``token``: normalised, then marked."""
    return mark(normalise(text.replace(MARK, " ")))


# how a text or a value is prepared for each way of matching (POLICY-SPEC.md, require.match)
KEYS: Final[dict[str, Callable[[str], str]]] = {
    "substring": normalise,
    "token": token_key,
    "exact": mark,
}


Labels = tuple[list[int], list[str]]


def _starts(lengths: list[int]) -> list[int]:
    """Where each of texts of these lengths starts when they are joined with one separator."""
    starts: list[int] = []
    offset = 0
    for length in lengths:
        starts.append(offset)
        offset += length + 1
    return starts


def _label(labels: Labels | None, offset: int) -> str | None:
    """The label of the text at ``offset`` within its step's part."""
    if labels is None:
        return None
    return labels[1][bisect_right(labels[0], offset) - 1]


class Corpus:
    """Texts of several steps, prepared by ``key`` (normalised by default), joined in trace
    order, and where each step's part starts; optionally a label for each text (where it came
    from, for a finding's evidence).

    Add steps in increasing position order.
    """

    __slots__ = ("_key", "_labels", "_length", "_parts", "_positions", "_starts")

    def __init__(self, key: Callable[[str], str] = normalise) -> None:
        self._key = key
        self._parts: list[str] = []
        self._starts: list[int] = []
        self._positions: list[int] = []
        self._labels: list[Labels | None] = []
        self._length = 0

    def add(self, position: int, texts: list[str], labels: list[str] | None = None) -> None:
        """Add the texts of the step at ``position`` (raw; they are prepared here), with a label
        for each text or none."""
        keyed = [self._key(text) for text in texts]
        part = SEPARATOR.join(keyed)
        marks = None if labels is None else (_starts([len(text) for text in keyed]), labels)
        self._starts.append(self._length)
        self._positions.append(position)
        self._parts.append(part)
        self._labels.append(marks)
        self._length += len(part) + 1  # the separator that follows it

    def __bool__(self) -> bool:
        return bool(self._parts)

    def text(self) -> str:
        return SEPARATOR.join(self._parts)

    def position_at(self, offset: int) -> int:
        """The position of the step whose text holds the character at ``offset``."""
        return self._positions[bisect_right(self._starts, offset) - 1]

    def locate(self, offset: int) -> tuple[int, str | None]:
        """The position of the step whose text holds the character at ``offset``, and the label
        of that text (None when its step was added without labels)."""
        index = bisect_right(self._starts, offset) - 1
        return self._positions[index], _label(self._labels[index], offset - self._starts[index])


class GrowingCorpus:
    """A corpus that grows while a run goes on, searched where each value's last search stopped.

    The texts, prepared by ``key`` (normalised by default), are kept in UTF-8 in one buffer that
    is only appended to (amortised O(length of the text added), at C speed), with a NUL after
    each step's part. UTF-8 is self-synchronising, so a value's bytes occur in the buffer exactly
    where the value occurs in the text, and as the value has no NUL, only inside one step's part.

    :meth:`first` remembers, for each value looked up, where it first occurs or how many bytes it
    has searched so far, and resumes there: a value costs one ``bytes.find`` over the text added
    since its previous lookup (the whole buffer the first time), and nothing once found. Add
    steps in increasing position order.
    """

    __slots__ = ("_buffer", "_key", "_labels", "_memo", "_positions", "_starts")

    def __init__(self, key: Callable[[str], str] = normalise) -> None:
        self._key = key
        self._buffer = bytearray()
        self._starts: list[int] = []
        self._positions: list[int] = []
        self._labels: list[tuple[list[int], list[str]] | None] = []
        # value -> (byte offset of its first occurrence or -1, bytes searched, value in UTF-8)
        self._memo: dict[str, tuple[int, int, bytes]] = {}

    def add(self, position: int, texts: list[str], labels: list[str] | None = None) -> None:
        """Add the texts of the step at ``position`` (raw; they are prepared here), with a label
        for each text or none."""
        # surrogatepass: a lone surrogate from JSON text is encoded, not refused
        encoded = [self._key(text).encode("utf-8", "surrogatepass") for text in texts]
        self._starts.append(len(self._buffer))
        self._positions.append(position)
        self._labels.append(
            None if labels is None else (_starts([len(text) for text in encoded]), labels)
        )
        self._buffer += b"\x00".join(encoded)
        self._buffer.append(0)

    def __bool__(self) -> bool:
        return bool(self._starts)

    def _offset(self, value: str) -> int:
        size = len(self._buffer)
        entry = self._memo.get(value)
        if entry is None:
            offset, searched, needle = -1, 0, value.encode("utf-8", "surrogatepass")
        else:
            offset, searched, needle = entry
            if offset >= 0 or searched == size:
                return offset
        offset = self._buffer.find(needle, searched)
        self._memo[value] = (offset, size, needle)
        return offset

    def first(self, value: str) -> int:
        """The position of the first step whose text contains ``value`` (prepared, non-empty),
        or -1."""
        offset = self._offset(value)
        return -1 if offset < 0 else self._positions[bisect_right(self._starts, offset) - 1]

    def first_located(self, value: str) -> tuple[int, str | None]:
        """Like :meth:`first`, with the label of the text that holds the value ((-1, None) when
        absent)."""
        offset = self._offset(value)
        if offset < 0:
            return -1, None
        index = bisect_right(self._starts, offset) - 1
        return self._positions[index], _label(self._labels[index], offset - self._starts[index])


def first_occurrences(text: str, needles: list[str]) -> list[int]:
    """The offset in ``text`` of the first occurrence of each needle (``-1`` when absent).

    Needles must be distinct, non-empty and free of NUL.
    """
    if len(needles) <= FIND_LIMIT:
        return [text.find(needle) for needle in needles]
    return _automaton_first(text, needles)


def _automaton_first(text: str, needles: list[str]) -> list[int]:
    """Aho-Corasick: one pass over ``text``, each output chain followed at most once."""
    goto: list[dict[str, int]] = [{}]
    outputs: list[list[int]] = [[]]
    for index, needle in enumerate(needles):
        node = 0
        for char in needle:
            child = goto[node].get(char)
            if child is None:
                child = len(goto)
                goto[node][char] = child
                goto.append({})
                outputs.append([])
            node = child
        outputs[node].append(index)
    fail = [0] * len(goto)
    link = [-1] * len(goto)  # the nearest proper suffix node that ends a needle
    order = list(goto[0].values())
    head = 0
    while head < len(order):
        node = order[head]
        head += 1
        for char, child in goto[node].items():
            state = fail[node]
            while state and char not in goto[state]:
                state = fail[state]
            target = goto[state].get(char, 0)
            fail[child] = target
            link[child] = target if outputs[target] else link[target]
            order.append(child)
    first = [-1] * len(needles)
    seen = [False] * len(goto)
    remaining = sum(1 for out in outputs if out)
    state = 0
    for end, char in enumerate(text):
        while state and char not in goto[state]:
            state = fail[state]
        state = goto[state].get(char, 0)
        node = state if outputs[state] else link[state]
        # Every node below a seen node on its link chain was seen with it, earlier or at once.
        while node > 0 and not seen[node]:
            seen[node] = True
            remaining -= 1
            for index in outputs[node]:
                first[index] = end - len(needles[index]) + 1
            node = link[node]
        if not remaining:
            break
    return first
