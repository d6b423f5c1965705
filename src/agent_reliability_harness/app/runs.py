"""What a runs directory holds: the run directories that ``arh run`` writes, plain validation
reports and the committed baselines (docs/status.md, "What RUNS_DIR may hold"). ``arh status`` and
``arh serve`` both read a runs directory through this module, so they find the same runs.

:func:`scan_runs` walks a directory and returns a :class:`RunsIndex`: every run it found, sorted
deterministically, the baselines, and one :class:`InputError` per file that could not be used
(naming the file and the JSON pointer); a bad file never stops the others. The API is
:func:`scan_runs`, :class:`RunsIndex` (with :meth:`RunsIndex.baseline` and
:meth:`RunsIndex.trace_file`), :class:`Run`, :func:`read_run_report`, :func:`parse_rfc3339` and
:func:`rfc3339`.

- A **run directory** is a directory holding ``run.json`` (the run record of docs/contract:
  ``kind`` ``"arh-run"``), at any depth. Its ``report.json`` is its validation report, read by
  :func:`read_run_report` when asked for; its trace files are those the record's ``tasks`` name.
  Nothing else under it is searched.
- A **plain report** is any other ``*.json`` file that is an arh validation report: a JSON object
  with a ``reports`` array (as ``arh validate --json-out`` writes it). Other JSON files (traces,
  policies) are passed over; a ``.json`` file that is not JSON at all, or a report that does not
  read, is an error.
- A **baseline** is a ``*.json`` file directly in the baselines directory (``RUNS_DIR/baselines``
  unless another is given), a validation report whose benchmark is its file name without
  ``.json``. The baselines directory is not searched for runs.
- Names starting with ``.`` are not searched. A symbolic link is followed only when its target is
  inside the runs directory (for a baseline: inside it or the baselines directory); one that
  leads outside is an error, and is never read. The same holds for a run's ``run.json``,
  ``report.json`` and trace files.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Literal

from agent_reliability_harness._decode import bad, json_type, req_str
from agent_reliability_harness.errors import InputError, excerpt, join_pointer
from agent_reliability_harness.io import read_json_file
from agent_reliability_harness.model.report import RunReport

__all__ = [
    "OUTCOMES",
    "RUN_FILE",
    "DatasetRef",
    "Run",
    "RunCounts",
    "RunsIndex",
    "parse_rfc3339",
    "read_run_report",
    "rfc3339",
    "scan_runs",
]

RUN_FILE: Final = "run.json"
REPORT_FILE: Final = "report.json"
BASELINES: Final = "baselines"  # RUNS_DIR/baselines: the default baselines directory
RunKind = Literal["run", "report", "baseline"]
# The outcomes of a task's run in a run record (docs/exit-codes.md, "three kinds of failure").
OUTCOMES: Final = ("passed", "agent_failure", "evaluation_error", "infrastructure_failure")
_COUNTS: Final = ("runs", "passed", "agent_failure", "evaluation_error", "infrastructure_failure")
_SHA256: Final = re.compile(r"[0-9a-f]{64}")
_RFC3339: Final = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:[Zz]|[+-]\d{2}:\d{2})"
)


def parse_rfc3339(text: str, pointer: str) -> datetime:
    """An RFC 3339 date and time with its offset (``2026-12-07T19:00:00Z``) as an aware
    :class:`datetime` in UTC; anything else is an :class:`InputError` at ``pointer``."""
    if _RFC3339.fullmatch(text):
        # fromisoformat takes 6 fraction digits at most: the rest cannot change an age in seconds
        head, _, rest = text.partition(".")
        if rest:
            digits = re.match(r"\d+", rest)
            assert digits is not None
            text = f"{head}.{digits.group()[:6].ljust(6, '0')}{rest[digits.end() :]}"
        try:
            return datetime.fromisoformat(text.upper()).astimezone(UTC)
        except ValueError:
            pass
    raise bad(pointer, f"must be an RFC 3339 date and time with an offset, got {excerpt(text)}")


def rfc3339(moment: datetime) -> str:
    """``moment`` in UTC as RFC 3339 text with ``Z`` (``2026-12-07T19:00:00Z``)."""
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class DatasetRef:
    """The dataset a run record names: its name, version, SHA-256, number of cases and path."""

    name: str
    version: str
    sha256: str
    cases: int
    path: str


@dataclass(frozen=True, slots=True)
class RunCounts:
    """How the runs of tasks ended: ``runs`` in all, and how many passed or failed in each of
    the three ways. From a run record's ``summary``; for a plain report, traces that passed
    and traces with findings (agent failures)."""

    runs: int
    passed: int
    agent_failure: int = 0
    evaluation_error: int = 0
    infrastructure_failure: int = 0

    @property
    def pass_rate(self) -> float | None:
        """``passed / runs``; None for no runs."""
        return self.passed / self.runs if self.runs else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "runs": self.runs,
            "passed": self.passed,
            "agent_failure": self.agent_failure,
            "evaluation_error": self.evaluation_error,
            "infrastructure_failure": self.infrastructure_failure,
            "pass_rate": self.pass_rate,
        }


@dataclass(frozen=True, slots=True)
class Run:
    """One run found in a runs directory.

    ``id`` is its path relative to the runs directory, with ``/`` between names: the run
    directory (``golden/react-seed0``), the plain report file (``nightly/report.json``) or the
    baseline (``baselines/golden.json``), unique within the directory. ``run_id`` is the id its
    run record gives (None for a plain report or a baseline). ``benchmark`` is the dataset's name
    (run records), or the sorted workflows of the report's traces joined with ``+`` (plain
    reports; ``(none)`` when no trace names one), or the file name without ``.json`` (baselines).
    ``finished_at`` is the run record's ``timings.finished_at`` (a plain report records no time:
    None). ``report`` is the plain report or baseline as read (None for a run directory: see
    :func:`read_run_report`). ``record`` is the run record as read; ``traces`` the trace file of
    each trace id its ``tasks`` name (a path under :attr:`path`, see
    :meth:`RunsIndex.trace_file`) and ``outcomes`` each trace id's outcome.
    """

    id: str
    kind: RunKind
    path: str
    benchmark: str
    counts: RunCounts
    run_id: str | None = None
    agent: str | None = None
    dataset: DatasetRef | None = None
    finished_at: datetime | None = None
    rubric: object = None
    report: RunReport | None = field(default=None, compare=False, repr=False)
    record: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)
    traces: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)
    outcomes: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    @property
    def report_path(self) -> str:
        """The file of its validation report."""
        return os.path.join(self.path, REPORT_FILE) if self.kind == "run" else self.path


@dataclass(frozen=True, slots=True)
class RunsIndex:
    """What :func:`scan_runs` found: the runs, sorted by benchmark, then by time (runs without a
    time first), then by id; the files that could not be used, in the order of their paths; and
    the baselines, by id."""

    root: str
    runs: tuple[Run, ...]
    errors: tuple[InputError, ...]
    baselines: tuple[Run, ...] = ()

    def benchmarks(self) -> dict[str, tuple[Run, ...]]:
        """The runs of each benchmark, in the order of :attr:`runs` (the latest last)."""
        out: dict[str, list[Run]] = {}
        for run in self.runs:
            out.setdefault(run.benchmark, []).append(run)
        return {name: tuple(runs) for name, runs in out.items()}

    def get(self, run_id: str) -> Run | None:
        """The run or baseline whose :attr:`Run.id` is ``run_id``."""
        return next((run for run in (*self.runs, *self.baselines) if run.id == run_id), None)

    def baseline(self, benchmark: str) -> Run | None:
        """The baseline of ``benchmark``: the file ``<baselines>/<benchmark>.json``."""
        return next((run for run in self.baselines if run.benchmark == benchmark), None)

    def trace_file(self, run: Run, trace_id: str) -> str:
        """The trace file of ``trace_id`` in ``run``, checked (again: it may have changed since
        the scan) to be a file inside the runs directory; an :class:`InputError` if not."""
        name = run.traces.get(trace_id)
        where = os.path.join(run.path, RUN_FILE)
        if name is None:
            raise InputError(f"no trace file for trace {excerpt(trace_id)}", source=where)
        path = os.path.join(run.path, *name.split("/"))
        if not _inside_file(os.path.realpath(self.root), path):
            raise InputError("not inside the runs directory, or not a file", source=path)
        return path


def _inside(top: str, real: str) -> bool:
    """Whether the resolved path ``real`` is ``top`` or under it."""
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def _inside_file(top: str, path: str) -> bool:
    """Whether ``path`` resolves (links followed) to a regular file under ``top``."""
    real = os.path.realpath(path)
    return _inside(top, real) and os.path.isfile(real)


_OUTSIDE: Final = "a symbolic link that leads outside the runs directory: not followed"


def _order(run: Run) -> tuple[str, int, datetime, str]:
    timed = run.finished_at is not None
    when = run.finished_at if run.finished_at is not None else datetime.min.replace(tzinfo=UTC)
    return (run.benchmark, int(timed), when, run.id)


def scan_runs(
    root: str, *, baselines: str | None = None, max_input_bytes: int | None = None
) -> RunsIndex:
    """Every run under ``root`` and every baseline in ``baselines`` (default
    ``<root>/baselines``; see the module's docstring). A ``root`` that is not a readable
    directory is one error."""
    limit = {} if max_input_bytes is None else {"max_input_bytes": max_input_bytes}
    errors: list[InputError] = []
    runs: list[Run] = []
    try:
        top = os.path.realpath(root)
        if not os.path.isdir(top):
            raise NotADirectoryError(0, "not a directory")
    except OSError as exc:
        reason = "no such directory" if not os.path.lexists(root) else exc.strerror or str(exc)
        return RunsIndex(root, (), (InputError(reason, pointer=None, source=root),))
    baselines = os.path.join(root, BASELINES) if baselines is None else baselines
    skipped = os.path.realpath(baselines)
    visited: set[str] = set()

    def found(run: Run | InputError | None) -> None:
        if isinstance(run, InputError):
            errors.append(run)
        elif run is not None:
            runs.append(run)

    def walk(directory: str, relative: str) -> None:
        real = os.path.realpath(directory)
        if real in visited or real == skipped:
            return
        visited.add(real)
        try:
            names = sorted(os.listdir(directory))
        except OSError as exc:
            reason = f"cannot read: {exc.strerror or exc}"
            errors.append(InputError(reason, pointer=None, source=directory))
            return
        if RUN_FILE in names:
            found(_read_run(top, directory, relative or ".", limit))
            return  # the run's own files are not searched
        for name in names:
            if name.startswith("."):
                continue
            path = os.path.join(directory, name)
            ident = f"{relative}/{name}" if relative else name
            if os.path.islink(path) and not _inside(top, os.path.realpath(path)):
                errors.append(InputError(_OUTSIDE, pointer=None, source=path))
            elif os.path.isdir(path):
                walk(path, ident)
            elif name.endswith(".json") and os.path.isfile(path):
                found(_read_plain(path, ident, "report", limit))

    walk(root, "")
    runs.sort(key=_order)
    found_baselines = _baselines(root, top, baselines, errors, limit)
    errors.sort(key=lambda e: e.source or "")
    return RunsIndex(root, tuple(runs), tuple(errors), found_baselines)


def _baselines(
    root: str, top: str, directory: str, errors: list[InputError], limit: Mapping[str, int]
) -> tuple[Run, ...]:
    """The reports directly in the baselines ``directory`` (none when it does not exist)."""
    if not os.path.isdir(directory):
        return ()
    own = os.path.realpath(directory)
    prefix = os.path.relpath(directory, root).replace(os.sep, "/") if _inside(top, own) else None
    out: list[Run] = []
    try:
        names = sorted(os.listdir(directory))
    except OSError as exc:
        errors.append(InputError(f"cannot read: {exc.strerror or exc}", source=directory))
        return ()
    for name in names:
        path = os.path.join(directory, name)
        if name.startswith(".") or not name.endswith(".json") or not os.path.isfile(path):
            continue
        target = os.path.realpath(path)
        if os.path.islink(path) and not (_inside(top, target) or _inside(own, target)):
            errors.append(InputError(_OUTSIDE, pointer=None, source=path))
            continue
        ident = f"{prefix}/{name}" if prefix is not None else path.replace(os.sep, "/")
        run = _read_plain(path, ident, "baseline", limit)
        if run is None:
            run = InputError("a baseline must be a validation report", source=path)
        if isinstance(run, InputError):
            errors.append(run)
        else:
            out.append(run)
    return tuple(out)


def read_run_report(run: Run, max_input_bytes: int | None = None) -> RunReport:
    """The validation report of ``run``: the plain report, or the run directory's
    ``report.json``; an :class:`InputError` naming the file when it cannot be read."""
    if run.report is not None:
        return run.report
    path = run.report_path
    try:
        if max_input_bytes is None:
            return RunReport.from_dict(read_json_file(path))
        return RunReport.from_dict(read_json_file(path, max_input_bytes))
    except InputError as exc:
        raise (exc if exc.source else exc.located(path)) from None


def _read_plain(
    path: str, ident: str, kind: RunKind, limit: Mapping[str, int]
) -> Run | InputError | None:
    """The plain report or baseline at ``path``; None when the file is JSON but no report."""
    try:
        data = read_json_file(path, **limit)
        if type(data) is not dict or "reports" not in data:
            return None  # a trace, a policy, ...: not a report
        report = RunReport.from_dict(data)
    except InputError as exc:
        return exc if exc.source else exc.located(path)
    workflows = sorted({r.workflow for r in report.reports if r.workflow})
    passed = report.passed_traces
    benchmark = "+".join(workflows) or "(none)"
    if kind == "baseline":
        benchmark = os.path.splitext(os.path.basename(path))[0]
    return Run(
        ident,
        kind,
        path,
        benchmark,
        RunCounts(len(report.reports), passed, len(report.reports) - passed),
        report=report,
    )


def _object(data: Mapping[str, Any], key: str, base: str) -> Mapping[str, Any]:
    if key not in data:
        raise bad(base, f"missing required field {key!r}")
    value = data[key]
    if type(value) is not dict:
        raise bad(join_pointer(base, key), f"must be an object, got {json_type(value)}")
    return value


def _count(data: Mapping[str, Any], key: str, base: str) -> int:
    if key not in data:
        raise bad(base, f"missing required field {key!r}")
    value = data[key]
    if type(value) is not int or value < 0:
        raise bad(join_pointer(base, key), f"must be an integer >= 0, got {excerpt(value)}")
    return value


def _read_run(top: str, folder: str, ident: str, limit: Mapping[str, int]) -> Run | InputError:
    """The run record in ``folder``, checked field by field."""
    path = os.path.join(folder, RUN_FILE)
    for name in (RUN_FILE, REPORT_FILE):
        where = os.path.join(folder, name)
        if os.path.lexists(where) and not _inside(top, os.path.realpath(where)):
            return InputError(_OUTSIDE, pointer=None, source=where)
    try:
        data = read_json_file(path, **limit)
        if type(data) is not dict:
            raise bad("", f"a run record must be an object, got {json_type(data)}")
        if data.get("kind") != "arh-run":
            raise bad("/kind", f'must be "arh-run", got {excerpt(data.get("kind"))}')
        if data.get("schema_version") != "1":
            raise bad(
                "/schema_version",
                f'must be "1" (this build reads run records of version 1), got '
                f"{excerpt(data.get('schema_version'))}",
            )
        run_id = req_str(data, "run_id", "", non_empty=True)
        agent = req_str(_object(data, "agent", ""), "id", "/agent", non_empty=True)
        raw = _object(data, "dataset", "")
        name = req_str(raw, "name", "/dataset", non_empty=True)
        sha = req_str(raw, "sha256", "/dataset")
        if not _SHA256.fullmatch(sha):
            raise bad("/dataset/sha256", f"must be 64 lower-case hex digits, got {excerpt(sha)}")
        dataset = DatasetRef(
            name,
            req_str(raw, "version", "/dataset"),
            sha,
            _count(raw, "cases", "/dataset"),
            req_str(raw, "path", "/dataset"),
        )
        summary = _object(data, "summary", "")
        counts = RunCounts(*(_count(summary, key, "/summary") for key in _COUNTS))
        if (
            counts.passed
            + counts.agent_failure
            + counts.evaluation_error
            + (counts.infrastructure_failure)
            != counts.runs
        ):
            raise bad(
                "/summary",
                "passed, agent_failure, evaluation_error and infrastructure_failure must add "
                f"up to runs ({counts.runs})",
            )
        finished = req_str(_object(data, "timings", ""), "finished_at", "/timings")
        finished_at = parse_rfc3339(finished, "/timings/finished_at")
        harness = data.get("harness")
        rubric = harness.get("rubric") if type(harness) is dict else None
        traces, outcomes = _tasks(data)
    except InputError as exc:
        return exc if exc.source else exc.located(path)
    return Run(
        ident,
        "run",
        os.path.dirname(path),
        name,
        counts,
        run_id=run_id,
        agent=agent,
        dataset=dataset,
        finished_at=finished_at,
        rubric=rubric,
        record=data,
        traces=traces,
        outcomes=outcomes,
    )


def _tasks(data: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    """The trace file (relative to the run directory) and the outcome of each trace id the
    record's ``tasks`` name (a record without ``tasks`` names none)."""
    traces: dict[str, str] = {}
    outcomes: dict[str, str] = {}
    tasks = data.get("tasks", [])
    if type(tasks) is not list:
        raise bad("/tasks", f"must be an array, got {json_type(tasks)}")
    for index, task in enumerate(tasks):
        at = f"/tasks/{index}"
        if type(task) is not dict:
            raise bad(at, f"must be an object, got {json_type(task)}")
        trace_id = req_str(task, "trace_id", at)
        outcome = task.get("outcome")
        if outcome is not None:
            if outcome not in OUTCOMES:
                raise bad(f"{at}/outcome", f"must be one of {', '.join(OUTCOMES)}")
            outcomes[trace_id] = outcome
        name = task.get("trace")
        if name is None:
            continue
        if type(name) is not str:
            raise bad(f"{at}/trace", f"must be a string, got {json_type(name)}")
        parts = name.split("/")
        if name.startswith("/") or "\\" in name or "\0" in name or ".." in parts or "" in parts:
            raise bad(f"{at}/trace", f"must be a relative path inside the run, got {excerpt(name)}")
        traces[trace_id] = name
    return traces, outcomes
