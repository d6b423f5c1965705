"""Markdown (``--md-out``): the validation report, the comparison and the statistics, for a
pull-request comment or a CI step summary."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_reliability_harness.render.outputs import (
    CompareOutput,
    Comparison,
    OutputFormat,
    ReportWriter,
    StatsOutput,
    ValidateOutput,
    WriterOptions,
)

if TYPE_CHECKING:
    from agent_reliability_harness.regression.stat_report import StatsResult

__all__ = ["FORMAT"]


def _writer(options: WriterOptions) -> ReportWriter:
    from agent_reliability_harness.render.markdown import MarkdownWriter

    return MarkdownWriter(fail_under=options.fail_under)


def _comparison(comparison: Comparison) -> str:
    from agent_reliability_harness.render._markdown import md_text
    from agent_reliability_harness.render.compare import render_compare_markdown

    extra: list[str] = []
    if comparison.statistics is not None:
        from agent_reliability_harness.render.stats import comparison_markdown_lines

        extra = comparison_markdown_lines(comparison.statistics)
    if comparison.ungated is not None:
        extra += ["", f"> Note: {md_text(comparison.ungated)}"]
    return render_compare_markdown(
        comparison.result,
        comparison.gate,
        extra=extra,
        input_errors=comparison.input_errors,
        infrastructure=comparison.infrastructure,
    )


def _stats(result: StatsResult) -> str:
    from agent_reliability_harness.render.stats import render_stats_markdown

    return render_stats_markdown(result)


FORMAT = OutputFormat(
    "markdown",
    "--md-out",
    20,
    validate=ValidateOutput("write a Markdown report here", "Markdown report", _writer),
    compare=CompareOutput("write the comparison as Markdown", "Comparison Markdown", _comparison),
    stats=StatsOutput("write the statistics as Markdown", "Statistics Markdown", _stats),
)
