"""Fast necessary conditions for case-insensitive regex search, so most texts skip the regex.

Python's ``re`` cannot use its literal-prefix speed-up for case-insensitive patterns: a search
tries a match at every position of every text. Unsafe-pattern searches almost always fail, so
each pattern gets a cheap test that a text must pass before the real ``re.search`` runs on it.
Findings are therefore exactly those of searching every pattern in every text; a property test
checks this against plain search, and exhaustive tests check the facts about Unicode below.

**Folding.** The test runs on a *folded* copy of the text, one character per character:

* an ASCII letter becomes lower case, and the four non-ASCII characters that ``re.IGNORECASE``
  lets match an ASCII letter (U+0130 and U+0131 for i, U+017F for s, U+212A for k) become that
  letter;
* every decimal digit (Unicode category Nd, what ``\\d`` matches), ASCII or not, becomes ``0``;
* every other non-ASCII character becomes U+0080, the *placeholder*;
* every other ASCII character stays as it is.

So each folded character ``c`` stands for a set of original characters, its *preimage* ``S(c)``:
``S("k")`` is k, K and U+212A, ``S("0")`` the 600-odd decimal digits, ``S(U+0080)`` most of
Unicode, ``S(":")`` just the colon. Positions and lengths are unchanged, and the folded text has
only characters below U+0100, which Python stores one byte each.

**The folded regex.** A pattern is rewritten into a regex over folded text that matches
*wherever the pattern can*: if the pattern matches a string ``s``, the rewrite matches
``fold(s)`` at the same place. It is built item by item:

1. A single-character item ``X`` (a literal, a class, ``.``, a negated literal), under the flags
   in force where it stands (``(?-i:...)``, ``(?a:...)`` and ``(?s:...)`` change them), becomes
   the set ``F(X)`` of folded characters ``c`` such that ``X`` matches some member of ``S(c)``.
   For the members that are ASCII or special letters, this is computed exactly, by matching
   ``X`` itself against each of them. The other members, the non-ASCII digits of ``S("0")`` and
   all of ``S(U+0080)``, are too many to try: ``X`` is taken to reach them unless it provably
   cannot. A literal, range or positive class of ASCII characters reaches none of them (under
   ``IGNORECASE`` no non-ASCII character but the four special letters matches an ASCII
   character); ``\\d`` reaches no character of ``S(U+0080)``, ``\\s`` no digit. A negated class,
   a negated literal, ``.`` and the other categories reach both. Each of these facts is checked
   for every code point by the tests. Taking more only makes the test weaker, never wrong: a
   negated class such as ``[^0-9]`` takes ``0``, because a non-ASCII digit is in ``S("0")``.
2. Concatenation, alternation and repetition keep their shape, so the rewrite's language holds
   the folds of the pattern's whole language.
3. Assertions (``^``, ``$``, ``\\b``, lookarounds) are dropped: without them the pattern matches
   more. A possessive repetition becomes a greedy one and an atomic group a plain group, which
   match every string those match.
4. Backreferences and conditional groups compare text the folding has changed: such a pattern
   is not rewritten, and falls back to a list of literal strings that every match must contain
   (computed from the same sets ``F``).

Because the rewrite keeps no assertion and no capture, it also holds for several texts joined
with NUL: one test on a whole trace can rule a pattern out for all of it.

The parse tree comes from ``re._parser``, a CPython internal. If it is missing, or its output
does not have the shape this module reads, every pattern is simply searched in every text.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Any, Final

try:
    from re import _constants as sre  # type: ignore[attr-defined]
    from re import _parser as parser  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - another Python: every text is searched
    sre = parser = None

__all__ = ["Prefilter", "fold", "literal_requirements", "rewrite_for_folded"]

PLACEHOLDER: Final = "\x80"
SPECIAL: Final = {"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"}

_ASCII_BYTES: Final = bytes(range(128))
# UTF-8 folded to one byte per character: ASCII letters lower case, digits "0", the first byte
# of a non-ASCII character the placeholder (its continuation bytes are deleted).
_UTF8_FOLD: Final = (
    bytes((c + 32 if 65 <= c <= 90 else 48 if 48 <= c <= 57 else c) for c in range(128))
    + PLACEHOLDER.encode("latin-1") * 128
)
_CONTINUATION_BYTES: Final = bytes(range(0x80, 0xC0))
# The same for ASCII text folded as text: for a long text, one copy instead of three (encoded,
# folded, decoded), and faster; for a short one, a call takes longer.
_ASCII_FOLD: Final = dict(enumerate(_UTF8_FOLD[:128]))
_LONG_TEXT: Final = 1 << 12
# First code points of the runs of non-ASCII decimal digits (each run is at most 60 long), for
# the Unicode versions of Python 3.11 to 3.13; other versions compute them (once, on the first
# non-ASCII text).
_DIGIT_RUNS_VERSIONS: Final = ("14.0.0", "15.0.0", "15.1.0")
_DIGIT_RUNS: Final = (
    0x660, 0x6F0, 0x7C0, 0x966, 0x9E6, 0xA66, 0xAE6, 0xB66, 0xBE6, 0xC66, 0xCE6, 0xD66, 0xDE6,
    0xE50, 0xED0, 0xF20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90, 0x1B50,
    0x1BB0, 0x1C40, 0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0, 0xFF10,
    0x104A0, 0x10D30, 0x11066, 0x110F0, 0x11136, 0x111D0, 0x112F0, 0x11450, 0x114D0, 0x11650,
    0x116C0, 0x11730, 0x118E0, 0x11950, 0x11C50, 0x11D50, 0x11DA0, 0x11F50, 0x16A60, 0x16AC0,
    0x16B50, 0x1D7CE, 0x1E140, 0x1E2F0, 0x1E4F0, 0x1E950, 0x1FBF0,
)  # fmt: skip
_MIN_LENGTH: Final = 2
_MAX_ALTERNATIVES: Final = 32
_MAX_CLASS: Final = 4
_MAX_UNROLL: Final = 16
_MAX_UNROLLED_ITEMS: Final = 256

# Up to two groups of folded strings; a text can match only if it contains a string of each group.
Groups = tuple[tuple[str, ...], ...]


class _Unicode:
    """The non-ASCII characters folding must replace before the byte table, and their bytes."""

    replacements: dict[str, bytes] | None = None

    @classmethod
    def get(cls) -> dict[str, bytes]:
        if cls.replacements is None:
            if unicodedata.unidata_version in _DIGIT_RUNS_VERSIONS:
                digits = [cp for start in _DIGIT_RUNS for cp in range(start, start + 60)
                          if chr(cp).isdecimal()]  # fmt: skip
            else:
                digits = [cp for cp in range(0x80, 0x110000) if chr(cp).isdecimal()]
            cls.replacements = {
                **dict.fromkeys(map(chr, digits), b"0"),
                **{char: letter.encode("ascii") for char, letter in SPECIAL.items()},
            }
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


# -- the sets F(X) of single-character items -------------------------------------------------------

# The ASCII folded characters and the original characters each stands for (its preimage).
_ASCII_PREIMAGES: Final = {
    c: (chr(c) + chr(c - 32) if 97 <= c <= 122 else "0123456789" if c == 48 else chr(c))
    + "".join(special for special, letter in SPECIAL.items() if letter == chr(c))
    for c in range(128)
    if not (65 <= c <= 90 or 49 <= c <= 57)
}
# All the preimages in one string, and for each of its positions the folded character it stands
# for: one search of an item over this string finds the folded characters the item reaches.
_PREIMAGE_TEXT: Final = "".join(_ASCII_PREIMAGES.values())
_PREIMAGE_OWNER: Final = tuple(c for c, chars in _ASCII_PREIMAGES.items() for _ in chars)
_ALPHABET: Final = frozenset([*_ASCII_PREIMAGES, ord(PLACEHOLDER)])
# The folded characters of the members too many to try: non-ASCII digits and the placeholder's.
_NON_ASCII_DIGIT: Final = frozenset([ord("0")])
_OTHER: Final = frozenset([ord(PLACEHOLDER)])
_BOTH: Final = _NON_ASCII_DIGIT | _OTHER
_LINE_END: Final = frozenset([ord("\n")])
_FLAG_LETTERS: Final = ((re.IGNORECASE, "i"), (re.ASCII, "a"), (re.DOTALL, "s"))
_TYPE_FLAGS: Final = re.ASCII | re.LOCALE | re.UNICODE


class _UnsupportedError(Exception):
    """A parse tree of a shape this module does not read."""


def _char(code: int) -> str:
    return f"\\U{code:08x}"


def _member_source(kind: Any, value: Any) -> str:
    if kind == sre.LITERAL:
        return _char(value)
    if kind == sre.RANGE:
        return f"{_char(value[0])}-{_char(value[1])}"
    if kind == sre.CATEGORY:
        return _CATEGORY_ESCAPES[value]
    raise _UnsupportedError(kind)


def _item_source(op: Any, av: Any) -> str:
    """The source of a single-character item of a parse tree, on its own."""
    if op == sre.LITERAL:
        return _char(av)
    if op == sre.NOT_LITERAL:
        return f"[^{_char(av)}]"
    if op == sre.ANY:
        return "."
    if op != sre.IN:
        raise _UnsupportedError(op)
    members = list(av)
    negated = bool(members) and members[0][0] == sre.NEGATE
    body = "".join(_member_source(kind, value) for kind, value in members[negated:])
    return f"[{'^' if negated else ''}{body}]"


def _reaches_non_ascii(op: Any, av: Any) -> frozenset[int]:
    """The folded characters an item may stand for through a non-ASCII member of their preimage
    (other than the special letters), as the module docstring says."""
    if op == sre.LITERAL:
        return frozenset() if av < 128 else _BOTH
    if op != sre.IN or (av and av[0][0] == sre.NEGATE):
        return _BOTH
    reached: set[int] = set()
    for kind, value in av:
        if kind == sre.CATEGORY:
            reached |= _CATEGORY_REACH.get(value, _BOTH)
        elif (kind == sre.LITERAL and value < 128) or (kind == sre.RANGE and value[1] < 128):
            continue
        else:
            reached |= _BOTH
    return frozenset(reached)


@lru_cache(maxsize=1024)
def _folded_set(op: Any, av: Any, flags: int) -> frozenset[int]:
    """F(X): the folded characters a single-character item can stand for, under ``flags``."""
    if op == sre.LITERAL and av < 128:
        # A literal ASCII character matches only characters that fold as it does (under
        # IGNORECASE, its other case and maybe one of the four special letters).
        return frozenset([_fold_code(av)])
    letters = "".join(letter for flag, letter in _FLAG_LETTERS if flags & flag)
    item = re.compile(f"(?{letters}){_item_source(op, av)}" if letters else _item_source(op, av))
    found = {_PREIMAGE_OWNER[match.start()] for match in item.finditer(_PREIMAGE_TEXT)}
    return frozenset(found) | _reaches_non_ascii(op, av)


def _fold_code(code: int) -> int:
    if 65 <= code <= 90:
        return code + 32
    return 48 if 48 <= code <= 57 else code


def _single(op: Any, av: Any, flags: int) -> frozenset[int] | None:
    """F of a single-character item (None: not such an item)."""
    if op == sre.IN:
        av = tuple(av)  # hashable, for the cache
    elif op not in (sre.LITERAL, sre.NOT_LITERAL, sre.ANY):
        return None
    return _folded_set(op, av, flags)


def _combine(flags: int, add: int, remove: int) -> int:
    """The flags inside a group ``(?add-remove:...)``, as the regex compiler computes them."""
    if add & _TYPE_FLAGS:
        flags &= ~_TYPE_FLAGS
    return (flags | add) & ~remove


def _set_source(chars: frozenset[int]) -> str:
    if not chars:
        return "(?!)"  # the item can match nothing
    if len(chars) == 1:
        return _escape(next(iter(chars)))
    missing = _ALPHABET - chars
    if not missing:
        return "(?s:.)"
    if missing == _LINE_END:
        return "."
    # folded text holds only characters of the alphabet: the shorter of the set or its complement
    negate = len(missing) < len(chars)
    return f"[{'^' if negate else ''}{''.join(map(_escape, sorted(missing if negate else chars)))}]"


def _escape(code: int) -> str:
    char = chr(code)
    return char if char.isascii() and char.isalnum() else f"\\x{code:02x}"


# -- the folded regex ------------------------------------------------------------------------------

# A folded item: a set of folded characters (one position), or the source of a larger part.
_Folded = frozenset[int] | str


def _fold_items(items: list[Any], flags: int) -> list[_Folded]:
    """The items of a parse tree rewritten for folded text (the module docstring's steps)."""
    out: list[_Folded] = []
    for op, av in items:
        single = _single(op, av, flags)
        if single is not None:
            out.append(single)
        elif op in (sre.AT, sre.ASSERT, sre.ASSERT_NOT):
            continue  # dropping an assertion only lets the rewrite match more
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
            low, high, body = av
            inner = _fold_items(list(body), flags)
            if low == high <= _MAX_UNROLL and len(inner) * low <= _MAX_UNROLLED_ITEMS:
                out.extend(inner * low)  # spelt out, so that a literal prefix stays visible
            else:
                count = f"{{{low},}}" if high == sre.MAXREPEAT else f"{{{low},{high}}}"
                lazy = "?" if op == sre.MIN_REPEAT else ""
                out.append(f"(?:{_source(inner)}){count}{lazy}")
        elif op == sre.SUBPATTERN:
            _group, add, remove, body = av
            out.extend(_fold_items(list(body), _combine(flags, add, remove)))
        elif op == sre.ATOMIC_GROUP:
            out.extend(_fold_items(list(av), flags))
        elif op == sre.BRANCH:
            alternatives = [_source(_fold_items(list(alt), flags)) for alt in av[1]]
            out.append(f"(?:{'|'.join(alternatives)})")
        else:  # backreferences and conditional groups compare text the folding changed
            raise _UnsupportedError(op)
    return out


def _source(items: list[_Folded]) -> str:
    return "".join(item if isinstance(item, str) else _set_source(item) for item in items)


def _literal_prefix(items: list[_Folded]) -> str:
    prefix = []
    for item in items:
        if isinstance(item, str) or len(item) != 1:
            break
        prefix.append(chr(next(iter(item))))
    return "".join(prefix)


def _split_leading_branch(items: list[Any], flags: int) -> list[tuple[list[Any], int]]:
    """``(?:a|b)c`` as ``[ac, bc]``: each then starts with a literal that ``str.find`` can look
    for, where a leading alternation makes the regex try every position."""
    while items and items[0][0] in (sre.AT, sre.ASSERT, sre.ASSERT_NOT):
        items = items[1:]  # dropped by the rewrite anyway
    if items:
        op, av = items[0]
        if op == sre.SUBPATTERN and _combine(flags, av[1], av[2]) == flags:
            return _split_leading_branch(list(av[3]) + items[1:], flags)
        if op == sre.BRANCH and len(av[1]) <= _MAX_ALTERNATIVES:
            return [(list(alt) + items[1:], flags) for alt in av[1]]
    return [(items, flags)]


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


def _parse(pattern: str, flags: int) -> tuple[list[Any], int]:
    """The items of the pattern's parse tree and the flags in force at its top."""
    if parser is None:
        raise _UnsupportedError("no parser")
    tree = parser.parse(pattern, flags)
    return list(tree), tree.state.flags


def _variants(pattern: str, flags: int) -> list[_Variant] | None:
    """The pattern as alternatives, each with its literal requirements and folded regex."""
    if not _shape_understood():
        return None
    try:
        items, top_flags = _parse(pattern, flags)
        variants = []
        for alternative, alternative_flags in _split_leading_branch(items, top_flags):
            folded = _fold_items(alternative, alternative_flags)
            regex = re.compile(_source(folded))
            prefix = _literal_prefix(folded)
            # A test for a string costs a pass over the text where the string is absent, as
            # much as the regex's own pass, and saves that pass only then. So only single
            # strings are worth it (several options cost a pass each), and only those the
            # prefix, which the regex's search finds as fast, does not contain.
            worth: list[tuple[str, ...]] = [
                r for r in _required(alternative, alternative_flags)
                if len(r) == 1 and r[0] not in prefix
            ]  # fmt: skip
            variants.append(_Variant(_strongest(worth), regex, prefix))
    except Exception:  # noqa: BLE001 - a shape the rewrite does not handle gets no shortcut
        return None
    return variants


def rewrite_for_folded(pattern: str, flags: int) -> tuple[re.Pattern[str], ...] | None:
    """The pattern rewritten to run on folded text (see the module docstring), as one or more
    regexes of which at least one matches wherever the pattern does; None when not possible."""
    variants = _variants(pattern, flags)
    return None if variants is None else tuple(variant.regex for variant in variants)


# The parse trees of these patterns, as this module reads them. If ``re._parser`` gives anything
# else (another Python), it is not trusted and every text is searched.
_PROBES: Final = {
    r"(?-i:a)[^\dB-C].": "[(SUBPATTERN, (None, 0, 2, [(LITERAL, 97)])), (IN, [(NEGATE, None), "
    "(CATEGORY, CATEGORY_DIGIT), (RANGE, (66, 67))]), (ANY, None)]",
    r"(?:x|y){2,}?[^z]\b(?=w)": "[(MIN_REPEAT, (2, MAXREPEAT, [(IN, [(LITERAL, 120), "
    "(LITERAL, 121)])])), (NOT_LITERAL, 122), (AT, AT_BOUNDARY), (ASSERT, (1, [(LITERAL, 119)]))]",
}


@lru_cache(maxsize=1)
def _shape_understood() -> bool:
    try:
        return all(
            repr(_parse(probe, re.IGNORECASE)[0]) == expected for probe, expected in _PROBES.items()
        )
    except Exception:  # noqa: BLE001 - no parser, or one that fails: every text is searched
        return False


# -- literal requirements (the fallback) -----------------------------------------------------------


def _chars(op: Any, av: Any, flags: int) -> list[str] | None:
    """The folded characters a single-character item can match, if few."""
    single = _single(op, av, flags)
    if single is None or not 0 < len(single) <= _MAX_CLASS:
        return None
    return sorted(map(chr, single))


def _sequence(items: list[Any], flags: int) -> list[list[str]] | None:
    """A body of single-character items as the choices at each position, if it is one."""
    choices: list[list[str]] = []
    for op, av in items:
        chars = _chars(op, av, flags)
        if chars is not None:
            choices.append(chars)
        elif (
            op == sre.SUBPATTERN
            and (inner := _sequence(list(av[3]), _combine(flags, av[1], av[2]))) is not None
        ):
            choices.extend(inner)
        elif (
            op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT)
            and av[0] == av[1] <= _MAX_UNROLL
            and (inner := _sequence(list(av[2]), flags)) is not None
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


def _required(items: list[Any], flags: int) -> list[tuple[str, ...]]:
    """Requirements of a sequence: each tuple lists strings of which one must occur."""
    found: list[tuple[str, ...]] = []
    run = _Run(found)
    for op, av in items:
        chars = _chars(op, av, flags)
        if chars is not None:
            run.add(chars)
            continue
        if op == sre.SUBPATTERN:
            inner_flags = _combine(flags, av[1], av[2])
            if (inner := _sequence(list(av[3]), inner_flags)) is not None:
                for position in inner:
                    run.add(position)
                continue
            run.close()
            found.extend(_required(list(av[3]), inner_flags))
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT) and av[0] >= 1:
            body = _sequence(list(av[2]), flags)
            if body is not None and av[0] <= _MAX_UNROLL:
                for position in body * av[0]:
                    run.add(position)
                if av[1] != av[0]:
                    run.close()
                continue
            run.close()
            found.extend(_required(list(av[2]), flags))
        elif op == sre.ATOMIC_GROUP:
            run.close()
            found.extend(_required(list(av), flags))
        elif op == sre.BRANCH:
            run.close()
            options: list[str] = []
            for alternative in av[1]:
                best = _best(_required(list(alternative), flags))
                if best is None:
                    options = []
                    break
                options.extend(best)
            if options and len(set(options)) <= _MAX_ALTERNATIVES:
                found.append(tuple(sorted(set(options))))
        else:  # anything else may match text of any kind: the run of required characters ends
            run.close()
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
    if not _shape_understood():
        return ()
    try:
        return _strongest(_required(*_parse(pattern, flags)))
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


if sre is not None:
    _CATEGORY_ESCAPES: Final = {
        sre.CATEGORY_DIGIT: r"\d", sre.CATEGORY_NOT_DIGIT: r"\D",
        sre.CATEGORY_SPACE: r"\s", sre.CATEGORY_NOT_SPACE: r"\S",
        sre.CATEGORY_WORD: r"\w", sre.CATEGORY_NOT_WORD: r"\W",
    }  # fmt: skip
    # What each category may reach of the non-ASCII characters, in Unicode and in ASCII mode
    # (checked for every code point by the tests): \d matches no character that folds to the
    # placeholder, and \s no digit. The others may reach both.
    _CATEGORY_REACH: Final = {
        sre.CATEGORY_DIGIT: _NON_ASCII_DIGIT,
        sre.CATEGORY_SPACE: _OTHER,
    }
