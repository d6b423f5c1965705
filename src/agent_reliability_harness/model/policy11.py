"""Policy language 1.1: provenance, conditions, relations, confirmation and loops.

A policy that declares ``"schema_version": "1.1"`` (or a later 1.x) may add five top-level
sections to the sections of version 1. They are parsed here, as strictly as the rest of the
policy: unknown keys are errors with a suggestion, every regular expression is compiled once, and
names of tools and arguments are checked against ``allowed_tools`` where the policy declares them,
so that a typo cannot silently switch a rule off. See POLICY-SPEC.md, "Policy language 1.1".

Argument and output locations are *paths*: a bare argument name (``"amount"``) or a JSON pointer
(``"/payment_methods/*/payment_id"``) in which a ``*`` segment stands for every element of an
array or every value of an object.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from agent_reliability_harness._decode import (
    bad,
    check_keys,
    finite_number,
    json_type,
    number_text,
    opt_bool,
    opt_nonneg_int,
    opt_str,
    require_object,
)
from agent_reliability_harness._record import Record, field
from agent_reliability_harness.errors import excerpt, join_pointer
from agent_reliability_harness.model._paths import ArgPath, collect, json_key
from agent_reliability_harness.model.policy import _compile, risky_warnings
from agent_reliability_harness.model.policy import _tool_names as _names

TYPE_CHECKING = False  # `typing` costs milliseconds at start-up; only type checkers need it
if TYPE_CHECKING:
    from typing import Any, ClassVar, Final

    from agent_reliability_harness.model.policy import ToolSchema

__all__ = [
    "DEFAULT_CONFIRMATION_PATTERN",
    "DEFAULT_MIN_VALUE_LENGTH",
    "KEYS",
    "OPERATORS",
    "ArgPath",
    "Clause",
    "Condition",
    "Confirmation",
    "Extensions",
    "Loops",
    "Predicate",
    "Prior",
    "Provenance",
    "Relation",
    "Sink",
    "collect",
    "json_key",
    "minor_version",
    "parse_extensions",
]

# The top-level sections of language 1.1, in the order the canonical form writes them.
KEYS: Final = ("provenance", "conditions", "relations", "confirmation", "loops")
OPERATORS: Final = ("==", "!=", "<", "<=", ">", ">=", "in", "not_in")
_ORDERING: Final = ("<", "<=", ">", ">=")
DEFAULT_MIN_VALUE_LENGTH: Final = 8
DEFAULT_CONFIRMATION_PATTERN: Final = r"\byes\b"
DEFAULT_CYCLE_LENGTH: Final = 4
MAX_CYCLE_LENGTH: Final = 16
_MISSING_MODES: Final = ("fail", "skip")


def minor_version(version: str) -> int:
    """The minor part of a schema_version text: ``"1.1"`` -> 1; ``"1"`` and ``"1.x"`` -> 0."""
    parts = version.split(".", 2)
    if len(parts) > 1 and parts[1].isascii() and parts[1].isdigit():
        return int(parts[1])
    return 0


def _req_tool(raw: Mapping[str, Any], base: str) -> str:
    value = raw.get("tool")
    if value is None:
        raise bad(base, "missing required field 'tool'")
    if type(value) is not str or not value:
        raise bad(
            join_pointer(base, "tool"), f"must be a non-empty tool name, got {json_type(value)}"
        )
    return value


# ---------------------------------------------------------------------------------------------
# Predicates (`when` clauses)

_PREDICATE_KEYS: Final = (
    "equals",
    "enum",
    "pattern",
    "min",
    "max",
    "exclusive_min",
    "exclusive_max",
    "not",
)
_BOUNDS: Final = ("min", "max", "exclusive_min", "exclusive_max")


def _check_range(bounds: dict[str, int | float | None], pointer: str) -> None:
    """Refuse bounds that no number meets (min above max, exclusive_min 5 with exclusive_max 5):
    a test that never holds would turn its condition off without a word."""
    lows = [(v, key) for key in ("min", "exclusive_min") if (v := bounds[key]) is not None]
    highs = [(v, key) for key in ("max", "exclusive_max") if (v := bounds[key]) is not None]
    if not lows or not highs:
        return
    # the tightest bound on each side; at equal values an exclusive bound is the tighter
    low, low_key = max(lows, key=lambda b: (b[0], b[1] == "exclusive_min"))
    high, high_key = min(highs, key=lambda b: (b[0], b[1] != "exclusive_max"))
    if (low_key, high_key) == ("min", "max") and low > high:
        raise bad(pointer, f"min ({excerpt(low)}) exceeds max ({excerpt(high)})")
    if low > high or (low == high and "exclusive" in low_key + high_key):
        raise bad(
            pointer,
            f"no number is within {low_key} {excerpt(low)} and {high_key} {excerpt(high)}, so "
            "the test "
            "never holds",
        )


class Predicate(Record):
    """Tests on one value, all of which must hold: equality, membership, a full-match pattern,
    inclusive and exclusive numeric bounds, and the negation of another predicate."""

    equals: tuple[Any, ...] = ()  # () when not set, else the one value
    enum: tuple[Any, ...] | None = None
    pattern: str | None = None
    min: int | float | None = None
    max: int | float | None = None
    exclusive_min: int | float | None = None
    exclusive_max: int | float | None = None
    negated: Predicate | None = None
    regex: re.Pattern[str] | None = field(default=None, compare=False)
    keys: frozenset[Any] | None = field(default=None, compare=False)
    equals_key: Any = field(default=None, compare=False)

    def holds(self, value: Any) -> bool:
        """Whether ``value`` passes every test (a test on the wrong type fails)."""
        if self.equals and json_key(value) != self.equals_key:
            return False
        if self.keys is not None and json_key(value) not in self.keys:
            return False
        if self.regex is not None and (type(value) is not str or not self.regex.fullmatch(value)):
            return False
        if not (
            self.min is None
            and self.max is None
            and self.exclusive_min is None
            and self.exclusive_max is None
        ):
            if type(value) is not int and type(value) is not float:
                return False
            if self.min is not None and value < self.min:
                return False
            if self.max is not None and value > self.max:
                return False
            if self.exclusive_min is not None and value <= self.exclusive_min:
                return False
            if self.exclusive_max is not None and value >= self.exclusive_max:
                return False
        return self.negated is None or not self.negated.holds(value)

    @classmethod
    def parse(cls, raw: object, pointer: str, patterns: list[tuple[str, str, int]]) -> Predicate:
        data = require_object(raw, pointer, "a predicate")
        check_keys(data, _PREDICATE_KEYS, pointer)
        return cls._from(data, pointer, patterns)

    @classmethod
    def _from(
        cls, data: Mapping[str, Any], pointer: str, patterns: list[tuple[str, str, int]]
    ) -> Predicate:
        if not any(data.get(k) is not None for k in _PREDICATE_KEYS):
            raise bad(pointer, f"a predicate needs at least one of {', '.join(_PREDICATE_KEYS)}")
        equals: tuple[Any, ...] = () if data.get("equals") is None else (data["equals"],)
        enum: tuple[Any, ...] | None = None
        keys: frozenset[Any] | None = None
        if data.get("enum") is not None:
            values = data["enum"]
            if type(values) is not list or not values:
                raise bad(join_pointer(pointer, "enum"), "must be a non-empty array of values")
            enum = tuple(values)
            keys = frozenset(json_key(v) for v in values)
        pattern = opt_str(data, "pattern", pointer)
        regex = None
        if pattern is not None:
            where = join_pointer(pointer, "pattern")
            regex = _compile(pattern, 0, where)
            patterns.append((where, pattern, 0))
        bounds = {
            key: None
            if data.get(key) is None
            else finite_number(data[key], join_pointer(pointer, key))
            for key in _BOUNDS
        }
        _check_range(bounds, pointer)
        negated = None
        if data.get("not") is not None:
            negated = cls.parse(data["not"], join_pointer(pointer, "not"), patterns)
        return cls(
            equals,
            enum,
            pattern,
            bounds["min"],
            bounds["max"],
            bounds["exclusive_min"],
            bounds["exclusive_max"],
            negated,
            regex,
            keys,
            json_key(equals[0]) if equals else None,
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.equals:
            out["equals"] = self.equals[0]
        if self.enum is not None:
            out["enum"] = list(self.enum)
        if self.pattern is not None:
            out["pattern"] = self.pattern
        for key in _BOUNDS:
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.negated is not None:
            out["not"] = self.negated.to_dict()
        return out


class Clause(Record):
    """One entry of a ``when`` object: the values at ``path`` of which at least ``min_count``
    must satisfy ``predicate``."""

    path: ArgPath
    predicate: Predicate
    min_count: int = 1

    def holds(self, arguments: Mapping[str, Any]) -> bool:
        count = 0
        for value in collect(arguments, self.path):
            if self.predicate.holds(value):
                count += 1
                if count >= self.min_count:
                    return True
        return False

    def to_dict(self) -> dict[str, Any]:
        out = self.predicate.to_dict()
        if self.min_count != 1:
            out["min_count"] = self.min_count
        return out


def _when(raw: object, pointer: str, tool: str, context: _Context) -> tuple[Clause, ...]:
    if raw is None:
        return ()
    data = require_object(raw, pointer, "when")
    clauses: list[Clause] = []
    for key, spec in data.items():
        where = join_pointer(pointer, key)
        path = ArgPath.parse(key, where)
        context.argument(tool, path, where)
        body = require_object(spec, where, "a predicate")
        check_keys(body, (*_PREDICATE_KEYS, "min_count"), where)
        min_count = opt_nonneg_int(body, "min_count", where, minimum=1)
        if min_count is None:
            min_count = 1
        elif min_count > 1 and not path.wildcard:
            raise bad(
                join_pointer(where, "min_count"),
                "min_count above 1 needs a path with a '*' segment (one value cannot count twice)",
            )
        predicate = Predicate._from(
            {k: v for k, v in body.items() if k != "min_count"}, where, context.patterns
        )
        clauses.append(Clause(path, predicate, min_count))
    return tuple(clauses)


def _when_dict(clauses: tuple[Clause, ...]) -> dict[str, Any]:
    return {clause.path.text: clause.to_dict() for clause in clauses}


def _match(
    raw: object, pointer: str, tool: str, other: str, context: _Context
) -> tuple[tuple[ArgPath, ArgPath], ...]:
    """``{"<argument of this call>": "<argument of the other call>"}``, without wildcards."""
    if raw is None:
        return ()
    data = require_object(raw, pointer, "match")
    pairs: list[tuple[ArgPath, ArgPath]] = []
    for key, value in data.items():
        where = join_pointer(pointer, key)
        mine = ArgPath.parse(key, where)
        theirs = ArgPath.parse(value, where)
        for path in (mine, theirs):
            if path.wildcard:
                raise bad(where, "match paths name one value each; '*' is not allowed here")
        context.argument(tool, mine, where)
        context.argument(other, theirs, where)
        pairs.append((mine, theirs))
    return tuple(pairs)


def _match_dict(pairs: tuple[tuple[ArgPath, ArgPath], ...]) -> dict[str, str]:
    return {mine.text: theirs.text for mine, theirs in pairs}


# ---------------------------------------------------------------------------------------------
# Parsing context: tool and argument names, patterns to check for catastrophic backtracking


class _Context:
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
        regex = _compile(raw, flags, pointer)
        if searched and regex.search("") is not None:
            raise bad(
                pointer,
                f"pattern {excerpt(raw)} matches the empty string, so it matches every text",
            )
        if searched:
            from agent_reliability_harness.model._regex import check_consumes

            check_consumes(raw, flags, pointer)
        self.patterns.append((pointer, raw, flags))
        return regex


# ---------------------------------------------------------------------------------------------
# provenance


class Sink(Record):
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


class Provenance(Record):
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
    def parse(cls, raw: object, context: _Context) -> Provenance:
        base = "/provenance"
        data = require_object(raw, base, "provenance")
        check_keys(data, cls._KEYS, base)
        source_base = join_pointer(base, "untrusted")
        if data.get("untrusted") is None:
            raise bad(base, "missing required field 'untrusted' (which tool outputs are untrusted)")
        source = require_object(data["untrusted"], source_base, "untrusted")
        check_keys(source, cls._SOURCE_KEYS, source_base)
        tools = _names(source, "tools", source_base)
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
        trusted = _names(data, "trusted_tools", base)
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
            tool = _req_tool(sink, where)
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


# ---------------------------------------------------------------------------------------------
# conditions


class Prior(Record):
    """A call that must have succeeded earlier, optionally with matching arguments."""

    tool: str
    match: tuple[tuple[ArgPath, ArgPath], ...] = ()

    def to_dict(self) -> str | dict[str, Any]:
        if not self.match:
            return self.tool
        return {"tool": self.tool, "match": _match_dict(self.match)}


def _all_hold(when: tuple[Clause, ...], arguments: Mapping[str, Any]) -> bool:
    """Do all the ``when`` clauses of a condition or relation hold for a call's arguments?"""
    return all(clause.holds(arguments) for clause in when)


class Condition(Record):
    """When a call of ``tool`` satisfies ``when``, it is forbidden, or it needs prior calls."""

    name: str
    tool: str
    when: tuple[Clause, ...] = ()
    require_prior: tuple[Prior, ...] = ()
    forbid: bool = False
    description: str | None = None

    _KEYS: ClassVar[tuple[str, ...]] = (
        "name",
        "tool",
        "when",
        "require_prior",
        "forbid",
        "description",
    )

    def applies(self, arguments: Mapping[str, Any]) -> bool:
        return _all_hold(self.when, arguments)

    @classmethod
    def parse(cls, raw: object, index: int, context: _Context) -> Condition:
        base = f"/conditions/{index}"
        data = require_object(raw, base, "a condition")
        check_keys(data, cls._KEYS, base)
        tool = _req_tool(data, base)
        context.tool(tool, join_pointer(base, "tool"))
        name = opt_str(data, "name", base) or f"conditions/{index}"
        when = _when(data.get("when"), join_pointer(base, "when"), tool, context)
        forbid = opt_bool(data, "forbid", base)
        priors: list[Prior] = []
        prior_raw = data.get("require_prior")
        if prior_raw is not None:
            where = join_pointer(base, "require_prior")
            if type(prior_raw) is not list or not prior_raw:
                raise bad(where, "must be a non-empty array of tool names or {tool, match} objects")
            for number, item in enumerate(prior_raw):
                at = join_pointer(where, number)
                if type(item) is str and item:
                    context.tool(item, at)
                    priors.append(Prior(item))
                    continue
                if type(item) is not dict:
                    raise bad(at, f"must be a tool name or an object, got {json_type(item)}")
                check_keys(item, ("tool", "match"), at)
                other = _req_tool(item, at)
                context.tool(other, join_pointer(at, "tool"))
                priors.append(
                    Prior(
                        other,
                        _match(item.get("match"), join_pointer(at, "match"), tool, other, context),
                    )
                )
        if forbid == bool(priors):
            raise bad(base, "a condition needs exactly one of forbid: true and require_prior")
        return cls(name, tool, when, tuple(priors), forbid, opt_str(data, "description", base))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "tool": self.tool, "when": _when_dict(self.when)}
        if self.forbid:
            out["forbid"] = True
        else:
            out["require_prior"] = [prior.to_dict() for prior in self.require_prior]
        if self.description is not None:
            out["description"] = self.description
        return out


# ---------------------------------------------------------------------------------------------
# relations


class Relation(Record):
    """An argument of ``tool`` compared with a value in the output of an earlier call."""

    name: str
    tool: str
    argument: ArgPath
    op: str
    source_tool: str
    source_output: ArgPath
    source_match: tuple[tuple[ArgPath, ArgPath], ...] = ()
    when: tuple[Clause, ...] = ()
    if_missing: str = "fail"
    description: str | None = None

    _KEYS: ClassVar[tuple[str, ...]] = (
        "name",
        "tool",
        "argument",
        "op",
        "source",
        "when",
        "if_missing",
        "description",
    )
    _SOURCE_KEYS: ClassVar[tuple[str, ...]] = ("tool", "output", "match")

    def applies(self, arguments: Mapping[str, Any]) -> bool:
        return _all_hold(self.when, arguments)

    @classmethod
    def parse(cls, raw: object, index: int, context: _Context) -> Relation:
        base = f"/relations/{index}"
        data = require_object(raw, base, "a relation")
        check_keys(data, cls._KEYS, base)
        tool = _req_tool(data, base)
        context.tool(tool, join_pointer(base, "tool"))
        name = opt_str(data, "name", base) or f"relations/{index}"
        if data.get("argument") is None:
            raise bad(base, "missing required field 'argument'")
        argument = ArgPath.parse(data["argument"], join_pointer(base, "argument"))
        context.argument(tool, argument, join_pointer(base, "argument"))
        op = data.get("op")
        if op not in OPERATORS:
            if op is None:
                raise bad(base, "missing required field 'op'")
            shown = excerpt(op) if type(op) is str else json_type(op)
            raise bad(
                join_pointer(base, "op"),
                f"unknown operator {shown}; known operators: {', '.join(OPERATORS)}",
            )
        source_base = join_pointer(base, "source")
        if data.get("source") is None:
            raise bad(base, "missing required field 'source'")
        source = require_object(data["source"], source_base, "source")
        check_keys(source, cls._SOURCE_KEYS, source_base)
        source_tool = _req_tool(source, source_base)
        context.tool(source_tool, join_pointer(source_base, "tool"))
        if source.get("output") is None:
            raise bad(source_base, "missing required field 'output' (a JSON pointer into it)")
        output = ArgPath.parse(
            source["output"], join_pointer(source_base, "output"), pointer_only=True
        )
        if output.wildcard and op not in ("in", "not_in"):
            raise bad(
                join_pointer(source_base, "output"),
                f"operator {op!r} compares with one value; '*' (several values) needs 'in' or "
                "'not_in'",
            )
        match = _match(
            source.get("match"), join_pointer(source_base, "match"), tool, source_tool, context
        )
        mode = data.get("if_missing")
        if mode is None:
            mode = "fail"
        elif mode not in _MISSING_MODES:
            shown = excerpt(mode) if type(mode) is str else json_type(mode)
            raise bad(join_pointer(base, "if_missing"), f"must be 'fail' or 'skip', got {shown}")
        return cls(
            name,
            tool,
            argument,
            op,
            source_tool,
            output,
            match,
            _when(data.get("when"), join_pointer(base, "when"), tool, context),
            mode,
            opt_str(data, "description", base),
        )

    def to_dict(self) -> dict[str, Any]:
        source: dict[str, Any] = {"tool": self.source_tool, "output": self.source_output.text}
        if self.source_match:
            source["match"] = _match_dict(self.source_match)
        out: dict[str, Any] = {
            "name": self.name,
            "tool": self.tool,
            "argument": self.argument.text,
            "op": self.op,
            "source": source,
            "when": _when_dict(self.when),
            "if_missing": self.if_missing,
        }
        if self.description is not None:
            out["description"] = self.description
        return out


# ---------------------------------------------------------------------------------------------
# confirmation and loops


class Confirmation(Record):
    """Calls of ``tools`` need a user message matching ``pattern`` since the last such call."""

    tools: tuple[str, ...]
    pattern: str = DEFAULT_CONFIRMATION_PATTERN
    listed: bool = False  # whether the policy listed the tools (else: its side-effect tools)
    regex: re.Pattern[str] | None = field(default=None, compare=False)

    _KEYS: ClassVar[tuple[str, ...]] = ("tools", "pattern")

    @classmethod
    def parse(cls, raw: object, context: _Context) -> Confirmation:
        base = "/confirmation"
        data = require_object(raw, base, "confirmation")
        check_keys(data, cls._KEYS, base)
        tools = _names(data, "tools", base)
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


class Loops(Record):
    """Limits on repeated identical calls (within a window) and on repeated cycles of calls."""

    max_identical_calls: int | None = None
    window: int | None = None
    max_cycle_repeats: int | None = None
    max_cycle_length: int = DEFAULT_CYCLE_LENGTH
    ignore_arguments: bool = False

    _KEYS: ClassVar[tuple[str, ...]] = (
        "max_identical_calls",
        "window",
        "max_cycle_repeats",
        "max_cycle_length",
        "ignore_arguments",
    )

    @classmethod
    def parse(cls, raw: object) -> Loops:
        base = "/loops"
        data = require_object(raw, base, "loops")
        check_keys(data, cls._KEYS, base)
        identical = opt_nonneg_int(data, "max_identical_calls", base, minimum=1)
        window = opt_nonneg_int(data, "window", base, minimum=2)
        repeats = opt_nonneg_int(data, "max_cycle_repeats", base, minimum=1)
        length = opt_nonneg_int(data, "max_cycle_length", base, minimum=2)
        if identical is None and repeats is None:
            raise bad(base, "sets no limit: give max_identical_calls, max_cycle_repeats, or both")
        if window is not None:
            if identical is None:
                raise bad(join_pointer(base, "window"), "window applies to max_identical_calls")
            if window <= identical:
                raise bad(
                    join_pointer(base, "window"),
                    f"a window of {number_text(window)} calls can never hold more than "
                    f"max_identical_calls ({number_text(identical)}) calls",
                )
        if length is not None:
            if repeats is None:
                raise bad(
                    join_pointer(base, "max_cycle_length"),
                    "max_cycle_length applies to max_cycle_repeats",
                )
            if length > MAX_CYCLE_LENGTH:
                raise bad(
                    join_pointer(base, "max_cycle_length"),
                    f"must be an integer from 2 to {MAX_CYCLE_LENGTH}, got {number_text(length)}",
                )
        return cls(
            identical,
            window,
            repeats,
            DEFAULT_CYCLE_LENGTH if length is None else length,
            opt_bool(data, "ignore_arguments", base),
        )

    def to_dict(self) -> dict[str, Any]:
        out = {key: getattr(self, key) for key in self._KEYS}
        if self.max_cycle_repeats is None:
            out["max_cycle_length"] = None  # it applies to cycles only
        return out


# ---------------------------------------------------------------------------------------------
# The sections together


class Extensions(Record):
    """The language 1.1 sections of a policy (present on every policy that declares 1.1)."""

    provenance: Provenance | None = None
    conditions: tuple[Condition, ...] = ()
    relations: tuple[Relation, ...] = ()
    confirmation: Confirmation | None = None
    loops: Loops | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "provenance": None if self.provenance is None else self.provenance.to_dict(),
            "conditions": [c.to_dict() for c in self.conditions],
            "relations": [r.to_dict() for r in self.relations],
            "confirmation": None if self.confirmation is None else self.confirmation.to_dict(),
            "loops": None if self.loops is None else self.loops.to_dict(),
        }


def _list(data: Mapping[str, Any], key: str) -> list[Any]:
    value = data.get(key)
    if value is None:
        return []
    if type(value) is not list:
        raise bad(f"/{key}", f"must be an array, got {json_type(value)}")
    return value


def _unique_names(names: list[str], key: str) -> None:
    seen: dict[str, int] = {}
    for index, name in enumerate(names):
        if name in seen:
            raise bad(
                f"/{key}/{index}/name",
                f"name {excerpt(name)} is already used by /{key}/{seen[name]}",
            )
        seen[name] = index


def parse_extensions(
    data: Mapping[str, Any],
    version: str,
    tools: Mapping[str, ToolSchema],
    allow_unlisted: bool,
    allow_risky_patterns: bool,
) -> tuple[Extensions | None, tuple[str, ...]]:
    """Parse the 1.1 sections of a policy; return them (``None`` for a policy that declares
    version 1.0) and the warnings for risky patterns accepted on request."""
    if minor_version(version) < 1:
        declared = (
            f"declares {excerpt(version)}"
            if data.get("schema_version") is not None
            else f"declares no schema_version, which means {excerpt(version)}"
        )
        for key in KEYS:
            if data.get(key) is not None:
                raise bad(
                    f"/{key}",
                    f"the {key} section belongs to policy language 1.1; declare "
                    f'"schema_version": "1.1" (this policy {declared})',
                )
        return None, ()
    try:
        return _parse(data, tools, allow_unlisted, allow_risky_patterns)
    except RecursionError:
        raise bad("", "a value in the policy is nested too deeply to process") from None


def _parse(
    data: Mapping[str, Any],
    tools: Mapping[str, ToolSchema],
    allow_unlisted: bool,
    allow_risky_patterns: bool,
) -> tuple[Extensions, tuple[str, ...]]:
    context = _Context(tools, allow_unlisted)
    provenance = None
    if data.get("provenance") is not None:
        provenance = Provenance.parse(data["provenance"], context)
    conditions = tuple(
        Condition.parse(raw, index, context) for index, raw in enumerate(_list(data, "conditions"))
    )
    _unique_names([c.name for c in conditions], "conditions")
    relations = tuple(
        Relation.parse(raw, index, context) for index, raw in enumerate(_list(data, "relations"))
    )
    _unique_names([r.name for r in relations], "relations")
    confirmation = None
    if data.get("confirmation") is not None:
        confirmation = Confirmation.parse(data["confirmation"], context)
    loops = None if data.get("loops") is None else Loops.parse(data["loops"])
    warnings = risky_warnings(context.patterns, allow_risky_patterns)
    return Extensions(provenance, conditions, relations, confirmation, loops), warnings
