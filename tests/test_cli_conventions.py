"""The command line's conventions that users bring from other linters: -V and -q, "did you mean"
for a mistyped command, option or choice, and --<format>-out - for standard output."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from agent_reliability_harness import __version__

from conftest import SAMPLES, Run

POLICY = SAMPLES / "policy_trajectory.json"
PASSING = SAMPLES / "traces" / "rebook_pass.json"


def test_short_options_for_version_and_quiet(arh: Callable[..., Run]) -> None:
    assert arh("-V").out == arh("--version").out == f"arh {__version__}\n"
    quiet = arh("validate", "-q", "--policy", POLICY, PASSING)
    assert (quiet.status, quiet.out) == (0, "")
    assert arh("compare", "-q", "--baseline", PASSING, "--policy", POLICY, PASSING).out == ""


@pytest.mark.parametrize(
    ("argv", "suggestion"),
    [
        (["valdate"], "invalid choice: 'valdate' "),
        (["valdate"], "(did you mean 'validate'?)"),
        (["validate", "--policy", POLICY, "--json-ot", "r.json", PASSING], "'--json-out'"),
        (["validate", "--policy", POLICY, "--json-ot=r.json", PASSING], "'--json-out'"),
        (["validate", "--policy", POLICY, "--color", "alway", PASSING], "'always'"),
        (["validate", "--policy", POLICY, "--format", "openai", PASSING], "'openai-chat'"),
        (["compare", "--baseline", PASSING, "--fail-on", "regresions"], "'regressions'"),
    ],
)
def test_a_near_miss_gets_a_suggestion(
    arh: Callable[..., Run], argv: list[str], suggestion: str
) -> None:
    run = arh(*argv)
    assert run.status == 2
    last = run.err.splitlines()[-1]
    assert suggestion in last


def test_nothing_close_gets_no_suggestion(arh: Callable[..., Run]) -> None:
    for argv in (["zzzzzz"], ["validate", "--policy", POLICY, "--qqqqqq", PASSING]):
        run = arh(*argv)
        assert run.status == 2
        assert "did you mean" not in run.err


def test_a_report_can_go_to_standard_output(arh: Callable[..., Run], tmp_path: Path) -> None:
    traces = SAMPLES / "traces"
    written = tmp_path / "report.json"
    assert arh("validate", "--policy", POLICY, traces, "--json-out", written).status == 1
    # standard output holds the report alone: no console report, no "written to" line
    run = arh(
        "validate", "--policy", POLICY, traces, "--json-out", "-", "--md-out", tmp_path / "r.md"
    )
    assert run.status == 1
    assert run.out == written.read_text(encoding="utf-8")
    assert (tmp_path / "r.md").is_file()
    # compare and stats too
    compared = arh("compare", "--baseline", written, "--candidate", written, "--json-out", "-")
    assert json.loads(compared.out)["gate"]["passed"] is True
    stats = arh("stats", written, "--md-out", "-")
    assert stats.out.startswith("#")
    # a file called - is still possible, as ./-
    assert not (tmp_path / "-").exists()


def test_only_one_report_can_go_to_standard_output(arh: Callable[..., Run]) -> None:
    run = arh("validate", "--policy", POLICY, PASSING, "--json-out", "-", "--sarif-out", "-")
    assert run.status == 2
    assert "--json-out and --sarif-out both name standard output (-)" in run.err
