"""The ``sequence`` section: the tools a run must and must not call, and a partial order of
calls."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from agent_reliability_harness._decode import bad, check_keys
from agent_reliability_harness.model.policy._parse import tool_names

__all__ = ["Sequence"]


@dataclass(frozen=True, slots=True)
class Sequence:
    """Trajectory shape: tools that must and must not be called, and a partial call order."""

    required_tools: tuple[str, ...] = ()
    forbidden_tools: tuple[str, ...] = ()
    call_order: tuple[str, ...] = ()

    _KEYS: ClassVar[tuple[str, ...]] = ("required_tools", "forbidden_tools", "call_order")

    @classmethod
    def from_section(cls, raw: Mapping[str, Any]) -> Sequence:
        check_keys(raw, cls._KEYS, "/sequence")
        required = tool_names(raw, "required_tools", "/sequence")
        forbidden = tool_names(raw, "forbidden_tools", "/sequence")
        both = sorted(set(required) & set(forbidden))
        if both:
            raise bad(
                "/sequence", f"lists the same tool(s) as required and forbidden: {', '.join(both)}"
            )
        return cls(required, forbidden, tool_names(raw, "call_order", "/sequence"))
