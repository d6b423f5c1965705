"""Renderers: pure functions from a report to text, chosen by name.

Each renderer module is imported when it is first used, so that a command pays only for the
formats it writes (the XML and SARIF writers pull in modules ``arh --version`` does not need).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from agent_reliability_harness.model.report import RunReport

TYPE_CHECKING = False  # `typing` costs milliseconds at start-up; only type checkers need it
if TYPE_CHECKING:
    from typing import Final, Protocol

    from agent_reliability_harness.model.report import RunSummary, TraceReport

    class ReportWriter(Protocol):
        """A report written one trace at a time: :meth:`head`, then what :meth:`add` returned
        for each trace report in order, then :meth:`tail` is the whole report. ``head`` and
        ``tail`` are called after the last ``add``: they hold the run's totals."""

        def add(self, report: TraceReport) -> str: ...
        def head(self, summary: RunSummary) -> str: ...
        def tail(self, summary: RunSummary) -> str: ...

else:
    ReportWriter = object

__all__ = ["RENDERERS", "ReportWriter", "render", "writer"]


def _console(run: RunReport) -> str:
    from agent_reliability_harness.render.console import render_console

    return render_console(run)


def _json(run: RunReport) -> str:
    from agent_reliability_harness.render.json_report import render_json

    return render_json(run)


def _markdown(run: RunReport) -> str:
    from agent_reliability_harness.render.markdown import render_markdown

    return render_markdown(run)


def _junit(run: RunReport) -> str:
    from agent_reliability_harness.render.junit import render_junit

    return render_junit(run)


def _sarif(run: RunReport) -> str:
    from agent_reliability_harness.render.sarif import render_sarif

    return render_sarif(run)


def _html(run: RunReport) -> str:
    from agent_reliability_harness.render.html import render_html

    return render_html(run)  # without the traces: findings only, no timelines


RENDERERS: Final[Mapping[str, Callable[[RunReport], str]]] = {
    "console": _console,
    "json": _json,
    "markdown": _markdown,
    "junit": _junit,
    "sarif": _sarif,
    "html": _html,
}


def render(name: str, run: RunReport) -> str:
    """Render ``run`` in the format called ``name`` (a key of :data:`RENDERERS`)."""
    return RENDERERS[name](run)


def writer(
    name: str,
    step_lines: Callable[[TraceReport], Sequence[int] | None] | None = None,
    *,
    fail_under: float | None = None,
) -> ReportWriter:
    """A :class:`ReportWriter` for a report format of :data:`RENDERERS` other than the console;
    ``step_lines`` lets SARIF results point at their step's line, ``fail_under`` (the pass
    threshold) lets a trace that fails on its score alone say so."""
    if name == "json":
        from agent_reliability_harness.render.json_report import JsonWriter

        return JsonWriter()
    if name == "markdown":
        from agent_reliability_harness.render.markdown import MarkdownWriter

        return MarkdownWriter(fail_under=fail_under)
    if name == "junit":
        from agent_reliability_harness.render.junit import JunitWriter

        return JunitWriter(fail_under=fail_under)
    if name == "sarif":
        from agent_reliability_harness.render.sarif import SarifWriter

        return SarifWriter(step_lines)
    raise ValueError(f"no streaming writer for {name!r}")
