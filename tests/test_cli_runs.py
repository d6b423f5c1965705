"""Runs with several reports, outputs and inputs: every bad report is told, every output that can
be written is written, outputs never overwrite each other or an input, and what the report
files say agrees with the exit status.

Each test runs ``arh`` in-process on files written to a temporary directory.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

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


def test_stats_reports_every_bad_report(arh: Arh, tmp_path: Path) -> None:
    good = _report(arh, tmp_path / "good.json")
    empty, array, bad = _bad_reports(tmp_path)
    run = arh("stats", good, empty, array, bad)
    assert run.status == 1
    assert run.out == ""
    lines = run.err.splitlines()
    assert len(lines) == 3, run.err
    assert lines[0] == "error: invalid report: " + _EMPTY.format(empty)
    assert lines[1].startswith("error: invalid report: " + _ARRAY.format(array))
    assert lines[2] == "error: invalid report: " + _BAD.format(bad)


def test_compare_reports_every_bad_report_of_both_sides(arh: Arh, tmp_path: Path) -> None:
    good = _report(arh, tmp_path / "good.json")
    empty, array, bad = _bad_reports(tmp_path)
    run = arh("compare", "--baseline", good, empty, "--candidate", array, bad)
    assert run.status == 1
    assert run.out == ""
    lines = run.err.splitlines()
    assert len(lines) == 3, run.err
    assert lines[0] == "error: invalid baseline: " + _EMPTY.format(empty)
    assert lines[1].startswith("error: invalid candidate: " + _ARRAY.format(array))
    assert lines[2] == "error: invalid candidate: " + _BAD.format(bad)


def test_a_bad_gate_file_does_not_hide_a_bad_report(arh: Arh, tmp_path: Path) -> None:
    empty, _, _ = _bad_reports(tmp_path)
    gates = tmp_path / "missing.toml"
    run = arh("stats", empty, "--gates", gates)
    assert run.status == 1
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
    assert run.status == 1
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
    assert run.status == 1
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
    assert run.status == 1
    assert run.err == f"error: cannot write {json_dir}: Is a directory\n"
    assert f"Statistics Markdown written to {tmp_path / 's.md'}" in run.out
    assert (tmp_path / "s.md").read_bytes() == clean.read_bytes()
