"""Guards against policy regular expressions that misbehave: patterns that can take exponential
time (catastrophic backtracking), and patterns whose shortest match is empty.

Policy regexes are trusted input from the policy's author, but a slow one must not hang CI
unnoticed. The classic exponential shape is a repetition of varying length inside another
repetition where a stretch of text can be split between iterations in many ways: ``(a+)+``,
``(.*)*``, ``(\\w+\\s?)+``, ``(x+x+)+``, ``(([a-z])+.)+``, ``(a{1,2})+``. The inner repetition
counts when it can take runs of two or more lengths, the outer one when it can iterate four times
or more (an outer bound that high makes the number of splits a polynomial of high degree: still
too many). Such a pattern is flagged unless every
split is forced by a *separator*: a mandatory single character of the outer body that the inner
repetition cannot match, as the ``.`` in ``(\\d+\\.)+`` or the ``\\s`` in ``(\\w+\\s)+``.

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

TYPE_CHECKING = False  # `typing` costs milliseconds at start-up; only type checkers need it
if TYPE_CHECKING:
    from typing import Any, Final

__all__ = ["check_consumes", "matches_zero_width", "risky_repetition"]

_REPEATS: Final = (sre.MAX_REPEAT, sre.MIN_REPEAT)
_ATOMS: Final = (sre.LITERAL, sre.NOT_LITERAL, sre.IN, sre.ANY, sre.CATEGORY)
# Characters used to tell which single-character items can match the same text.
_PROBES: Final = tuple(chr(c) for c in range(128)) + tuple("\u00a0\u00e9\u00df\u03a9\u4e2d\u2028")
_MAX_SEQUENCES: Final = 64
# An outer repetition of at least this many iterations splits text as freely as an unbounded one
# for practical purposes: (a+){1,30} tries on the order of n**29 splits of n characters.
_MANY_ITERATIONS: Final = 4


def _variable(repeat: Any) -> bool:
    """Whether a repetition can take text of more than one length, two characters or more
    (``a+``, ``a{1,2}``; not ``a{3}`` or ``a?``, whose empty iterations ``re`` stops at once)."""
    low, high = repeat[1][0], repeat[1][1]
    return bool(high > low and high >= 2)


def _many(repeat: Any) -> bool:
    """Whether an outer repetition can iterate often enough to split text in very many ways."""
    return bool(repeat[1][1] >= _MANY_ITERATIONS)


class _Context:
    def __init__(self, state: Any, flags: int) -> None:
        self.state = state
        self.flags = flags
        self._chars: dict[int, frozenset[str] | None] = {}

    def min_width(self, items: list[Any]) -> int:
        if not items:
            return 0
        width: int = parser.SubPattern(self.state, items).getwidth()[0]
        return width

    def chars(self, item: Any) -> frozenset[str] | None:
        """The probe characters a single-character item matches (None: not such an item)."""
        key = id(item)
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


def _ambiguous(body: list[Any], context: _Context) -> bool:
    """Whether the body of an outer repetition can split text between iterations freely."""
    for sequence in _sequences(body):
        for index, item in enumerate(sequence):
            if item[0] not in _REPEATS or not _variable(item):
                continue
            inner = context.repeated_chars(item)
            others = sequence[:index] + sequence[index + 1 :]
            separated = inner is not None and any(
                context.min_width([other]) > 0
                and (chars := context.chars(other)) is not None
                and not chars & inner
                for other in others
            )
            if not separated:
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


def _scan(items: list[Any], context: _Context) -> bool:
    for op, av in items:
        if op in _REPEATS:
            body = list(av[2])
            if _many((op, av)) and _ambiguous(body, context):
                return True
            if _scan(body, context):
                return True
        elif op not in (sre.POSSESSIVE_REPEAT, sre.ATOMIC_GROUP) and any(
            _scan(child, context) for child in _children(op, av)
        ):
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
        from agent_reliability_harness.model._checks import bad

        raise bad(
            pointer,
            f"pattern {pattern!r} can match without consuming a character (its shortest match "
            "is empty, as with \\b, \\B or a lookahead alone), so it matches almost every "
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
        from agent_reliability_harness.model._checks import bad

        raise bad(
            pointer,
            f"pattern {pattern!r} has a capturing group inside a possessive repetition (such as "
            "(b)++ or (?:a(b))*+), on which Python's regular expression engine can fail with "
            "SystemError; make the group non-capturing: (?:...)",
        )
