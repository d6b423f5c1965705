"""Guards against policy regular expressions that misbehave: patterns that can take exponential
time (catastrophic backtracking), and patterns whose shortest match is empty.

Policy regexes are trusted input from the policy's author, but a slow one must not hang CI
unnoticed. The classic exponential shape is a repetition of varying length inside another
repetition where a stretch of text can be split between iterations in many ways: ``(a+)+``,
``(.*)*``, ``(\\w+\\s?)+``, ``(x+x+)+``, ``(([a-z])+.)+``, ``(a{1,2})+``. The inner repetition
counts when it can take runs of two or more lengths; the pattern is flagged when a run of text can
be split between four such *pieces* in a row or more (``n`` characters split between ``k`` pieces
in about ``n**(k-1)`` ways, a polynomial of high degree: still too many). The pieces in a row are
the outer repetition's iterations times the inner repetitions of one iteration that can take the
same characters: ``(a+){1,4}`` has four, and so has ``(?:\\w+\\w+){2}``. Counts of nested
repetitions multiply, so ``(?:(?:\\w+){2}){2}`` has four too. A piece is not counted when every
split is forced by a *separator*: a mandatory single character of the outer body that the inner
repetition cannot match, as the ``.`` in ``(\\d+\\.)+`` or the ``\\s`` in ``(\\w+\\s)+``; nor
do the counts of repetitions around a separated one multiply with its own
(``(?:(?:\\w+){2}@){2}``).

Possessive repetitions and atomic groups never backtrack and are not flagged. Other slow shapes
are not detected (overlapping alternatives such as ``(a|a)*``, long chains of ``.*``); SECURITY.md
says so.

A pattern whose shortest match is empty (``a*``, ``^``, ``\\b``, ``(?=.)``) succeeds at some
position of almost every text without consuming a character; :func:`matches_zero_width` tells.
"""

from __future__ import annotations

from itertools import product
from re import _compiler as compiler  # type: ignore[attr-defined]
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as parser  # type: ignore[attr-defined]
from typing import Any, Final

from agent_reliability_harness._decode import bad
from agent_reliability_harness.errors import excerpt

__all__ = ["check_consumes", "matches_zero_width", "risky_repetition"]

_REPEATS: Final = (sre.MAX_REPEAT, sre.MIN_REPEAT)
_ATOMS: Final = (sre.LITERAL, sre.NOT_LITERAL, sre.IN, sre.ANY, sre.CATEGORY)
# Characters used to tell which single-character items can match the same text.
_PROBES: Final = tuple(chr(c) for c in range(128)) + tuple("\u00a0\u00e9\u00df\u03a9\u4e2d\u2028")
_MAX_SEQUENCES: Final = 64
# A run of text split between at least this many variable repetitions in a row is split as
# freely as by an unbounded repetition for practical purposes: (a+){1,4} tries about n**3 / 6
# splits of n characters, (a+){1,30} on the order of n**29.
_MANY_PIECES: Final = 4


def _variable(repeat: Any) -> bool:
    """Whether a repetition can take text of more than one length, two characters or more
    (``a+``, ``a{1,2}``; not ``a{3}`` or ``a?``, whose empty iterations ``re`` stops at once)."""
    low, high = repeat[1][0], repeat[1][1]
    return bool(high > low and high >= 2)


class _Context:
    def __init__(self, state: Any, flags: int) -> None:
        self.state = state
        self.flags = flags
        self._chars: dict[tuple[int, int], frozenset[str] | None] = {}

    def min_width(self, items: list[Any]) -> int:
        if not items:
            return 0
        width: int = parser.SubPattern(self.state, items).getwidth()[0]
        return width

    def chars(self, item: Any) -> frozenset[str] | None:
        """The probe characters a single-character item matches (None: not such an item)."""
        # by its parts, which the parsed pattern keeps alive (an item tuple may be a copy)
        key = (item[0], id(item[1]))
        if key not in self._chars:
            found: frozenset[str] | None = None
            if item[0] in _ATOMS:
                pattern = compiler.compile(parser.SubPattern(self.state, [item]), self.flags)
                found = frozenset(c for c in _PROBES if pattern.fullmatch(c))
            self._chars[key] = found
        return self._chars[key]

    def repeated_chars(self, repeat: Any) -> frozenset[str] | None:
        body = _flatten(list(repeat[1][2]))
        return self.chars(body[0]) if len(body) == 1 else None

    def alphabet(self, item: Any) -> frozenset[str] | None:
        """The probe characters any part of ``item`` can consume (None: not known, as for a
        backreference, which can match anything). Lookarounds consume nothing."""
        found: set[str] = set()
        stack = [item]
        while stack:
            op, av = node = stack.pop()
            if op in _ATOMS:
                found |= self.chars(node) or frozenset()
            elif op in _REPEATS or op == sre.POSSESSIVE_REPEAT:
                stack.extend(av[2])
            elif op == sre.ATOMIC_GROUP:
                stack.extend(av)
            elif op == sre.GROUPREF:
                return None
            elif op not in (sre.ASSERT, sre.ASSERT_NOT):
                stack.extend(part for child in _children(op, av) for part in child)
        return frozenset(found)


def _flatten(items: list[Any]) -> list[Any]:
    """Inline the contents of groups (a group matches its items in sequence)."""
    flat: list[Any] = []
    for op, av in items:
        if op == sre.SUBPATTERN:
            flat.extend(_flatten(list(av[3])))
        else:
            flat.append((op, av))
    return flat


def _sequences(items: list[Any]) -> list[list[Any]]:
    """Each way through the alternatives of a body, as a flat sequence of items."""
    choices: list[list[list[Any]]] = []
    for item in _flatten(items):
        if item[0] == sre.BRANCH:
            choices.append([_flatten(list(alt)) for alt in item[1][1]])
        else:
            choices.append([[item]])
    sequences: list[list[Any]] = []
    for combination in product(*choices):
        sequences.append([part for parts in combination for part in parts])
        if len(sequences) >= _MAX_SEQUENCES:
            break
    return sequences


def _ambiguous(body: list[Any], count: int, context: _Context) -> bool:
    """Whether ``count`` iterations of ``body`` in a row can split a run of text between
    :data:`_MANY_PIECES` variable repetitions or more: each iteration holds, for a variable
    repetition that no separator isolates, as many pieces as the variable repetitions of its
    sequence that can take the same characters."""
    for sequence in _sequences(body):
        variable = [i for i, item in enumerate(sequence) if item[0] in _REPEATS and _variable(item)]
        for index in variable:
            item = sequence[index]
            inner = context.repeated_chars(item)
            others = sequence[:index] + sequence[index + 1 :]
            separated = inner is not None and any(
                context.min_width([other]) > 0
                and (chars := context.chars(other)) is not None
                and not chars & inner
                for other in others
            )
            if separated:
                continue
            alphabet = context.alphabet(item)
            pieces = sum(
                1
                for other in variable
                if alphabet is None
                or (chars := context.alphabet(sequence[other])) is None
                or chars & alphabet
            )
            if count * pieces >= _MANY_PIECES:
                return True
    return False


def _children(op: Any, av: Any) -> list[list[Any]]:
    if op == sre.SUBPATTERN:
        return [list(av[3])]
    if op == sre.BRANCH:
        return [list(alt) for alt in av[1]]
    if op in (sre.ASSERT, sre.ASSERT_NOT):
        return [list(av[1])]
    if op == sre.GROUPREF_EXISTS:
        return [list(alt) for alt in av[1:] if alt is not None]
    return []


def _separated(item: Any, flat: list[Any], context: _Context) -> bool:
    """Whether a mandatory single character of the sequence ``flat`` that ``item`` cannot match
    stands between ``item`` and the same item of the next iteration."""
    alphabet = context.alphabet(item)
    return alphabet is not None and any(
        other is not item and (chars := context.chars(other)) is not None and not chars & alphabet
        for other in flat
    )


def _scan(items: list[Any], context: _Context, outer: int = 1) -> bool:
    """Whether a repetition in ``items`` (repeated ``outer`` times in a row by the repetitions
    around them) is in the risky shape. A repetition of a repetition splits text as freely as one
    repetition of the product of their counts, ``(?:(?:a+){2}){2}`` as ``(?:a+){4}``, unless a
    separator stands between the iterations of the outer one."""
    for op, av in items:
        if op in _REPEATS:
            count = min(outer * av[1], sre.MAXREPEAT)
            body = list(av[2])
            if count >= 2 and _ambiguous(body, count, context):
                return True
            flat = _flatten(body)
            for item in flat:
                if item[0] in _ATOMS:  # nothing inside
                    continue
                times = count if count > 1 and not _separated(item, flat, context) else 1
                if _scan([item], context, times):
                    return True
        elif op in (sre.ASSERT, sre.ASSERT_NOT):  # matched on its own at each position
            if _scan(list(av[1]), context):
                return True
        elif op in (sre.POSSESSIVE_REPEAT, sre.ATOMIC_GROUP):
            # Never given back once matched, so nothing outside can make it split text again;
            # but its body (one iteration of a possessive repetition) backtracks as a pattern of
            # its own until it matches: (?>(a+)+b) fails in exponential time.
            if _scan(list(av[2] if op == sre.POSSESSIVE_REPEAT else av), context):
                return True
        elif any(_scan(child, context, outer) for child in _children(op, av)):
            return True
    return False


def risky_repetition(pattern: str, flags: int = 0) -> bool:
    """Whether a valid pattern nests repetitions in an exponential shape."""
    try:
        tree = parser.parse(pattern, flags)
        return _scan(list(tree), _Context(tree.state, flags))
    except Exception:  # noqa: BLE001 - an unexpected shape is the caller's compile error to report
        return False


def matches_zero_width(pattern: str, flags: int = 0) -> bool:
    """Whether a valid pattern's shortest match is empty: it can succeed without consuming a
    character (``a*``, ``x?``, ``^``, ``\\b``, ``\\B``, ``(?=.)``, ``a|\\b``)."""
    try:
        width: int = parser.parse(pattern, flags).getwidth()[0]
    except Exception:  # noqa: BLE001 - an unexpected shape is the caller's compile error to report
        return False
    return width == 0


def check_consumes(pattern: str, flags: int, pointer: str) -> None:
    """Refuse a searched pattern whose shortest match is empty (an InputError at ``pointer``):
    it would match almost every text."""
    if matches_zero_width(pattern, flags):
        raise bad(
            pointer,
            f"pattern {excerpt(pattern)} can match without consuming a character (its shortest "
            "match is empty, as with \\b, \\B or a lookahead alone), so it matches almost every "
            "text; make it match at least one character",
        )


def _parts(op: Any, av: Any) -> list[list[Any]]:
    """Every body an item holds: :func:`_children`, and those of repetitions and atomic groups."""
    if op in (*_REPEATS, sre.POSSESSIVE_REPEAT):
        return [list(av[2])]
    if op == sre.ATOMIC_GROUP:
        return [list(av)]
    return _children(op, av)


def _captures(items: list[Any]) -> bool:
    """Whether the items hold a capturing group, at any depth."""
    return any(
        (op == sre.SUBPATTERN and av[0] is not None) or any(map(_captures, _parts(op, av)))
        for op, av in items
    )


def _possessive_captures(items: list[Any]) -> bool:
    """Whether a possessive repetition in the items holds a capturing group."""
    return any(
        (op == sre.POSSESSIVE_REPEAT and _captures(list(av[2])))
        or any(map(_possessive_captures, _parts(op, av)))
        for op, av in items
    )


def check_engine_safe(pattern: str, flags: int, pointer: str) -> None:
    """Refuse a pattern with a capturing group inside a possessive repetition (an InputError at
    ``pointer``): on such patterns CPython's regex engine can raise SystemError in the middle
    of a search, as ``(?:a(b)++|a-)++`` does on ``aba-`` (python/cpython#101955; Python 3.11 is
    not fixed). Every searched text would be at risk, so the policy is refused on every Python
    alike."""
    try:
        found = _possessive_captures(list(parser.parse(pattern, flags)))
    except Exception:  # noqa: BLE001 - an unexpected shape is the caller's compile error to report
        return
    if found:
        raise bad(
            pointer,
            f"pattern {excerpt(pattern)} has a capturing group inside a possessive repetition "
            "(such as (b)++ or (?:a(b))*+), on which Python's regular expression engine can fail "
            "with SystemError; make the group non-capturing: (?:...)",
        )
