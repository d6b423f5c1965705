"""The checks a trace could not be held to because its source lacks a field they need
(``TraceReport.not_applicable``, see model/fidelity.py), as the console and Markdown reports show
them: nothing a converted trace could not be checked for passes silently."""

from __future__ import annotations

import textwrap
from typing import Final

from agent_reliability_harness.model.report import TraceReport
from agent_reliability_harness.render._markdown import md_code, md_row
from agent_reliability_harness.render._text import terminal_safe

__all__ = ["ANSWER_NOTE", "NotApplicableTally", "console_lines", "is_answer_check"]

# Said where checks not applicable are listed, when an answer check is among them: its field is
# not one a source lacks but the trace's expected outcome (rules/answers.py).
ANSWER_NOTE: Final = (
    " An answer check is not applicable to a trace without an expected outcome (field expected), "
    "or without the part of it the check needs (such as expected/pattern)."
)


def is_answer_check(field: str) -> bool:
    """Whether a not-applicable check is an answer check, by its field."""
    return field.startswith("expected")


_NAMED: Final = 3  # trace ids named per check in the Markdown table


def console_lines(report: TraceReport, indent: str, width: int) -> list[str]:
    """One ``n/a`` line (wrapped) per check, aligned like the findings below it."""
    lines: list[str] = []
    if not report.not_applicable:
        return lines

    for check in report.not_applicable:
        head = f"{indent}{'n/a':<8}{check.rule_id}  "
        message = (
            f"{check.check}: not applicable, the trace has no {check.field}"
            if is_answer_check(check.field)
            else f"{check.check}: not applicable, the trace's source provides no {check.field}"
        )
        lines += textwrap.wrap(
            terminal_safe(message),
            width=width,
            initial_indent=head,
            subsequent_indent=indent + " " * 8,
            break_long_words=True,
            break_on_hyphens=False,
        )
    return lines


class NotApplicableTally:
    """Counts, over a run, the traces each check was not applicable to; :meth:`markdown` is a
    short section (one table row per check, whatever the number of traces)."""

    def __init__(self) -> None:
        self._checks: dict[tuple[str, str, str], tuple[int, list[str]]] = {}

    def add(self, report: TraceReport) -> None:
        for check in report.not_applicable:
            key = (check.rule_id, check.check, check.field)
            count, named = self._checks.get(key, (0, []))
            if len(named) < _NAMED:
                named.append(report.trace_id)
            self._checks[key] = (count + 1, named)

    def markdown(self) -> list[str]:
        """The section's lines (none when every check applied to every trace)."""
        if not self._checks:
            return []

        answers = any(is_answer_check(field) for _, _, field in self._checks)
        lines = [
            "",
            "### Checks not applicable",
            "",
            (
                "The sources of these traces do not provide a field the check needs (listed in "
                "the trace's `metadata.adapter.missing`), so the check could not fail on them."
                + (ANSWER_NOTE if answers else "")
            ),
            "",
            "| Rule | Check | Missing field | Traces |",
            "|---|---|---|---|",
        ]
        for (rule_id, check, field), (count, named) in sorted(self._checks.items()):
            shown = ", ".join(md_code(trace_id) for trace_id in named)
            more = ", \u2026" if count > len(named) else ""
            lines.append(
                md_row(
                    [md_code(rule_id), md_code(check), md_code(field), f"{count}: {shown}{more}"]
                )
            )
        return lines
