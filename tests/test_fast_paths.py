"""Shortcuts in rules against the general code they stand in for.

A rule may answer most inputs with a cheap test and leave the rest to general code; each test
here checks, on generated inputs, that the answer is always the one the general code alone
gives.
"""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

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
def test_url_check_agrees_with_urlsplit(url: str) -> None:
    # urlsplit alone decides every URL when the shortcut is not taken
    assert _citation_problem({"url": url}) == _parsed_url_problem(url)
