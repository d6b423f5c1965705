"""Cheap necessary conditions for case-insensitive regex search, so most texts skip the regex.

Python's ``re`` cannot use its literal-prefix speed-up for case-insensitive patterns, so a search
tries a match at every position of every text. Most unsafe-pattern searches fail, though, and
most patterns contain literal words that any match must contain. This module reads those words
out of the parsed pattern; a text whose case-folded form lacks them cannot match, and the regex is
skipped for it. When the text might match, the real ``re.search`` decides, so findings are exactly
those of searching every pattern in every text (a property test checks this).

Case folding has to agree with ``re.IGNORECASE``. With IGNORECASE an ASCII letter matches its
other case and, of all non-ASCII characters, only U+0130 and U+0131 (i), U+017F (s) and U+212A
(k); no non-ASCII character matches an ASCII digit or punctuation character. ``fold`` maps those
four to their ASCII letter and lowercases the rest, so after folding a character equals an ASCII
letter exactly when the regex would accept it there. Only ASCII literals are used.
"""

from __future__ import annotations

from collections.abc import Callable
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as parser  # type: ignore[attr-defined]
from typing import Any, Final

__all__ = ["Condition", "condition", "fold", "requirement_check"]

_SPECIAL: Final = str.maketrans({0x130: "i", 0x131: "i", 0x17F: "s", 0x212A: "k"})
_MIN_LENGTH: Final = 2  # a one-character literal rules out too few texts to be worth a check

# Each alternative set: at least one of its strings must occur in the folded text.
Condition = tuple[tuple[str, ...], ...]


def fold(text: str) -> str:
    """Case-fold text the way ``re.IGNORECASE`` compares it with ASCII letters."""
    if text.isascii():
        return text.lower()
    return text.translate(_SPECIAL).lower()


def _literal_char(op: Any, av: Any) -> str | None:
    if op == sre.LITERAL and av < 128 and av != 0:
        return chr(av).lower()
    return None


def _required(items: list[Any]) -> list[tuple[str, ...]]:
    """Requirements of a sequence: each tuple lists strings of which one must occur."""
    found: list[tuple[str, ...]] = []
    run: list[str] = []

    def close() -> None:
        if run:
            found.append(("".join(run),))
            run.clear()

    for op, av in items:
        char = _literal_char(op, av)
        if char is not None:
            run.append(char)
            continue
        if op == sre.SUBPATTERN:
            inner = list(av[3])
            if all(_literal_char(o, a) is not None for o, a in inner):
                run.extend(c for o, a in inner if (c := _literal_char(o, a)) is not None)
                continue
            close()
            found.extend(_required(inner))
            continue
        close()
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT) and av[0] >= 1:
            found.extend(_required(list(av[2])))
        elif op == sre.BRANCH:
            options: list[str] = []
            for alternative in av[1]:
                best = _best(_required(list(alternative)))
                if best is None or len(best) != 1:
                    options = []
                    break
                options.append(best[0])
            if options:
                found.append(tuple(sorted(set(options))))
    close()
    return found


def _strength(requirement: tuple[str, ...]) -> int:
    return min(len(s) for s in requirement)


def _best(requirements: list[tuple[str, ...]]) -> tuple[str, ...] | None:
    usable = [r for r in requirements if _strength(r) >= _MIN_LENGTH]
    return max(usable, key=_strength, default=None)


def condition(pattern: str, flags: int = 0) -> Condition:
    """The strongest requirements (at most two) a text must meet to possibly match ``pattern``.

    An empty condition means no cheap test is known: always run the regex.
    """
    try:
        requirements = _required(list(parser.parse(pattern, flags)))
    except Exception:  # noqa: BLE001 - an unusual pattern just gets no shortcut
        return ()
    usable = sorted(
        {r for r in requirements if _strength(r) >= _MIN_LENGTH}, key=lambda r: (-_strength(r), r)
    )
    return tuple(usable[:2])


def _always(_folded: str) -> bool:
    return True


def requirement_check(requirements: Condition) -> Callable[[str], bool]:
    """A function telling whether a folded text meets every requirement."""
    if not requirements:
        return _always
    if len(requirements) == 1 and len(requirements[0]) == 1:
        (needle,) = requirements[0]
        return lambda folded: needle in folded

    def meets(folded: str) -> bool:
        return all(any(s in folded for s in options) for options in requirements)

    return meets
