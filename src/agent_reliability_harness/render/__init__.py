"""Renderers: pure functions from a report to text, chosen by name.

The console and JSON renderers are imported with the package (JSON adds 0.4 ms), the
others when first used: eager, the Markdown, JUnit, SARIF and HTML renderers measured 3.5, 3.6, 7
and 22 ms more per ``arh validate``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Final

from agent_reliability_harness.model.report import RunReport
from agent_reliability_harness.render.console import render_console
from agent_reliability_harness.render.formats import json as json_format
from agent_reliability_harness.render.formats import junit as junit_format
from agent_reliability_harness.render.formats import markdown as markdown_format
from agent_reliability_harness.render.formats import sarif as sarif_format
from agent_reliability_harness.render.json_report import render_json
from agent_reliability_harness.render.outputs import ReportWriter, ValidateOutput, WriterOptions

if TYPE_CHECKING:
    from agent_reliability_harness.model.report import TraceReport


__all__ = ["RENDERERS", "ReportWriter", "render", "writer"]


def _render_markdown(run: RunReport) -> str:
    from agent_reliability_harness.render.markdown import render_markdown

    return render_markdown(run)


def _render_junit(run: RunReport) -> str:
    from agent_reliability_harness.render.junit import render_junit

    return render_junit(run)


def _render_sarif(run: RunReport) -> str:
    from agent_reliability_harness.render.sarif import render_sarif

    return render_sarif(run)


def _render_html(run: RunReport) -> str:
    from agent_reliability_harness.render.html import render_html

    return render_html(run)  # without the traces: findings only, no timelines


RENDERERS: Final[Mapping[str, Callable[[RunReport], str]]] = {
    "console": render_console,
    "json": render_json,
    "markdown": _render_markdown,
    "junit": _render_junit,
    "sarif": _render_sarif,
    "html": _render_html,
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
    """A :class:`ReportWriter` for the ``json``, ``markdown``, ``junit`` or ``sarif`` report;
    ``step_lines`` lets SARIF results point at their step's line, ``fail_under`` (the pass
    threshold) lets a trace that fails on its score alone say so. (The command line writes every
    format through the table of :mod:`agent_reliability_harness.render.formats`.)"""
    streamed: dict[str, ValidateOutput | None]
    modules = (json_format, markdown_format, junit_format, sarif_format)
    streamed = {m.FORMAT.name: m.FORMAT.validate for m in modules}
    output = streamed.get(name)
    if output is None:
        raise ValueError(f"no streaming writer for {name!r}")
    return output.writer(WriterOptions(fail_under, step_lines))
