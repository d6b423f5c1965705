"""Running a validation from files: the pipeline behind ``arh validate`` and ``arh compare``.

It reads the inputs one document at a time, validates each trace as soon as it is read, and
reports every input error through a callback as it happens, so one bad file never stops the run.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterator, Sequence

from agent_reliability_harness._version import __version__
from agent_reliability_harness.adapters import RecordOptions, to_traces
from agent_reliability_harness.engine import Validator
from agent_reliability_harness.errors import InputError, join_pointer
from agent_reliability_harness.io import (
    STDIN_NAME,
    Document,
    expand_inputs,
    read_documents,
    read_json_file,
)
from agent_reliability_harness.model.policy import Policy
from agent_reliability_harness.model.report import RunReport, TraceReport
from agent_reliability_harness.model.trace import Trace

TYPE_CHECKING = False  # `typing` costs milliseconds at start-up; only type checkers need it
if TYPE_CHECKING:
    from typing import Any

__all__ = ["TraceIds", "load_policy", "load_report", "read_traces", "run_validation"]


def load_policy(path: str, *, allow_risky_patterns: bool = False) -> Policy:
    """Read and parse a policy file; errors name the file."""
    try:
        return Policy.from_dict(read_json_file(path), allow_risky_patterns=allow_risky_patterns)
    except InputError as exc:
        raise (exc if exc.source else exc.located(path)) from None


def load_report(path: str) -> RunReport:
    """Read a JSON validation report (for example a baseline); errors name the file."""
    try:
        return RunReport.from_dict(read_json_file(path))
    except InputError as exc:
        raise (exc if exc.source else exc.located(path)) from None


def _default_id(relative: str) -> str:
    """The id of a trace that names none: its file's relative path without the suffix."""
    stem, suffix = posixpath.splitext(relative)
    return stem if suffix else relative


def read_traces(
    inputs: Sequence[str],
    fail: Callable[[InputError], None],
    *,
    fmt: str = "auto",
    messages_at: str | None = None,
    trace_id_at: Sequence[str] = (),
) -> Iterator[tuple[Trace, Document, str]]:
    """Every trace in ``inputs`` with its document and its record's pointer in it, in input
    order (sorted paths, then JSON Lines order, then array order); problems go to ``fail``.

    A transcript record without an id is named after its file's path relative to the argument
    it was found under, plus ``:<line>`` for a JSON Lines record and ``#<index>`` in an array.
    """
    sources, bad_inputs = expand_inputs(inputs)
    for error in bad_inputs:
        fail(error)
    for source in sources:
        base = _default_id(source.relative or posixpath.basename(source.name))
        for item in read_documents(source):
            if isinstance(item, InputError):
                fail(item)
                continue
            options = RecordOptions(
                messages_at,
                tuple(trace_id_at),
                base if item.line is None else f"{base}:{item.line}",
            )
            for pointer, result in to_traces(item.value, fmt, options):
                if isinstance(result, InputError):
                    fail(result.located(item.source, item.line))
                else:
                    yield result, item, pointer


class TraceIds:
    """Where each trace id was first read; a repeated id is an input error (reports and
    baselines are keyed by it)."""

    def __init__(self) -> None:
        self._seen: dict[str, str] = {}

    def check(self, trace: Trace, item: Document, pointer: str) -> None:
        """Raise InputError (located) if another trace already had this id."""
        first = self._seen.get(trace.trace_id)
        if first is None:
            return
        record: Any = item.value if not pointer else item.value[int(pointer[1:])]
        if type(record) is dict and "trace_id" in record:
            pointer = join_pointer(pointer, "trace_id")
        raise InputError(
            f"duplicate trace_id {trace.trace_id!r}: already read from {first}",
            pointer=pointer,
        ).located(item.source, item.line)

    def add(self, trace: Trace, item: Document, pointer: str) -> None:
        where = item.source if item.line is None else f"{item.source}:{item.line}"
        self._seen[trace.trace_id] = f"{where} (record {pointer})" if pointer else where


def run_validation(
    policy: Policy,
    inputs: Sequence[str],
    *,
    fmt: str = "auto",
    fail_under: float = 70.0,
    on_error: Callable[[InputError], None] | None = None,
    messages_at: str | None = None,
    trace_id_at: Sequence[str] = (),
) -> RunReport:
    """Validate every trace found in ``inputs`` and collect the run's report.

    ``messages_at`` and ``trace_id_at`` are JSON pointers into each transcript record: where
    its messages are, and the parts of its trace id (joined with ``-``).
    """
    validator = Validator(policy, fail_under)
    errors: list[InputError] = []

    def fail(error: InputError) -> None:
        errors.append(error)
        if on_error is not None:
            on_error(error)

    reports: dict[str, TraceReport] = {}
    ids = TraceIds()
    for trace, item, pointer in read_traces(
        inputs, fail, fmt=fmt, messages_at=messages_at, trace_id_at=trace_id_at
    ):
        try:
            ids.check(trace, item, pointer)
            report = validator.validate(
                trace,
                source_path=None if item.source == STDIN_NAME else item.source,
                source_line=item.line,
            )
        except InputError as exc:
            fail(exc if exc.source else exc.located(item.source, item.line))
            continue
        reports[trace.trace_id] = report
        ids.add(trace, item, pointer)
    return RunReport(
        tuple(reports.values()),  # in source order: sorted paths, then JSON Lines order
        tuple(sorted(errors, key=lambda e: (e.source or "", e.line or 0))),
        policy.policy_id,
        policy.sha256,
        __version__,
    )


def step_lines(run: RunReport) -> dict[str, list[int]]:
    """For each trace read from a whole JSON file, the line on which each of its steps starts.

    SARIF results point at these lines. Files are read again here, only when a SARIF report is
    written; a file that cannot be read (or changed meanwhile) just gives no lines.
    """
    from agent_reliability_harness._json import decode_bytes, member_array_lines

    by_path: dict[str, list[int]] = {}
    lines: dict[str, list[int]] = {}
    for report in run.reports:
        path = report.source_path
        if path is None or report.source_line is not None:
            continue
        if path not in by_path:
            try:
                with open(path, "rb") as stream:
                    by_path[path] = member_array_lines(decode_bytes(stream.read()), "steps")
            except (OSError, InputError):
                by_path[path] = []
        lines[report.trace_id] = by_path[path]
    return lines
