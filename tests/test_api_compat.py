"""The Python calls of arh 0.2.x: reports as read from JSON, lists of trace reports, ValueError.

arh 0.2.x's ``compare_reports(baseline_json, candidate_json)`` took the two JSON reports as
decoded dicts, and its renderers took the list of trace reports ``validate_trace`` returned.
The reports below are in the 0.2.x layout, written by hand from the facts of that version.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from agent_reliability_harness import (
    InputError,
    Policy,
    RunReport,
    Trace,
    UsageError,
    validate_trace,
)
from agent_reliability_harness.regression import compare_reports, evaluate_gate
from agent_reliability_harness.render.console import render_console
from agent_reliability_harness.render.html import render_html
from agent_reliability_harness.render.json_report import render_json
from agent_reliability_harness.render.junit import render_junit
from agent_reliability_harness.render.markdown import render_markdown
from agent_reliability_harness.render.sarif import render_sarif

RENDERERS: list[Callable[[Any], str]] = [
    render_console,
    render_json,
    render_markdown,
    render_junit,
    render_sarif,
    render_html,
]


def entry(trace_id: str, score: float, findings: list[tuple[str, str, str | None]]) -> Any:
    """A trace report of arh 0.2.x (its keys, in its order): failing when it has an error."""
    return {
        "trace_id": trace_id,
        "agent_name": "refund-copilot",
        "workflow": "refund",
        "policy_id": "refund-workflow-v1",
        "score": score,
        "passed": not findings,
        "total_latency_ms": 1300.0,
        "total_cost_usd": 0.008,
        "citation_coverage": None,
        "findings": [
            {
                "severity": "error",
                "category": category,
                "message": "a message",
                "step_id": step,
                "rule_id": rule,
            }
            for rule, category, step in findings
        ],
    }


def report(*entries: Any) -> dict[str, Any]:
    passed = sum(e["passed"] for e in entries)
    average = round(sum(e["score"] for e in entries) / len(entries), 2)
    return {
        "schema_version": "1",
        "summary": {
            "total_traces": len(entries),
            "passed_traces": passed,
            "failed_traces": len(entries) - passed,
            "average_score": average,
        },
        "reports": list(entries),
    }


BASELINE = report(entry("t1", 100.0, []), entry("t2", 100.0, []))
CANDIDATE = report(
    entry("t1", 84.52, [("ARH-FLW-003", "flow", "s3")]),
    entry("t2", 100.0, []),
)


def test_compare_reports_takes_the_reports_as_read_from_json() -> None:
    result = compare_reports(BASELINE, CANDIDATE)
    # by hand: t1 went from pass to fail with one new error finding, t2 is unchanged; the mean
    # of the deltas is (84.52 - 100 + 0) / 2 = -7.74, the largest drop 15.48
    assert result.summary() == {
        "traces_compared": 2,
        "traces_added": 0,
        "traces_removed": 0,
        "pass_to_fail": 1,
        "fail_to_pass": 0,
        "new_findings": 1,
        "new_error_findings": 1,
        "resolved_findings": 0,
        "average_score_delta": -7.74,
        "max_score_drop": 15.48,
    }
    gate = evaluate_gate(result)
    assert not gate.passed
    assert gate.reasons == (
        "1 new error finding: t1:ARH-FLW-003",
        "trace 't1' regressed from pass to fail",
    )
    # the same as with the parsed reports, and a JSON text read back reads the same
    parsed = compare_reports(RunReport.from_dict(BASELINE), RunReport.from_dict(CANDIDATE))
    assert parsed == result
    assert compare_reports(json.loads(json.dumps(BASELINE)), RunReport.from_dict(CANDIDATE)) == (
        result
    )


def test_a_bad_report_dict_names_its_side_and_field() -> None:
    bad = report(entry("t1", 101.0, []))  # scores run from 0 to 100
    with pytest.raises(InputError) as caught:
        compare_reports(BASELINE, bad)
    assert (caught.value.source, caught.value.pointer) == ("<candidate>", "/reports/0/score")
    with pytest.raises(ValueError, match="not a validation report"):  # as 0.2.x callers catch
        compare_reports({"traces": []}, CANDIDATE)
    with pytest.raises(UsageError, match="baseline must be a RunReport, a JSON report as read"):
        compare_reports("baseline.json", CANDIDATE)  # type: ignore[arg-type]


def test_the_renderers_take_a_report_dict_or_a_list_of_trace_reports() -> None:
    policy = Policy.from_dict({"policy_id": "p", "allowed_tools": {"pay": {"side_effect": True}}})
    call = {"type": "tool_call", "tool_name": "pay", "arguments": {}}
    reports = [
        validate_trace(
            Trace.from_dict(
                {
                    "trace_id": trace_id,
                    "agent_name": "a",
                    "workflow": "w",
                    "steps": [{"step_id": f"s{i}", **call} for i in range(1, calls + 1)],
                }
            ),
            policy,
        )
        for trace_id, calls in (("once", 1), ("twice", 2))
    ]
    run = RunReport(tuple(reports), policy_id="p")
    written = json.loads(render_json(run))  # a report as read back from its file
    for render in RENDERERS:
        assert render(reports) == render(run), render.__name__  # 0.2.x: render_console(reports)
        # read as a baseline is read (what a report file does not hold, such as the scores of
        # each category, is not shown)
        shown = render(written)
        assert shown == render(RunReport.from_dict(written)), render.__name__
        assert "twice" in shown, render.__name__
    assert "FAIL  twice" in render_console(reports)
    assert render_console([]) == render_console(RunReport(()))
    with pytest.raises(UsageError, match="report must be a RunReport, a JSON report as read"):
        render_console("report.json")  # type: ignore[arg-type]
    with pytest.raises(InputError) as caught:
        render_markdown({"reports": [{"trace_id": "t"}]})
    assert str(caught.value) == "<report>: /reports/0/passed: must be true or false, got null"
