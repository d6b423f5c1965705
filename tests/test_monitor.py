"""The runtime guard (``monitor.Monitor``): early findings agree with offline validation.

The central property, checked on every benchmark case and on generated runs:

* ``finish()`` gives exactly the findings of ``validate_trace`` on the recorded steps (same
  order, same text, same anchors);
* every finding ``check()`` returns before a step runs, or ``observe()`` returns after, equals a
  finding of offline validation of the run up to that step, and is still in the offline result
  of the whole run (its identity: rule, step, subject, severity);
* nothing is missed: every finding of a rule that can be decided early (MONOTONE below) that
  appears when a step is added is reported by ``check()`` or ``observe()`` for that step, and
  ``check()`` reports those of policy language 1.1 (BEFORE_THE_CALL) before the call runs;
* the 1.1 rules are decided from state kept per run, not by evaluating the run again.
"""

from __future__ import annotations

import functools
import json
import math
import random
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_reliability_harness import Expectations
from agent_reliability_harness.engine import Validator
from agent_reliability_harness.errors import InputError, UsageError
from agent_reliability_harness.model.policy import Policy
from agent_reliability_harness.model.report import Finding
from agent_reliability_harness.model.trace import Step, Trace
from agent_reliability_harness.monitor import BlockedCallError, Monitor
from agent_reliability_harness.rules import (
    RULES,
    _taint,
    conditions,
    confirmation,
    loops,
    online,
    provenance,
)
from agent_reliability_harness.rules._taint import GrowingCorpus, normalise

from conftest import REFERENCE, ROOT, require_shared

# When each rule can be decided is declared by the rule (Rule.decided); the equivalence checks
# below hold the monitor to it. A finding is monotone when no later step can take it back.
MONOTONE = {
    r.rule_id for r in RULES.values() if r.emitted and r.decided in ("before_call", "on_step")
}
# Decided by how the run ends: a later step can make them go away (a required tool gets called,
# an error gets retried, data for a budget turns up, coverage rises, the final answer comes).
AT_THE_END = {r.rule_id for r in RULES.values() if r.emitted and r.decided == "at_end"}
# Read from the adapter notes of a converted trace's metadata, which a monitored run, built step
# by step, does not have: the equivalence checks compare the steps alone (see _load_case).
FROM_THE_SOURCE = {r.rule_id for r in RULES.values() if r.decided == "from_source"}
# Read only from the steps before a call and the call's tool and arguments, never its outcome:
# check() decides every one of them.
BEFORE_THE_CALL = {r.rule_id for r in RULES.values() if r.emitted and r.decided == "before_call"}

CASES = sorted((ROOT / "benchmarks" / "accuracy" / "cases").glob("*.json"))
# the per-rule fixtures (a policy, a trace, the expected findings) of every rule
RULE_FIXTURES = [
    path
    for path in sorted((ROOT / "tests" / "rules").glob("*/*.json"))
    if "expect_policy_error" not in json.loads(path.read_text(encoding="utf-8"))
]
# the fields of a tool call that are known before it runs
INTENT_KEYS = ("step_id", "type", "tool_name", "arguments")


def test_the_rules_decided_before_the_call_include_those_of_language_1_1() -> None:
    # none of them needs the call's outcome (POLICY-SPEC.md): a guard can refuse the call
    assert {
        "ARH-PRV-001", "ARH-CND-001", "ARH-CND-002", "ARH-CND-003", "ARH-CND-004",
        "ARH-CFM-001", "ARH-CFM-003", "ARH-CFM-004", "ARH-LOP-001", "ARH-LOP-002",
    } <= BEFORE_THE_CALL  # fmt: skip
    # and the end of the run decides what a later step could still change
    assert {"ARH-SEQ-001", "ARH-FLW-001", "ARH-GRD-002", "ARH-CMP-001", "ARH-CFM-002"} <= AT_THE_END


def _full(finding: Finding) -> tuple[Any, ...]:
    return (json.dumps(finding.to_dict(), sort_keys=True), finding.step_index)


def _identity(finding: Finding) -> tuple[Any, ...]:
    return (finding.rule_id, finding.step_id, finding.subject, finding.severity)


def _intent(step: Step) -> Step:
    """A tool call as it is known before it runs: no output, status, timing or cost."""
    if step.type != "tool_call":
        return step
    data = step.to_dict()
    return Step.from_dict({k: data[k] for k in INTENT_KEYS if k in data})


def equivalence_problems(
    policy: Policy,
    trace: Trace,
    intents: Iterator[bool] | None = None,
    fired: set[str] | None = None,
) -> list[str]:
    """Run the monitor over ``trace`` (checking each step before observing it) and list every
    way it disagrees with offline validation. ``intents`` says, step by step, whether check()
    sees only the intent of a tool call (default) or the whole step; ``fired`` collects the
    rule IDs the monitor reported."""
    validator = Validator(policy)
    # the trace's expected outcome, for the answer checks of finish() (decided at the end only)
    own = None if trace.expected is None else Expectations({trace.trace_id: trace.expected})
    monitor = Monitor(policy, trace_id=trace.trace_id, expectations=own)
    problems: list[str] = []
    offline = validator.validate(trace).findings
    final = {_identity(f) for f in offline}
    before: set[tuple[Any, ...]] = set()
    for at, step in enumerate(trace.steps):
        shown = _intent(step) if intents is None or next(intents) else step
        checked = monitor.check(shown)
        observed = monitor.observe(step)
        after = validator.validate(Trace("t", "", "", trace.steps[: at + 1])).findings
        offline_after = {_full(f) for f in after}
        offline_checked = (
            offline_after
            if shown is step
            else {
                _full(f)
                for f in validator.validate(Trace("t", "", "", (*trace.steps[:at], shown))).findings
            }
        )
        problems.extend(
            f"step {at}: check() gave {finding} not found offline"
            for finding in checked
            if _full(finding) not in offline_checked
        )
        problems.extend(
            f"step {at}: observe() gave {finding} not found offline"
            for finding in observed
            if _full(finding) not in offline_after
        )
        problems.extend(
            f"step {at}: {finding.rule_id} came from observe(), not check()"
            for finding in observed
            if finding.rule_id in BEFORE_THE_CALL
        )
        for finding in checked + observed:
            if _identity(finding) not in final:
                problems.append(f"step {at}: {_identity(finding)} is not in the final result")
            if fired is not None:
                fired.add(finding.rule_id)
        now = {_identity(f) for f in after if f.rule_id in MONOTONE}
        missed = now - before - {_identity(f) for f in checked + observed}
        if missed:
            problems.append(f"step {at}: new findings not reported early: {sorted(missed)}")
        before = now
    if [_full(f) for f in monitor.finish()] != [_full(f) for f in offline]:
        problems.append("finish() differs from offline validation")
    if monitor.trace().to_dict()["steps"] != trace.to_dict()["steps"]:
        problems.append("the recorded steps differ from the trace's")
    return problems


def _load_case(path: Path) -> tuple[Policy, Trace]:
    """A case's policy and trace, without the trace's metadata: a monitor records steps only."""
    data = json.loads(path.read_text(encoding="utf-8"))
    trace = {key: value for key, value in data["trace"].items() if key != "metadata"}
    return Policy.from_dict(data["policy"]), Trace.from_dict(trace)


def test_the_benchmark_cases_are_there() -> None:
    assert len(CASES) >= 250


@functools.cache
def _corpus_results() -> tuple[dict[str, list[str]], frozenset[str]]:
    """The problems of each benchmark case, and the rule IDs the monitor reported overall."""
    fired: set[str] = set()
    problems = {path.stem: equivalence_problems(*_load_case(path), fired=fired) for path in CASES}
    return problems, frozenset(fired)


def test_monitor_matches_offline_validation_on_every_benchmark_case() -> None:
    problems, _ = _corpus_results()
    assert len(problems) == len(CASES)
    assert {case: found for case, found in problems.items() if found} == {}


def test_the_corpus_exercises_the_early_rules() -> None:
    # the equivalence above means little unless the monitor fires for most rules it handles;
    # ARH-BUD-002 and -004 are seeded by no case (the generated runs below cover them)
    _, fired = _corpus_results()
    assert MONOTONE - fired <= {"ARH-BUD-002", "ARH-BUD-004"}


@pytest.mark.parametrize("path", CASES[::7], ids=lambda p: p.stem)
def test_monitor_matches_when_check_sees_whole_steps(path: Path) -> None:
    policy, trace = _load_case(path)
    assert equivalence_problems(policy, trace, iter(lambda: False, True)) == []


def test_monitor_matches_offline_validation_on_every_rule_fixture() -> None:
    # these hold the only cases of the policy language 1.1 rules
    problems = {
        f"{path.parent.name}/{path.stem}": equivalence_problems(*_load_case(path))
        for path in RULE_FIXTURES
    }
    assert len(problems) >= 80
    assert {case: found for case, found in problems.items() if found} == {}


def test_monitor_matches_offline_validation_on_reference_cases() -> None:
    folder = require_shared(REFERENCE / "benchmarks" / "cases")
    paths = sorted(folder.glob("*.json"))
    assert len(paths) == 34
    problems = {p.stem: equivalence_problems(*_load_case(p)) for p in paths}
    assert {k: v for k, v in problems.items() if v} == {}


# ---------------------------------------------------------------------------------------------
# Generated runs against a policy that turns every early rule on

PROPERTY_POLICY = Policy.from_dict(
    {
        "schema_version": "1",
        "policy_id": "monitor-property",
        "allowed_tools": {
            "lookup": {
                "required_arguments": {"id": {"type": "str", "pattern": "[a-c]"}},
                "optional_arguments": {"n": {"type": "int", "min": 0, "max": 2}},
                "max_calls": 3,
            },
            "pay": {
                "required_arguments": {"id": "str"},
                "optional_arguments": {"amount": {"type": "float", "enum": [1.0, 2.5]}},
                "side_effect": True,
                "max_calls": 2,
                "min_calls": 1,
            },
            "notify": {"optional_arguments": {"channel": {"type": "str", "enum": ["email"]}}},
        },
        "budgets": {
            "max_step_latency_ms": 50,
            "max_total_latency_ms": 120,
            "max_total_cost_usd": 0.3,
            "max_total_tokens": 40,
        },
        "unsafe_patterns": ["secret", "drop\\s+table"],
        "grounding": {
            "require_citations": True,
            "min_citation_coverage": 0.5,
            "require_valid_citation_urls": True,
        },
        "sequence": {
            "required_tools": ["lookup"],
            "forbidden_tools": ["wipe"],
            "call_order": ["lookup", "pay", "notify"],
        },
        "error_handling": {"require_retry_on_error": True, "max_attempts": 2},
        "completion": {"require_final_response": True, "max_steps": 6},
    }
)

_arguments = st.dictionaries(
    st.sampled_from(["id", "n", "amount", "channel", "extra"]),
    st.sampled_from(["a", "b", "zz", "secret", 1, 2.5, 3, True, None, ["x"]]),
    max_size=3,
)
_metric = st.one_of(st.none(), st.sampled_from([0, 0.1, 0.2, 10, 49.5, 50, 60.1]))
_tokens = st.one_of(st.none(), st.integers(0, 30))


@st.composite
def _step(draw: st.DrawFn, index: int) -> dict[str, Any]:
    kind = draw(st.sampled_from(["tool_call", "tool_call", "tool_call", "model_response", "user"]))
    step: dict[str, Any] = {"step_id": draw(st.sampled_from([f"s{index}", f"s{index}", "dup"]))}
    if kind == "user":
        step.update(type="user_message", text=draw(st.sampled_from(["hi", "a secret"])))
        return step
    step["type"] = kind
    if kind == "tool_call":
        step["tool_name"] = draw(st.sampled_from(["lookup", "pay", "notify", "wipe", "other", ""]))
        step["arguments"] = draw(_arguments)
        step["output"] = draw(st.sampled_from([None, "ok", {"k": "drop  table x"}]))
        step["status"] = draw(st.sampled_from(["ok", "ok", "error"]))
    else:
        step["text"] = draw(st.sampled_from(["done", "", "the secret"]))
        step["requires_grounding"] = draw(st.booleans())
        step["citations"] = draw(
            st.lists(
                st.sampled_from([{"url": "https://a.example"}, {"url": "ftp:x"}, {"source": ""}]),
                max_size=2,
            )
        )
    step["latency_ms"] = draw(_metric)
    step["cost_usd"] = draw(_metric)
    step["input_tokens"] = draw(_tokens)
    return {k: v for k, v in step.items() if v is not None}


@st.composite
def _trace(draw: st.DrawFn) -> Trace:
    count = draw(st.integers(0, 12))
    steps = [draw(_step(i)) for i in range(count)]
    return Trace.from_dict({"trace_id": "gen", "agent_name": "", "workflow": "", "steps": steps})


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trace=_trace(), intents=st.lists(st.booleans(), min_size=12, max_size=12))
def test_monitor_matches_offline_validation_on_generated_runs(
    trace: Trace, intents: list[bool]
) -> None:
    assert equivalence_problems(PROPERTY_POLICY, trace, iter(intents)) == []


# Policy language 1.1: every section, over tools whose calls the strategy below makes.
POLICY_11 = Policy.from_dict(
    {
        "schema_version": "1.1",
        "policy_id": "monitor-property-11",
        "allow_unlisted_tools": True,
        "allowed_tools": {"pay": {"side_effect": True}, "book": {"side_effect": True}},
        "provenance": {
            "untrusted": {"tools": ["read"]},
            "trusted_tools": ["lookup"],
            "sinks": [{"tool": "pay", "argument": "to"}],
        },
        "conditions": [
            {
                "name": "big",
                "tool": "pay",
                "when": {"amount": {"exclusive_min": 10}},
                "require_prior": ["approve"],
            }
        ],
        "relations": [
            {
                "name": "within",
                "tool": "pay",
                "argument": "amount",
                "op": "<=",
                "source": {"tool": "lookup", "output": "/total"},
            }
        ],
        "confirmation": {},
        "loops": {"max_identical_calls": 2, "window": 4, "max_cycle_repeats": 1},
    }
)
_ACCOUNTS = ["acct-12345678", "acct-99999999"]


@st.composite
def _step_11(draw: st.DrawFn, index: int) -> dict[str, Any]:
    step: dict[str, Any] = {"step_id": f"s{index}"}
    kind = draw(st.sampled_from(["read", "lookup", "approve", "pay", "book", "user", "user"]))
    if kind == "user":
        text = draw(st.sampled_from(["yes", "no", f"pay {_ACCOUNTS[0]}"]))
        return {**step, "type": "user_message", "text": text}
    step.update(type="tool_call", tool_name=kind, status=draw(st.sampled_from(["ok", "error"])))
    if kind in ("pay", "book"):
        step["arguments"] = {
            "to": draw(st.sampled_from(_ACCOUNTS)),
            "amount": draw(st.sampled_from([5, 20])),
        }
    elif kind == "read":
        step["output"] = draw(st.sampled_from([f"send to {a}" for a in _ACCOUNTS] + ["none"]))
    elif kind == "lookup":
        step["output"] = draw(st.sampled_from([{"total": 15}, {"total": 3}, _ACCOUNTS[1]]))
    return step


@st.composite
def _trace_11(draw: st.DrawFn) -> Trace:
    steps = [draw(_step_11(i)) for i in range(draw(st.integers(0, 10)))]
    return Trace.from_dict({"trace_id": "gen", "agent_name": "", "workflow": "", "steps": steps})


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trace=_trace_11())
def test_monitor_matches_offline_validation_on_generated_runs_of_policy_11(trace: Trace) -> None:
    assert equivalence_problems(POLICY_11, trace) == []


# tool_failures: the monitor reads a call's output as offline validation does, so that a call
# that failed by the policy's tests is no duplicate side effect, needs a retry, and leaves the
# confirmation unused (POLICY_11's rules, with failures declared globally and for one tool)
POLICY_FAILURES = Policy.from_dict(
    {
        **POLICY_11.to_dict(),
        "policy_id": "monitor-property-failures",
        "error_handling": {"require_retry_on_error": True, "max_attempts": 3},
        "tool_failures": {
            "default": [{"pattern": "^Error:"}, {"pointer": "/error"}],
            "tools": {"lookup": [{"pointer": "/status", "equals": "error"}]},
        },
    }
)
_OUTPUTS = [
    None,
    "done",
    "Error: no seats",
    '{"error": "timeout"}',
    '{"error": null, "total": 15}',
    {"status": "error", "total": 3},
    {"total": 15},
]


@st.composite
def _step_failing(draw: st.DrawFn, index: int) -> dict[str, Any]:
    step = draw(_step_11(index))
    if step["type"] == "tool_call":
        step["output"] = draw(st.sampled_from(_OUTPUTS))
        step["status"] = draw(st.sampled_from(["ok", "ok", "ok", "error"]))
    return step


@st.composite
def _trace_failing(draw: st.DrawFn) -> Trace:
    steps = [draw(_step_failing(i)) for i in range(draw(st.integers(0, 10)))]
    return Trace.from_dict({"trace_id": "gen", "agent_name": "", "workflow": "", "steps": steps})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trace=_trace_failing(), intents=st.lists(st.booleans(), min_size=10, max_size=10))
def test_monitor_matches_offline_validation_with_declared_tool_failures(
    trace: Trace, intents: list[bool]
) -> None:
    assert equivalence_problems(POLICY_FAILURES, trace, iter(intents)) == []


def test_the_monitor_sees_a_declared_failure_where_offline_validation_does() -> None:
    # pay fails by its output ("Error: ..."), then is retried with the same arguments after one
    # yes: neither a duplicate side effect nor an unconfirmed call, offline or in the monitor;
    # the third identical call, after the retry succeeded, is both
    pay = {"to": _ACCOUNTS[0], "amount": 5}
    steps = [
        {"step_id": "u1", "type": "user_message", "text": "yes"},
        {"step_id": "p1", "type": "tool_call", "tool_name": "pay", "arguments": pay,
         "output": "Error: gateway timeout"},
        {"step_id": "p2", "type": "tool_call", "tool_name": "pay", "arguments": pay,
         "output": "paid"},
        {"step_id": "p3", "type": "tool_call", "tool_name": "pay", "arguments": pay,
         "output": "paid"},
    ]  # fmt: skip
    trace = Trace.from_dict({"trace_id": "t", "agent_name": "", "workflow": "", "steps": steps})
    policy = Policy.from_dict(
        {
            "schema_version": "1.1",
            "policy_id": "pay-once",
            "allowed_tools": {
                "pay": {
                    "required_arguments": {"to": "str", "amount": "float"},
                    "side_effect": True,
                }
            },
            "error_handling": {"require_retry_on_error": True},
            "confirmation": {},
            "tool_failures": {"default": [{"pattern": "^Error:"}]},
        }
    )
    offline = Validator(policy).validate(trace).findings
    assert [(f.rule_id, f.step_id) for f in offline] == [
        ("ARH-CFM-001", "p3"),
        ("ARH-FLW-003", "p3"),
    ]
    assert equivalence_problems(policy, trace) == []
    monitor = Monitor(policy)
    for step in steps[:3]:
        assert monitor.check(_intent(Step.from_dict(step))) == []
        assert monitor.observe(step) == []
    with pytest.raises(BlockedCallError) as blocked:
        monitor.guard(_intent(Step.from_dict(steps[3])))
    assert sorted(f.rule_id for f in blocked.value.findings) == ["ARH-CFM-001", "ARH-FLW-003"]


_amounts = st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False)


@settings(max_examples=200, deadline=None)
@given(values=st.lists(_amounts, min_size=1, max_size=8), nudge=st.sampled_from([-1, 0, 1]))
def test_running_totals_are_exact(values: list[float], nudge: int) -> None:
    # The budgets sit at (or one float step beside) the exact sum, where a naively added total
    # would cross them at the wrong step; the early findings must still agree with offline.
    total = math.fsum(values)
    limit = max(0.0, math.nextafter(total, nudge * math.inf) if nudge else total)
    policy = Policy.from_dict(
        {
            "policy_id": "totals",
            "allow_unlisted_tools": True,
            "budgets": {"max_total_latency_ms": round(limit, 6), "max_total_cost_usd": limit},
        }
    )
    steps = [
        {"step_id": f"s{i}", "type": "tool_call", "tool_name": "t", "latency_ms": v, "cost_usd": v}
        for i, v in enumerate(values)
    ]
    trace = Trace.from_dict({"trace_id": "t", "agent_name": "", "workflow": "", "steps": steps})
    assert equivalence_problems(policy, trace) == []


# ---------------------------------------------------------------------------------------------
# The guard at work, with expected findings written out by hand from the rules' documentation

REFUND_POLICY = Policy.from_dict(
    {
        "policy_id": "refunds",
        "allowed_tools": {
            "lookup": {"required_arguments": {"order": "str"}},
            "refund": {
                "required_arguments": {"order": "str", "amount": {"type": "float", "max": 100}},
                "side_effect": True,
                "max_calls": 2,
            },
            "search": {"required_arguments": {"q": "str"}},
        },
        "sequence": {"forbidden_tools": ["delete"], "call_order": ["lookup", "refund"]},
        "error_handling": {"max_attempts": 2},
        "budgets": {"max_total_cost_usd": 0.05, "max_step_latency_ms": 1000},
        "unsafe_patterns": ["password"],
        "completion": {"max_steps": 4},
    }
)


def _call(step_id: str, tool: str, status: str = "ok", **arguments: Any) -> dict[str, Any]:
    return {
        "step_id": step_id,
        "type": "tool_call",
        "tool_name": tool,
        "arguments": arguments,
        "status": status,
    }


def _ids(findings: list[Finding]) -> list[tuple[str, str | None]]:
    return [(f.rule_id, f.step_id) for f in findings]


def test_check_blocks_a_duplicate_side_effect_before_it_runs() -> None:
    monitor = Monitor(REFUND_POLICY)
    monitor.observe(_call("s1", "lookup", order="A1"))
    assert monitor.check(_call("s2", "refund", order="A1", amount=10.0)) == []
    monitor.observe(_call("s2", "refund", order="A1", amount=10.0))
    found = monitor.check(_call("s3", "refund", order="A1", amount=10.0))
    assert _ids(found) == [("ARH-FLW-003", "s3")]
    assert found[0].message == (
        "duplicate side effect: tool 'refund' was called again with identical arguments after "
        "step 's2' succeeded"
    )
    assert found[0].observed == "2 calls with identical arguments"
    with pytest.raises(BlockedCallError) as blocked:
        monitor.guard(_call("s3", "refund", order="A1", amount=10.0))
    assert "blocked tool 'refund' at step 's3': ARH-FLW-003 duplicate side effect" in str(
        blocked.value
    )
    assert blocked.value.step.step_id == "s3"
    assert len(monitor.steps) == 2  # neither check() nor guard() records anything
    # a different refund is fine
    assert monitor.guard(_call("s3", "refund", order="A2", amount=10.0)) == []


def test_identical_retries_before_the_first_success_are_allowed() -> None:
    monitor = Monitor(REFUND_POLICY)
    monitor.observe(_call("s1", "lookup", order="A1"))
    monitor.observe(_call("s2", "refund", "error", order="A1", amount=5))
    assert monitor.check(_call("s3", "refund", order="A1", amount=5)) == []


def test_check_reports_contract_and_sequence_findings_of_the_call() -> None:
    monitor = Monitor(REFUND_POLICY)
    found = monitor.check(_call("s1", "refund", order="A1", amount=500, note="x"))
    # the message texts follow the rule reference: ARH-SCH-005 and -009 at the call
    assert [(f.rule_id, f.message) for f in found] == [
        ("ARH-SCH-009", "tool 'refund' argument 'amount' value 500 is above the maximum 100"),
        ("ARH-SCH-005", "call to 'refund' passes the undeclared argument 'note'"),
    ]
    assert _ids(monitor.check(_call("s1", "delete", order="A1"))) == [
        ("ARH-SCH-001", "s1"),
        ("ARH-SEQ-002", "s1"),
    ]
    assert _ids(monitor.check({"step_id": "s1", "type": "tool_call"})) == [("ARH-SCH-002", "s1")]


def test_order_violation_is_found_when_the_prerequisite_comes_late() -> None:
    monitor = Monitor(REFUND_POLICY)
    monitor.observe(_call("s1", "refund", order="A1", amount=1))
    found = monitor.check(_call("s2", "lookup", order="A1"))
    # anchored at the first call of the later-listed tool (s1, position #1); lookup is #2
    assert _ids(found) == [("ARH-SEQ-003", "s1")]
    assert found[0].step_index == 0
    assert found[0].observed == (
        "'refund' first at step 's1' (#1), 'lookup' first at step 's2' (#2)"
    )


def test_call_counts_and_retry_storms_count_the_checked_call() -> None:
    monitor = Monitor(REFUND_POLICY)
    for sid in ("s1", "s2"):
        monitor.observe(_call(sid, "search", q="x"))
    storm = monitor.check(_call("s3", "search", q="x"))
    assert [(f.rule_id, f.step_id, f.message) for f in storm] == [
        (
            "ARH-FLW-002",
            "s3",
            (
                "retry storm: tool 'search' was called 3 times with identical arguments, more "
                "than max_attempts 2"
            ),
        )
    ]
    monitor.observe(_call("s3", "search", q="x"))
    # the storm keeps its anchor (the first call over the limit) and counts on
    again = monitor.check(_call("s4", "search", q="x"))
    assert [(f.step_id, f.observed) for f in again] == [("s3", "4 identical calls")]
    monitor = Monitor(REFUND_POLICY)
    monitor.observe(_call("s1", "refund", order="A", amount=1))
    monitor.observe(_call("s2", "refund", order="B", amount=1))
    too_many = monitor.check(_call("s3", "refund", order="C", amount=1))
    assert [(f.rule_id, f.step_id, f.message) for f in too_many] == [
        ("ARH-SEQ-004", None, "tool 'refund' was called 3 times, more than max_calls 2")
    ]


def test_budgets_already_exceeded_and_step_limits() -> None:
    monitor = Monitor(REFUND_POLICY)
    monitor.observe({**_call("s1", "lookup", order="A"), "cost_usd": 0.03})
    assert monitor.check(_call("s2", "lookup", order="B")) == []
    assert monitor.observe({**_call("s2", "lookup", order="B"), "cost_usd": 0.03}) == [
        RULES["ARH-BUD-003"].finding(
            "total cost $0.0600 exceeds max_total_cost_usd of $0.0500",
            expected="<= $0.0500",
            observed="$0.0600",
        )
    ]
    # from now on every step is refused: the budget is spent
    assert _ids(monitor.check(_call("s3", "lookup", order="C"))) == [("ARH-BUD-003", None)]
    # max_steps 4: the fifth agent step is over the limit (user turns do not count)
    monitor.observe({"step_id": "u1", "type": "user_message", "text": "hi"})
    monitor.observe(_call("s3", "lookup", order="C"))
    monitor.observe(_call("s4", "lookup", order="D"))
    found = monitor.check({"step_id": "s5", "type": "model_response", "text": "ok"})
    assert [f.message for f in found if f.rule_id == "ARH-CMP-002"] == [
        "trace has 5 steps, more than max_steps 4 (1 user_message steps not counted)"
    ]


def test_observe_reports_what_only_the_outcome_shows() -> None:
    monitor = Monitor(REFUND_POLICY)
    call = _call("s1", "lookup", order="A")
    assert monitor.check(call) == []
    done = {**call, "output": {"note": "the password is hunter2"}, "latency_ms": 1500}
    found = monitor.observe(done)
    assert [(f.rule_id, f.subject) for f in found] == [
        ("ARH-BUD-001", None),
        ("ARH-SAF-001", "/output/note ~ password"),
    ]
    # a step that was not checked first gets everything reported by observe()
    fresh = Monitor(REFUND_POLICY)
    assert _ids(fresh.observe(_call("s1", "delete"))) == [
        ("ARH-SCH-001", "s1"),
        ("ARH-SEQ-002", "s1"),
    ]


def test_repeated_step_ids_are_reported_with_the_count_so_far() -> None:
    monitor = Monitor(REFUND_POLICY)
    monitor.observe({"step_id": "x", "type": "user_message", "text": "a"})
    monitor.observe({"step_id": "x", "type": "user_message", "text": "b"})
    found = monitor.check({"step_id": "x", "type": "model_response", "text": "c"})
    assert [(f.rule_id, f.message, f.step_index) for f in found] == [
        ("ARH-SCH-010", "step_id 'x' is used by 3 steps; step ids should be unique", 0)
    ]


def test_finish_is_offline_validation_of_the_recorded_steps() -> None:
    monitor = Monitor(REFUND_POLICY, trace_id="run-1", agent_name="bot", workflow="wf")
    monitor.observe(_call("s1", "refund", order="A1", amount=10.0))
    monitor.observe(_call("s2", "refund", order="A1", amount=10.0))
    trace = monitor.trace()
    assert (trace.trace_id, trace.agent_name, trace.workflow, trace.schema_version) == (
        "run-1",
        "bot",
        "wf",
        "1",
    )
    report = monitor.report()
    assert report.passed is False
    assert monitor.finish() == list(Validator(REFUND_POLICY).validate(trace).findings)
    # errors first, then warnings; the budgets have no latency or cost data to check
    assert _ids(monitor.finish()) == [
        ("ARH-FLW-003", "s2"),
        ("ARH-BUD-006", None),
        ("ARH-BUD-007", None),
    ]


def test_bad_steps_are_input_errors_at_their_position() -> None:
    monitor = Monitor(REFUND_POLICY)
    monitor.observe(_call("s1", "lookup", order="A"))
    with pytest.raises(InputError) as error:
        monitor.check({"step_id": "s2", "type": "tool_call", "latency_ms": -1})
    assert error.value.pointer == "/steps/1/latency_ms"
    with pytest.raises(InputError):
        monitor.observe({"type": "tool_call"})
    assert len(monitor.steps) == 1


def test_a_key_that_is_not_a_string_is_an_input_error_at_its_object() -> None:
    # JSON cannot hold one, a step built in Python can; the rules walk keys as strings
    policy = Policy.from_dict(
        {"policy_id": "p", "allow_unlisted_tools": True, "unsafe_patterns": ["secret"]}
    )
    monitor = Monitor(policy)
    step = {"step_id": "s1", "type": "tool_call", "tool_name": "t", "arguments": {"b": {None: 1}}}
    for method in (monitor.check, monitor.observe):
        with pytest.raises(InputError) as error:
            method(step)
        assert error.value.pointer == "/steps/0/arguments/b"
        assert error.value.message == "object keys must be strings, got a key of type NoneType"


def test_a_value_that_contains_itself_is_an_input_error_at_its_place() -> None:
    # a copy of the step keeps the cycle; the safety rule walked it until memory ran out
    policy = Policy.from_dict(
        {"policy_id": "p", "allow_unlisted_tools": True, "unsafe_patterns": ["secret"]}
    )
    monitor = Monitor(policy)
    loop: list[Any] = ["secret"]
    loop.append(loop)
    step = {"step_id": "s1", "type": "tool_call", "tool_name": "t", "arguments": {"b": loop}}
    for method in (monitor.check, monitor.observe):
        with pytest.raises(InputError) as error:
            method(step)
        assert error.value.pointer == "/steps/0/arguments/b/1"
        assert error.value.message == (
            "the value contains itself (a reference cycle), which JSON cannot hold"
        )
    assert monitor.steps == ()


class _NoCopy:
    def __deepcopy__(self, memo: object) -> _NoCopy:
        raise RuntimeError("not today")


def _numbers() -> Iterator[int]:
    yield 1


@pytest.mark.parametrize(
    ("value", "kind", "why"),
    [
        (threading.Lock(), "lock", "TypeError: cannot pickle '_thread.lock' object"),
        (_numbers(), "generator", "TypeError: cannot pickle 'generator' object"),
        (_NoCopy(), "_NoCopy", "RuntimeError: not today"),
    ],
)
def test_a_value_that_cannot_be_copied_is_an_input_error_at_its_place(
    value: object, kind: str, why: str
) -> None:
    # copy.deepcopy's TypeError (or whatever __deepcopy__ raised) came out of check and observe
    monitor = Monitor(Policy.from_dict({"policy_id": "p", "allow_unlisted_tools": True}))
    b: list[Any] = [{"c": 2}]
    b.append(b)  # it cannot be copied either, and is not entered again while the value is sought
    b.append({"d": value})
    step = {"step_id": "s1", "type": "tool_call", "tool_name": "t", "arguments": {"a": 1, "b": b}}
    for method in (monitor.check, monitor.observe):
        with pytest.raises(InputError) as error:
            method(step)
        assert error.value.pointer == "/steps/0/arguments/b/2/d"
        assert error.value.message == (
            f"a value of type {kind} cannot be copied ({why}); a step holds JSON data: strings, "
            "numbers, booleans, null, lists and objects"
        )
    assert monitor.steps == ()


@pytest.mark.parametrize("step", [None, 5, "s1", ["s1"], ("step_id", "s1")])
def test_a_step_that_is_not_a_step_or_a_mapping_is_a_usage_error(step: Any) -> None:
    monitor = Monitor(REFUND_POLICY)
    for method in (monitor.check, monitor.guard, monitor.observe):
        with pytest.raises(UsageError, match=r"a step must be a Step or its JSON form \(a mapp"):
            method(step)
    assert monitor.steps == ()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"trace_id": ""}, "trace_id must be a non-empty string"),
        ({"trace_id": 5}, "trace_id must be a non-empty string"),
        ({"trace_id": None}, "trace_id must be a non-empty string"),
        ({"agent_name": 5}, "agent_name must be a string, got int"),
        ({"workflow": None}, "workflow must be a string, got NoneType"),
    ],
)
def test_the_identity_must_be_what_a_trace_holds(arguments: dict[str, Any], message: str) -> None:
    # the trace and report of the run carry it: arh compare and arh stats reject these ids
    with pytest.raises(UsageError, match=message):
        Monitor(REFUND_POLICY, **arguments)


def test_the_policy_must_be_a_policy() -> None:
    with pytest.raises(UsageError, match="policy must be a Policy, got dict"):
        Monitor({"policy_id": "p"})  # type: ignore[arg-type]


def test_a_policy_without_early_rules_still_validates_at_the_end() -> None:
    policy = Policy.from_dict({"policy_id": "p", "sequence": {"required_tools": []}})
    monitor = Monitor(policy)
    assert monitor.check({"step_id": "s1", "type": "model_response", "text": "hi"}) == []
    monitor.observe({"step_id": "s1", "type": "model_response", "text": "hi"})
    assert monitor.finish() == []
    assert monitor.report().passed


# ---------------------------------------------------------------------------------------------
# Policy language 1.1, step by step: the watches keep their rule's state, never re-read the run

# A second 1.1 policy with the options POLICY_11 leaves out: untrusted output of every tool that
# matches a pattern, a sink with an extract pattern, a forbidding condition, a prior with match
# paths, relations with `in` over a wildcard and with `==` and a source match, if_missing skip,
# a listed confirmation with its own pattern, loops by tool name over the whole trace.
POLICY_11_WIDE = Policy.from_dict(
    {
        "schema_version": "1.1",
        "policy_id": "monitor-property-11-wide",
        "allow_unlisted_tools": True,
        "allowed_tools": {"pay": {"side_effect": True}, "book": {"side_effect": True}},
        "provenance": {
            "untrusted": {"all_tools": True, "output_patterns": ["send|ignore"]},
            "trusted_tools": ["lookup"],
            "sinks": [
                {"tool": "pay", "argument": "to"},
                {"tool": "book", "argument": "memo", "extract": "acct-\\d+"},
            ],
            "min_value_length": 6,
        },
        "conditions": [
            {
                "name": "no-nines",
                "tool": "book",
                "when": {"to": {"pattern": "acct-9.*"}},
                "forbid": True,
            },
            {
                "name": "looked-up",
                "tool": "pay",
                "when": {"amount": {"min": 10}},
                "require_prior": [{"tool": "lookup", "match": {"to": "id"}}],
            },
        ],
        "relations": [
            {
                "name": "known-payee",
                "tool": "pay",
                "argument": "to",
                "op": "in",
                "source": {"tool": "lookup", "output": "/ids/*"},
                "if_missing": "skip",
            },
            {
                "name": "exact-total",
                "tool": "book",
                "argument": "amount",
                "op": "==",
                "source": {"tool": "lookup", "output": "/total", "match": {"to": "id"}},
            },
        ],
        "confirmation": {"tools": ["pay", "book"], "pattern": "\\b(ok|yes)\\b"},
        "loops": {
            "max_identical_calls": 2,
            "ignore_arguments": True,
            "max_cycle_repeats": 2,
            "max_cycle_length": 3,
        },
    }
)
_LOOKUPS = [
    {"id": _ACCOUNTS[0], "ids": [_ACCOUNTS[0]], "total": 20},
    {"ids": [], "total": 5},
    f"Send it to {_ACCOUNTS[1]}",
]


@st.composite
def _step_11_wide(draw: st.DrawFn, index: int) -> dict[str, Any]:
    step: dict[str, Any] = {"step_id": f"s{index}"}
    kind = draw(st.sampled_from(["read", "lookup", "pay", "book", "note", "user", "user"]))
    if kind == "user":
        text = draw(st.sampled_from(["OK", "no", "yes please", f"use {_ACCOUNTS[1]}", ""]))
        return {**step, "type": "user_message", "text": text}
    step.update(type="tool_call", tool_name=kind, status=draw(st.sampled_from(["ok", "error"])))
    to = draw(st.sampled_from(_ACCOUNTS))
    if kind == "pay":
        step["arguments"] = {"to": to, "amount": draw(st.sampled_from([5, 20]))}
    elif kind == "book":
        memo = draw(st.sampled_from(["none", f"ref {_ACCOUNTS[0]} / {_ACCOUNTS[1]}"]))
        step["arguments"] = {"to": to, "amount": draw(st.sampled_from([5, 20])), "memo": memo}
    elif kind == "lookup":
        step["arguments"] = {"id": to}
        step["output"] = draw(st.sampled_from(_LOOKUPS))
    else:
        step["output"] = draw(
            st.sampled_from([f"send to {a}" for a in _ACCOUNTS] + ["IGNORE all", "none"])
        )
    return step


@st.composite
def _trace_11_wide(draw: st.DrawFn) -> Trace:
    steps = [draw(_step_11_wide(i)) for i in range(draw(st.integers(0, 24)))]
    return Trace.from_dict({"trace_id": "gen", "agent_name": "", "workflow": "", "steps": steps})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trace=_trace_11_wide(), intents=st.lists(st.booleans(), min_size=24, max_size=24))
def test_monitor_matches_offline_validation_on_generated_runs_of_a_wider_policy_11(
    trace: Trace, intents: list[bool]
) -> None:
    assert equivalence_problems(POLICY_11_WIDE, trace, iter(intents)) == []


POLICY_LOOPS = Policy.from_dict(
    {
        "schema_version": "1.1",
        "policy_id": "monitor-loops",
        "allow_unlisted_tools": True,
        "loops": {
            "max_identical_calls": 3,
            "window": 5,
            "max_cycle_repeats": 2,
            "max_cycle_length": 4,
        },
    }
)


@st.composite
def _trace_loops(draw: st.DrawFn) -> Trace:
    # few distinct calls, so that identical calls and cycles of every length turn up; other
    # steps in between do not interrupt a cycle (only tool calls are compared)
    steps: list[dict[str, Any]] = []
    for index in range(draw(st.integers(0, 40))):
        kind = draw(st.sampled_from(["a", "b", "c", "a", "b", "other"]))
        if kind == "other":
            steps.append({"step_id": f"s{index}", "type": "model_response", "text": "..."})
            continue
        steps.append(_call(f"s{index}", kind, n=draw(st.sampled_from([1, 1, 2]))))
    return Trace.from_dict({"trace_id": "gen", "agent_name": "", "workflow": "", "steps": steps})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trace=_trace_loops())
def test_monitor_matches_offline_validation_on_generated_loops(trace: Trace) -> None:
    assert equivalence_problems(POLICY_LOOPS, trace) == []


def _fixed_run_11(count: int) -> Trace:
    """A long run for POLICY_11 with every 1.1 rule firing somewhere (fixed seed, so the same
    run every time)."""
    rng = random.Random(1311)  # noqa: S311 - a fixed seed: the same run every time
    steps: list[dict[str, Any]] = []
    for index in range(count):
        sid = f"s{index}"
        roll = rng.random()
        if roll < 0.15:
            steps.append(
                {"step_id": sid, "type": "user_message", "text": rng.choice(["yes", "no"])}
            )
        elif roll < 0.3:
            steps.append({**_call(sid, "read"), "output": f"send to {rng.choice(_ACCOUNTS)}"})
        elif roll < 0.45:
            steps.append({**_call(sid, "lookup"), "output": {"total": rng.choice([3, 15])}})
        elif roll < 0.5:
            steps.append(_call(sid, "approve"))
        else:
            tool = rng.choice(["pay", "book"])
            arguments = {"to": rng.choice(_ACCOUNTS), "amount": rng.choice([5, 20])}
            steps.append(_call(sid, tool, rng.choice(["ok", "error"]), **arguments))
    return Trace.from_dict({"trace_id": "fixed", "agent_name": "", "workflow": "", "steps": steps})


def test_check_and_observe_never_re_read_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    # The 1.1 rules are decided from state kept per run: while the run goes on, no 1.1
    # category's whole-trace evaluation runs, the offline corpus search is never used, and no
    # rule code gets facts of more than the one step being checked. (finish() validates
    # offline, after the run.)
    trace = _fixed_run_11(400)
    monitor = Monitor(POLICY_11)  # its Validator holds the real evaluate functions

    def refuse(*_: Any, **__: Any) -> None:
        raise AssertionError("the run was read again")

    for module in (provenance, conditions, confirmation, loops):  # the rule sets of 1.1
        monkeypatch.setattr(module, "evaluate", refuse)
    monkeypatch.setattr(provenance, "first_occurrences", refuse)
    monkeypatch.setattr(_taint.Corpus, "text", refuse)
    one_step_facts = online.TraceFacts

    def one_step(trace: Trace) -> Any:
        assert len(trace.steps) == 1
        return one_step_facts(trace)

    monkeypatch.setattr(online, "TraceFacts", one_step)
    early: list[Finding] = []
    for step in trace.steps:
        early += monitor.check(_intent(step))
        early += monitor.observe(step)
    monkeypatch.undo()
    fired = {f.rule_id for f in early}
    assert {"ARH-PRV-001", "ARH-CND-001", "ARH-CND-003", "ARH-CFM-001"} <= fired
    assert {"ARH-LOP-001", "ARH-LOP-002"} <= fired
    assert monitor.finish() == list(Validator(POLICY_11).validate(trace).findings)


def _policy_11(**sections: Any) -> Policy:
    return Policy.from_dict(
        {"schema_version": "1.1", "policy_id": "p", "allow_unlisted_tools": True, **sections}
    )


def _user(step_id: str, text: str) -> dict[str, Any]:
    return {"step_id": step_id, "type": "user_message", "text": text}


CONFIRMED = _policy_11(
    allowed_tools={"pay": {"optional_arguments": {"to": "str"}, "side_effect": True}, "lookup": {}},
    confirmation={},
)


def test_guard_lets_through_the_user_turn_that_reveals_earlier_calls() -> None:
    # before any user turn a guarded call passes (no turn yet to confirm it); the first turn
    # then reports its ARH-CFM-001. guard() refused that turn for the earlier call, so a loop
    # that skips what is refused never recorded a user turn
    monitor = Monitor(CONFIRMED)
    call = {"step_id": "s1", "type": "tool_call", "tool_name": "pay"}
    assert monitor.guard(call) == []
    monitor.observe(call)
    found = monitor.guard(_user("u1", "no"))
    assert [(f.rule_id, f.severity, f.step_id) for f in found] == [("ARH-CFM-001", "error", "s1")]
    assert monitor.observe(_user("u1", "no")) == []  # check() returned it already
    assert [f.rule_id for f in monitor.finish()] == ["ARH-CFM-001"]


def test_guard_blocks_an_unconfirmed_side_effect_before_it_runs() -> None:
    # ARH-CFM-001: a guarded call needs a user message matching /\byes\b/ since the previous
    # successful guarded call; a failed call does not use the confirmation up
    monitor = Monitor(CONFIRMED)
    monitor.observe(_user("u1", "please pay ann"))
    with pytest.raises(BlockedCallError) as blocked:
        monitor.guard(_call("s1", "pay", to="ann"))
    assert [(f.rule_id, f.message) for f in blocked.value.findings] == [
        ("ARH-CFM-001", "'pay' was called without a user confirmation since the start of the trace")
    ]
    monitor.observe(_user("u2", "Yes, go ahead"))
    assert monitor.guard(_call("s1", "pay", to="ann")) == []
    monitor.observe(_call("s1", "pay", "error", to="ann"))  # failed: the yes still holds
    assert monitor.guard(_call("s2", "pay", to="ann")) == []
    monitor.observe(_call("s2", "pay", to="ann"))  # succeeded: the yes is used up
    assert monitor.check(_call("s3", "lookup")) == []  # other tools need nothing
    monitor.observe(_call("s3", "lookup"))
    found = monitor.check(_call("s4", "pay", to="bob"))
    assert [(f.rule_id, f.step_id, f.message) for f in found] == [
        (
            "ARH-CFM-001",
            "s4",
            (
                "'pay' was called without a user confirmation since the previous guarded call at "
                "step 's2'"
            ),
        )
    ]


def test_calls_before_the_first_user_turn_are_reported_with_it() -> None:
    # Offline, a run without user turns only gets the ARH-CFM-002 warning; once it has one,
    # every unconfirmed guarded call is an ARH-CFM-001. The monitor cannot know before the first
    # user turn which it will be, so it reports those calls' findings with that turn.
    monitor = Monitor(CONFIRMED)
    assert monitor.check(_call("s1", "pay", to="ann")) == []
    assert monitor.observe(_call("s1", "pay", to="ann")) == []
    assert monitor.observe(_call("s2", "pay", "error", to="bob")) == []
    assert _ids(monitor.finish()) == [("ARH-CFM-002", None)]  # the run so far, offline
    turn = _user("u1", "yes")
    found = monitor.check(turn)
    assert [(f.step_id, f.message) for f in found] == [
        ("s1", "'pay' was called without a user confirmation since the start of the trace"),
        (
            "s2",
            (
                "'pay' was called without a user confirmation since the previous guarded call at "
                "step 's1'"
            ),
        ),
    ]
    assert monitor.observe(turn) == []  # check() already said so
    assert monitor.guard(_call("s3", "pay", to="cy")) == []  # confirmed by u1
    monitor.observe(_call("s3", "pay", to="cy"))
    assert _ids(monitor.check(_user("u2", "thanks"))) == []  # reported once only
    assert _ids(monitor.finish()) == [("ARH-CFM-001", "s1"), ("ARH-CFM-001", "s2")]


LOOPING = _policy_11(loops={"max_identical_calls": 2, "window": 3, "max_cycle_repeats": 1})


def test_identical_calls_over_the_limit_are_refused_within_the_window() -> None:
    # ARH-LOP-001: more than 2 identical calls within 3 consecutive tool calls
    monitor = Monitor(LOOPING)
    for sid in ("s1", "s2"):
        monitor.observe(_call(sid, "search", q="x"))
    found = monitor.check(_call("s3", "search", q="x"))
    assert [(f.rule_id, f.step_id, f.message) for f in found] == [
        (
            "ARH-LOP-001",
            "s3",
            (
                "3 identical calls of 'search' within 3 tool calls (from step 's1'), more than "
                "max_identical_calls 2"
            ),
        )
    ]
    assert monitor.check(_call("s3", "search", q="y")) == []  # other arguments
    monitor.observe(_call("s3", "other"))
    # s1 has left the window of the next call (s2, s3, s4): 2 identical calls in it
    assert monitor.check(_call("s4", "search", q="x")) == []


def test_a_cycle_is_refused_by_the_call_that_repeats_it_once_too_often() -> None:
    # ARH-LOP-002 with max_cycle_repeats 1: a -> b may occur once; the call that completes its
    # second occurrence is refused, and each call that carries on with it again, counts updated
    monitor = Monitor(LOOPING)
    for sid, tool in (("s1", "a"), ("s2", "b"), ("s3", "a")):
        assert monitor.check(_call(sid, tool)) == []
        monitor.observe(_call(sid, tool))
    monitor.observe(_user("u1", "still there?"))  # not a tool call: the cycle goes on
    found = monitor.check(_call("s4", "b"))
    assert [(f.rule_id, f.step_id, f.subject, f.message, f.observed) for f in found] == [
        (
            "ARH-LOP-002",
            "s4",
            "cycle a -> b from s1",
            (
                "the cycle a -> b repeats 2 times in a row from step 's1', more than "
                "max_cycle_repeats 1"
            ),
            "2 repetitions (4 calls)",
        )
    ]
    monitor.observe(_call("s4", "b"))
    again = monitor.check(_call("s5", "a"))
    # still anchored at s4; 5 calls make 2 whole repetitions
    assert [(f.step_id, f.observed) for f in again] == [("s4", "2 repetitions (5 calls)")]
    assert monitor.check(_call("s5", "c")) == []  # a different call breaks the cycle


def test_conditions_and_relations_are_decided_before_the_call() -> None:
    policy = _policy_11(
        conditions=[
            {
                "name": "big-refund",
                "tool": "refund",
                "when": {"amount": {"exclusive_min": 100}},
                "require_prior": ["approve"],
            }
        ],
        relations=[
            {
                "name": "within-total",
                "tool": "refund",
                "argument": "amount",
                "op": "<=",
                "source": {"tool": "lookup", "output": "/total", "match": {"order": "order"}},
            }
        ],
    )
    monitor = Monitor(policy)
    # no successful lookup of the order yet: the relation cannot be checked (ARH-CND-004)
    monitor.observe({**_call("s1", "lookup", "error", order="A"), "output": {"total": 150}})
    assert [
        (f.rule_id, f.observed) for f in monitor.check(_call("s2", "refund", order="A", amount=50))
    ] == [("ARH-CND-004", "no earlier successful call of 'lookup' with matching arguments")]
    monitor.observe({**_call("s2", "lookup", order="A"), "output": {"total": 150}})
    assert monitor.check(_call("s3", "refund", order="A", amount=50)) == []
    found = monitor.check(_call("s3", "refund", order="A", amount=160))
    assert [(f.rule_id, f.message) for f in found] == [
        (
            "ARH-CND-001",
            (
                "call to 'refund' meets condition 'big-refund' but no successful call of 'approve' "
                "came before it"
            ),
        ),
        (
            "ARH-CND-003",
            (
                "/arguments/amount = 160 of 'refund' breaks relation 'within-total': expected <= "
                "lookup.output/total (150, from step 's2')"
            ),
        ),
    ]
    monitor.observe(_call("s3", "approve"))
    assert _ids(monitor.check(_call("s4", "refund", order="A", amount=120))) == []


def test_provenance_finds_values_that_reach_the_untrusted_text_later() -> None:
    # Each value's search resumes where its previous one stopped: a value looked up before the
    # untrusted text holds it must still be found once it does, naming the first such step.
    policy = _policy_11(
        provenance={
            "untrusted": {"tools": ["read"]},
            "trusted_tools": ["profile"],
            "sinks": [{"tool": "pay", "argument": "to"}],
        }
    )
    monitor = Monitor(policy)
    monitor.observe({**_call("r1", "read"), "output": "nothing here"})
    assert monitor.check(_call("p1", "pay", to="ACCT-55555555")) == []
    monitor.observe({**_call("r2", "read"), "output": {"body": "Pay  acct-55555555 now"}})
    monitor.observe({**_call("r3", "read"), "output": "acct-55555555 again"})
    found = monitor.check(_call("p1", "pay", to="ACCT-55555555"))
    assert [(f.rule_id, f.subject, f.observed) for f in found] == [
        (
            "ARH-PRV-001",
            '/arguments/to = "acct-55555555"',
            "\"acct-55555555\" from the output of step 'r2' (read, #2)",
        )
    ]
    # a trusted source clears the value from then on, whatever the untrusted text says
    monitor.observe({**_call("f1", "profile"), "output": "payee ACCT-55555555"})
    monitor.observe({**_call("r4", "read"), "output": "acct-55555555"})
    assert monitor.check(_call("p2", "pay", to="acct-55555555")) == []
    assert _ids(monitor.finish()) == []


# ---------------------------------------------------------------------------------------------
# The growing corpus the provenance watch searches

_TEXT = st.text(
    # case folding that changes lengths (ß, İ), whitespace and NUL, a lone surrogate, an astral
    alphabet=st.sampled_from(
        ["a", "s", "S", " ", "\t", "\x00", "ß", "İ", "i", "é", "\ud800", "😀"]
    ),
    max_size=8,
)


@settings(max_examples=300, deadline=None)
@given(
    steps=st.lists(st.lists(_TEXT, min_size=1, max_size=3), max_size=8),
    values=st.lists(_TEXT, min_size=1, max_size=4),
    lookups=st.lists(st.integers(0, 8), max_size=6),
)
def test_growing_corpus_finds_the_first_step_as_plain_search_does(
    steps: list[list[str]], values: list[str], lookups: list[int]
) -> None:
    # Values are looked up after some steps were added and again later, so resumed searches
    # are compared too; plain `in` over each step's normalised texts is the reference.
    keys = [key for key in dict.fromkeys(normalise(v) for v in values) if key]
    corpus = GrowingCorpus()
    added: list[list[str]] = []
    for position, texts in enumerate(steps):
        corpus.add(position * 2, texts)  # positions need not be consecutive
        added.append([normalise(text) for text in texts])
        if position in lookups or position == len(steps) - 1:
            for key in keys:
                expected = next(
                    (at * 2 for at, parts in enumerate(added) if any(key in p for p in parts)), -1
                )
                assert corpus.first(key) == expected
    assert bool(corpus) == bool(steps)


def test_the_monitor_keeps_copies_of_the_steps_it_is_given() -> None:
    # an agent that reuses its argument dict for the next call: the recorded call must stay the
    # one that ran, or the duplicate of s2 below would show only at finish()
    policy = Policy.from_dict(
        {
            "policy_id": "payments",
            "allowed_tools": {"pay": {"required_arguments": {"to": "str"}, "side_effect": True}},
        }
    )
    monitor = Monitor(policy, trace_id="run-7")
    args = {"to": "ann"}
    monitor.observe({"step_id": "s1", "type": "tool_call", "tool_name": "pay", "arguments": args})
    args["to"] = "bob"
    monitor.observe({"step_id": "s2", "type": "tool_call", "tool_name": "pay", "arguments": args})
    assert [s.arguments for s in monitor.steps] == [{"to": "ann"}, {"to": "bob"}]
    assert monitor.finish() == []
    # the same with Step objects, whose dicts the caller still holds
    monitor = Monitor(policy, trace_id="run-8")
    step = Step.from_dict(
        {"step_id": "s1", "type": "tool_call", "tool_name": "pay", "arguments": {"to": "ann"}}
    )
    monitor.observe(step)
    assert step.arguments is not None
    step.arguments["to"] = "bob"  # type: ignore[index]
    assert [s.arguments for s in monitor.steps] == [{"to": "ann"}]


@pytest.mark.parametrize(
    ("fields", "pointer"),
    [
        ({"latency_ms": "5"}, "/steps/0/latency_ms"),
        ({"arguments": ["a"]}, "/steps/0/arguments"),
        ({"text": 5}, "/steps/0/text"),
        ({"type": "bogus"}, "/steps/0/type"),
        ({"status": "ERROR"}, "/steps/0/status"),
        ({"latency_ms": -5}, "/steps/0/latency_ms"),
    ],
)
def test_a_step_built_in_code_is_checked_as_one_read_from_a_file(
    fields: dict[str, Any], pointer: str
) -> None:
    # Step(...) takes any values; the monitor used to pass them to the rules (TypeError there)
    base = {"step_id": "s1", "type": "tool_call", "tool_name": "t", "arguments": {}}
    step = Step(**{**base, **fields})  # type: ignore[arg-type]
    monitor = Monitor(Policy.from_dict({"policy_id": "p", "allow_unlisted_tools": True}))
    for method in (monitor.check, monitor.observe):
        with pytest.raises(InputError) as caught:
            method(step)
        assert caught.value.pointer == pointer
    assert monitor.steps == ()


def test_a_step_that_makes_a_total_too_large_to_report_is_an_input_error_at_it() -> None:
    # without budgets the monitor kept no totals: it took both steps, and finish() then failed
    # with the error of offline validation; a token total too long to write, and an argument
    # integer too long to compare, raised ValueError
    monitor = Monitor(Policy.from_dict({"policy_id": "p", "allow_unlisted_tools": True}))
    slow = {"step_id": "s0", "type": "tool_call", "tool_name": "x", "latency_ms": 1.7e308}
    monitor.observe(slow)
    with pytest.raises(InputError) as caught:
        monitor.check({**slow, "step_id": "s1"})
    assert caught.value.pointer == "/steps/1/latency_ms"
    assert "add up to more than the largest number a report can hold" in caught.value.message
    assert monitor.finish() == []  # the run recorded so far can still be reported

    budgeted = Policy.from_dict(
        {"policy_id": "p", "allow_unlisted_tools": True, "budgets": {"max_total_tokens": 5}}
    )
    monitor = Monitor(budgeted)
    nines = int("9" * 4300)  # the longest integer Python writes; twice it has 4,301 digits
    many = {"step_id": "s0", "type": "model_response", "text": "x", "input_tokens": nines}
    assert [f.rule_id for f in monitor.observe(many)] == ["ARH-BUD-004"]  # 4,300 digits: fine
    with pytest.raises(InputError) as caught:  # 4,301 digits: too long to write
        monitor.observe({**many, "step_id": "s1"})
    assert (caught.value.pointer, caught.value.message) == (
        "/steps/1",
        "the steps' token counts add up to a number too long to report",
    )

    attempts = Policy.from_dict(
        {"policy_id": "p", "allow_unlisted_tools": True, "error_handling": {"max_attempts": 2}}
    )
    call = {"step_id": "s0", "type": "tool_call", "tool_name": "t", "arguments": {"n": 10**5000}}
    with pytest.raises(InputError) as caught:
        Monitor(attempts).check(call)
    assert caught.value.pointer == "/steps/0/arguments"
    assert "integer too long to compare" in caught.value.message
    # offline, the arguments of a tool called once are not compared: it takes a second call
    steps = [call, {**call, "step_id": "s1"}]
    trace = Trace.from_dict({"trace_id": "t", "agent_name": "", "workflow": "", "steps": steps})
    with pytest.raises(InputError) as caught:
        Validator(attempts).validate(trace)
    assert caught.value.pointer == "/steps/0/arguments"


def test_guard_blocks_a_certificate_that_is_not_worth_its_passengers_before_it_runs() -> None:
    # the reference is counted, scaled and read from the reservation before the call: 2
    # passengers make 100 or 200 (POLICY-SPEC.md, relations), so 150 is refused
    policy = Policy.from_dict(
        {
            "schema_version": "1.1",
            "policy_id": "p",
            "allow_unlisted_tools": True,
            "relations": [
                {
                    "name": "certificate-per-passenger",
                    "tool": "send_certificate",
                    "argument": "amount",
                    "op": "in",
                    "source": {
                        "tool": ["get_reservation_details", "cancel_reservation"],
                        "output": {"count": "/passengers/*"},
                        "times": [50, 100],
                    },
                }
            ],
        }
    )
    monitor = Monitor(policy)
    reservation = {
        "step_id": "s1",
        "type": "tool_call",
        "tool_name": "get_reservation_details",
        "arguments": {"reservation_id": "R"},
        "output": '{"passengers": [{"n": "a"}, {"n": "b"}]}',
    }
    monitor.observe(reservation)
    with pytest.raises(BlockedCallError):
        monitor.guard(_call("s2", "send_certificate", amount=150))
    assert monitor.guard(_call("s2", "send_certificate", amount=200)) == []
