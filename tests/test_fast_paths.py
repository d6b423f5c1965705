"""Shortcuts in rules against the general code they stand in for.

A rule may answer most inputs with a cheap test and leave the rest to general code; each test
here checks, on generated inputs, that the answer is always the one the general code alone
gives.
"""

from __future__ import annotations

import json

from hypothesis import example, given, settings
from hypothesis import strategies as st

from agent_reliability_harness.rules._facts import arguments_key
from agent_reliability_harness.rules.grounding import _citation_problem, _parsed_url_problem

_URL_PIECES = st.sampled_from(
    ["http", "HTTPS", "hTtP", "ftp", "://", ":", "/", "//", "?", "#", "@", "[", "]", "[::1]",
     "example.test", "a", "%20", " ", "\t", "\n", "\x00", "\x7f", "é", "\uff0f", "\u2100", ":80",
     "user:pw", ".", "-", "~"]
)  # fmt: skip


@settings(max_examples=2000)
@given(st.lists(_URL_PIECES, max_size=8).map("".join) | st.text(max_size=30))
@example("https://kb.example.test/articles/KB-1")
@example("HTTP://example.test")
@example("https://[::1]/x")
@example("https://[::1/x")
@example("https://exa mple.test/")
@example("https://example.test/a b")
@example(" https://example.test/")
@example("https://ex\tample.test/")
@example("https:///path")
@example("https://example.test:80?q#f")
@example("http://@")
@example("http://:80")
@example("http://user:pw@")
@example("http://user@/x")
@example("http://u@h/x")
def test_url_check_agrees_with_urlsplit(url: str) -> None:
    # urlsplit alone decides every URL when the shortcut is not taken
    assert _citation_problem({"url": url}) == _parsed_url_problem(url)


def test_url_check_agrees_with_urlsplit_for_every_character_in_a_host() -> None:
    # the shortcut's host classes are spelt character by character: each one, at the start,
    # inside and at the end of a host, decides as urlsplit does
    chars = [chr(c) for c in range(0x300)] + ["\u2100", "\uff0f", "\U0010ffff", "\ud800"]
    for char in chars:
        for url in (
            f"http://{char}",
            f"http://a{char}b/x",
            f"https://ab{char}?q",
            f"http://{char}:8",
        ):
            assert _citation_problem({"url": url}) == _parsed_url_problem(url), repr(url)


def test_a_url_needs_a_host() -> None:
    # POLICY-SPEC: "an absolute http or https URL with a host"; a user part or a port is no host
    for url in ("http://@", "http://:80", "http://user:pw@", "http://@:80/x", "http://user@/x"):
        assert _citation_problem({"url": url, "source": "docs"}) == "its url has no host", url
    for url in ("http://a:80", "http://u@h/x", "https://[::1]/x", "HTTPS://kb.example.test/a"):
        assert _citation_problem({"url": url}) == "", url


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=500)
@given(_JSON_VALUES | st.dictionaries(st.text(max_size=4), _JSON_VALUES, max_size=4))
@example({"b": 1, "a": [1.5, None, True, "é\u2028\x00"]})
@example({"x": float("nan"), "y": -0.0, "z": 1e300})
@example(["not", "an", "object"])
def test_arguments_key_is_json_dumps_with_sorted_keys(value: object) -> None:
    # the key is written by one C encoder kept for the process; json.dumps makes its own
    expected = json.dumps(value or {}, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    assert arguments_key(value) == expected


def test_arguments_key_names_what_json_cannot_hold() -> None:
    assert arguments_key({"when": {1, 2}}) == '{"when":"<non-json:set>"}'
    assert arguments_key({"b": b"x", "a": object()}) == (
        '{"a":"<non-json:object>","b":"<non-json:bytes>"}'
    )
