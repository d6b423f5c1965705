"""The console report: a verdict line per trace, its findings, and a summary."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence
from typing import Final

from agent_reliability_harness.errors import AGENT_FAILURE, EVALUATION_ERROR
from agent_reliability_harness.model.report import (
    Finding,
    ReportLike,
    RunSummary,
    TraceReport,
    as_run_report,
)
from agent_reliability_harness.render._fidelity import console_lines
from agent_reliability_harness.render._text import (
    failures_text,
    plural,
    score_alone,
    source_text,
    terminal_safe,
    times_text,
    totals_text,
)
from agent_reliability_harness.render.github import LEVELS, annotation
from agent_reliability_harness.rules.selection import grouped

__all__ = [
    "OUTPUT_FORMATS",
    "ConciseWriter",
    "ConsoleWriter",
    "GithubWriter",
    "concise_line",
    "console_writer",
    "github_annotation",
    "render_console",
    "selection_text",
    "summary_lines",
    "trace_location",
]

WIDTH: Final = 100
_INDENT: Final = " " * 6
_STEP_WIDTH: Final = 12  # longer step ids push the message to the right instead


def _step(finding: Finding) -> str:
    return "-" if finding.step_id is None else terminal_safe(finding.step_id)


_ROOM: Final = 30  # columns a finding's first line keeps for its message


def _finding_lines(finding: Finding, step_width: int) -> list[str]:
    head = f"{_INDENT}{finding.severity:<8}{finding.rule_id}  {_step(finding):<{step_width}}  "
    indent = _INDENT + " " * 8
    lines: list[str] = []
    if len(head) > WIDTH - _ROOM:  # a long step id: the message starts on the next line, whole
        lines, head = [head.rstrip()], indent

    return lines + textwrap.wrap(
        terminal_safe(finding.message),
        width=WIDTH,
        initial_indent=head,
        subsequent_indent=indent,
        break_long_words=True,
        break_on_hyphens=False,
    ) or [head.rstrip()]


def _trace_lines(report: TraceReport, fail_under: float | None) -> list[str]:
    verdict = "PASS" if report.passed else "FAIL"
    who = terminal_safe(f"{report.agent_name} / {report.workflow}")
    lines = [f"{verdict}  {terminal_safe(report.trace_id)}  score {report.score:.2f}  ({who})"]
    details = totals_text(report)  # n/a for a measure the trace did not record
    if report.citation_coverage is not None:
        details.append(f"citation coverage {report.citation_coverage:.0%}")
    where = source_text(report.source_path, report.source_line)
    if where is not None:
        details.append(terminal_safe(where))
    if report.failure == EVALUATION_ERROR:  # a PASS that a gating judge did not confirm
        details.append("evaluation_error: the judge gave no verdict")
    lines.append(_INDENT + " \u00b7 ".join(details))
    times = times_text(report)  # only the times the trace records, on a line of their own
    if times:
        lines.append(_INDENT + terminal_safe(" \u00b7 ".join(times)))
    why = score_alone(report, fail_under)  # no finding says why it fails: its score does
    if why is not None:
        lines.append(f"{_INDENT}fails on its score alone: {why} (--fail-under)")
    lines += console_lines(report, _INDENT, WIDTH)  # checks its source gave no field for
    step_width = min(_STEP_WIDTH, max((len(_step(f)) for f in report.findings), default=1))
    for finding in report.findings:
        lines.extend(_finding_lines(finding, step_width))
    return lines


_COLORS: Final = {
    "PASS": "\x1b[1;32m", "FAIL": "\x1b[1;31m", "error": "\x1b[31m", "warning": "\x1b[33m",
    "info": "\x1b[36m",
}  # fmt: skip
_RESET: Final = "\x1b[0m"


def selection_text(rules: tuple[tuple[str, str], ...]) -> str:
    """``ARH-FLW-003 warning, ARH-SCH-* off``: the run's rule selection, by rule ID (a
    category with one choice for all its rules as one entry)."""
    return ", ".join(
        f"{terminal_safe(rule_id)} {terminal_safe(choice)}" for rule_id, choice in grouped(rules)
    )


def _paint(line: str) -> str:
    """Colour a verdict at the start of a line, or a severity in a finding's first line."""
    for word, code in _COLORS.items():
        if line.startswith(word + " "):
            return f"{code}{word}{_RESET}{line[len(word) :]}"
        if line.startswith(_INDENT + word + " "):
            start = len(_INDENT)
            return f"{line[:start]}{code}{word}{_RESET}{line[start + len(word) :]}"
    return line


class _Unlisted:
    """The passing traces a report leaves out (without ``--show-passing``), counted for the one
    line that stands for them: how many, how many have findings (warnings or notes, which do
    not fail a trace) and how many have checks that did not apply to them."""

    def __init__(self) -> None:
        self.traces = 0
        self.with_findings = 0
        self.not_applicable = 0

    def add(self, report: TraceReport) -> None:
        self.traces += 1
        self.with_findings += bool(report.findings)
        self.not_applicable += bool(report.not_applicable)

    def lines(self) -> list[str]:
        """``4,980 passing traces not listed (12 of them with findings, 3 with checks not
        applicable); --show-passing lists them``, or nothing when none was left out."""
        if not self.traces:
            return []
        line = f"{plural(self.traces, 'passing trace', grouped=True)} not listed"
        notes = []
        if self.with_findings:
            notes.append(f"{self.with_findings:,} of them with findings")
        if self.not_applicable:
            notes.append(f"{self.not_applicable:,} with checks not applicable")
        if notes:
            line += f" ({', '.join(notes)})"
        return [f"{line}; --show-passing lists {'it' if self.traces == 1 else 'them'}"]


def summary_lines(summary: RunSummary) -> list[str]:
    """The run's last lines: what it came to, then the rules it switched off or changed."""
    total = summary.total
    line = (
        f"{summary.passed:,} of {plural(total, 'trace', grouped=True)} passed, "
        f"{summary.failed:,} failed \u00b7 average score {summary.average_score:.2f}"
    )
    if summary.policy_id is not None:
        line += f" \u00b7 policy {terminal_safe(summary.policy_id)}"
    if summary.input_errors:
        count = len(summary.input_errors)
        line += f" \u00b7 {plural(count, 'input error', grouped=True)}"
    lines = [line]
    # the three kinds of failure, when "N failed" is not all there is to say (docs/exit-codes.md)
    kinds = failures_text(summary)
    if kinds is not None and summary.failures[AGENT_FAILURE] < sum(summary.failures.values()):
        lines.append(kinds)
    if summary.rules:
        lines.append("rules switched off or changed: " + selection_text(summary.rules))
    return lines


class ConsoleWriter:
    """The console report in pieces, to print each trace as soon as it is checked: what
    :meth:`add` returns for each trace, then :meth:`tail`, is :func:`render_console`'s text.

    Without ``show_passing``, a passing trace prints nothing and the tail says how many were
    left out, so that the failing traces of a large run are not lost among the passing ones."""

    def __init__(
        self, *, color: bool = False, fail_under: float | None = None, show_passing: bool = True
    ) -> None:
        self._color = color
        self._fail_under = fail_under  # the pass threshold, to say when a score fails a trace
        self._show_passing = show_passing
        self._unlisted = _Unlisted()

    def _text(self, lines: list[str]) -> str:
        if self._color:
            lines = [_paint(line) for line in lines]
        return "\n".join(lines) + "\n"

    def head(self, _summary: RunSummary) -> str:
        return ""

    def add(self, report: TraceReport) -> str:
        if report.passed and not self._show_passing:
            self._unlisted.add(report)
            return ""
        lines = self._lines(report)
        return self._text(lines) if lines else ""

    def _lines(self, report: TraceReport) -> list[str]:
        """What the report shows of one trace it lists."""
        return [*_trace_lines(report, self._fail_under), ""]

    def tail(self, summary: RunSummary) -> str:
        return self._text([*self._unlisted.lines(), *summary_lines(summary)])


def trace_location(report: TraceReport) -> str:
    """``path:trace``, ``path:line:trace`` (JSON Lines), or the trace id alone (no source)."""
    source = source_text(report.source_path, report.source_line)
    return report.trace_id if source is None else f"{source}:{report.trace_id}"


def concise_line(where: str, finding: Finding, *, color: bool = False) -> str:
    """``<where>:<step>: <RULE-ID> <severity> <message>`` on one line, made safe as a whole
    (pieces that end in a colon cannot make a ``::`` with the separators)."""
    step = "" if finding.step_id is None else f":{finding.step_id}"
    line = terminal_safe(f"{where}{step}: {finding.rule_id or finding.category}")
    severity: str = finding.severity
    if color:
        severity = f"{_COLORS[severity]}{severity}{_RESET}"
    return f"{line} {severity} {terminal_safe(finding.message)}"


class ConciseWriter(ConsoleWriter):
    """``--output-format concise``: one line per finding, as linters print them
    (``path:trace:step: RULE-ID severity message``), a line for a trace that fails on its score
    alone, then the summary. Checks not applicable are left to the full format."""

    def _lines(self, report: TraceReport) -> list[str]:
        where = trace_location(report)
        lines = [concise_line(where, f, color=self._color) for f in report.findings]
        why = score_alone(report, self._fail_under)
        if why is not None:
            lines.append(terminal_safe(f"{where}: fails on its score alone: {why} (--fail-under)"))
        return lines

    def _text(self, lines: list[str]) -> str:
        return "\n".join(lines) + "\n"  # coloured as the lines are made


class GithubWriter(ConsoleWriter):
    """``--output-format github``: one GitHub Actions annotation per finding (``::error``,
    ``::warning``, ``::notice``) at the trace's file and, where known, the line of its step
    (``step_lines``, as for SARIF) or of its JSON Lines record; a ``::error`` for a trace that
    fails on its score alone; then the summary as plain lines. Never coloured."""

    def __init__(
        self,
        *,
        fail_under: float | None = None,
        show_passing: bool = True,
        step_lines: Callable[[TraceReport], Sequence[int] | None] | None = None,
    ) -> None:
        super().__init__(fail_under=fail_under, show_passing=show_passing)
        self._step_lines = step_lines

    def _lines(self, report: TraceReport) -> list[str]:
        steps = None
        if self._step_lines is not None and report.findings:
            steps = self._step_lines(report)
        lines = [github_annotation(report, finding, steps) for finding in report.findings]
        why = score_alone(report, self._fail_under)
        if why is not None:
            lines.append(
                annotation(
                    "error",
                    f"{why} (--fail-under)",
                    file=report.source_path,
                    line=None if report.source_path is None else report.source_line,
                    title=f"trace {report.trace_id} fails on its score alone",
                )
            )
        return lines


def github_annotation(
    report: TraceReport, finding: Finding, steps: Sequence[int] | None, *, change: str = ""
) -> str:
    """The annotation of one finding of a trace: its file, the line of its step (from
    ``steps``, the line of each step in the file) or of its JSON Lines record, and a title that
    names the rule, the trace and the step; ``change`` (``new in ``) goes before the trace.
    A trace read from standard input has no file, and its annotation no line either."""
    line = report.source_line
    index = finding.step_index
    if line is None and steps is not None and index is not None and index < len(steps):
        line = steps[index]
    if report.source_path is None:
        line = None
    where = f"{change}trace {report.trace_id}"
    if finding.step_id is not None:
        where += f", step {finding.step_id}"
    return annotation(
        LEVELS.get(finding.severity, "error"),
        finding.message,
        file=report.source_path,
        line=line,
        title=f"{finding.rule_id or finding.category} ({where})",
    )


OUTPUT_FORMATS: Final = ("full", "concise", "github")


def console_writer(
    output_format: str = "full",
    *,
    color: bool = False,
    fail_under: float | None = None,
    show_passing: bool = True,
    step_lines: Callable[[TraceReport], Sequence[int] | None] | None = None,
) -> ConsoleWriter:
    """The writer of the console report in ``output_format`` (one of :data:`OUTPUT_FORMATS`);
    ``step_lines`` lets GitHub annotations point at the line of their step."""
    if output_format == "concise":
        return ConciseWriter(color=color, fail_under=fail_under, show_passing=show_passing)
    if output_format == "github":
        return GithubWriter(fail_under=fail_under, show_passing=show_passing, step_lines=step_lines)
    if output_format != "full":
        raise ValueError(f"unknown output format {output_format!r}")
    return ConsoleWriter(color=color, fail_under=fail_under, show_passing=show_passing)


def render_console(
    run: ReportLike,
    *,
    color: bool = False,
    fail_under: float | None = None,
    show_passing: bool = True,
    output_format: str = "full",
) -> str:
    """The human-readable report, ending with a newline; ``color`` adds ANSI colours.
    ``fail_under``, the pass threshold the run was checked with, lets a trace that fails on its
    score alone say so. ``show_passing`` False leaves the passing traces out (one line counts
    them), as ``arh validate`` does unless given ``--show-passing``; ``output_format`` is
    ``full``, ``concise`` or ``github`` (see :func:`console_writer`)."""
    run = as_run_report(run)
    writer = console_writer(
        output_format, color=color, fail_under=fail_under, show_passing=show_passing
    )
    body = "".join([writer.add(report) for report in run.reports])
    return body + writer.tail(run.summary())
