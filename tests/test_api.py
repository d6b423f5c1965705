"""The Python API from the package root: names, ``validate_trace``, scores, verdicts, report forms.

Expected scores are derived by hand from the scoring rules: the overall score is the weighted mean
of the applicable categories' scores, with the weights schema 30, budget 30, safety 25,
grounding 15, sequence 25, flow 20, completion 10 (100.0 when no category applies).
"""

from __future__ import annotations

import copy
import dataclasses
import importlib.metadata
import json
import math
from typing import Any

import pytest

import agent_reliability_harness as arh
from agent_reliability_harness import (
    RULES,
    Finding,
    InputError,
    Policy,
    Step,
    Trace,
    TraceReport,
    Validator,
    __version__,
    validate_trace,
)
from agent_reliability_harness.errors import UsageError, excerpt

from conftest import REFERENCE, SAMPLES, load_json, require_shared

WEIGHTS = {
    "schema": 30,
    "budget": 30,
    "safety": 25,
    "grounding": 15,
    "sequence": 25,
    "flow": 20,
    "completion": 10,
}
SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}


def trace_of(*steps: dict[str, Any], trace_id: str = "t-1") -> Trace:
    return Trace.from_dict(
        {
            "schema_version": "1",
            "trace_id": trace_id,
            "agent_name": "agent",
            "workflow": "wf",
            "steps": list(steps),
        }
    )


def policy_of(**fields: Any) -> Policy:
    return Policy.from_dict({"policy_id": "p", **fields})


# A policy that makes all seven categories applicable, and a trace that satisfies all of it.
FULL_POLICY: dict[str, Any] = {
    "policy_id": "full",
    "allowed_tools": {
        "lookup": {"required_arguments": {"id": "str"}, "max_calls": 1},
        "refund": {
            "required_arguments": {"id": "str", "amount": {"type": "float", "min": 0, "max": 100}},
            "side_effect": True,
        },
    },
    "budgets": {"max_total_latency_ms": 1000, "max_total_cost_usd": 1, "max_total_tokens": 1000},
    "unsafe_patterns": ["password"],
    "grounding": {
        "require_citations": True,
        "min_citation_coverage": 1,
        "require_valid_citation_urls": True,
    },
    "sequence": {"required_tools": ["lookup"], "call_order": ["lookup", "refund"]},
    "error_handling": {"require_retry_on_error": True, "max_attempts": 2},
    "completion": {"require_final_response": True, "max_steps": 5},
}
PERFECT_STEPS: list[dict[str, Any]] = [
    {
        "step_id": "s1",
        "type": "tool_call",
        "tool_name": "lookup",
        "arguments": {"id": "A1"},
        "output": {"status": "delivered"},
        "latency_ms": 100,
        "cost_usd": 0.01,
        "input_tokens": 10,
        "output_tokens": 5,
    },
    {
        "step_id": "s2",
        "type": "tool_call",
        "tool_name": "refund",
        "arguments": {"id": "A1", "amount": 10.5},
        "latency_ms": 100,
        "cost_usd": 0.01,
    },
    {
        "step_id": "s3",
        "type": "model_response",
        "text": "Refunded 10.50 for order A1.",
        "requires_grounding": True,
        "citations": [{"source": "lookup:s1", "url": "https://orders.example.com/A1"}],
        "latency_ms": 50,
        "cost_usd": 0.02,
    },
]


def full_policy(**changes: Any) -> Policy:
    doc = copy.deepcopy(FULL_POLICY)
    for section, values in changes.items():
        doc[section].update(values)
    return Policy.from_dict(doc)


def perfect_trace() -> Trace:
    return trace_of(*copy.deepcopy(PERFECT_STEPS))


# The warning-only trace: two grounded responses, one cited. Only grounding and completion apply.
WARNING_ONLY_POLICY: dict[str, Any] = {
    "policy_id": "warn",
    "completion": {"require_final_response": True},
}
WARNING_ONLY_STEPS: list[dict[str, Any]] = [
    {
        "step_id": "r1",
        "type": "model_response",
        "text": "first",
        "requires_grounding": True,
        "citations": [{"source": "doc"}],
    },
    {"step_id": "r2", "type": "model_response", "text": "second", "requires_grounding": True},
]


# --- the public names --------------------------------------------------------------------------


def test_public_names_come_from_their_modules() -> None:
    from agent_reliability_harness.engine import Validator as EngineValidator
    from agent_reliability_harness.engine import validate_trace as engine_validate
    from agent_reliability_harness.model.report import Finding as ReportFinding
    from agent_reliability_harness.model.report import TraceReport as ReportTraceReport
    from agent_reliability_harness.model.trace import Step as ModelStep
    from agent_reliability_harness.rules.registry import RULES as REGISTRY

    assert validate_trace is engine_validate
    assert Validator is EngineValidator
    assert Finding is ReportFinding
    assert TraceReport is ReportTraceReport
    assert Step is ModelStep
    assert RULES is REGISTRY
    assert issubclass(InputError, Exception)
    assert issubclass(UsageError, ValueError)
    # 0.2.x raised ValueError for every bad trace, policy or report: callers catch it
    assert issubclass(InputError, ValueError)
    with pytest.raises(ValueError, match="missing required field 'steps'"):
        Trace.from_dict({"trace_id": "t", "agent_name": "", "workflow": ""})
    assert arh.UsageError is UsageError
    assert "ARH-BUD-003" in RULES


def test_version_matches_the_installed_distribution() -> None:
    assert __version__ == importlib.metadata.version("agent-reliability-harness")
    assert all(part.isdigit() for part in __version__.split("."))


def test_unknown_attribute_of_the_package() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = arh.no_such_name  # type: ignore[attr-defined]
    assert "validate_trace" in dir(arh)


# --- fail_under --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value", [True, False, "70", None, math.nan, math.inf, -math.inf, -1, -0.001, 100.001, 101]
)
def test_fail_under_rejects_bad_values(value: object) -> None:
    trace, policy = perfect_trace(), full_policy()
    with pytest.raises(UsageError, match="fail_under must be a number from 0 to 100"):
        validate_trace(trace, policy, fail_under=value)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="fail_under"):
        Validator(policy, fail_under=value)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [0, 0.0, 50, 99.5, 100, 100.0])
def test_fail_under_accepts_the_range(value: float) -> None:
    assert validate_trace(perfect_trace(), full_policy(), fail_under=value).passed


def test_perfect_trace_scores_exactly_100_and_passes_fail_under_100() -> None:
    report = validate_trace(perfect_trace(), full_policy(), fail_under=100)
    assert report.findings == ()
    # Every category applies and scores 100, so the score is 15500 / 155 = 100, exactly.
    assert [c.category for c in report.categories if c.applicable] == list(WEIGHTS)
    assert all(c.score == 100.0 for c in report.categories)
    assert report.score == 100.0
    assert report.passed
    assert report.to_dict()["score"] == 100.0


def _subset_case(categories: tuple[str, ...]) -> tuple[Trace, Policy]:
    """A trace that passes every check, under a policy that makes exactly ``categories`` apply
    (schema always applies, because the trace has a tool call)."""
    policy: dict[str, Any] = {
        "policy_id": "subset",
        "allowed_tools": {"lookup": {"required_arguments": {"id": "str"}}},
    }
    call: dict[str, Any] = {
        "step_id": "s1",
        "type": "tool_call",
        "tool_name": "lookup",
        "arguments": {"id": "A1"},
        "cost_usd": 0.01,
    }
    answer: dict[str, Any] = {"step_id": "s2", "type": "model_response", "text": "Found A1."}
    if "budget" in categories:
        policy["budgets"] = {"max_total_cost_usd": 1}
    if "safety" in categories:
        policy["unsafe_patterns"] = ["password"]
    if "grounding" in categories:
        answer["requires_grounding"] = True
        answer["citations"] = [{"source": "lookup:s1"}]
    if "sequence" in categories:
        policy["sequence"] = {"required_tools": ["lookup"]}
    if "flow" in categories:
        policy["error_handling"] = {"max_attempts": 2}
    if "completion" in categories:
        policy["completion"] = {"require_final_response": True}
    return trace_of(call, answer), Policy.from_dict(policy)


@pytest.mark.parametrize(
    "categories",
    [
        # With the 0.2.x decimal weights (0.3, 0.25, 0.15, ...) each of these subsets would give
        # 99.99999999999999, 100.00000000000001 or 99.99999999999997 instead of 100; with the
        # integer weights, (sum of w * 100) / (sum of w) is exactly 100.
        ("schema",),
        ("schema", "safety"),
        ("schema", "grounding"),
        ("schema", "sequence"),
        ("schema", "safety", "grounding", "flow", "completion"),
        ("schema", "budget", "safety", "sequence", "flow", "completion"),
    ],
)
def test_a_perfect_trace_is_exactly_100_for_any_set_of_categories(
    categories: tuple[str, ...],
) -> None:
    trace, policy = _subset_case(categories)
    report = validate_trace(trace, policy, fail_under=100)
    assert report.findings == ()
    assert tuple(c.category for c in report.categories if c.applicable) == categories
    assert report.score == 100.0
    assert report.passed


def test_weighted_mean_of_applicable_categories() -> None:
    # max_steps 2 with three steps: completion has 2 checks (final response ok, step count
    # failed) and scores 50; the other six categories score 100.
    # (30 + 30 + 25 + 15 + 25 + 20) * 100 + 10 * 50 = 14500 + 500 = 15000; 15000 / 155.
    report = validate_trace(perfect_trace(), full_policy(completion={"max_steps": 2}))
    assert [f.rule_id for f in report.findings] == ["ARH-CMP-002"]
    assert report.score == pytest.approx(15000 / 155)
    assert report.to_dict()["score"] == 96.77
    assert not report.passed  # an error finding fails the trace whatever the score


def test_budget_share_of_checks() -> None:
    # A total latency of 1100 ms (s2 at 900) breaks max_total_latency_ms 1000. Budget has three
    # checks (total latency, cost, tokens), one failed: 200/3. The other six score 100:
    # (30 * 200/3 + 125 * 100) / 155 = (2000 + 12500) / 155 = 14500 / 155.
    steps = copy.deepcopy(PERFECT_STEPS)
    steps[1]["latency_ms"] = 900
    report = validate_trace(trace_of(*steps), full_policy())
    assert [f.rule_id for f in report.findings] == ["ARH-BUD-002"]
    assert report.score == pytest.approx(14500 / 155)
    assert report.to_dict()["score"] == 93.55


def test_score_equal_to_fail_under_passes() -> None:
    # Grounding: 1 of 2 grounded responses is cited, coverage 0.5, no minimum, so it scores
    # 100 * 0.5 = 50; the missing citation is a warning (require_citations is false).
    # Completion: 1 check, passed: 100. Nothing else applies (no tool calls, budgets or
    # patterns). (15 * 50 + 10 * 100) / (15 + 10) = 1750 / 25 = 70.0 exactly.
    trace = trace_of(*copy.deepcopy(WARNING_ONLY_STEPS))
    policy = Policy.from_dict(WARNING_ONLY_POLICY)
    report = validate_trace(trace, policy, fail_under=70)
    assert [(f.severity, f.rule_id, f.step_id) for f in report.findings] == [
        ("warning", "ARH-GRD-001", "r2")
    ]
    assert report.score == 70.0
    assert report.citation_coverage == 0.5
    assert report.passed
    assert validate_trace(trace, policy).passed  # the default threshold is 70
    assert not validate_trace(trace, policy, fail_under=70.01).passed
    assert validate_trace(trace, policy, fail_under=69.99).passed
    # The verdict follows fail_under on every call (nothing is cached across thresholds).
    assert validate_trace(trace, policy, fail_under=70).passed


def test_validator_and_validate_trace_agree() -> None:
    trace = trace_of(*copy.deepcopy(WARNING_ONLY_STEPS))
    policy = Policy.from_dict(WARNING_ONLY_POLICY)
    for threshold in (0, 70, 80):
        direct = Validator(policy, fail_under=threshold).validate(trace)
        assert direct == validate_trace(trace, policy, fail_under=threshold)
    other = Policy.from_dict({**WARNING_ONLY_POLICY, "policy_id": "other"})
    assert validate_trace(trace, other).policy_id == "other"


# --- the JSON forms ----------------------------------------------------------------------------

REPORT_KEYS_02 = [
    "trace_id",
    "agent_name",
    "workflow",
    "policy_id",
    "score",
    "passed",
    "total_latency_ms",
    "total_cost_usd",
    "citation_coverage",
    "findings",
]


def test_trace_report_key_order_with_optional_keys() -> None:
    report = Validator(full_policy()).validate(perfect_trace(), source_path="traces/a.json")
    keys = list(report.to_dict())
    assert keys[:12] == [*REPORT_KEYS_02, "total_tokens", "source_path"]
    assert not set(keys[12:]) & set(keys[:12])  # additions come after, and only once
    out = report.to_dict()
    assert out["total_tokens"] == 15  # 10 input + 5 output tokens on s1
    assert out["source_path"] == "traces/a.json"
    # 100 + 100 + 50 ms; $0.01 + $0.01 + $0.02.
    assert out["total_latency_ms"] == 250
    assert out["total_cost_usd"] == 0.04
    assert out["citation_coverage"] == 1.0


def test_trace_report_key_order_without_optional_keys() -> None:
    steps = copy.deepcopy(PERFECT_STEPS)
    del steps[0]["input_tokens"], steps[0]["output_tokens"]
    out = validate_trace(trace_of(*steps), policy_of()).to_dict()
    keys = list(out)
    assert keys[:10] == REPORT_KEYS_02
    assert "total_tokens" not in keys
    assert "source_path" not in keys
    assert not set(keys[10:]) & set(REPORT_KEYS_02)


def test_finding_key_order() -> None:
    full = Finding(
        rule_id="ARH-SCH-003",
        severity="error",
        category="schema",
        message="m",
        step_id="s1",
        expected="e",
        observed="o",
        remediation="r",
        subject="/arguments/id",
        step_index=0,
    )
    assert list(full.to_dict()) == [
        "severity",
        "category",
        "message",
        "step_id",
        "rule_id",
        "expected",
        "observed",
        "remediation",
        "subject",
    ]
    bare = Finding(rule_id="ARH-CMP-002", severity="error", category="completion", message="m")
    assert bare.to_dict() == {
        "severity": "error",
        "category": "completion",
        "message": "m",
        "step_id": None,  # a trace-level finding writes step_id null
        "rule_id": "ARH-CMP-002",
    }
    some = Finding("ARH-SEQ-001", "error", "sequence", "m", remediation="r", subject="lookup")
    assert list(some.to_dict()) == [
        "severity",
        "category",
        "message",
        "step_id",
        "rule_id",
        "remediation",
        "subject",
    ]


def test_findings_from_validation_have_the_0_2_key_order() -> None:
    steps = copy.deepcopy(PERFECT_STEPS)
    steps[0]["arguments"] = {"id": 1}
    report = validate_trace(trace_of(*steps), full_policy())
    (finding,) = report.to_dict()["findings"]
    assert list(finding)[:5] == ["severity", "category", "message", "step_id", "rule_id"]
    assert finding["rule_id"] == "ARH-SCH-004"
    assert finding["step_id"] == "s1"


def test_empty_trace_totals_are_floats() -> None:
    report = validate_trace(trace_of(), policy_of())
    out = report.to_dict()
    assert out["total_latency_ms"] == 0.0
    assert out["total_cost_usd"] == 0.0
    assert type(out["total_latency_ms"]) is float
    assert type(out["total_cost_usd"]) is float
    text = json.dumps(out)
    assert '"total_latency_ms": 0.0' in text
    assert '"total_cost_usd": 0.0' in text
    assert out["citation_coverage"] is None
    assert "total_tokens" not in out
    assert out["score"] == 100.0  # no category applies


def test_totals_add_up_as_written() -> None:
    assert 0.1 + 0.2 > 0.3  # plain binary addition would exceed the budget
    steps = [
        {"step_id": "a", "type": "model_response", "text": "x", "latency_ms": 0.1, "cost_usd": 0.1},
        {"step_id": "b", "type": "model_response", "text": "y", "latency_ms": 0.2, "cost_usd": 0.2},
    ]
    policy = policy_of(budgets={"max_total_cost_usd": 0.3, "max_total_latency_ms": 0.3})
    report = validate_trace(trace_of(*steps), policy)
    assert report.findings == ()
    assert report.total_cost_usd == 0.3
    assert report.total_latency_ms == 0.3
    assert report.to_dict()["total_cost_usd"] == 0.3


def test_a_real_excess_is_still_found() -> None:
    steps = [
        {"step_id": "a", "type": "model_response", "text": "x", "cost_usd": 0.1},
        {"step_id": "b", "type": "model_response", "text": "y", "cost_usd": 0.2},
        {"step_id": "c", "type": "model_response", "text": "z", "cost_usd": 0.000001},
    ]
    report = validate_trace(trace_of(*steps), policy_of(budgets={"max_total_cost_usd": 0.3}))
    assert [f.rule_id for f in report.findings] == ["ARH-BUD-003"]
    assert report.total_cost_usd == 0.300001


# --- findings: remediation and order -----------------------------------------------------------

SORT_POLICY: dict[str, Any] = {
    "policy_id": "sort",
    "allowed_tools": {"a": {"required_arguments": {"x": "str"}}, "b": {}},
    "sequence": {"required_tools": ["b"]},
    "budgets": {"max_total_tokens": 100},
    "completion": {"max_steps": 2},
}
SORT_STEPS: list[dict[str, Any]] = [
    # x has the wrong type (ARH-SCH-004, error) and y is undeclared (ARH-SCH-005, warning).
    {"step_id": "s1", "type": "tool_call", "tool_name": "a", "arguments": {"x": 1, "y": 2}},
    # zzz is not allowed (ARH-SCH-001, error).
    {"step_id": "s2", "type": "tool_call", "tool_name": "zzz", "arguments": {}},
    {"step_id": "s3", "type": "model_response", "text": "done"},
]
# Trace level: b never called (ARH-SEQ-001, error), 3 steps > max_steps 2 (ARH-CMP-002, error),
# no token data for the token budget (ARH-BUD-005, warning).


def test_findings_are_sorted() -> None:
    report = validate_trace(trace_of(*copy.deepcopy(SORT_STEPS)), Policy.from_dict(SORT_POLICY))
    # Errors first; within a severity, trace-level findings (by rule id) before step findings,
    # and steps in trace order even where the rule id would sort the other way (SCH-001 < SCH-004).
    assert [(f.severity, f.rule_id, f.step_id) for f in report.findings] == [
        ("error", "ARH-CMP-002", None),
        ("error", "ARH-SEQ-001", None),
        ("error", "ARH-SCH-004", "s1"),
        ("error", "ARH-SCH-001", "s2"),
        ("warning", "ARH-BUD-005", None),
        ("warning", "ARH-SCH-005", "s1"),
    ]
    assert [f["rule_id"] for f in report.to_dict()["findings"]] == [
        f.rule_id for f in report.findings
    ]


def test_score_of_the_sorting_example() -> None:
    # schema: both tool calls fail, 0 (weight 30); budget: set but nothing to check, 100 (30);
    # sequence: 1 check failed, 0 (25); completion: 1 check failed, 0 (10); safety, grounding
    # and flow do not apply. 30 * 100 / (30 + 30 + 25 + 10) = 3000 / 95.
    report = validate_trace(trace_of(*copy.deepcopy(SORT_STEPS)), Policy.from_dict(SORT_POLICY))
    assert report.score == pytest.approx(3000 / 95)
    assert report.to_dict()["score"] == 31.58
    assert not report.passed


def _assert_well_formed(report: TraceReport, trace: Trace) -> None:
    order = []
    for finding in report.findings:
        rule = RULES[finding.rule_id]
        assert finding.remediation == rule.remediation
        assert finding.to_dict()["remediation"] == rule.remediation
        assert finding.category == rule.category
        index = -1 if finding.step_index is None else finding.step_index
        if finding.step_index is not None:
            assert trace.steps[finding.step_index].step_id == finding.step_id
        order.append((SEVERITY_RANK[finding.severity], index))
    assert order == sorted(order)


def test_every_finding_carries_its_rule_remediation() -> None:
    cases = [
        (trace_of(*copy.deepcopy(SORT_STEPS)), Policy.from_dict(SORT_POLICY)),
        (trace_of(*copy.deepcopy(WARNING_ONLY_STEPS)), Policy.from_dict(WARNING_ONLY_POLICY)),
    ]
    bad = copy.deepcopy(PERFECT_STEPS)
    bad[0]["error"] = "timeout"  # lookup failed and is never retried
    bad[1]["arguments"] = {"amount": 500, "note": "password: x"}  # missing id, range, unsafe
    bad[2]["citations"] = [{"url": "ftp://x"}]
    bad.append(copy.deepcopy(bad[1]) | {"step_id": "s4"})  # duplicate side effect
    bad.append({"step_id": "s4", "type": "tool_call", "tool_name": "drop"})
    cases.append((trace_of(*bad), full_policy(sequence={"forbidden_tools": ["drop"]})))
    seen: set[str] = set()
    for trace, policy in cases:
        report = validate_trace(trace, policy)
        _assert_well_formed(report, trace)
        seen.update(f.rule_id for f in report.findings)
    # The cases above reach most rule categories; make sure they did produce findings.
    assert {r[:7] for r in seen} >= {
        "ARH-SCH",
        "ARH-BUD",
        "ARH-SAF",
        "ARH-GRD",
        "ARH-SEQ",
        "ARH-FLW",
        "ARH-CMP",
    }


def test_benchmark_findings_are_well_formed() -> None:
    folder = require_shared(REFERENCE / "benchmarks" / "cases")
    paths = sorted(folder.glob("*.json"))
    assert len(paths) == 34
    for path in paths:
        case = load_json(path)
        trace = Trace.from_dict(case["trace"])
        report = validate_trace(trace, Policy.from_dict(case["policy"]))
        _assert_well_formed(report, trace)
        assert report.passed == case["expected"]["passed"], path.name


# --- wrong objects and data built in Python -------------------------------------------------


@pytest.mark.parametrize(
    ("value", "digits"),
    [(10**400, 401), (-(10**400), 401), (10**5000, 5001), (2**1024, 309)],
    ids=["1e400", "-1e400", "1e5000", "2**1024"],
)
def test_fail_under_too_large_for_a_float_is_a_usage_error(value: int, digits: int) -> None:
    # math.isfinite raised OverflowError, and repr() of 5001 digits a ValueError
    trace, policy = perfect_trace(), full_policy()
    message = f"fail_under must be a number from 0 to 100, got an integer of {digits} digits"
    with pytest.raises(UsageError) as info:
        validate_trace(trace, policy, fail_under=value)
    assert str(info.value) == message
    with pytest.raises(UsageError, match="an integer of"):
        Validator(policy, fail_under=value)


@pytest.mark.parametrize(
    ("trace", "policy", "message"),
    [
        (
            PERFECT_STEPS,
            FULL_POLICY,
            "policy must be a Policy, got dict; build it with Policy.from_dict(data)",
        ),
        (
            {"trace_id": "t", "steps": PERFECT_STEPS},
            None,
            "trace must be a Trace, got dict; build it with Trace.from_dict(data)",
        ),
        (None, None, "trace must be a Trace, got NoneType; build it with Trace.from_dict(data)"),
    ],
)
def test_validate_trace_needs_a_trace_and_a_policy(
    trace: object, policy: object, message: str
) -> None:
    parsed = full_policy() if policy is None else policy
    with pytest.raises(UsageError) as info:
        validate_trace(trace, parsed)  # type: ignore[arg-type]
    assert str(info.value) == message
    if policy is None:
        with pytest.raises(UsageError):
            Validator(full_policy()).validate(trace)  # type: ignore[arg-type]
    else:
        with pytest.raises(UsageError):
            Validator(policy)  # type: ignore[arg-type]


_REBUILD = "build the trace with Trace.from_dict(data)"


def _code_step(**changes: Any) -> Step:
    fields: dict[str, Any] = {"step_id": "s", "type": "model_response", "text": "hi"}
    return Step(**{**fields, **changes})


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        (["a step"], "trace.steps[0] must be a Step, got str; build it with Step.from_dict(data)"),
        (
            [_code_step(), PERFECT_STEPS[0]],
            "trace.steps[1] must be a Step, got dict; build it with Step.from_dict(data)",
        ),
        (None, "trace.steps must be a tuple of Step, got NoneType; " + _REBUILD),
        (5, "trace.steps must be a tuple of Step, got int; " + _REBUILD),
    ],
)
def test_a_trace_built_in_code_with_steps_that_are_not_steps_is_a_usage_error(
    steps: Any, message: str
) -> None:
    # the check that explains why the rules failed raised AttributeError or TypeError itself
    trace = Trace(trace_id="t", agent_name="a", workflow="w", steps=steps)
    with pytest.raises(UsageError) as info:
        validate_trace(trace, full_policy())
    assert str(info.value) == message


def test_a_step_built_in_code_with_extra_that_is_not_a_mapping_is_an_input_error() -> None:
    # a key that is not a string makes the rules fail; extra=5 then made the explanation fail
    bad = _code_step(
        type="tool_call", tool_name="search_docs", arguments={None: 1}, text=None, extra=5
    )
    trace = Trace(trace_id="t", agent_name="a", workflow="w", steps=(_code_step(), bad))
    with pytest.raises(InputError) as info:
        validate_trace(trace, full_policy())
    assert info.value.pointer == "/steps/1"
    assert str(info.value) == (
        "/steps/1: metadata and extra of a trace or step built in code must be mappings"
    )
    keyed = _code_step(type="tool_call", tool_name="search_docs", arguments={None: 1}, text=None)
    whole = Trace(trace_id="t", agent_name="a", workflow="w", steps=(keyed,), extra=5)
    with pytest.raises(InputError) as info:
        validate_trace(whole, full_policy())
    assert info.value.pointer == ""


# policies whose rules walk or compare a call's arguments (or its output)
_WALKING_POLICIES = {
    "schema": FULL_POLICY,
    "safety": {"policy_id": "p", "allow_unlisted_tools": True, "unsafe_patterns": ["secret"]},
    "provenance": {
        "policy_id": "p",
        "schema_version": "1.1",
        "allow_unlisted_tools": True,
        "provenance": {
            "untrusted": {"all_tools": True},
            "sinks": [{"tool": "refund", "argument": "id"}],
        },
    },
    "loops": {
        "policy_id": "p",
        "schema_version": "1.1",
        "allow_unlisted_tools": True,
        "loops": {"max_identical_calls": 1},
    },
}


@pytest.mark.parametrize("policy_name", list(_WALKING_POLICIES))
@pytest.mark.parametrize(
    ("change", "pointer", "kind"),
    [
        (lambda s: s[0]["arguments"].update({None: 1}), "/steps/0/arguments", "NoneType"),
        (lambda s: s[1]["arguments"].update({7: "x"}), "/steps/1/arguments", "int"),
        (lambda s: s[1]["arguments"].update(id={1: "x", "a": {}}), "/steps/1/arguments/id", "int"),
        (
            lambda s: s[0]["output"].update(items=[{None: "secret A1"}]),
            "/steps/0/output/items/0",
            "NoneType",
        ),
    ],
)
def test_keys_that_are_not_strings_in_values_are_input_errors(
    policy_name: str, change: Any, pointer: str, kind: str
) -> None:
    steps = copy.deepcopy(PERFECT_STEPS) * 2  # twice: the loop and flow rules compare calls
    steps[3:] = copy.deepcopy(steps[3:])
    for index, step in enumerate(steps):
        step["step_id"] = f"s{index + 1}"
    change(steps)
    trace = trace_of(*steps)  # parsing does not walk arguments, outputs or metadata
    policy = Policy.from_dict(_WALKING_POLICIES[policy_name])
    try:
        validate_trace(trace, policy)
    except InputError as err:
        problem = err
    else:
        # a policy whose rules never reach the key may accept the trace; none may crash. The
        # schema and safety rules read every argument (safety every output value too).
        assert policy_name not in ("schema", "safety")
        return
    assert (problem.pointer, problem.message) == (
        pointer,
        f"object keys must be strings, got a key of type {kind}",
    )


def _cyclic(where: str) -> Any:
    """A change that puts into a value of a step a list or object that contains itself."""

    def change(steps: list[dict[str, Any]]) -> None:
        loop: dict[str, Any] = {"a": 1}
        loop["again"] = [loop]
        if where == "arguments":
            steps[1]["arguments"]["id"] = loop
        elif where == "output":
            steps[0]["output"]["items"] = [{"ok": 1}, loop]
        else:
            steps[0]["metadata"] = {"trace": loop}

    return change


@pytest.mark.parametrize("policy_name", sorted(_WALKING_POLICIES))
@pytest.mark.parametrize(
    ("where", "pointer"),
    [
        ("arguments", "/steps/1/arguments/id/again/0"),
        ("output", "/steps/0/output/items/1/again/0"),
        ("metadata", "/steps/0/metadata/trace/again/0"),
    ],
)
def test_a_value_that_contains_itself_is_an_input_error(
    policy_name: str, where: str, pointer: str
) -> None:
    # JSON cannot hold one; a trace built in Python can, and the rules' walks went on for ever
    # (the safety rule until memory ran out) or blamed a long integer
    steps = copy.deepcopy(PERFECT_STEPS)
    _cyclic(where)(steps)
    with pytest.raises(InputError) as info:
        validate_trace(trace_of(*steps), Policy.from_dict(_WALKING_POLICIES[policy_name]))
    assert (info.value.pointer, info.value.message) == (
        pointer,
        "the value contains itself (a reference cycle), which JSON cannot hold",
    )


def test_a_value_shared_by_several_places_is_not_a_cycle() -> None:
    shared: dict[str, Any] = {"order": "A1"}
    steps = copy.deepcopy(PERFECT_STEPS)
    steps[0]["output"]["items"] = [shared, shared, {"again": shared}]
    steps[0]["metadata"] = {"one": [shared], "two": (shared, shared)}
    apart = json.loads(json.dumps(steps))  # the same values, each written out on its own
    for name, policy in sorted(_WALKING_POLICIES.items()):
        parsed = Policy.from_dict(policy)
        # checked as if every place held its own copy
        expected = validate_trace(trace_of(*apart), parsed)
        assert validate_trace(trace_of(*steps), parsed) == expected, name


def test_keys_that_are_not_strings_crash_no_rule() -> None:
    # the rules reached pointer_token (AttributeError) or sorted mixed keys (TypeError)
    steps = copy.deepcopy(PERFECT_STEPS)
    steps[0]["arguments"][None] = 1
    with pytest.raises(InputError) as info:
        validate_trace(trace_of(*steps), full_policy())
    assert info.value.pointer == "/steps/0/arguments"


def test_a_type_error_in_a_rule_is_not_blamed_on_the_input() -> None:
    validator = Validator(full_policy())

    def broken(facts: object, plan: object, findings: object) -> Any:
        raise TypeError("a bug in a rule")

    rules, plan = validator.plans[0]
    validator.plans = ((dataclasses.replace(rules, evaluate=broken), plan),)
    with pytest.raises(TypeError, match="a bug in a rule"):
        validator.validate(perfect_trace())


def test_validate_trace_is_safe_to_call_from_threads() -> None:
    # its cache of validators was evicted by iterating it while other threads inserted:
    # "dictionary changed size during iteration" and KeyError, every run of this test
    import sys
    import threading

    trace = Trace.from_dict(load_json(SAMPLES / "traces" / "rebook_double_rebooking.json"))
    base = load_json(SAMPLES / "policy_trajectory.json")
    policies = [Policy.from_dict({**base, "policy_id": f"p{i}"}) for i in range(40)]
    errors: list[str] = []

    def work(k: int) -> None:
        for j in range(150):
            policy = policies[(k * 7 + j) % len(policies)]
            try:
                report = validate_trace(trace, policy, 70.0 if j % 2 else 50)
                assert report.policy_id == policy.policy_id
            except Exception as exc:  # noqa: BLE001 - collected, then reported by the test
                errors.append(f"{type(exc).__name__}: {exc}")

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []


@pytest.mark.parametrize(
    ("fields", "pointer"),
    [({"latency_ms": "5"}, "/steps/0/latency_ms"), ({"arguments": ["a"]}, "/steps/0/arguments")],
)
def test_a_step_built_in_code_that_a_rule_cannot_read_is_an_input_error(
    fields: dict[str, Any], pointer: str
) -> None:
    step = Step(**{"step_id": "s1", "type": "tool_call", "tool_name": "t", **fields})
    policy = Policy.from_dict(
        {
            "policy_id": "p",
            "allowed_tools": {"t": {"optional_arguments": {"x": "str"}}},
            "budgets": {"max_step_latency_ms": 10},
        }
    )
    with pytest.raises(InputError) as caught:  # was TypeError or AttributeError from a rule
        validate_trace(Trace("t", "a", "w", (step,)), policy)
    assert caught.value.pointer == pointer


@pytest.mark.parametrize(
    ("value", "quote", "shown"),
    [
        ("a" * 100, True, "'" + "a" * 100 + "'"),  # 100 characters: whole
        ("a" * 101, True, "'" + "a" * 100 + "'... (101 characters)"),
        # cut after 100 characters of the value, then quoted with its escapes
        ("a\nb" * 60, True, repr("a\nb" * 33 + "a") + "... (180 characters)"),
        ("7" * 150, False, "7" * 100 + "... (150 characters)"),
        (None, True, "None"),  # any other value by its repr, without more quotes
        (10**200, True, "1" + "0" * 99 + "... (201 characters)"),
        (10**5000, True, "a value of type int too long to show"),  # repr() refuses 4300 digits
    ],
    ids=["100", "101", "escapes", "unquoted", "none", "long-int", "huge-int"],
)
def test_messages_quote_values_by_their_beginning_and_length(
    value: object, quote: bool, shown: str
) -> None:
    assert excerpt(value, quote=quote) == shown
