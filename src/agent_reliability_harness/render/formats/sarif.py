"""SARIF 2.1.0 (``--sarif-out``): the validation report, for code scanning, and the
comparison, whose results say whether each finding is new, unchanged or resolved."""

from __future__ import annotations

from agent_reliability_harness.render.outputs import (
    CompareOutput,
    Comparison,
    OutputFormat,
    ReportWriter,
    ValidateOutput,
    WriterOptions,
)

__all__ = ["FORMAT"]


def _writer(options: WriterOptions) -> ReportWriter:
    from agent_reliability_harness.render.sarif import SarifWriter

    return SarifWriter(options.step_lines)


def _comparison(comparison: Comparison) -> str:
    from agent_reliability_harness.render.sarif import render_compare_sarif

    return render_compare_sarif(
        comparison.result,
        comparison.gate,
        input_errors=comparison.input_errors,
        step_lines=comparison.step_lines,
    )


FORMAT = OutputFormat(
    "sarif",
    "--sarif-out",
    40,
    validate=ValidateOutput("write a SARIF 2.1.0 report here", "SARIF report", _writer),
    compare=CompareOutput(
        "write the candidate's findings as SARIF 2.1.0, each with its baselineState (new, "
        "unchanged, or absent for a resolved one)",
        "Comparison SARIF",
        _comparison,
    ),
)
