"""The JSON validation report (``--json-out``), which is also the baseline format of compare."""

from __future__ import annotations

import json

from agent_reliability_harness.model.report import RunReport

__all__ = ["render_json"]


def render_json(run: RunReport) -> str:
    """Indented, ASCII-only JSON with a trailing newline; identical input gives identical bytes."""
    return json.dumps(run.to_dict(), indent=2, ensure_ascii=True) + "\n"
