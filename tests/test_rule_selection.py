"""Rule selection (rules/selection.py): a rule switched off, or set to another severity.

Checked on every per-rule fixture that raises its rule, against the fixture's own result without
a selection: the rule's findings disappear (or change severity) and nothing else does; a
category whose findings all came from that rule then has no failed check, except grounding,
whose score is a measurement (citation coverage); the monitor applies the same selection.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_reliability_harness import InputError, Policy, Trace, UsageError
from agent_reliability_harness.engine import Validator
from agent_reliability_harness.model.policy import RuleSelection
from agent_reliability_harness.model.report import RunReport, TraceReport
from agent_reliability_harness.monitor import Monitor
from agent_reliability_harness.rules import RULES
from agent_reliability_harness.rules.selection import Findings

from conftest import ROOT, Run, load_json

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
    policy = Policy.from_dict({"policy_id": "p"})
    selection = RuleSelection.of(off=["ARH-FLW-030"])  # well formed: the validator knows the rules
    closest = r"unknown rule 'ARH-FLW-030' \(did you mean ARH-FLW-003\?\)"
    with pytest.raises(UsageError, match=closest):
        Validator(policy, selection=selection)
    with pytest.raises(UsageError, match=r"not a rule ID: 'FLW-003' \(expected ARH-XXX-NNN\)"):
        RuleSelection.of(off=["FLW-003"])
    with pytest.raises(UsageError, match="unknown severity 'fatal' for ARH-FLW-003"):
        RuleSelection.of(severity={"ARH-FLW-003": "fatal"})  # type: ignore[dict-item]


def test_a_later_selection_wins() -> None:
    policy = RuleSelection.of(off=["ARH-SCH-010", "ARH-FLW-003"], severity={"ARH-SAF-001": "info"})
    command_line = RuleSelection.of(off=["ARH-SAF-001"], severity={"ARH-FLW-003": "warning"})
    assert policy.merged(command_line) == RuleSelection(
        off=("ARH-SAF-001", "ARH-SCH-010"), severity=(("ARH-FLW-003", "warning"),)
    )
    assert not RuleSelection()
    assert command_line


def test_the_policy_s_rules_section() -> None:
    data = {"policy_id": "p", "rules": {"ARH-SCH-010": "off", "ARH-FLW-003": "warning"}}
    policy = Policy.from_dict(data)
    assert policy.rules == RuleSelection(("ARH-SCH-010",), (("ARH-FLW-003", "warning"),))
    assert policy.to_dict()["rules"] == {"ARH-FLW-003": "warning", "ARH-SCH-010": "off"}
    plain = Policy.from_dict({"policy_id": "p"})
    assert "rules" not in plain.to_dict()  # so the hashes of policies without it do not change
    assert policy.sha256 != plain.sha256  # a baseline made with rules switched off says so
    policy_path = ROOT / "tests" / "rules" / "ARH-SCH-010" / "raise_duplicate_step_id.json"
    case = load_json(policy_path)
    trace = Trace.from_dict(case["trace"])
    switched = Policy.from_dict({**case["policy"], "rules": {"ARH-SCH-010": "off"}})
    assert Validator(switched).validate(trace).findings == ()
    # the caller's selection wins over the policy's: a severity switches the rule on again
    again = Validator(switched, selection=RuleSelection.of(severity={"ARH-SCH-010": "info"}))
    assert [f.severity for f in again.validate(trace).findings] == ["info"]


@pytest.mark.parametrize(
    ("rules", "pointer", "message"),
    [
        ({"ARH-FLW-03": "off"}, "/rules/ARH-FLW-03", "not a rule ID: 'ARH-FLW-03'"),
        ({"ARH-FLW-003": "no"}, "/rules/ARH-FLW-003", "must be one of: off, error, warning"),
        ({"ARH-FLW-003": False}, "/rules/ARH-FLW-003", "got a JSON boolean"),
        ([], "/rules", "must be an object, got array"),
    ],
)
def test_a_bad_rules_section_is_an_error_at_its_pointer(
    rules: object, pointer: str, message: str
) -> None:
    with pytest.raises(InputError) as caught:
        Policy.from_dict({"policy_id": "p", "rules": rules})
    assert caught.value.pointer == pointer
    assert message in caught.value.message


def test_an_unknown_rule_of_the_policy_is_an_error_at_its_pointer() -> None:
    policy = Policy.from_dict({"policy_id": "p", "rules": {"ARH-FLW-030": "off"}})
    with pytest.raises(InputError) as caught:
        Validator(policy)
    assert caught.value.pointer == "/rules/ARH-FLW-030"
    assert "did you mean ARH-FLW-003?" in caught.value.message


def test_findings_add_says_whether_the_check_failed() -> None:
    finding = RULES["ARH-FLW-003"].finding("m")
    assert Findings().add(finding) == 1
    assert Findings(RuleSelection.of(off=["ARH-FLW-003"])).add(finding) == 0
    lowered = Findings(RuleSelection.of(severity={"ARH-FLW-003": "warning"}))
    assert lowered.add(finding) == 0
    assert [f.severity for f in lowered] == ["warning"]
    raised = Findings(RuleSelection.of(severity={"ARH-SCH-010": "error"}))
    assert raised.add(RULES["ARH-SCH-010"].finding("m")) == 1


SAMPLES = ROOT / "samples"
DOUBLE = SAMPLES / "traces" / "rebook_double_rebooking.json"  # one ARH-FLW-003 error
POLICY = SAMPLES / "policy_trajectory.json"


def test_the_command_line_switches_a_rule_off(arh: Callable[..., Run], tmp_path: Path) -> None:
    assert arh("validate", "--policy", POLICY, DOUBLE).status == 1
    report = tmp_path / "report.json"
    run = arh(
        "validate", "--policy", POLICY, DOUBLE, "--ignore", "arh-flw-003", "--json-out", report
    )
    assert run.status == 0
    assert "ARH-FLW-003" not in run.out.split("\n\n")[0]  # not in the trace's block
    assert "rules switched off or changed: ARH-FLW-003 off\n" in run.out
    written = json.loads(report.read_text(encoding="utf-8"))
    assert written["policy"]["rules"] == {"ARH-FLW-003": "off"}
    # read back as a baseline, the report keeps what was switched off
    assert RunReport.from_dict(written).rules == (("ARH-FLW-003", "off"),)


def test_the_command_line_changes_a_severity(arh: Callable[..., Run], tmp_path: Path) -> None:
    policy = tmp_path / "policy.json"
    data = load_json(POLICY)
    policy.write_text(json.dumps({**data, "rules": {"ARH-FLW-003": "off"}}), encoding="utf-8")
    assert arh("validate", "--policy", policy, DOUBLE).status == 0
    # the command line wins over the policy: the rule is on again, as a warning
    run = arh("validate", "--policy", policy, DOUBLE, "--severity", "ARH-FLW-003=warning")
    assert run.status == 0
    assert "warning ARH-FLW-003" in run.out
    assert "rules switched off or changed: ARH-FLW-003 warning\n" in run.out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--ignore", "ARH-FLW-03"], "argument --ignore: unknown rule 'ARH-FLW-03' (did you mean"),
        (["--severity", "ARH-FLW-003"], "argument --severity: expected RULE=LEVEL"),
        (["--severity", "ARH-FLW-003=fatal"], "argument --severity: expected RULE=LEVEL"),
    ],
)
def test_a_bad_selection_option_is_a_usage_error(
    arh: Callable[..., Run], argv: list[str], message: str
) -> None:
    run = arh("validate", "--policy", POLICY, DOUBLE, *argv)
    assert run.status == 2
    assert message in run.err


def test_an_unknown_rule_in_the_policy_names_the_file_and_the_pointer(
    arh: Callable[..., Run], tmp_path: Path
) -> None:
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"policy_id": "p", "rules": {"ARH-XYZ-001": "off"}}))
    run = arh("validate", "--policy", policy, DOUBLE)
    assert run.status == 2
    assert f"invalid policy: {policy}: /rules/ARH-XYZ-001: unknown rule 'ARH-XYZ-001'" in run.err


def test_compare_with_a_saved_candidate_takes_no_selection(arh: Callable[..., Run]) -> None:
    run = arh("compare", "--baseline", DOUBLE, "--candidate", DOUBLE, "--ignore", "ARH-FLW-003")
    assert run.status == 2
    assert "--ignore applies only when validating traces with --policy" in run.err


def test_a_bad_rules_object_in_a_baseline_is_an_error_at_its_pointer() -> None:
    with pytest.raises(InputError) as caught:
        RunReport.from_dict({"reports": [], "policy": {"rules": {"ARH-FLW-003": "loud"}}})
    assert caught.value.pointer == "/policy/rules/ARH-FLW-003"
