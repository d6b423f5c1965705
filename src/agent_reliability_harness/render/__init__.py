"""Renderers: pure functions from a report to text, chosen by name.

Each renderer module is imported when it is first used, so that a command pays only for the
formats it writes (the XML and SARIF writers pull in modules ``arh --version`` does not need).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from agent_reliability_harness.model.report import RunReport

TYPE_CHECKING = False  # `typing` costs milliseconds at start-up; only type checkers need it
if TYPE_CHECKING:
    from typing import Final

__all__ = ["RENDERERS", "render"]


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


RENDERERS: Final[Mapping[str, Callable[[RunReport], str]]] = {
    "console": _console,
    "json": _json,
    "markdown": _markdown,
    "junit": _junit,
    "sarif": _sarif,
}


def render(name: str, run: RunReport) -> str:
    """Render ``run`` in the format called ``name`` (a key of :data:`RENDERERS`)."""
    return RENDERERS[name](run)
