"""How values and amounts appear in finding messages: JSON text, bounded length, exact enough."""

from __future__ import annotations

import json
from math import isclose
from typing import Final

__all__ = ["amount", "show", "show_number"]

_MAX_SHOWN: Final = 120


def _default(value: object) -> str:
    return f"<{type(value).__name__}>"


def show(value: object) -> str:
    """A value as compact JSON text (keys sorted), cut to a readable length."""
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=_default)
    except (RecursionError, TypeError, ValueError):
        text = f"<{type(value).__name__}>"
    if len(text) > _MAX_SHOWN:
        text = f"{text[: _MAX_SHOWN - 1]}\u2026 ({len(text)} characters)"
    return text


def show_number(value: float) -> str:
    """A number as JSON writes it (``500``, ``0.01``, ``1000.0``)."""
    return json.dumps(value)


def amount(value: float, limit: float, decimals: int) -> tuple[str, str]:
    """Format a measured value and its limit with ``decimals`` places, or more if they would
    otherwise print the same although they differ (so a message never says "100 exceeds 100"),
    or if the limit needs them (a limit of 0.5 ms is not shown as 0 ms)."""
    for places in range(decimals, 13):
        shown, shown_limit = f"{value:.{places}f}", f"{limit:.{places}f}"
        if (shown != shown_limit or value == limit) and isclose(float(shown_limit), limit):
            return shown, shown_limit
    return repr(value), repr(limit)
