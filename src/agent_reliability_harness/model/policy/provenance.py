"""The ``provenance`` section (language 1.1): which tool outputs are untrusted, which tools are
trusted, and the arguments (sinks) whose values must not come from untrusted output."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final

from agent_reliability_harness._decode import (
    bad,
    check_keys,
    opt_bool,
    opt_nonneg_int,
    opt_str,
    require_object,
)
from agent_reliability_harness.errors import excerpt, join_pointer
from agent_reliability_harness.model._paths import ArgPath
from agent_reliability_harness.model.policy._context import Context
from agent_reliability_harness.model.policy._parse import require_tool, tool_names

__all__ = ["DEFAULT_MIN_VALUE_LENGTH", "Provenance", "Sink"]

DEFAULT_MIN_VALUE_LENGTH: Final = 8


@dataclass(frozen=True, slots=True)
class Sink:
    """An argument of a tool whose values must not come from untrusted output."""

    tool: str
    argument: ArgPath
    extract: str | None = None
    description: str | None = None
    extract_regex: re.Pattern[str] | None = field(default=None, compare=False)

    _KEYS: ClassVar[tuple[str, ...]] = ("tool", "argument", "extract", "description")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"tool": self.tool, "argument": self.argument.text}
        if self.extract is not None:
            out["extract"] = self.extract
        if self.description is not None:
            out["description"] = self.description
        return out


def _overlap(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """Whether two argument paths can reach a common string: one leads into the other (a sink
    checks every string below its path), '*' standing for any name or index."""
    return all(x == y or "*" in (x, y) for x, y in zip(a, b, strict=False))


@dataclass(frozen=True, slots=True)
class Provenance:
    """Which tool outputs are untrusted, which are trusted, and which arguments are sinks."""

    untrusted_tools: tuple[str, ...] = ()
    all_tools: bool = False
    output_patterns: tuple[str, ...] = ()
    trusted_tools: tuple[str, ...] = ()
    sinks: tuple[Sink, ...] = ()
    min_value_length: int = DEFAULT_MIN_VALUE_LENGTH
    output_regexes: tuple[re.Pattern[str], ...] = field(default=(), compare=False)

    _KEYS: ClassVar[tuple[str, ...]] = ("untrusted", "trusted_tools", "sinks", "min_value_length")
    _SOURCE_KEYS: ClassVar[tuple[str, ...]] = ("tools", "all_tools", "output_patterns")

    @classmethod
    def parse(cls, raw: object, context: Context) -> Provenance:
        base = "/provenance"
        data = require_object(raw, base, "provenance")
        check_keys(data, cls._KEYS, base)
        source_base = join_pointer(base, "untrusted")
        if data.get("untrusted") is None:
            raise bad(base, "missing required field 'untrusted' (which tool outputs are untrusted)")
        source = require_object(data["untrusted"], source_base, "untrusted")
        check_keys(source, cls._SOURCE_KEYS, source_base)
        tools = tool_names(source, "tools", source_base)
        all_tools = opt_bool(source, "all_tools", source_base)
        if all_tools and tools:
            raise bad(source_base, "set either tools or all_tools, not both")
        if not all_tools and not tools:
            raise bad(source_base, "name the untrusted tools in tools, or set all_tools: true")
        for index, name in enumerate(tools):
            context.tool(name, join_pointer(source_base, "tools", index))
        patterns_raw = source.get("output_patterns")
        patterns: list[str] = []
        regexes: list[re.Pattern[str]] = []
        if patterns_raw is not None:
            where = join_pointer(source_base, "output_patterns")
            if type(patterns_raw) is not list or not patterns_raw:
                raise bad(where, "must be a non-empty array of regular expressions")
            for index, pattern in enumerate(patterns_raw):
                regexes.append(
                    context.regex(
                        pattern, join_pointer(where, index), flags=re.IGNORECASE, searched=True
                    )
                )
                patterns.append(pattern)
        trusted = tool_names(data, "trusted_tools", base)
        for index, name in enumerate(trusted):
            context.tool(name, join_pointer(base, "trusted_tools", index))
            if name in tools:
                raise bad(
                    join_pointer(base, "trusted_tools", index),
                    f"tool {excerpt(name)} is listed as both untrusted and trusted",
                )
        sinks_raw = data.get("sinks")
        sinks_base = join_pointer(base, "sinks")
        if sinks_raw is None:
            raise bad(base, "missing required field 'sinks' (the arguments to protect)")
        if type(sinks_raw) is not list or not sinks_raw:
            raise bad(sinks_base, "must be a non-empty array of sinks")
        sinks: list[Sink] = []
        for index, sink_raw in enumerate(sinks_raw):
            where = join_pointer(sinks_base, index)
            sink = require_object(sink_raw, where, "a sink")
            check_keys(sink, Sink._KEYS, where)
            tool = require_tool(sink, where)
            context.tool(tool, join_pointer(where, "tool"))
            if sink.get("argument") is None:
                raise bad(where, "missing required field 'argument'")
            argument = ArgPath.parse(sink["argument"], join_pointer(where, "argument"))
            context.argument(tool, argument, join_pointer(where, "argument"))
            for other in sinks:
                if other.tool == tool and _overlap(other.argument.segments, argument.segments):
                    same = other.argument.segments == argument.segments
                    this = excerpt(f"{tool}.{argument.text}", quote=False)
                    that = excerpt(f"{tool}.{other.argument.text}", quote=False)
                    raise bad(
                        where,
                        f"sink {this} is listed twice"
                        if same
                        else f"sink {this} overlaps the sink {that}, so a value would be checked "
                        "twice",
                    )
            extract = sink.get("extract")
            extract_regex = None
            if extract is not None:
                extract_regex = context.regex(
                    extract, join_pointer(where, "extract"), flags=re.IGNORECASE, searched=True
                )
            sinks.append(
                Sink(tool, argument, extract, opt_str(sink, "description", where), extract_regex)
            )
        length = opt_nonneg_int(data, "min_value_length", base, minimum=1)
        return cls(
            tools,
            all_tools,
            tuple(patterns),
            trusted,
            tuple(sinks),
            DEFAULT_MIN_VALUE_LENGTH if length is None else length,
            tuple(regexes),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "untrusted": {
                "tools": list(self.untrusted_tools),
                "all_tools": self.all_tools,
                "output_patterns": list(self.output_patterns) or None,
            },
            "trusted_tools": list(self.trusted_tools),
            "sinks": [sink.to_dict() for sink in self.sinks],
            "min_value_length": self.min_value_length,
        }
