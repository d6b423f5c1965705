"""A runs directory made by hand as ``arh run -o`` lays it out (the shared contract), for the
dashboard's tests: two runs of one benchmark (the second with a regression), a run whose
benchmark, trace id and text are hostile, a run whose report and one whose record do not read,
a plain report, a baseline, and files outside the directory reached through symbolic links."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from agent_reliability_harness.cli import main

from conftest import ROOT, SAMPLES

POLICY = SAMPLES / "policy_trajectory.json"
HOSTILE = ROOT / "tests" / "goldens" / "html" / "inputs" / "hostile"
OUTSIDE_MARK = (
    "OUTSIDE_MARK-OUTSIDE-7f3a"  # in files outside the runs directory: no answer may hold it
)


def sample_traces() -> list[dict[str, Any]]:
    traces = [json.loads(p.read_text("utf-8")) for p in sorted((SAMPLES / "traces").glob("*.json"))]
    lines = (SAMPLES / "traces" / "more_runs.jsonl").read_text("utf-8").splitlines()
    return traces + [json.loads(line) for line in lines if line.strip()]


def validate(policy: Path, inputs: Path, report: Path) -> None:
    status = main(
        ["validate", "--policy", str(policy), str(inputs), "--json-out", str(report), "--quiet"]
    )
    assert status in (0, 1), status


def make_run(
    folder: Path,
    traces: list[dict[str, Any]],
    *,
    policy: Path = POLICY,
    benchmark: str = "golden",
    finished: str = "2026-12-07T19:00:00Z",
) -> None:
    """A run directory: traces/<n>.run1.json, report.json and run.json."""
    (folder / "traces").mkdir(parents=True)
    names = {}
    for number, trace in enumerate(traces):
        name = f"traces/t{number}.run1.json"
        (folder / name).write_text(json.dumps(trace), encoding="utf-8")
        names[trace["trace_id"]] = name
    validate(policy, folder / "traces", folder / "report.json")
    report = json.loads((folder / "report.json").read_text("utf-8"))
    tasks = []
    for entry in report["reports"]:
        outcome = "passed" if entry["passed"] else "agent_failure"
        tasks.append({"task_id": entry["trace_id"], "repeat": 1, "trace_id": entry["trace_id"],
                      "trace": names[entry["trace_id"]], "outcome": outcome, "detail": None,
                      "steps": 0, "input_tokens": 0, "output_tokens": 0,
                      "estimated_cost_usd": 0.0})  # fmt: skip
    passed = sum(1 for t in tasks if t["outcome"] == "passed")
    record = {
        "kind": "arh-run", "schema_version": "1", "run_id": f"{benchmark}.{folder.name}",
        "agent": {"id": "agent_reliability_harness.harness.agents:react"},
        "dataset": {"name": benchmark, "version": "1", "sha256": "0" * 64, "cases": len(tasks),
                    "path": f"datasets/{benchmark}"},
        "harness": {"name": "agent-reliability-harness", "version": "x", "policy_language": "x",
                    "rubric": None},
        "seed": 0, "repeats": 1, "ablations": [],
        "summary": {"runs": len(tasks), "passed": passed, "agent_failure": len(tasks) - passed,
                    "evaluation_error": 0, "infrastructure_failure": 0,
                    "pass_rate": round(passed / len(tasks), 6)},
        "cost": {"estimated_usd": 0.0, "actual_usd": 0.0, "price_table": "none"},
        "tasks": tasks,
        "timings": {"started_at": finished, "finished_at": finished, "wall_seconds": 1.0},
    }  # fmt: skip
    (folder / "run.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


def make_runs(base: Path) -> Path:
    """The runs directory under ``base`` (``base/runs``), with ``base/outside`` beside it."""
    runs = base / "runs"
    traces = sample_traces()
    make_run(runs / "golden" / "seed0", traces)
    # seed1: rebook-1001 now does what rebook-1002 did (pass -> fail); rebook-1003 is gone
    by_id = {t["trace_id"]: t for t in traces}
    worse = {**by_id["rebook-1002"], "trace_id": "rebook-1001"}
    second = [worse if t["trace_id"] == "rebook-1001" else t for t in traces]
    second = [t for t in second if t["trace_id"] != "rebook-1003"]
    make_run(runs / "golden" / "seed1", second, finished="2026-12-08T19:00:00Z")
    hostile = json.loads((HOSTILE / "traces" / "trace.json").read_text("utf-8"))
    make_run(runs / "hostile" / "run1", [hostile], policy=HOSTILE / "policy.json",
             benchmark="<script>window.__arh_pwned=2</script>")  # fmt: skip
    # broken: a run whose report does not read (listed, with its problem); unreadable: a run
    # record that does not read (a file that could not be used, as arh status reports it)
    make_run(runs / "broken", traces[:1], benchmark="broken")
    (runs / "broken" / "report.json").write_text("{not json", encoding="utf-8")
    (runs / "unreadable").mkdir()
    (runs / "unreadable" / "run.json").write_text("{not json", encoding="utf-8")
    (runs / "reports").mkdir()
    validate(POLICY, SAMPLES / "traces", runs / "reports" / "samples.json")
    (runs / "reports" / "notes.json").write_text('{"not": "a report"}', encoding="utf-8")
    (runs / "baselines").mkdir()
    shutil.copy(runs / "golden" / "seed0" / "report.json", runs / "baselines" / "golden.json")
    # outside: a report and a run whose trace ids hold the secret, reached through links
    outside = base / "outside"
    secret = {**traces[0], "trace_id": OUTSIDE_MARK}
    make_run(outside / "secret-run", [secret], benchmark=OUTSIDE_MARK)
    validate(POLICY, outside / "secret-run" / "traces", outside / "secret.json")
    os.symlink(outside / "secret-run", runs / "linked-run", target_is_directory=True)
    os.symlink(outside / "secret.json", runs / "reports" / "linked.json")
    # a run of the directory whose trace file is a link to a file outside
    seed0 = runs / "golden" / "seed0" / "traces" / "t0.run1.json"
    seed0.unlink()
    os.symlink(outside / "secret-run" / "traces" / "t0.run1.json", seed0)
    return runs
