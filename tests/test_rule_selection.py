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
from agent_reliability_harness.rules.selection import Findings, choose, grouped, rules_named

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
        "validate",
        "--show-passing",
        "--policy",
        POLICY,
        DOUBLE,
        "--ignore",
        "arh-flw-003",
        "--json-out",
        report,
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
    run = arh(
        "validate",
        "--show-passing",
        "--policy",
        policy,
        DOUBLE,
        "--severity",
        "ARH-FLW-003=warning",
    )
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


# -- rule codes, as ruff reads them: --select, --ignore and --severity with IDs or prefixes ---


def test_a_code_names_a_rule_or_the_rules_it_starts() -> None:
    assert rules_named("ARH-FLW") == ["ARH-FLW-001", "ARH-FLW-002", "ARH-FLW-003"]
    assert rules_named(" arh-flw-00 ") == ["ARH-FLW-001", "ARH-FLW-002", "ARH-FLW-003"]
    assert rules_named("ARH-FLW-003") == ["ARH-FLW-003"]
    assert rules_named("ARH") == sorted(RULES)
    assert rules_named("ARH-FLX") == rules_named("") == []


def test_select_switches_every_other_rule_off() -> None:
    chosen = choose(["ARH-FLW"])
    assert chosen.off == tuple(sorted(set(RULES) - {"ARH-FLW-001", "ARH-FLW-002", "ARH-FLW-003"}))
    assert chosen.severity == ()
    assert choose(None) == RuleSelection()  # no select: every rule runs
    assert choose([]).off == tuple(sorted(RULES))  # an empty select: none does


def test_the_longer_of_a_selected_and_an_ignored_code_wins() -> None:
    # the category, less one rule of it
    narrowed = choose(["ARH-FLW"], ["ARH-FLW-003"])
    assert set(RULES) - set(narrowed.off) == {"ARH-FLW-001", "ARH-FLW-002"}
    # the category ignored, but one rule of it selected by its whole ID: that rule alone runs
    kept = choose(["ARH-FLW-003"], ["ARH-FLW"])
    assert set(RULES) - set(kept.off) == {"ARH-FLW-003"}
    # equally long: ignore wins
    assert set(RULES) - set(choose(["ARH-FLW"], ["arh-flw"]).off) == set()
    # without select every rule runs but the ignored ones
    assert choose(None, ["ARH-SCH-01"]).off == ("ARH-SCH-010", "ARH-SCH-011", "ARH-SCH-012")


def test_a_severity_for_a_prefix_applies_to_each_rule_of_it() -> None:
    chosen = choose(None, ["ARH-FLW-001"], [("ARH-FLW", "warning"), ("ARH-FLW-002", "info")])
    # a later code wins over an earlier one; a rule switched off stays off at any severity
    assert chosen.off == ("ARH-FLW-001",)
    assert chosen.severity == (("ARH-FLW-002", "info"), ("ARH-FLW-003", "warning"))


def test_a_code_that_names_no_rule_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match=r"unknown rule 'ARH-FLX' \(did you mean ARH-FLW\?\)"):
        choose(["ARH-FLX"])
    with pytest.raises(UsageError, match="unknown rule 'ARH-SCH-099'"):
        choose(None, (), [("ARH-SCH-099", "info")])
    with pytest.raises(UsageError, match="unknown severity 'fatal' for ARH-FLW-001"):
        choose(None, (), [("ARH-FLW-001", "fatal")])


def test_a_report_shows_a_category_switched_off_whole_as_one_entry() -> None:
    chosen = choose(["ARH-FLW", "ARH-SAF-001"], ["ARH-FLW-002"])
    shown = grouped(chosen.choices())
    assert ("ARH-BUD-*", "off") in shown
    assert ("ARH-FLW-002", "off") in shown  # a category in part: each rule of it
    assert not any(code.startswith(("ARH-FLW-*", "ARH-SAF")) for code, _ in shown)
    assert grouped([("ARH-FLW-003", "warning")]) == [("ARH-FLW-003", "warning")]


def test_the_command_line_selects_rules(arh: Callable[..., Run], tmp_path: Path) -> None:
    # the double rebooking's one error is ARH-FLW-003: selecting the schema rules hides it
    report = tmp_path / "report.json"
    run = arh("validate", "--policy", POLICY, DOUBLE, "--select", "ARH-SCH", "--json-out", report)
    assert run.status == 0
    written = json.loads(report.read_text(encoding="utf-8"))["policy"]["rules"]
    assert sorted(written) == sorted(set(RULES) - set(rules_named("ARH-SCH")))
    assert set(written.values()) == {"off"}
    assert "ARH-BUD-* off" in run.out
    assert "ARH-SCH" not in run.out.split("rules switched")[1]
    # the flow category selected, with a prefix in lower case: the error is back
    again = arh("validate", "--policy", POLICY, DOUBLE, "--select", "arh-flw,ARH-SAF")
    assert again.status == 1
    assert "      error   ARH-FLW-003  s5b  duplicate side effect" in again.out
    # ... unless its one rule is ignored: the longer code wins
    narrowed = arh(
        "validate", "--policy", POLICY, DOUBLE, "--select", "ARH-FLW", "--ignore", "ARH-FLW-003"
    )
    assert narrowed.status == 0
    # a severity for a whole category
    lowered = arh("validate", "--policy", POLICY, DOUBLE, "--severity", "ARH-FLW=warning")
    assert lowered.status == 0
    assert "rules switched off or changed: ARH-FLW-* warning\n" in lowered.out


def test_a_select_code_that_names_no_rule_is_a_usage_error(arh: Callable[..., Run]) -> None:
    run = arh("validate", "--policy", POLICY, DOUBLE, "--select", "ARH-FLX")
    assert run.status == 2
    assert "argument --select: unknown rule 'ARH-FLX' (did you mean ARH-FLW?)" in run.err


def test_compare_warns_when_the_runs_selected_different_rules(
    arh: Callable[..., Run], tmp_path: Path
) -> None:
    baseline = tmp_path / "baseline.json"
    assert arh("validate", "--policy", POLICY, DOUBLE, "--json-out", baseline).status == 1
    # the candidate switches off the rule of the baseline's one error: it looks resolved, so
    # compare says the selections differ, and --fail-on-drift fails on it
    argv = ["compare", "--baseline", baseline, "--policy", POLICY, DOUBLE]
    warned = arh(*argv, "--ignore", "ARH-FLW-003")
    assert warned.status == 0
    assert (
        "warning: baseline and candidate ran different rule selections (baseline -> candidate: "
        "ARH-FLW-003 on -> off): findings of these rules are not comparable\n"
    ) in warned.out
    strict = arh(*argv, "--ignore", "ARH-FLW-003", "--fail-on-drift")
    assert strict.status == 1
    assert "  - drift: baseline and candidate ran different rule selections" in strict.out
    # the same selection on both sides: no warning
    same = arh(*argv)
    assert "rule selections" not in same.out
