"""SARIF 2.1.0 (``--sarif-out``): the validation report, for code scanning."""

from __future__ import annotations

from agent_reliability_harness.render.outputs import (
    OutputFormat,
    ReportWriter,
    ValidateOutput,
    WriterOptions,
)

__all__ = ["FORMAT"]


def _writer(options: WriterOptions) -> ReportWriter:
    from agent_reliability_harness.render.sarif import SarifWriter

    return SarifWriter(options.step_lines)


FORMAT = OutputFormat(
    "sarif",
    "--sarif-out",
    40,
    validate=ValidateOutput("write a SARIF 2.1.0 report here", "SARIF report", _writer),
)
