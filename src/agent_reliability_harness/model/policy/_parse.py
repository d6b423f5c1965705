"""What the parsers of the policy sections share: lists of tool names, and regular expressions
that are compiled once and checked for exponential backtracking."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from agent_reliability_harness._decode import bad, json_type
from agent_reliability_harness.errors import excerpt, join_pointer
from agent_reliability_harness.model._regex import check_engine_safe, risky_repetition

__all__ = ["compile_regex", "require_tool", "risky_warnings", "tool_names"]


def tool_names(data: Mapping[str, Any], key: str, base: str) -> tuple[str, ...]:
    value = data.get(key)
    pointer = join_pointer(base, key)
    if value is None:
        return ()
    if type(value) is not list:
        raise bad(pointer, f"must be an array of tool names, got {json_type(value)}")
    seen: set[str] = set()
    for index, name in enumerate(value):
        if type(name) is not str or not name:
            raise bad(
                join_pointer(pointer, index),
                f"must be a non-empty tool name string, got {json_type(name)}",
            )
        if name in seen:
            raise bad(join_pointer(pointer, index), f"lists {excerpt(name)} more than once")
        seen.add(name)
    return tuple(value)


def require_tool(raw: Mapping[str, Any], base: str) -> str:
    value = raw.get("tool")
    if value is None:
        raise bad(base, "missing required field 'tool'")
    if type(value) is not str or not value:
        raise bad(
            join_pointer(base, "tool"), f"must be a non-empty tool name, got {json_type(value)}"
        )
    return value


def compile_regex(pattern: str, flags: int, pointer: str) -> re.Pattern[str]:
    try:
        regex = re.compile(pattern, flags)
    except re.error as exc:
        raise bad(pointer, f"invalid regular expression {excerpt(pattern)}: {exc}") from None
    except (RecursionError, OverflowError, ValueError) as exc:
        raise bad(
            pointer, f"regular expression {excerpt(pattern)} cannot be compiled: {exc}"
        ) from None
    if "+" in pattern:  # a possessive repetition is written with a +
        check_engine_safe(pattern, flags, pointer)
    return regex


def risky_warnings(located: list[tuple[str, str, int]], allow: bool) -> tuple[str, ...]:
    """For each (pointer, pattern, flags) that can backtrack exponentially: an error, or with
    ``allow`` a warning."""
    warnings: list[str] = []
    for pointer, pattern, flags in located:
        if not risky_repetition(pattern, flags):
            continue
        message = (
            f"pattern {excerpt(pattern)} nests a repetition of varying length inside another (as "
            "in '(a+)+' or '(a{1,2})+'), so matching can take exponential time on some texts"
        )
        if not allow:
            raise bad(pointer, f"{message}; rewrite it, or accept it with --allow-risky-patterns")
        warnings.append(f"{pointer}: {message}")
    return tuple(warnings)
