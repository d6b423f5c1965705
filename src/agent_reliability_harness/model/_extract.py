"""Extraction of values from a tool's output: the part of the policy language that says *which
part* of an output a rule is about.

A policy object that selects part of an output holds exactly one of two fields:

``"pointer"``
    A JSON pointer into the tool's output as data, where a segment ``*`` stands for every member
    of an object or every item of an array (``/transactions/*/recipient``). The output is read as
    :func:`~agent_reliability_harness.model._paths.parsed_output` reads it: a string that holds a
    JSON object or array is that object or array, any other value is itself. ``""`` selects the
    whole output.
``"pattern"``
    A regular expression with exactly one named group, ``value``
    (``^\\s*recipient: (?P<value>\\S+)$``). It is compiled with ``re.MULTILINE`` only (``^`` and
    ``$`` anchor at every line; write ``(?i)`` for case folding), through the policy's regex checks
    (no exponential shapes, no pattern whose shortest match is empty). It is searched with
    ``finditer`` in the output itself when the output is a string (JSON text included: the pattern
    sees the text as the tool returned it), and otherwise in every non-empty string value of the
    output (not in object keys). Each match whose ``value`` group took part and is not empty gives
    one value; a ``value`` span that starts before the end of the previous one (only possible
    with a group inside a lookaround) is skipped, so spans never overlap. Other capturing groups
    may be unnamed; another named group is refused.

The module gives, for an output:

- :meth:`Extract.find`: the extracted values, each with where it came from (:class:`Found`): for
  a pointer, the JSON value at each location the pointer reaches (a string, a number, an object...)
  with its JSON pointer within the output; for a pattern, the text of each ``value`` span with
  the pointer of the string it was found in (``""`` for a string output) and its character span.
- :meth:`Extract.split`: the output's *texts* cut into the selected part and the rest, for rules
  that give the two parts different trust (:class:`Piece`). An output's texts are the output
  itself when it is a non-empty string (for a pattern) or, for structured data, its non-empty
  strings: object keys and string values (numbers, booleans and null are not text). For a
  pointer, the selected part is every text at or below a location the pointer reaches (the keys of
  a selected object included), the rest is every other text (the keys of the objects above
  included). For a pattern, the selected part is the ``value`` spans; the rest is what lies
  between them, one piece per gap, and the texts the pattern is not searched in (object keys).
  Texts come depth first in document order, an object's keys before its members; a key's
  pointer is that of the member it names. Pieces are never joined, so a consumer that keeps them
  apart (as the provenance corpus does, with a NUL between texts) cannot form a value across a
  cut.

  Invariant (tested): for every text, its selected and rest pieces, ordered by their start,
  are disjoint, and concatenated give the text back exactly.

Cost: one parse of the output when it is JSON text, one walk of the data, and for a pattern one
``finditer`` over each string: linear in the output's size for the patterns the policy accepts.

Kept apart from the policy parser (no import of ``model.policy``) so that the rules can use it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, Protocol

from agent_reliability_harness._decode import bad
from agent_reliability_harness.errors import excerpt, join_pointer
from agent_reliability_harness.model._paths import ArgPath, collect_located, parsed_output

__all__ = ["FLAGS", "Extract", "Found", "Piece", "RegexCompiler", "cut", "output_texts"]

# The flags every extraction pattern is compiled with.
FLAGS: Final = re.MULTILINE
GROUP: Final = "value"


class RegexCompiler(Protocol):
    """What :meth:`Extract.parse` needs of the policy parser's context: its checked compile."""

    def regex(self, raw: object, pointer: str, *, flags: int, searched: bool) -> re.Pattern[str]:
        """Compile ``raw``, or raise an InputError at ``pointer``."""


@dataclass(frozen=True, slots=True)
class Found:
    """One extracted value and where it came from.

    ``pointer`` is the JSON pointer, within the output, of the value (pointer extraction) or of
    the string the pattern matched in (``""``: the output itself); ``span`` is the ``[start,
    end)`` character range of a pattern's ``value`` in that string, None for a pointer.
    """

    value: Any
    pointer: str
    span: tuple[int, int] | None = None

    def describe(self) -> str:
        """Where the value is, in words: ``at /3/subject``, ``at characters 10-24`` (of a string
        output) or ``at /notes characters 10-24``; the whole output is ``in the whole output``."""
        if self.span is None:
            return f"at {self.pointer}" if self.pointer else "in the whole output"
        chars = f"characters {self.span[0]}-{self.span[1]}"
        return f"at {self.pointer} {chars}" if self.pointer else f"at {chars}"


@dataclass(frozen=True, slots=True)
class Piece:
    """A part of one of an output's texts: the pointer of that text within the output (``""``:
    the output itself), the offset where the piece starts in it, and the piece."""

    pointer: str
    start: int
    text: str


def output_texts(output: Any, *, raw_string: bool) -> Iterator[tuple[str, str, bool]]:
    """(pointer, text, is_key) for each text of ``output`` (see the module docstring), in
    document order. With ``raw_string``, a string output is one text as it is (the texts a
    pattern sees); without, it is first read as JSON where it holds an object or an array."""
    if raw_string and type(output) is str:
        if output:
            yield "", output, False
        return
    for pointer, text, is_key, _ in _walk(parsed_output(output), {}):
        yield pointer, text, is_key


_NONE: Final = -1


def _walk(data: Any, selected: Mapping[str, int]) -> Iterator[tuple[str, str, bool, int]]:
    """(pointer, text, is_key, index) for each text of parsed data, depth first in document
    order, an object's keys before its members; ``index``: the least ``selected[p]`` over the
    pointers ``p`` the text is at or below (the keys of a selected object included, the key
    naming a selected member not), or -1."""
    top = selected.get("", _NONE)
    stack: list[tuple[str, Any, int]] = [("", data, top)]
    while stack:
        pointer, node, index = stack.pop()
        kind = type(node)
        if kind is str:
            if node:
                yield pointer, node, False, index
            continue
        if kind is dict:
            members = [(join_pointer(pointer, k), k, v) for k, v in node.items()]
        elif kind is list:
            members = [(join_pointer(pointer, i), "", v) for i, v in enumerate(node)]
        else:
            continue
        children: list[tuple[str, Any, int]] = []
        for at, key, value in members:
            if key:
                yield at, key, True, index
            own = selected.get(at, _NONE) if selected else _NONE
            inner = own if index == _NONE else index if own == _NONE else min(index, own)
            children.append((at, value, inner))
        stack.extend(reversed(children))


def _keep_first(
    kept: list[tuple[int, int, int]], spans: list[tuple[int, int]], index: int
) -> list[tuple[int, int, int]]:
    """``kept`` (sorted, disjoint spans with their extraction) and those of ``spans`` (sorted,
    disjoint) that overlap none of ``kept``, merged in order: one pass over both."""
    merged: list[tuple[int, int, int]] = []
    i = 0
    for start, end in spans:
        while i < len(kept) and kept[i][1] <= start:
            merged.append(kept[i])
            i += 1
        if i < len(kept) and kept[i][0] < end:
            continue  # overlaps a span kept earlier: the first listed extraction wins
        merged.append((start, end, index))
    merged.extend(kept[i:])
    return merged


def cut(output: Any, extracts: Sequence[Extract]) -> list[tuple[Piece, int]]:
    """The output's texts cut by several extractions, each piece with the index in
    ``extracts`` of the extraction that selects it, or -1 for the rest; in document order, and
    within a text by offset. The extractions must be of one kind (all pointers or all
    patterns), as they read the output differently.

    The first listed extraction wins: a text that several pointers reach belongs to the first of
    them; a pattern's ``value`` span that overlaps a span kept from an earlier pattern (or the
    same one) is dropped whole, never shortened, so that every selected piece is a whole value.
    """
    pieces: list[tuple[Piece, int]] = []
    if not extracts:
        return [
            (Piece(where, 0, text), _NONE)
            for where, text, _ in output_texts(output, raw_string=True)
        ]
    if extracts[0].pointer is not None:
        data = parsed_output(output)
        chosen: dict[str, int] = {}
        for index, extract in enumerate(extracts):
            assert extract.pointer is not None, "pointers and patterns mixed"
            for where, _ in collect_located(data, extract.pointer, ""):
                chosen.setdefault(where, index)
        return [(Piece(where, 0, text), index) for where, text, _, index in _walk(data, chosen)]
    for where, text, is_key in output_texts(output, raw_string=True):
        if is_key:
            pieces.append((Piece(where, 0, text), _NONE))
            continue
        kept: list[tuple[int, int, int]] = []
        for index, extract in enumerate(extracts):
            assert extract.regex is not None, "pointers and patterns mixed"
            kept = _keep_first(kept, list(extract.spans(text)), index)
        last = 0
        for start, end, index in kept:
            if start > last:
                pieces.append((Piece(where, last, text[last:start]), _NONE))
            pieces.append((Piece(where, start, text[start:end]), index))
            last = end
        if last < len(text):
            pieces.append((Piece(where, last, text[last:]), _NONE))
    return pieces


@dataclass(frozen=True, slots=True)
class Extract:
    """Which part of a tool's output to select: a JSON pointer with ``*`` wildcards, or a
    pattern with a named group ``value`` (see the module docstring for the exact contract)."""

    pointer: ArgPath | None = None
    pattern: str | None = None
    regex: re.Pattern[str] | None = field(default=None, compare=False)

    KEYS: ClassVar[tuple[str, ...]] = ("pointer", "pattern")

    @classmethod
    def parse(cls, data: Mapping[str, Any], base: str, context: RegexCompiler) -> Extract:
        """The extraction of the policy object ``data`` at ``base``; the caller checks the
        object's other keys. Errors name the field: ``base/pointer`` or ``base/pattern``, or
        ``base`` itself when both or neither are given."""
        pointer_raw, pattern_raw = data.get("pointer"), data.get("pattern")
        if pointer_raw is not None and pattern_raw is not None:
            raise bad(base, "set either pointer or pattern, not both")
        if pointer_raw is not None:
            where = join_pointer(base, "pointer")
            return cls(pointer=ArgPath.parse(pointer_raw, where, pointer_only=True))
        if pattern_raw is None:
            raise bad(
                base,
                "missing field 'pointer' (a JSON pointer into the output, such as "
                "'/transactions/*/recipient') or 'pattern' (a regular expression with a group "
                "(?P<value>...))",
            )
        where = join_pointer(base, "pattern")
        regex = context.regex(pattern_raw, where, flags=FLAGS, searched=True)
        names = set(regex.groupindex)
        if GROUP not in names:
            raise bad(
                where,
                f"pattern {excerpt(regex.pattern)} has no group named 'value'; write "
                "(?P<value>...) around the part of the text to extract",
            )
        if len(names) > 1:
            others = ", ".join(sorted(names - {GROUP}))
            raise bad(
                where,
                f"pattern {excerpt(regex.pattern)} has named groups other than 'value' "
                f"({others}); make them unnamed (...) or non-capturing (?:...)",
            )
        return cls(pattern=regex.pattern, regex=regex)

    def to_dict(self) -> dict[str, Any]:
        if self.pointer is not None:
            return {"pointer": self.pointer.text}
        return {"pattern": self.pattern}

    def describe(self) -> str:
        """The extraction in words: ``pointer /transactions/*/recipient`` or ``pattern '...'``."""
        if self.pointer is not None:
            return f"pointer {self.pointer.text or repr('')}"
        return f"pattern {excerpt(self.pattern or '')}"

    def spans(self, text: str) -> Iterator[tuple[int, int]]:
        """The ``value`` spans of the pattern in ``text``: non-empty, disjoint, in order."""
        assert self.regex is not None
        last = 0
        for match in self.regex.finditer(text):
            start, end = match.span(GROUP)
            if start < last or start >= end:  # did not take part, empty, or overlapping
                continue
            last = end
            yield start, end

    def find(self, output: Any) -> list[Found]:
        """The values this extraction selects in ``output``, in document order."""
        if self.pointer is not None:
            return [
                Found(value, where)
                for where, value in collect_located(parsed_output(output), self.pointer, "")
            ]
        found: list[Found] = []
        for where, text, is_key in output_texts(output, raw_string=True):
            if not is_key:
                found.extend(Found(text[s:e], where, (s, e)) for s, e in self.spans(text))
        return found

    def split(self, output: Any) -> tuple[list[Piece], list[Piece]]:
        """The output's texts cut into (selected pieces, rest pieces), each list in document
        order (see the module docstring)."""
        selected: list[Piece] = []
        rest: list[Piece] = []
        for piece, index in cut(output, (self,)):
            (rest if index == _NONE else selected).append(piece)
        return selected, rest
