"""Every registered rule has fixtures that must raise it and fixtures that must not.

Each file in tests/rules/<RULE-ID>/ holds a policy, a trace and the complete expected outcome (the
verdict and the multiset of (severity, rule_id, step_id) over all findings), derived by hand from
the rule's semantics. A rule that is registered but never emitted instead has a fixture showing the
policy error that replaced it.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from agent_reliability_harness import InputError, Policy, Trace, validate_trace
from agent_reliability_harness.judge.client import JudgeCallError
from agent_reliability_harness.judge.model import (
    Judgment,
    calibration_from_dict,
    judgment_from_dict,
    rubric_from_dict,
)
from agent_reliability_harness.judge.stage import JudgeStage
from agent_reliability_harness.model.report import TraceReport
from agent_reliability_harness.rules import RULES

from conftest import ROOT, load_json

FIXTURES = ROOT / "tests" / "rules"
FILES = sorted(FIXTURES.glob("*/*.json"))


def _outcome(case: dict[str, Any]) -> tuple[bool, Counter[tuple[str, str, str | None]]]:
    trace, policy = Trace.from_dict(case["trace"]), Policy.from_dict(case["policy"])
    report = validate_trace(trace, policy)
    if "judge" in case:  # the judge stage of arh validate --rubric (docs/answers-and-judge.md)
        report = _judged(case["judge"], trace, report, policy)
    return report.passed, Counter((f.severity, f.rule_id, f.step_id) for f in report.findings)


class _FailingJudge:
    """A live model judge whose every call fails with ``problem``."""

    def __init__(self, problem: str) -> None:
        self.problem = problem

    def judge(self, *_: object) -> Judgment:
        raise JudgeCallError(self.problem)


def _judged(
    judge: dict[str, Any], trace: Trace, report: TraceReport, policy: Policy
) -> TraceReport:
    """``report`` through the judge stage set up as the fixture's ``judge`` says: its rubric,
    model, judgment file lines, calibration records, and a live judge that fails."""
    judgments = [judgment_from_dict(j) for j in judge.get("judgments", [])]
    failing = judge.get("live_failure")
    stage = JudgeStage(
        rubric_from_dict(judge["rubric"]),
        judge["model"],
        mode="live" if failing else "replay",
        judgments={j.key: j for j in judgments},
        judgments_path="judgments.jsonl" if judge["model"] != "deterministic" else None,
        calibrations=[calibration_from_dict(c) for c in judge.get("calibrations", [])],
        client=_FailingJudge(failing) if failing else None,  # type: ignore[arg-type]
        selection=policy.rules,
    )
    return stage(trace, report)


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.stem}" for p in FILES])
def test_fixture(path: Path) -> None:
    case = load_json(path)
    rule_id = path.parent.name
    if "expect_policy_error" in case:
        expected = case["expect_policy_error"]
        with pytest.raises(InputError) as caught:
            Policy.from_dict(case["policy"])
        assert caught.value.pointer == expected["pointer"]
        assert expected["message_contains"] in caught.value.message
        return
    passed, findings = _outcome(case)
    expected = Counter(tuple(f) for f in case["expect"]["findings"])
    assert findings == expected, f"{path.name}: {case['description']}"
    assert passed == case["expect"]["passed"]
    raised = any(key[1] == rule_id for key in findings)
    assert raised == path.stem.startswith("raise"), (
        f"{path.name} should{'' if raised else ' not'} raise {rule_id}"
    )


def test_every_rule_has_fixtures() -> None:
    missing = []
    for rule_id, rule in sorted(RULES.items()):
        names = [p.stem for p in (FIXTURES / rule_id).glob("*.json")]
        if rule.emitted:
            if not any(n.startswith("raise") for n in names):
                missing.append(f"{rule_id}: no raise_* fixture")
            if not any(n.startswith("pass") for n in names):
                missing.append(f"{rule_id}: no pass_* fixture")
        elif not any(n.startswith("policy_error") for n in names):
            missing.append(f"{rule_id}: not emitted, but no policy_error_* fixture")
    assert not missing, "\n".join(missing)


def test_no_fixtures_for_unknown_rules() -> None:
    assert {p.name for p in FIXTURES.iterdir() if p.is_dir()} <= set(RULES)
