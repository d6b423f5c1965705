"""Runs with several reports, outputs and inputs: every bad report is told, every output that can
be written is written, outputs never overwrite each other or an input, and what the report
files say agrees with the exit status.

Each test runs ``arh`` in-process on files written to a temporary directory.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import SAMPLES, Run

Arh = Callable[..., Run]
POLICY = SAMPLES / "policy_trajectory.json"
TRACE = SAMPLES / "traces" / "rebook_pass.json"


def _report(arh: Arh, path: Path) -> Path:
    """A good validation report of one sample trace."""
    run = arh("validate", "--policy", POLICY, TRACE, "--json-out", path, "--quiet")
    assert run.status == 0, run.err
    return path


def _bad_reports(folder: Path) -> tuple[Path, Path, Path]:
    """An empty file, a JSON array and an object whose reports are not an array."""
    folder.mkdir(exist_ok=True)
    empty, array, bad = folder / "empty.json", folder / "array.json", folder / "bad.json"
    empty.write_text("", encoding="utf-8")
    array.write_text("[]", encoding="utf-8")
    bad.write_text('{"reports": 5}', encoding="utf-8")
    return empty, array, bad


# each message as the reader words it for that file alone, in the documented form
_EMPTY = "{}:1:1: invalid JSON: the document is empty"
_ARRAY = "{}: not a validation report: expected an object with a 'reports' array"
_BAD = "{}: /reports: must be an array, got number"


@pytest.mark.parametrize(
    ("command", "labels"),
    [
        ("stats", ("report", "report", "report")),
        ("compare", ("baseline", "candidate", "candidate")),
    ],
)
def test_every_bad_report_is_told(
    arh: Arh, tmp_path: Path, command: str, labels: tuple[str, ...]
) -> None:
    # stats, and compare on both sides, stopped at the first bad report
    good = _report(arh, tmp_path / "good.json")
    empty, array, bad = _bad_reports(tmp_path)
    if command == "stats":
        run = arh("stats", good, empty, array, bad)
    else:
        run = arh("compare", "--baseline", good, empty, "--candidate", array, bad)
    assert run.status == 3  # input errors
    assert run.out == ""
    lines = run.err.splitlines()
    assert len(lines) == 3, run.err
    first, second, third = (f"error: invalid {label}: " for label in labels)
    assert lines[0] == first + _EMPTY.format(empty)
    assert lines[1].startswith(second + _ARRAY.format(array))
    assert lines[2] == third + _BAD.format(bad)


def test_a_bad_gate_file_does_not_hide_a_bad_report(arh: Arh, tmp_path: Path) -> None:
    empty, _, _ = _bad_reports(tmp_path)
    gates = tmp_path / "missing.toml"
    run = arh("stats", empty, "--gates", gates)
    assert run.status == 2  # the gate file, a configuration error, wins over the bad report (3)
    lines = run.err.splitlines()
    assert len(lines) == 2, run.err
    assert lines[0].startswith(f"error: invalid gate file: {gates}: cannot read")
    assert lines[1] == "error: invalid report: " + _EMPTY.format(empty)


def _unwritable(folder: Path, name: str) -> Path:
    """An output path that is an existing directory: it cannot be written."""
    path = folder / name
    path.mkdir(parents=True)
    return path


def test_validate_writes_every_report_it_can(arh: Arh, tmp_path: Path) -> None:
    clean = tmp_path / "clean"
    outputs = ("--md-out", "r.md"), ("--sarif-out", "r.sarif"), ("--html-out", "r.html")
    run = arh(
        "validate", "--policy", POLICY, TRACE, "--quiet", "--json-out", clean / "r.json",
        "--junit-out", clean / "r.xml", *[a for o, n in outputs for a in (o, clean / n)],
    )  # fmt: skip
    assert run.status == 0
    out = tmp_path / "out"
    json_dir, junit_dir = _unwritable(out, "json"), _unwritable(out, "junit")
    run = arh(
        "validate", "--policy", POLICY, TRACE, "--quiet", "--json-out", json_dir,
        "--junit-out", junit_dir, *[a for o, n in outputs for a in (o, out / n)],
    )  # fmt: skip
    assert run.status == 3  # reports not written: the run's output is incomplete
    assert run.err == (
        f"error: cannot write {json_dir}: Is a directory\n"
        f"error: cannot write {junit_dir}: Is a directory\n"
    )
    for _, name in outputs:  # the first output failed, yet the later ones are all there
        assert (out / name).read_bytes() == (clean / name).read_bytes(), name


def test_compare_writes_every_report_it_can(arh: Arh, tmp_path: Path) -> None:
    base = _report(arh, tmp_path / "base.json")
    clean = tmp_path / "clean"
    outputs = ("--md-out", "c.md"), ("--html-out", "c.html")
    run = arh(
        "compare", "--baseline", base, "--policy", POLICY, TRACE, "--quiet",
        "--candidate-json-out", clean / "cand.json", "--json-out", clean / "c.json",
        *[a for o, n in outputs for a in (o, clean / n)],
    )  # fmt: skip
    assert run.status == 0
    out = tmp_path / "out"
    cand_dir, json_dir = _unwritable(out, "cand"), _unwritable(out, "json")
    run = arh(
        "compare", "--baseline", base, "--policy", POLICY, TRACE, "--quiet",
        "--candidate-json-out", cand_dir, "--json-out", json_dir,
        *[a for o, n in outputs for a in (o, out / n)],
    )  # fmt: skip
    assert run.status == 3
    assert run.err == (
        f"error: cannot write {cand_dir}: Is a directory\n"
        f"error: cannot write {json_dir}: Is a directory\n"
    )
    for _, name in outputs:
        assert (out / name).read_bytes() == (clean / name).read_bytes(), name


def test_stats_writes_every_report_it_can(arh: Arh, tmp_path: Path) -> None:
    report = _report(arh, tmp_path / "r.json")
    clean = tmp_path / "clean.md"
    assert arh("stats", report, "--quiet", "--md-out", clean).status == 0
    json_dir = _unwritable(tmp_path, "json")
    run = arh("stats", report, "--json-out", json_dir, "--md-out", tmp_path / "s.md")
    assert run.status == 3
    assert run.err == f"error: cannot write {json_dir}: Is a directory\n"
    assert f"Statistics Markdown written to {tmp_path / 's.md'}" in run.out
    assert (tmp_path / "s.md").read_bytes() == clean.read_bytes()


def _usage_error(run: Run, command: str, message: str) -> None:
    assert run.status == 2
    assert run.out == ""
    assert run.err.startswith(f"usage: arh {command}")
    assert run.err.endswith(f"arh {command}: error: {message}\n")


def test_two_reports_in_one_file_are_a_usage_error(
    arh: Arh, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    run = arh(
        "validate", "--policy", POLICY, TRACE, "--json-out", "same.out", "--md-out", "same.out"
    )
    _usage_error(
        run, "validate",
        "--json-out and --md-out name the same file, same.out: each report needs a file of its own",
    )  # fmt: skip
    assert not (tmp_path / "same.out").exists()  # nothing written
    # spelt differently, the same file: ./same.out and an absolute path
    run = arh("stats", "x.json", "--json-out", "./s.out", "--md-out", tmp_path / "s.out")
    _usage_error(
        run, "stats",
        f"--json-out and --md-out name the same file, {tmp_path / 's.out'}: each report needs a "
        "file of its own",
    )  # fmt: skip


def test_a_report_over_an_input_is_a_usage_error(
    arh: Arh, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    policy, trace = tmp_path / "mypol.json", tmp_path / "mytrace.json"
    policy.write_bytes(POLICY.read_bytes())
    trace.write_bytes(TRACE.read_bytes())
    run = arh(
        "validate", "--policy", "mypol.json", "mytrace.json", "--md-out", "./mytrace.json",
        "--html-out", "mypol.json",
    )  # fmt: skip
    # the outputs are checked against the policy first, then the traces
    message = "--html-out and --policy name the same file, mypol.json: a report must not "
    _usage_error(run, "validate", message + "overwrite an input")
    run = arh("validate", "--policy", "mypol.json", "mytrace.json", "--md-out", "./mytrace.json")
    message = "--md-out and TRACE name the same file, ./mytrace.json: a report must not "
    _usage_error(run, "validate", message + "overwrite an input")
    (tmp_path / "link.json").symlink_to(trace)  # a link to the trace is the trace
    run = arh("validate", "--policy", "mypol.json", "mytrace.json", "--json-out", "link.json")
    message = "--json-out and TRACE name the same file, link.json: a report must not "
    _usage_error(run, "validate", message + "overwrite an input")
    assert policy.read_bytes() == POLICY.read_bytes()
    assert trace.read_bytes() == TRACE.read_bytes()

    base = _report(arh, tmp_path / "base.json")
    before = base.read_bytes()
    run = arh(
        "compare", "--baseline", "base.json", "--policy", "mypol.json", "mytrace.json",
        "--candidate-json-out", "base.json",
    )  # fmt: skip
    message = "--candidate-json-out and --baseline name the same file, base.json: a report "
    _usage_error(run, "compare", message + "must not overwrite an input")
    run = arh("compare", "--baseline", base, "--candidate", base, "--md-out", base)
    message = f"--md-out and --baseline name the same file, {base}: a report must not "
    _usage_error(run, "compare", message + "overwrite an input")
    # not arh.toml: in the current directory, that is the configuration file
    (tmp_path / "gates.toml").write_text('[gates]\n"pass rate" = ">= 0.5"\n', encoding="utf-8")
    run = arh("compare", "--baseline", base, "--candidate", base, "--json-out", "gates.toml",
              "--gates", "gates.toml")  # fmt: skip
    message = "--json-out and --gates name the same file, gates.toml: a report must not "
    _usage_error(run, "compare", message + "overwrite an input")
    run = arh("stats", "base.json", "--md-out", "base.json")
    message = "--md-out and REPORT name the same file, base.json: a report must not "
    _usage_error(run, "stats", message + "overwrite an input")
    assert base.read_bytes() == before
    run = arh("convert", "mytrace.json", "-o", "mytrace.json")
    message = "-o/--output and INPUT name the same file, mytrace.json: a report must not "
    _usage_error(run, "convert", message + "overwrite an input")
    assert trace.read_bytes() == TRACE.read_bytes()


def test_standard_input_is_not_a_file_named_dash(
    arh: Arh, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A trace input '-' is standard input; an output '-' is standard output, and a file named
    # '-' is written as ./-
    monkeypatch.chdir(tmp_path)
    run = arh("validate", "--policy", POLICY, "-", "--json-out", "-", stdin=TRACE.read_bytes())
    assert run.status == 0, run.err
    assert json.loads(run.out)["summary"]["passed_traces"] == 1
    assert not (tmp_path / "-").exists()
    run = arh("validate", "--policy", POLICY, "-", "--json-out", "./-", "--quiet",
              stdin=TRACE.read_bytes())  # fmt: skip
    assert run.status == 0, run.err
    assert json.loads((tmp_path / "-").read_text(encoding="utf-8"))["summary"]["passed_traces"] == 1


def test_compare_reports_say_what_the_exit_status_says(arh: Arh, tmp_path: Path) -> None:
    base = _report(arh, tmp_path / "base.json")
    md, html = tmp_path / "c.md", tmp_path / "c.html"
    # the candidate is the baseline's trace again (the gate passes) and a path that is missing
    run = arh("compare", "--baseline", base, "--policy", POLICY, TRACE, tmp_path / "nope.json",
              "--md-out", md, "--html-out", html)  # fmt: skip
    assert run.status == 3  # an input error, whatever the gate says
    assert "GATE: PASS" in run.out
    note = "exit status 3 whatever the gate says: 1 candidate input error"
    assert f"{note} (on standard error)" in run.out
    lines = md.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "## arh regression gate: PASS, 1 candidate input error"
    assert lines[4] == f"**E{note[1:]}** (listed in the run's log)."
    page = html.read_text(encoding="utf-8")
    assert "<h1>arh regression gate: PASS, 1 candidate input error</h1>" in page
    assert "<title>arh regression gate: PASS, 1 candidate input error</title>" in page
    assert f"E{note[1:]}" in page
    # without the missing path, nothing of the kind
    run = arh("compare", "--baseline", base, "--policy", POLICY, TRACE, "--md-out", md,
              "--html-out", html)  # fmt: skip
    assert run.status == 0
    text = md.read_text(encoding="utf-8")
    assert text.startswith("## arh regression gate: PASS\n")
    assert "whatever the gate says" not in text
    assert "whatever the gate says" not in html.read_text(encoding="utf-8")


def _empty_report(path: Path) -> Path:
    """A report of a run that checked no trace (as validation writes one), by hand."""
    path.write_text(
        '{"schema_version": "1", "summary": {"total_traces": 0, "passed_traces": 0, '
        '"failed_traces": 0, "average_score": 0.0, "input_errors": 0}, "reports": []}',
        encoding="utf-8",
    )
    return path


def test_statistical_gates_without_runs_fail_closed(arh: Arh, tmp_path: Path) -> None:
    none = _empty_report(tmp_path / "none.json")
    one = _report(arh, tmp_path / "one.json")  # one run of one task (TRACE, which passes)
    gates = ["--gate", "pass rate >= 0.9", "--gate", "pass rate drop significant at 0.05"]
    # no run on the baseline's side: no task ran on both sides, so the paired test cannot decide
    run = arh("compare", "--baseline", none, "--candidate", one, *gates)
    assert run.status == 1
    assert "significance 0.05 INSUFFICIENT" in run.out
    assert run.out.endswith(
        "GATE: FAIL (fail-on never)\n"
        "  - workflow 'rebooking': insufficient data for significance 0.05: no task ran on both "
        "sides [--gate 'pass rate drop significant at 0.05']\n"
    )
    # no run on the candidate's side: no result at all (0 of 0 traces), an input error
    run = arh("compare", "--baseline", none, "--candidate", none, *gates)
    assert run.status == 3
    assert run.out == ""
    assert run.err == f"error: no trace reports in {none}: no candidate to compare\n"
    # as arh stats, which has nothing to summarise
    run = arh("stats", none, "--gate", "pass rate >= 0.9")
    assert run.status == 3
    assert run.err == f"error: no trace reports in {none}: nothing to summarise\n"
    # letting insufficient data through lets it through, and says so
    run = arh("compare", "--baseline", none, "--candidate", one, *gates,
              "--allow-insufficient-data")  # fmt: skip
    assert run.status == 0
    assert "note: workflow 'rebooking': insufficient data for significance 0.05" in run.out


def test_a_report_of_another_major_version_is_refused(arh: Arh, tmp_path: Path) -> None:
    good = _report(arh, tmp_path / "good.json")
    newer = tmp_path / "v2.json"
    newer.write_text(
        _empty_report(newer).read_text(encoding="utf-8").replace('"1"', '"2"'), encoding="utf-8"
    )
    message = "/schema_version: report declares unsupported schema_version '2'; this build reads "
    run = arh("compare", "--baseline", good, "--candidate", newer)
    assert run.status == 3
    assert run.err == f"error: invalid candidate: {newer}: {message}major version 1\n"
    run = arh("stats", newer)
    assert run.status == 3
    assert run.err == f"error: invalid report: {newer}: {message}major version 1\n"
    # a minor version of 1 is read
    minor = tmp_path / "v1.1.json"
    minor.write_text(good.read_text(encoding="utf-8").replace(
        '"schema_version": "1"', '"schema_version": "1.1"', 1), encoding="utf-8")  # fmt: skip
    run = arh("compare", "--baseline", good, "--candidate", minor)
    assert run.status == 0, run.err
