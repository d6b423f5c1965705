"""The index of a runs directory: every run (a directory with a ``run.json`` run record, as
``arh run -o`` writes it) and every plain validation report (``arh validate --json-out``) under
it, read once when the index is built.

The server looks runs and traces up here by id and never joins a path from a request: the only
files it opens are those the scan found, each checked to resolve inside the runs directory
(symbolic links included). This reader stands in for ``app/runs.py`` (``arh status``) and keeps
to what the runs directory layout of ``arh run`` fixes.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Literal

from agent_reliability_harness.errors import InputError
from agent_reliability_harness.io.read import read_json_file
from agent_reliability_harness.model.report import RunReport
from agent_reliability_harness.model.trace import Trace

__all__ = ["FAILURE_KINDS", "Run", "RunsIndex", "scan"]

RunKind = Literal["run", "report", "baseline"]
FAILURE_KINDS: Final = ("agent_failure", "evaluation_error", "infrastructure_failure")
RUN_RECORD: Final = "run.json"
RUN_REPORT: Final = "report.json"
BASELINES: Final = "baselines"
# a plain report is a JSON object with these keys (what `arh validate --json-out` writes)
_REPORT_KEYS: Final = frozenset({"reports", "summary"})
_MAX_FILE: Final = 1 << 30  # the largest report or trace read (1 GiB)


@dataclass(frozen=True, slots=True)
class Run:
    """One run or report of the directory, as the scan read it."""

    id: str  # its path relative to the runs directory, with "/" (unique by construction)
    kind: RunKind
    benchmark: str
    report: RunReport | None  # None when it could not be read (see problems)
    record: Mapping[str, Any] | None = None  # the run record (kind "run")
    problems: tuple[str, ...] = ()
    trace_files: Mapping[str, str] = field(default_factory=dict)  # trace id -> checked path
    outcomes: Mapping[str, str] = field(default_factory=dict)  # trace id -> outcome (record)
    finished_at: str | None = None  # RFC 3339, from the run record; never invented

    @property
    def traces(self) -> int:
        return 0 if self.report is None else len(self.report.reports)

    @property
    def passed(self) -> int:
        return 0 if self.report is None else self.report.passed_traces

    @property
    def pass_rate(self) -> float | None:
        """The record's pass rate for a run, else passed traces over traces (None: none)."""
        summary = self.record.get("summary") if self.record is not None else None
        if isinstance(summary, dict) and isinstance(summary.get("pass_rate"), int | float):
            return float(summary["pass_rate"])
        return round(self.passed / self.traces, 6) if self.traces else None

    @property
    def failures(self) -> dict[str, int]:
        """Failures by kind: the run record's counts, or for a report its failing traces
        (``agent_failure``) and unreadable inputs (``evaluation_error``)."""
        summary = self.record.get("summary") if self.record is not None else None
        if isinstance(summary, dict):
            return {
                kind: value if isinstance(value := summary.get(kind), int) else 0
                for kind in FAILURE_KINDS
            }
        if self.report is None:
            return dict.fromkeys(FAILURE_KINDS, 0)
        return {
            "agent_failure": self.traces - self.passed,
            "evaluation_error": len(self.report.input_errors),
            "infrastructure_failure": 0,
        }

    def outcome(self, trace_id: str, passed: bool) -> str:
        """A trace's outcome: the run record's, else ``passed`` or ``agent_failure``."""
        return self.outcomes.get(trace_id) or ("passed" if passed else "agent_failure")

    def finished(self) -> datetime | None:
        """``finished_at`` as a time, when it is a valid RFC 3339 time."""
        if self.finished_at is None:
            return None
        try:
            when = datetime.fromisoformat(self.finished_at)
        except ValueError:
            return None
        return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class RunsIndex:
    """The runs of one directory, by id, in id order."""

    root: str
    runs: Mapping[str, Run]

    def benchmarks(self) -> dict[str, list[Run]]:
        """Runs by benchmark (benchmarks in name order; runs latest first, then by id)."""
        groups: dict[str, list[Run]] = {}
        for run in self.runs.values():
            groups.setdefault(run.benchmark, []).append(run)
        return {
            name: sorted(runs, key=lambda r: (-_timestamp(r), r.id))
            for name, runs in sorted(groups.items())
        }

    def load_trace(self, run: Run, trace_id: str) -> Trace | str | None:
        """The trace of ``trace_id`` in ``run``: the trace, a problem reading it (text), or
        None when the run has no trace file for it (a plain report)."""
        path = run.trace_files.get(trace_id)
        if path is None and run.kind == "run":
            return "the run has no trace file for it (missing, or not inside the runs directory)"
        if path is None:
            return None
        if not _inside(self.root, path):  # checked again: the file may have changed since
            return f"{_relative(self.root, path)}: not inside the runs directory"
        try:
            return Trace.from_dict(read_json_file(path, _MAX_FILE))
        except InputError as exc:
            return _problem(self.root, exc if exc.source else exc.located(path))


def _problem(root: str, exc: InputError) -> str:
    """An input error's text, with file names relative to the runs directory."""
    return str(exc).replace(root + os.sep, "")


def _timestamp(run: Run) -> float:
    when = run.finished()
    return when.timestamp() if when is not None else float("-inf")


def _relative(root: str, path: str) -> str:
    return os.path.relpath(path, root).replace(os.sep, "/")


def _inside(root: str, path: str) -> bool:
    """Whether ``path`` resolves (symbolic links followed) to a regular file under ``root``,
    which is already resolved."""
    try:
        real = os.path.realpath(path, strict=True)
        mode = os.stat(real).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISREG(mode) and os.path.commonpath([root, real]) == root


def scan(directory: str) -> RunsIndex:
    """Scan ``directory`` (raises ``InputError`` when it is not a readable directory)."""
    try:
        root = os.path.realpath(directory, strict=True)
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read the runs directory: {exc}", source=directory) from None
    if not os.path.isdir(root):
        raise InputError("not a directory", source=directory)
    runs: dict[str, Run] = {}
    for run in _walk(root):
        runs[run.id] = run
    return RunsIndex(root, dict(sorted(runs.items())))


def _walk(root: str) -> Iterator[Run]:
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs.sort()
        relative = "" if folder == root else _relative(root, folder)
        if RUN_RECORD in files:
            dirs.clear()  # a run's traces are found through its record
            yield _read_run(root, folder, relative)
            continue
        baselines = relative == BASELINES
        for name in sorted(files):
            if not name.endswith(".json"):
                continue
            path = os.path.join(folder, name)
            if not _inside(root, path):
                continue  # a link that leads out of the directory, or not a file
            run = _read_report(root, path, baselines)
            if run is not None:
                yield run


def _read_report(root: str, path: str, baseline: bool) -> Run | None:
    """A plain report (or a committed baseline); None for another JSON file."""
    run_id = _relative(root, path)
    try:
        data = read_json_file(path, _MAX_FILE)
    except InputError as exc:
        if not baseline:
            return None  # not JSON: not a report
        return Run(run_id, "baseline", _stem(path), None, problems=(_problem(root, exc),))
    if not isinstance(data, dict) or not data.keys() >= _REPORT_KEYS:
        return None
    kind: RunKind = "baseline" if baseline else "report"
    try:
        report = RunReport.from_dict(data)
    except InputError as exc:
        return Run(run_id, kind, _stem(path), None, problems=(_problem(root, exc.located(path)),))
    benchmark = _stem(path) if baseline else _workflows(report)
    return Run(run_id, kind, benchmark, report)


def _stem(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]


def _workflows(report: RunReport) -> str:
    names = sorted({r.workflow for r in report.reports})
    return ",".join(names) if names else "(no traces)"


def _read_run(root: str, folder: str, relative: str) -> Run:
    run_id = relative or "."
    problems: list[str] = []
    record: dict[str, Any] | None = None
    record_path = os.path.join(folder, RUN_RECORD)
    if _inside(root, record_path):
        try:
            data = read_json_file(record_path, _MAX_FILE)
        except InputError as exc:
            problems.append(_problem(root, exc))
        else:
            if isinstance(data, dict):
                record = data
            else:
                problems.append(f"{run_id}/{RUN_RECORD}: the run record is not a JSON object")
    else:
        problems.append(f"{run_id}/{RUN_RECORD}: not a file inside the runs directory")
    report: RunReport | None = None
    report_path = os.path.join(folder, RUN_REPORT)
    if _inside(root, report_path):
        try:
            report = RunReport.from_dict(read_json_file(report_path, _MAX_FILE))
        except InputError as exc:
            problems.append(_problem(root, exc if exc.source else exc.located(report_path)))
    else:
        problems.append(f"{run_id}/{RUN_REPORT}: missing (the run's report)")
    dataset = record.get("dataset") if record is not None else None
    benchmark = dataset.get("name") if isinstance(dataset, dict) else None
    if not isinstance(benchmark, str) or not benchmark:
        benchmark = _workflows(report) if report is not None else "(unknown)"
    trace_files, outcomes = _tasks(root, folder, record, problems, run_id)
    timings = record.get("timings") if record is not None else None
    finished = timings.get("finished_at") if isinstance(timings, dict) else None
    return Run(
        run_id,
        "run",
        benchmark,
        report,
        record,
        tuple(problems),
        trace_files,
        outcomes,
        finished if isinstance(finished, str) else None,
    )


def _tasks(
    root: str, folder: str, record: Mapping[str, Any] | None, problems: list[str], run_id: str
) -> tuple[dict[str, str], dict[str, str]]:
    """The trace files (checked) and outcomes of the record's tasks, by trace id."""
    files: dict[str, str] = {}
    outcomes: dict[str, str] = {}
    tasks = record.get("tasks") if record is not None else None
    if not isinstance(tasks, list):
        return files, outcomes
    for index, task in enumerate(tasks):
        if not isinstance(task, dict) or not isinstance(trace_id := task.get("trace_id"), str):
            continue
        if isinstance(outcome := task.get("outcome"), str):
            outcomes[trace_id] = outcome
        name = task.get("trace")
        if not isinstance(name, str):
            continue
        parts = name.split("/")
        if os.path.isabs(name) or "\\" in name or "\0" in name or ".." in parts:
            problems.append(
                f"{run_id}/{RUN_RECORD}: /tasks/{index}/trace: {name!r} is not a relative "
                "path inside the run"
            )
            continue
        path = os.path.join(folder, *parts)
        if _inside(root, path):
            files[trace_id] = path
    return files, outcomes
