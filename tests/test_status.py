"""``arh status`` and the runs directory reader (app/runs.py), on run directories written by hand
as the run record's contract lays them out, with reports made by ``arh validate --json-out``."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_reliability_harness.app.runs import parse_rfc3339, scan_runs
from agent_reliability_harness.app.status import parse_age
from agent_reliability_harness.errors import InputError
from agent_reliability_harness.harness.datasets import files_sha256

from conftest import SAMPLES, Run, schema_validator

POLICY = SAMPLES / "policy_trajectory.json"
PASSING = SAMPLES / "traces" / "rebook_pass.json"  # rebook-1001, passes
FAILING = SAMPLES / "traces" / "rebook_double_rebooking.json"  # rebook-1002, fails
NOW = "2026-12-08T19:00:00Z"
ZEROS = "0" * 64

Arh = Callable[..., Run]


def report_of(arh: Arh, tmp: Path, out: Path, *traces: Path) -> Path:
    """The JSON report of ``arh validate`` on ``traces``, written to ``out``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    done = arh("validate", "--policy", POLICY, *traces, "--json-out", out, "--quiet")
    assert done.status in (0, 1), done.err
    return out


def failing_as_1001(tmp: Path) -> Path:
    """rebook_double_rebooking.json under the trace id of rebook_pass.json: the same task, now
    failing (a regression when the baseline holds the passing one)."""
    trace = json.loads(FAILING.read_text(encoding="utf-8"))
    trace["trace_id"] = "rebook-1001"
    path = tmp / "regressed" / "rebook-1001.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(trace), encoding="utf-8")
    return path


def write_run(
    directory: Path,
    report: Path,
    *,
    name: str = "rebooking",
    sha256: str = ZEROS,
    finished_at: str = "2026-12-07T19:00:00Z",
    summary: dict[str, int] | None = None,
    run_id: str = "rebooking.react.seed0",
) -> Path:
    """A run directory as ``arh run -o`` writes it (docs/contract, "Runs directory")."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "traces").mkdir(exist_ok=True)
    shutil.copyfile(report, directory / "report.json")
    data = json.loads(report.read_text(encoding="utf-8"))
    total = len(data["reports"])
    passed = sum(r["passed"] for r in data["reports"])
    counts = summary or {
        "runs": total,
        "passed": passed,
        "agent_failure": total - passed,
        "evaluation_error": 0,
        "infrastructure_failure": 0,
    }
    record = {
        "kind": "arh-run",
        "schema_version": "1",
        "run_id": run_id,
        "agent": {"id": "agent_reliability_harness.harness.agents:react"},
        "dataset": {
            "name": name,
            "version": "1",
            "sha256": sha256,
            "cases": total,
            "path": f"datasets/{name}",
        },
        "harness": {"name": "agent-reliability-harness", "version": "x", "rubric": None},
        "seed": 0,
        "repeats": 1,
        "ablations": [],
        "summary": {**counts, "pass_rate": counts["passed"] / counts["runs"]},
        "cost": {"estimated_usd": 0.0, "actual_usd": 0.0, "price_table": "none"},
        "tasks": [],
        "timings": {
            "started_at": "2026-12-07T18:59:00Z",
            "finished_at": finished_at,
            "wall_seconds": 60.0,
        },
    }
    (directory / "run.json").write_text(json.dumps(record, indent=2), encoding="utf-8")
    return directory


@pytest.fixture
def runs(tmp_path: Path, arh: Arh) -> Path:
    """A runs directory with one run of one passing trace, and its baseline (the same report)."""
    report = report_of(arh, tmp_path, tmp_path / "made" / "pass.json", PASSING)
    root = tmp_path / "runs"
    write_run(root / "rebooking" / "seed0", report)
    (root / "baselines").mkdir(parents=True)
    shutil.copyfile(report, root / "baselines" / "rebooking.json")
    return root


def status_json(arh: Arh, *args: str | Path) -> tuple[int, dict[str, Any]]:
    done = arh("status", *args, "--now", NOW, "--json")
    document = json.loads(done.out)
    errors = [e.message for e in schema_validator("status").iter_errors(document)]
    assert not errors
    return done.status, document


# --- the reader ------------------------------------------------------------------------------


def test_scan_finds_runs_at_any_depth_and_plain_reports(tmp_path: Path, arh: Arh) -> None:
    report = report_of(arh, tmp_path, tmp_path / "made" / "r.json", PASSING, FAILING)
    root = tmp_path / "runs"
    write_run(root / "a" / "b" / "deep", report, finished_at="2026-12-07T10:00:00Z")
    write_run(root / "shallow", report, finished_at="2026-12-07T09:00:00+02:00")
    shutil.copyfile(report, root / "nightly.json")
    (root / "notes").mkdir()
    shutil.copyfile(PASSING, root / "notes" / "a-trace.json")  # JSON but not a report: passed over
    (root / ".hidden").mkdir()
    (root / ".hidden" / "broken.json").write_text("{", encoding="utf-8")  # not searched
    index = scan_runs(str(root))
    assert index.errors == ()
    # sorted by benchmark, then time (none first), then id; 07:00Z (shallow) before 10:00Z
    assert [(r.id, r.kind, r.benchmark) for r in index.runs] == [
        ("nightly.json", "report", "rebooking"),
        ("shallow", "run", "rebooking"),
        ("a/b/deep", "run", "rebooking"),
    ]
    plain = index.runs[0]
    assert (plain.counts.runs, plain.counts.passed, plain.finished_at) == (2, 1, None)
    assert index.get("a/b/deep") is index.runs[2]


def test_a_bad_file_is_one_error_and_the_others_are_read(tmp_path: Path, arh: Arh) -> None:
    report = report_of(arh, tmp_path, tmp_path / "made" / "r.json", PASSING)
    root = tmp_path / "runs"
    write_run(root / "good", report)
    bad = write_run(root / "bad", report)
    record = json.loads((bad / "run.json").read_text(encoding="utf-8"))
    record["summary"]["passed"] = "1"
    (bad / "run.json").write_text(json.dumps(record), encoding="utf-8")
    (root / "truncated.json").write_text('{"reports": [', encoding="utf-8")
    index = scan_runs(str(root))
    assert [r.id for r in index.runs] == ["good"]
    assert [(e.source, e.pointer) for e in index.errors] == [
        (str(bad / "run.json"), "/summary/passed"),
        (str(root / "truncated.json"), None),
    ]


@pytest.mark.parametrize(
    ("change", "pointer", "words"),
    [
        ({"kind": "other"}, "/kind", '"arh-run"'),
        ({"schema_version": "2"}, "/schema_version", "version 1"),
        ({"dataset": {"name": "x"}}, "/dataset", "'sha256'"),
        ({"timings": {"finished_at": "yesterday"}}, "/timings/finished_at", "RFC 3339"),
        ({"timings": {"finished_at": "2026-12-07T19:00:00"}}, "/timings/finished_at", "offset"),
    ],
)
def test_run_record_fields_are_checked(
    tmp_path: Path, arh: Arh, change: dict[str, Any], pointer: str, words: str
) -> None:
    report = report_of(arh, tmp_path, tmp_path / "made" / "r.json", PASSING)
    run = write_run(tmp_path / "runs" / "r", report)
    record = json.loads((run / "run.json").read_text(encoding="utf-8"))
    record.update(change)
    (run / "run.json").write_text(json.dumps(record), encoding="utf-8")
    [error] = scan_runs(str(tmp_path / "runs")).errors
    assert (error.source, error.pointer) == (str(run / "run.json"), pointer)
    assert words in error.message


def test_symlinks_out_of_the_runs_directory_are_not_followed(tmp_path: Path, arh: Arh) -> None:
    outside = tmp_path / "outside"
    report_of(arh, tmp_path, outside / "secret.json", PASSING)
    root = tmp_path / "runs"
    root.mkdir()
    try:
        os.symlink(outside, root / "escape")
        os.symlink(outside / "secret.json", root / "file.json")
        os.symlink(root, root / "loop")  # inside: followed, once
    except OSError:
        pytest.skip("cannot make symbolic links here")
    shutil.copyfile(outside / "secret.json", root / "inside.json")
    index = scan_runs(str(root))
    assert [r.id for r in index.runs] == ["inside.json"]
    assert sorted(e.source or "" for e in index.errors) == [
        str(root / "escape"),
        str(root / "file.json"),
    ]
    assert all("outside the runs directory" in e.message for e in index.errors)


def test_baselines_are_runs_of_their_own_kind_not_searched(tmp_path: Path, arh: Arh) -> None:
    report = report_of(arh, tmp_path, tmp_path / "made" / "r.json", PASSING, FAILING)
    root = tmp_path / "runs"
    write_run(root / "a", report)
    (root / "baselines" / "old").mkdir(parents=True)
    shutil.copyfile(report, root / "baselines" / "rebooking.json")
    write_run(root / "baselines" / "old" / "run", report)  # not searched: not a run
    (root / "baselines" / "notes.json").write_text('{"a": 1}', encoding="utf-8")
    index = scan_runs(str(root))
    assert [r.id for r in index.runs] == ["a"]
    [baseline] = index.baselines
    assert (baseline.id, baseline.kind, baseline.benchmark) == (
        "baselines/rebooking.json",
        "baseline",
        "rebooking",
    )
    assert (baseline.counts.runs, baseline.counts.passed) == (2, 1)
    assert index.baseline("rebooking") is baseline
    assert index.get("baselines/rebooking.json") is baseline
    assert index.benchmarks() == {"rebooking": (index.runs[0],)}  # the runs only
    [error] = index.errors
    assert error.source == str(root / "baselines" / "notes.json")
    assert "must be a validation report" in error.message


def test_trace_files_come_from_the_record_and_stay_inside(tmp_path: Path, arh: Arh) -> None:
    report = report_of(arh, tmp_path, tmp_path / "made" / "r.json", PASSING)
    root = tmp_path / "runs"
    run = write_run(root / "r", report)
    record = json.loads((run / "run.json").read_text(encoding="utf-8"))
    record["tasks"] = [
        {"trace_id": "in", "trace": "traces/in.json", "outcome": "passed"},
        {"trace_id": "out", "trace": "traces/out.json", "outcome": "agent_failure"},
    ]
    (run / "run.json").write_text(json.dumps(record), encoding="utf-8")
    shutil.copyfile(PASSING, run / "traces" / "in.json")
    (tmp_path / "secret.json").write_text("{}", encoding="utf-8")
    try:
        os.symlink(tmp_path / "secret.json", run / "traces" / "out.json")
    except OSError:
        pytest.skip("cannot make symbolic links here")
    index = scan_runs(str(root))
    [found] = index.runs
    assert found.outcomes == {"in": "passed", "out": "agent_failure"}
    assert index.trace_file(found, "in") == str(run / "traces" / "in.json")
    with pytest.raises(InputError) as outside:
        index.trace_file(found, "out")
    assert outside.value.source == str(run / "traces" / "out.json")
    with pytest.raises(InputError):
        index.trace_file(found, "nope")
    # a record naming a trace file outside the run is a bad record: never opened
    record["tasks"] = [{"trace_id": "x", "trace": "../../secret.json"}]
    (run / "run.json").write_text(json.dumps(record), encoding="utf-8")
    [error] = scan_runs(str(root)).errors
    assert (error.source, error.pointer) == (str(run / "run.json"), "/tasks/0/trace")


def test_a_run_report_linked_from_outside_is_not_read(tmp_path: Path, arh: Arh) -> None:
    report = report_of(arh, tmp_path, tmp_path / "made" / "r.json", PASSING)
    root = tmp_path / "runs"
    run = write_run(root / "r", report)
    (run / "report.json").unlink()
    try:
        os.symlink(report, run / "report.json")
    except OSError:
        pytest.skip("cannot make symbolic links here")
    index = scan_runs(str(root))
    assert index.runs == ()
    [error] = index.errors
    assert error.source == str(run / "report.json")
    assert "outside the runs directory" in error.message


def test_dataset_sha256_follows_the_contract(tmp_path: Path) -> None:
    # worked out independently: each file's bytes with CRLF made LF, then one line per file
    def manifest(*paths: str) -> str:
        files = [{"path": path, "sha256": "0" * 64, "cases": 1} for path in paths]
        return json.dumps({"name": "d", "version": "1", "files": files, "sha256": "0" * 64})

    (tmp_path / "dataset.json").write_text(manifest("b.jsonl", "sub/a.jsonl"), encoding="utf-8")
    (tmp_path / "b.jsonl").write_bytes(b'{"id": "b"}\r\n')
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.jsonl").write_bytes(b'{"id": "a"}\n')
    b = hashlib.sha256(b'{"id": "b"}\n').hexdigest()
    a = hashlib.sha256(b'{"id": "a"}\n').hexdigest()
    expected = hashlib.sha256(f"{b}  b.jsonl\n{a}  sub/a.jsonl\n".encode()).hexdigest()
    assert files_sha256(str(tmp_path)) == expected
    (tmp_path / "dataset.json").write_text(manifest("../b.jsonl"), encoding="utf-8")
    with pytest.raises(InputError) as caught:
        files_sha256(str(tmp_path))
    assert caught.value.pointer == "/files/0/path"


def test_times_and_ages() -> None:
    assert parse_rfc3339("2026-12-07T21:00:00.5+02:00", "").isoformat() == (
        "2026-12-07T19:00:00.500000+00:00"
    )
    assert parse_rfc3339("2026-12-07t19:00:00.123456789z", "").microsecond == 123456
    for bad in ("2026-12-07", "2026-12-07T19:00:00", "2026-13-07T19:00:00Z", "now"):
        with pytest.raises(InputError):
            parse_rfc3339(bad, "/t")
    assert [parse_age(t) for t in ("90s", "15m", "12h", "7d", "2w")] == [
        90,
        900,
        43200,
        604800,
        1209600,
    ]
    for bad in ("7", "d", "-1d", "1.5h", "7 days"):
        with pytest.raises(ValueError, match="unit"):
            parse_age(bad)


# --- the command -----------------------------------------------------------------------------


def test_a_healthy_run_passes(runs: Path, arh: Arh) -> None:
    done = arh("status", runs, "--now", NOW)
    assert done.status == 0, done.err
    lines = done.out.splitlines()
    assert lines[0].split() == [
        "benchmark",
        "runs",
        "latest",
        "run",
        "pass",
        "rate",
        "95%",
        "interval",
        "baseline",
        "drift",
        "dataset",
        "judge",
        "age",
        "status",
    ]
    # 1 of 1 passed: the Wilson interval of 1/1 is (0.2065, 1) (z = 1.96: 1 / (1 + z^2))
    assert lines[1].split() == [
        "rebooking",
        "1",
        "rebooking/seed0",
        "100.0%",
        "(1/1)",
        "20.7%-100.0%",
        "100.0%",
        "+0.0",
        "pts",
        "ok",
        "not",
        "found",
        "none",
        "1d",
        "0h",
        "ok",
    ]
    assert lines[-1] == "1 benchmark, all fine"


def test_a_regression_exits_1(runs: Path, tmp_path: Path, arh: Arh) -> None:
    # the baseline (rebook-1001 passes) stays; a newer run has rebook-1001 failing
    newer = report_of(arh, tmp_path, tmp_path / "made" / "new.json", failing_as_1001(tmp_path))
    write_run(runs / "rebooking" / "seed1", newer, finished_at="2026-12-08T18:00:00Z")
    status, document = status_json(arh, runs)
    assert status == 1
    [bench] = document["benchmarks"]
    assert (bench["runs"], bench["latest"]["id"], bench["age_seconds"]) == (
        2,
        "rebooking/seed1",
        3600,
    )
    assert bench["pass_rate"] == 0.0
    assert bench["baseline"]["pass_rate"] == 1.0
    assert bench["baseline"]["delta"] == -1.0
    assert bench["baseline"]["regression"] is True
    assert any("rebook-1001" in reason for reason in bench["baseline"]["reasons"])
    done = arh("status", runs, "--now", NOW)
    assert done.status == 1
    assert "-100.0 pts regression" in done.out
    assert (
        f"rebooking: regression against the baseline {runs / 'baselines' / 'rebooking.json'}"
        in (done.out)
    )
    assert done.out.endswith("1 benchmark, 1 needs attention\n")


def test_stale_run_exits_1_only_with_max_age(runs: Path, arh: Arh) -> None:
    assert arh("status", runs, "--now", NOW, "--max-age", "2d").status == 0
    done = arh("status", runs, "--now", NOW, "--max-age", "12h")
    assert done.status == 1
    assert "the latest run is 1d 0h old, older than --max-age (12h 0m)" in done.out


def test_dataset_integrity(runs: Path, tmp_path: Path, arh: Arh) -> None:
    datasets = tmp_path / "datasets"
    (datasets / "rebooking").mkdir(parents=True)
    (datasets / "rebooking" / "tasks.jsonl").write_bytes(b"{}\n")
    (datasets / "rebooking" / "dataset.json").write_text(
        json.dumps(
            {"name": "rebooking", "version": "1", "sha256": ZEROS,
             "files": [{"path": "tasks.jsonl", "sha256": ZEROS, "cases": 1}]}
        ),
        encoding="utf-8",
    )  # fmt: skip
    digest = hashlib.sha256(b"{}\n").hexdigest()
    line = f"{digest}  tasks.jsonl\n"
    right = hashlib.sha256(line.encode()).hexdigest()
    status, document = status_json(arh, runs, "--datasets", datasets)  # the run recorded zeros
    assert status == 1
    dataset = document["benchmarks"][0]["dataset"]
    assert (dataset["state"], dataset["computed"], dataset["recorded"]) == (
        "mismatch",
        right,
        ZEROS,
    )
    record = runs / "rebooking" / "seed0" / "run.json"
    data = json.loads(record.read_text(encoding="utf-8"))
    data["dataset"]["sha256"] = right
    record.write_text(json.dumps(data), encoding="utf-8")
    status, document = status_json(arh, runs, "--datasets", datasets)
    assert status == 0
    assert document["benchmarks"][0]["dataset"]["state"] == "ok"


def test_infrastructure_failures_exit_4(tmp_path: Path, arh: Arh) -> None:
    report = report_of(arh, tmp_path, tmp_path / "made" / "r.json", PASSING)
    counts = {
        "runs": 2,
        "passed": 1,
        "agent_failure": 0,
        "evaluation_error": 0,
        "infrastructure_failure": 1,
    }
    write_run(tmp_path / "runs" / "r", report, summary=counts)
    done = arh("status", tmp_path / "runs", "--now", NOW)
    assert done.status == 4
    assert "1 of 2 task runs failed in the infrastructure (infrastructure_failure)" in done.out
    assert "exit 4" in done.out


def test_no_runs_and_unreadable_inputs_exit_3(tmp_path: Path, runs: Path, arh: Arh) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    done = arh("status", empty, "--now", NOW)
    assert (done.status, done.out) == (3, f"no runs found in {empty}\n")
    missing = arh("status", tmp_path / "missing", "--now", NOW)
    assert missing.status == 3
    assert f"error: {tmp_path / 'missing'}: no such directory" in missing.err
    (runs / "broken.json").write_text("{", encoding="utf-8")
    done = arh("status", runs, "--now", NOW)
    assert done.status == 3
    assert "1 benchmark, all fine · 1 input error" in done.out  # the good run is still shown
    assert f"error: {runs / 'broken.json'}" in done.err


def test_an_unreadable_baseline_is_a_problem_of_its_benchmark(runs: Path, arh: Arh) -> None:
    baseline = runs / "baselines" / "rebooking.json"
    baseline.write_text('{"reports": [', encoding="utf-8")
    status, document = status_json(arh, runs)
    assert status == 3
    [bench] = document["benchmarks"]
    assert bench["baseline"]["path"] == str(baseline)
    assert "invalid JSON" in bench["baseline"]["error"]
    assert bench["problems"] == [f"the baseline {baseline} cannot be read"]
    assert [e["source"] for e in document["errors"]] == [str(baseline)]  # once, not twice


def test_plain_reports_are_benchmarks_by_workflow_and_have_no_age(tmp_path: Path, arh: Arh) -> None:
    root = tmp_path / "runs"
    report_of(arh, tmp_path, root / "nightly" / "report.json", PASSING, FAILING)
    status, document = status_json(arh, root, "--max-age", "1s")
    assert status == 0  # an unknown age is shown as unknown, never judged stale
    [bench] = document["benchmarks"]
    assert (bench["benchmark"], bench["age_seconds"], bench["stale"]) == ("rebooking", None, False)
    assert bench["latest"]["finished_at"] is None
    assert bench["dataset"]["state"] == "not_applicable"
    assert (bench["pass_rate"], bench["latest"]["summary"]["agent_failure"]) == (0.5, 1)


def test_json_is_deterministic_with_now(runs: Path, arh: Arh) -> None:
    first = arh("status", runs, "--now", NOW, "--json").out
    assert first == arh("status", runs, "--now", NOW, "--json").out
    assert json.loads(first)["now"] == NOW


def test_bad_options_are_usage_errors(runs: Path, arh: Arh) -> None:
    assert arh("status", runs, "--max-age", "soon").status == 2
    assert arh("status", runs, "--now", "yesterday").status == 2


def test_max_age_from_the_configuration_file(
    runs: Path, tmp_path: Path, arh: Arh, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "arh.toml").write_text('[status]\nmax-age = "12h"\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    done = arh("status", runs, "--now", NOW)  # the run is 1d 0h old
    assert done.status == 1
    assert "older than --max-age (12h 0m)" in done.out
    assert arh("status", runs, "--now", NOW, "--max-age", "2d").status == 0  # the option wins


def test_runs_made_by_arh_run_and_a_regression_introduced(tmp_path: Path, arh: Arh) -> None:
    """The issue's end-to-end case: `arh status` over run directories that `arh run` wrote,
    healthy against the reference agent's baseline, then exit 1 once the broken example agent's
    run is the latest; its console stays one screen (the first five gate reasons, then a count)."""
    from conftest import ROOT

    tasks = ROOT / "docs" / "examples" / "running-agents" / "datasets" / "mini"
    runs = tmp_path / "runs"
    reference = "agent_reliability_harness.harness.agents:auto"
    done = arh("run", "--dataset", tasks, "--agent", reference, "-o", runs / "mini-1", "-q")
    assert done.status == 0, done.err
    (runs / "baselines").mkdir()
    shutil.copy(runs / "mini-1" / "report.json", runs / "baselines" / "mini.json")
    healthy = arh("status", runs, "--datasets", tasks.parent)
    assert healthy.status == 0, healthy.out + healthy.err
    assert "1 benchmark, all fine" in healthy.out
    broken = str(ROOT / "examples" / "broken_agent.py") + ":broken"
    done = arh("run", "--dataset", tasks, "--agent", broken, "-o", runs / "mini-2", "-q")
    assert done.status == 1, done.err
    regressed = arh("status", runs, "--datasets", tasks.parent)
    assert regressed.status == 1
    lines = regressed.out.splitlines()
    assert "mini-2" in lines[1]
    assert "regression" in lines[1]
    # 1 reason for the new error findings + 7 traces from pass to fail: 5 shown, 3 counted
    assert sum("regressed from pass to fail" in line for line in lines) == 4
    assert "mini:   and 3 more (--json, or arh compare, lists them all)" in lines
    assert len(lines) <= 12
