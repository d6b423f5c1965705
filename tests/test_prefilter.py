"""The unsafe-pattern prefilter is sound: it never rules out a text the regex would match.

Soundness is checked against the plain case-insensitive ``re.search`` on generated patterns and
texts whose alphabets include the characters where case folding is subtle (U+0130, U+0131,
U+017F, U+212A, German sharp s), non-ASCII decimal digits, and non-ASCII characters that the
categories tell apart (whitespace, letters, symbols), which folding turns into one placeholder;
one text at a time and for texts joined with NUL as the scanner joins a trace's strings.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agent_reliability_harness.rules._prefilter import (
    PLACEHOLDER,
    SPECIAL,
    Prefilter,
    fold,
    literal_requirements,
    rewrite_for_folded,
)

# Characters where matching is subtle: case folding (U+0130, U+0131, U+017F, U+212A, sharp s and
# its capital, the Angstrom and ohm signs, micro, final sigma, a titlecase digraph), decimal digits
# outside ASCII (Arabic-Indic, fullwidth, Devanagari, mathematical), a superscript that is not a
# decimal digit, spaces outside ASCII (no-break, em, ideographic, next line, the ASCII separators
# that are \s only in Unicode mode), word characters and symbols that fold to the placeholder.
ALPHABET = (
    "abikKsSIi \u0130\u0131\u017f\u212a\u00df\u1e9e\u212b\u00e5\u2126\u03c9\u00b5\u03bc"
    "\u03c2\u03a3\u01c5-_:.\n0123\u0663\uff17\u0966\U0001d7ce\u00b2\u00a0\u2003\u3000"
    "\u0085\x1c\x7f\u00e9\u2014\u6771\U0001f600\x80"
)
ATOMS = [
    r"\b", r"\B", r"\s*", r"\d", r"\d{2}", r"\d{1,3}", "[0-9]", "[5-7]", "[^5-7]", "[^a-c]",
    "[:=]", ".", r"\w+", r"\S", "[a-c]", "[A-Z]", "^", "$", "7", "(?-i:K)", "(?=a)", "(?<!b)",
    "[^\\d]", r"\D", "k+?", "(?>ab)", "s++", "[^5]", "[^5x]", r"\A", r"\Z", "(?!x)",
    r"\s", r"\s+", r"\W", r"\w{2}", "[\\s-]", "[^\\W]", "[^\\S]", "[^\\D]", "[^\\s]", "[\\w:]",
    # possessive and atomic forms over classes that folding widens (digits, \w, \s)
    r"\d++", r"\w++", r"\s*+", "[0-4]++", r"(?>\w+)", "1?+", "0*+", r"\S++",
    # negated classes that exclude every ASCII digit or all of ASCII, and scoped flags (the
    # adversarial test of 0.3.0 found these passing traces that match)
    "[^0-9]", "[^\\x00-\\x7F]", "[^\\x20-\\x7e]", "[^a-z0-9 ]", "(?:[^\\x00-\\x7F]){3,}",
    "(?-i:[^a])", "(?-i:[^K])", "(?-i:[a-z])", "(?a:\\w)", "(?a:[^\\d])", "(?a:\\s)", "(?s:.)",
    "[^k]", "[^s]", "[^i]", "[\u0130-\u0131]", "\u00e9", "[^\u00e9]", "[\u00e0-\u00ff]",
    "\u212a", "\u00df", "[^\u00df]", "\u03a3", "[\\d\\s]", "[^\\W\\d]", "[^\\d\\s]",
    "[\u0660-\u0669]",
]  # fmt: skip
# Members of generated classes: characters of the alphabet, ranges and category escapes.
CLASS_CHARS = st.sampled_from(sorted(set("abikzAKSZ059 -:_\x00\x7f" + ALPHABET)))
CLASS_MEMBERS = st.one_of(
    CLASS_CHARS.map(lambda c: f"\\U{ord(c):08x}"),
    st.tuples(CLASS_CHARS, CLASS_CHARS).map(
        lambda pair: "-".join(f"\\U{ord(c):08x}" for c in sorted(pair))
    ),
    st.sampled_from([r"\d", r"\D", r"\s", r"\S", r"\w", r"\W"]),
)
CLASSES = st.builds(
    lambda negated, members: f"[{'^' if negated else ''}{''.join(members)}]",
    st.booleans(),
    st.lists(CLASS_MEMBERS, min_size=1, max_size=4),
)
# Scoped flags: case-sensitive, ASCII-only classes, a dot that matches a line end.
SCOPES = st.sampled_from(["(?-i:{})", "(?a:{})", "(?s:{})", "(?a-i:{})", "(?:{})"])
PIECES = st.one_of(
    st.text(alphabet="abikKsSIi \u00e9-_:7", min_size=1, max_size=4).map(re.escape),
    st.sampled_from(ATOMS),
    CLASSES,
    st.tuples(SCOPES, st.one_of(CLASSES, st.sampled_from(ATOMS))).map(
        lambda pair: pair[0].format(pair[1])
    ),
)


@st.composite
def patterns(draw: st.DrawFn) -> str:
    parts = draw(st.lists(PIECES, min_size=1, max_size=5))
    if draw(st.booleans()):
        alternatives = draw(st.lists(PIECES, min_size=2, max_size=3))
        parts.insert(draw(st.integers(0, len(parts))), "(" + "|".join(alternatives) + ")")
    if draw(st.booleans()):
        index = draw(st.integers(0, len(parts) - 1))
        # a repetition of a repetition or of an alternation, such as (?:\w+)+, can take time
        # exponential in the text to fail (the test then never ends): only a bounded one
        nested = any(char in parts[index] for char in "+*{|")
        times = ["?", "{2}"] if nested else ["+", "*", "?", "{2}"]
        parts[index] = "(?:" + parts[index] + ")" + draw(st.sampled_from(times))
    prefix = draw(st.sampled_from(["", "", "", "(?a)", "(?s)"]))
    return prefix + "".join(parts)


def _valid(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern, re.IGNORECASE)
    except re.error:
        return None


@settings(max_examples=1500, deadline=None)
@given(patterns(), st.lists(st.text(alphabet=ALPHABET, max_size=30), min_size=1, max_size=3))
@example("[^5]", ["3"])
@example("[^5x]", ["3"])
@example("^a", ["x", "a"])
@example("a$", ["a", "x"])
@example(r"(?<!b)a\b", ["b", "a"])
@example(r"\Bx", ["_", "x"])
@example(r"\d{2}\b", ["\u0663\u0664"])
# a possessive repetition or atomic group took more on folded text (every digit 0, the
# placeholder \w and \s at once) and failed where the pattern matches: traces passed
@example(r"\b1?+\d{10}\b", ["call 5551234567 now"])
@example(r"\w++\s+password", ["login\u00a0password"])
@example(r"(?>\w+)\s+password", ["my\u00a0password is x"])
@example(r"pin:\s*[0-4]++[5-9]", ["pin: 45"])
@example("0*+9", ["99"])
# a non-ASCII digit folded to 0, which the negated class excluded along with the ASCII digits
@example(r"[^\x00-\x7F]", ["transfer \u0663\u0664\u0665 to acct \uff11\uff12\uff13"])
@example(r"[^\x20-\x7e]", ["transfer \u0663\u0664\u0665"])
@example("[^0-9]", ["\u0663"])
@example("[^a-z0-9 ]", ["transfer \u0663\u0664\u0665"])
@example(r"(?:[^\x00-\x7F]){3,}", ["acct \uff11\uff12\uff13"])
# a negated class in a case-sensitive group matches the other case, which folds the same
@example("(?-i:[^a])x", ["Ax"])
@example(r"(?a)[^\d]", ["\u0663"])
def test_prefilter_never_rejects_a_matching_text(pattern: str, texts: list[str]) -> None:
    regex = _valid(pattern)
    if regex is None:
        return
    prefilter = Prefilter(pattern, regex.flags)
    joined = "\x00".join(texts)
    spans = prefilter.spans(fold(joined))
    offset = 0
    for text in texts:
        match = regex.search(text)
        if match is not None:
            assert prefilter.may_match(fold(text)), (pattern, text)
            assert prefilter.may_match(fold(joined)), (pattern, texts)
            if spans is not None:  # the match lies in a reported span's reach
                start, end = offset + match.start(), offset + max(match.end(), match.start() + 1)
                assert any(a < end and start < max(b, a + 1) for a, b in spans), (pattern, texts)
        offset += len(text) + 1


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=ALPHABET, min_size=1, max_size=6), st.text(alphabet=ALPHABET, max_size=30))
def test_literal_patterns(word: str, text: str) -> None:
    pattern = re.escape(word)
    if re.search(pattern, text, re.IGNORECASE) is not None:
        assert Prefilter(pattern, re.IGNORECASE | re.UNICODE).may_match(fold(text))


def test_fold_keeps_one_character_per_character() -> None:
    text = "Card 4111-1111 \u0130stanbul \u0663\u0664 \u212a \u00c9t\u00e9 \ud800"
    assert fold(text) == "card 0000-0000 istanbul 00 k \x80t\x80 \x80"
    assert len(fold(text)) == len(text)


def test_special_letters_fold_like_ignorecase() -> None:
    for text in ("PASSWORD", "pa\u017f\u017fword", "\u0130NSTRUCTIONS", "\u212aEY", "\u0131gnore"):
        for word in ("password", "instructions", "key", "ignore"):
            if re.search(word, text, re.IGNORECASE):
                assert word in fold(text)


def test_typical_patterns_are_rewritten() -> None:
    flags = re.IGNORECASE | re.UNICODE
    rewritten = rewrite_for_folded(r"\bPassword\s*[:=]", flags)
    assert rewritten is not None
    (regex,) = rewritten
    assert regex.search("my password: x") is not None
    assert regex.search("my password is safe") is None
    split = rewrite_for_folded(r"\b(?:api|secret)[_-]?key", flags)
    assert split is not None
    assert [r.search("secret-key") is not None for r in split] == [False, True]
    assert rewrite_for_folded(r"(a)\1", flags) is None  # backreferences are not rewritten
    # a non-ASCII letter may be any character that folds to the placeholder, or a digit
    (cafe,) = rewrite_for_folded("caf\u00e9", flags) or ()
    assert [bool(cafe.fullmatch(fold(word))) for word in ("CAF\u00c9", "caf\u00ea", "cafe")] == [
        True,
        True,
        False,
    ]
    # a negated class that lists every ASCII digit still takes 0: a non-ASCII digit folds to it
    (not_digit,) = rewrite_for_folded("x[^0-9]", flags) or ()
    assert not_digit.fullmatch(fold("x\u0663"))


def test_literal_requirements_of_typical_patterns() -> None:
    flags = re.IGNORECASE
    assert literal_requirements(r"\bpassword\s*[:=]", flags) == (("password",),)
    assert literal_requirements(
        "ignore (all|any|the) (previous|prior|above) instructions", flags
    ) == ((" instructions",), ("ignore ",))
    assert literal_requirements(r"\b\d{3}-\d{2}-\d{4}\b", flags) == (("000-00-0000",),)
    (card,) = literal_requirements(r"\b(?:\d{4}[ -]){3}\d{4}\b", flags)
    assert len(card) == 8  # 0000?0000?0000?0000 with each ? a space or a dash
    assert literal_requirements(r"[a-z]+", flags) == ()  # nothing cheap to require


# -- the whole scan of a trace against the plain search ------------------------------------------

VALUES = st.recursive(
    st.text(alphabet=ALPHABET, max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(alphabet=ALPHABET, max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)


def _plain_scan(steps: list[dict[str, object]], pattern_texts: list[str]) -> tuple[set, int, int]:
    """What the safety rule must find, computed the slow and obvious way: every string of every
    agent step searched with every pattern (re.search, IGNORECASE), named by its JSON pointer."""
    compiled = [re.compile(p, re.IGNORECASE) for p in pattern_texts]
    hits: set[tuple[str, str, bool, str]] = set()
    values = keys = 0

    def visit(step_id: str, pointer: str, value: object) -> None:
        nonlocal values, keys
        if isinstance(value, str):
            if value:
                values += 1
                hits.update(
                    (step_id, pointer, False, p.pattern) for p in compiled if p.search(value)
                )
        elif isinstance(value, dict):
            for key, child in value.items():
                here = pointer + "/" + key.replace("~", "~0").replace("/", "~1")
                found = {
                    (step_id, here, True, p.pattern) for p in compiled if key and p.search(key)
                }
                keys += bool(found)
                hits.update(found)
                visit(step_id, here, child)
        elif isinstance(value, list):
            for index, child in enumerate(value):
                visit(step_id, f"{pointer}/{index}", child)

    for step in steps:
        for field in ("text", "output", "arguments", "error"):
            if field in step:
                visit(str(step["step_id"]), "/" + field, step[field])
    return hits, values + keys, len(hits)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(patterns(), min_size=1, max_size=3),
    st.lists(st.tuples(VALUES, VALUES, st.text(alphabet=ALPHABET, max_size=20)), max_size=4),
    st.sampled_from([None, 1, 9, 40]),
)
def test_the_scan_finds_exactly_what_plain_search_finds(
    pattern_texts: list[str], contents: list[tuple[object, object, str]], piece: int | None
) -> None:
    """``piece``: the characters the scan tests together (None: its default), small here so
    that traces are scanned in several pieces."""
    from agent_reliability_harness import Policy, Trace
    from agent_reliability_harness.errors import InputError
    from agent_reliability_harness.rules import safety
    from agent_reliability_harness.rules._facts import TraceFacts
    from agent_reliability_harness.rules.selection import Findings

    # distinct patterns: a pattern listed twice is searched twice, which a set cannot show
    pattern_texts = [p for p in dict.fromkeys(pattern_texts) if _valid(p) is not None]
    if not pattern_texts:
        return
    steps: list[dict[str, object]] = []
    for index, (output, arguments, text) in enumerate(contents):
        steps.append(
            {"step_id": f"c{index}", "type": "tool_call", "tool_name": "t",
             "arguments": arguments if isinstance(arguments, dict) else {"a": arguments},
             "output": output}
        )  # fmt: skip
        steps.append({"step_id": f"r{index}", "type": "model_response", "text": text})
    trace = Trace.from_dict(
        {"schema_version": "1", "trace_id": "x", "agent_name": "a", "workflow": "w", "steps": steps}
    )
    try:
        policy = Policy.from_dict(
            {"schema_version": "1", "policy_id": "p", "unsafe_patterns": pattern_texts},
            allow_risky_patterns=True,
        )
    except InputError:  # a pattern that matches the empty string is refused
        return
    findings = Findings()
    default = safety._PIECE_CHARS
    safety._PIECE_CHARS = piece or default  # type: ignore[misc]
    try:
        result = safety.evaluate(TraceFacts(trace), safety.prepare(policy), findings)
    finally:
        safety._PIECE_CHARS = default  # type: ignore[misc]
    expected, checks, failed = _plain_scan(steps, pattern_texts)
    got = set()
    for finding in findings:
        pointer, _, pattern = finding.subject.partition(" ~ ")
        is_key = pointer.endswith(" (key)")
        got.add((finding.step_id, pointer.removesuffix(" (key)"), is_key, pattern))
    assert got == expected
    assert (result.checks, result.failed) == (checks, failed)


def _fold_one(char: str) -> str:
    """What a character stands for under IGNORECASE, from the definition in the docstring."""
    if "A" <= char <= "Z":
        return char.lower()
    if char.isdecimal():
        return "0"
    special = {"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"}
    return special.get(char, char if char.isascii() else "\x80")


@given(st.text(alphabet=st.characters(max_codepoint=0x2FF) | st.sampled_from(ALPHABET)))
def test_fold_is_the_character_by_character_definition(text: str) -> None:
    assert fold(text) == "".join(map(_fold_one, text))


@given(st.text(alphabet=st.characters(max_codepoint=0x7F), min_size=1), st.integers(0, 5000))
def test_fold_of_a_long_ascii_text_is_the_definition(text: str, length: int) -> None:
    # a long ASCII text is folded as text, in one copy (a short one through its UTF-8 bytes)
    long = (text * (1 + length // len(text)))[:length]
    assert fold(long) == "".join(map(_fold_one, long))


def test_a_long_ascii_text_is_folded_in_one_copy() -> None:
    # A text of megabytes (one long value, scanned whole) was encoded, folded and decoded:
    # three copies of it at once. (The safety scan's memory: benchmarks/perf/input_memory.py.)
    import tracemalloc

    text = "Flight AB1234 Delayed; " * 200_000
    tracemalloc.start()
    try:
        folded = fold(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert folded == "".join(map(_fold_one, text[:23])) * 200_000
    assert peak < 1.2 * len(text)


def test_fold_of_every_latin1_and_special_character() -> None:
    chars = "".join(map(chr, range(0x100))) + "\u0130\u0131\u017f\u212a\u0663\uff17\ud800"
    assert fold(chars) == "".join(map(_fold_one, chars))
    assert fold(chars[:0x100]) == "".join(map(_fold_one, chars[:0x100]))


# -- the facts about Unicode that the rewrite relies on, checked for every code point -------------

ALL_CHARS = "".join(map(chr, range(0x110000)))
FOLDED_ALL = fold(ALL_CHARS)


def _folding_to(folded: str) -> str:
    """Every character whose fold is ``folded``, in one string."""
    return "".join(char for char, got in zip(ALL_CHARS, FOLDED_ALL, strict=True) if got == folded)


def test_fold_of_every_code_point_is_the_definition() -> None:
    assert "".join(map(_fold_one, ALL_CHARS)) == FOLDED_ALL


@pytest.mark.parametrize("flags", [re.IGNORECASE, re.IGNORECASE | re.ASCII, 0])
def test_no_other_non_ascii_character_matches_an_ascii_one(flags: int) -> None:
    """An ASCII literal, range or class reaches no character that folds to the placeholder or is
    a non-ASCII digit; the special letters match only the ASCII letter they fold to."""
    special = set(SPECIAL)
    others = "".join(c for c in ALL_CHARS[128:] if c not in special)
    assert re.search("[\\x00-\\x7f]", others, flags) is None
    for code in range(128):
        assert re.search(f"\\x{code:02x}", others, flags) is None, hex(code)
        for char, letter in SPECIAL.items():
            if re.fullmatch(f"\\x{code:02x}", char, flags):
                assert fold(chr(code)) == letter, (hex(code), char)


@pytest.mark.parametrize("flags", [0, re.IGNORECASE, re.ASCII, re.ASCII | re.IGNORECASE])
def test_what_categories_reach_outside_ascii(flags: int) -> None:
    """\\d matches no character that folds to the placeholder, \\s no decimal digit."""
    assert re.search(r"\d", _folding_to(PLACEHOLDER), flags) is None
    assert re.search(r"[\d]", _folding_to(PLACEHOLDER), flags) is None
    digits = _folding_to("0")
    assert len(digits) > 600
    assert re.search(r"\s", digits, flags) is None
    assert re.search(r"[\s]", digits, flags) is None


def test_the_issue_cases_fail_the_trace() -> None:
    """The cases of the adversarial test, through the public API: each trace must fail."""
    from agent_reliability_harness import Policy, Trace, validate_trace

    text = "transfer \u0663\u0664\u0665 to acct \uff11\uff12\uff13"
    for pattern in (
        r"[^\x00-\x7F]", r"[^\x20-\x7e]", "[^0-9]", "[^a-z0-9 ]", r"(?:[^\x00-\x7F]){3,}"
    ):  # fmt: skip
        assert re.search(pattern, text, re.IGNORECASE)
        policy = Policy.from_dict({"policy_id": "p", "unsafe_patterns": [pattern]})
        trace = Trace.from_dict(
            {"trace_id": "t", "agent_name": "a", "workflow": "w",
             "steps": [{"step_id": "s1", "type": "model_response", "text": text}]}
        )  # fmt: skip
        report = validate_trace(trace, policy)
        assert [f.rule_id for f in report.findings] == ["ARH-SAF-001"], pattern
        assert not report.passed


# -- without the regex parser, or with one of another shape, every text is searched ---------------


@pytest.mark.parametrize("broken", ["missing", "other shape"])
def test_without_a_usable_parser_every_text_is_searched(
    broken: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_reliability_harness.rules import _prefilter

    if broken == "missing":
        monkeypatch.setattr(_prefilter, "parser", None)
    else:
        real = _prefilter.parser.parse
        monkeypatch.setattr(
            _prefilter.parser, "parse", lambda pattern, flags=0: list(real(pattern, flags))[::-1]
        )
    _prefilter._shape_understood.cache_clear()
    try:
        assert not _prefilter._shape_understood()
        prefilter = Prefilter(r"\bpassword\s*[:=]", re.IGNORECASE | re.UNICODE)
        assert prefilter.spans(fold("nothing to see")) is None  # cannot tell: search it all
        assert prefilter.may_match(fold("nothing to see"))
        assert literal_requirements("password", re.IGNORECASE) == ()
        test_the_issue_cases_fail_the_trace()  # the findings do not change
    finally:
        monkeypatch.undo()
        _prefilter._shape_understood.cache_clear()
    assert _prefilter._shape_understood()
