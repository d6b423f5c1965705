"""The ``confirmation`` section (language 1.1): calls of the guarded tools need a user message
that confirms them since the last such call."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final

from agent_reliability_harness._decode import bad, check_keys, require_object
from agent_reliability_harness.errors import join_pointer
from agent_reliability_harness.model.policy._context import Context
from agent_reliability_harness.model.policy._parse import tool_names

__all__ = ["DEFAULT_CONFIRMATION_PATTERN", "Confirmation"]

DEFAULT_CONFIRMATION_PATTERN: Final = r"\byes\b"


@dataclass(frozen=True, slots=True)
class Confirmation:
    """Calls of ``tools`` need a user message matching ``pattern`` since the last such call."""

    tools: tuple[str, ...]
    pattern: str = DEFAULT_CONFIRMATION_PATTERN
    listed: bool = False  # whether the policy listed the tools (else: its side-effect tools)
    regex: re.Pattern[str] | None = field(default=None, compare=False)

    _KEYS: ClassVar[tuple[str, ...]] = ("tools", "pattern")

    @classmethod
    def parse(cls, raw: object, context: Context) -> Confirmation:
        base = "/confirmation"
        data = require_object(raw, base, "confirmation")
        check_keys(data, cls._KEYS, base)
        tools = tool_names(data, "tools", base)
        listed = data.get("tools") is not None
        if listed and not tools:
            raise bad(join_pointer(base, "tools"), "must name at least one tool")
        for index, name in enumerate(tools):
            context.tool(name, join_pointer(base, "tools", index))
        if not listed:
            tools = tuple(name for name, tool in context.tools.items() if tool.side_effect)
            if not tools:
                raise bad(
                    base,
                    "no tool to guard: list the tools in tools, or mark tools side_effect: true "
                    "in allowed_tools",
                )
        pattern = data.get("pattern")
        if pattern is None:
            pattern = DEFAULT_CONFIRMATION_PATTERN
            regex = re.compile(pattern, re.IGNORECASE)
        else:
            regex = context.regex(
                pattern, join_pointer(base, "pattern"), flags=re.IGNORECASE, searched=True
            )
        return cls(tools, pattern, listed, regex)

    def to_dict(self) -> dict[str, Any]:
        return {"tools": list(self.tools), "pattern": self.pattern}
