"""The JSON validation report (``--json-out``), which is also the baseline format of compare."""

from __future__ import annotations

from typing import Final

from agent_reliability_harness._json import dumps_indented
from agent_reliability_harness.model.report import (
    ReportLike,
    RunSummary,
    TraceReport,
    as_run_report,
)

__all__ = ["JsonWriter", "render_json"]

_REPORTS: Final = '\n  "reports": []'  # where the trace reports go in the top-level object


class JsonWriter:
    """The report in pieces, so that it can be written one trace at a time: the text of
    :meth:`head`, then what :meth:`add` returned for each trace, then :meth:`tail` is exactly
    ``json.dumps(run.to_dict(), indent=2)`` and a newline."""

    def __init__(self) -> None:
        self._count = 0

    def add(self, report: TraceReport) -> str:
        separator = ",\n    " if self._count else "\n    "
        self._count += 1
        return separator + dumps_indented(report.to_dict(), level=2)

    def _split(self, summary: RunSummary) -> tuple[str, str]:
        text = dumps_indented(summary.to_dict([]))
        # Strings are escaped, so `"reports": []` can only be the top-level key: the first hit.
        at = text.index(_REPORTS) + len(_REPORTS) - 1
        return text[:at], text[at:]

    def head(self, summary: RunSummary) -> str:
        return self._split(summary)[0]

    def tail(self, summary: RunSummary) -> str:
        rest = self._split(summary)[1]
        return ("\n  " if self._count else "") + rest + "\n"


def render_json(run: ReportLike) -> str:
    """Indented, ASCII-only JSON with a trailing newline; identical input gives identical bytes."""
    run = as_run_report(run)
    writer = JsonWriter()
    body = "".join([writer.add(report) for report in run.reports])
    summary = run.summary()
    return writer.head(summary) + body + writer.tail(summary)
