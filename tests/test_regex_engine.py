"""Patterns on which CPython's regex engine fails are refused, and a failure never ends the run.

CPython raises ``SystemError: The span of capturing group is wrong`` in the middle of a search for
some patterns with a capturing group inside a possessive repetition (python/cpython#101955):
``(?:a(b)++|a-)++`` searched in ``aba-`` ended ``arh validate`` with a traceback. The policy loader
now refuses that shape wherever a policy takes a pattern, and an engine failure of any other
shape becomes an input error of the trace being checked.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_reliability_harness import InputError, Monitor, Policy, engine
from agent_reliability_harness.engine import Validator
from agent_reliability_harness.model.trace import Trace
from agent_reliability_harness.rules import safety

from conftest import Run

ISSUE_PATTERN = "(?:a(b)++|a-)++"


def _trace(trace_id: str, text: str) -> dict[str, Any]:
    return {
        "trace_id": trace_id,
        "agent_name": "a",
        "workflow": "w",
        "steps": [{"step_id": "s1", "type": "model_response", "text": text}],
    }


def test_the_issue_pattern_fails_in_this_python_or_the_bug_is_fixed() -> None:
    """Why the shape is refused: on the Pythons arh supports, the engine fails on it."""
    try:
        re.search("((x)|y|z)*+", "xyz")  # the example of the CPython issue
    except SystemError:
        pass
    else:  # pragma: no cover - a Python with the fix (3.12.8, 3.13.1 and later)
        pytest.skip("this Python's regex engine has the fix for python/cpython#101955")
    with pytest.raises(SystemError, match="capturing group"):
        re.search(ISSUE_PATTERN, "aba-", re.IGNORECASE)


@pytest.mark.parametrize(
    ("policy", "pointer"),
    [
        ({"unsafe_patterns": ["secret", ISSUE_PATTERN]}, "/unsafe_patterns/1"),
        ({"unsafe_patterns": ["((x)|y|z)*+"]}, "/unsafe_patterns/0"),
        ({"unsafe_patterns": ["(?P<word>ab)++c"]}, "/unsafe_patterns/0"),
        ({"unsafe_patterns": ["x(?:(?:(a))?)*+"]}, "/unsafe_patterns/0"),
        (
            {"allowed_tools": {"pay": {"required_arguments": {
                "account": {"type": "str", "pattern": "(?:[A-Z](\\d))++"}
            }}}},
            "/allowed_tools/pay/required_arguments/account/pattern",
        ),
    ],
)  # fmt: skip
def test_a_capture_in_a_possessive_repetition_is_refused(
    policy: dict[str, Any], pointer: str
) -> None:
    with pytest.raises(InputError) as caught:
        Policy.from_dict({"policy_id": "p", **policy})
    assert caught.value.pointer == pointer
    assert "non-capturing" in str(caught.value)


@pytest.mark.parametrize(
    "pattern",
    ["(?:ab)++c", r"\d++x", "(?>((x)|y|z)*)q", "(a)+b", r"(\w+)\s*[:=]", "a\\+\\+(b)"],
)
def test_shapes_without_the_failure_are_accepted(pattern: str) -> None:
    policy = Policy.from_dict({"policy_id": "p", "unsafe_patterns": [pattern]})
    assert [p.pattern for p in policy.unsafe_patterns] == [pattern]


def test_the_cli_reports_the_pattern_without_a_traceback(
    tmp_path: Path, arh: Callable[..., Run]
) -> None:
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"policy_id": "p", "unsafe_patterns": [ISSUE_PATTERN]}))
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps(_trace("t", "aba-")))
    run = arh("validate", "--policy", policy, trace)
    assert run.status == 2  # the policy is refused: a configuration error
    assert "Traceback" not in run.err
    (line,) = run.err.splitlines()
    assert f"{policy}: /unsafe_patterns/0: pattern '{ISSUE_PATTERN}'" in line


def _failing_search(text: str) -> re.Match[str] | None:
    raise SystemError("The span of capturing group is wrong, please report a bug for the re module")


@pytest.fixture
def engine_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every unsafe-pattern search fails as CPython's engine does on the refused shape."""
    real = safety.prepare

    def prepare(policy: Policy) -> Any:
        patterns = real(policy)
        for pattern in patterns:
            pattern.search = _failing_search
        return patterns

    failing = dataclasses.replace(safety.RULE_SET, prepare=prepare)
    sets = tuple(failing if s is safety.RULE_SET else s for s in engine.RULE_SETS)
    monkeypatch.setattr(engine, "RULE_SETS", sets)


@pytest.mark.usefixtures("engine_fails")
def test_an_engine_failure_is_an_input_error_of_that_trace(
    tmp_path: Path, arh: Callable[..., Run]
) -> None:
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"policy_id": "p", "unsafe_patterns": ["secret"]}))
    bad = tmp_path / "a.json"
    bad.write_text(json.dumps(_trace("a", "the secret is out")))
    good = tmp_path / "b.json"
    good.write_text(json.dumps(_trace("b", "nothing to see")))  # no search: ruled out before
    report = tmp_path / "report.json"
    run = arh("validate", "--policy", policy, bad, good, "--json-out", report)
    assert run.status == 3  # the trace could not be checked: an input error
    assert "Traceback" not in run.err
    (line,) = run.err.splitlines()
    assert line.startswith(f"error: {bad}: ")
    assert "regular expression engine failed on this trace" in line
    written = json.loads(report.read_text())
    assert [(t["trace_id"], t["passed"]) for t in written["reports"]] == [("b", True)]
    assert [e["source"] for e in written["input_errors"]] == [str(bad)]


@pytest.mark.usefixtures("engine_fails")
def test_an_engine_failure_in_the_api_and_the_monitor_is_an_input_error() -> None:
    policy = Policy.from_dict({"policy_id": "p", "unsafe_patterns": ["secret"]})
    with pytest.raises(InputError, match="regular expression engine failed"):
        Validator(policy).validate(Trace.from_dict(_trace("a", "a secret")))
    monitor = Monitor(policy)
    with pytest.raises(InputError, match="regular expression engine failed"):
        monitor.check({"step_id": "s1", "type": "model_response", "text": "a secret"})
