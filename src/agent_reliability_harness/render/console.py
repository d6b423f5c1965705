"""The console report: a verdict line per trace, its findings, and a summary."""

from __future__ import annotations

import textwrap
from typing import Final

from agent_reliability_harness.model.report import Finding, RunReport, RunSummary, TraceReport
from agent_reliability_harness.render._fidelity import console_lines
from agent_reliability_harness.render._text import (
    plural,
    score_alone,
    source_text,
    terminal_safe,
    totals_text,
)

__all__ = ["ConsoleWriter", "render_console"]

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
    lines.append(_INDENT + " \u00b7 ".join(details))
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


def _selection(rules: tuple[tuple[str, str], ...]) -> str:
    """``ARH-FLW-003 warning, ARH-SCH-010 off``: the run's rule selection, by rule ID."""
    return ", ".join(
        f"{terminal_safe(rule_id)} {terminal_safe(choice)}" for rule_id, choice in rules
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


class ConsoleWriter:
    """The console report in pieces, to print each trace as soon as it is checked: what
    :meth:`add` returns for each trace, then :meth:`tail`, is :func:`render_console`'s text."""

    def __init__(self, *, color: bool = False, fail_under: float | None = None) -> None:
        self._color = color
        self._fail_under = fail_under  # the pass threshold, to say when a score fails a trace

    def _text(self, lines: list[str]) -> str:
        if self._color:
            lines = [_paint(line) for line in lines]
        return "\n".join(lines) + "\n"

    def head(self, _summary: RunSummary) -> str:
        return ""

    def add(self, report: TraceReport) -> str:
        return self._text([*_trace_lines(report, self._fail_under), ""])

    def tail(self, summary: RunSummary) -> str:
        total = summary.total
        line = (
            f"{summary.passed} of {plural(total, 'trace')} passed, "
            f"{summary.failed} failed \u00b7 average score {summary.average_score:.2f}"
        )
        if summary.policy_id is not None:
            line += f" \u00b7 policy {terminal_safe(summary.policy_id)}"
        if summary.input_errors:
            count = len(summary.input_errors)
            line += f" \u00b7 {plural(count, 'input error')}"
        lines = [line]
        if summary.rules:
            lines.append("rules switched off or changed: " + _selection(summary.rules))
        return self._text(lines)


def render_console(run: RunReport, *, color: bool = False, fail_under: float | None = None) -> str:
    """The human-readable report, ending with a newline; ``color`` adds ANSI colours.
    ``fail_under``, the pass threshold the run was checked with, lets a trace that fails on its
    score alone say so."""
    writer = ConsoleWriter(color=color, fail_under=fail_under)
    body = "".join([writer.add(report) for report in run.reports])
    return body + writer.tail(run.summary())
