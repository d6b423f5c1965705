"""The dashboard's index of a runs directory: what ``app/runs.py`` finds there (the same runs,
reports and baselines as ``arh status``, by the same rules: docs/status.md, "What RUNS_DIR may
hold"), with every run's validation report read once when the index is built.

The server looks runs and traces up here by id and never joins a path from a request: the only
files it opens are those the scan found, each checked to resolve inside the runs directory
(symbolic links included); a trace file is checked again when it is read.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from agent_reliability_harness.app.runs import (
    OUTCOMES,
    Run,
    RunKind,
    RunsIndex,
    read_run_report,
    rfc3339,
    scan_runs,
)
from agent_reliability_harness.errors import InputError
from agent_reliability_harness.io.read import read_json_file
from agent_reliability_harness.model.report import RunReport
from agent_reliability_harness.model.trace import Trace

__all__ = ["FAILURE_KINDS", "Index", "LoadedRun", "scan"]

FAILURE_KINDS: Final = OUTCOMES[1:]  # agent_failure, evaluation_error, infrastructure_failure
_MAX_FILE: Final = 1 << 30  # the largest report or trace read (1 GiB)


@dataclass(frozen=True, slots=True)
class LoadedRun:
    """A run of the index (``app.runs.Run``) with its validation report read (None when it
    could not be: see ``problems``)."""

    run: Run
    report: RunReport | None
    problems: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return self.run.id

    @property
    def kind(self) -> RunKind:
        return self.run.kind

    @property
    def benchmark(self) -> str:
        return self.run.benchmark

    @property
    def record(self) -> Mapping[str, Any] | None:
        return self.run.record

    @property
    def finished_at(self) -> str | None:
        """The run record's ``timings.finished_at`` in UTC (None: a report records no time)."""
        return None if self.run.finished_at is None else rfc3339(self.run.finished_at)

    def finished(self) -> datetime | None:
        return self.run.finished_at

    @property
    def traces(self) -> int:
        return 0 if self.report is None else len(self.report.reports)

    @property
    def passed(self) -> int:
        return 0 if self.report is None else self.report.passed_traces

    @property
    def pass_rate(self) -> float | None:
        """The run record's ``summary.passed / summary.runs``, or a report's traces passed
        over traces (None: none), as ``arh status`` shows it."""
        rate = self.run.counts.pass_rate
        return None if rate is None else round(rate, 6)

    @property
    def failures(self) -> dict[str, int]:
        """Failures by kind: the run record's counts, or a report's failing traces
        (``agent_failure``)."""
        counts = self.run.counts
        return {kind: getattr(counts, kind) for kind in FAILURE_KINDS}

    def outcome(self, trace_id: str, passed: bool) -> str:
        """A trace's outcome: the run record's, else ``passed`` or ``agent_failure``."""
        return self.run.outcomes.get(trace_id) or ("passed" if passed else "agent_failure")


@dataclass(frozen=True, slots=True)
class Index:
    """The runs, reports and baselines of one directory, by id, in id order, and the files
    that could not be used (text, names relative to the directory)."""

    root: str
    scanned: RunsIndex
    runs: Mapping[str, LoadedRun]
    errors: tuple[str, ...] = ()

    def benchmarks(self) -> dict[str, list[LoadedRun]]:
        """Runs by benchmark (benchmarks in name order; runs latest first, as ``arh status``
        orders them, then the benchmark's baseline)."""
        groups: dict[str, list[LoadedRun]] = {}
        for run in reversed(self.scanned.runs):
            groups.setdefault(run.benchmark, []).append(self.runs[run.id])
        for run in self.scanned.baselines:
            groups.setdefault(run.benchmark, []).append(self.runs[run.id])
        return dict(sorted(groups.items()))

    def baseline(self, benchmark: str) -> LoadedRun | None:
        """The baseline of a benchmark: ``baselines/<benchmark>.json``."""
        found = self.scanned.baseline(benchmark)
        return None if found is None else self.runs[found.id]

    def load_trace(self, run: LoadedRun, trace_id: str) -> Trace | str | None:
        """The trace of ``trace_id`` in ``run``: the trace, a problem reading it (text), or
        None when the run has no trace files (a plain report or a baseline)."""
        if run.kind != "run":
            return None
        try:
            path = self.scanned.trace_file(run.run, trace_id)
            try:
                return Trace.from_dict(read_json_file(path, _MAX_FILE))
            except InputError as exc:
                raise (exc if exc.source else exc.located(path)) from None
        except InputError as exc:
            return _problem(self.root, exc)


def _problem(root: str, exc: InputError) -> str:
    """An input error's text, with file names relative to the runs directory."""
    return str(exc).replace(root.rstrip(os.sep) + os.sep, "")


def scan(directory: str) -> Index:
    """Scan ``directory`` and read each run's report (raises ``InputError`` when the directory
    is not a readable directory)."""
    try:
        root = os.path.realpath(directory, strict=True)
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read the runs directory: {exc}", source=directory) from None
    if not os.path.isdir(root):
        raise InputError("not a directory", source=directory)
    scanned = scan_runs(root, max_input_bytes=_MAX_FILE)
    runs: dict[str, LoadedRun] = {}
    for run in (*scanned.runs, *scanned.baselines):
        try:
            runs[run.id] = LoadedRun(run, read_run_report(run, _MAX_FILE))
        except InputError as exc:
            runs[run.id] = LoadedRun(run, None, (_problem(root, exc),))
    errors = tuple(_problem(root, exc) for exc in scanned.errors)
    return Index(root, scanned, dict(sorted(runs.items())), errors)
