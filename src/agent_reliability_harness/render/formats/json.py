"""JSON (``--json-out``): the validation report, which is also the baseline format of compare,
the comparison, and the statistics."""

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


def _writer(_options: WriterOptions) -> ReportWriter:
    from agent_reliability_harness.render.json_report import JsonWriter

    return JsonWriter()


def _comparison(comparison: Comparison) -> str:
    from agent_reliability_harness.render.compare import render_compare_json

    statistics = comparison.statistics
    data = None if statistics is None else statistics.to_dict()
    return render_compare_json(comparison.result, comparison.gate, statistics=data)


def _stats(result: StatsResult) -> str:
    from agent_reliability_harness.render.stats import render_stats_json

    return render_stats_json(result)


FORMAT = OutputFormat(
    "json",
    "--json-out",
    10,
    validate=ValidateOutput("write the JSON report here", "JSON report", _writer),
    compare=CompareOutput("write the comparison as JSON", "Comparison JSON", _comparison),
    stats=StatsOutput("write the statistics as JSON", "Statistics JSON", _stats),
)
