"""Rule selection (rules/selection.py): a rule switched off, or set to another severity.

Checked on every per-rule fixture that raises its rule, against the fixture's own result without
a selection: the rule's findings disappear (or change severity) and nothing else does; a
category whose findings all came from that rule then has no failed check, except grounding,
whose score is a measurement (citation coverage); the monitor applies the same selection.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_reliability_harness import Policy, Trace, UsageError
from agent_reliability_harness.engine import Validator
from agent_reliability_harness.model.report import TraceReport
from agent_reliability_harness.monitor import Monitor
from agent_reliability_harness.rules import RULES
from agent_reliability_harness.rules.selection import Findings, RuleSelection

from conftest import ROOT, load_json

RAISING = [
    path
    for path in sorted((ROOT / "tests" / "rules").glob("*/raise_*.json"))
    if "expect_policy_error" not in load_json(path)
]


def _load(path: Path) -> tuple[Policy, Trace]:
    case = load_json(path)
    return Policy.from_dict(case["policy"]), Trace.from_dict(case["trace"])


def _keys(report: TraceReport) -> list[tuple[Any, ...]]:
    return [(f.rule_id, f.step_id, f.subject, f.message) for f in report.findings]


def _failed(report: TraceReport) -> dict[str, int]:
    return {c.category: c.failed for c in report.categories}


def _only_rule(report: TraceReport, rule_id: str) -> set[str]:
    """The categories (other than grounding) whose findings all come from ``rule_id``."""
    category = RULES[rule_id].category
    mine = [f for f in report.findings if f.category == category]
    if category == "grounding" or not mine or any(f.rule_id != rule_id for f in mine):
        return set()
    return {category}


@pytest.mark.parametrize("path", RAISING, ids=[f"{p.parent.name}/{p.stem}" for p in RAISING])
def test_a_rule_switched_off_reports_nothing_and_fails_no_check(path: Path) -> None:
    policy, trace = _load(path)
    rule_id = path.parent.name
    before = Validator(policy).validate(trace)
    after = Validator(policy, selection=RuleSelection.of(off=[rule_id])).validate(trace)
    assert _keys(after) == [k for k in _keys(before) if k[0] != rule_id]
    for category in _only_rule(before, rule_id):
        assert _failed(after)[category] == 0, category
    for category, failed in _failed(after).items():
        assert failed <= _failed(before)[category]
    assert after.score >= before.score
    # the monitor, with the same selection, ends with the same findings and never reports it
    monitor = Monitor(policy, selection=RuleSelection.of(off=[rule_id]))
    early = [f for step in trace.steps for f in monitor.check(step) + monitor.observe(step)]
    assert all(f.rule_id != rule_id for f in early)
    assert monitor.finish() == list(after.findings)


@pytest.mark.parametrize("path", RAISING, ids=[f"{p.parent.name}/{p.stem}" for p in RAISING])
def test_a_severity_override_changes_the_rule_s_findings_only(path: Path) -> None:
    policy, trace = _load(path)
    rule_id = path.parent.name
    before = Validator(policy).validate(trace)
    after = Validator(policy, selection=RuleSelection.of(severity={rule_id: "info"})).validate(
        trace
    )
    assert sorted(_keys(after)) == sorted(_keys(before))
    for finding in after.findings:
        if finding.rule_id == rule_id:
            assert finding.severity == "info"
    was_error = any(f.rule_id == rule_id and f.severity == "error" for f in before.findings)
    if was_error:
        # a check failed only by the rule's findings, now info, passes
        for category in _only_rule(before, rule_id):
            assert _failed(after)[category] == 0, category
        raised = Validator(policy, selection=RuleSelection.of(severity={rule_id: "error"}))
        assert _keys(raised.validate(trace)) == _keys(before)


def test_a_warning_raised_to_error_fails_the_trace() -> None:
    policy, trace = _load(ROOT / "tests" / "rules" / "ARH-SCH-010" / "raise_duplicate_step_id.json")
    assert Validator(policy).validate(trace).passed
    selection = RuleSelection.of(severity={"ARH-SCH-010": "error"})
    report = Validator(policy, selection=selection).validate(trace)
    assert not report.passed
    assert [f.severity for f in report.findings] == ["error"]


def test_a_rule_switched_off_is_not_listed_as_not_applicable() -> None:
    policy = Policy.from_dict(
        {"policy_id": "p", "budgets": {"max_total_latency_ms": 10, "max_total_cost_usd": 1}}
    )
    trace = Trace.from_dict(
        {
            "trace_id": "t",
            "agent_name": "",
            "workflow": "",
            "metadata": {"adapter": {"missing": ["latency_ms", "cost_usd"]}},
            "steps": [{"step_id": "s1", "type": "model_response", "text": "hi"}],
        }
    )
    listed = [c.rule_id for c in Validator(policy).validate(trace).not_applicable]
    assert listed == ["ARH-BUD-002", "ARH-BUD-003"]
    off = Validator(policy, selection=RuleSelection.of(off=["ARH-BUD-002"]))
    assert [c.rule_id for c in off.validate(trace).not_applicable] == ["ARH-BUD-003"]


def test_unknown_rules_and_severities_are_refused() -> None:
    closest = r"unknown rule 'ARH-FLW-030' \(did you mean ARH-FLW-003\?\)"
    with pytest.raises(UsageError, match=closest):
        RuleSelection.of(off=["ARH-FLW-030"])
    with pytest.raises(UsageError, match="unknown severity 'fatal' for ARH-FLW-003"):
        RuleSelection.of(severity={"ARH-FLW-003": "fatal"})  # type: ignore[dict-item]


def test_a_later_selection_wins() -> None:
    policy = RuleSelection.of(off=["ARH-SCH-010", "ARH-FLW-003"], severity={"ARH-SAF-001": "info"})
    command_line = RuleSelection.of(off=["ARH-SAF-001"], severity={"ARH-FLW-003": "warning"})
    merged = policy.merged(command_line)
    assert merged == RuleSelection(
        off=("ARH-SAF-001", "ARH-SCH-010"),
        severity=(("ARH-FLW-003", "warning"), ("ARH-SAF-001", "info")),
    )
    assert not RuleSelection()
    assert merged


def test_findings_add_says_whether_the_check_failed() -> None:
    finding = RULES["ARH-FLW-003"].finding("m")
    assert Findings().add(finding) == 1
    assert Findings(RuleSelection.of(off=["ARH-FLW-003"])).add(finding) == 0
    lowered = Findings(RuleSelection.of(severity={"ARH-FLW-003": "warning"}))
    assert lowered.add(finding) == 0
    assert [f.severity for f in lowered] == ["warning"]
    raised = Findings(RuleSelection.of(severity={"ARH-SCH-010": "error"}))
    assert raised.add(RULES["ARH-SCH-010"].finding("m")) == 1
