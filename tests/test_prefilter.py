"""The unsafe-pattern prefilter is sound: it never rules out a text the regex would match.

Soundness is checked against the plain case-insensitive ``re.search`` on generated patterns and
texts whose alphabets include the characters where case folding is subtle (U+0130, U+0131,
U+017F, U+212A, and German sharp s).
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_reliability_harness.rules._prefilter import condition, fold, requirement_check

ALPHABET = "abikKsSIi \u0130\u0131\u017f\u212a\u00df\u00e9-_:.0123"
PIECES = st.one_of(
    st.text(alphabet="abikKsSIi \u00e9-_:", min_size=1, max_size=4).map(re.escape),
    st.sampled_from([r"\b", r"\s*", r"\d", "[:=]", ".", r"\w+", "[a-c]", "^", "$"]),
)


@st.composite
def patterns(draw: st.DrawFn) -> str:
    parts = draw(st.lists(PIECES, min_size=1, max_size=5))
    if draw(st.booleans()):
        alternatives = draw(st.lists(PIECES, min_size=2, max_size=3))
        parts.insert(draw(st.integers(0, len(parts))), "(" + "|".join(alternatives) + ")")
    if draw(st.booleans()):
        index = draw(st.integers(0, len(parts) - 1))
        parts[index] = "(?:" + parts[index] + ")" + draw(st.sampled_from(["+", "*", "?", "{2}"]))
    return "".join(parts)


@settings(max_examples=400, deadline=None)
@given(patterns(), st.text(alphabet=ALPHABET, max_size=40))
def test_prefilter_never_rejects_a_matching_text(pattern: str, text: str) -> None:
    regex = re.compile(pattern, re.IGNORECASE)
    if regex.search(text) is not None:
        assert requirement_check(condition(pattern, re.IGNORECASE))(fold(text)), (pattern, text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=ALPHABET, min_size=1, max_size=6), st.text(alphabet=ALPHABET, max_size=30))
def test_literal_patterns(word: str, text: str) -> None:
    pattern = re.escape(word)
    matches = re.search(pattern, text, re.IGNORECASE) is not None
    if matches:
        assert requirement_check(condition(pattern, re.IGNORECASE))(fold(text))


def test_special_letters_fold_like_ignorecase() -> None:
    for text in ("PASSWORD", "pa\u017f\u017fword", "\u0130NSTRUCTIONS", "\u212aEY", "\u0131gnore"):
        for word in ("password", "instructions", "key", "ignore"):
            if re.search(word, text, re.IGNORECASE):
                assert word in fold(text)


def test_conditions_of_typical_patterns() -> None:
    flags = re.IGNORECASE
    assert condition(r"\bpassword\s*[:=]", flags) == (("password",),)
    assert condition("ignore (all|any|the) (previous|prior|above) instructions", flags) == (
        (" instructions",),
        ("ignore ",),
    )
    assert condition(r"\b(?:\d{4}[ -]){3}\d{4}\b", flags) == ()  # no literal: always search
    assert requirement_check(())("anything")
