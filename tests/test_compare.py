"""`arh compare` and the regression gate, scenario by scenario, through ``main([...])``.

The scenarios use the sample policy and traces. Expected outcomes follow from the gate rules: the
gate fails on new error findings, pass->fail flips, added failing traces and (when asked) score
drops over the limit; nothing else.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_reliability_harness import Finding, RunReport, TraceReport
from agent_reliability_harness.errors import InputError, UsageError
from agent_reliability_harness.regression import compare_reports, evaluate_gate
from agent_reliability_harness.regression.compare import diff_findings
from agent_reliability_harness.render.compare import render_compare_json

from conftest import (
    REFERENCE,
    ROOT,
    SAMPLES,
    Run,
    assert_markdown_is_inert,
    load_json,
    require_shared,
)

POLICY = SAMPLES / "policy_trajectory.json"
TRACES = SAMPLES / "traces"
PASS = TRACES / "rebook_pass.json"  # rebook-1001, passes
DOUBLE = TRACES / "rebook_double_rebooking.json"  # rebook-1002, fails with ARH-FLW-003 at s5b

Arh = Callable[..., Run]


def _baseline(arh: Arh, tmp_path: Path, *traces: Path, name: str = "baseline.json") -> Path:
    out = tmp_path / name
    run = arh("validate", "--policy", POLICY, *traces, "--json-out", out, "--quiet")
    assert run.err == ""
    return out


def _write(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return path


def _compare(arh: Arh, baseline: Path, *args: str | Path) -> tuple[Run, dict[str, Any]]:
    out = baseline.parent / "compare.json"
    run = arh("compare", "--baseline", baseline, *args, "--json-out", out)
    data = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
    if out.exists():
        out.unlink()
    return run, data


def test_identical_runs_pass(arh: Arh, tmp_path: Path) -> None:
    base = _baseline(arh, tmp_path, TRACES)
    run, data = _compare(arh, base, "--policy", POLICY, TRACES)
    assert run.status == 0, run.out + run.err
    assert "GATE: PASS (fail-on regressions)" in run.out
    assert data["gate"] == {
        "passed": True,
        "reasons": [],
        "fail_on": "regressions",
        "max_score_drop": None,
        "fail_on_drift": False,
    }
    assert data["summary"]["new_findings"] == data["summary"]["resolved_findings"] == 0
    assert data["summary"]["traces_compared"] == 6
    assert data["warnings"] == []


def test_a_seeded_new_error_fails(arh: Arh, tmp_path: Path) -> None:
    base = _baseline(arh, tmp_path, PASS)
    # the candidate run of rebook-1001 repeats its rebooking: a new FLW-003 error
    regressed = load_json(DOUBLE)
    regressed["trace_id"] = "rebook-1001"
    candidate = _write(tmp_path / "rebook-1001.json", regressed)
    run, data = _compare(arh, base, "--policy", POLICY, candidate)
    assert run.status == 1
    assert data["gate"]["reasons"] == [
        "1 new error finding: rebook-1001:ARH-FLW-003",
        "trace 'rebook-1001' regressed from pass to fail",
    ]
    (trace,) = data["traces"]
    assert trace["status_change"] == "pass->fail"
    assert [(f["rule_id"], f["step_id"]) for f in trace["new_findings"]] == [("ARH-FLW-003", "s5b")]
    # rebook-1002's score is 98.16 (POLICY-SPEC works it out); the pass trace scores 100
    assert trace["score_delta"] == -1.84


def test_a_fix_passes_and_lists_the_resolved_finding(arh: Arh, tmp_path: Path) -> None:
    base = _baseline(arh, tmp_path, DOUBLE)
    fixed = load_json(PASS)
    fixed["trace_id"] = "rebook-1002"
    candidate = _write(tmp_path / "fixed.json", fixed)
    run, data = _compare(arh, base, "--policy", POLICY, candidate, "--show-passing")
    assert run.status == 0
    (trace,) = data["traces"]
    assert trace["status_change"] == "fail->pass"
    assert [f["rule_id"] for f in trace["resolved_findings"]] == ["ARH-FLW-003"]
    assert "FAIL->PASS  rebook-1002  PASS  score 98.16 -> 100.00 (+1.84)" in run.out
    assert "      - error   ARH-FLW-003  s5b  duplicate side effect" in run.out


def test_a_pre_existing_failure_does_not_alarm_again(arh: Arh, tmp_path: Path) -> None:
    base = _baseline(arh, tmp_path, PASS, DOUBLE)
    run, data = _compare(arh, base, "--policy", POLICY, PASS, DOUBLE)
    assert run.status == 0
    assert data["summary"]["new_findings"] == 0
    assert [t["status_change"] for t in data["traces"]] == ["unchanged", "unchanged"]


def test_an_added_failing_trace_fails(arh: Arh, tmp_path: Path) -> None:
    base = _baseline(arh, tmp_path, PASS)
    run, data = _compare(arh, base, "--policy", POLICY, PASS, DOUBLE)
    assert run.status == 1
    assert data["gate"]["reasons"] == [
        "1 new error finding: rebook-1002:ARH-FLW-003",
        "added trace 'rebook-1002' fails",
    ]


def test_a_removed_trace_passes(arh: Arh, tmp_path: Path) -> None:
    base = _baseline(arh, tmp_path, PASS, DOUBLE)
    run, data = _compare(arh, base, "--policy", POLICY, PASS)
    assert run.status == 0
    assert data["summary"]["traces_removed"] == 1
    assert data["traces"][1]["status_change"] == "removed"
    assert data["traces"][1]["candidate_score"] is None


def _uncited_variant(tmp_path: Path) -> Path:
    """rebook-1001 with its final answer uncited and grounding relaxed to warnings.

    Policy: require_citations false, min_citation_coverage 0, so the uncited answer is only a
    ARH-GRD-001 warning; grounding drops from 100 to 0 (coverage 0 of 1 grounded response).
    The other categories stay at 100: the score is (155 - 15) x 100 / 155 = 90.3226 (a drop of
    9.6774), and the trace still passes (no error, 90.32 >= 70).
    """
    policy = load_json(POLICY)
    policy["grounding"] = {"require_citations": False, "min_citation_coverage": 0}
    policy_path = _write(tmp_path / "relaxed.json", policy)
    trace = load_json(PASS)
    trace["steps"][-1]["citations"] = []
    (tmp_path / "uncited").mkdir()
    _write(tmp_path / "uncited" / "rebook-1001.json", trace)
    return policy_path


@pytest.mark.parametrize(("limit", "status"), [("9.6", 1), ("9.7", 0)])
def test_score_drop_over_and_under_the_limit(
    arh: Arh, tmp_path: Path, limit: str, status: int
) -> None:
    policy = _uncited_variant(tmp_path)
    base = tmp_path / "base.json"
    arh("validate", "--policy", policy, PASS, "--json-out", base, "--quiet")
    run, data = _compare(
        arh, base, "--policy", policy, tmp_path / "uncited", "--max-score-drop", limit
    )
    assert run.status == status
    expected = (
        []
        if status == 0
        else [f"trace 'rebook-1001' score dropped 9.68 points (limit {float(limit):.2f})"]
    )
    assert data["gate"]["reasons"] == expected
    assert data["summary"]["max_score_drop"] == 9.68
    # a new warning alone never fails the gate
    assert [f["severity"] for f in data["traces"][0]["new_findings"]] == ["warning"]


def test_fail_on_failures_and_never(arh: Arh, tmp_path: Path) -> None:
    base = _baseline(arh, tmp_path, PASS, DOUBLE)
    run, data = _compare(arh, base, "--policy", POLICY, PASS, DOUBLE, "--fail-on", "failures")
    assert run.status == 1
    assert data["gate"]["reasons"] == ["candidate has 1 failing trace: rebook-1002"]
    base_only_pass = _baseline(arh, tmp_path, PASS, name="pass-only.json")
    run, data = _compare(arh, base_only_pass, "--policy", POLICY, DOUBLE, "--fail-on", "never")
    assert run.status == 0
    assert data["gate"] == {
        "passed": True,
        "reasons": [],
        "fail_on": "never",
        "max_score_drop": None,
        "fail_on_drift": False,
    }
    assert data["summary"]["new_error_findings"] == 1


def _legacy(report: dict[str, Any], *, drop: tuple[str, ...]) -> dict[str, Any]:
    """Strip what older harness versions did not write."""
    old = copy.deepcopy(report)
    for key in ("harness", "policy", "input_errors"):
        old.pop(key)
    old["summary"].pop("input_errors")
    for entry in old["reports"]:
        for key in ("unrounded_score", "categories", "source_line"):
            entry.pop(key, None)
        for finding in entry["findings"]:
            for key in drop:
                finding.pop(key, None)
    return old


def test_a_0_1_style_baseline_without_rule_ids(arh: Arh, tmp_path: Path) -> None:
    ours = load_json(_baseline(arh, tmp_path, TRACES))
    legacy = _write(tmp_path / "v01.json", _legacy(ours, drop=("rule_id", "subject")))
    run, data = _compare(arh, legacy, "--policy", POLICY, TRACES)
    assert run.status == 0, run.out
    assert data["summary"]["new_findings"] == data["summary"]["resolved_findings"] == 0
    assert any("does not record it" in w for w in data["warnings"])


def test_a_real_0_2_report_as_baseline(arh: Arh, tmp_path: Path) -> None:
    """A baseline in the exact 0.2.x layout, written by hand from the facts of that version.

    The refund double-refund sample scores 84.52 and fails with SEQ-001, SEQ-004 (trace level),
    SEQ-003 at s1 and FLW-003 at s3; the pass sample scores 100 with no findings.
    """
    samples = require_shared(REFERENCE / "samples")
    policy = samples / "policy_trajectory.json"

    def entry(
        trace_id: str,
        score: float,
        passed: bool,
        *,
        totals: tuple[float, float],
        findings: list[tuple[str, str, str | None]],
    ) -> dict[str, Any]:
        return {
            "trace_id": trace_id,
            "agent_name": "refund-copilot",
            "workflow": "refund",
            "policy_id": "refund-workflow-v1",
            "score": score,
            "passed": passed,
            "total_latency_ms": totals[0],
            "total_cost_usd": totals[1],
            "citation_coverage": None,
            "findings": [
                {
                    "severity": "error",
                    "category": category,
                    "message": "measured text differs",
                    "step_id": step,
                    "rule_id": rule,
                }
                for rule, category, step in findings
            ],
            "source_path": f"samples/traces/{trace_id}.json",
        }

    baseline = {
        "schema_version": "1",
        "summary": {
            "total_traces": 2,
            "passed_traces": 1,
            "failed_traces": 1,
            "average_score": 92.26,
        },
        "reports": [
            entry("refund-workflow-1001", 100.0, True, totals=(1310.0, 0.009), findings=[]),
            entry(
                "refund-workflow-1002",
                84.52,
                False,
                totals=(1300.0, 0.008),
                findings=[
                    ("ARH-SEQ-001", "sequence", None),
                    ("ARH-SEQ-004", "sequence", None),
                    ("ARH-SEQ-003", "sequence", "s1"),
                    ("ARH-FLW-003", "flow", "s3"),
                ],
            ),
        ],
    }
    base = _write(tmp_path / "v02.json", baseline)
    traces = samples / "traces"
    run, data = _compare(
        arh,
        base,
        "--policy",
        policy,
        traces / "refund_workflow_pass.json",
        traces / "refund_workflow_double_refund.json",
    )
    assert run.status == 0, run.out
    assert data["summary"]["new_findings"] == data["summary"]["resolved_findings"] == 0
    assert [t["score_delta"] for t in data["traces"]] == [0.0, 0.0]
    assert data["baseline"]["harness_version"] is None


def test_drift_warnings_and_fail_on_drift(arh: Arh, tmp_path: Path) -> None:
    base = _baseline(arh, tmp_path, PASS)
    other = load_json(POLICY)
    other["policy_id"] = "airline-rebooking-v2"
    other_path = _write(tmp_path / "v2.json", other)
    md = tmp_path / "compare.md"
    run, data = _compare(arh, base, "--policy", other_path, PASS, "--md-out", md)
    warning = (
        "baseline and candidate were checked against different policies: "
        "'airline-rebooking-v1' and 'airline-rebooking-v2'"
    )
    assert run.status == 0
    assert data["warnings"] == [warning]
    assert f"warning: {warning}" in run.out
    assert "> **Warning:** baseline and candidate were checked against different policies" in (
        md.read_text(encoding="utf-8")
    )
    run, data = _compare(arh, base, "--policy", other_path, PASS, "--fail-on-drift")
    assert run.status == 1
    assert data["gate"]["reasons"] == [f"drift: {warning}"]
    # the same policy id with different content is drift too
    edited = load_json(POLICY)
    edited["completion"]["max_steps"] = 30
    edited_path = _write(tmp_path / "edited.json", edited)
    _, data = _compare(arh, base, "--policy", edited_path, PASS)
    assert len(data["warnings"]) == 1
    assert data["warnings"][0].startswith("policy 'airline-rebooking-v1' changed between")


def test_hostile_trace_ids_are_escaped_in_markdown(arh: Arh, tmp_path: Path) -> None:
    base = _baseline(arh, tmp_path, PASS)
    hostile = load_json(DOUBLE)
    hostile["trace_id"] = "x|y <script>alert(1)</script> @octocat **bold** [l](https://e.test)\n#"
    candidate = _write(tmp_path / "hostile.json", hostile)
    md = tmp_path / "compare.md"
    run = arh("compare", "--baseline", base, "--policy", POLICY, candidate, "--md-out", md)
    assert run.status == 1
    text = md.read_text(encoding="utf-8")
    assert_markdown_is_inert(text)
    heading = next(line for line in text.splitlines() if line.startswith("#### "))
    assert heading == (
        "#### x\\|y &lt;script&gt;alert(1)&lt;/script&gt; @&#8203;octocat \\*\\*bold\\*\\* "
        "\\[l\\](https:&#8203;//e.test)\\\\n#"  # the newline shown as \\n, as on the console
    )


def test_table_rows_keep_their_columns(arh: Arh, tmp_path: Path) -> None:
    base = _baseline(arh, tmp_path, PASS)
    hostile = load_json(DOUBLE)
    hostile["trace_id"] = "a|b|c"
    hostile["steps"][5]["step_id"] = "s|5b"
    candidate = _write(tmp_path / "hostile.json", hostile)
    md = tmp_path / "compare.md"
    arh("compare", "--baseline", base, "--policy", POLICY, candidate, "--md-out", md)
    for line in md.read_text(encoding="utf-8").splitlines():
        if line.startswith("|"):
            cells = line.replace("\\|", "").strip("|").split("|")
            assert len(cells) in (2, 5), line


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--candidate", "c.json", "--policy", "p.json"], "not both"),
        # several --candidate values are reports (docs/statistics.md); a trace input after `--`
        (["--candidate", "c.json", "--", "t.json"], "not both"),
        ([], "nothing to compare"),
        (["t.json"], "trace files need --policy"),
        (["--policy", "p.json"], "--policy needs trace files"),
        (["--candidate", "c.json", "--format", "arh"], "--format applies only"),
        (["--candidate", "c.json", "--fail-under", "50"], "--fail-under applies only"),
        (["--candidate", "c.json", "--candidate-json-out", "x.json"], "--candidate-json-out"),
        (
            ["--candidate", "c.json", "--fail-on", "failures", "--max-score-drop", "1"],
            "--max-score-drop applies only",
        ),
        (["--candidate", "c.json", "--fail-on", "never", "--fail-on-drift"], "--fail-on-drift"),
        (["--candidate", "c.json", "--max-score-drop", "-1"], "must be a finite number >= 0"),
        (["--candidate", "c.json", "--max-score-drop", "nan"], "must be a finite number >= 0"),
        (["--candidate", "c.json", "--max-score-drop", "abc"], "not a number"),
    ],
)
def test_usage_errors_come_before_reading_files(
    arh: Arh, tmp_path: Path, args: list[str], message: str
) -> None:
    # the baseline does not exist: a usage error must still win (exit 2, not 1)
    run = arh("compare", "--baseline", tmp_path / "missing.json", *args)
    assert run.status == 2, run.err
    assert message in run.err
    assert "missing.json" not in run.err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"trace_id": "t", "steps": []}', "not a validation report"),
        ("[]", "not a validation report"),
        ('{"reports": {}}', "/reports: must be an array"),
        (
            (
                '{"reports": [{"trace_id": "a", "passed": true, "score": 1},'
                ' {"trace_id": "a", "passed": true, "score": 2}]}'
            ),
            "/reports/1/trace_id: duplicate",
        ),
        (
            '{"reports": [{"trace_id": "a", "passed": true, "score": "high"}]}',
            "/reports/0/score: must be a finite number",
        ),
        ('{"reports": [{"trace_id": "a", "passed": 1, "score": 5}]}', "/reports/0/passed"),
        (  # an integer too large for a float
            '{"reports": [{"trace_id": "a", "passed": true, "score": 1' + "0" * 400 + "}]}",
            "/reports/0/score: must be a finite number, got an integer of 401 digits",
        ),
        ("{", "invalid JSON"),
    ],
)
def test_malformed_baselines_are_input_errors(
    arh: Arh, tmp_path: Path, content: str, message: str
) -> None:
    base = tmp_path / "baseline.json"
    base.write_text(content, encoding="utf-8")
    run = arh("compare", "--baseline", base, "--policy", POLICY, PASS)
    assert run.status == 3  # an input error
    assert run.err.startswith(f"error: invalid baseline: {base.as_posix()}")
    assert message in run.err
    assert "Traceback" not in run.err


def test_candidate_report_and_saved_candidate(arh: Arh, tmp_path: Path) -> None:
    base = _baseline(arh, tmp_path, PASS)
    saved = tmp_path / "candidate.json"
    run = arh(
        "compare",
        "--baseline",
        base,
        "--policy",
        POLICY,
        PASS,
        DOUBLE,
        "--candidate-json-out",
        saved,
    )
    assert run.status == 1
    assert f"Candidate report written to {saved}" in run.out
    again = arh("compare", "--baseline", base, "--candidate", saved)
    assert again.status == 1
    assert again.out.split("\n\n", 1)[1] == run.out.split("\n\n", 1)[1]


def test_outputs_are_byte_identical(arh: Arh, tmp_path: Path) -> None:
    base = _baseline(arh, tmp_path, PASS)
    outputs = []
    for _ in range(2):
        js, md = tmp_path / "c.json", tmp_path / "c.md"
        run = arh(
            "compare",
            "--baseline",
            base,
            "--policy",
            POLICY,
            TRACES,
            "--json-out",
            js,
            "--md-out",
            md,
        )
        outputs.append((run.out, js.read_bytes(), md.read_bytes()))
    assert outputs[0] == outputs[1]


def test_input_errors_in_the_candidate_fail_the_run(arh: Arh, tmp_path: Path) -> None:
    base = _baseline(arh, tmp_path, PASS)
    broken = tmp_path / "broken.json"
    broken.write_text("{", encoding="utf-8")
    run = arh("compare", "--baseline", base, "--policy", POLICY, PASS, broken, "--fail-on", "never")
    assert run.status == 3
    assert f"error: {broken.as_posix()}:1:2: invalid JSON" in run.err
    # the gate passed, and the console says why the status is 3 (an input error) anyway
    assert run.out.endswith(
        "GATE: PASS (fail-on never)\nexit status 3 whatever the gate says: 1 candidate input "
        "error (on standard error)\n"
    )


# -- the library API ---------------------------------------------------------------------------


def _finding(
    rule: str, step: str | None, subject: str | None = None, sev: str = "error"
) -> Finding:
    return Finding(rule, sev, "sequence", f"m {rule}", step, subject=subject)  # type: ignore[arg-type]


def test_subjects_keep_different_findings_apart() -> None:
    base = [_finding("ARH-SEQ-001", None, "lookup")]
    cand = [_finding("ARH-SEQ-001", None, "refund")]
    new, resolved = diff_findings(base, cand)
    assert ([f.subject for f in new], [f.subject for f in resolved]) == (["refund"], ["lookup"])


def test_a_finding_without_subject_matches_one_with() -> None:
    new, resolved = diff_findings(
        [_finding("ARH-SEQ-001", None)], [_finding("ARH-SEQ-001", None, "x")]
    )
    assert new == resolved == ()


def test_legacy_pass_never_matches_two_different_rule_ids() -> None:
    new, resolved = diff_findings([_finding("ARH-SEQ-001", "s1")], [_finding("ARH-SEQ-002", "s1")])
    assert (len(new), len(resolved)) == (1, 1)
    new, resolved = diff_findings([_finding("", "s1")], [_finding("ARH-SEQ-002", "s1")])
    assert new == resolved == ()


def test_findings_match_as_multisets() -> None:
    base = [_finding("ARH-FLW-003", "s3")]
    cand = [_finding("ARH-FLW-003", "s3"), _finding("ARH-FLW-003", "s3")]
    new, resolved = diff_findings(base, cand)
    assert (len(new), len(resolved)) == (1, 0)


def test_any_step_matches_findings_whose_steps_were_renamed() -> None:
    base = [
        _finding("ARH-SCH-009", "call_Qm42", "/arguments/amount"),
        _finding("ARH-FLW-003", "call_Qm43", "refund"),
    ]
    cand = [
        _finding("ARH-SCH-009", "call_x7Tc", "/arguments/amount"),
        _finding("ARH-FLW-003", "call_x7Td", "refund"),
        _finding("ARH-FLW-003", "call_x7Te", "refund"),  # one more than the baseline had
        _finding("ARH-SCH-009", "call_x7Tf", "/arguments/order_id"),  # another argument
    ]
    new, resolved = diff_findings(base, cand)
    assert (len(new), len(resolved)) == (4, 2)  # exact: every step id differs
    new, resolved = diff_findings(base, cand, any_step=True)
    assert [(f.rule_id, f.subject) for f in new] == [
        ("ARH-FLW-003", "refund"),
        ("ARH-SCH-009", "/arguments/order_id"),
    ]
    assert resolved == ()
    # the step-free round comes last: a finding at the same step is matched there first
    base = [_finding("ARH-FLW-003", "s1", "t"), _finding("ARH-FLW-003", "s2", "t")]
    new, resolved = diff_findings(base, [_finding("ARH-FLW-003", "s2", "t")], any_step=True)
    assert (new, [f.step_id for f in resolved]) == ((), ["s1"])
    # rule ids still keep findings apart
    new, resolved = diff_findings(
        [_finding("ARH-SEQ-001", "a", "x")], [_finding("ARH-SEQ-002", "b", "x")], any_step=True
    )
    assert (len(new), len(resolved)) == (1, 1)


def test_compare_any_step_on_reruns_of_a_transcript(arh: Arh, tmp_path: Path) -> None:
    reruns = ROOT / "docs" / "examples" / "regression" / "reruns"
    policy = ROOT / "docs" / "examples" / "adapters" / "policy_refund.json"
    baseline = tmp_path / "monday.json"
    run = arh(
        "validate", "--policy", policy, reruns / "monday" / "refund_ord9.json",
        "--json-out", baseline,
    )  # fmt: skip
    assert run.status == 1  # the refund of 142.5 is over the maximum of 100: ARH-SCH-009
    # a baseline written before reports recorded step references: matched by step id, which the
    # new recording changed, unless --any-step
    old = load_json(baseline)
    for entry in old["reports"]:
        del entry["step_ids"]
        for finding in entry["findings"]:
            del finding["step_ref"]
    _write(baseline, old)
    tuesday = reruns / "tuesday" / "refund_ord9.json"
    args = ("compare", "--baseline", baseline, "--policy", policy, tuesday)
    exact = arh(*args, "--json-out", tmp_path / "exact.json")
    loose = arh(*args, "--any-step", "--json-out", tmp_path / "loose.json")
    assert (exact.status, loose.status) == (1, 0)
    exact_data = json.loads((tmp_path / "exact.json").read_text("utf-8"))
    (exact_delta,) = exact_data["traces"]
    (loose_delta,) = json.loads((tmp_path / "loose.json").read_text("utf-8"))["traces"]
    assert [f["step_id"] for f in exact_delta["new_findings"]] == ["call_x7Tc"]
    assert [f["step_id"] for f in exact_delta["resolved_findings"]] == ["call_Qm42"]
    assert loose_delta["new_findings"] == loose_delta["resolved_findings"] == []
    # and the comparison says why, and what to do
    assert any(
        w.startswith(
            "1 trace converted from transcripts has stable step references in the candidate"
        )
        and w.endswith(
            "write the baseline report again with this version of arh, or pass --any-step"
        )
        for w in exact_data["warnings"]
    ), exact_data["warnings"]


def test_reason_line_counts_what_it_lists() -> None:
    def report(trace_id: str, findings: list[Finding], passed: bool) -> TraceReport:
        return TraceReport(trace_id, "a", "w", "p", 50.0, passed, 0.0, 0.0, None, tuple(findings))

    baseline = RunReport((report("t1", [], True), report("t2", [], False)))
    candidate = RunReport(
        (
            report(
                "t1",
                [
                    _finding("ARH-FLW-003", "s1"),
                    _finding("ARH-FLW-003", "s2"),
                    _finding("ARH-SEQ-001", None, "x"),
                ],
                False,
            ),
            report(
                "t2",
                [_finding("ARH-FLW-001", "s9"), _finding("ARH-SCH-005", "s9", sev="warning")],
                False,
            ),
        )
    )
    gate = evaluate_gate(compare_reports(baseline, candidate))
    assert gate.reasons[0] == (
        "4 new error findings: t1:ARH-FLW-003 (x2), t1:ARH-SEQ-001, t2:ARH-FLW-001"
    )


@pytest.mark.parametrize(
    ("fail_on", "drop", "drift"),
    [
        ("bogus", None, False),
        ("regressions", -0.5, False),
        ("regressions", float("nan"), False),
        ("regressions", float("inf"), False),
        ("regressions", True, False),
        ("failures", 1.0, False),
        ("never", None, True),
    ],
)
def test_gate_api_rejects_options_that_do_not_apply(fail_on: str, drop: Any, drift: bool) -> None:
    result = compare_reports(RunReport(()), RunReport(()))
    with pytest.raises(UsageError):
        evaluate_gate(result, fail_on, drop, fail_on_drift=drift)


def test_report_reader_names_the_bad_field() -> None:
    with pytest.raises(InputError) as caught:
        RunReport.from_dict(
            {
                "reports": [
                    {"trace_id": "t", "passed": True, "score": 1, "findings": [{"severity": 3}]}
                ]
            }
        )
    assert caught.value.pointer == "/reports/0/findings/0/severity"


def _entry(**fields: Any) -> dict[str, Any]:
    return {"trace_id": "t", "passed": True, "score": 100.0, "findings": []} | fields


@pytest.mark.parametrize(
    ("document", "pointer", "message"),
    [
        ({"reports": [_entry(score=1.7e308)]}, "/reports/0/score",
         "must be a number from 0 to 100, got 1.7e+308"),
        ({"reports": [_entry(score=-0.01)]}, "/reports/0/score",
         "must be a number from 0 to 100, got -0.01"),
        ({"reports": [_entry(unrounded_score=100.5)]}, "/reports/0/unrounded_score",
         "must be a number from 0 to 100, got 100.5"),
        ({"reports": [], "summary": {"average_score": -1e308}}, "/summary/average_score",
         "must be a number from 0 to 100, got -1e+308"),
        ({"reports": [], "summary": "all good"}, "/summary", "must be an object, got string"),
        ({"reports": [_entry(total_cost_usd=-1)]}, "/reports/0/total_cost_usd",
         "must be a finite number >= 0, got -1"),
        ({"reports": [_entry(total_latency_ms=-1e308)]}, "/reports/0/total_latency_ms",
         "must be a finite number >= 0, got -1e+308"),
        ({"reports": [_entry(citation_coverage=1.5)]}, "/reports/0/citation_coverage",
         "must be a number from 0 to 1, got 1.5"),
        ({"reports": [_entry(total_tokens=-3)]}, "/reports/0/total_tokens",
         "must be an integer >= 0, got -3"),
        ({"reports": [_entry(total_tokens=2.5)]}, "/reports/0/total_tokens",
         "must be an integer >= 0, got 2.5"),
        ({"reports": [_entry(total_tokens="12")]}, "/reports/0/total_tokens",
         "must be an integer >= 0, got string"),
        ({"reports": [_entry(findings=[{"severity": "fatal", "rule_id": "ARH-FLW-003"}])]},
         "/reports/0/findings/0/severity", "must be 'error', 'warning' or 'info', got 'fatal'"),
        ({"reports": [], "policy": "refund-v1"}, "/policy", "must be an object, got string"),
        ({"reports": [], "policy": {"policy_id": 7}}, "/policy/policy_id",
         "must be a string or null, got number"),
        ({"reports": [], "harness": ["arh"]}, "/harness", "must be an object, got array"),
        # a string was counted as one input error, whatever it said
        ({"reports": [], "input_errors": "x"}, "/input_errors", "must be an array, got string"),
        ({"reports": [], "input_errors": ["x"]}, "/input_errors/0",
         "an input error must be an object with a string message, got string"),
        ({"reports": [], "input_errors": [{"message": "a"}, {"source": "b.json"}]},
         "/input_errors/1",
         ("an input error must be an object with a string message, got an object without a "
          "string message")),
    ],
)  # fmt: skip
def test_report_reader_refuses_values_validation_never_writes(
    document: dict[str, Any], pointer: str, message: str
) -> None:
    with pytest.raises(InputError) as caught:
        RunReport.from_dict(document)
    assert (caught.value.pointer, caught.value.message) == (pointer, message)


def test_report_reader_keeps_an_outcome_as_written() -> None:
    # validation writes an integer label as an integer: reading it back keeps it one, so a page
    # or report made from saved reports shows 1, not 1.0
    run = RunReport.from_dict(
        {"reports": [_entry(trace_id=str(i), outcome=v) for i, v in enumerate([1, 0, 0.5, True])]}
    )
    assert [(r.outcome, type(r.outcome)) for r in run.reports] == [
        (1, int), (0, int), (0.5, float), (True, bool)
    ]  # fmt: skip
    assert [r.to_dict()["outcome"] for r in run.reports] == [1, 0, 0.5, True]


def test_report_reader_accepts_the_extremes_validation_writes() -> None:
    run = RunReport.from_dict(
        {
            "summary": {"average_score": 100.0},
            "reports": [
                _entry(trace_id="a", score=0, total_latency_ms=0, total_cost_usd=-0.0),
                _entry(trace_id="b", unrounded_score=100.0, citation_coverage=1, total_tokens=0),
                _entry(trace_id="c", findings=[{"severity": "info"}], total_cost_usd=1.7e308),
            ],
            "harness": None,
            "policy": {"policy_id": None, "sha256": None},
        }
    )
    assert [r.score for r in run.reports] == [0.0, 100.0, 100.0]
    assert run.reports[0].total_cost_usd == 0.0
    assert run.reports[2].findings[0].severity == "info"


def test_huge_scores_in_saved_reports_are_input_errors(arh: Arh, tmp_path: Path) -> None:
    base = _baseline(arh, tmp_path, PASS, DOUBLE)
    data = load_json(base)
    for entry in data["reports"]:
        entry["score"] = entry["unrounded_score"] = 1.7e308
    huge = _write(tmp_path / "huge.json", data)
    run = arh("compare", "--baseline", base, "--candidate", huge)
    assert run.status == 3  # an input error
    assert run.err == (
        f"error: invalid candidate: {huge}: /reports/0/score: must be a number from 0 to 100, "
        "got 1.7e+308\n"
    )
    # one trace scored -1e308 then 1e308 gave "average_score_delta": Infinity (invalid JSON)
    low, high = copy.deepcopy(data), copy.deepcopy(data)
    for doc, score in ((low, -1e308), (high, 1e308)):
        doc["reports"] = doc["reports"][:1]
        doc["reports"][0]["score"] = doc["reports"][0]["unrounded_score"] = score
    out = tmp_path / "compare.json"
    run = arh(
        "compare", "--baseline", _write(tmp_path / "low.json", low),
        "--candidate", _write(tmp_path / "high.json", high), "--json-out", out,
    )  # fmt: skip
    assert run.status == 3
    assert "/reports/0/score: must be a number from 0 to 100, got -1e+308" in run.err
    assert not out.exists()


_ids = st.text(alphabet="abcs-01", min_size=1, max_size=4)
_findings = st.builds(
    Finding,
    st.sampled_from(["ARH-SCH-001", "ARH-SEQ-003", "ARH-FLW-003", ""]),
    st.sampled_from(["error", "warning"]),
    st.sampled_from(["schema", "sequence", "flow"]),
    st.text(max_size=5),
    st.none() | _ids,
    subject=st.none() | _ids,
)
_reports = st.builds(
    TraceReport,
    _ids,
    st.just("a"),
    st.just("w"),
    st.just("p"),
    st.floats(0, 100),
    st.booleans(),
    st.just(0.0),
    st.just(0.0),
    st.none(),
    st.lists(_findings, max_size=6).map(tuple),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_reports, max_size=6, unique_by=lambda r: r.trace_id))
def test_a_report_compared_with_itself_always_passes(reports: list[TraceReport]) -> None:
    run = RunReport(tuple(reports))
    result = compare_reports(run, run)
    assert result.new_findings == result.resolved_findings == []
    for mode in ("regressions", "never"):
        assert evaluate_gate(result, mode).passed
    assert evaluate_gate(result, "regressions", 0.0).passed
    assert all(t.status_change == "unchanged" for t in result.traces)


def test_comparison_json_matches_its_schema(arh: Arh, tmp_path: Path) -> None:
    from jsonschema import Draft202012Validator

    schema = load_json(ROOT / "schemas" / "compare.schema.json")
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema)
    base = _baseline(arh, tmp_path, PASS, DOUBLE)
    legacy = _write(tmp_path / "legacy.json", _legacy(load_json(base), drop=("rule_id", "subject")))
    for baseline, extra in ((base, ["--max-score-drop", "1"]), (legacy, ["--fail-on-drift"])):
        _, data = _compare(arh, baseline, "--policy", POLICY, TRACES, *extra)
        errors = [e.message for e in validator.iter_errors(data)]
        assert not errors, errors
    assert not validator.is_valid({"schema_version": "1"})  # the schema can fail


def _big_comparison(count: int) -> tuple[str, int]:
    from agent_reliability_harness.render.compare import render_compare_markdown
    from agent_reliability_harness.render.markdown import MAX_CHARS

    finding = Finding("ARH-FLW-003", "error", "flow", "duplicate side effect " * 10, "s5b")

    def report(i: int, passed: bool) -> TraceReport:
        findings = () if passed else (finding,)
        trace_id = f"trace-{i:05d}-" + "y" * 40
        return TraceReport(trace_id, "a", "w", "p", 90.0, passed, 0.0, 0.0, None, findings)

    base = RunReport(tuple(report(i, True) for i in range(count)))
    cand = RunReport(tuple(report(i, False) for i in range(count)))
    result = compare_reports(base, cand)
    return render_compare_markdown(result, evaluate_gate(result, "regressions")), MAX_CHARS


def test_large_comparison_markdown_keeps_to_the_limit() -> None:
    import re

    text, limit = _big_comparison(2892)
    assert len(text) <= limit
    assert text == _big_comparison(2892)[0]  # byte-identical for identical input
    left_out = "here to keep this report within GitHub's size limit; see the JSON report."
    for what in ("gate reasons are not listed", "changed traces are not listed",
                 "changed traces are not detailed"):  # fmt: skip
        assert re.search(rf"\n\d+ more {what} {re.escape(left_out)}\n", text), what
    assert_markdown_is_inert(text)
    small, _ = _big_comparison(3)
    assert "size limit" not in small
    assert small.count("\n#### trace-") == 3


def test_comparison_markdown_breaks_gh_references_and_line_start_syntax(
    arh: Arh, tmp_path: Path
) -> None:
    import re

    base = _baseline(arh, tmp_path, PASS)
    hostile = load_json(DOUBLE)
    hostile["trace_id"] = "- fixes GH-123"
    candidate = _write(tmp_path / "hostile.json", hostile)
    md = tmp_path / "compare.md"
    arh("compare", "--baseline", base, "--policy", POLICY, candidate, "--md-out", md)
    text = md.read_text(encoding="utf-8")
    assert "#### \\- fixes GH-&#8203;123\n" in text
    assert not re.search(r"(?i)\bgh-\d", re.sub(r"`[^`]*`", "", text))


def test_rule_ids_from_report_files_are_escaped_on_the_console(arh: Arh, tmp_path: Path) -> None:
    base = _baseline(arh, tmp_path, PASS)
    doc = load_json(base)
    hostile_rule = "R\x1b[31mRED\u202e\n::error title=x::from-baseline-rule-id"
    doc["reports"][0]["findings"].append(
        {"rule_id": hostile_rule, "severity": "warning", "category": "flow",
         "message": "m", "step_id": "s1"}
    )  # fmt: skip
    hostile = _write(tmp_path / "hostile.json", doc)
    # By hand (docs/reports.md, Escaping): ESC is \x1b, U+202E \u202e, the newline \n, and the
    # first ":" of each "::" \x3a.
    shown = "R\\x1b[31mRED\\u202e\\n\\x3a:error title=x\\x3a:from-baseline-rule-id  s1  m"
    # a finding gone, a finding added (of traces that pass: listed with --show-passing)
    resolved, _ = _compare(arh, hostile, "--policy", POLICY, PASS, "--show-passing")
    new, _ = _compare(arh, base, "--candidate", hostile, "--show-passing")
    for run, sign in ((resolved, "-"), (new, "+")):
        assert f"      {sign} warning {shown}\n" in run.out
        assert "\x1b" not in run.out
        assert "\u202e" not in run.out
        assert not [line for line in run.out.splitlines() if line.lstrip().startswith("::")]


def test_comparison_markdown_cuts_a_big_section_and_still_details_the_next_trace() -> None:
    from agent_reliability_harness.render._markdown import MAX_CHARS
    from agent_reliability_harness.render.compare import render_compare_markdown

    def finding(i: int) -> Finding:
        return Finding("ARH-SCH-001", "error", "schema", "tool 'bad' is not allowed", f"s{i}")

    def report(trace_id: str, findings: tuple[Finding, ...]) -> TraceReport:
        return TraceReport(trace_id, "a", "w", "p", 100.0, not findings, 0.0, 0.0, None, findings)

    base = RunReport((report("a-big", ()), report("b-small", ())))
    big = tuple(finding(i) for i in range(1000))
    cand = RunReport((report("a-big", big), report("b-small", (finding(0),))))
    result = compare_reports(base, cand)
    text = render_compare_markdown(result, evaluate_gate(result, "regressions"))
    assert MAX_CHARS - 2_000 < len(text) <= MAX_CHARS
    assert "changed traces are not detailed" not in text
    section = text.split("#### a-big\n", 1)[1].split("\n#### b-small\n", 1)
    assert len(section) == 2  # both traces are detailed
    steps = re.findall(
        r"^\| new \| [a-z]+ \| `ARH-SCH-001` \| `(s\d+)` \|", section[0], re.MULTILINE
    )
    more = re.search(
        r"^(\d+) more findings are not detailed here to keep", section[0], re.MULTILINE
    )
    assert more is not None
    # its first new findings, in the comparison's order, then a line for the others
    assert steps == [f.step_id for f in result.traces[0].new_findings][: len(steps)]
    assert len(steps) > 100
    assert len(steps) + int(more.group(1)) == 1000
    assert "| new | error | `ARH-SCH-001` | `s0` |" in section[1]
    assert_markdown_is_inert(text)


def _greedy_diff(
    baseline: list[Finding], candidate: list[Finding], any_step: bool, by_ref: bool = False
) -> tuple[list[Finding], list[Finding]]:
    """The matching as diff_findings' docstring states it, spelt out pair by pair: in each
    pass, every finding left in the (sorted) candidate takes the first finding left in the
    baseline that the pass allows, first among those of its own severity, then among all. A
    finding's step is its step id, or with ``by_ref`` its step reference when it has one."""

    def step(f: Finding) -> str:
        return (f.step_ref if by_ref else None) or f.step_id or ""

    def order(f: Finding) -> tuple[str, ...]:
        return (f.rule_id, f.category, step(f), f.subject or "", f.message, f.severity)

    new, gone = sorted(candidate, key=order), sorted(baseline, key=order)

    def same_step(a: Finding, b: Finding) -> bool:
        return (a.category, step(a)) == (b.category, step(b))

    passes = [
        lambda a, b: (
            same_step(a, b) and (a.rule_id, a.subject or "") == (b.rule_id, b.subject or "")
        ),
        lambda a, b: (
            same_step(a, b) and a.rule_id == b.rule_id and (a.subject is None or b.subject is None)
        ),
        lambda a, b: same_step(a, b) and (not a.rule_id or not b.rule_id),
    ]
    if any_step:  # the same three passes, whatever the steps
        passes += [
            lambda a, b: (
                (a.rule_id, a.category, a.subject or "") == (b.rule_id, b.category, b.subject or "")
            ),
            lambda a, b: (
                (a.rule_id, a.category) == (b.rule_id, b.category)
                and (a.subject is None or b.subject is None)
            ),
            lambda a, b: a.category == b.category and (not a.rule_id or not b.rule_id),
        ]
    for allowed in passes:
        for same_severity in (True, False):
            kept = []
            for finding in new:
                pick = next(
                    (
                        i
                        for i, old in enumerate(gone)
                        if allowed(finding, old)
                        and (finding.severity == old.severity or not same_severity)
                    ),
                    None,
                )
                if pick is None:
                    kept.append(finding)
                else:
                    del gone[pick]
            new = kept
    return new, gone


_FINDINGS = st.lists(
    st.builds(
        Finding,
        st.sampled_from(["ARH-FLW-003", "ARH-SAF-001", ""]),
        st.sampled_from(["error", "warning"]),
        st.sampled_from(["flow", "safety"]),
        st.sampled_from(["m1", "m2"]),
        st.sampled_from([None, "s1", "s2"]),
        subject=st.sampled_from([None, "a", "b"]),
        step_ref=st.sampled_from([None, "tool_call:x#1", "tool_call:x#2"]),
    ),
    max_size=12,
)


@settings(max_examples=400, deadline=None)
@given(_FINDINGS, _FINDINGS, st.booleans(), st.booleans())
def test_matching_is_the_greedy_multiset_matching(
    baseline: list[Finding], candidate: list[Finding], any_step: bool, by_ref: bool
) -> None:
    # the queues per key that make matching linear (it was quadratic in the findings that
    # share a step) give what matching pair by pair gives, by step id or by step reference
    new, gone = diff_findings(baseline, candidate, any_step=any_step, by_ref=by_ref)
    expected_new, expected_gone = _greedy_diff(baseline, candidate, any_step, by_ref)
    assert list(new) == expected_new
    assert list(gone) == expected_gone


def _one(score: float, findings: tuple[Finding, ...] = (), *, exact: bool = False) -> RunReport:
    entry: dict[str, Any] = {
        "trace_id": "t1", "passed": True, "score": round(score, 2),
        "findings": [f.to_dict() for f in findings],
    }  # fmt: skip
    if exact:
        entry["unrounded_score"] = score
    return RunReport.from_dict({"reports": [entry]})


def test_a_score_drop_is_the_difference_of_the_scores_as_written() -> None:
    # 8.05 - 3.05 is 5.000000000000001 in floating point: a drop of exactly the limit failed
    gate = evaluate_gate(compare_reports(_one(8.05), _one(3.05)), max_score_drop=5)
    assert (gate.passed, gate.reasons) == (True, ())
    gate = evaluate_gate(compare_reports(_one(8.05), _one(3.04)), max_score_drop=5)
    assert gate.reasons == ("trace 't1' score dropped 5.01 points (limit 5.00)",)
    # unrounded scores: a drop of 5.004 is beyond 5, and says so with the decimals it takes
    gate = evaluate_gate(
        compare_reports(_one(90.004, exact=True), _one(85.0, exact=True)), max_score_drop=5
    )
    assert gate.reasons == ("trace 't1' score dropped 5.004 points (limit 5.00)",)
    # a limit that 2 decimals would change is shown as written
    gate = evaluate_gate(compare_reports(_one(100.0), _one(99.0)), max_score_drop=0.999)
    assert gate.reasons == ("trace 't1' score dropped 1.00 points (limit 0.999)",)
    # -0 is 0, never "-0.00"
    gate = evaluate_gate(compare_reports(_one(100.0), _one(99.0)), max_score_drop=-0.0)
    assert gate.reasons == ("trace 't1' score dropped 1.00 points (limit 0.00)",)
    assert gate.to_dict()["max_score_drop"] == 0.0
    assert str(gate.to_dict()["max_score_drop"]) == "0.0"
    # a drop too small for 2 decimals is not written as -0.0
    result = compare_reports(_one(90.004, exact=True), _one(90.003, exact=True))
    data = json.loads(render_compare_json(result, evaluate_gate(result)))
    assert '"average_score_delta": 0.0,' in render_compare_json(result, evaluate_gate(result))
    assert str(data["summary"]["average_score_delta"]) == "0.0"
    assert [str(t["score_delta"]) for t in data["traces"]] in ([], ["0.0"])


def test_a_new_error_beside_an_old_warning_of_one_fingerprint_is_new() -> None:
    warning = Finding("ARH-FLW-003", "warning", "flow", "m", "s1", subject="x")
    error = Finding("ARH-FLW-003", "error", "flow", "m", "s1", subject="x")
    before = _one(90.0, (warning,))
    for findings in ((warning, error), (error, warning)):  # whatever the order in the file
        result = compare_reports(before, _one(80.0, findings))
        assert [f.severity for _, f in result.new_findings] == ["error"]
        assert evaluate_gate(result).reasons == ("1 new error finding: t1:ARH-FLW-003",)
    # a 0.1.x baseline (no rule IDs): its warning matches the warning, so the error is new
    old = Finding("", "warning", "schema", "argument note is not declared", "s2")
    new_error = Finding("ARH-SCH-004", "error", "schema", "bad amount", "s2", subject="/amount")
    new_warning = Finding("ARH-SCH-005", "warning", "schema", "note", "s2", subject="/note")
    result = compare_reports(_one(75.0, (old,)), _one(60.0, (new_error, new_warning)))
    assert [f.rule_id for _, f in result.new_findings] == ["ARH-SCH-004"]


def test_any_step_matches_findings_of_old_reports_too() -> None:
    # a 0.2.x baseline has no subject: with --any-step its finding at another step still matches
    old = Finding("ARH-FLW-003", "error", "flow", "m", "call_A")
    new = Finding("ARH-FLW-003", "error", "flow", "m", "call_B", subject="refund")
    result = compare_reports(_one(90.0, (old,)), _one(90.0, (new,)), any_step=True)
    assert (result.new_findings, result.resolved_findings) == ([], [])
    # a 0.1.x baseline has no rule ID either
    older = Finding("", "error", "flow", "m", "call_A")
    result = compare_reports(_one(90.0, (older,)), _one(90.0, (new,)), any_step=True)
    assert (result.new_findings, result.resolved_findings) == ([], [])
    # two different rule IDs never match, whatever the steps
    other = Finding("ARH-FLW-001", "error", "flow", "m", "call_A", subject="refund")
    result = compare_reports(_one(90.0, (other,)), _one(90.0, (new,)), any_step=True)
    assert len(result.new_findings) == len(result.resolved_findings) == 1


def test_runs_with_no_trace_id_in_common_are_warned_of() -> None:
    # e.g. several baseline reports (ids renamed t1@1, t1@2) against one candidate report, or
    # transcripts whose ids change on every run: nothing is compared, and the gate would pass
    def run(*ids: str) -> RunReport:
        return RunReport(
            tuple(TraceReport(i, "a", "w", "p", 100.0, True, 0.0, 0.0, None, ()) for i in ids)
        )

    result = compare_reports(run("t1@1", "t1@2"), run("t1"))
    disjoint = (
        "no trace id is on both sides, so every trace of the baseline (2) is removed and every "
        "trace of the candidate (1) added: do the trace ids stay the same from run to run?"
    )
    assert result.warnings == (disjoint,)
    assert evaluate_gate(result).passed  # a warning: it fails only with --fail-on-drift
    assert not evaluate_gate(result, fail_on_drift=True).passed
    # one id in common, or an empty side: no such warning
    assert compare_reports(run("t1", "t2"), run("t2", "t3")).warnings == ()
    assert disjoint not in compare_reports(run(), run("t1")).warnings


def _changed_rows(markdown: str) -> dict[str, str]:
    """The rows of the Markdown's table of changed traces: trace id -> its Change cell."""
    table = markdown.split("### Changed traces\n\n", 1)[1].split("\n\n", 1)[0]
    rows = [line.strip("|").split("|") for line in table.splitlines()[2:]]
    return {cells[0].strip().strip("`"): cells[1].strip() for cells in rows}


def test_comparison_markdown_lists_no_unchanged_trace_as_changed(arh: Arh, tmp_path: Path) -> None:
    from agent_reliability_harness.render.compare import render_compare_markdown

    def report(trace_id: str, score: float, *findings: Finding, **totals: float) -> TraceReport:
        passed = score >= 70 and not any(f.severity == "error" for f in findings)
        latency, cost = totals.get("latency", 100.0), totals.get("cost", 0.01)
        return TraceReport(trace_id, "a", "w", "p", score, passed, latency, cost, None, findings)

    slow = Finding("ARH-BUD-002", "error", "budget", "total latency 5210 ms", "s1")
    slower = Finding("ARH-BUD-002", "error", "budget", "total latency 7020 ms", "s1")
    warning = Finding("ARH-GRD-001", "warning", "grounding", "no citations", "s3")
    info = Finding("ARH-SCH-012", "info", "schema", "step key 'argument'", "s2")
    pairs = [
        # nothing that the report counts changed: none of these is listed
        (report("cost", 90.0, slow), report("cost", 90.0, slow, latency=900.0, cost=1.5)),
        (report("message", 90.0, slow), report("message", 90.0, slower)),  # a measured value
        (report("tiny", 90.0), report("tiny", 90.004)),  # +0.00 at two decimals
        # the same verdict, findings changed: listed as such, not as "unchanged"
        (report("resolved", 90.0, warning), report("resolved", 90.0)),
        (report("info", 100.0, info), report("info", 100.0)),  # resolved, the score the same
        (report("moved", 90.0, slow), report("moved", 90.0, replace(slow, step_id="s2"))),
        (report("score", 90.0), report("score", 85.0)),
        (report("fixed", 60.0, slow), report("fixed", 100.0)),
    ]
    result = compare_reports(
        RunReport(tuple(old for old, _ in pairs)), RunReport(tuple(new for _, new in pairs))
    )
    text = render_compare_markdown(result, evaluate_gate(result))
    assert _changed_rows(text) == {
        "fixed": "fail \u2192 pass",
        "info": "findings changed",
        "moved": "findings changed",
        "resolved": "findings changed",
        "score": "score only",
    }
    # the reruns of docs/regression-testing.md against a baseline without step references (one
    # written before them): one finding at another call id, verdict and score the same
    policy = ROOT / "docs" / "examples" / "adapters" / "policy_refund.json"
    reruns = ROOT / "docs" / "examples" / "regression" / "reruns"
    md = tmp_path / "compare.md"
    run = arh("compare", "--baseline", reruns / "monday-old.json", "--policy", policy,
              reruns / "tuesday", "--md-out", md, "--quiet")  # fmt: skip
    assert run.status == 1
    assert _changed_rows(md.read_text(encoding="utf-8")) == {"refund-ORD-9": "findings changed"}
