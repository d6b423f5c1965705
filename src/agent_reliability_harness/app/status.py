"""``arh status``: one screen on the health of every benchmark in a runs directory (docs/status.md).

For each benchmark: the latest run's pass rate with its Wilson 95% interval, its drift against the
committed baseline (the pass-rate delta, and whether ``arh compare``'s gate would call it a
regression), the integrity of its dataset, the state of the judge's calibration and the age of the
run. The current time is read here, and only when ``--now`` does not give it.
"""

from __future__ import annotations

import json
import os
import re
import sys
from argparse import Namespace
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from agent_reliability_harness.app import Status, worst
from agent_reliability_harness.app.output import error, say
from agent_reliability_harness.app.runs import (
    Run,
    RunsIndex,
    read_run_report,
    rfc3339,
    scan_runs,
)
from agent_reliability_harness.errors import InputError
from agent_reliability_harness.harness.datasets import files_sha256
from agent_reliability_harness.model.report import RunReport
from agent_reliability_harness.regression import compare_reports, evaluate_gate
from agent_reliability_harness.regression.stats import wilson_interval
from agent_reliability_harness.render._text import terminal_safe

__all__ = ["BenchmarkStatus", "StatusReport", "parse_age", "status", "status_of"]

STATUS_SCHEMA_VERSION: Final = "1"
_REASONS_SHOWN: Final = 5  # gate reasons printed under a regression
_AGE: Final = re.compile(r"([0-9]{1,9})([smhdw])")
_UNITS: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_age(text: str) -> int:
    """``--max-age``: a whole number and a unit (``s``, ``m``, ``h``, ``d`` or ``w``) as seconds;
    a ValueError for anything else."""
    found = _AGE.fullmatch(text.strip())
    if found is None:
        raise ValueError(
            f"expected a whole number and a unit s, m, h, d or w (such as 7d), got {text!r}"
        )
    return int(found.group(1)) * _UNITS[found.group(2)]


def _age_text(seconds: int | None) -> str:
    if seconds is None:
        return "unknown"
    if seconds < 0:
        return "in the future"
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes}m"
    if minutes:
        return f"{minutes}m"
    return f"{secs}s"


@dataclass(frozen=True, slots=True)
class BenchmarkStatus:
    """The state of one benchmark: its latest run and what was found about it. ``problems``
    are the reasons for a non-zero ``status``, one line each."""

    benchmark: str
    runs: int
    latest: Run
    interval: tuple[float, float] | None
    baseline: dict[str, Any] | None
    dataset: dict[str, Any]
    judge: dict[str, Any]
    age_seconds: int | None
    stale: bool
    problems: tuple[str, ...]
    status: Status

    def to_dict(self) -> dict[str, Any]:
        run = self.latest
        return {
            "benchmark": self.benchmark,
            "runs": self.runs,
            "latest": {
                "id": run.id,
                "kind": run.kind,
                "run_id": run.run_id,
                "agent": run.agent,
                "finished_at": None if run.finished_at is None else rfc3339(run.finished_at),
                "summary": run.counts.to_dict(),
            },
            "pass_rate": run.counts.pass_rate,
            "interval": (
                None
                if self.interval is None
                else {"level": 0.95, "low": self.interval[0], "high": self.interval[1]}
            ),
            "baseline": self.baseline,
            "dataset": self.dataset,
            "judge": self.judge,
            "age_seconds": self.age_seconds,
            "stale": self.stale,
            "problems": list(self.problems),
            "status": int(self.status),
        }


@dataclass(frozen=True, slots=True)
class StatusReport:
    """Everything ``arh status`` found: a :class:`BenchmarkStatus` per benchmark (by name), the
    inputs that could not be used, and the exit status."""

    runs_dir: str
    baselines: str
    datasets: str
    now: datetime
    max_age: int | None
    benchmarks: tuple[BenchmarkStatus, ...]
    errors: tuple[InputError, ...]
    status: Status

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "arh-status",
            "schema_version": STATUS_SCHEMA_VERSION,
            "runs_dir": self.runs_dir,
            "baselines": self.baselines,
            "datasets": self.datasets,
            "now": rfc3339(self.now),
            "max_age_seconds": self.max_age,
            "benchmarks": [b.to_dict() for b in self.benchmarks],
            "errors": [e.to_dict() for e in self.errors],
            "status": int(self.status),
        }


def _judge_state(report: RunReport | None) -> dict[str, Any]:
    """Whether the run used a judge and, if so, whether a calibration record let it gate."""
    judges = sorted(
        {
            (r.judge.rubric, r.judge.rubric_version, r.judge.model, r.judge.gating)
            for r in (report.reports if report is not None else ())
            if r.judge is not None
        }
    )
    gating = {judge[3] for judge in judges}
    if not judges:
        state = "none"
    elif gating == {True}:
        state = "calibrated"
    elif gating == {False}:
        state = "uncalibrated"
    else:
        state = "partly_calibrated"
    return {
        "state": state,
        "judges": [
            {"rubric": rubric, "rubric_version": version, "model": model, "gating": gates}
            for rubric, version, model, gates in judges
        ],
    }


class _Checker:
    """Works out the state of each benchmark, collecting the inputs that could not be used."""

    def __init__(self, args: Namespace, index: RunsIndex, now: datetime) -> None:
        self.baselines: str = args.baselines
        self.datasets: str = args.datasets
        self.max_age: int | None = args.max_age
        self.now = now
        self.index = index
        self.errors: list[InputError] = list(index.errors)
        self.hashes: dict[str, str | InputError] = {}  # by dataset directory

    def benchmark(self, name: str, runs: tuple[Run, ...]) -> BenchmarkStatus:
        latest = runs[-1]
        counts = latest.counts
        problems: list[str] = []
        statuses = [Status.OK]
        report: RunReport | None = None
        try:
            report = read_run_report(latest)
        except InputError as exc:
            self.errors.append(exc)
            problems.append(f"the report of run {latest.id} cannot be read")
            statuses.append(Status.INPUT)
        if counts.infrastructure_failure:
            problems.append(
                f"{counts.infrastructure_failure} of {counts.runs} task runs failed in the "
                "infrastructure (infrastructure_failure)"
            )
            statuses.append(Status.INFRASTRUCTURE)
        if counts.evaluation_error:
            problems.append(
                f"{counts.evaluation_error} of {counts.runs} task runs could not be evaluated "
                "(evaluation_error)"
            )
            statuses.append(Status.INPUT)
        baseline, status = self._drift(name, latest, report, problems)
        statuses.append(status)
        dataset, status = self._dataset(latest, problems)
        statuses.append(status)
        age = (
            None
            if latest.finished_at is None
            else int((self.now - latest.finished_at).total_seconds() // 1)
        )
        stale = self.max_age is not None and age is not None and age > self.max_age
        if stale:
            problems.append(
                f"the latest run is {_age_text(age)} old, older than --max-age "
                f"({_age_text(self.max_age)})"
            )
            statuses.append(Status.FAILED)
        return BenchmarkStatus(
            name,
            len(runs),
            latest,
            wilson_interval(counts.passed, counts.runs) if counts.runs else None,
            baseline,
            dataset,
            _judge_state(report),
            age,
            stale,
            tuple(problems),
            worst(*statuses),
        )

    def _drift(
        self, name: str, latest: Run, report: RunReport | None, problems: list[str]
    ) -> tuple[dict[str, Any] | None, Status]:
        """The comparison with the committed baseline ``<baselines>/<name>.json``, if any."""
        found = self.index.baseline(name)
        if found is None:
            path = os.path.join(self.baselines, f"{name}.json")
            failed = next((e for e in self.index.errors if e.source == path), None)
            if failed is None:
                return None, Status.OK
            problems.append(f"the baseline {path} cannot be read")
            return {"path": path, "error": str(failed)}, Status.INPUT
        path = found.path
        baseline = read_run_report(found)
        total = len(baseline.reports)
        rate = baseline.passed_traces / total if total else None
        current = latest.counts.pass_rate
        delta = None if rate is None or current is None else current - rate
        out: dict[str, Any] = {
            "path": path,
            "pass_rate": rate,
            "delta": delta,
            "regression": None,
            "reasons": [],
        }
        if report is None:
            return out, Status.OK  # (the unreadable report is a problem already)
        gate = evaluate_gate(compare_reports(baseline, report), "regressions", None)
        out["regression"] = not gate.passed
        out["reasons"] = list(gate.reasons)
        if gate.passed:
            return out, Status.OK
        problems.append(f"regression against the baseline {path}")
        # one screen: the first reasons, then how many more (the JSON output has them all)
        problems.extend(f"  {reason}" for reason in gate.reasons[:_REASONS_SHOWN])
        if len(gate.reasons) > _REASONS_SHOWN:
            more = len(gate.reasons) - _REASONS_SHOWN
            problems.append(f"  and {more} more (--json, or arh compare, lists them all)")
        return out, Status.FAILED

    def _dataset(self, latest: Run, problems: list[str]) -> tuple[dict[str, Any], Status]:
        """The dataset's SHA-256 now against the one the run record gives."""
        if latest.dataset is None:
            return {"state": "not_applicable", "path": None, "recorded": None, "computed": None}, (
                Status.OK
            )
        directory = os.path.join(self.datasets, latest.dataset.name)
        out: dict[str, Any] = {
            "state": "not_found",
            "path": directory,
            "recorded": latest.dataset.sha256,
            "computed": None,
        }
        if not os.path.isfile(os.path.join(directory, "dataset.json")):
            return out, Status.OK
        if directory not in self.hashes:
            try:
                self.hashes[directory] = files_sha256(directory)
            except InputError as exc:
                self.hashes[directory] = exc
                self.errors.append(exc)
        found = self.hashes[directory]
        if isinstance(found, InputError):
            out["state"] = "error"
            problems.append(f"the dataset in {directory} cannot be read")
            return out, Status.INPUT
        out["computed"] = found
        if found == latest.dataset.sha256:
            out["state"] = "ok"
            return out, Status.OK
        out["state"] = "mismatch"
        problems.append(
            f"dataset {latest.dataset.name}: the files in {directory} hash to {found[:12]}..., "
            f"the run recorded {latest.dataset.sha256[:12]}..."
        )
        return out, Status.FAILED


def status_of(args: Namespace, now: datetime) -> StatusReport:
    """What ``arh status`` reports for ``args.runs_dir`` at the time ``now``."""
    index = scan_runs(args.runs_dir, baselines=args.baselines)
    checker = _Checker(args, index, now)
    benchmarks = tuple(
        checker.benchmark(name, runs) for name, runs in sorted(index.benchmarks().items())
    )
    errors = tuple(sorted(checker.errors, key=lambda e: (e.source or "", e.pointer or "")))
    found = worst(
        *(b.status for b in benchmarks),
        Status.INPUT if errors or not benchmarks else Status.OK,
    )
    return StatusReport(
        args.runs_dir,
        args.baselines,
        args.datasets,
        now,
        args.max_age,
        benchmarks,
        errors,
        found,
    )


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _row(b: BenchmarkStatus) -> list[str]:
    counts = b.latest.counts
    rate = counts.pass_rate
    interval = "-" if b.interval is None else f"{_percent(b.interval[0])}-{_percent(b.interval[1])}"
    if b.baseline is None:
        base, drift = "none", "-"
    elif "error" in b.baseline:
        base, drift = "unreadable", "-"
    else:
        base = _percent(b.baseline["pass_rate"])
        delta = b.baseline["delta"]
        shown = "-" if delta is None else f"{100 * delta:+.1f} pts"
        verdict = {True: "regression", False: "ok", None: "?"}[b.baseline["regression"]]
        drift = f"{shown} {verdict}"
    dataset = b.dataset["state"].replace("_", " ")
    judge = b.judge["state"].replace("_", " ")
    return [
        b.benchmark,
        str(b.runs),
        b.latest.id,
        f"{_percent(rate)} ({counts.passed}/{counts.runs})",
        interval,
        base,
        drift,
        dataset,
        judge,
        _age_text(b.age_seconds),
        "ok" if b.status is Status.OK else f"exit {int(b.status)}",
    ]


_HEADER: Final = [
    "benchmark",
    "runs",
    "latest run",
    "pass rate",
    "95% interval",
    "baseline",
    "drift",
    "dataset",
    "judge",
    "age",
    "status",
]


def render_status(report: StatusReport) -> str:
    """The console report: a table of the benchmarks, their problems, and a verdict line."""
    rows = [_HEADER, *(_row(b) for b in report.benchmarks)]
    rows = [[terminal_safe(cell) for cell in row] for row in rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_HEADER))]
    lines = [
        "  ".join(
            cell.rjust(width) if i == 1 else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    ]
    for b in report.benchmarks:
        lines += [f"{terminal_safe(b.benchmark)}: {terminal_safe(p)}" for p in b.problems]
    count = len(report.benchmarks)
    troubled = sum(b.status is not Status.OK for b in report.benchmarks)
    noun = "benchmark" if count == 1 else "benchmarks"
    if not count:
        verdict = f"no runs found in {report.runs_dir}"
    elif troubled:
        verdict = f"{count} {noun}, {troubled} need{'s' if troubled == 1 else ''} attention"
    else:
        verdict = f"{count} {noun}, all fine"
    if report.errors:
        verdict += f" · {len(report.errors)} input error{'s' if len(report.errors) > 1 else ''}"
    lines.append(verdict)
    if not count:
        lines = lines[-1:]
    return "\n".join(lines) + "\n"


def status(args: Namespace) -> Status:
    """Run ``arh status`` with checked arguments (docs/status.md has the exit statuses)."""
    now = args.now if args.now is not None else datetime.now(UTC)
    report = status_of(args, now)
    if args.json:
        say(json.dumps(report.to_dict(), indent=2, sort_keys=True) + "\n", sys.stdout)
    else:
        say(render_status(report), sys.stdout)
    for exc in report.errors:
        error(str(exc))
    return report.status
