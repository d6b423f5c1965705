#!/usr/bin/env python3
"""Record the shared real runs again, as a new recording would, and compare: how many findings
``arh compare`` calls new (and resolved) when nothing but the call ids changed.

A new recording of the same runs gives every tool call a new id. This script rewrites every call
id of the tau-bench airline runs and of the AgentDojo banking and Slack user-task runs in
../shared/data/real-traces (each distinct id of a record to a fresh one, the same within the
record), validates the originals and the copies with the sample policies, and compares the two
reports twice: as ``arh compare`` does (converted traces matched by their stable step
references), and by step id alone (as arh did before step references, and as 0.2.x does). It
prints one Markdown row per data set::

    python tools/rerecord_check.py

Nothing is written into the repository; the copies go to a temporary directory.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agent_reliability_harness.io.load import load_policy
from agent_reliability_harness.model.report import RunReport
from agent_reliability_harness.regression.compare import CompareResult, compare_reports
from agent_reliability_harness.regression.gate import evaluate_gate
from agent_reliability_harness.runner import run_validation

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("ARH_SHARED_DIR", ROOT.parent / "shared"))
REAL = SHARED / "data" / "real-traces"
TAU = REAL / "tau-bench" / "historical_trajectories" / "gpt-4o-airline.json"
AGENTDOJO = REAL / "agentdojo" / "runs"
POLICIES = ROOT / "samples" / "policies"
ID_KEYS = frozenset({"id", "tool_call_id", "tool_use_id", "call_id"})


def call_ids(value: Any) -> Iterator[str]:
    """The ids of the tool calls in a record: OpenAI ``tool_calls`` and Anthropic ``tool_use``."""
    if isinstance(value, dict):
        for key, child in value.items():
            if key == "tool_calls" and isinstance(child, list):
                for call in child:
                    if isinstance(call, dict) and isinstance(call.get("id"), str) and call["id"]:
                        yield call["id"]
            yield from call_ids(child)
        if value.get("type") == "tool_use" and isinstance(value.get("id"), str):
            yield value["id"]
    elif isinstance(value, list):
        for child in value:
            yield from call_ids(child)


def replaced(value: Any, fresh: dict[str, str]) -> Any:
    """``value`` with every id member that names a call given its fresh id."""
    if isinstance(value, dict):
        return {
            key: fresh.get(child, child)
            if key in ID_KEYS and isinstance(child, str)
            else replaced(child, fresh)
            for key, child in value.items()
        }
    if isinstance(value, list):
        return [replaced(child, fresh) for child in value]
    return value


def recorded_again(record: Any) -> Any:
    """The record with every call id replaced, deterministically (a hash of the old id)."""
    fresh = {
        old: "call_" + hashlib.sha256(f"again:{old}".encode()).hexdigest()[:24]
        for old in sorted(set(call_ids(record)))
    }
    return replaced(record, fresh)


def by_step_id(run: RunReport) -> RunReport:
    """The report as one without step references: its findings are matched by step id."""
    reports = tuple(dataclasses.replace(report, step_ids=None) for report in run.reports)
    return dataclasses.replace(run, reports=reports)


def row(name: str, baseline: RunReport, candidate: RunReport) -> str:
    def cells(result: CompareResult) -> str:
        new = sum(len(delta.new_findings) for delta in result.traces)
        resolved = sum(len(delta.resolved_findings) for delta in result.traces)
        verdict = "PASS" if evaluate_gate(result).passed else "FAIL"
        return f"{new} / {resolved}, {verdict}"

    findings = sum(len(r.findings) for r in baseline.reports)
    before = compare_reports(by_step_id(baseline), by_step_id(candidate))
    now = compare_reports(baseline, candidate)
    return f"| {name} | {len(baseline.reports):,} | {findings:,} | {cells(before)} | {cells(now)} |"


def validate(policy: str, inputs: list[str], **options: Any) -> RunReport:
    def fail(error: Exception) -> None:
        raise SystemExit(f"unexpected input error: {error}")

    return run_validation(load_policy(str(POLICIES / policy)), inputs, on_error=fail, **options)


def main() -> int:
    if not TAU.is_file() or not AGENTDOJO.is_dir():
        print(f"the shared real traces are not at {REAL} (set ARH_SHARED_DIR)", file=sys.stderr)
        return 1
    print("| Data (sample policy) | Traces | Findings | By step id: new / resolved, gate "
          "| By step reference (arh compare): new / resolved, gate |")  # fmt: skip
    print("|---|---:|---:|---|---|")
    with tempfile.TemporaryDirectory() as scratch:
        again = Path(scratch) / "tau.json"
        records = json.loads(TAU.read_text(encoding="utf-8"))
        again.write_text(json.dumps([recorded_again(r) for r in records]), encoding="utf-8")
        options: dict[str, Any] = {"messages_at": "/traj", "trace_id_at": ["/task_id", "/trial"]}
        first = validate("tau-airline.json", [str(TAU)], **options)
        second = validate("tau-airline.json", [str(again)], **options)
        print(row("tau-bench airline (tau-airline.json)", first, second))
        for suite in ("banking", "slack"):
            runs = sorted(AGENTDOJO.glob(f"*/{suite}/user_task_*/**/*.json"))
            copies = Path(scratch) / suite
            for path in runs:
                target = copies / path.relative_to(AGENTDOJO)
                target.parent.mkdir(parents=True, exist_ok=True)
                record = json.loads(path.read_text(encoding="utf-8"))
                target.write_text(json.dumps(recorded_again(record)), encoding="utf-8")
            policy = f"agentdojo-{suite}.json"
            here = os.getcwd()
            try:  # trace ids are relative paths: the same from both folders
                os.chdir(AGENTDOJO)
                first = validate(policy, [f"./{p.relative_to(AGENTDOJO)}" for p in runs])
                os.chdir(copies)
                second = validate(policy, [f"./{p.relative_to(AGENTDOJO)}" for p in runs])
            finally:
                os.chdir(here)
            print(row(f"AgentDojo {suite} user-task runs ({policy})", first, second))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
