"""Fast necessary conditions for case-insensitive regex search, so most texts skip the regex.

Python's ``re`` cannot use its literal-prefix speed-up for case-insensitive patterns: a search
tries a match at every position of every text. Unsafe-pattern searches almost always fail, so
each pattern gets a cheap test that a text must pass before the real ``re.search`` runs on it.
Findings are therefore exactly those of searching every pattern in every text (a property test
checks this against plain search).

The test runs on a *folded* copy of the text, in which every character stands for what it can
match under ``re.IGNORECASE``:

* ASCII letters become lower case. Under IGNORECASE an ASCII letter matches its other case and,
  of all non-ASCII characters, only U+0130 and U+0131 (i), U+017F (s) and U+212A (k), which are
  mapped to those letters; no non-ASCII character matches an ASCII digit or punctuation mark.
* Every decimal digit (Unicode category Nd, what ``\\d`` matches) becomes ``0``.
* Every other non-ASCII character becomes U+0080, a *placeholder*. Such a character can match
  only ``.``, negated classes and the categories ``\\s``, ``\\w``, ``\\S``, ``\\W`` and ``\\D``.
  The placeholder matches ``.``, ``\\S``, ``\\W`` and ``\\D``; the rewrite below adds it to
  ``\\s`` and ``\\w``, and turns a negated class holding ``\\S``, ``\\W`` or ``\\D`` (which the
  placeholder cannot pass) into any character.

Folding keeps one character per character, so positions and repetition counts are unchanged,
and its result has only characters below U+0100, which Python stores one byte each and searches
faster than wider text.

The preferred test is a *folded regex*: the pattern itself rewritten for folded text (letters
lower case, digits ``0``, case-sensitive, assertions such as ``\\b``, ``^`` and lookarounds
dropped), which matches wherever the original does, and finds its literal prefix at C speed.
Patterns it cannot rewrite safely (non-ASCII literals, backreferences) fall back to a list of
literal strings that any match must contain. Because the tests drop assertions and never
require anything across a NUL, they also hold for several texts joined with NUL: one test on a
whole trace can rule a pattern out for all of it.
"""

from __future__ import annotations

import re
from re import _compiler as compiler  # type: ignore[attr-defined]
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as parser  # type: ignore[attr-defined]

TYPE_CHECKING = False  # `typing` costs milliseconds at start-up; only type checkers need it
if TYPE_CHECKING:
    from typing import Any, Final

__all__ = ["Prefilter", "fold", "literal_requirements", "rewrite_for_folded"]

_ASCII_BYTES: Final = bytes(range(128))
# UTF-8 folded to one byte per character: ASCII letters lower case, digits "0", the first byte
# of a non-ASCII character the placeholder (its continuation bytes are deleted).
_PLACEHOLDER: Final = 0x80
_UTF8_FOLD: Final = (
    bytes((c + 32 if 65 <= c <= 90 else 48 if 48 <= c <= 57 else c) for c in range(128))
    + bytes([_PLACEHOLDER]) * 128
)
_CONTINUATION_BYTES: Final = bytes(range(0x80, 0xC0))
# The same for ASCII text folded as text: for a long text, one copy instead of three (encoded,
# folded, decoded), and faster; for a short one, a call takes longer.
_ASCII_FOLD: Final = dict(enumerate(_UTF8_FOLD[:128]))
_LONG_TEXT: Final = 1 << 12
_SPECIAL: Final = {"\u0130": b"i", "\u0131": b"i", "\u017f": b"s", "\u212a": b"k"}
# First code points of the runs of non-ASCII decimal digits, for the Unicode version below; other
# versions compute them (once, on the first non-ASCII text).
_DIGIT_RUNS_VERSION: Final = "14.0.0"
_DIGIT_RUNS: Final = (
    0x660, 0x6F0, 0x7C0, 0x966, 0x9E6, 0xA66, 0xAE6, 0xB66, 0xBE6, 0xC66, 0xCE6, 0xD66, 0xDE6,
    0xE50, 0xED0, 0xF20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90, 0x1B50,
    0x1BB0, 0x1C40, 0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0, 0xFF10,
    0x104A0, 0x10D30, 0x11066, 0x110F0, 0x11136, 0x111D0, 0x112F0, 0x11450, 0x114D0, 0x11650,
    0x116C0, 0x11730, 0x118E0, 0x11950, 0x11C50, 0x11D50, 0x11DA0, 0x16A60, 0x16AC0, 0x16B50,
    0x1D7CE, 0x1E140, 0x1E2F0, 0x1E950, 0x1FBF0,
)  # fmt: skip
_MIN_LENGTH: Final = 2
_MAX_ALTERNATIVES: Final = 32
_MAX_CLASS: Final = 4
_MAX_UNROLL: Final = 16
_REPEATS: Final = (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT)

# Up to two groups of folded strings; a text can match only if it contains a string of each group.
Groups = tuple[tuple[str, ...], ...]


class _Unicode:
    """The non-ASCII characters folding must replace, and their replacements."""

    replacements: dict[str, bytes] | None = None

    @classmethod
    def get(cls) -> dict[str, bytes]:
        if cls.replacements is None:
            import unicodedata  # only for texts with non-ASCII characters

            if unicodedata.unidata_version == _DIGIT_RUNS_VERSION:
                digits = [cp for start in _DIGIT_RUNS for cp in range(start, start + 60)
                          if chr(cp).isdecimal()]  # fmt: skip
            else:
                digits = [cp for cp in range(0x80, 0x110000) if chr(cp).isdecimal()]
            cls.replacements = {**dict.fromkeys(map(chr, digits), b"0"), **_SPECIAL}
        return cls.replacements


def fold(text: str) -> str:
    """Fold text as described in the module docstring."""
    if len(text) >= _LONG_TEXT and text.isascii():
        return text.translate(_ASCII_FOLD)
    data = text.encode("utf-8", "surrogatepass")
    if not text.isascii():
        # Deleting the ASCII bytes of UTF-8 leaves exactly the non-ASCII characters, whole.
        rest = data.translate(None, _ASCII_BYTES).decode("utf-8", "surrogatepass")
        replacements = _Unicode.get()
        for char in replacements.keys() & set(rest):
            data = data.replace(char.encode("utf-8"), replacements[char])
        return data.translate(_UTF8_FOLD, _CONTINUATION_BYTES).decode("latin-1")
    return data.translate(_UTF8_FOLD).decode("ascii")


# -- the folded regex ------------------------------------------------------------------------------


def _fold_code(code: int) -> int:
    if 65 <= code <= 90:
        return code + 32
    return 48 if 48 <= code <= 57 else code


# Categories that match some non-ASCII characters but not the placeholder.
_MISSES_PLACEHOLDER: Final = (sre.CATEGORY_SPACE, sre.CATEGORY_WORD)
# Categories that match the placeholder but not every non-ASCII character.
_HAS_PLACEHOLDER: Final = (sre.CATEGORY_NOT_SPACE, sre.CATEGORY_NOT_WORD, sre.CATEGORY_NOT_DIGIT)


def _fold_set(members: list[Any]) -> list[Any] | None:
    negated = bool(members) and members[0][0] == sre.NEGATE
    if negated and any(kind == sre.CATEGORY and value in _HAS_PLACEHOLDER
                       for kind, value in members):  # fmt: skip
        # the class may take a character that its placeholder cannot stand for: any character
        return [(sre.NEGATE, None)]
    out: list[Any] = [(sre.NEGATE, None)] if negated else []
    for kind, value in members[1:] if negated else members:
        if kind == sre.LITERAL:
            if value >= 128:
                return None
            if negated and 48 <= value <= 57:
                continue  # folded text cannot tell this digit from the others: match more
            out.append((sre.LITERAL, _fold_code(value)))
        elif kind == sre.RANGE:
            low, high = value
            if high >= 128:
                return None
            codes = {_fold_code(c) for c in range(low, high + 1)}
            if negated and not (low <= 48 and high >= 57):
                codes.discard(48)
            out.extend((sre.LITERAL, c) for c in sorted(codes))
        elif kind == sre.CATEGORY:
            out.append((kind, value))
            if not negated and value in _MISSES_PLACEHOLDER:
                out.append((sre.LITERAL, _PLACEHOLDER))
        else:
            return None
    return out


def _fold_items(items: list[Any]) -> list[Any] | None:
    out: list[Any] = []
    for op, av in items:
        if op in (sre.LITERAL, sre.NOT_LITERAL):
            if av >= 128:
                return None
            if op == sre.NOT_LITERAL and 48 <= av <= 57:
                out.append((sre.IN, [(sre.NEGATE, None)]))  # any character
            else:
                out.append((op, _fold_code(av)))
        elif op == sre.IN:
            if _chars(op, av) == ["0"]:
                out.append((sre.LITERAL, 48))  # on folded text every digit is "0"
                continue
            members = _fold_set(list(av))
            if members is None:
                return None
            out.append((op, members))
        elif op == sre.ANY:
            out.append((op, av))
        elif op in (sre.AT, sre.ASSERT, sre.ASSERT_NOT):
            continue  # dropping an assertion only lets the rewrite match more
        elif op in _REPEATS:
            body = _fold_items(list(av[2]))
            if body is None:
                return None
            if av[0] == av[1] <= _MAX_UNROLL:
                # spelt out, so that a literal prefix stays visible to the regex compiler
                for _ in range(av[0]):
                    out.extend(_plain(body))
            else:
                # A possessive repetition never gives back what it took; on folded text it may
                # take more (a placeholder is \w and \s, every digit is 0) and then fail where
                # the pattern matches, so it becomes a greedy one, which matches wherever it does.
                kind = sre.MAX_REPEAT if op == sre.POSSESSIVE_REPEAT else op
                out.append((kind, (av[0], av[1], body)))
        elif op == sre.SUBPATTERN:
            group, add, remove, body = av
            inner = _fold_items(list(body))
            if inner is None:
                return None
            out.append((op, (group, add & ~re.IGNORECASE, remove & ~re.IGNORECASE, inner)))
        elif op == sre.ATOMIC_GROUP:
            inner = _fold_items(list(av))
            if inner is None:
                return None
            out.append((sre.SUBPATTERN, (None, 0, 0, inner)))  # it may backtrack: as possessive
        elif op == sre.BRANCH:
            alternatives = [_fold_items(list(alt)) for alt in av[1]]
            if any(alt is None for alt in alternatives):
                return None
            out.append((op, (None, alternatives)))
        else:  # backreferences and conditional groups compare text case-insensitively
            return None
    return out


def _plain(items: list[Any]) -> list[Any]:
    """Items of a body without capturing groups, so that it can be repeated inline."""
    plain: list[Any] = []
    for op, av in items:
        if op == sre.SUBPATTERN:
            plain.append((op, (None, av[1], av[2], _plain(av[3]))))
        elif op in _REPEATS:
            plain.append((op, (av[0], av[1], _plain(av[2]))))
        elif op == sre.BRANCH:
            plain.append((op, (None, [_plain(alt) for alt in av[1]])))
        elif op == sre.ATOMIC_GROUP:
            plain.append((op, _plain(av)))
        else:
            plain.append((op, av))
    return plain


def _subpattern(state: Any, items: list[Any]) -> Any:
    return parser.SubPattern(state, [
        (op, _subpatterns(state, op, av)) for op, av in items
    ])  # fmt: skip


def _subpatterns(state: Any, op: Any, av: Any) -> Any:
    """Turn the plain lists of a rewritten tree back into SubPatterns, as the compiler expects."""
    if op in _REPEATS:
        return (av[0], av[1], _subpattern(state, av[2]))
    if op == sre.SUBPATTERN:
        return (av[0], av[1], av[2], _subpattern(state, av[3]))
    if op == sre.ATOMIC_GROUP:
        return _subpattern(state, av)
    if op == sre.BRANCH:
        return (None, [_subpattern(state, alt) for alt in av[1]])
    return av


def _split_leading_branch(items: list[Any]) -> list[list[Any]]:
    """``(?:a|b)c`` as ``[ac, bc]``: each then starts with a literal the compiler can search
    for quickly, where a leading alternation makes it try every position."""
    while items and items[0][0] in (sre.AT, sre.ASSERT, sre.ASSERT_NOT):
        items = items[1:]  # dropped by the rewrite anyway
    if items:
        op, av = items[0]
        if op == sre.SUBPATTERN and not av[1] and not av[2]:
            return _split_leading_branch(list(av[3]) + items[1:])
        if op == sre.BRANCH and len(av[1]) <= _MAX_ALTERNATIVES:
            return [list(alt) + items[1:] for alt in av[1]]
    return [items]


class _Variant:
    """One alternative of a pattern: its folded regex, the literal its matches start with, and
    the literal requirements worth testing before the regex runs (see :func:`_variants`)."""

    __slots__ = ("groups", "prefix", "regex")

    def __init__(self, groups: Groups, regex: re.Pattern[str], prefix: str) -> None:
        self.groups = groups
        self.regex = regex
        self.prefix = prefix

    def spans(self, folded: str, seen: dict[str, bool] | None) -> list[tuple[int, int]]:
        """The spans of a leftmost-first scan, as ``finditer`` reports them."""
        if not _meets(self.groups, folded, seen):
            return []
        # Every match starts with the prefix: the scan may start where it first occurs, which
        # str.find finds faster than the regex's own search (and often finds nowhere).
        start = folded.find(self.prefix)
        if start < 0:
            return []
        return [match.span() for match in self.regex.finditer(folded, start)]


def _literal_prefix(items: list[Any]) -> str:
    prefix = []
    for op, av in items:
        if op != sre.LITERAL:
            break
        prefix.append(chr(av))
    return "".join(prefix)


def _shallow_copy(state: Any) -> Any:
    """``copy.copy`` of the parser's state, a plain object, without importing ``copy`` (and the
    ``weakref`` it loads: about two milliseconds of every start with unsafe patterns)."""
    if not hasattr(state, "__dict__"):  # pragma: no cover - another Python's parser
        import copy

        return copy.copy(state)
    new = object.__new__(type(state))
    new.__dict__.update(state.__dict__)
    return new


def _variants(pattern: str, flags: int) -> list[_Variant] | None:
    """The pattern as alternatives, each with its literal requirements and folded regex."""
    try:
        tree = parser.parse(pattern, flags)
        state = _shallow_copy(tree.state)
        state.flags &= ~re.IGNORECASE
        variants = []
        for items in _split_leading_branch(list(tree)):
            folded = _fold_items(items)
            if folded is None:
                return None
            regex = compiler.compile(_subpattern(state, folded), 0)
            prefix = _literal_prefix(folded)
            # A test for a string costs a pass over the text where the string is absent, as
            # much as the regex's own pass, and saves that pass only then. So only single
            # strings are worth it (several options cost a pass each), and only those the
            # prefix, which the regex's search finds as fast, does not contain.
            worth: list[tuple[str, ...]] = [
                r for r in _required(items) if len(r) == 1 and r[0] not in prefix
            ]
            variants.append(_Variant(_strongest(worth), regex, prefix))
    except Exception:  # noqa: BLE001 - a shape the rewrite does not handle gets no shortcut
        return None
    return variants


def rewrite_for_folded(pattern: str, flags: int) -> tuple[re.Pattern[str], ...] | None:
    """The pattern rewritten to run on folded text (see the module docstring), as one or more
    regexes of which at least one matches wherever the pattern does; None when not possible."""
    variants = _variants(pattern, flags)
    return None if variants is None else tuple(variant.regex for variant in variants)


# -- literal requirements (the fallback) -----------------------------------------------------------


def _chars(op: Any, av: Any) -> list[str] | None:
    """The folded characters a single-character item can match, if few and all ASCII."""
    if op == sre.LITERAL:
        return [chr(_fold_code(av))] if 0 < av < 128 else None
    if op != sre.IN:
        return None
    found: set[str] = set()
    for kind, value in av:
        if kind == sre.LITERAL and 0 < value < 128:
            found.add(chr(_fold_code(value)))
        elif (kind == sre.CATEGORY and value == sre.CATEGORY_DIGIT) or (
            kind == sre.RANGE and 48 <= value[0] <= value[1] <= 57
        ):
            found.add("0")
        else:
            return None
    return sorted(found) if 0 < len(found) <= _MAX_CLASS else None


def _sequence(items: list[Any]) -> list[list[str]] | None:
    """A body of single-character items as the choices at each position, if it is one."""
    choices: list[list[str]] = []
    for op, av in items:
        chars = _chars(op, av)
        if chars is not None:
            choices.append(chars)
        elif op == sre.SUBPATTERN and (inner := _sequence(list(av[3]))) is not None:
            choices.extend(inner)
        elif (
            op in _REPEATS
            and av[0] == av[1] <= _MAX_UNROLL
            and (inner := _sequence(list(av[2]))) is not None
        ):
            choices.extend(inner * av[0])
        else:
            return None
    return choices


class _Run:
    """Consecutive required characters, as the set of strings they can spell."""

    def __init__(self, found: list[tuple[str, ...]]) -> None:
        self.found = found
        self.strings: list[str] = [""]

    def add(self, chars: list[str]) -> None:
        if len(self.strings) * len(chars) > _MAX_ALTERNATIVES:
            self.close()
        self.strings = [s + c for s in self.strings for c in chars]

    def close(self) -> None:
        if self.strings != [""]:
            self.found.append(tuple(sorted(set(self.strings))))
        self.strings = [""]


def _required(items: list[Any]) -> list[tuple[str, ...]]:
    """Requirements of a sequence: each tuple lists strings of which one must occur."""
    found: list[tuple[str, ...]] = []
    run = _Run(found)
    for op, av in items:
        chars = _chars(op, av)
        if chars is not None:
            run.add(chars)
            continue
        if op == sre.SUBPATTERN and (inner := _sequence(list(av[3]))) is not None:
            for position in inner:
                run.add(position)
            continue
        if op in _REPEATS and av[0] >= 1:
            body = _sequence(list(av[2]))
            if body is not None and av[0] <= _MAX_UNROLL:
                for position in body * av[0]:
                    run.add(position)
                if av[1] != av[0]:
                    run.close()
                continue
            run.close()
            found.extend(_required(list(av[2])))
            continue
        run.close()
        if op == sre.SUBPATTERN:
            found.extend(_required(list(av[3])))
        elif op == sre.BRANCH:
            options: list[str] = []
            for alternative in av[1]:
                best = _best(_required(list(alternative)))
                if best is None:
                    options = []
                    break
                options.extend(best)
            if options and len(set(options)) <= _MAX_ALTERNATIVES:
                found.append(tuple(sorted(set(options))))
    run.close()
    return found


def _strength(requirement: tuple[str, ...]) -> tuple[int, int, int]:
    shortest = min(requirement, key=len)
    return len(shortest), sum(c != "0" for c in shortest), -len(requirement)


def _best(requirements: list[tuple[str, ...]]) -> tuple[str, ...] | None:
    usable = [r for r in requirements if _strength(r)[0] >= _MIN_LENGTH]
    return max(usable, key=_strength, default=None)


def _strongest(requirements: list[tuple[str, ...]]) -> Groups:
    usable = sorted(
        {r for r in requirements if _strength(r)[0] >= _MIN_LENGTH},
        key=lambda r: (_strength(r), r),
        reverse=True,
    )
    return tuple(usable[:2])


def literal_requirements(pattern: str, flags: int = 0) -> Groups:
    """Up to two groups of strings; any match contains one string of each group (folded)."""
    try:
        return _strongest(_required(list(parser.parse(pattern, flags))))
    except Exception:  # noqa: BLE001 - an unusual pattern just gets no shortcut
        return ()


def _meets(groups: Groups, folded: str, seen: dict[str, bool] | None = None) -> bool:
    """Does the text contain a string of each group? ``seen`` remembers, for one text, which
    strings it contains: patterns of a policy often require the same words."""
    for options in groups:
        for needle in options:
            if seen is None:
                found = needle in folded
            elif needle in seen:
                found = seen[needle]
            else:
                found = seen[needle] = needle in folded
            if found:
                break
        else:
            return False
    return True


class Prefilter:
    """The tests of one pattern on folded text (see the module docstring)."""

    __slots__ = ("_groups", "_variants")

    def __init__(self, pattern: str, flags: int) -> None:
        self._variants = _variants(pattern, flags)
        # each variant has its own literal requirements; without variants, the whole pattern's
        self._groups = literal_requirements(pattern, flags) if self._variants is None else ()

    def may_match(self, folded: str) -> bool:
        """False only when no part of the text can match the pattern."""
        if self._variants is None:
            return _meets(self._groups, folded)
        return any(
            _meets(variant.groups, folded) and variant.regex.search(folded) is not None
            for variant in self._variants
        )

    def spans(
        self, folded: str, seen: dict[str, bool] | None = None
    ) -> list[tuple[int, int]] | None:
        """Spans of the folded text outside which no match of the pattern lies; None when they
        cannot be told (then any part may match). ``seen`` may carry, from the other patterns'
        tests of the same text, which literal strings it contains.

        Each match of the pattern overlaps a reported span: a leftmost-first scan reports a
        match starting at or before every position where one starts, unless an earlier match
        covers that position.
        """
        if self._variants is None:
            return None if _meets(self._groups, folded, seen) else []
        return [span for variant in self._variants for span in variant.spans(folded, seen)]
