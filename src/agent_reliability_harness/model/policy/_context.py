"""The parsing context of the language 1.1 sections: names of tools and arguments are checked
against ``allowed_tools`` where the policy declares them, so that a typo cannot silently switch a
rule off, and the regular expressions are collected to be checked for catastrophic
backtracking."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from agent_reliability_harness._decode import bad, json_type
from agent_reliability_harness.errors import excerpt
from agent_reliability_harness.model._regex import check_consumes
from agent_reliability_harness.model.policy._parse import compile_regex

if TYPE_CHECKING:
    from agent_reliability_harness.model._paths import ArgPath
    from agent_reliability_harness.model.policy.tools import ToolSchema

__all__ = ["Context"]


class Context:
    """Parsing context of the language 1.1 sections: tool and argument names, and the patterns
    to check for catastrophic backtracking."""

    def __init__(self, tools: Mapping[str, ToolSchema], allow_unlisted: bool) -> None:
        self.tools = tools
        self.allow_unlisted = allow_unlisted
        self.patterns: list[tuple[str, str, int]] = []  # (pointer, pattern, flags)

    def tool(self, name: str, pointer: str) -> None:
        if not self.allow_unlisted and name not in self.tools:
            raise bad(
                pointer,
                f"tool {excerpt(name)} is not in allowed_tools, so this rule could never apply to "
                "an accepted call; add it to allowed_tools or set allow_unlisted_tools",
            )

    def argument(self, tool: str, path: ArgPath, pointer: str) -> None:
        schema = self.tools.get(tool)
        if schema is None or not path.segments or path.segments[0] == "*":
            return
        declared = {**schema.required_arguments, **schema.optional_arguments}
        if declared and path.segments[0] not in declared:
            raise bad(
                pointer,
                f"tool {excerpt(tool)} declares no argument {excerpt(path.segments[0])} "
                f"(its arguments: {', '.join(declared)})",
            )

    def regex(self, raw: object, pointer: str, *, flags: int, searched: bool) -> re.Pattern[str]:
        if type(raw) is not str or not raw:
            raise bad(pointer, f"must be a non-empty regular expression, got {json_type(raw)}")
        regex = compile_regex(raw, flags, pointer)
        if searched and regex.search("") is not None:
            raise bad(
                pointer,
                f"pattern {excerpt(raw)} matches the empty string, so it matches every text",
            )
        if searched:
            check_consumes(raw, flags, pointer)
        self.patterns.append((pointer, raw, flags))
        return regex
