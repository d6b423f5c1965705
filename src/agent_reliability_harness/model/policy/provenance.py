"""The ``provenance`` section (language 1.1): which tool outputs are untrusted, which tools are
trusted, which fields of an output are trusted or untrusted apart from the rest of it, and the
arguments (sinks) whose values must not come from untrusted output, or must come from named
sources."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final

from agent_reliability_harness._decode import (
    bad,
    check_keys,
    json_type,
    opt_bool,
    opt_nonneg_int,
    opt_str,
    require_object,
)
from agent_reliability_harness.errors import excerpt, join_pointer
from agent_reliability_harness.model._extract import Extract
from agent_reliability_harness.model._paths import ArgPath
from agent_reliability_harness.model.policy._context import Context
from agent_reliability_harness.model.policy._parse import require_tool, tool_names

__all__ = [
    "DEFAULT_MIN_VALUE_LENGTH",
    "MATCHES",
    "SOURCES",
    "Field",
    "Provenance",
    "Require",
    "Sink",
]

DEFAULT_MIN_VALUE_LENGTH: Final = 8
TRUSTS: Final = ("trusted", "untrusted")
# where a sink's values may come from (``require.sources``)
SOURCES: Final = ("user", "trusted", "policy")
# how a value is looked for in a source (``require.match``)
MATCHES: Final = ("token", "exact", "substring")
DEFAULT_MATCH: Final = "token"


def _got(value: object) -> str:
    return excerpt(value) if type(value) is str else json_type(value)


@dataclass(frozen=True, slots=True)
class Field:
    """A part of a tool's output (a JSON pointer or a pattern's ``value`` spans) with its own
    trust, apart from the rest of that output."""

    tool: str
    extract: Extract
    trust: str  # "trusted" or "untrusted"
    description: str | None = None

    _KEYS: ClassVar[tuple[str, ...]] = ("tool", *Extract.KEYS, "trust", "description")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"tool": self.tool, **self.extract.to_dict(), "trust": self.trust}
        if self.description is not None:
            out["description"] = self.description
        return out


@dataclass(frozen=True, slots=True)
class Require:
    """Where a sink's values must come from: the named sources, the policy's own literals, and
    how a value is looked for in them."""

    sources: tuple[str, ...]
    values: tuple[str, ...] = ()
    match: str = DEFAULT_MATCH

    _KEYS: ClassVar[tuple[str, ...]] = ("sources", "values", "match")

    @classmethod
    def parse(cls, raw: object, base: str) -> Require:
        data = require_object(raw, base, "require")
        check_keys(data, cls._KEYS, base)
        sources_raw = data.get("sources")
        where = join_pointer(base, "sources")
        if sources_raw is None:
            raise bad(base, "missing required field 'sources' (where the values must come from)")
        if type(sources_raw) is not list or not sources_raw:
            raise bad(where, f"must be a non-empty array of {', '.join(SOURCES)}")
        sources: list[str] = []
        for index, name in enumerate(sources_raw):
            if name not in SOURCES or type(name) is not str:
                raise bad(
                    join_pointer(where, index),
                    f"must be one of {', '.join(SOURCES)}, got {_got(name)}",
                )
            if name in sources:
                raise bad(join_pointer(where, index), f"source {name!r} is listed twice")
            sources.append(name)
        values_raw = data.get("values")
        values: list[str] = []
        if values_raw is not None:
            vwhere = join_pointer(base, "values")
            if type(values_raw) is not list or not values_raw:
                raise bad(vwhere, "must be a non-empty array of strings")
            for index, value in enumerate(values_raw):
                if type(value) is not str or not value.strip():
                    raise bad(
                        join_pointer(vwhere, index),
                        f"must be a string that is not only whitespace, got {_got(value)}",
                    )
                values.append(value)
        if values and "policy" not in sources:
            raise bad(where, "add 'policy' to the sources: values are listed, so they are allowed")
        if "policy" in sources and not values:
            raise bad(base, "source 'policy' needs the allowed literals in 'values'")
        match = data.get("match")
        if match is None:
            match = DEFAULT_MATCH
        elif match not in MATCHES or type(match) is not str:
            raise bad(
                join_pointer(base, "match"),
                f"must be one of {', '.join(MATCHES)}, got {_got(match)}",
            )
        return cls(tuple(sources), tuple(values), match)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"sources": list(self.sources)}
        if self.values:
            out["values"] = list(self.values)
        out["match"] = self.match
        return out


@dataclass(frozen=True, slots=True)
class Sink:
    """An argument of a tool whose values must not come from untrusted output."""

    tool: str
    argument: ArgPath
    extract: str | None = None
    description: str | None = None
    extract_regex: re.Pattern[str] | None = field(default=None, compare=False)
    min_value_length: int | None = None  # None: the section's
    require: Require | None = None

    _KEYS: ClassVar[tuple[str, ...]] = (
        "tool",
        "argument",
        "extract",
        "description",
        "min_value_length",
        "require",
    )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"tool": self.tool, "argument": self.argument.text}
        if self.extract is not None:
            out["extract"] = self.extract
        if self.description is not None:
            out["description"] = self.description
        # only when set, so that the canonical form of a policy without them is unchanged
        if self.min_value_length is not None:
            out["min_value_length"] = self.min_value_length
        if self.require is not None:
            out["require"] = self.require.to_dict()
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
    fields: tuple[Field, ...] = ()

    _KEYS: ClassVar[tuple[str, ...]] = (
        "untrusted",
        "trusted_tools",
        "fields",
        "sinks",
        "min_value_length",
    )
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
            own_length = opt_nonneg_int(sink, "min_value_length", where, minimum=1)
            require = None
            if sink.get("require") is not None:
                require = Require.parse(sink["require"], join_pointer(where, "require"))
            sinks.append(
                Sink(
                    tool,
                    argument,
                    extract,
                    opt_str(sink, "description", where),
                    extract_regex,
                    own_length,
                    require,
                )
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
            _parse_fields(data.get("fields"), join_pointer(base, "fields"), context),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "untrusted": {
                "tools": list(self.untrusted_tools),
                "all_tools": self.all_tools,
                "output_patterns": list(self.output_patterns) or None,
            },
            "trusted_tools": list(self.trusted_tools),
            # only when given, so that the canonical form of a policy without them is unchanged
            **({"fields": [f.to_dict() for f in self.fields]} if self.fields else {}),
            "sinks": [sink.to_dict() for sink in self.sinks],
            "min_value_length": self.min_value_length,
        }


def _parse_fields(raw: object, base: str, context: Context) -> tuple[Field, ...]:
    if raw is None:
        return ()
    if type(raw) is not list or not raw:
        raise bad(base, "must be a non-empty array of fields")
    fields: list[Field] = []
    for index, item in enumerate(raw):
        where = join_pointer(base, index)
        data = require_object(item, where, "a field")
        check_keys(data, Field._KEYS, where)
        tool = require_tool(data, where)
        context.tool(tool, join_pointer(where, "tool"))
        extract = Extract.parse(data, where, context)
        for other in fields:
            if other.tool == tool and (other.extract.pointer is None) != (extract.pointer is None):
                raise bad(
                    where,
                    f"the fields of tool {excerpt(tool)} mix pointers and patterns, which read its "
                    "output differently (as data, and as the text returned); use one kind per tool",
                )
        trust = data.get("trust")
        if trust is None:
            raise bad(where, "missing required field 'trust' (trusted or untrusted)")
        if type(trust) is not str or trust not in TRUSTS:
            raise bad(
                join_pointer(where, "trust"), f"must be trusted or untrusted, got {_got(trust)}"
            )
        fields.append(Field(tool, extract, trust, opt_str(data, "description", where)))
    return tuple(fields)
