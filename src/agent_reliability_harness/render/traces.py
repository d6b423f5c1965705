"""Canonical traces as text (``arh convert``): one trace as JSON, several as JSON Lines."""

from __future__ import annotations

import json
from collections.abc import Sequence

from agent_reliability_harness._json import dumps_indented
from agent_reliability_harness.model.trace import Trace

__all__ = ["render_trace", "render_traces"]


def render_trace(trace: Trace, *, indent: bool) -> str:
    """One trace as indented JSON, or as one compact line, with a trailing newline.

    ASCII-only, so that any string (a lone surrogate included) survives being written as UTF-8;
    identical traces give identical bytes. Raises RecursionError for values nested too deeply.
    """
    if indent:
        return dumps_indented(trace.to_dict()) + "\n"
    return json.dumps(trace.to_dict(), separators=(",", ":"), ensure_ascii=True) + "\n"


def render_traces(traces: Sequence[Trace]) -> str:
    """One trace: indented JSON. Several: one compact JSON document per line (JSON Lines)."""
    return "".join(render_trace(trace, indent=len(traces) == 1) for trace in traces)
