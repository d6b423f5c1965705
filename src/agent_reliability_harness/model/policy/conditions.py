"""The ``conditions`` and ``relations`` sections (language 1.1). A condition forbids the calls of
a tool that satisfy ``when``, or requires earlier calls before them; a relation compares an
argument of a call (or the number of its values) with a reference taken from the output of an
earlier call: the value at a pointer, the values a pattern extracts from text, or their number,
optionally scaled and shifted by constants (:class:`Reference`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from agent_reliability_harness._decode import (
    bad,
    check_keys,
    finite_number,
    json_type,
    number_text,
    opt_bool,
    opt_str,
    require_object,
)
from agent_reliability_harness.errors import excerpt, join_pointer
from agent_reliability_harness.model._extract import Extract
from agent_reliability_harness.model._paths import ArgPath
from agent_reliability_harness.model.policy._context import Context
from agent_reliability_harness.model.policy._parse import require_tool, tool_names
from agent_reliability_harness.model.policy.predicates import (
    Clause,
    all_hold,
    match_dict,
    parse_match,
    parse_output_when,
    parse_when,
    when_dict,
)

__all__ = ["OPERATORS", "Condition", "Prior", "Reference", "Relation"]

OPERATORS: Final = ("==", "!=", "<", "<=", ">", ">=", "in", "not_in")
SET_OPERATORS: Final = ("in", "not_in")
_MISSING_MODES: Final = ("fail", "skip")
_MAX_FACTORS: Final = 16


@dataclass(frozen=True, slots=True)
class Prior:
    """A call that must have succeeded earlier, optionally with matching arguments."""

    tool: str
    match: tuple[tuple[ArgPath, ArgPath], ...] = ()

    def to_dict(self) -> str | dict[str, Any]:
        if not self.match:
            return self.tool
        return {"tool": self.tool, "match": match_dict(self.match)}


@dataclass(frozen=True, slots=True)
class Condition:
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
        return all_hold(self.when, arguments)

    @classmethod
    def parse(cls, raw: object, index: int, context: Context) -> Condition:
        base = f"/conditions/{index}"
        data = require_object(raw, base, "a condition")
        check_keys(data, cls._KEYS, base)
        tool = require_tool(data, base)
        context.tool(tool, join_pointer(base, "tool"))
        name = opt_str(data, "name", base) or f"conditions/{index}"
        when = parse_when(data.get("when"), join_pointer(base, "when"), tool, context)
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
                other = require_tool(item, at)
                context.tool(other, join_pointer(at, "tool"))
                priors.append(
                    Prior(
                        other,
                        parse_match(
                            item.get("match"), join_pointer(at, "match"), tool, other, context
                        ),
                    )
                )
        if forbid == bool(priors):
            raise bad(base, "a condition needs exactly one of forbid: true and require_prior")
        return cls(name, tool, when, tuple(priors), forbid, opt_str(data, "description", base))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "tool": self.tool, "when": when_dict(self.when)}
        if self.forbid:
            out["forbid"] = True
        else:
            out["require_prior"] = [prior.to_dict() for prior in self.require_prior]
        if self.description is not None:
            out["description"] = self.description
        return out


@dataclass(frozen=True, slots=True)
class Reference:
    """What a relation compares with, read from the source call's output: the value(s) at a
    JSON ``pointer`` (the form of language 1.1 before extraction objects), or the values a
    ``pattern`` extracts from its text; with ``count``, their number instead; then each
    number multiplied by each of ``times`` and ``plus`` added. At most one of ``pointer`` and
    ``extract`` is set (``extract`` holds a pattern only: ``{"pointer": p}`` is ``p``)."""

    pointer: ArgPath | None = None
    extract: Extract | None = None
    count: bool = False
    times: tuple[int | float, ...] = ()
    plus: int | float | None = None

    @property
    def arithmetic(self) -> bool:
        return bool(self.times) or self.plus is not None

    @property
    def plain(self) -> bool:
        """The reference of language 1.1 before this one: a pointer, read as it is."""
        return self.pointer is not None and not self.count and not self.arithmetic

    @property
    def several(self) -> bool:
        """Whether it can be several values at once (which only in and not_in compare with)."""
        if len(self.times) > 1:
            return True
        return not self.count and self.pointer is not None and self.pointer.wildcard

    def output_dict(self) -> str | dict[str, Any]:
        read: str | dict[str, Any]
        if self.extract is not None:
            read = self.extract.to_dict()
        else:
            assert self.pointer is not None
            read = self.pointer.text
        return {"count": read} if self.count else read

    def describe(self, tool: str) -> str:
        """In words: ``lookup.output/total``, ``count(lookup.output/passengers/*)``,
        ``(50 or 100) x count(...) + 10``."""
        if self.extract is not None:
            text = f"{tool}.output ({self.extract.describe()})"
        else:
            assert self.pointer is not None
            text = f"{tool}.output{self.pointer.text}"
        if self.count:
            text = f"count({text})"
        if self.times:
            factors = " or ".join(number_text(t) for t in self.times)
            text = f"({factors}) x {text}" if len(self.times) > 1 else f"{factors} x {text}"
        if self.plus is not None:
            text = f"{text} + {number_text(self.plus)}"
        return text

    @classmethod
    def parse(cls, source: Mapping[str, Any], base: str, context: Context) -> Reference:
        """From a relation's ``source`` object at ``base``: its ``output``, ``times``, ``plus``."""
        where = join_pointer(base, "output")
        raw = source.get("output")
        if raw is None:
            raise bad(base, "missing required field 'output' (a JSON pointer into it)")
        count = False
        if type(raw) is dict and "count" in raw:
            check_keys(raw, ("count",), where)
            count = True
            where = join_pointer(where, "count")
            raw = raw["count"]
            if raw is None:
                raise bad(where, "must be a JSON pointer or a {pointer} or {pattern} object")
        pointer: ArgPath | None = None
        extract: Extract | None = None
        if type(raw) is dict:
            check_keys(raw, Extract.KEYS, where)
            extract = Extract.parse(raw, where, context)
            if extract.pointer is not None:
                pointer, extract = extract.pointer, None
        elif type(raw) is str:
            pointer = ArgPath.parse(raw, where, pointer_only=True)
        else:
            raise bad(
                where,
                "must be a JSON pointer, a {pointer} or {pattern} object, or {count: ...}, got "
                f"{json_type(raw)}",
            )
        times: tuple[int | float, ...] = ()
        times_raw = source.get("times")
        if times_raw is not None:
            at = join_pointer(base, "times")
            items = times_raw if type(times_raw) is list else [times_raw]
            if not items or len(items) > _MAX_FACTORS:
                raise bad(at, f"must be a number or an array of 1 to {_MAX_FACTORS} numbers")
            times = tuple(
                finite_number(item, join_pointer(at, i) if type(times_raw) is list else at)
                for i, item in enumerate(items)
            )
            if len(set(times)) != len(times):
                raise bad(at, "lists a factor more than once")
        plus_raw = source.get("plus")
        plus = None if plus_raw is None else finite_number(plus_raw, join_pointer(base, "plus"))
        return cls(pointer, extract, count, times, plus)


def _source_tools(source: Mapping[str, Any], base: str, context: Context) -> tuple[str, ...]:
    """``source.tool``: a tool name, or a non-empty array of them (the latest call of any)."""
    raw = source.get("tool")
    if type(raw) is not list:
        tool = require_tool(source, base)
        context.tool(tool, join_pointer(base, "tool"))
        return (tool,)
    where = join_pointer(base, "tool")
    tools = tool_names(source, "tool", base)
    if not tools:
        raise bad(where, "must be a tool name or a non-empty array of tool names")
    for index, tool in enumerate(tools):
        context.tool(tool, join_pointer(where, index))
    return tools


@dataclass(frozen=True, slots=True)
class Relation:
    """An argument of ``tool`` (or the number of its values) compared with a reference taken
    from the output of an earlier call (see :class:`Reference`)."""

    name: str
    tool: str
    argument: ArgPath
    op: str
    source_tools: tuple[str, ...]
    reference: Reference
    source_match: tuple[tuple[ArgPath, ArgPath], ...] = ()
    when: tuple[Clause, ...] = ()
    if_missing: str = "fail"
    description: str | None = None
    count_argument: bool = False
    source_when: tuple[Clause, ...] = ()

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
    _SOURCE_KEYS: ClassVar[tuple[str, ...]] = ("tool", "output", "match", "when", "times", "plus")

    def applies(self, arguments: Mapping[str, Any]) -> bool:
        return all_hold(self.when, arguments)

    @classmethod
    def parse(cls, raw: object, index: int, context: Context) -> Relation:
        base = f"/relations/{index}"
        data = require_object(raw, base, "a relation")
        check_keys(data, cls._KEYS, base)
        tool = require_tool(data, base)
        context.tool(tool, join_pointer(base, "tool"))
        name = opt_str(data, "name", base) or f"relations/{index}"
        if data.get("argument") is None:
            raise bad(base, "missing required field 'argument'")
        where = join_pointer(base, "argument")
        raw_argument = data["argument"]
        count_argument = type(raw_argument) is dict
        if count_argument:
            check_keys(raw_argument, ("count",), where)
            if raw_argument.get("count") is None:
                raise bad(where, "missing required field 'count' (the path of the values to count)")
            where = join_pointer(where, "count")
            raw_argument = raw_argument["count"]
        argument = ArgPath.parse(raw_argument, where)
        context.argument(tool, argument, where)
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
        source_tools = _source_tools(source, source_base, context)
        reference = Reference.parse(source, source_base, context)
        if reference.several and op not in SET_OPERATORS:
            if len(reference.times) > 1:
                where, what = join_pointer(source_base, "times"), "several factors"
            else:
                where, what = join_pointer(source_base, "output"), "'*'"
            raise bad(
                where,
                f"operator {op!r} compares with one value; {what} (several values) needs 'in' "
                "or 'not_in'",
            )
        match: tuple[tuple[ArgPath, ArgPath], ...] = ()
        for source_tool in source_tools:  # the match paths must suit each source tool
            match = parse_match(
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
            source_tools,
            reference,
            match,
            parse_when(data.get("when"), join_pointer(base, "when"), tool, context),
            mode,
            opt_str(data, "description", base),
            count_argument,
            parse_output_when(
                source.get("when"), join_pointer(source_base, "when"), context.patterns
            ),
        )

    def describe_argument(self) -> str:
        return f"count({self.argument.text})" if self.count_argument else self.argument.text

    def to_dict(self) -> dict[str, Any]:
        # keys of later additions are written only when set, so that the policy hash of a
        # relation written before them does not change
        ref = self.reference
        tools = self.source_tools
        source: dict[str, Any] = {
            "tool": tools[0] if len(tools) == 1 else list(tools),
            "output": ref.output_dict(),
        }
        if self.source_match:
            source["match"] = match_dict(self.source_match)
        if self.source_when:
            source["when"] = when_dict(self.source_when)
        if ref.times:
            source["times"] = list(ref.times)
        if ref.plus is not None:
            source["plus"] = ref.plus
        argument: str | dict[str, str] = self.argument.text
        if self.count_argument:
            argument = {"count": self.argument.text}
        out: dict[str, Any] = {
            "name": self.name,
            "tool": self.tool,
            "argument": argument,
            "op": self.op,
            "source": source,
            "when": when_dict(self.when),
            "if_missing": self.if_missing,
        }
        if self.description is not None:
            out["description"] = self.description
        return out
