"""Renderers: pure functions from a report to text, chosen by name."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

from agent_reliability_harness.model.report import RunReport
from agent_reliability_harness.render.console import render_console
from agent_reliability_harness.render.json_report import render_json

__all__ = ["RENDERERS", "render_console", "render_json"]

RENDERERS: Final[Mapping[str, Callable[[RunReport], str]]] = {
    "console": render_console,
    "json": render_json,
}
