"""The GitHub Action: action.yml, its script action/run.sh, the pre-commit hook and the workflows.

The script is run end to end with bash, as the runner runs it, against fake GITHUB_OUTPUT,
GITHUB_STEP_SUMMARY and RUNNER_TEMP files. ``ARH_ACTION_PYTHON`` points it at the Python running
these tests (which has arh installed), so nothing is downloaded; one test replaces the Python that
creates the virtualenv with a stub to check the install path the real action takes.

Expected reports and exit statuses come from running ``arh`` itself in-process with the same
arguments: the action must fail exactly when arh fails and publish exactly what arh wrote.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import agent_reliability_harness
from agent_reliability_harness._version import PROJECT_URL, __version__

from conftest import ROOT, Run

yaml = pytest.importorskip("yaml", reason="PyYAML is in the dev extra")

SCRIPT = ROOT / "action" / "run.sh"
# The arh package these tests import, and hold the action to. The script's Python is pointed at
# it: a relative PYTHONPATH (PYTHONPATH=src) does not hold in the directories the script runs in,
# where it would import whatever arh is installed (another checkout's, for an editable install).
PACKAGE_DIR = Path(agent_reliability_harness.__file__).resolve().parent
ACTION = ROOT / "action.yml"
BASH = shutil.which("bash")
needs_bash = pytest.mark.skipif(BASH is None, reason="bash is not installed")

POLICY = "samples/policy_trajectory.json"
REPORTS = {  # output name -> file name in the output directory
    "json-report": "report.json",
    "markdown-report": "report.md",
    "junit-report": "report.xml",
    "sarif-report": "report.sarif",
    "compare-report": "compare.json",
    "compare-markdown-report": "compare.md",
}


# the outputs and the summary of the script's own usage errors
USAGE_ERROR_OUTPUTS = {"verdict": "error", "exit-code": "2", **dict.fromkeys(REPORTS, "")}
USAGE_ERROR_SUMMARY = (
    "arh action: usage error (exit status 2) before arh ran; the job log says why.\n"
)
# the summary's first lines when arh compare wrote no report (the validation report follows)
COMPARE_WROTE_NOTHING = (
    "arh compare exited with status {} before writing its report; the job log says why.\n\n"
)


@dataclass
class ActionRun:
    status: int
    out: str
    err: str
    outputs: dict[str, str]
    summary: str
    cwd: Path  # where the step started (the workspace)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A checkout-like directory with the samples and the documentation examples."""
    work = tmp_path / "work"
    work.mkdir()
    shutil.copytree(ROOT / "samples", work / "samples")
    shutil.copytree(ROOT / "docs" / "examples", work / "docs" / "examples")
    (tmp_path / "runner-temp").mkdir()
    return work


def _parse_outputs(text: str) -> dict[str, str]:
    """Read a GITHUB_OUTPUT file: ``name=value`` lines and ``name<<DELIM`` blocks."""
    outputs: dict[str, str] = {}
    lines = iter(text.splitlines())
    for line in lines:
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            value: list[str] = []
            for item in lines:
                if item == delimiter:
                    break
                value.append(item)
            outputs[name] = "\n".join(value)
        else:
            name, value_text = line.split("=", 1)
            assert name not in outputs, f"output {name} written twice"
            outputs[name] = value_text
    return outputs


def run_action(
    cwd: Path, inputs: dict[str, str], *, install: bool = False, **env: str
) -> ActionRun:
    """Run action/run.sh in ``cwd`` as the composite action's step does."""
    assert BASH is not None
    temp = cwd.parent / "runner-temp"
    output_file = cwd.parent / "github-output"
    summary_file = cwd.parent / "step-summary.md"
    for path in (output_file, summary_file):
        path.write_text("", encoding="utf-8")
    # the test's own environment (Windows needs SYSTEMROOT and the like), less anything that
    # could steer the action or the runner
    environ = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("ARH_", "GITHUB_", "RUNNER_", "STUB_"))
    }
    environ.update(
        {
            "RUNNER_TEMP": str(temp),
            "GITHUB_ACTION_PATH": str(ROOT),
            "GITHUB_OUTPUT": str(output_file),
            "GITHUB_STEP_SUMMARY": str(summary_file),
            "PYTHONDONTWRITEBYTECODE": "1",
        }
    )
    if not install:
        environ["ARH_ACTION_PYTHON"] = sys.executable
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    environ["PYTHONPATH"] = os.pathsep.join(
        [str(PACKAGE_DIR.parent), *(os.path.abspath(p) for p in paths)]
    )
    for name, value in inputs.items():
        environ["ARH_INPUT_" + name.upper().replace("-", "_")] = value
    environ.update(env)
    done = subprocess.run(
        [BASH, str(SCRIPT)],
        cwd=cwd,
        env=environ,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        encoding="utf-8",
        check=False,
    )
    return ActionRun(
        done.returncode,
        done.stdout,
        done.stderr,
        _parse_outputs(output_file.read_text(encoding="utf-8")),
        summary_file.read_text(encoding="utf-8"),
        cwd,
    )


def _arh_in(cwd: Path, arh: Callable[..., Run], *args: str) -> Run:
    """Run arh in-process in ``cwd`` (the reference the action is held to)."""
    old = Path.cwd()
    os.chdir(cwd)
    try:
        return arh(*args)
    finally:
        os.chdir(old)


def _read(run: ActionRun, output: str) -> str:
    path = run.outputs[output]
    assert path, f"output {output} is empty"
    return (run.cwd / path).read_text(encoding="utf-8")


# -- validate only -------------------------------------------------------------------------------


@needs_bash
def test_validate_pass_publishes_every_report(workspace: Path, arh: Callable[..., Run]) -> None:
    run = run_action(workspace, {"policy": POLICY, "traces": "samples/traces/rebook_pass.json"})
    assert run.status == 0, run.err
    assert run.outputs["verdict"] == "pass"
    assert run.outputs["exit-code"] == "0"
    for name, file in REPORTS.items():
        expected = f"arh-reports/{file}" if not name.startswith("compare") else ""
        assert run.outputs[name] == expected, name
    # the reports are byte for byte what arh writes for the same arguments
    reference = _arh_in(
        workspace,
        arh,
        "validate",
        "--policy",
        POLICY,
        "samples/traces/rebook_pass.json",
        "--json-out",
        "ref/report.json",
        "--md-out",
        "ref/report.md",
        "--junit-out",
        "ref/report.xml",
        "--sarif-out",
        "ref/report.sarif",
    )
    assert reference.status == 0
    for name in ("json-report", "markdown-report", "junit-report", "sarif-report"):
        assert _read(run, name) == (workspace / "ref" / REPORTS[name]).read_text("utf-8"), name
    assert run.summary == _read(run, "markdown-report")
    # the console report of arh validate, whose passing trace is counted, not listed
    assert "1 passing trace not listed; --show-passing lists it\n1 of 1 trace passed" in run.out


@needs_bash
def test_validate_fail_exits_as_arh_does(workspace: Path, arh: Callable[..., Run]) -> None:
    run = run_action(workspace, {"policy": POLICY, "traces": "samples/traces/"})
    reference = _arh_in(workspace, arh, "validate", "--policy", POLICY, "samples/traces/")
    assert reference.status == 1  # three of the six sample runs fail (README)
    assert run.status == reference.status
    assert run.outputs["verdict"] == "fail"
    assert run.outputs["exit-code"] == "1"
    assert "traces failed" in run.summary
    assert run.summary == _read(run, "markdown-report")


@needs_bash
def test_options_reach_arh(workspace: Path, arh: Callable[..., Run]) -> None:
    # docs/examples/traces/uncited_answer.json scores 66.67 with only a warning (POLICY-SPEC.md,
    # "Warnings can lower a score"): it fails the default threshold of 70 and passes 66.66
    inputs = {
        "policy": "docs/examples/policy_docs_assistant.json",
        "traces": "docs/examples/traces/uncited_answer.json",
    }
    assert run_action(workspace, inputs).status == 1
    assert run_action(workspace, {**inputs, "fail-under": "66.66"}).status == 0
    # out of range: arh's usage error
    inputs = {"policy": POLICY, "traces": "samples/traces/rebook_pass.json", "fail-under": "101"}
    run = run_action(workspace, inputs)
    reference = _arh_in(
        workspace, arh, "validate", "--policy", POLICY, "--fail-under", "101", "samples/traces"
    )
    assert run.status == reference.status == 2
    assert "--fail-under: must be a number from 0 to 100" in run.err
    run = run_action(
        workspace,
        {"policy": POLICY, "traces": "samples/traces/rebook_pass.json", "format": "openai-chat"},
    )
    # a canonical trace read as an OpenAI transcript is not one: arh's input error, exit 3, and
    # the verdict says that the check could not run, not that the agent failed
    assert (run.status, run.outputs["verdict"], run.outputs["exit-code"]) == (3, "error", "3")
    assert "samples/traces/rebook_pass.json" in run.err


@needs_bash
def test_lines_globs_and_blank_lines(workspace: Path) -> None:
    traces = (
        "  samples/traces/rebook_pass.json  \r\n\n"
        "samples/traces/rebook_double*.json\n"
        "samples/traces/rebook_[i]gnored_tool_error.json\n"
    )
    run = run_action(workspace, {"policy": POLICY, "traces": traces})
    assert run.status == 1, run.err
    assert run.err == ""
    report = _read(run, "json-report")
    ids = re.findall(r'"trace_id": "([^"]+)"', report)
    # rebook_pass.json is rebook-1001, the double rebooking 1002, the ignored error 1004
    assert sorted(set(ids)) == ["rebook-1001", "rebook-1002", "rebook-1004"]


@needs_bash
def test_glob_without_match_is_reported_as_missing(workspace: Path) -> None:
    run = run_action(workspace, {"policy": POLICY, "traces": "samples/nothing-*.json"})
    assert run.status == 3
    assert "error: samples/nothing-*.json: no such file or directory" in run.err


@needs_bash
def test_modules_in_the_working_directory_do_not_replace_the_standard_library(
    workspace: Path,
) -> None:
    for name in ("enum", "json", "re"):  # each imported by arh at start-up
        (workspace / f"{name}.py").write_text('raise SystemExit("shadowed")\n', encoding="utf-8")
    run = run_action(workspace, {"policy": POLICY, "traces": "samples/traces/rebook_pass.json"})
    assert run.status == 0, run.err
    assert run.outputs["verdict"] == "pass"
    assert "shadowed" not in run.out + run.err


@needs_bash
def test_directory_with_spaces(workspace: Path) -> None:
    spaced = workspace / "my traces"
    shutil.copytree(workspace / "samples" / "traces", spaced)
    run = run_action(workspace, {"policy": POLICY, "traces": "my traces/rebook_pass.json"})
    assert run.status == 0, run.err


@needs_bash
def test_standard_input_is_empty(workspace: Path) -> None:
    # '-' means standard input to arh; the action connects none, so it reads nothing, at once
    run = run_action(workspace, {"policy": POLICY, "traces": "-"})
    assert run.status == 3
    assert "error: <stdin>:1:1: invalid JSON: the document is empty" in run.err


# -- hostile inputs ------------------------------------------------------------------------------

HOSTILE = [
    'x"; touch pwned; "',
    "$(touch pwned)",
    "`touch pwned`",
    "x'; touch pwned; '",
    "--json-out=pwned",
    "--policy=pwned.json",
]


@needs_bash
def test_hostile_trace_inputs_are_file_names(workspace: Path) -> None:
    traces = "\n".join([*HOSTILE, "samples/traces/rebook_pass.json"])
    run = run_action(workspace, {"policy": POLICY, "traces": traces})
    assert not list(workspace.parent.rglob("pwned*")), "an input value was run as code"
    for value in HOSTILE:
        # a line that names nothing as a whole is split at blanks, as 0.2.x split the input
        for word in value.split():
            assert f"error: {word}: no such file or directory" in run.err, word
    assert (run.status, run.outputs["verdict"]) == (3, "error")
    # the one real trace was still validated and reported
    assert '"trace_id": "rebook-1001"' in _read(run, "json-report")


@needs_bash
@pytest.mark.parametrize("field", ["policy", "baseline", "fail-under", "output-dir"])
def test_hostile_option_inputs_are_values(workspace: Path, field: str) -> None:
    value = 'x"; touch pwned; "'
    inputs = {"policy": POLICY, "traces": "samples/traces/rebook_pass.json", field: value}
    run = run_action(workspace, inputs)
    assert not list(workspace.parent.rglob("pwned*")), "an input value was run as code"
    if field == "output-dir":
        # a strange but valid directory name: the reports go there
        assert run.status == 0, run.err
        assert run.outputs["json-report"] == f"{value}/report.json"
        assert (workspace / value / "report.json").is_file()
        return
    # a policy or fail-under that arh cannot use (2), a baseline it cannot read (3)
    assert (run.status, run.outputs["verdict"]) == (3 if field == "baseline" else 2, "error")
    assert value in run.err


@needs_bash
@pytest.mark.parametrize("field", ["policy", "output-dir", "working-directory", "fail-under"])
def test_a_line_break_in_a_single_line_input_is_refused(workspace: Path, field: str) -> None:
    # a line break in output-dir used to end a line of GITHUB_OUTPUT and add outputs of its own
    value = "out\nverdict=pass\nexit-code=0\nx="
    inputs = {"policy": POLICY, "traces": "samples/traces/rebook_double_rebooking.json"}
    run = run_action(workspace, {**inputs, field: value})
    assert run.status == 2
    assert f"arh action: error: the '{field}' input must be a single line" in run.err
    # only the outputs of a usage error: none of the value's own lines
    assert run.outputs == USAGE_ERROR_OUTPUTS


# -- with a baseline -----------------------------------------------------------------------------


def _baseline(workspace: Path, arh: Callable[..., Run]) -> str:
    """The baseline report, written by arh in-process (the action's own validate-only runs are
    tested above)."""
    run = _arh_in(
        workspace,
        arh,
        "validate",
        "--policy",
        POLICY,
        "docs/examples/regression/baseline-runs/",
        "--json-out",
        "baseline/report.json",
        "--quiet",
    )
    assert run.status == 1  # rebook-1004 fails on the baseline already (regression-testing.md)
    return "baseline/report.json"


@needs_bash
def test_baseline_without_regression_passes(workspace: Path, arh: Callable[..., Run]) -> None:
    baseline = _baseline(workspace, arh)
    traces = "docs/examples/regression/baseline-runs/"
    run = run_action(workspace, {"policy": POLICY, "traces": traces, "baseline": baseline})
    reference = _arh_in(
        workspace, arh, "compare", "--baseline", baseline, "--policy", POLICY, traces
    )
    assert reference.status == 0
    assert run.status == 0, run.out + run.err
    assert run.outputs["verdict"] == "pass"
    for name, file in REPORTS.items():
        assert run.outputs[name] == f"arh-reports/{file}", name
    compare_md = _read(run, "compare-markdown-report")
    assert compare_md.startswith("## arh regression gate: PASS")
    # the summary holds the comparison, then the validation report of the candidate
    assert run.summary == compare_md + "\n" + _read(run, "markdown-report")


@needs_bash
def test_baseline_regression_fails(workspace: Path, arh: Callable[..., Run]) -> None:
    baseline = _baseline(workspace, arh)
    traces = "docs/examples/regression/candidate-runs/"
    run = run_action(workspace, {"policy": POLICY, "traces": traces, "baseline": baseline})
    reference = _arh_in(
        workspace,
        arh,
        "compare",
        "--baseline",
        baseline,
        "--policy",
        POLICY,
        traces,
        "--json-out",
        "ref.json",
    )
    assert reference.status == 1
    assert run.status == 1
    assert run.outputs["verdict"] == "fail"
    assert _read(run, "compare-report") == (workspace / "ref.json").read_text("utf-8")
    assert "## arh regression gate: FAIL" in run.summary
    assert "GATE: FAIL (fail-on regressions)" in run.out
    # the candidate's reports are published too (for JUnit and SARIF uploads)
    assert "rebook-1001" in _read(run, "sarif-report")


@needs_bash
def test_baseline_gate_options(workspace: Path, arh: Callable[..., Run]) -> None:
    baseline = _baseline(workspace, arh)
    inputs = {
        "policy": POLICY,
        "traces": "docs/examples/regression/candidate-runs/",
        "baseline": baseline,
        "fail-on": "never",
    }
    assert run_action(workspace, inputs).status == 0
    inputs["fail-on"] = "failures"
    assert run_action(workspace, inputs).status == 1
    # the baseline's own runs again: no score moved, so no limit on the drop can fail them
    inputs.update(
        {
            "fail-on": "regressions",
            "max-score-drop": "0.5",
            "traces": "docs/examples/regression/baseline-runs/",
        }
    )
    assert run_action(workspace, inputs).status == 0
    # what arh compare would refuse (--max-score-drop with --fail-on never, a gate mode it does
    # not know) is refused before the traces are validated
    inputs["fail-on"] = "never"
    run = run_action(workspace, inputs)
    assert run.status == 2
    assert "'max-score-drop' applies only with 'fail-on: regressions', not 'never'" in run.err
    inputs["fail-on"] = "sometimes"
    run = run_action(workspace, inputs)
    assert run.status == 2
    assert "the 'fail-on' input must be regressions, failures or never, not 'sometimes'" in run.err


@needs_bash
def test_any_step_matches_reruns_of_a_transcript(workspace: Path) -> None:
    # a baseline without step references (the layout of arh 0.2.x): its findings are matched by step
    # id, and ARH-SCH-009 at call_Qm42 is at call_x7Tc in Tuesday's recording
    reruns = "docs/examples/regression/reruns/"
    inputs = {
        "policy": "docs/examples/adapters/policy_refund.json",
        "traces": reruns + "tuesday/",
        "baseline": reruns + "monday-old.json",
    }
    exact = run_action(workspace, inputs)
    assert (exact.status, exact.outputs["verdict"]) == (1, "fail")
    assert "1 new error finding: refund-ORD-9:ARH-SCH-009" in exact.out
    for value, status in (("true", 0), ("false", 1), ("yes", 2)):
        run = run_action(workspace, {**inputs, "any-step": value})
        assert run.status == status, (value, run.err)
    assert "the 'any-step' input must be true or false, not 'yes'" in run.err


@needs_bash
def test_invalid_baseline_fails_with_the_reports_still_written(workspace: Path) -> None:
    (workspace / "bad.json").write_text('{"reports": 3}', encoding="utf-8")
    run = run_action(
        workspace,
        {"policy": POLICY, "traces": "samples/traces/rebook_pass.json", "baseline": "bad.json"},
    )
    assert (run.status, run.outputs["verdict"]) == (3, "error")  # an input error
    assert "error: invalid baseline: bad.json: /reports: must be an array, got number" in run.err
    assert run.outputs["compare-report"] == ""
    assert run.outputs["json-report"] == "arh-reports/report.json"
    assert run.summary == COMPARE_WROTE_NOTHING.format(3) + _read(run, "markdown-report")


@needs_bash
def test_a_baseline_in_the_output_directory_is_read_before_it_is_replaced(
    workspace: Path, arh: Callable[..., Run]
) -> None:
    # the main branch's reports, downloaded back into the output directory: the report of this
    # run replaces the baseline's file, and the comparison must still read the baseline (it
    # used to compare the candidate with itself and pass)
    baseline = _baseline(workspace, arh)
    traces = "docs/examples/regression/candidate-runs/"
    reference = _arh_in(
        workspace, arh, "compare", "--baseline", baseline, "--policy", POLICY, traces,
        "--json-out", "ref.json", "--quiet",
    )  # fmt: skip
    assert reference.status == 1
    for name in ("report.json", "compare.json"):
        (workspace / "arh-reports").mkdir(exist_ok=True)
        shutil.copyfile(workspace / baseline, workspace / "arh-reports" / name)
        inputs = {"policy": POLICY, "traces": traces, "baseline": f"arh-reports/{name}"}
        run = run_action(workspace, inputs)
        assert run.status == 1, run.out + run.err
        assert "GATE: FAIL (fail-on regressions)" in run.out
        assert _read(run, "compare-report") == (workspace / "ref.json").read_text("utf-8")
        assert "regressed from pass to fail" in run.summary
        # the copy it was read from is gone
        assert not list((workspace.parent / "runner-temp").glob("arh-baseline*"))


def _evals(workspace: Path) -> Path:
    """A directory of trace files with nothing else in it, as an evaluation may write them."""
    evals = workspace / "evals"
    shutil.copytree(workspace / "docs/examples/regression/baseline-runs", evals)
    return evals


@needs_bash
def test_baseline_mode_reads_no_report_as_a_trace(workspace: Path, arh: Callable[..., Run]) -> None:
    # the traces are the whole working directory, and the reports go under it: the comparison
    # used to validate the traces again, reading the JSON report just written as a trace
    _evals(workspace)
    baseline = _baseline(workspace, arh)
    inputs = {
        "policy": "../" + POLICY,
        "traces": ".",
        "baseline": "../" + baseline,
        "working-directory": "evals",
    }
    for _ in range(2):  # the second run finds the first one's reports in the traces' directory
        run = run_action(workspace, inputs)
        assert run.status == 0, run.out + run.err
        assert run.err == ""
        assert run.outputs["compare-report"] == "evals/arh-reports/compare.json"
        assert _read(run, "compare-markdown-report").startswith("## arh regression gate: PASS")


@needs_bash
@pytest.mark.skipif(os.name == "nt", reason="the stub is a bash script")
def test_baseline_mode_validates_the_traces_once(workspace: Path, arh: Callable[..., Run]) -> None:
    baseline = _baseline(workspace, arh)
    inputs = {
        "policy": POLICY,
        "traces": "docs/examples/regression/candidate-runs/",
        "baseline": baseline,
        "max-score-drop": "5",
        "any-step": "true",
    }
    calls = install_with_stub(workspace, inputs, 1)
    runs = [call for call in calls if "-m agent_reliability_harness" in call]
    assert len(runs) == 2
    assert " validate " in runs[0]
    # the comparison reads the report validate wrote, with the gate's options and no traces
    compare = runs[1].split("-m agent_reliability_harness ", 1)[1]
    assert compare == (
        "compare --json-out=arh-reports/compare.json --md-out=arh-reports/compare.md "
        f"--baseline={baseline} --candidate=arh-reports/report.json --fail-on=regressions "
        "--max-score-drop=5 --any-step"
    )


@needs_bash
def test_unreadable_candidate_inputs_fail_whatever_the_gate_says(
    workspace: Path, arh: Callable[..., Run]
) -> None:
    baseline = _baseline(workspace, arh)
    traces = "docs/examples/regression/baseline-runs/\nmissing.json"
    run = run_action(workspace, {"policy": POLICY, "traces": traces, "baseline": baseline})
    # arh compare validating the same inputs: the gate passes, the exit status is 3 (an input
    # error) and the verdict 'error', not 'fail': the agent did not fail, the check is incomplete
    reference = _arh_in(
        workspace, arh, "compare", "--baseline", baseline, "--policy", POLICY,
        "docs/examples/regression/baseline-runs/", "missing.json",
    )  # fmt: skip
    assert reference.status == 3
    assert "GATE: PASS" in reference.out
    assert (run.status, run.outputs["verdict"], run.outputs["exit-code"]) == (3, "error", "3")
    assert "error: missing.json: no such file or directory" in run.err
    assert "GATE: PASS" in run.out
    note = "exit status 3 whatever the gate says: 1 candidate input error"
    assert note in run.out
    compare_md = _read(run, "compare-markdown-report")
    assert run.summary == (
        compare_md
        + f"\n**E{note[1:]}** (the job log and the validation report below say why).\n\n"
        + _read(run, "markdown-report")
    )
    # a failing gate too: an incomplete check (3) wins over a failure (1)
    candidate = "docs/examples/regression/candidate-runs/\nmissing.json"
    run = run_action(workspace, {"policy": POLICY, "traces": candidate, "baseline": baseline})
    assert (run.status, run.outputs["verdict"]) == (3, "error")
    assert "GATE: FAIL" in run.out
    assert f"**E{note[1:]}**" in run.summary


@needs_bash
def test_a_report_validate_could_not_write_is_an_input_error_whatever_the_gate_says(
    workspace: Path, arh: Callable[..., Run]
) -> None:
    baseline = _baseline(workspace, arh)
    (workspace / "arh-reports" / "report.md").mkdir(parents=True)  # not a file: not written
    traces = "docs/examples/regression/baseline-runs/"
    run = run_action(workspace, {"policy": POLICY, "traces": traces, "baseline": baseline})
    assert (run.status, run.outputs["verdict"], run.outputs["exit-code"]) == (3, "error", "3")
    assert "error: cannot write arh-reports/report.md" in run.err
    assert "GATE: PASS" in run.out
    note = "exit status 3 whatever the gate says: a report arh validate could not write"
    assert f"{note} (arh validate's errors above)" in run.out
    assert f"**E{note[1:]}**" in run.summary


@needs_bash
@pytest.mark.parametrize(
    ("gate", "message"),
    [
        ({"fail-on": "Regressions"}, "the 'fail-on' input must be regressions, failures or never"),
        (
            {"fail-on": "never", "max-score-drop": "5"},
            "'max-score-drop' applies only with 'fail-on: regressions', not 'never'",
        ),
        (
            {"fail-on": "failures", "max-score-drop": "5"},
            "'max-score-drop' applies only with 'fail-on: regressions', not 'failures'",
        ),
        (
            {"max-score-drop": "-1"},
            "the 'max-score-drop' input must be a number of points, 0 or more, not '-1'",
        ),
        (
            {"max-score-drop": "five"},
            "the 'max-score-drop' input must be a number of points, 0 or more, not 'five'",
        ),
        (
            {"max-score-drop": "nan"},
            "the 'max-score-drop' input must be a number of points, 0 or more, not 'nan'",
        ),
    ],
)
def test_gate_inputs_arh_compare_would_refuse_are_refused_before_validating(
    workspace: Path, arh: Callable[..., Run], gate: dict[str, str], message: str
) -> None:
    baseline = _baseline(workspace, arh)
    inputs = {"policy": POLICY, "traces": "samples/traces/", "baseline": baseline, **gate}
    run = run_action(workspace, inputs)
    assert run.status == 2
    assert f"arh action: error: {message}" in run.err
    assert not (workspace / "arh-reports").exists()  # nothing was validated
    assert run.outputs == USAGE_ERROR_OUTPUTS
    assert run.summary == USAGE_ERROR_SUMMARY


@needs_bash
@pytest.mark.parametrize("value", ["0", "5", "0.5", ".5", "+2", "1e1", "2.", "10"])
def test_score_drops_arh_compare_accepts(
    workspace: Path, arh: Callable[..., Run], value: str
) -> None:
    baseline = _baseline(workspace, arh)
    traces = "docs/examples/regression/baseline-runs/"
    inputs = {"policy": POLICY, "traces": traces, "baseline": baseline, "max-score-drop": value}
    run = run_action(workspace, inputs)
    assert run.status == 0, run.err
    reference = _arh_in(
        workspace, arh, "compare", "--baseline", baseline, "--policy", POLICY, traces,
        f"--max-score-drop={value}", "--quiet",
    )  # fmt: skip
    assert reference.status == 0


@needs_bash
def test_a_missing_baseline_says_in_the_summary_why_there_is_no_comparison(
    workspace: Path,
) -> None:
    inputs = {"policy": POLICY, "traces": "samples/traces/", "baseline": "main/report.json"}
    run = run_action(workspace, inputs)
    assert run.status == 3
    assert "error: invalid baseline: main/report.json: " in run.err
    assert run.outputs["compare-markdown-report"] == ""
    # the candidate's reports are still written and published, after the line that says why
    # the comparison is missing
    assert run.summary == COMPARE_WROTE_NOTHING.format(3) + _read(run, "markdown-report")


@needs_bash
@pytest.mark.parametrize("name", ["fail-on", "max-score-drop", "any-step"])
def test_gate_inputs_need_a_baseline(workspace: Path, name: str) -> None:
    value = "true" if name == "any-step" else "1"
    run = run_action(
        workspace, {"policy": POLICY, "traces": "samples/traces/rebook_pass.json", name: value}
    )
    assert run.status == 2
    assert f"arh action: error: '{name}' applies only with a 'baseline'" in run.err
    assert not (workspace / "arh-reports").exists()


@needs_bash
@pytest.mark.parametrize(
    "inputs",
    [
        {"fail-on": "regressions"},  # without a baseline
        {"any-step": "true"},
        {"baseline": "b.json", "any-step": "True"},
        {"output-dir": "a\nb"},
        {"working-directory": "missing"},
        {"policy": ""},
    ],
)
def test_usage_errors_write_the_outputs_and_a_summary(
    workspace: Path, inputs: dict[str, str]
) -> None:
    # action.yml promises verdict and exit-code: a usage error of the script itself wrote none
    run = run_action(workspace, {"policy": POLICY, "traces": "samples/traces/", **inputs})
    assert run.status == 2
    assert run.err.startswith("arh action: error: ")
    assert run.outputs == USAGE_ERROR_OUTPUTS
    assert run.summary == USAGE_ERROR_SUMMARY


@needs_bash
@pytest.mark.parametrize("missing", ["policy", "traces"])
def test_required_inputs(workspace: Path, missing: str) -> None:
    inputs = {"policy": POLICY, "traces": "samples/traces/"}
    inputs[missing] = "  \n "
    run = run_action(workspace, inputs)
    assert run.status == 2
    assert f"the '{missing}' input is required" in run.err


# -- paths, summary and log ----------------------------------------------------------------------


@needs_bash
def test_working_directory_prefixes_output_paths(workspace: Path) -> None:
    run = run_action(
        workspace.parent,
        {
            "policy": POLICY,
            "traces": "samples/traces/rebook_pass.json",
            "working-directory": "work",
        },
    )
    assert run.status == 0, run.err
    assert run.outputs["json-report"] == "work/arh-reports/report.json"
    assert (workspace.parent / run.outputs["json-report"]).is_file()


def _sarif_uris(text: str) -> set[str]:
    return set(re.findall(r'"uri": "([^"]+)"', text)) - {"stdin"}


@needs_bash
@pytest.mark.parametrize("directory", ["work", "work/", "./work", "./work//"])
def test_working_directory_report_paths_are_relative_to_the_workspace(
    workspace: Path, arh: Callable[..., Run], directory: str
) -> None:
    # code scanning and the JUnit reporters read the paths in the reports from the repository
    # root: with a working directory, they used to be relative to it, and named no file
    baseline = _baseline(workspace, arh)
    absolute = (workspace / "samples/traces/more_runs.jsonl").as_posix()
    traces = (
        "samples/traces/rebook_double_rebooking.json\n"  # a file
        "docs/examples/regression/candidate-runs/\n"  # a directory
        "samples/traces/rebook_[p]rompt*.json\n"  # a glob, matched in the working directory
        f"{absolute}\n"  # an absolute path, as it is
        "samples/nothing-*.json\n"  # a glob that matches nothing
    )
    inputs = {
        "policy": POLICY,
        "traces": traces,
        "baseline": baseline,
        "fail-on": "failures",
        "output-dir": "out/",
        "working-directory": directory,
    }
    run = run_action(workspace.parent, inputs)
    # the gate fails (fail-on failures) and a glob matched nothing: the input error wins
    assert run.status == 3, run.err
    for name, file in REPORTS.items():
        assert run.outputs[name] == f"work/out/{file}", name
    assert run.err == "error: work/samples/nothing-*.json: no such file or directory\n"
    sarif = _read(run, "sarif-report")
    assert _sarif_uris(sarif) == {
        "work/samples/traces/rebook_double_rebooking.json",
        "work/samples/traces/rebook_prompt_injection.json",
        "work/docs/examples/regression/candidate-runs/rebook_1001.json",
        "work/docs/examples/regression/candidate-runs/rebook_1004.json",
        "file://" + ("" if absolute.startswith("/") else "/") + absolute,
    }
    for uri in _sarif_uris(sarif):
        if not uri.startswith("file:"):
            assert (workspace.parent / uri).is_file(), uri
    junit_files = set(re.findall(r' file="([^"]+)"', _read(run, "junit-report")))
    assert "work/samples/traces/rebook_double_rebooking.json" in junit_files
    assert absolute in junit_files
    # the same reports as arh run from the workspace with the paths prefixed
    reference = _arh_in(
        workspace.parent, arh, "validate", "--policy", "work/" + POLICY,
        "work/samples/traces/rebook_double_rebooking.json",
        "work/docs/examples/regression/candidate-runs/",
        "work/samples/traces/rebook_prompt_injection.json", absolute,
        "work/samples/nothing-*.json", "--sarif-out", "ref.sarif", "--quiet",
    )  # fmt: skip
    assert reference.status == 3
    assert sarif == (workspace.parent / "ref.sarif").read_text("utf-8")


@needs_bash
def test_working_directory_with_glob_characters_in_its_name(workspace: Path) -> None:
    odd = workspace.parent / "evals [1]"  # a glob character Windows allows in a name
    shutil.copytree(workspace / "samples", odd / "samples")
    traces = "samples/traces/rebook_pa*.json\nsamples/traces/rebook_double_rebooking.json"
    inputs = {"policy": POLICY, "traces": traces, "working-directory": odd.name}
    run = run_action(workspace.parent, inputs)
    assert run.status == 1, run.err
    assert run.err == ""
    assert run.outputs["sarif-report"] == f"{odd.name}/arh-reports/report.sarif"
    assert _sarif_uris(_read(run, "sarif-report")) == {
        "evals%20%5B1%5D/samples/traces/rebook_double_rebooking.json"
    }
    assert '"source_path": "evals [1]/samples/traces/rebook_pass.json"' in _read(run, "json-report")


@needs_bash
def test_a_missing_working_directory_is_a_usage_error(workspace: Path) -> None:
    inputs = {"policy": POLICY, "traces": "samples/traces/", "working-directory": "nowhere"}
    run = run_action(workspace, inputs)
    assert run.status == 2
    # the script's own message, not bash's
    assert run.err == "arh action: error: the working directory 'nowhere' does not exist\n"
    assert run.outputs == USAGE_ERROR_OUTPUTS
    assert run.summary == USAGE_ERROR_SUMMARY


@needs_bash
@pytest.mark.parametrize(
    ("output_dir", "shown"),
    [("out/", "out"), ("out//", "out"), ("./out/", "out"), (".", "."), ("./", ".")],
)
def test_output_dir_paths_are_normalised(workspace: Path, output_dir: str, shown: str) -> None:
    inputs = {"policy": POLICY, "traces": "samples/traces/rebook_pass.json"}
    run = run_action(workspace, {**inputs, "output-dir": output_dir})
    assert run.status == 0, run.err
    assert run.outputs["json-report"] == f"{shown}/report.json"
    assert (workspace / shown / "report.json").is_file()


@needs_bash
@pytest.mark.skipif(os.name == "nt", reason="the wrapper is a bash script")
def test_the_script_runs_the_arh_these_tests_import(workspace: Path) -> None:
    log = workspace.parent / "imported.log"
    wrapper = workspace.parent / "which-arh"
    wrapper.write_text(
        "#!/usr/bin/env bash\n"
        '"$REAL_PYTHON" -c "import agent_reliability_harness as a; print(a.__file__)"'
        ' >> "$STUB_LOG"\n'
        'exec "$REAL_PYTHON" "$@"\n',
        encoding="utf-8",
    )
    wrapper.chmod(0o755)
    inputs = {"policy": POLICY, "traces": "samples/traces/rebook_pass.json"}
    environ = {"REAL_PYTHON": sys.executable, "STUB_LOG": str(log)}
    run = run_action(workspace, inputs, ARH_ACTION_PYTHON=str(wrapper), **environ)
    assert run.status == 0, run.err
    imported = {Path(line).resolve().parent for line in log.read_text("utf-8").splitlines()}
    assert imported == {PACKAGE_DIR}


@needs_bash
def test_stale_reports_are_not_published(workspace: Path) -> None:
    inputs = {"policy": POLICY, "traces": "samples/traces/rebook_pass.json"}
    assert run_action(workspace, inputs).status == 0
    inputs["policy"] = "missing.json"
    run = run_action(workspace, inputs)
    assert (run.status, run.outputs["verdict"]) == (2, "error")  # the policy: configuration
    assert all(run.outputs[name] == "" for name in REPORTS)
    assert not (workspace / "arh-reports" / "report.json").exists()
    assert run.summary == (
        "arh exited with status 2 before writing a report; the job log says why.\n"
    )


@needs_bash
def test_workflow_commands_are_off_while_arh_prints(workspace: Path) -> None:
    run = run_action(workspace, {"policy": POLICY, "traces": "samples/traces/"})
    lines = run.out.splitlines()
    start = [i for i, line in enumerate(lines) if line.startswith("::stop-commands::")]
    assert len(start) == 1
    token = lines[start[0]].split("::")[2]
    assert re.fullmatch(r"[0-9a-f]{32}", token), token
    end = lines.index(f"::{token}::")
    printed = [i for i, line in enumerate(lines) if line.startswith(("PASS", "FAIL"))]
    assert printed
    assert all(start[0] < i < end for i in printed)


@needs_bash
def test_without_output_files(workspace: Path) -> None:
    run = run_action(
        workspace,
        {"policy": POLICY, "traces": "samples/traces/rebook_pass.json"},
        GITHUB_OUTPUT="",
        GITHUB_STEP_SUMMARY="",
    )
    assert run.status == 0, run.err
    assert run.outputs == {}
    assert run.summary == ""


# -- installing ----------------------------------------------------------------------------------

_STUB = """#!/usr/bin/env bash
# stands in for the Python that creates the virtualenv
echo "bootstrap $*" >> "$STUB_LOG"
if [ "$1" = -I ] && [ "$2" = -m ] && [ "$3" = venv ]; then
    mkdir -p "$4/bin"
    cat > "$4/bin/python" <<'EOF'
#!/usr/bin/env bash
echo "venv-python $*" >> "$STUB_LOG"
if [ "$1" = -I ] && [ "$2" = -m ] && [ "$3" = pip ]; then exit "${STUB_PIP_STATUS:-0}"; fi
exec "$REAL_PYTHON" "$@"
EOF
    chmod +x "$4/bin/python"
    exit 0
fi
exit 9
"""


def install_with_stub(
    workspace: Path,
    inputs: dict[str, str] | None = None,
    status: int | None = None,
    **env: str,
) -> list[str]:
    """Run the action's install path with a stub for the Python that creates the virtualenv (it
    makes a virtualenv whose python logs pip calls and runs everything else with this Python);
    return the logged calls. ``status`` is the exit status expected (default: the stub pip's)."""
    stub = workspace.parent / "stub-python"
    stub.write_text(_STUB, encoding="utf-8")
    stub.chmod(0o755)
    log = workspace.parent / "stub.log"
    log.unlink(missing_ok=True)
    environ = {
        "ARH_ACTION_BOOTSTRAP_PYTHON": str(stub),
        "STUB_LOG": str(log),
        "REAL_PYTHON": sys.executable,
        **env,
    }
    if inputs is None:
        inputs = {"policy": POLICY, "traces": "samples/traces/rebook_pass.json"}
    run = run_action(workspace, inputs, install=True, **environ)
    calls = log.read_text(encoding="utf-8").splitlines()
    expected = int(env.get("STUB_PIP_STATUS", "0")) if status is None else status
    assert run.status == expected, run.out + run.err
    return calls


@needs_bash
@pytest.mark.skipif(os.name == "nt", reason="the stub is a bash script")
def test_install_path(workspace: Path) -> None:
    calls = install_with_stub(workspace)
    venv = workspace.parent / "runner-temp" / "arh-venv"
    assert calls[0] == f"bootstrap -I -m venv {venv}"
    pip = f"venv-python -I -m pip install --disable-pip-version-check --no-input --quiet {ROOT}"
    assert calls[1] == pip
    assert calls[2].startswith("venv-python -P -m agent_reliability_harness validate")
    assert len(calls) == 3
    # a second use in the same job keeps the virtualenv and installs again
    assert install_with_stub(workspace) == [pip, calls[2]]
    # a failing install stops the step with pip's status (3 here), before arh runs
    assert install_with_stub(workspace, STUB_PIP_STATUS="3") == [pip]


@needs_bash
def test_install_needs_runner_temp(workspace: Path) -> None:
    inputs = {"policy": POLICY, "traces": "samples/traces/"}
    run = run_action(workspace, inputs, install=True, RUNNER_TEMP="")
    assert run.status == 2
    assert "RUNNER_TEMP is not set" in run.err


@needs_bash
@pytest.mark.skipif(shutil.which("false") is None, reason="no false command")
def test_a_failed_install_writes_the_outputs_and_a_summary(workspace: Path) -> None:
    false = shutil.which("false")
    assert false is not None
    inputs = {"policy": POLICY, "traces": "samples/traces/"}
    run = run_action(workspace, inputs, install=True, ARH_ACTION_BOOTSTRAP_PYTHON=false)
    assert run.status == 1
    assert run.outputs == {**USAGE_ERROR_OUTPUTS, "exit-code": "1"}
    assert run.summary == (
        "arh action: installing arh failed (exit status 1); the job log says why.\n"
    )


# -- static checks of the script -----------------------------------------------------------------

# Constructs that bash 3.2 (macOS) lacks, or that break there under `set -u`.
_BASH4 = {
    "mapfile": r"\bmapfile\b",
    "readarray": r"\breadarray\b",
    "associative arrays": r"\bdeclare\s+-[a-zA-Z]*A",
    "namerefs": r"\b(declare|local)\s+-[a-zA-Z]*n\b",
    "case conversion": r"\$\{[^}]*(,,|\^\^)",
    "arrays (empty ones fail under set -u before bash 4.4)": r"\[@\]|\w+=\(",
    "&>>": r"&>>",
    "|&": r"\|&",
    "coproc": r"\bcoproc\b",
    "${var@op}": r"\$\{[^}]*@[QEPAaUuLK]\}",
    ";& and ;;&": r";;&|;&",
}


def test_script_avoids_bash4_features() -> None:
    code = "\n".join(
        line.split(" #", 1)[0]
        for line in SCRIPT.read_text(encoding="utf-8").splitlines()
        if not line.lstrip().startswith("#")
    )
    for what, pattern in _BASH4.items():
        assert not re.search(pattern, code), f"action/run.sh uses {what}"


def test_checker_catches_a_bash4_feature() -> None:
    # the patterns above do match what they are meant to catch
    samples = {
        "mapfile": "mapfile -t lines < f",
        "case conversion": "x=${name,,}",
        "arrays (empty ones fail under set -u before bash 4.4)": 'args=(a b); "${args[@]}"',
        "associative arrays": "declare -A map",
    }
    for what, code in samples.items():
        assert re.search(_BASH4[what], code), what


def _shellcheck() -> str | None:
    local = Path(sys.executable).parent / ("shellcheck.exe" if os.name == "nt" else "shellcheck")
    return str(local) if local.exists() else shutil.which("shellcheck")


@pytest.mark.skipif(_shellcheck() is None, reason="shellcheck is not installed (dev extra)")
def test_shellcheck_is_clean() -> None:
    shellcheck = _shellcheck()
    assert shellcheck is not None
    done = subprocess.run(
        [shellcheck, "--shell=bash", "--severity=style", str(SCRIPT), str(ROOT / ".ci" / "run")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


# -- action.yml ----------------------------------------------------------------------------------


def _load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _env_name(input_name: str) -> str:
    return "ARH_INPUT_" + input_name.upper().replace("-", "_")


def test_action_inputs_and_outputs() -> None:
    action = _load_yaml(ACTION)
    assert set(action["inputs"]) == {
        "policy",
        "traces",
        "baseline",
        "fail-on",
        "max-score-drop",
        "any-step",
        "fail-under",
        "format",
        "output-dir",
        "python-version",
        "working-directory",
    }
    assert action["inputs"]["policy"]["required"] is True
    assert action["inputs"]["traces"]["required"] is True
    assert set(action["outputs"]) == {"verdict", "exit-code", *REPORTS}
    for name, output in action["outputs"].items():
        assert output["value"] == f"${{{{ steps.arh.outputs.{name} }}}}", name
    assert action["runs"]["using"] == "composite"


@needs_bash
def test_script_writes_exactly_the_declared_outputs(workspace: Path) -> None:
    declared = set(_load_yaml(ACTION)["outputs"])
    run = run_action(workspace, {"policy": POLICY, "traces": "samples/traces/rebook_pass.json"})
    assert set(run.outputs) == declared


def test_no_input_is_expanded_into_a_script() -> None:
    action = _load_yaml(ACTION)
    steps = action["runs"]["steps"]
    script_steps = [s for s in steps if "run" in s]
    assert len(script_steps) == 1
    step = script_steps[0]
    assert step["id"] == "arh"
    assert step["shell"] == "bash"
    assert "${{" not in step["run"], "expressions in run: are spliced into the script as code"
    assert step["run"] == 'bash "$GITHUB_ACTION_PATH/action/run.sh"'
    env = step["env"]
    for name in action["inputs"]:
        if name == "python-version":
            continue  # used by the setup-python step, not by the script
        assert env[_env_name(name)] == f"${{{{ inputs.{name} }}}}", name
    # every variable the script reads is one the step sets, and the other way round
    read = set(re.findall(r"\bARH_INPUT_[A-Z_]+", SCRIPT.read_text(encoding="utf-8")))
    assert read == {k for k in env if k.startswith("ARH_INPUT_")}
    # the only expression that is not an input is the setup-python step's output
    assert env["ARH_ACTION_BOOTSTRAP_PYTHON"] == "${{ steps.python.outputs.python-path }}"
    setup = next(s for s in steps if s.get("id") == "python")
    assert setup["uses"].startswith("actions/setup-python@")
    assert setup["with"]["update-environment"] is False  # leave the job's Python alone


def test_action_yml_mentions_no_secrets() -> None:
    text = ACTION.read_text(encoding="utf-8") + SCRIPT.read_text(encoding="utf-8")
    assert "secrets." not in text
    assert "GITHUB_TOKEN" not in text
    assert "github.token" not in text


# -- the documentation of the action -------------------------------------------------------------

CI_DOC = ROOT / "docs" / "ci.md"


def _collapsed(path: Path) -> str:
    return " ".join(path.read_text(encoding="utf-8").split())


def _steps_with_permissions(
    document: Any, permissions: dict[str, str] | None = None
) -> list[tuple[dict[str, Any], dict[str, str] | None]]:
    """Every step that uses an action, with the permissions of its job (or workflow)."""
    found: list[tuple[dict[str, Any], dict[str, str] | None]] = []
    if isinstance(document, dict):
        if isinstance(document.get("permissions"), dict):
            permissions = document["permissions"]
        if isinstance(document.get("uses"), str):
            found.append((document, permissions))
        for value in document.values():
            found.extend(_steps_with_permissions(value, permissions))
    elif isinstance(document, list):
        for value in document:
            found.extend(_steps_with_permissions(value, permissions))
    return found


def _documented_steps() -> list[tuple[dict[str, Any], dict[str, str] | None]]:
    return [
        found
        for path in _docs_with_yaml()
        for block in _yaml_blocks(path)
        for found in _steps_with_permissions(yaml.safe_load(block))
    ]


def test_documented_sarif_uploads_set_no_category() -> None:
    # arh's SARIF always has automationDetails.id, and codeql-action fills it from `category`
    # only when it is missing: a category in the docs would look like it separates uploads
    uploads = [
        step
        for step, _ in _documented_steps()
        if step["uses"].startswith("github/codeql-action/upload-sarif@")
    ]
    assert len(uploads) >= 2
    for step in uploads:
        assert "category" not in step.get("with", {}), step
    doc = _collapsed(CI_DOC)
    assert "`category` input does not change it" in doc
    assert "what separates two uploads of arh results is their policy id alone" in doc


def test_documented_publishing_steps_have_the_permissions_they_need() -> None:
    needs = {
        "mikepenz/action-junit-report@": "checks",
        "github/codeql-action/upload-sarif@": "security-events",
    }
    checked = set()
    for step, permissions in _documented_steps():
        for action, permission in needs.items():
            if step["uses"].startswith(action):
                assert permissions is not None, f"{step['uses']} without permissions"
                assert permissions.get(permission) == "write", (step["uses"], permissions)
                checked.add(action)
    assert checked == set(needs)
    doc = _collapsed(CI_DOC)
    assert "the JUnit reporter `checks: write`" in doc
    assert "the SARIF upload `security-events: write`" in doc


def _options(text: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])--[a-z][a-z-]*[a-z]", text))


def test_docs_name_every_option_the_action_does_not_pass(arh: Callable[..., Run]) -> None:
    code = "\n".join(
        line
        for line in SCRIPT.read_text(encoding="utf-8").splitlines()
        if not line.lstrip().startswith("#") and "pip install" not in line
    )
    passed = _options(code)
    assert {"--policy", "--json-out", "--candidate", "--any-step"} <= passed
    offered = set()
    for command in ("validate", "compare"):
        run = arh(command, "--help")
        assert run.status == 0
        offered |= _options(run.out)
    # --candidate-json-out saves what the action's --json-out already wrote
    missing = offered - passed - {"--help", "--candidate-json-out"}
    assert {"--messages-at", "--trace-id-at", "--html-out", "--jobs", "--gate"} <= missing
    doc = CI_DOC.read_text(encoding="utf-8")
    section = doc.split("### Options the action does not expose", 1)[1].split("\n## ", 1)[0]
    assert not {option for option in missing if f"`{option}`" not in section}
    assert "runs arh itself" in section
    assert "arh validate --policy" in section


@needs_bash
def test_sarif_results_without_a_line_are_documented(workspace: Path) -> None:
    def locations(inputs: dict[str, str]) -> list[dict[str, Any]]:
        run = run_action(workspace, inputs)
        assert run.status == 1, run.err
        sarif = json.loads(_read(run, "sarif-report"))
        results = sarif["runs"][0]["results"]
        assert results
        return [result["locations"][0] for result in results]

    # a transcript read from a whole file: no line of a step
    transcript = locations(
        {
            "policy": "docs/examples/adapters/policy_refund.json",
            "traces": "docs/examples/regression/reruns/tuesday/refund_ord9.json",
        }
    )
    assert all("region" not in where["physicalLocation"] for where in transcript)
    # a canonical trace: its steps' findings have their line, a finding about the whole trace not
    canonical = locations(
        {"policy": POLICY, "traces": "samples/traces/rebook_ignored_tool_error.json"}
    )
    kinds = {
        where["logicalLocations"][0]["kind"]: "region" in where["physicalLocation"]
        for where in canonical
    }
    assert kinds == {"module": False, "member": True}
    doc = _collapsed(CI_DOC)
    assert "A result has no `region` (no line;" in doc
    assert "for a transcript read from a file that holds one document" in doc
    assert "for a finding about the whole trace" in doc


def test_script_header_lists_every_input_variable() -> None:
    text = SCRIPT.read_text(encoding="utf-8")
    header = text.split("\nset -u", 1)[0]
    read = set(re.findall(r"\bARH_INPUT_[A-Z_]+", text))
    assert "ARH_INPUT_ANY_STEP" in read
    assert read == set(re.findall(r"\bARH_INPUT_[A-Z_]+", header))


def test_readme_says_what_ci_runs() -> None:
    # .github/workflows/ci.yml runs `make test` (test_ci_matrix_runs_make_test), not .ci/run
    readme = _collapsed(ROOT / "README.md")
    assert "CI runs `.ci/run`" not in readme
    assert "CI ([.github/workflows/ci.yml](.github/workflows/ci.yml)) runs `make test`" in readme


# -- pre-commit ----------------------------------------------------------------------------------


def test_pre_commit_hook() -> None:
    hooks = _load_yaml(ROOT / ".pre-commit-hooks.yaml")
    by_id = {hook["id"]: hook for hook in hooks}
    hook = by_id["arh-validate"]
    assert hook["entry"] == "arh validate"
    assert hook["language"] == "python"
    # the policy and traces come from `args`; the changed files are not passed (a policy or an
    # unrelated JSON file would otherwise be validated as a trace)
    assert hook["pass_filenames"] is False
    assert re.search(hook["files"], "traces/run.jsonl")
    assert not re.search(hook["files"], "src/module.py")


def _yaml_blocks(path: Path) -> list[str]:
    blocks = re.findall(
        r"^```yaml\n(.*?)^```", path.read_text(encoding="utf-8"), re.MULTILINE | re.DOTALL
    )
    return [str(block) for block in blocks]


def _docs_with_yaml() -> list[Path]:
    return sorted(
        path
        for path in [ROOT / "README.md", *ROOT.glob("docs/*.md"), *ROOT.glob("*.md")]
        if path.exists() and "```yaml" in path.read_text(encoding="utf-8")
    )


def test_documented_pre_commit_config_runs(tmp_path: Path, arh: Callable[..., Run]) -> None:
    configs = [
        yaml.safe_load(block)
        for path in _docs_with_yaml()
        for block in _yaml_blocks(path)
        if "\nrepos:" in "\n" + block
    ]
    assert configs, "no .pre-commit-config.yaml example in the docs"
    hooks = {hook["id"]: hook for hook in _load_yaml(ROOT / ".pre-commit-hooks.yaml")}
    shutil.copytree(ROOT / "samples", tmp_path / "samples")
    for config in configs:
        for repo in config["repos"]:
            assert repo["repo"] == PROJECT_URL
            assert repo["rev"] == f"v{__version__}"
            for used in repo["hooks"]:
                hook = hooks[used["id"]]
                argv = [*hook["entry"].split()[1:], *used.get("args", [])]
                run = _arh_in(tmp_path, arh, *argv)
                assert run.status in (0, 1), f"{argv}: {run.err}"
                assert "usage:" not in run.err


# -- uses of the action in the docs and workflows ------------------------------------------------

ACTION_REF = "/".join(PROJECT_URL.split("/")[-2:]) + f"@v{__version__}"


def _steps_using_action(document: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    if isinstance(document, dict):
        uses = document.get("uses")
        if isinstance(uses, str) and (uses == "./" or "agent-reliability-harness@" in uses):
            found.append(document)
        for value in document.values():
            found.extend(_steps_using_action(value))
    elif isinstance(document, list):
        for value in document:
            found.extend(_steps_using_action(value))
    return found


def _check_uses(document: Any, where: str, action: dict[str, Any]) -> int:
    text = yaml.safe_dump(document)
    steps = _steps_using_action(document)
    for step in steps:
        if step["uses"] != "./":
            assert step["uses"] == ACTION_REF, f"{where}: {step['uses']}"
        unknown = set(step.get("with", {})) - set(action["inputs"])
        assert not unknown, f"{where}: unknown inputs {unknown}"
        assert {"policy", "traces"} <= set(step.get("with", {})), where
    for name in re.findall(r"steps\.[\w-]+\.outputs\.([\w-]+)", text):
        assert name in action["outputs"], f"{where}: unknown output {name}"
    return len(steps)


def test_documented_uses_of_the_action_match_action_yml() -> None:
    action = _load_yaml(ACTION)
    count = 0
    for path in _docs_with_yaml():
        for block in _yaml_blocks(path):
            if "agent-reliability-harness@" in block:
                count += _check_uses(yaml.safe_load(block), path.name, action)
    assert count >= 2, "the docs should show the action validate-only and with a baseline"


# -- workflows -----------------------------------------------------------------------------------

WORKFLOWS = ROOT / ".github" / "workflows"


def _workflow(name: str) -> dict[str, Any]:
    data: dict[str, Any] = _load_yaml(WORKFLOWS / name)
    # YAML 1.1 reads the key `on` as the boolean true
    if True in data:
        data["on"] = data.pop(True)  # type: ignore[call-overload]
    return data


def _run_scripts(workflow: dict[str, Any]) -> list[str]:
    return [
        step["run"]
        for job in workflow["jobs"].values()
        for step in job.get("steps", [])
        if "run" in step
    ]


def test_workflows_parse_and_are_safe() -> None:
    files = sorted(WORKFLOWS.glob("*.yml"))
    assert {f.name for f in files} >= {"ci.yml", "release.yml"}
    for path in files:
        workflow = _workflow(path.name)
        assert "pull_request_target" not in workflow["on"], path.name
        assert workflow["permissions"] == {"contents": "read"}, path.name
        for script in _run_scripts(workflow):
            # values reach scripts through env:, never as spliced expressions
            assert "${{" not in script, f"{path.name}: {script}"
        assert "secrets." not in path.read_text(encoding="utf-8"), path.name


def test_ci_matrix_runs_make_test() -> None:
    ci = _workflow("ci.yml")
    test = ci["jobs"]["test"]
    matrix = test["strategy"]["matrix"]
    assert set(matrix["os"]) == {"ubuntu-latest", "macos-latest", "windows-latest"}
    assert [str(v) for v in matrix["python-version"]] == ["3.11", "3.12", "3.13"]
    assert any("make test" in script for script in _run_scripts({"jobs": {"t": test}}))


def test_ci_uses_the_action_from_the_repository() -> None:
    action = _load_yaml(ACTION)
    ci = _workflow("ci.yml")
    steps = _steps_using_action(ci)
    _check_uses(ci, "ci.yml", action)  # each use passes only inputs the action declares
    assert steps
    assert all(step["uses"] == "./" for step in steps)
    assert any("baseline" in step["with"] for step in steps)
    assert any("baseline" not in step["with"] for step in steps)
    # every path the action job reads exists in the repository
    for step in steps:
        inputs = step["with"]
        assert (ROOT / inputs["policy"]).is_file()
        for line in inputs["traces"].split("\n"):
            if line.strip():
                assert list(ROOT.glob(line.strip())), line


def test_release_uses_trusted_publishing() -> None:
    release = _workflow("release.yml")
    jobs = release["jobs"]
    publish = [
        job
        for job in jobs.values()
        if any(
            str(step.get("uses", "")).startswith("pypa/gh-action-pypi-publish@")
            for step in job.get("steps", [])
        )
    ]
    assert len(publish) == 1
    assert publish[0]["permissions"] == {"id-token": "write"}
    # only the publishing job may mint an identity token
    others = [job for job in jobs.values() if job is not publish[0]]
    assert all("id-token" not in job.get("permissions", {}) for job in others)
    assert "password" not in yaml.safe_dump(publish[0])
    scripts = "\n".join(_run_scripts(release))
    assert "make dist-check" in scripts
