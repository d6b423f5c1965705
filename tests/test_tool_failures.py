"""The ``tool_failures`` section: failures that a transcript states only in a tool's output.

A chat transcript has no failure flag on a tool result, so a call that timed out and was retried
looks like two successful calls. The section declares what a failed call's output looks like; a
call whose output matches is read with status error before the rules run. Expected findings and
scores below are worked out by hand from POLICY-SPEC.md (scoring, error_handling, confirmation).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_reliability_harness import InputError, Policy, Trace, validate_trace
from agent_reliability_harness.adapters import to_trace
from agent_reliability_harness.model.report import TraceReport
from agent_reliability_harness.monitor import Monitor

from conftest import ROOT, Run, load_json, schema_validator

REFUND_TOOLS: dict[str, Any] = {
    "lookup_order": {"required_arguments": {"order_id": "str"}},
    "issue_refund": {"required_arguments": {"order_id": "str"}, "side_effect": True},
}


def policy_doc(failures: Any = None, **more: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "policy_id": "refunds",
        "allowed_tools": copy.deepcopy(REFUND_TOOLS),
        "error_handling": {"require_retry_on_error": True},
    }
    if failures is not None:
        out["tool_failures"] = failures
    out.update(more)
    return out


def policy(failures: Any = None, **more: Any) -> Policy:
    return Policy.from_dict(policy_doc(failures, **more))


def call(step_id: str, tool: str, output: Any, **more: Any) -> dict[str, Any]:
    step = {
        "step_id": step_id,
        "type": "tool_call",
        "tool_name": tool,
        "arguments": {"order_id": "ORD-7"},
        "output": output,
    }
    step.update(more)
    return step


def trace(*steps: dict[str, Any]) -> Trace:
    document = {"trace_id": "t", "agent_name": "a", "workflow": "w", "steps": list(steps)}
    return Trace.from_dict(document)


def rule_ids(report: TraceReport) -> list[str]:
    return [finding.rule_id for finding in report.findings]


def flow(report: TraceReport) -> tuple[int, int]:
    (result,) = [c for c in report.categories if c.category == "flow"]
    return result.checks, result.failed


# --- an OpenAI chat transcript: a timeout, then a successful retry ---------------------------

# The refund call times out (the tool answers with a JSON error payload) and is retried with the
# same arguments, which works. Chat transcripts have no failure flag, so the adapter records both
# calls with status ok and lists tool_status in metadata.adapter.missing.
CHAT: dict[str, Any] = {
    "messages": [
        {"role": "user", "content": "Please refund order ORD-7."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_a1",
                    "type": "function",
                    "function": {"name": "issue_refund", "arguments": '{"order_id": "ORD-7"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_a1", "content": '{"error": "upstream timeout"}'},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_b2",
                    "type": "function",
                    "function": {"name": "issue_refund", "arguments": '{"order_id": "ORD-7"}'},
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_b2",
            "content": '{"refund_id": "R-19", "error": null}',
        },
        {"role": "assistant", "content": "Your refund R-19 is on its way."},
    ]
}
ERROR_MEMBER = {"default": [{"pointer": "/error"}]}


def test_a_retry_after_a_timeout_is_a_duplicate_side_effect_without_the_section() -> None:
    report = validate_trace(to_trace(copy.deepcopy(CHAT)), policy())
    assert rule_ids(report) == ["ARH-FLW-003"]
    assert "its source records no failures" in report.findings[0].message
    assert [c.rule_id for c in report.not_applicable] == ["ARH-FLW-001"]
    assert not report.passed


def test_a_retry_after_a_timeout_passes_once_the_failure_is_declared() -> None:
    report = validate_trace(to_trace(copy.deepcopy(CHAT)), policy(ERROR_MEMBER))
    assert rule_ids(report) == []
    # the retry rule now applies: the failed call is one retry check (passed, a later call of the
    # tool exists), and the side-effect group one check (passed: its first success is its last
    # call); schema 100 (2 calls, weight 30) and flow 100 (weight 20): 100
    assert report.not_applicable == ()
    assert flow(report) == (2, 0)
    assert report.score == 100.0
    assert report.passed


def test_a_failed_call_that_is_never_retried_is_now_found() -> None:
    chat = copy.deepcopy(CHAT)
    del chat["messages"][3:5]  # the retry and its result
    chat["messages"][-1]["content"] = "Your refund is on its way."
    assert rule_ids(validate_trace(to_trace(copy.deepcopy(chat)), policy())) == []
    report = validate_trace(to_trace(chat), policy(ERROR_MEMBER))
    assert rule_ids(report) == ["ARH-FLW-001"]
    assert report.findings[0].step_id == "call_a1"


def test_a_repeat_after_the_successful_retry_is_still_a_duplicate() -> None:
    chat = copy.deepcopy(CHAT)
    chat["messages"][5:5] = copy.deepcopy(chat["messages"][3:5])
    chat["messages"][5]["tool_calls"][0]["id"] = "call_c3"
    chat["messages"][6]["tool_call_id"] = "call_c3"
    report = validate_trace(to_trace(chat), policy(ERROR_MEMBER))
    assert [(f.rule_id, f.step_id) for f in report.findings] == [("ARH-FLW-003", "call_c3")]
    # the message no longer says that the source records no failures: the policy read them
    assert report.findings[0].message.endswith("after step 'call_b2' succeeded")


def test_a_declaration_that_matches_no_call_still_makes_the_status_known() -> None:
    chat = copy.deepcopy(CHAT)
    chat["messages"][2]["content"] = '{"refund_id": "R-18"}'
    report = validate_trace(to_trace(chat), policy(ERROR_MEMBER))
    assert report.not_applicable == ()
    # both calls succeeded: the second repeats the first
    assert rule_ids(report) == ["ARH-FLW-003"]
    assert "its source records no failures" not in report.findings[0].message


def test_without_tool_results_the_section_reads_nothing() -> None:
    chat = copy.deepcopy(CHAT)
    del chat["messages"][4]
    del chat["messages"][2]
    report = validate_trace(to_trace(chat), policy(ERROR_MEMBER))
    assert [c.rule_id for c in report.not_applicable] == ["ARH-FLW-001"]


# --- what a test matches ----------------------------------------------------------------------


def failed(failures: dict[str, Any], output: Any, tool: str = "lookup_order") -> bool:
    """Whether a call of ``tool`` with ``output`` is read as failed."""
    report = validate_trace(trace(call("s1", tool, output)), policy(failures))
    return rule_ids(report) == ["ARH-FLW-001"]


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("Error: reservation not found", True),
        ("error: lower case", False),  # case-sensitive unless the pattern says (?i)
        ("The flight has no Error: seats", False),  # ^ anchors at the start of the text
        ({"message": "Error: in an object"}, False),  # without a pointer: string outputs only
        ('"Error: a JSON string"', False),
        ("{}", False),
    ],
)
def test_a_pattern_alone_is_searched_in_the_output_text(output: Any, expected: bool) -> None:
    assert failed({"default": [{"pattern": "^Error:"}]}, output) is expected


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ({"error": "timeout"}, True),
        ('{"error": "timeout"}', True),  # a string holding JSON is read as that JSON
        (' {"error": {"code": 504}} ', True),
        ({"error": ""}, True),  # present and not null
        ({"error": False}, True),
        ({"error": None}, False),
        ('{"error": null, "value": 1}', False),
        ({"result": "fine"}, False),
        ("error", False),
        (["error"], False),
    ],
)
def test_a_pointer_alone_holds_for_a_value_that_is_not_null(output: Any, expected: bool) -> None:
    assert failed({"default": [{"pointer": "/error"}]}, output) is expected


@pytest.mark.parametrize(
    ("test", "output", "expected"),
    [
        ({"pointer": "/status", "equals": "error"}, {"status": "error"}, True),
        ({"pointer": "/status", "equals": "error"}, '{"status": "error"}', True),
        ({"pointer": "/status", "equals": "error"}, {"status": "ERROR"}, False),
        ({"pointer": "/status", "equals": "error"}, {"state": "error"}, False),
        ({"pointer": "/code", "equals": 500}, {"code": 500.0}, True),  # numbers by value
        ({"pointer": "/ok", "equals": False}, {"ok": False}, True),
        ({"pointer": "/ok", "equals": False}, {"ok": 0}, False),  # a boolean only a boolean
        ({"pointer": "", "equals": {"ok": False}}, '{"ok": false}', True),  # the whole output
        ({"pointer": "/errors/*/fatal", "equals": True}, {"errors": [{}, {"fatal": True}]}, True),
        ({"pointer": "/errors/*/fatal", "equals": True}, {"errors": [{"fatal": False}]}, False),
        ({"pointer": "/detail", "pattern": "timed? ?out"}, {"detail": "request timed out"}, True),
        ({"pointer": "/detail", "pattern": "timed? ?out"}, {"detail": ["timed out"]}, False),
        ({"pointer": "/a~1b", "equals": 1}, {"a/b": 1}, True),
    ],
)
def test_pointer_conditions(test: dict[str, Any], output: Any, expected: bool) -> None:
    assert failed({"default": [test]}, output) is expected


def test_any_test_of_the_tool_is_enough() -> None:
    failures = {"default": [{"pattern": "^Error:"}, {"pointer": "/status", "equals": "error"}]}
    assert failed(failures, "Error: x")
    assert failed(failures, {"status": "error"})
    assert not failed(failures, {"status": "ok"})


# --- global and per tool ----------------------------------------------------------------------


def test_a_tools_entry_replaces_the_default_for_its_tool() -> None:
    failures = {
        "default": [{"pattern": "^Error:"}],
        "tools": {"lookup_order": [{"pointer": "/status", "equals": "error"}]},
    }
    assert failed(failures, {"status": "error"}, "lookup_order")
    assert not failed(failures, "Error: not found", "lookup_order")  # the default does not apply
    assert failed(failures, "Error: not found", "issue_refund")  # the default
    assert not failed(failures, {"status": "error"}, "issue_refund")


def test_an_empty_list_exempts_a_tool_from_the_default() -> None:
    failures = {"default": [{"pattern": "^Error:"}], "tools": {"lookup_order": []}}
    assert not failed(failures, "Error: not found", "lookup_order")
    assert failed(failures, "Error: not found", "issue_refund")


def test_tools_alone_leave_the_other_tools_alone() -> None:
    failures = {"tools": {"lookup_order": [{"pattern": "^Error:"}]}}
    assert failed(failures, "Error: not found", "lookup_order")
    assert not failed(failures, "Error: not found", "issue_refund")


def test_an_exempt_tool_leaves_the_status_unknown() -> None:
    # the only calls are of a tool the section does not read: tool_status stays missing
    chat = copy.deepcopy(CHAT)
    report = validate_trace(
        to_trace(chat), policy({"default": [{"pattern": "^Error:"}], "tools": {"issue_refund": []}})
    )
    assert [c.rule_id for c in report.not_applicable] == ["ARH-FLW-001"]


# --- the trace's own status -------------------------------------------------------------------


def test_a_call_the_trace_records_as_failed_stays_failed_with_its_text() -> None:
    steps = (
        call("s1", "lookup_order", "fine", status="error", error="HTTP 503"),
        call("s2", "lookup_order", "fine"),
    )
    report = validate_trace(trace(*steps), policy({"default": [{"pattern": "^Error:"}]}))
    assert rule_ids(report) == []
    assert flow(report) == (1, 0)  # s1 is a failed call, retried by s2


def test_status_ok_is_the_default_and_does_not_protect_a_call() -> None:
    # "status": "ok" is what a trace without status means (the canonical form leaves it out)
    step = call("s1", "lookup_order", "Error: not found", status="ok")
    report = validate_trace(trace(step), policy({"default": [{"pattern": "^Error:"}]}))
    assert rule_ids(report) == ["ARH-FLW-001"]


def test_model_responses_and_user_turns_are_never_read() -> None:
    steps = (
        {"step_id": "u", "type": "user_message", "text": "Error: my order"},
        {"step_id": "m", "type": "model_response", "text": "Error: sorry"},
    )
    failures = {"default": [{"pattern": "^Error:"}]}
    report = validate_trace(
        trace(*steps), policy(failures, completion={"require_final_response": True})
    )
    assert rule_ids(report) == []


# --- what the other rules see -----------------------------------------------------------------


def test_a_failed_guarded_call_does_not_use_up_the_confirmation() -> None:
    # confirmation: a guarded call with status ok uses the yes up; a failed one changed nothing,
    # so its retry needs no new yes (POLICY-SPEC.md, confirmation)
    steps = (
        {"step_id": "u1", "type": "user_message", "text": "yes, refund it"},
        call("s1", "issue_refund", "Error: payment service unavailable"),
        call("s2", "issue_refund", "refunded"),
    )
    doc = policy_doc(schema_version="1.1", confirmation={"tools": ["issue_refund"]})
    without = validate_trace(trace(*steps), Policy.from_dict(doc))
    assert [(f.rule_id, f.step_id) for f in without.findings] == [
        ("ARH-CFM-001", "s2"),
        ("ARH-FLW-003", "s2"),
    ]
    doc["tool_failures"] = {"default": [{"pattern": "^Error:"}]}
    assert rule_ids(validate_trace(trace(*steps), Policy.from_dict(doc))) == []


def test_a_failed_lookup_is_no_prior_call() -> None:
    condition = {
        "name": "look-up-first",
        "tool": "issue_refund",
        "require_prior": [{"tool": "lookup_order", "match": {"order_id": "order_id"}}],
    }
    steps = (call("s1", "lookup_order", "Error: no such order"), call("s2", "issue_refund", "ok"))
    doc = policy_doc(schema_version="1.1", conditions=[condition])
    doc["error_handling"] = {}
    assert rule_ids(validate_trace(trace(*steps), Policy.from_dict(doc))) == []
    doc["tool_failures"] = {"default": [{"pattern": "^Error:"}]}
    report = validate_trace(trace(*steps), Policy.from_dict(doc))
    assert [(f.rule_id, f.step_id) for f in report.findings] == [("ARH-CND-001", "s2")]


# --- the runtime monitor ----------------------------------------------------------------------


def test_the_monitor_reads_failures_as_offline_validation_does() -> None:
    monitor = Monitor(policy({"default": [{"pattern": "^Error:"}]}))
    first = call("s1", "issue_refund", "Error: timeout")
    second = call("s2", "issue_refund", "refunded")
    third = call("s3", "issue_refund", "refunded")
    assert monitor.observe(first) == []
    intent = {k: second[k] for k in ("step_id", "type", "tool_name", "arguments")}
    assert monitor.check(intent) == []  # the first call failed: a retry is no duplicate
    assert monitor.observe(second) == []
    intent = {k: third[k] for k in ("step_id", "type", "tool_name", "arguments")}
    assert [f.rule_id for f in monitor.check(intent)] == ["ARH-FLW-003"]
    monitor.observe(third)
    offline = validate_trace(trace(first, second, third), monitor.policy)
    assert monitor.finish() == list(offline.findings)
    # the monitor keeps the steps as given; the rules saw the first call as failed
    assert [step.status for step in monitor.steps] == ["ok", "ok", "ok"]
    assert monitor.trace().to_dict()["steps"] == trace(first, second, third).to_dict()["steps"]


# --- the section itself -----------------------------------------------------------------------


def test_the_section_is_part_of_policy_language_1_0() -> None:
    loaded = policy(ERROR_MEMBER)
    assert loaded.schema_version == "1"
    assert loaded.extensions is None
    assert [c.category for c in validate_trace(trace(), loaded).categories] == [
        "schema",
        "budget",
        "safety",
        "grounding",
        "sequence",
        "flow",
        "completion",
    ]


def test_canonical_form_and_hash() -> None:
    plain = policy()
    assert "tool_failures" not in plain.to_dict()  # hashes of other policies stay as they were
    failures = {
        "default": [{"pattern": "^Error:", "description": "tau-bench"}],
        "tools": {"lookup_order": [{"pointer": "", "equals": {"ok": False}}], "issue_refund": []},
    }
    loaded = policy(failures)
    assert loaded.to_dict()["tool_failures"] == failures
    again = Policy.from_dict(json.loads(json.dumps(loaded.to_dict())))
    assert again == loaded
    assert again.sha256 == loaded.sha256 != plain.sha256
    only_tools = policy({"tools": {"lookup_order": [{"pointer": "/error"}]}})
    assert only_tools.to_dict()["tool_failures"] == {
        "default": None,
        "tools": {"lookup_order": [{"pointer": "/error"}]},
    }
    assert Policy.from_dict(only_tools.to_dict()) == only_tools
    assert policy({"default": [{"pointer": "/error", "equals": None}]}) == policy(ERROR_MEMBER)


BAD_SECTIONS: list[tuple[Any, str, str]] = [
    ("Error:", "/tool_failures", "tool_failures must be an object, got string"),
    ({}, "/tool_failures", "declares no failure test: give default, tools, or both"),
    (
        {"defaults": []},
        "/tool_failures/defaults",
        "unknown key 'defaults' (did you mean 'default'?)",
    ),
    (
        {"default": {"pattern": "x"}},
        "/tool_failures/default",
        "must be an array of failure tests, got object",
    ),
    ({"default": []}, "/tool_failures/default", "must hold at least one failure test"),
    (
        {"default": ["^Error:"]},
        "/tool_failures/default/0",
        "a failure test must be an object, got string",
    ),
    ({"default": [{}]}, "/tool_failures/default/0", "a failure test needs a pattern"),
    (
        {"default": [{"patern": "^Error:"}]},
        "/tool_failures/default/0/patern",
        "unknown key 'patern' (did you mean 'pattern'?)",
    ),
    (
        {"default": [{"equals": "error"}]},
        "/tool_failures/default/0/equals",
        "equals compares the value at a pointer",
    ),
    (
        {"default": [{"pointer": "/s", "equals": "error", "pattern": "e"}]},
        "/tool_failures/default/0",
        "give either pattern or equals, not both",
    ),
    (
        {"default": [{"pointer": "error"}]},
        "/tool_failures/default/0/pointer",
        "must be a JSON pointer such as '/total'",
    ),
    ({"default": [{"pointer": "/a~2"}]}, "/tool_failures/default/0/pointer", "~"),
    (
        {"default": [{"pattern": "("}]},
        "/tool_failures/default/0/pattern",
        "invalid regular expression",
    ),
    (
        {"default": [{"pattern": ""}]},
        "/tool_failures/default/0/pattern",
        "must be a non-empty regular expression",
    ),
    (
        {"default": [{"pattern": "^"}]},
        "/tool_failures/default/0/pattern",
        "matches the empty string",
    ),
    (
        {"default": [{"pattern": "\\bError"}, {"pattern": "(a+)+"}]},
        "/tool_failures/default/1/pattern",
        "--allow-risky-patterns",
    ),
    (
        {"tools": {"lookup": [{"pattern": "x"}]}},
        "/tool_failures/tools/lookup",
        "tool 'lookup' is not in allowed_tools",
    ),
    (
        {"tools": {"lookup_order": []}},
        "/tool_failures/tools/lookup_order",
        "an empty list exempts tool 'lookup_order'",
    ),
    (
        {"tools": {"lookup_order": {"pattern": "x"}}},
        "/tool_failures/tools/lookup_order",
        "must be an array of failure tests",
    ),
    ({"tools": []}, "/tool_failures/tools", "tools must be an object, got array"),
    ({"tools": {"": [{"pattern": "x"}]}}, "/tool_failures/tools/", "a tool name must not be empty"),
    (
        {"default": [{"pattern": "x", "description": 5}]},
        "/tool_failures/default/0/description",
        "must be a string",
    ),
]


@pytest.mark.parametrize(("section", "pointer", "message"), BAD_SECTIONS)
def test_a_bad_section_is_an_error_at_its_pointer(section: Any, pointer: str, message: str) -> None:
    with pytest.raises(InputError) as info:
        policy(section)
    assert info.value.pointer == pointer
    assert message in str(info.value)


def test_a_misspelt_section_name_gets_a_hint() -> None:
    with pytest.raises(InputError) as info:
        Policy.from_dict({"policy_id": "p", "tool_failure": ERROR_MEMBER})
    assert info.value.pointer == "/tool_failure"
    assert "did you mean 'tool_failures'?" in str(info.value)


def test_a_risky_pattern_can_be_accepted_as_a_warning() -> None:
    loaded = Policy.from_dict(
        policy_doc({"default": [{"pattern": "(a+)+$"}]}), allow_risky_patterns=True
    )
    assert len(loaded.warnings) == 1
    assert loaded.warnings[0].startswith("/tool_failures/default/0/pattern: pattern '(a+)+$'")


def test_a_bad_section_is_one_error_line_with_the_file_and_the_pointer(
    arh: Callable[..., Run], tmp_path: Path
) -> None:
    bad = tmp_path / "policy.json"
    bad.write_text(json.dumps(policy_doc({"default": [{"patern": "^Error:"}]})), encoding="utf-8")
    good = tmp_path / "trace.json"
    good.write_text(json.dumps(trace(call("s1", "lookup_order", "ok")).to_dict()), "utf-8")
    run = arh("validate", "--policy", bad, good)
    assert run.status == 2  # a policy that cannot be used
    assert run.out == ""
    expected = (
        f"error: invalid policy: {bad.as_posix()}: /tool_failures/default/0/patern: unknown key "
        "'patern' (did you mean 'pattern'?)"
    )
    assert run.err.splitlines() == [expected]


# --- the JSON Schema agrees with the parser ---------------------------------------------------

VALID_SECTIONS = [
    {"default": [{"pattern": "^Error:"}]},
    {"default": [{"pointer": "/error"}, {"pointer": "/status", "equals": "error"}]},
    {"default": [{"pointer": "", "pattern": "x", "description": None, "equals": None}]},
    {"default": [{"pattern": "^Error:"}], "tools": {"lookup_order": []}},
    {"tools": {"lookup_order": [{"pointer": "/errors/*/code", "equals": 500}]}},
    {"default": None, "tools": {"issue_refund": [{"pattern": "failed"}]}},
]
# what the parser checks and the schema cannot say (its description lists them)
SCHEMA_GAPS = (
    "invalid regular expression",  # Python's regular expressions are the parser's to check
    "matches the empty string",
    "--allow-risky-patterns",
    "is not in allowed_tools",  # a relation between two sections
)


@pytest.mark.parametrize("section", VALID_SECTIONS)
def test_valid_sections_are_accepted_by_parser_and_schema(section: Any) -> None:
    document = policy_doc(section)
    Policy.from_dict(document)
    assert list(schema_validator("policy").iter_errors(document)) == []


@pytest.mark.parametrize(("section", "pointer", "message"), BAD_SECTIONS)
def test_bad_sections_are_refused_by_the_schema(section: Any, pointer: str, message: str) -> None:
    document = policy_doc(section)
    if any(gap in message for gap in SCHEMA_GAPS):
        assert schema_validator("policy").is_valid(document)  # a documented gap
    else:
        assert not schema_validator("policy").is_valid(document), section


def test_the_sample_policies_declare_tau_bench_failures() -> None:
    for name in ("tau-airline.json", "tau-airline-basic.json"):
        loaded = Policy.from_dict(load_json(ROOT / "samples" / "policies" / name))
        assert loaded.tool_failures is not None, name
        step = trace(call("s1", "cancel_reservation", "Error: reservation not found"))
        assert loaded.tool_failures.apply(step)[0].steps[0].status == "error"
