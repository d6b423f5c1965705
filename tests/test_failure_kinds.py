"""The three kinds of failure (docs/exit-codes.md, "Three kinds of failure"): agent_failure (a
trace failed: 1), evaluation_error (the evaluation could not decide: 2 or 3) and
infrastructure_failure (the machine could not check an input: 4), in the JSON, Markdown, HTML and
console reports and in the exit status, with the precedence 2, 4, 3, 1, 0."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_reliability_harness.app import Status
from agent_reliability_harness.app.validate import run_status
from agent_reliability_harness.errors import InputError
from agent_reliability_harness.model.judge_outcome import JudgeOutcome
from agent_reliability_harness.model.report import RunReport, TraceReport

from conftest import SAMPLES, Run

Arh = Callable[..., Run]

POLICY = SAMPLES / "policy_trajectory.json"
PASSING = SAMPLES / "traces" / "rebook_pass.json"  # rebook-1001 passes (README)
FAILING = SAMPLES / "traces" / "rebook_double_rebooking.json"  # rebook-1002 fails (README)


def _report(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def test_a_failing_trace_is_an_agent_failure(arh: Arh, tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    run = arh("validate", "--policy", POLICY, PASSING, FAILING, "--json-out", out, "--quiet")
    assert run.status == 1
    report = _report(out)
    kinds = {k: report["summary"][k] for k in ("agent_failure", "evaluation_error",
                                                "infrastructure_failure")}  # fmt: skip
    assert kinds == {"agent_failure": 1, "evaluation_error": 0, "infrastructure_failure": 0}
    assert {r["trace_id"]: r["failure"] for r in report["reports"]} == {
        "rebook-1001": None,
        "rebook-1002": "agent_failure",
    }


def test_an_unreadable_input_is_an_evaluation_error(arh: Arh, tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    missing = tmp_path / "missing.json"
    run = arh("validate", "--policy", POLICY, FAILING, missing, "--json-out", out)
    assert run.status == 3  # 3 over 1
    report = _report(out)
    assert report["summary"]["agent_failure"] == 1
    assert report["summary"]["evaluation_error"] == 1
    assert report["summary"]["infrastructure_failure"] == 0
    assert [e["kind"] for e in report["input_errors"]] == ["evaluation_error"]
    # the console's last lines say it: "1 failed" alone would hide the input error
    assert run.out.splitlines()[-2] == (
        "failures: 1 agent_failure \u00b7 1 evaluation_error \u00b7 0 infrastructure_failure"
    )


@pytest.mark.usefixtures("no_memory_for_1001")
def test_no_memory_is_an_infrastructure_failure_exit_4(arh: Arh, tmp_path: Path) -> None:
    out, md, html = tmp_path / "report.json", tmp_path / "report.md", tmp_path / "report.html"
    run = arh("validate", "--policy", POLICY, PASSING, FAILING, "--json-out", out,
              "--md-out", md, "--html-out", html)  # fmt: skip
    assert run.status == 4  # 4 over 1
    assert "not enough memory to check this trace" in run.err
    report = _report(out)
    assert [r["trace_id"] for r in report["reports"]] == ["rebook-1002"]
    assert report["summary"]["infrastructure_failure"] == 1
    assert report["summary"]["evaluation_error"] == 0
    assert report["summary"]["agent_failure"] == 1
    assert report["summary"]["input_errors"] == 1  # the 0.2.x-compatible count is unchanged
    assert report["input_errors"][0]["kind"] == "infrastructure_failure"
    assert report["input_errors"][0]["source"] == PASSING.as_posix()
    line = "failures: 1 agent_failure \u00b7 0 evaluation_error \u00b7 1 infrastructure_failure"
    assert line in run.out.splitlines()
    assert (
        "Failures: 1 agent_failure \u00b7 0 evaluation_error \u00b7 1 infrastructure_failure."
        in (md.read_text(encoding="utf-8"))
    )
    page = html.read_text(encoding="utf-8")
    assert (
        '<dt>Failures</dt><dd><strong class="fail">1</strong> <code>agent_failure</code>, 0 '
        '<code>evaluation_error</code>, <strong class="fail">1</strong> '
        "<code>infrastructure_failure</code></dd>"
    ) in page
    assert "failure <code>agent_failure</code>" in page


@pytest.mark.usefixtures("no_memory_for_1001")
def test_infrastructure_wins_over_an_input_error(arh: Arh, tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    assert arh("validate", "--policy", POLICY, PASSING, missing, "--quiet").status == 4


@pytest.mark.usefixtures("no_memory_for_1001")
def test_usage_wins_over_infrastructure(arh: Arh, tmp_path: Path) -> None:
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"policy_id": "p", "max_step": 3}), encoding="utf-8")
    assert arh("validate", "--policy", policy, PASSING, "--quiet").status == 2


@pytest.mark.usefixtures("no_memory_for_1001")
def test_compare_validating_now_exits_4(arh: Arh, tmp_path: Path) -> None:
    base = tmp_path / "base.json"
    # rebook-1002 alone: the baseline (checked before the patch takes rebook-1001's memory)
    assert arh("validate", "--policy", POLICY, FAILING, "--json-out", base, "--quiet").status == 1
    run = arh("compare", "--baseline", base, "--policy", POLICY, FAILING, PASSING)
    assert run.status == 4


def _trace(passed: bool, judge: JudgeOutcome | None = None) -> TraceReport:
    return TraceReport("t", "a", "w", "p", 100.0 if passed else 10.0, passed, 0.0, 0.0, None,
                       (), judge=judge)  # fmt: skip


def _judge(verdict: str, *, gating: bool) -> JudgeOutcome:
    return JudgeOutcome(verdict, "r", "1", "m", "0" * 64, gating)


@pytest.mark.parametrize(
    ("passed", "judge", "failure"),
    [
        (True, None, None),
        (False, None, "agent_failure"),
        (True, _judge("pass", gating=True), None),
        # a gating judge that gave no verdict: nobody can say the trace passed
        (True, _judge("not_judged", gating=True), "evaluation_error"),
        (True, _judge("error", gating=True), "evaluation_error"),
        # an uncalibrated judge never decides a build, so its silence decides nothing either
        (True, _judge("not_judged", gating=False), None),
        # a trace that failed on its own findings failed, whatever the judge said
        (False, _judge("not_judged", gating=True), "agent_failure"),
    ],
)
def test_the_kind_of_a_trace(passed: bool, judge: JudgeOutcome | None, failure: str) -> None:
    report = _trace(passed, judge)
    assert report.failure == failure
    assert report.to_dict()["failure"] == failure


def test_a_trace_the_gating_judge_did_not_decide_makes_the_run_an_input_error() -> None:
    run = RunReport((_trace(True), _trace(True, _judge("not_judged", gating=True))))
    summary = run.summary()
    assert summary.failures == {
        "agent_failure": 0,
        "evaluation_error": 1,
        "infrastructure_failure": 0,
    }
    assert run_status(summary) is Status.INPUT
    assert run_status(RunReport((_trace(True),)).summary()) is Status.OK
    assert run_status(RunReport((_trace(False),)).summary()) is Status.FAILED
    assert run_status(RunReport(()).summary()) is Status.INPUT  # a run of no traces


def test_input_error_kinds_are_read_back_and_checked() -> None:
    base: dict[str, Any] = {"reports": [], "summary": {}}
    entry = {"source": "a.json", "line": None, "column": None, "pointer": None, "message": "m"}
    old = RunReport.from_dict({**base, "input_errors": [entry]})  # as 0.2.x wrote it: no kind
    assert [e.kind for e in old.input_errors] == ["evaluation_error"]
    infra = {**entry, "kind": "infrastructure_failure"}
    run = RunReport.from_dict({**base, "input_errors": [entry, infra]})
    assert run.summary().failures == {
        "agent_failure": 0,
        "evaluation_error": 1,
        "infrastructure_failure": 1,
    }
    assert run.to_dict()["input_errors"][1] == infra
    with pytest.raises(InputError) as caught:
        RunReport.from_dict({**base, "input_errors": [entry, {**entry, "kind": "agent_failure"}]})
    assert caught.value.pointer == "/input_errors/1/kind"
    assert "must be 'evaluation_error' or 'infrastructure_failure'" in caught.value.message


def test_the_kind_survives_located_and_nested() -> None:
    error = InputError("m", pointer="/x", kind="infrastructure_failure")
    assert error.located("f.json", 3).kind == "infrastructure_failure"
    assert error.nested("a").kind == "infrastructure_failure"
    assert InputError("m").kind == "evaluation_error"
