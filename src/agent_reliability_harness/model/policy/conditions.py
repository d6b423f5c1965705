"""The ``conditions`` and ``relations`` sections (language 1.1). A condition forbids the calls of
a tool that satisfy ``when``, or requires earlier calls before them; a relation compares an
argument of a call with a value in the output of an earlier call."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from agent_reliability_harness._decode import (
    bad,
    check_keys,
    json_type,
    opt_bool,
    opt_str,
    require_object,
)
from agent_reliability_harness.errors import excerpt, join_pointer
from agent_reliability_harness.model._paths import ArgPath
from agent_reliability_harness.model.policy._context import Context
from agent_reliability_harness.model.policy._parse import require_tool
from agent_reliability_harness.model.policy.predicates import (
    Clause,
    all_hold,
    match_dict,
    parse_match,
    parse_when,
    when_dict,
)

__all__ = ["OPERATORS", "Condition", "Prior", "Relation"]

OPERATORS: Final = ("==", "!=", "<", "<=", ">", ">=", "in", "not_in")
_MISSING_MODES: Final = ("fail", "skip")


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
class Relation:
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
        source_tool = require_tool(source, source_base)
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
            source_tool,
            output,
            match,
            parse_when(data.get("when"), join_pointer(base, "when"), tool, context),
            mode,
            opt_str(data, "description", base),
        )

    def to_dict(self) -> dict[str, Any]:
        source: dict[str, Any] = {"tool": self.source_tool, "output": self.source_output.text}
        if self.source_match:
            source["match"] = match_dict(self.source_match)
        out: dict[str, Any] = {
            "name": self.name,
            "tool": self.tool,
            "argument": self.argument.text,
            "op": self.op,
            "source": source,
            "when": when_dict(self.when),
            "if_missing": self.if_missing,
        }
        if self.description is not None:
            out["description"] = self.description
        return out
