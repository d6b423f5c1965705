"""The Markdown validation report: for a pull-request comment or a CI job's step summary.

Every value that comes from a trace is escaped (``md_text``) or shown as inline code
(``md_code``), so a trace cannot add markup, links, HTML, mentions or break a table. The report is
kept under the size GitHub accepts for a comment (``MAX_CHARS``): long values are shortened, and
the table rows, per-trace sections, checks and input errors that do not fit are left out, with a
line that says how many.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from agent_reliability_harness.errors import EVALUATION_ERROR
from agent_reliability_harness.model.report import (
    Finding,
    ReportLike,
    RunSummary,
    TraceReport,
    as_run_report,
)
from agent_reliability_harness.render._fidelity import NotApplicableTally
from agent_reliability_harness.render._markdown import (
    MAX_CHARS,
    MESSAGE_CHARS,
    MdSection,
    md_code,
    md_fit,
    md_row,
    md_size,
    md_text,
)
from agent_reliability_harness.render._text import (
    failures_text,
    plural,
    run_headline,
    score_alone,
    times_text,
)
from agent_reliability_harness.rules.selection import grouped

__all__ = ["MAX_CHARS", "MarkdownWriter", "render_markdown"]

_TAIL_CHARS: Final = MAX_CHARS // 4  # for the checks not applicable and the input errors
_ALL_ROWS: Final = 50  # larger runs list only their failing traces in the summary table


def _verdict(report: TraceReport) -> str:
    if report.failure == EVALUATION_ERROR:  # passed the rules, but a gating judge gave no verdict
        return "PASS, *evaluation_error*"
    return "PASS" if report.passed else "**FAIL**"


def _count(findings: tuple[Finding, ...], severity: str) -> int:
    return sum(1 for f in findings if f.severity == severity)


def _message(finding: Finding) -> str:
    return md_text(finding.message, limit=MESSAGE_CHARS)


def _finding_row(f: Finding) -> str:
    return md_row(
        [
            f.severity,
            md_code(f.rule_id or f.category),
            "-" if f.step_id is None else md_code(f.step_id),
            _message(f),
            "" if f.expected is None else md_text(f.expected, limit=MESSAGE_CHARS),
            "" if f.observed is None else md_text(f.observed, limit=MESSAGE_CHARS),
        ]
    )


def _why_lines(why: str | None) -> list[str]:
    """The paragraph that says why a trace that no error finding fails fails (its score)."""
    return [] if why is None else ["", f"Fails on its score alone: {why} (`--fail-under`)."]


def _trace_section(report: TraceReport, fail_under: float | None = None) -> MdSection:
    """The trace's heading and table of findings, whose rows are made as they are shown;
    ``fail_under`` (the pass threshold) lets a trace failing on its score alone say so."""
    head = [
        "",
        f"### {md_text(report.trace_id)}",
        "",
        f"Score {report.score:.2f} \u00b7 {md_text(report.agent_name)} / "
        f"{md_text(report.workflow)}"
        + (
            ""
            if report.source_path is None
            else f" \u00b7 {md_code(report.source_path, in_table=False)}"
        )
        + "".join(f" \u00b7 {md_text(time)}" for time in times_text(report)),
        *_why_lines(score_alone(report, fail_under)),
        "",
        "| Severity | Rule | Step | Finding | Expected | Observed |",
        "|---|---|---|---|---|---|",
    ]
    findings = report.findings
    return MdSection(head, len(findings), lambda index: _finding_row(findings[index]))


def _row(r: TraceReport) -> str:
    return md_row(
        [
            md_code(r.trace_id),
            _verdict(r),
            f"{r.score:.2f}",
            str(_count(r.findings, "error")),
            str(_count(r.findings, "warning")),
            f"{md_text(r.agent_name)} / {md_text(r.workflow)}",
        ]
    )


def _not_applicable(section: Sequence[str], budget: int) -> list[str]:
    """The section of NotApplicableTally (_fidelity.py), its table cut to ``budget``."""
    if not section:
        return []
    start = next(i for i, line in enumerate(section) if line.startswith("|---")) + 1
    lines = list(section[:start])
    md_fit(lines, section[start:], budget, "check")
    return lines


def _input_errors(summary: RunSummary, budget: int) -> list[str]:
    if not summary.input_errors:
        return []
    lines = ["", "### Input errors", ""]
    errors = summary.input_errors
    items = ([f"- {md_text(str(error), limit=MESSAGE_CHARS)}"] for error in errors)
    md_fit(lines, items, budget, "input error", count=len(errors))  # made only while they fit
    return lines


def _document(
    summary: RunSummary,
    first: Sequence[TraceReport],
    failing: Sequence[TraceReport],
    failing_count: int,
    not_applicable: Sequence[str] = (),
    *,
    fail_under: float | None = None,
) -> str:
    """The report from the run's summary, its first ``_ALL_ROWS`` reports (all of them when the
    run is no larger) and its first failing reports (all that can fit).

    Each part has a share of ``MAX_CHARS``: the summary table half, the checks not applicable and
    the input errors a quarter together (all that is left when no trace failed), the findings
    the rest; what does not fit is left out, and a line says how much."""
    total = summary.total
    headline = run_headline(total, failing_count, len(summary.input_errors))
    head = [f"## arh validation: {headline}", ""]
    facts = [f"average score {summary.average_score:.2f}"]
    if summary.policy_id is not None:
        facts.insert(0, f"policy {md_code(summary.policy_id, in_table=False)}")
    if summary.harness_version is not None:
        facts.append(f"arh {md_text(summary.harness_version)}")
    if summary.input_errors:
        count = len(summary.input_errors)
        facts.append(f"**{plural(count, 'input error')}**")
    head.append(" \u00b7 ".join(facts) + ".")
    kinds = failures_text(summary)  # the three kinds of failure, when the run had any
    if kinds is not None:
        head += ["", f"{kinds[0].upper()}{kinds[1:]}."]
    if summary.rules:
        changed = ", ".join(
            f"{md_code(r, in_table=False)} {md_text(c)}" for r, c in grouped(summary.rules)
        )
        head += ["", f"Rules switched off or changed: {changed}."]
    listed, listed_count = (first, total) if total <= _ALL_ROWS else (failing, failing_count)
    if listed_count:
        head += [
            "",
            "| Trace | Verdict | Score | Errors | Warnings | Agent / workflow |",
            "|---|---|---|---|---|---|",
        ]
        rows = ([_row(r)] for r in listed)  # made only while they fit
        md_fit(head, rows, MAX_CHARS // 2 + 1, "trace", count=listed_count)
    if listed_count < total:
        passing = total - failing_count
        head += ["", f"{passing} passing trace{'s are' if passing != 1 else ' is'} not listed."]
    # Without findings to show, the checks and input errors may have all the room that is left.
    room = _TAIL_CHARS if failing_count else MAX_CHARS - 300 - md_size(head)
    tail = _not_applicable(not_applicable, room)
    tail += _input_errors(summary, room - md_size(tail))
    body: list[str] = []
    if failing_count:
        body += ["", "## Findings of the failing traces"]
    sections = (_trace_section(report, fail_under) for report in failing)
    md_fit(body, sections, MAX_CHARS - 200, "failing trace", count=failing_count, verb="shown",
           used=md_size(head + tail), rows="finding")  # fmt: skip
    return "\n".join(head + body + tail) + "\n"


class MarkdownWriter:
    """Collects what the report can show while traces are checked one at a time, in memory
    bounded by the report's size limit; :meth:`head` is then the whole report (the text of
    :func:`render_markdown`) and :meth:`add` and :meth:`tail` return nothing."""

    def __init__(self, *, fail_under: float | None = None) -> None:
        self._fail_under = fail_under  # the pass threshold, to say when a score fails a trace
        self._first: list[TraceReport] = []
        self._failing: list[TraceReport] = []
        self._failing_count = 0
        self._rows = 0  # characters of the failing traces kept so far, as rows and as sections
        self._sections = 0
        self._not_applicable = NotApplicableTally()

    def add(self, report: TraceReport) -> str:
        self._not_applicable.add(report)
        if len(self._first) < _ALL_ROWS:
            self._first.append(report)
        if not report.passed:
            self._failing_count += 1
            # Keep failing traces until neither the table nor the sections could show another;
            # a section is measured only as far as it takes to pass MAX_CHARS.
            if self._rows <= MAX_CHARS // 2 or self._sections <= MAX_CHARS:
                self._failing.append(report)
                self._rows += len(_row(report)) + 1
                section = _trace_section(report, self._fail_under)
                self._sections += section.size(MAX_CHARS - self._sections)
        return ""

    def head(self, summary: RunSummary) -> str:
        return _document(
            summary,
            self._first,
            self._failing,
            self._failing_count,
            self._not_applicable.markdown(),
            fail_under=self._fail_under,
        )

    def tail(self, _summary: RunSummary) -> str:
        return ""


def render_markdown(run: ReportLike, *, fail_under: float | None = None) -> str:
    """The report as GitHub-flavoured Markdown, ending with a newline. ``fail_under``, the pass
    threshold the run was checked with, lets a trace that fails on its score alone say so."""
    run = as_run_report(run)
    failing = [r for r in run.reports if not r.passed]
    tally = NotApplicableTally()
    for report in run.reports:
        tally.add(report)
    return _document(
        run.summary(),
        run.reports[:_ALL_ROWS],
        failing,
        len(failing),
        tally.markdown(),
        fail_under=fail_under,
    )
