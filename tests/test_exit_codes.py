"""Exit statuses (docs/exit-codes.md), one usage error for a pointer option that matches nothing,
and a run of no traces as an input error.

The statuses are those of the table in docs/exit-codes.md: 0 passed, 1 a trace or a gate failed,
2 a usage or configuration error (options, the policy, a gate file: nothing was checked), 3 an
input error (an input could not be read or held no trace, a report could not be written; the
other inputs were checked and reported), 4 an infrastructure failure (tests/test_failure_kinds.py);
2 wins over 4, 4 over 3, and 3 over 1.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_reliability_harness.app import Status, worst

from conftest import REAL_TRACES, ROOT, SAMPLES, Run, load_json, require_shared

Arh = Callable[..., Run]

POLICY = SAMPLES / "policy_trajectory.json"
PASSING = SAMPLES / "traces" / "rebook_pass.json"  # rebook-1001 passes (README)
FAILING = SAMPLES / "traces" / "rebook_double_rebooking.json"  # rebook-1002 fails (README)
TAU_POLICY = SAMPLES / "policies" / "tau-airline-basic.json"
# one real tau-bench record (task 39, trial 1), its fields at the top level as in the data set:
# task_id, reward, traj, trial (tests/fixtures/adapters/README.md gives its origin)
TAU_RECORD = ROOT / "tests" / "fixtures" / "adapters" / "openai-chat" / "tau_bench_reused_id.json"
TAU_IDS = ("--trace-id-at", "/task_id", "--trace-id-at", "/trial")
# the members of a canonical trace, in the order arh convert writes them (TRACE-SPEC.md)
TRACE_KEYS = "'schema_version', 'trace_id', 'agent_name', 'workflow', 'source', 'steps', 'metadata'"


def _write(path: Path, value: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(value if isinstance(value, str) else json.dumps(value), encoding="utf-8")
    return path


def _tau_records(folder: Path, trials: int = 3, name: str = "runs.json") -> Path:
    """A JSON array of ``trials`` copies of the tau-bench record, trials 0, 1, 2, ..."""
    record = load_json(TAU_RECORD)
    records = [{**copy.deepcopy(record), "trial": trial} for trial in range(trials)]
    return _write(folder / name, records)


# -- the precedence --------------------------------------------------------------------------


def test_worst_is_usage_then_infrastructure_then_input_then_failed_then_ok() -> None:
    assert worst() is Status.OK
    assert worst(Status.OK, Status.FAILED) is Status.FAILED
    assert worst(Status.FAILED, Status.INPUT) is Status.INPUT
    assert worst(Status.INPUT, Status.INFRASTRUCTURE) is Status.INFRASTRUCTURE
    assert worst(Status.INFRASTRUCTURE, Status.USAGE) is Status.USAGE
    assert worst(Status.INPUT, Status.USAGE, Status.FAILED) is Status.USAGE
    assert worst(Status.INPUT, Status.INFRASTRUCTURE, Status.FAILED) is Status.INFRASTRUCTURE
    assert worst(Status.INFRASTRUCTURE, Status.USAGE) is Status.USAGE
    assert [int(s) for s in Status] == [0, 1, 2, 3, 4]


# -- each command, each kind of outcome ------------------------------------------------------


def test_validate(arh: Arh, tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    bad_policy = _write(tmp_path / "policy.json", {"policy_id": "p", "max_step": 3})
    assert arh("validate", "--policy", POLICY, PASSING, "--quiet").status == 0
    assert arh("validate", "--policy", POLICY, FAILING, "--quiet").status == 1
    assert arh("validate", "--policy", POLICY, PASSING, missing, "--quiet").status == 3
    # a failing trace and an input that cannot be read: the check is incomplete (3 over 1)
    run = arh("validate", "--policy", POLICY, FAILING, missing)
    assert run.status == 3
    assert "FAIL  rebook-1002" in run.out  # the trace that could be read is still reported
    assert run.err == f"error: {missing.as_posix()}: no such file or directory\n"
    # an invalid policy: nothing is checked, the traces are not even looked at (2)
    run = arh("validate", "--policy", bad_policy, FAILING, missing)
    assert run.status == 2
    assert run.err.startswith(f"error: invalid policy: {bad_policy.as_posix()}: ")
    assert "missing.json" not in run.err
    # a bad option
    assert arh("validate", "--policy", POLICY, PASSING, "--fail-under", "101").status == 2


def test_compare(arh: Arh, tmp_path: Path) -> None:
    base = tmp_path / "base.json"
    assert arh("validate", "--policy", POLICY, PASSING, "--json-out", base, "--quiet").status == 0
    same = ("compare", "--baseline", base, "--candidate", base)
    assert arh(*same).status == 0
    regressed = tmp_path / "regressed.json"
    # rebook-1002 fails where the baseline had no such trace: an added failing trace regresses
    arh("validate", "--policy", POLICY, PASSING, FAILING, "--json-out", regressed, "--quiet")
    assert arh("compare", "--baseline", base, "--candidate", regressed).status == 1
    bad = _write(tmp_path / "bad.json", {"reports": 3})
    assert arh("compare", "--baseline", bad, "--candidate", base).status == 3
    assert arh("compare", "--baseline", base, "--candidate", bad).status == 3
    # a bad gate file and a bad baseline: both are reported, the configuration error wins
    gates = _write(tmp_path / "arh.toml", "[defaults]\nmin_pass_rat = 1\n")
    run = arh("compare", "--baseline", bad, "--candidate", base, "--gates", gates)
    assert run.status == 2
    assert [line.split(":")[0] for line in run.err.splitlines()] == ["error", "error"]
    assert "invalid gate file" in run.err
    assert "invalid baseline" in run.err
    # a bad policy and a bad baseline: both are reported (0.3.0 stopped at the baseline), 2
    bad_policy = _write(tmp_path / "policy.json", {"policy_id": "p", "max_step": 3})
    run = arh("compare", "--baseline", bad, "--policy", bad_policy, PASSING)
    assert run.status == 2
    assert "invalid baseline" in run.err
    assert "invalid policy" in run.err
    # candidate traces that cannot be read: 3 whatever the gate says, pass or fail
    missing = tmp_path / "missing.json"
    assert arh("compare", "--baseline", base, "--policy", POLICY, PASSING, missing).status == 3
    run = arh("compare", "--baseline", base, "--policy", POLICY, FAILING, missing)
    assert run.status == 3
    assert "GATE: FAIL" in run.out
    assert "exit status 3 whatever the gate says: 1 candidate input error" in run.out


def test_stats(arh: Arh, tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    arh("validate", "--policy", POLICY, PASSING, FAILING, "--json-out", report, "--quiet")
    assert arh("stats", report, "--quiet").status == 0
    # one of the two runs passes: a pass rate of 0.5
    assert arh("stats", report, "--gate", "pass rate >= 0.9", "--quiet").status == 1
    assert arh("stats", report, "--gate", "pass rate >= 0.5", "--quiet").status == 0
    assert arh("stats", tmp_path / "missing.json").status == 3
    assert arh("stats", report, "--gates", tmp_path / "missing.toml").status == 2
    assert arh("stats", report, "--gate", "pass rate >= two").status == 2


def test_convert_rules_and_explain(arh: Arh, tmp_path: Path) -> None:
    assert arh("convert", PASSING).status == 0
    assert arh("convert", PASSING, tmp_path / "missing.json").status == 3
    assert arh("convert", _write(tmp_path / "bad.json", "42")).status == 3
    assert arh("rules").status == 0
    assert arh("explain", "ARH-FLW-003").status == 0
    assert arh("explain", "ARH-FLW-999").status == 2


def test_a_report_that_cannot_be_written_is_an_input_error(arh: Arh, tmp_path: Path) -> None:
    folder = tmp_path / "taken"
    folder.mkdir()
    run = arh("validate", "--policy", POLICY, PASSING, "--json-out", folder, "--quiet")
    assert run.status == 3
    assert run.err == f"error: cannot write {folder}: Is a directory\n"


def test_help_says_what_each_status_means(arh: Arh) -> None:
    for command in ("validate", "compare", "stats", "convert"):
        text = " ".join(arh(command, "--help").out.split())
        assert "2 usage or configuration error (nothing was checked), 3 input error" in text
        assert "2 wins over 3, and 3 over 1 (docs/exit-codes.md)" in text
    assert "1 a trace failed" in " ".join(arh("validate", "--help").out.split())


# -- a run of no traces ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["empty directory", "directory of other files", "empty JSONL"])
def test_a_run_of_no_traces_is_an_input_error(arh: Arh, tmp_path: Path, kind: str) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    if kind == "directory of other files":
        _write(folder / "notes.txt", "not a trace")
    target = _write(folder / "runs.jsonl", "") if kind == "empty JSONL" else folder
    run = arh("validate", "--policy", POLICY, target)
    assert run.status == 3
    assert "0 of 0" not in run.out
    shown = target.as_posix()
    if kind == "empty JSONL":
        assert run.err == f"error: {shown}: the JSON Lines input has no records\n"
        searched = f"read 1 file from {shown}, and found no usable trace"
    else:
        assert run.err == (
            f"error: {shown}: the directory contains no .json, .jsonl or .ndjson files\n"
        )
        searched = (
            f"nothing to read in {shown} (directories are searched for .json, .jsonl and "
            ".ndjson files)"
        )
    assert run.out == f"no traces checked: {searched} \u00b7 1 input error\n"
    assert arh("validate", "--policy", POLICY, target, "--quiet").out == ""


def test_a_run_whose_every_trace_is_bad_names_what_was_read(arh: Arh, tmp_path: Path) -> None:
    one = _write(tmp_path / "a.json", "{")
    two = _write(tmp_path / "b.json", "[1]")
    run = arh("validate", "--policy", POLICY, one, two, "-", stdin=b"")
    assert run.status == 3
    assert run.out == (
        f"no traces checked: read 2 files from {one.as_posix()}, {two.as_posix()} and standard "
        "input, and found no usable trace \u00b7 3 input errors\n"
    )


def test_compare_of_no_candidate_traces_is_an_input_error(arh: Arh, tmp_path: Path) -> None:
    base = tmp_path / "base.json"
    arh("validate", "--policy", POLICY, PASSING, "--json-out", base, "--quiet")
    empty = tmp_path / "empty"
    empty.mkdir()
    out, candidate = tmp_path / "compare.json", tmp_path / "candidate.json"
    run = arh("compare", "--baseline", base, "--policy", POLICY, empty, "--json-out", out,
              "--candidate-json-out", candidate)  # fmt: skip
    assert run.status == 3  # was 0: every baseline trace "removed", and the gate passed
    assert "GATE" not in run.out
    assert run.out.endswith(
        f"no traces checked: nothing to read in {empty.as_posix()} (directories are searched for "
        ".json, .jsonl and .ndjson files) \u00b7 1 input error\n"
    )
    assert not out.exists()  # no comparison
    # the candidate's validation report is written, as arh validate writes it: its input errors
    assert load_json(candidate)["summary"]["input_errors"] == 1


# -- pointer options that match nothing --------------------------------------------------------


def test_an_outcome_pointer_that_matches_no_trace_is_one_usage_error(
    arh: Arh, tmp_path: Path
) -> None:
    # tau-bench's reward is a field of the record; --outcome-at reads the canonical trace,
    # where the adapter keeps the record's scalar fields under /metadata/record
    runs = _tau_records(tmp_path)
    out = tmp_path / "report.json"
    run = arh("validate", "--policy", TAU_POLICY, runs, *TAU_IDS, "--outcome-at", "/reward",
              "--json-out", out)  # fmt: skip
    assert run.status == 2
    assert run.out == ""
    assert run.err == (
        "arh validate: error: --outcome-at /reward matches nothing in any of the 3 traces. It is "
        "read in the canonical trace converted from each record (as arh convert prints it); in "
        f"the first one ({runs.as_posix()}), the top level holds the keys {TRACE_KEYS}. Did you "
        "mean --outcome-at /metadata/record/reward?\n"
    )
    assert not out.exists()  # no trace was checked: no report
    # the pointer it suggests reads the reward of each run (0.0 in this record)
    run = arh("validate", "--policy", TAU_POLICY, runs, *TAU_IDS,
              "--outcome-at", "/metadata/record/reward", "--json-out", out, "--quiet")  # fmt: skip
    assert run.err == ""
    assert [r["outcome"] for r in load_json(out)["reports"]] == [0.0, 0.0, 0.0]


def test_a_pointer_that_matches_in_some_records_is_an_error_in_the_others(
    arh: Arh, tmp_path: Path
) -> None:
    runs = _tau_records(tmp_path)
    records = load_json(runs)
    del records[1]["reward"]
    _write(runs, records)
    run = arh("validate", "--policy", TAU_POLICY, runs, *TAU_IDS,
              "--outcome-at", "/metadata/record/reward", "--quiet")  # fmt: skip
    assert run.status == 3
    assert run.err == (
        f"error: {runs.as_posix()}: /metadata/record: trace '39-1': no member 'reward' here "
        "(looking for /metadata/record/reward)\n"
    )


def test_record_pointers_read_the_record(arh: Arh, tmp_path: Path) -> None:
    runs = _tau_records(tmp_path)
    keys = ", ".join(repr(key) for key in load_json(TAU_RECORD))  # task_id, reward, traj, trial
    reads = "It is read in each input record as it is, not in the trace converted from it"
    run = arh("validate", "--policy", TAU_POLICY, runs, "--messages-at", "/messages")
    assert run.status == 2
    assert run.err == (
        "arh validate: error: --messages-at /messages matches nothing in any of the 3 records. "
        f"{reads}; in the first one ({runs.as_posix()}), the top level holds the keys {keys}\n"
    )
    # the deepest part of the pointer that exists, and what it is
    run = arh("convert", runs, "--trace-id-at", "/task_id", "--trace-id-at", "/traj/99/id")
    assert run.status == 2
    assert run.out == ""
    assert run.err == (
        "arh convert: error: --trace-id-at /traj/99/id matches nothing in any of the 3 records. "
        f"{reads}; in the first one ({runs.as_posix()}), /traj is an array of 16\n"
    )


def test_trace_pointers_read_the_converted_trace(arh: Arh, tmp_path: Path) -> None:
    runs = _tau_records(tmp_path, trials=1)
    base = tmp_path / "base.json"
    arh("validate", "--policy", TAU_POLICY, runs, *TAU_IDS, "--json-out", base, "--quiet")
    run = arh("compare", "--baseline", base, "--policy", TAU_POLICY, runs, *TAU_IDS,
              "--task-key", "/metadata/record/task")  # fmt: skip
    assert run.status == 2
    # the record's scalar fields, as the adapter keeps them (its traj is the steps)
    assert run.err == (
        "arh compare: error: --task-key /metadata/record/task matches nothing in the only "
        "trace. It is read in the canonical trace converted from each record (as arh convert "
        f"prints it); in it ({runs.as_posix()}), /metadata/record holds the keys 'task_id', "
        "'reward', 'trial'\n"
    )


def test_other_errors_are_still_reported(arh: Arh, tmp_path: Path) -> None:
    runs = _tau_records(tmp_path, trials=2)
    missing = tmp_path / "missing.json"
    run = arh("validate", "--policy", TAU_POLICY, runs, missing, *TAU_IDS, "--outcome-at", "/r")
    assert run.status == 2
    lines = run.err.splitlines()
    assert lines[0] == f"error: {missing.as_posix()}: no such file or directory"
    assert lines[1].startswith("arh validate: error: --outcome-at /r matches nothing in any of ")
    assert len(lines) == 2


def test_a_record_that_fails_otherwise_keeps_the_errors_per_record(
    arh: Arh, tmp_path: Path
) -> None:
    # the first record has no trial (its trace id cannot be made), the second no reward: the
    # outcome pointer was not tried on the first, so it is not said to match nothing anywhere
    runs = _tau_records(tmp_path, trials=2)
    records = load_json(runs)
    del records[0]["trial"]
    del records[1]["reward"]
    _write(runs, records)
    run = arh("validate", "--policy", TAU_POLICY, runs, *TAU_IDS,
              "--outcome-at", "/metadata/record/reward", "--quiet")  # fmt: skip
    assert run.status == 3
    shown = runs.as_posix()
    assert run.err.splitlines() == [
        f"error: {shown}: /0: no member 'trial' here (looking for /trial)",
        (
            f"error: {shown}: /metadata/record: trace '39-1': no member 'reward' here (looking "
            "for /metadata/record/reward)"
        ),
    ]


def test_jobs_give_the_same_usage_error(arh: Arh, tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    for n in range(3):
        _tau_records(folder, trials=2, name=f"r{n}.json")
    argv = ("validate", "--policy", TAU_POLICY, folder, *TAU_IDS, "--outcome-at", "/reward")
    one, two = arh(*argv), arh(*argv, "--jobs", "2")
    assert (one.status, one.out, one.err) == (two.status, two.out, two.err)
    assert one.status == 2
    assert "matches nothing in any of the 6 traces" in one.err


def test_the_real_tau_bench_runs(arh: Arh) -> None:
    # README of real-traces/tau-bench: one JSON array of 200 records, reward at the top level
    data = require_shared(
        REAL_TRACES / "tau-bench" / "historical_trajectories" / "gpt-4o-airline.json"
    )
    run = arh("validate", "--policy", TAU_POLICY, data, *TAU_IDS, "--outcome-at", "/reward")
    assert run.status == 2
    assert run.out == ""
    (line,) = run.err.splitlines()  # not 200 lines, one per trace
    assert line.startswith("arh validate: error: --outcome-at /reward matches nothing in any of ")
    assert "any of the 200 traces" in line
    assert line.endswith("Did you mean --outcome-at /metadata/record/reward?")
