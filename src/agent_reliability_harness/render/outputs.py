"""What an output format declares: its option, and how it writes each report it can write.

Each report format is one module of :mod:`agent_reliability_harness.render.formats` with a
module-level ``FORMAT``, an :class:`OutputFormat`. The command line finds them there and makes
one ``--<format>-out`` option of each for ``arh validate``, ``arh compare`` and ``arh stats``,
as the format declares it can write their reports: adding a format is adding its module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from agent_reliability_harness.model.report import RunReport, RunSummary, TraceReport
    from agent_reliability_harness.model.trace import Trace
    from agent_reliability_harness.regression.compare import CompareResult
    from agent_reliability_harness.regression.gate import GateResult
    from agent_reliability_harness.regression.stat_report import StatComparison, StatsResult

__all__ = [
    "CompareOutput",
    "Comparison",
    "OutputFormat",
    "ReportWriter",
    "StatsOutput",
    "TraceKeeper",
    "ValidateOutput",
    "WriterOptions",
]


class ReportWriter(Protocol):
    """A validation report written one trace at a time: :meth:`head`, then what :meth:`add`
    returned for each trace report in order, then :meth:`tail` is the whole report. ``head``
    and ``tail`` are called after the last ``add``: they hold the run's totals.

    A writer that shows traces (not only their reports) also has an ``on_trace(trace, report)``
    method, which is called with each trace before its report is added."""

    def add(self, report: TraceReport) -> str: ...
    def head(self, summary: RunSummary) -> str: ...
    def tail(self, summary: RunSummary) -> str: ...


class TraceKeeper(Protocol):
    """Called with each candidate trace and its report while a comparison's candidate is
    validated; keeps in ``traces`` those its report shows."""

    @property
    def traces(self) -> Mapping[str, Trace]: ...

    def __call__(self, trace: Trace, report: TraceReport) -> None: ...


@dataclass(frozen=True, slots=True)
class WriterOptions:
    """What a validation report writer may need besides the reports: the pass threshold (to say
    when a trace fails on its score alone), and the line of each step of a trace read from a
    whole JSON file (None where not known)."""

    fail_under: float | None = None
    step_lines: Callable[[TraceReport], Sequence[int] | None] | None = None


@dataclass(frozen=True, slots=True)
class Comparison:
    """Everything a comparison report shows: the comparison and its gate (with the statistical
    gates merged in), the statistics when asked for, the candidate inputs that could not be read
    (and how many of them were infrastructure failures),
    what the trace-by-trace gate let through when statistical gates turned it off, the pass
    threshold of a candidate validated now, the traces a :class:`TraceKeeper` kept, and the
    line of each step of a candidate trace in its file (as :class:`WriterOptions` has it)."""

    result: CompareResult
    gate: GateResult
    statistics: StatComparison | None = None
    input_errors: int = 0
    ungated: str | None = None
    fail_under: float | None = None
    traces: Mapping[str, Trace] | None = None
    step_lines: Callable[[TraceReport], Sequence[int] | None] | None = None
    # how many of ``input_errors`` were infrastructure failures (exit status 4, not 3)
    infrastructure: int = 0


@dataclass(frozen=True, slots=True)
class ValidateOutput:
    """``arh validate``'s option of a format: its help, what the "written to" line calls the
    file, and the writer, made once per run."""

    help: str
    what: str
    writer: Callable[[WriterOptions], ReportWriter]


@dataclass(frozen=True, slots=True)
class CompareOutput:
    """``arh compare``'s option of a format; ``keeper``, given the baseline, ``any_step`` and
    ``max_score_drop``, makes what keeps the candidate traces the report shows."""

    help: str
    what: str
    render: Callable[[Comparison], str]
    keeper: Callable[[RunReport, bool, float | None], TraceKeeper] | None = None


@dataclass(frozen=True, slots=True)
class StatsOutput:
    """``arh stats``'s option of a format."""

    help: str
    what: str
    render: Callable[[StatsResult], str]


@dataclass(frozen=True, slots=True)
class OutputFormat:
    """A report format: its name, its option (``--json-out``), where that option goes among the
    others of a command (lower first), and the reports it writes (None: not that command's)."""

    name: str
    flag: str
    order: int
    validate: ValidateOutput | None = None
    compare: CompareOutput | None = None
    stats: StatsOutput | None = None

    @property
    def attribute(self) -> str:
        """The option's attribute in parsed arguments: ``--md-out`` is ``md_out``."""
        return self.flag.removeprefix("--").replace("-", "_")
