"""The unsafe-pattern prefilter is sound: it never rules out a text the regex would match.

Soundness is checked against the plain case-insensitive ``re.search`` on generated patterns and
texts whose alphabets include the characters where case folding is subtle (U+0130, U+0131,
U+017F, U+212A, German sharp s), non-ASCII decimal digits, and non-ASCII characters that the
categories tell apart (whitespace, letters, symbols), which folding turns into one placeholder;
one text at a time and for texts joined with NUL as the scanner joins a trace's strings.
"""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from agent_reliability_harness.rules._prefilter import (
    Prefilter,
    fold,
    literal_requirements,
    rewrite_for_folded,
)

ALPHABET = (
    "abikKsSIi \u0130\u0131\u017f\u212a\u00df\u00e9-_:.\n0123\u0663\uff17"
    "\u00a0\u2003\u3000\u00b2\u2014\u6771\U0001f600\x80"
)
ATOMS = [
    r"\b", r"\B", r"\s*", r"\d", r"\d{2}", r"\d{1,3}", "[0-9]", "[5-7]", "[^5-7]", "[^a-c]",
    "[:=]", ".", r"\w+", r"\S", "[a-c]", "[A-Z]", "^", "$", "7", "(?-i:K)", "(?=a)", "(?<!b)",
    "[^\\d]", r"\D", "k+?", "(?>ab)", "s++", "[^5]", "[^5x]", r"\A", r"\Z", "(?!x)",
    r"\s", r"\s+", r"\W", r"\w{2}", "[\\s-]", "[^\\W]", "[^\\S]", "[^\\D]", "[^\\s]", "[\\w:]",
    # possessive and atomic forms over classes that folding widens (digits, \w, \s)
    r"\d++", r"\w++", r"\s*+", "[0-4]++", r"(?>\w+)", "1?+", "0*+", r"\S++",
]  # fmt: skip
PIECES = st.one_of(
    st.text(alphabet="abikKsSIi \u00e9-_:7", min_size=1, max_size=4).map(re.escape),
    st.sampled_from(ATOMS),
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
    return "".join(parts)


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
    assert rewrite_for_folded("caf\u00e9", flags) is None  # nor non-ASCII literals


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
    findings: list = []  # type: ignore[type-arg]
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
    # three copies of it at once. (The safety scan's memory: benchmarks/input_memory.py.)
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
