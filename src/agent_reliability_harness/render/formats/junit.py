"""JUnit XML (``--junit-out``): the validation report, one test case per trace."""

from __future__ import annotations

from agent_reliability_harness.render.outputs import (
    OutputFormat,
    ReportWriter,
    ValidateOutput,
    WriterOptions,
)

__all__ = ["FORMAT"]


def _writer(options: WriterOptions) -> ReportWriter:
    from agent_reliability_harness.render.junit import JunitWriter

    return JunitWriter(fail_under=options.fail_under)


FORMAT = OutputFormat(
    "junit",
    "--junit-out",
    30,
    validate=ValidateOutput("write a JUnit XML report here", "JUnit report", _writer),
)
