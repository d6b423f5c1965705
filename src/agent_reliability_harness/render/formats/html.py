"""HTML (``--html-out``): the validation report and the comparison, each as one self-contained
page with the traces as timelines."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_reliability_harness.render.outputs import (
    CompareOutput,
    Comparison,
    OutputFormat,
    ReportWriter,
    TraceKeeper,
    ValidateOutput,
    WriterOptions,
)

if TYPE_CHECKING:
    from agent_reliability_harness.model.report import RunReport, RunSummary, TraceReport

__all__ = ["FORMAT"]


class _PageWriter:
    """The validation page: it shows the whole run, so it is made at the end (:meth:`tail`)
    from the reports and the traces it kept."""

    def __init__(self, options: WriterOptions) -> None:
        from agent_reliability_harness.render.html import ValidationTraces

        self._fail_under = options.fail_under
        self._reports: list[TraceReport] = []
        self.on_trace = ValidationTraces()  # the traces the page shows step by step

    def add(self, report: TraceReport) -> str:
        self._reports.append(report)
        return ""

    def head(self, _summary: RunSummary) -> str:
        return ""

    def tail(self, summary: RunSummary) -> str:
        from agent_reliability_harness.model.report import RunReport
        from agent_reliability_harness.render.html import render_html

        run = RunReport(
            tuple(self._reports),
            summary.input_errors,
            summary.policy_id,
            summary.policy_sha256,
            summary.harness_version,
            summary.rules,
        )
        return render_html(run, self.on_trace.traces, fail_under=self._fail_under)


def _writer(options: WriterOptions) -> ReportWriter:
    return _PageWriter(options)


def _keeper(baseline: RunReport, any_step: bool, max_score_drop: float | None) -> TraceKeeper:
    from agent_reliability_harness.render.html import CompareTraces

    return CompareTraces(baseline, any_step=any_step, max_score_drop=max_score_drop)


def _comparison(comparison: Comparison) -> str:
    from agent_reliability_harness.render.html import render_compare_html

    return render_compare_html(
        comparison.result,
        comparison.gate,
        comparison.traces,
        input_errors=comparison.input_errors,
        infrastructure=comparison.infrastructure,
        statistics=comparison.statistics,
        fail_under=comparison.fail_under,
        ungated=comparison.ungated,
    )


FORMAT = OutputFormat(
    "html",
    "--html-out",
    50,
    validate=ValidateOutput(
        "write a self-contained HTML report (one page) here", "HTML report", _writer
    ),
    compare=CompareOutput(
        "write the comparison as a self-contained HTML page",
        "Comparison HTML",
        _comparison,
        keeper=_keeper,
    ),
)
