"""Write the runs directories of docs/status.md: run records as `arh run` writes them (the run
record's contract), with validation reports made by `arh validate` of the sample traces.

    python docs/examples/status/make_runs.py    (from the repository's root)
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

from agent_reliability_harness.cli import main

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
POLICY = "../../../samples/policy_trajectory.json"


def dataset_sha256(directory: Path) -> str:
    """The contract's dataset hash: one line `<sha256 of the LF bytes>  <path>` per file."""
    manifest = json.loads((directory / "dataset.json").read_text(encoding="utf-8"))
    lines = ""
    for entry in manifest["files"]:
        data = (directory / entry["path"]).read_bytes().replace(b"\r\n", b"\n")
        lines += f"{hashlib.sha256(data).hexdigest()}  {entry['path']}\n"
    return hashlib.sha256(lines.encode()).hexdigest()


def write_json(path: Path, value: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def run(directory: Path, trace: str, finished_at: str) -> None:
    """A run directory of one task run of the trace file ``trace``."""
    traces = directory / "traces"
    traces.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(HERE / trace, traces / "rebook-1001.run1.json")
    main(
        [
            "validate",
            "--policy",
            POLICY,
            os.path.relpath(traces / "rebook-1001.run1.json", HERE),
            "--json-out",
            os.path.relpath(directory / "report.json", HERE),
            "--quiet",
        ]
    )
    report = json.loads((directory / "report.json").read_text(encoding="utf-8"))
    passed = sum(r["passed"] for r in report["reports"])
    total = len(report["reports"])
    write_json(
        directory / "run.json",
        {
            "kind": "arh-run",
            "schema_version": "1",
            "run_id": "rebooking.react.seed0",
            "agent": {"id": "agent_reliability_harness.harness.agents:react"},
            "dataset": {
                "name": "rebooking",
                "version": "1",
                "sha256": dataset_sha256(HERE / "datasets" / "rebooking"),
                "cases": 1,
                "path": "datasets/rebooking",
            },
            "harness": {"name": "agent-reliability-harness", "version": "0", "rubric": None},
            "seed": 0,
            "repeats": 1,
            "ablations": [],
            "summary": {
                "runs": total,
                "passed": passed,
                "agent_failure": total - passed,
                "evaluation_error": 0,
                "infrastructure_failure": 0,
                "pass_rate": passed / total,
            },
            "cost": {"estimated_usd": 0.0, "actual_usd": 0.0, "price_table": "none"},
            "tasks": [],
            "timings": {
                "started_at": finished_at.replace(":05Z", ":00Z"),
                "finished_at": finished_at,
                "wall_seconds": 5.0,
            },
        },
    )


def main_() -> None:
    os.chdir(HERE)
    for name in ("runs", "regressed"):
        shutil.rmtree(HERE / name, ignore_errors=True)
    run(HERE / "runs" / "rebooking" / "2026-12-07", "pass.json", "2026-12-07T06:00:05Z")
    (HERE / "runs" / "baselines").mkdir()
    shutil.copyfile(
        HERE / "runs" / "rebooking" / "2026-12-07" / "report.json",
        HERE / "runs" / "baselines" / "rebooking.json",
    )
    shutil.copytree(HERE / "runs", HERE / "regressed")
    run(HERE / "regressed" / "rebooking" / "2026-12-08", "regressed.json", "2026-12-08T06:00:05Z")


if __name__ == "__main__":
    main_()
