"""Compatibility with arh 0.2.x on its own reference data.

Expected verdicts and finding multisets come from each case's ``expected`` block; expected scores
come from the table of the 34 cases and the five samples recorded from the 0.2.x implementation
(reference facts, sections 3 and 9.1). None of the documented divergences (COMPATIBILITY.md)
changes an outcome on this data, so there are no exceptions below.
"""

from __future__ import annotations

from collections import Counter

import pytest

from agent_reliability_harness import Policy, Trace, validate_trace

from conftest import REFERENCE, load_json, require_shared

CASES = REFERENCE / "benchmarks" / "cases"

# case number -> the score 0.2.x computes, rounded to 2 decimals
CASE_SCORES = {
    1: 100.0, 2: 100.0, 3: 100.0, 4: 100.0, 5: 90.86, 6: 93.15, 7: 97.31, 8: 93.55, 9: 93.55,
    10: 95.16, 11: 93.55, 12: 93.55, 13: 97.98, 14: 92.74, 15: 96.77, 16: 97.42, 17: 97.85,
    18: 96.43, 19: 96.77, 20: 96.77, 21: 76.92, 22: 90.32, 23: 100.0, 24: 100.0, 25: 97.31,
    26: 95.97, 27: 97.24, 28: 97.24, 29: 97.24, 30: 97.24, 31: 100.0, 32: 97.98, 33: 98.21,
    34: 100.0,
}  # fmt: skip

SAMPLES = [
    ("policy.json", "lead_qualification_pass", 100.0, True),
    ("policy.json", "renewal_workflow_budget_violation", 80.0, False),
    ("policy.json", "support_escalation_unsafe", 70.83, False),
    ("policy_trajectory.json", "refund_workflow_pass", 100.0, True),
    ("policy_trajectory.json", "refund_workflow_double_refund", 84.52, False),
]


@pytest.mark.parametrize("number", sorted(CASE_SCORES))
def test_benchmark_case(number: int) -> None:
    require_shared(CASES)
    (path,) = CASES.glob(f"{number:02d}_*.json")
    case = load_json(path)
    report = validate_trace(Trace.from_dict(case["trace"]), Policy.from_dict(case["policy"]))
    expected = Counter(tuple(f) for f in case["expected"]["findings"])
    actual = Counter(
        (f.severity, f.rule_id, f.step_id) for f in report.findings if f.severity != "info"
    )
    assert actual == expected
    assert report.passed == case["expected"]["passed"]
    assert round(report.score, 2) == CASE_SCORES[number]


def test_all_cases_covered() -> None:
    require_shared(CASES)
    assert len(list(CASES.glob("*.json"))) == len(CASE_SCORES) == 34


@pytest.mark.parametrize(("policy", "trace", "score", "passed"), SAMPLES)
def test_sample(policy: str, trace: str, score: float, passed: bool) -> None:
    samples = require_shared(REFERENCE / "samples")
    report = validate_trace(
        Trace.from_dict(load_json(samples / "traces" / f"{trace}.json")),
        Policy.from_dict(load_json(samples / policy)),
    )
    assert (round(report.score, 2), report.passed) == (score, passed)


def test_v01_samples_have_no_schema_version() -> None:
    """The three v0.1 samples omit schema_version; they must parse as version 1."""
    samples = require_shared(REFERENCE / "samples" / "traces")
    for name in ("lead_qualification_pass", "renewal_workflow_budget_violation"):
        raw = load_json(samples / f"{name}.json")
        assert "schema_version" not in raw
        assert Trace.from_dict(raw).schema_version == "1"
