"""JUnit XML (``--junit-out``): the validation report, one test case per trace, and the
comparison, one test case for the gate and one per trace."""

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
    from agent_reliability_harness.render.junit import JunitWriter

    return JunitWriter(fail_under=options.fail_under)


def _comparison(comparison: Comparison) -> str:
    from agent_reliability_harness.render.junit import render_compare_junit

    return render_compare_junit(
        comparison.result,
        comparison.gate,
        input_errors=comparison.input_errors,
        ungated=comparison.ungated,
    )


FORMAT = OutputFormat(
    "junit",
    "--junit-out",
    30,
    validate=ValidateOutput("write a JUnit XML report here", "JUnit report", _writer),
    compare=CompareOutput(
        "write the comparison as JUnit XML: a test case for the gate, and one per trace that "
        "fails when the gate counts it against that trace",
        "Comparison JUnit",
        _comparison,
    ),
)
