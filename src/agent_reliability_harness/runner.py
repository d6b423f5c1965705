"""Running a validation from files: the pipeline behind ``arh validate`` and ``arh compare``.

It reads the inputs one document at a time, validates each trace as soon as it is read, and
reports every input error through a callback as it happens, so one bad file never stops the run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from agent_reliability_harness._version import __version__
from agent_reliability_harness.adapters import to_trace
from agent_reliability_harness.engine import Validator
from agent_reliability_harness.errors import InputError
from agent_reliability_harness.io import (
    STDIN_NAME,
    expand_inputs,
    read_documents,
    read_json_file,
)
from agent_reliability_harness.model.policy import Policy
from agent_reliability_harness.model.report import RunReport, TraceReport

__all__ = ["load_policy", "load_report", "run_validation"]


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


def run_validation(
    policy: Policy,
    inputs: Sequence[str],
    *,
    fmt: str = "auto",
    fail_under: float = 70.0,
    on_error: Callable[[InputError], None] | None = None,
) -> RunReport:
    """Validate every trace found in ``inputs`` and collect the run's report."""
    validator = Validator(policy, fail_under)
    errors: list[InputError] = []

    def fail(error: InputError) -> None:
        errors.append(error)
        if on_error is not None:
            on_error(error)

    sources, bad_inputs = expand_inputs(inputs)
    for error in bad_inputs:
        fail(error)
    reports: dict[str, TraceReport] = {}
    first_seen: dict[str, str] = {}
    for source in sources:
        for item in read_documents(source):
            if isinstance(item, InputError):
                fail(item)
                continue
            where = item.source if item.line is None else f"{item.source}:{item.line}"
            try:
                trace = to_trace(item.value, fmt)
                if trace.trace_id in reports:
                    raise InputError(
                        f"duplicate trace_id {trace.trace_id!r}: already read from "
                        f"{first_seen[trace.trace_id]}",
                        pointer="/trace_id",
                    )
                report = validator.validate(
                    trace,
                    source_path=None if item.source == STDIN_NAME else item.source,
                    source_line=item.line,
                )
            except InputError as exc:
                fail(exc.located(item.source, item.line))
                continue
            reports[trace.trace_id] = report
            first_seen[trace.trace_id] = where
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
    from pathlib import Path

    from agent_reliability_harness._json import decode_bytes, member_array_lines

    by_path: dict[str, list[int]] = {}
    lines: dict[str, list[int]] = {}
    for report in run.reports:
        path = report.source_path
        if path is None or report.source_line is not None:
            continue
        if path not in by_path:
            try:
                by_path[path] = member_array_lines(decode_bytes(Path(path).read_bytes()), "steps")
            except (OSError, InputError):
                by_path[path] = []
        lines[report.trace_id] = by_path[path]
    return lines
