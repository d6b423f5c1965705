"""The console report at scale: failing traces in full, passing ones counted (``--show-passing``
lists them), the ``concise`` and ``github`` output formats, and ``n/a`` for the totals a trace
did not record (docs/reports.md, Console report)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_reliability_harness import InputError
from agent_reliability_harness.model.fidelity import NotApplicable
from agent_reliability_harness.model.report import Finding, RunReport, TraceReport
from agent_reliability_harness.render.console import render_console
from agent_reliability_harness.render.github import annotation, escape_data, escape_property

from conftest import ROOT, Run

Arh = Callable[..., Run]

POLICY = {
    "policy_id": "scale",
    "allowed_tools": {"lookup": {"required_arguments": {"q": "str"}}},
    "completion": {"require_final_response": True},
}
PASSING = 4_995
FAILING = (17, 1_234, 2_501, 3_999, 4_998)  # positions of the failing traces among 5,000
WARNED = range(0, 5_000, 100)  # passing traces with an undeclared argument (a warning): 50
MESSAGE = "trace does not end with a successful, non-empty model_response"
CMP = f"ARH-CMP-001  c1  {MESSAGE}"


def _trace(index: int) -> dict[str, Any]:
    trace_id = f"run-{index:04d}"
    arguments: dict[str, Any] = {"q": "x"}
    if index in WARNED:
        arguments["extra"] = 1  # ARH-SCH-005, a warning: the trace still passes
    steps: list[dict[str, Any]] = [
        {"step_id": "c1", "type": "tool_call", "tool_name": "lookup", "arguments": arguments,
         "latency_ms": 10},
        {"step_id": "r1", "type": "model_response", "text": "done"},
    ]  # fmt: skip
    if index in FAILING:
        steps = steps[:1]  # ends with the call: ARH-CMP-001, an error
    return {"trace_id": trace_id, "agent_name": "a", "workflow": "w", "steps": steps}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """5,000 traces in one JSON Lines file: 4,995 pass (50 of them with a warning), 5 fail."""
    root = tmp_path_factory.mktemp("scale")
    (root / "policy.json").write_text(json.dumps(POLICY), encoding="utf-8")
    lines = [json.dumps(_trace(i)) for i in range(5_000)]
    (root / "runs.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def _validate(arh: Arh, root: Path, *options: str) -> Run:
    return arh(
        "validate", "--policy", root / "policy.json", root / "runs.jsonl", "--color", "never",
        *options,
    )  # fmt: skip


def _failing_block(root: Path, index: int) -> list[str]:
    """A failing trace's block, worked out from docs/reports.md: the score is that of
    completion (0, weight 10) and schema (100, weight 30): 3000 / 40 = 75."""
    return [
        f"FAIL  run-{index:04d}  score 75.00  (a / w)",
        f"      latency 10 ms · cost n/a · tokens n/a · {root.as_posix()}/runs.jsonl:{index + 1}",
        f"      error   {CMP}",
        "",
    ]


# -- 5,000 traces ---------------------------------------------------------------------------------


def test_failing_traces_in_full_and_passing_ones_in_one_line(arh: Arh, run_dir: Path) -> None:
    run = _validate(arh, run_dir)
    assert run.status == 1
    assert run.err == ""
    lines = run.out.splitlines()
    expected = [line for index in FAILING for line in _failing_block(run_dir, index)]
    # the mean score: (4,995 x 100 + 5 x 75) / 5,000 = 99.975, shown as 99.97 or 99.98: the
    # unrounded mean of binary scores is just below (checked: 99.97499999999...)
    assert lines == [
        *expected,
        "4,995 passing traces not listed (50 of them with findings); --show-passing lists them",
        "4,995 of 5,000 traces passed, 5 failed · average score 99.97 · policy scale",
    ]
    assert len(lines) == 5 * 4 + 2
    assert "PASS" not in run.out


def test_show_passing_lists_every_trace(arh: Arh, run_dir: Path) -> None:
    run = _validate(arh, run_dir, "--show-passing")
    lines = run.out.splitlines()
    assert sum(line.startswith("PASS  run-") for line in lines) == PASSING
    assert sum(line.startswith("FAIL  run-") for line in lines) == len(FAILING)
    # each passing block: verdict and details, plus a warning line for the 50 with a warning
    assert len(lines) == PASSING * 3 + 50 + len(FAILING) * 4 + 1
    assert "not listed" not in run.out
    assert (
        lines[-1] == "4,995 of 5,000 traces passed, 5 failed · average score 99.97 · policy scale"
    )


def test_concise_prints_one_line_per_finding(arh: Arh, run_dir: Path) -> None:
    run = _validate(arh, run_dir, "--output-format", "concise")
    source = (run_dir / "runs.jsonl").as_posix()
    assert run.out.splitlines() == [
        *(
            f"{source}:{i + 1}:run-{i:04d}:c1: ARH-CMP-001 error trace does not end with a "
            "successful, non-empty model_response"
            for i in FAILING
        ),
        "4,995 passing traces not listed (50 of them with findings); --show-passing lists them",
        "4,995 of 5,000 traces passed, 5 failed · average score 99.97 · policy scale",
    ]
    shown = _validate(arh, run_dir, "--output-format", "concise", "--show-passing")
    # the warnings of the passing traces too: 5 errors and 50 warnings, and the summary
    assert len(shown.out.splitlines()) == 5 + 50 + 1
    assert (
        f"{source}:101:run-0100:c1: ARH-SCH-005 warning call to 'lookup' passes the undeclared "
        "argument 'extra'\n"
    ) in shown.out


def test_github_annotates_each_finding_at_its_line(arh: Arh, run_dir: Path) -> None:
    run = _validate(arh, run_dir, "--output-format", "github")
    # a path has no ':' or ',' here, so the file property is the path as it is
    source = (run_dir / "runs.jsonl").as_posix()
    assert run.out.splitlines()[:5] == [
        f"::error file={source},line={i + 1},title=ARH-CMP-001 (trace run-{i:04d}%2C step c1)"
        "::trace does not end with a successful, non-empty model_response"
        for i in FAILING
    ]
    assert len(run.out.splitlines()) == 5 + 2


def test_a_trace_that_fails_on_its_score_alone_says_so_in_every_format(
    arh: Arh, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)  # the paths as the reports show them, relative
    # POLICY-SPEC.md works this trace out: one uncited grounded answer (a warning), score
    # 66.666..., below --fail-under 66.67; its second step starts on line 15 of the file
    examples = ROOT / "docs" / "examples"
    trace = "docs/examples/traces/uncited_answer.json"
    why = "66.667 is below the pass threshold of 66.67 (--fail-under)"

    def run(fmt: str) -> list[str]:
        done = arh("validate", "--policy", examples / "policy_docs_assistant.json", trace,
                   "--fail-under", "66.67", "--output-format", fmt)  # fmt: skip
        assert done.status == 1
        return done.out.splitlines()[:-1]

    uncited = "model_response requires grounding but has no citations"
    assert run("concise") == [
        f"{trace}:docs-0002:s2: ARH-GRD-001 warning {uncited}",
        f"{trace}:docs-0002: fails on its score alone: {why}",
    ]
    title = "ARH-GRD-001 (trace docs-0002%2C step s2)"
    assert run("github") == [
        f"::warning file={trace},line=15,title={title}::{uncited}",
        f"::error file={trace},title=trace docs-0002 fails on its score alone::{why}",
    ]


def test_quiet_silences_every_output_format(arh: Arh) -> None:
    policy = ROOT / "samples" / "policy_trajectory.json"
    for fmt in ("full", "concise", "github"):
        run = arh("validate", "--policy", policy, ROOT / "samples" / "traces", "--quiet",
                  "--output-format", fmt, "--show-passing")  # fmt: skip
        assert (run.status, run.out, run.err) == (1, "", "")


def test_compare_lists_the_regressions_and_counts_the_passing_changes(
    arh: Arh, run_dir: Path, tmp_path: Path
) -> None:
    baseline = tmp_path / "baseline.json"
    assert _validate(arh, run_dir, "--json-out", baseline, "--quiet").status == 1
    # the candidate: run-0003 now fails too, and 100 passing traces gain a warning
    lines = []
    for i in range(5_000):
        doc = _trace(i)
        if i == 3:
            doc["steps"] = doc["steps"][:1]
        elif i % 50 == 2:  # none of them fails
            doc["steps"][0]["arguments"]["more"] = 2
        lines.append(json.dumps(doc))
    candidate = tmp_path / "candidate.jsonl"
    candidate.write_text("\n".join(lines) + "\n", encoding="utf-8")
    run = arh("compare", "--baseline", baseline, "--policy", run_dir / "policy.json", candidate)
    assert run.status == 1
    assert run.out.splitlines() == [
        "compared 5000 traces · 0 added · 0 removed",
        "pass->fail 1 · fail->pass 0 · new findings 101 (1 error) · resolved 0",
        "average score delta -0.01 · largest score drop 25.00",
        "",
        "PASS->FAIL  run-0003  FAIL  score 100.00 -> 75.00 (-25.00)",
        f"      + error   {CMP}",
        "",
        "100 passing traces with changes not listed; --show-passing lists them",
        "",
        "GATE: FAIL (fail-on regressions)",
        "  - 1 new error finding: run-0003:ARH-CMP-001",
        "  - trace 'run-0003' regressed from pass to fail",
    ]
    # the same comparison, of the candidate's saved report
    saved = tmp_path / "candidate.json"
    arh("validate", "--policy", run_dir / "policy.json", candidate, "--json-out", saved, "--quiet")
    common = ("--baseline", baseline, "--candidate", saved)
    assert arh("compare", *common).out == run.out
    listed = arh("compare", *common, "--show-passing")
    assert sum(line.startswith("CHANGED     run-") for line in listed.out.splitlines()) == 100
    assert "not listed" not in listed.out
    concise = arh("compare", *common, "--output-format", "concise")
    source = candidate.as_posix()
    assert concise.out.splitlines()[4:6] == [
        f"{source}:4:run-0003: PASS->FAIL score 100.00 -> 75.00 (-25.00)",
        f"{source}:4:run-0003:c1: ARH-CMP-001 error {MESSAGE}",
    ]
    github = arh("compare", *common, "--output-format", "github").out.splitlines()
    assert github[4] == (
        f"::error file={source},line=4,title=ARH-CMP-001 (new in trace run-0003%2C step c1)"
        "::trace does not end with a successful, non-empty model_response"
    )
    assert github[-2:] == [
        "::error title=arh compare gate::1 new error finding: run-0003:ARH-CMP-001",
        "::error title=arh compare gate::trace 'run-0003' regressed from pass to fail",
    ]


# -- GitHub escaping ------------------------------------------------------------------------------


def test_github_escaping_follows_the_runner() -> None:
    # by hand, from actions/toolkit's escapeData and escapeProperty: % first, then CR, LF (and
    # ':' and ',' in properties)
    assert escape_data("100% done\r\nnext: a, b") == "100%25 done%0D%0Anext: a, b"
    assert escape_property("100% done\r\nnext: a, b") == "100%25 done%0D%0Anext%3A a%2C b"
    assert escape_data("%0A stays text") == "%250A stays text"
    # text from a trace is made visible first: a line break is shown as \n, an escape sequence
    # as \x1b, and a legacy ##[ command is defused
    assert annotation(
        "warning", "a\nb \x1b[31m ##[add-mask]x", file="t.json", line=3, title="T"
    ) == ("::warning file=t.json,line=3,title=T::a\\nb \\x1b[31m \\x23#[add-mask]x")
    assert annotation("notice", "m") == "::notice::m"


def test_github_annotations_of_hostile_names(arh: Arh, tmp_path: Path) -> None:
    folder = tmp_path / "a,b:c%d"
    folder.mkdir()
    (tmp_path / "p.json").write_text(json.dumps({"policy_id": "p"}), encoding="utf-8")
    trace = {
        "trace_id": "id:1,2%",
        "agent_name": "a",
        "workflow": "w",
        "steps": [{"step_id": "s::1", "type": "tool_call", "tool_name": "t%0A\nx"}],
    }
    (folder / "t.json").write_text(json.dumps(trace), encoding="utf-8")
    run = arh("validate", "--policy", tmp_path / "p.json", folder / "t.json",
              "--output-format", "github")  # fmt: skip
    path = folder.as_posix().replace("%", "%25").replace(":", "%3A").replace(",", "%2C")
    # the step is on line 1 of the file (json.dumps writes one line); the tool name is quoted
    # in the message as the rule writes it, its line break made visible as \n
    assert run.out.splitlines()[0] == (
        f"::error file={path}/t.json,line=1,title=ARH-SCH-001 (trace id%3A1%2C2%25%2C step "
        "s%3A%3A1)::tool 't%250A\\nx' is not in the policy's allowed_tools"
    )
    # one command per finding, and no line of the summary that a runner would read as one
    assert [line for line in run.out.splitlines() if line.startswith("::")] == run.out.splitlines()[
        :1
    ]


# -- n/a for what a trace did not record ---------------------------------------------------------


def _report(**fields: Any) -> TraceReport:
    values: dict[str, Any] = {
        "trace_id": "t",
        "agent_name": "a",
        "workflow": "w",
        "policy_id": "p",
        "score": 100.0,
        "passed": True,
        "total_latency_ms": 0.0,
        "total_cost_usd": 0.0,
        "citation_coverage": None,
        "findings": (),
    }
    return TraceReport(**(values | fields))


def test_absent_totals_are_na_and_real_zeros_are_zero() -> None:
    absent = _report(not_recorded=("total_latency_ms", "total_cost_usd"))
    measured = _report(total_tokens=0)  # every total recorded, and all zero
    text = render_console(RunReport((absent, measured)))
    assert "      latency n/a · cost n/a · tokens n/a\n" in text
    assert "      latency 0 ms · cost $0.0000 · tokens 0\n" in text


def test_not_recorded_survives_a_report_read_back(arh: Arh, tmp_path: Path) -> None:
    from agent_reliability_harness.regression import compare_reports, evaluate_gate
    from agent_reliability_harness.render.html import render_compare_html

    absent = _report(trace_id="t1", not_recorded=("total_cost_usd",), total_latency_ms=5.0)
    document = RunReport((absent,)).to_dict()
    assert document["reports"][0]["not_recorded"] == ["total_cost_usd"]
    back = RunReport.from_dict(json.loads(json.dumps(document)))
    assert back.reports[0].not_recorded == ("total_cost_usd",)
    assert back.reports[0].recorded_cost_usd is None
    assert back.reports[0].recorded_latency_ms == 5.0
    # a report of 0.2.x has no not_recorded: its zeros are shown as it wrote them
    del document["reports"][0]["not_recorded"]
    old = RunReport.from_dict(document).reports[0]
    assert (old.not_recorded, old.recorded_cost_usd) == ((), 0.0)
    # the HTML page of a comparison of two saved reports shows n/a, not $0.0000
    failing = RunReport(
        (
            TraceReport(
                **{
                    **{f: getattr(back.reports[0], f) for f in ("trace_id", "agent_name",
                       "workflow", "policy_id", "citation_coverage", "not_recorded",
                       "total_latency_ms", "total_cost_usd")},
                    "score": 50.0,
                    "passed": False,
                    "findings": (Finding("ARH-CMP-001", "error", "completion", "m", "s1"),),
                }
            ),
        )
    )  # fmt: skip
    result = compare_reports(back, failing)
    page = render_compare_html(result, evaluate_gate(result, "regressions"))
    assert "latency 5 ms · cost n/a · tokens n/a" in page
    assert "$0.0000" not in page


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("total_cost_usd", "must be an array, got string"),
        (["total_tokens"],
         "must be 'total_latency_ms' or 'total_cost_usd', each listed once, got 'total_tokens'"),
        (["total_cost_usd", "total_cost_usd"], "each listed once, got 'total_cost_usd'"),
        ([1], "each listed once, got number"),
    ],
)  # fmt: skip
def test_a_bad_not_recorded_is_an_input_error(value: object, message: str) -> None:
    document = RunReport((_report(),)).to_dict()
    document["reports"][0]["not_recorded"] = value
    with pytest.raises(InputError) as caught:
        RunReport.from_dict(document)
    assert message in str(caught.value)
    assert caught.value.pointer is not None
    assert caught.value.pointer.startswith("/reports/0/not_recorded")


def test_the_count_of_passing_traces_says_what_they_hide() -> None:
    check = NotApplicable("ARH-FLW-001", "error_handling.require_retry_on_error", "tool_status")
    reports = (
        _report(trace_id="a"),
        _report(trace_id="b", findings=(Finding("ARH-SCH-005", "warning", "schema", "m", "s1"),)),
        _report(trace_id="c", not_applicable=(check,)),
        _report(trace_id="d", passed=False, score=10.0),
    )
    text = render_console(RunReport(reports), show_passing=False)
    assert text.splitlines()[-2] == (
        "3 passing traces not listed (1 of them with findings, 1 with checks not applicable); "
        "--show-passing lists them"
    )
    assert text.startswith("FAIL  d  score 10.00")
    # by default the Python renderer lists every trace, as it did
    assert "PASS  a  score 100.00" in render_console(RunReport(reports))


def test_concise_colours_only_the_severity() -> None:
    finding = Finding("ARH-CMP-001", "error", "completion", "m", "s1")
    text = render_console(
        RunReport((_report(passed=False, findings=(finding,)),)),
        output_format="concise",
        color=True,
    )
    assert text.splitlines()[0] == "t:s1: ARH-CMP-001 \x1b[31merror\x1b[0m m"


def test_the_stats_run_line_says_na(arh: Arh, tmp_path: Path) -> None:
    policy = ROOT / "docs" / "examples" / "adapters" / "policy_refund.json"
    report = tmp_path / "r.json"
    arh("validate", "--policy", policy, ROOT / "docs" / "examples" / "adapters" / "exported",
        "--json-out", report, "--quiet")  # fmt: skip
    run = arh("stats", report)
    # the three transcripts record no latency, cost or tokens
    assert run.out.splitlines()[-1].endswith("latency n/a · cost n/a · tokens n/a")
