"""The guard against policy regexes that can backtrack exponentially.

Expected verdicts come from how a backtracking matcher behaves: a pattern is exponential when
text can be split between iterations of an outer unbounded repetition and an inner one in many
ways; a mandatory separator the inner repetition cannot match forces a single split.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from agent_reliability_harness import InputError, Policy
from agent_reliability_harness.model._regex import matches_zero_width, risky_repetition

from conftest import SAMPLES, Run

RISKY = [
    r"(a+)+",
    r"(.*)*",
    r"(\w+\s?)+",
    r"(a+b*)+x",
    r"((ab)*)*",
    r"(a*b?)*",
    r"(x+x+)+y",
    r"^(([a-z])+.)+[A-Z]([a-z])+$",
    r"(a|b+)*",
    r"(\w+\.?)+",
    r"(?:(?:a+))+",
    # a bounded inner repetition of variable length splits text as freely: (a{1,2})+$ tries the
    # Fibonacci number of splits of a run of a's (0.12 s at 28 characters, 1.6 times more per
    # character); (a{1,1000})+$ took 1.1 s at 24
    r"(a{1,2})+$",
    r"(a{1,1000})+$",
    r"(\w{1,10}\s?)+",
    # so does an outer repetition of four or more iterations: (a+){1,4} tries about n**3 / 6
    # splits, (a+){1,10}$ did not finish in a minute on 40 a's and a '!'
    r"(a+){1,4}",
    r"(a+){30}",
    r"(a{1,30}){1,30}$",
    # counts of nested repetitions multiply: (?:(?:\w+){2}){2} splits a run between four pieces
    # as (\w+){4} does (about n**3 / 6 ways); benchmarks/perf/regex_shapes.py times the searches
    r"(?:(?:\w+){2}){2}@evil",
    r"(?:(?:(?:\w+){2}){2}){2}@evil",
    r"(?:(?:a{1,2}){2}){2}$",
    r"(?:(?:\w+){1,2}){1,2}",
    r"(?:(?:\w+){2}|x){2}",  # through an alternative
    # so do the pieces of one iteration that can take the same characters: 2 x 2 again
    r"(?:\w+\w+){2}@evil",
    r"(?:\w+\d+){2}",  # digits are word characters
    # an atomic group or a possessive repetition never gives back what it matched, but its body
    # backtracks until it matches: (?>(a+)+b) took 4.4 s on 26 a's (benchmarks/perf/regex_shapes.py)
    r"(?>(a+)+b)",
    r"(?:(a+)+b)++",
    r"x(?>y|(\w+\s?)+z)",
]
SAFE = [
    r"(\d+\.)+",
    r"(\w+\s)+",
    r"([a-z]+\d)+",
    r"(\s*,\s*\w+)+",
    r"(?:x(a+))+",
    r"(a++)+",
    r"(?>a+)+",
    r"(a|aa)+",  # overlapping alternatives: slow too, but not this guard's shape (SECURITY.md)
    r"\bpassword\s*[:=]",
    r"ignore (all|any|the) (previous|prior|above) instructions",
    r"\b(?:\d{4}[ -]){3}\d{4}\b",
    r"[A-Z]{2}\d{1,4}",
    r"(ab){2,5}",
    r"(a?)+",  # an iteration of one character or none: re stops empty iterations at once
    r"(a{3})+",  # fixed length: one way to split
    r"(a+){1,3}",  # at most n**2 / 2 splits
    r"(?:\d{1,3}\.){3}\d{1,3}",
    r"(?:[a-z0-9-]{1,63}\.)+[a-z]{2,}",  # the dot separates the labels
    r"(ab{1,2})+",  # each iteration starts with the a the inner repetition cannot match
    r"(?:(?:\w+){2}@){2}evil",  # the @ separates the outer iterations: two pieces in a row
    r"((?:\w+){2}@){2}evil",
    r"(?:(?:\d{1,3}\.){3}\d{1,3},){2}",
    r"(?:[a-z]+[0-9]+){2}",  # the two repetitions take different characters: forced splits
    r"(?:\w+\s?){2}",  # \s? takes one character or none: not a piece
    r"(?:(?:\w+){3}){1}",
    r"(?=(?:\w+){2})(?:x){4}",  # a lookahead is matched on its own, once per position
]


@pytest.mark.parametrize("pattern", RISKY)
def test_risky_shapes_are_flagged(pattern: str) -> None:
    assert risky_repetition(pattern)


@pytest.mark.parametrize("pattern", SAFE)
def test_safe_shapes_are_not_flagged(pattern: str) -> None:
    assert not risky_repetition(pattern)


@pytest.mark.parametrize(
    ("pattern", "zero_width"),
    [
        ("a*", True),
        ("^", True),
        (r"\b", True),
        (r"\B", True),
        ("(?=.)", True),
        (r"a|\b", True),
        (r"\bpassword\b", False),
        ("(?<=a)b", False),
        (r"(a)\1", False),
        ("(unclosed", False),  # not this guard's to report: compiling the pattern fails first
    ],
)
def test_zero_width_patterns_are_told(pattern: str, zero_width: bool) -> None:
    assert matches_zero_width(pattern) is zero_width


def test_policy_rejects_a_risky_pattern_with_its_pointer() -> None:
    with pytest.raises(InputError) as caught:
        Policy.from_dict({"policy_id": "p", "unsafe_patterns": ["ok", "(a+)+"]})
    assert caught.value.pointer == "/unsafe_patterns/1"
    assert "--allow-risky-patterns" in caught.value.message
    spec = {"t": {"optional_arguments": {"x a/b": {"type": "str", "pattern": "(.*)*"}}}}
    with pytest.raises(InputError) as caught:
        Policy.from_dict({"policy_id": "p", "allowed_tools": spec})
    assert caught.value.pointer == "/allowed_tools/t/optional_arguments/x a~1b/pattern"


def test_allowing_risky_patterns_keeps_a_warning() -> None:
    policy = Policy.from_dict(
        {"policy_id": "p", "unsafe_patterns": ["(a+)+"]}, allow_risky_patterns=True
    )
    assert len(policy.warnings) == 1
    assert policy.warnings[0].startswith("/unsafe_patterns/0: pattern '(a+)+' nests")


def test_cli_flag(tmp_path: Path, arh: Callable[..., Run]) -> None:
    policy = tmp_path / "p.json"
    # "(#+)+%" has the risky shape but matches nothing in the sample trace
    doc = {"policy_id": "p", "allow_unlisted_tools": True, "unsafe_patterns": ["(#+)+%"]}
    policy.write_text(json.dumps(doc), "utf-8")
    trace = SAMPLES / "traces" / "rebook_pass.json"
    refused = arh("validate", "--policy", policy, trace, "--quiet")
    assert refused.status == 2  # the policy: a configuration error
    assert "exponential time" in refused.err
    accepted = arh("validate", "--policy", policy, trace, "--quiet", "--allow-risky-patterns")
    assert accepted.status == 0
    assert accepted.err.startswith(f"warning: {policy}: /unsafe_patterns/0: pattern")
