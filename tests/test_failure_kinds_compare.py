"""The three kinds of failure (docs/exit-codes.md) in ``arh compare`` and ``arh stats``: each
side's (each report's) counts in the console, JSON, Markdown and HTML reports, derived for reports
written before the kinds existed, and what the gate's verdict and the pass rates leave out.

The expected counts are worked out from the samples: rebook-1001 passes and rebook-1002 fails
(README), a missing file is an evaluation error, and a trace checked out of memory (the fixture
of tests/test_failure_kinds.py) an infrastructure failure."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_reliability_harness.engine import Validator
from agent_reliability_harness.model.report import TraceReport
from test_failure_kinds import FAILING, PASSING, POLICY

from conftest import Run

Arh = Callable[..., Run]

KINDS = ("agent_failure", "evaluation_error", "infrastructure_failure")
DOT = " \u00b7 "


def _json(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _kinds(entry: dict[str, Any]) -> tuple[int, int, int]:
    a, e, i = (entry[k] for k in KINDS)
    return a, e, i


def _validate(arh: Arh, out: Path, *inputs: Path) -> None:
    arh("validate", "--policy", POLICY, *inputs, "--json-out", out, "--quiet")


def _as_0_2(report: Path) -> None:
    """Rewrite a report as arh 0.2.x wrote it: no kinds anywhere."""
    data = _json(report)
    for key in KINDS:
        del data["summary"][key]
    for entry in data["reports"]:
        del entry["failure"]
    for entry in data["input_errors"]:
        del entry["kind"]
    report.write_text(json.dumps(data), encoding="utf-8")


@pytest.mark.parametrize("old", [False, True], ids=["current", "0.2.x"])
def test_compare_shows_each_sides_kinds(arh: Arh, tmp_path: Path, old: bool) -> None:
    base, cand = tmp_path / "base.json", tmp_path / "cand.json"
    _validate(arh, base, PASSING, FAILING)  # 1 agent_failure
    _validate(arh, cand, PASSING, FAILING, tmp_path / "missing.json")  # and 1 evaluation_error
    if old:  # derived: the failing trace, and the input error without a kind
        _as_0_2(base)
        _as_0_2(cand)
    js, md, html = tmp_path / "c.json", tmp_path / "c.md", tmp_path / "c.html"
    run = arh("compare", "--baseline", base, "--candidate", cand,
              "--json-out", js, "--md-out", md, "--html-out", html)  # fmt: skip
    # the same traces with the same verdicts: the gate passes, and a saved candidate's input
    # error does not change the exit status (as before); the reports say the gate left it out
    assert run.status == 0
    data = _json(js)
    assert _kinds(data["baseline"]) == (1, 0, 0)
    assert _kinds(data["candidate"]) == (1, 1, 0)
    lines = run.out.splitlines()
    start = lines.index(f"FAILURES  baseline  1 agent_failure{DOT}0 evaluation_error{DOT}"
                        "0 infrastructure_failure")  # fmt: skip
    assert lines[start + 1 : start + 3] == [
        f"          candidate 1 agent_failure{DOT}1 evaluation_error{DOT}0 infrastructure_failure",
        "  the gate's verdict does not cover the candidate's 1 evaluation_error",
    ]
    text = md.read_text(encoding="utf-8")
    assert f"| Baseline failures | 1 agent_failure{DOT}0 evaluation_error{DOT}0 " in text
    assert f"| Candidate failures | 1 agent_failure{DOT}1 evaluation_error{DOT}0 " in text
    assert "**The gate's verdict does not cover the candidate's 1 evaluation_error.**" in text
    page = html.read_text(encoding="utf-8")
    assert ('<tr><th scope="row"><code>evaluation_error</code></th><td>0</td><td>1</td></tr>'
            in page)  # fmt: skip
    assert "The gate&#x27;s verdict does not cover the candidate&#x27;s 1 evaluation_error" in page


def test_compare_of_runs_with_failing_traces_only_keeps_its_console(
    arh: Arh, tmp_path: Path
) -> None:
    """Failing traces alone are what the comparison is about: no FAILURES block on the console
    (as arh validate's console has no failures line then), the counts in the files."""
    base, cand = tmp_path / "base.json", tmp_path / "cand.json"
    _validate(arh, base, PASSING, FAILING)
    _validate(arh, cand, FAILING)
    js, md = tmp_path / "c.json", tmp_path / "c.md"
    run = arh("compare", "--baseline", base, "--candidate", cand, "--json-out", js, "--md-out", md)
    assert "FAILURES" not in run.out
    assert "does not cover" not in run.out
    data = _json(js)
    assert _kinds(data["baseline"]) == (1, 0, 0)
    assert _kinds(data["candidate"]) == (1, 0, 0)
    assert "| Candidate failures | 1 agent_failure" in md.read_text(encoding="utf-8")


@pytest.mark.usefixtures("no_memory_for_1001")
@pytest.mark.parametrize("missing", [False, True], ids=["infrastructure", "and-input-error"])
def test_compare_validating_now_says_exit_4(arh: Arh, tmp_path: Path, missing: bool) -> None:
    base = tmp_path / "base.json"
    _validate(arh, base, FAILING)  # the baseline: rebook-1002 alone, which fails
    extra = [tmp_path / "missing.json"] if missing else []
    js, md, html = tmp_path / "c.json", tmp_path / "c.md", tmp_path / "c.html"
    run = arh("compare", "--baseline", base, "--policy", POLICY, FAILING, PASSING, *extra,
              "--json-out", js, "--md-out", md, "--html-out", html)  # fmt: skip
    assert run.status == 4  # 4 over 3 (the missing file) and over the gate, which passes
    cand = (1, 1 if missing else 0, 1)
    assert _kinds(_json(js)["candidate"]) == cand
    errors = "1 candidate infrastructure_failure" + (", 1 candidate input error" if missing else "")
    note = f"exit status 4 whatever the gate says: {errors}"
    assert f"{note} (on standard error)" in run.out.splitlines()
    text = md.read_text(encoding="utf-8")
    assert text.startswith(f"## arh regression gate: PASS, {errors}\n")
    assert f"**Exit status 4 whatever the gate says: {errors}** (listed in the run's log)." in text
    page = html.read_text(encoding="utf-8")
    assert f"<title>arh regression gate: PASS, {errors}</title>" in page
    assert f"<strong>Exit status 4 whatever the gate says: {errors}</strong>" in page


def test_compare_validating_now_with_an_input_error_says_exit_3(arh: Arh, tmp_path: Path) -> None:
    base = tmp_path / "base.json"
    _validate(arh, base, FAILING)
    run = arh("compare", "--baseline", base, "--policy", POLICY, FAILING, tmp_path / "no.json")
    assert run.status == 3
    assert (
        "exit status 3 whatever the gate says: 1 candidate input error (on standard error)"
        in run.out.splitlines()
    )


def _schema_errors(data: dict[str, Any], name: str) -> list[str]:
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource

    root = Path(__file__).resolve().parent.parent / "schemas"
    schemas = {n: _json(root / n) for n in ("stats.schema.json", "compare.schema.json")}
    registry = Registry().with_resources(
        [(n, Resource.from_contents(s)) for n, s in schemas.items()]
    )
    validator = Draft202012Validator(schemas[name], registry=registry)
    return [e.message for e in validator.iter_errors(data)]


def test_compare_json_keeps_to_its_schema(arh: Arh, tmp_path: Path) -> None:
    base, cand, js = tmp_path / "base.json", tmp_path / "cand.json", tmp_path / "c.json"
    _validate(arh, base, PASSING, FAILING)
    _validate(arh, cand, FAILING, tmp_path / "missing.json")
    arh("compare", "--baseline", base, "--candidate", cand, "--json-out", js, "--quiet")
    assert _schema_errors(_json(js), "compare.schema.json") == []


@pytest.fixture
def three_runs(arh: Arh, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Three runs of the tasks rebook-1001 and rebook-1002, by the trace ids' task key (the
    trace ids are the same in every run): run 1 complete (1001 passes, 1002 fails); run 2 with
    1001 checked out of memory (an infrastructure failure) and a missing input (an evaluation
    error); run 3 complete again."""
    runs = [tmp_path / f"run{n}.json" for n in (1, 2, 3)]
    _validate(arh, runs[0], PASSING, FAILING)
    with monkeypatch.context() as patch:
        original = Validator._validate_parsed

        def validate(self: Validator, trace: Any, **kwargs: Any) -> TraceReport:
            if trace.trace_id == "rebook-1001":
                raise MemoryError
            return original(self, trace, **kwargs)

        patch.setattr(Validator, "_validate_parsed", validate)
        _validate(arh, runs[1], PASSING, FAILING, tmp_path / "missing.json")
    _validate(arh, runs[2], PASSING, FAILING)
    return runs


def test_stats_shows_each_reports_kinds_and_leaves_out_what_was_not_checked(
    arh: Arh, tmp_path: Path, three_runs: list[Path]
) -> None:
    js, md = tmp_path / "s.json", tmp_path / "s.md"
    run = arh("stats", *three_runs, "--json-out", js, "--md-out", md)
    assert run.status == 0
    data = _json(js)
    assert _schema_errors(data, "stats.schema.json") == []
    assert [_kinds(r) for r in data["reports"]] == [(1, 0, 0), (1, 1, 1), (1, 0, 0)]
    assert data["excluded"] == {"runs": 2, "evaluation_error": 1, "infrastructure_failure": 1}
    # by hand: 1001 passed in runs 1 and 3 and was not checked in run 2; 1002 failed 3 times.
    # 5 runs, 2 passed: the run the machine could not check is not an agent failure (2 of 6)
    assert data["overall"]["runs"] == 5
    assert data["overall"]["successes"] == 2
    assert data["overall"]["pass_rate"] == 0.4
    lines = run.out.splitlines()
    r1, r2, r3 = (p.as_posix() for p in three_runs)
    start = lines.index(f"FAILURES  {r1}  1 agent_failure{DOT}0 evaluation_error{DOT}"
                        "0 infrastructure_failure")  # fmt: skip
    assert lines[start + 1 : start + 4] == [
        f"          {r2}  1 agent_failure{DOT}1 evaluation_error{DOT}1 infrastructure_failure",
        f"          {r3}  1 agent_failure{DOT}0 evaluation_error{DOT}0 infrastructure_failure",
        (
            "  left out of the pass rates: 2 runs that could not be checked (1 evaluation_error, "
            "1 infrastructure_failure)"
        ),
    ]
    text = md.read_text(encoding="utf-8")
    assert "| Report | agent_failure | evaluation_error | infrastructure_failure |" in text
    assert f"| `{r2}` | 1 | 1 | 1 |" in text
    assert (
        "Left out of the pass rates: 2 runs that could not be checked (1 evaluation_error, 1 "
        "infrastructure_failure)." in text
    )


def test_stats_of_complete_runs_stays_as_it_was(arh: Arh, tmp_path: Path) -> None:
    """Failing traces alone: no FAILURES block on the console and no ``excluded`` key; the
    reports' counts are in the JSON and the Markdown."""
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    _validate(arh, one, PASSING, FAILING)
    _validate(arh, two, PASSING, FAILING)
    js, md = tmp_path / "s.json", tmp_path / "s.md"
    run = arh("stats", one, two, "--json-out", js, "--md-out", md)
    assert "FAILURES" not in run.out
    data = _json(js)
    assert "excluded" not in data
    assert [_kinds(r) for r in data["reports"]] == [(1, 0, 0), (1, 0, 0)]
    assert f"| `{one.as_posix()}` | 1 | 0 | 0 |" in md.read_text(encoding="utf-8")
    assert "Left out of the pass rates" not in md.read_text(encoding="utf-8")


def test_stats_derives_the_kinds_of_a_0_2_report(arh: Arh, tmp_path: Path) -> None:
    report, js = tmp_path / "old.json", tmp_path / "s.json"
    _validate(arh, report, PASSING, FAILING, tmp_path / "missing.json")
    _as_0_2(report)
    arh("stats", report, "--json-out", js, "--quiet")
    data = _json(js)
    assert _kinds(data["reports"][0]) == (1, 1, 0)  # an input error without a kind: evaluation
    assert data["excluded"] == {"runs": 1, "evaluation_error": 1, "infrastructure_failure": 0}
