"""Turning input documents into canonical traces, by format name or by detection."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from agent_reliability_harness.errors import InputError
from agent_reliability_harness.model._checks import json_type
from agent_reliability_harness.model.trace import Trace

__all__ = ["FORMATS", "detect_format", "to_trace"]


def _canonical(value: Any) -> Trace:
    return Trace.from_dict(value)


# Format name -> adapter. Every adapter is total: it returns a Trace or raises InputError.
FORMATS: Final[Mapping[str, Callable[[Any], Trace]]] = {"arh": _canonical}


def detect_format(value: Any) -> str:
    """Name the format of a decoded document, or raise InputError when none fits."""
    if type(value) is dict and "steps" in value:
        return "arh"
    if type(value) is dict:
        raise InputError(
            "cannot tell the trace format: a canonical trace is an object with 'steps'", pointer=""
        )
    raise InputError(
        f"cannot tell the trace format: expected a trace object, got {json_type(value)}", pointer=""
    )


def to_trace(value: Any, fmt: str = "auto") -> Trace:
    """Build a canonical trace from a decoded document in format ``fmt`` (or ``auto``)."""
    name = detect_format(value) if fmt == "auto" else fmt
    adapter = FORMATS.get(name)
    if adapter is None:
        raise InputError(f"unknown trace format {name!r}", pointer=None)
    return adapter(value)
