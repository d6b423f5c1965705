"""The REST API's JSON documents (each described by ``schemas/api-<name>.schema.json``)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from agent_reliability_harness.regression.compare import compare_reports
from agent_reliability_harness.regression.gate import evaluate_gate
from agent_reliability_harness.render.compare import render_compare_json
from agent_reliability_harness.serve.index import Index, LoadedRun
from agent_reliability_harness.serve.views import (
    Filters,
    latest,
    run_summary,
    trace_row,
)

__all__ = ["compare_document", "run_document", "runs_document", "status_document"]

SCHEMA_VERSION = "1"


def status_document(index: Index, now: datetime) -> dict[str, Any]:
    """``/api/status``: each benchmark's latest run and its baseline."""
    benchmarks = []
    for name, runs in latest(index).items():
        baseline = index.baseline(name)
        benchmarks.append(
            {
                "benchmark": name,
                "runs": len(runs),
                "latest": run_summary(runs[0], now),
                "baseline": None if baseline is None else baseline.id,
            }
        )
    return {
        "kind": "arh-serve-status",
        "schema_version": SCHEMA_VERSION,
        "runs": len(index.runs),
        "benchmarks": benchmarks,
        "errors": list(index.errors),
    }


def runs_document(index: Index, now: datetime) -> dict[str, Any]:
    """``/api/runs``: every run and report, in id order."""
    return {
        "kind": "arh-serve-runs",
        "schema_version": SCHEMA_VERSION,
        "runs": [run_summary(run, now) for run in index.runs.values()],
    }


def run_document(run: LoadedRun, filters: Filters, now: datetime) -> dict[str, Any]:
    """``/api/runs/{id}``: one run, its record, and its traces that pass the filters."""
    return {
        "kind": "arh-serve-run",
        "schema_version": SCHEMA_VERSION,
        "run": run_summary(run, now),
        "record": None if run.record is None else dict(run.record),
        "filters": filters.to_dict(),
        "traces": [trace_row(run, report) for report in filters.apply(run)],
    }


def compare_document(base: LoadedRun, head: LoadedRun) -> dict[str, Any]:
    """``/api/compare?base=&head=``: what ``arh compare --json-out`` writes for the two runs'
    reports, with the default gate (fail on regressions)."""
    assert base.report is not None
    assert head.report is not None
    result = compare_reports(base.report, head.report)
    comparison = json.loads(render_compare_json(result, evaluate_gate(result)))
    return {
        "kind": "arh-serve-compare",
        "schema_version": SCHEMA_VERSION,
        "base": base.id,
        "head": head.id,
        "comparison": comparison,
    }
