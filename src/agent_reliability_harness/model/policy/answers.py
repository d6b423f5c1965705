"""The ``answers`` section (language 1.2): which answer checks apply, where the answer is read,
how it is normalised, the numeric tolerance and the JSON Schema of a structured answer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Final

from agent_reliability_harness._decode import (
    bad,
    check_keys,
    json_type,
    opt_bool,
    opt_nonneg_number,
    require_object,
)
from agent_reliability_harness.errors import excerpt, join_pointer
from agent_reliability_harness.model._jsonschema import JsonSchema
from agent_reliability_harness.model.answers import NORMALIZATION_KEYS, Normalization

__all__ = ["CHECKS", "AnswerTool", "Answers"]

# The answer checks, in the order of their rules (ARH-ANS-002 to ARH-ANS-010).
CHECKS: Final = (
    "exact",
    "normalized",
    "pattern",
    "numeric",
    "set",
    "list",
    "schema",
    "must_mention",
    "must_not_mention",
)


@dataclass(frozen=True, slots=True)
class AnswerTool:
    """The answer is the argument ``argument`` of the last call of ``tool`` (an agent that
    submits its answer through a tool, such as ToolBench's ``Finish``)."""

    tool: str
    argument: str


@dataclass(frozen=True, slots=True)
class Answers:
    """The answer checks a policy applies to traces that carry an expected outcome."""

    checks: tuple[str, ...]
    normalize: Normalization = field(default_factory=Normalization)
    absolute: float = 0.0
    relative: float = 0.0
    schema: JsonSchema | None = None
    from_tool: AnswerTool | None = None

    _KEYS: ClassVar[tuple[str, ...]] = ("checks", "from_tool", "normalize", "tolerance", "schema")

    @classmethod
    def parse(cls, raw: object, tools: Any, allow_unlisted: bool) -> Answers:
        base = "/answers"
        data = require_object(raw, base, "answers")
        check_keys(data, cls._KEYS, base)
        checks = _checks(data.get("checks"), join_pointer(base, "checks"))
        how = Normalization()
        if data.get("normalize") is not None:
            where = join_pointer(base, "normalize")
            section = require_object(data["normalize"], where, "normalize")
            check_keys(section, NORMALIZATION_KEYS, where)
            how = Normalization(
                *(
                    True if section.get(key) is None else opt_bool(section, key, where)
                    for key in NORMALIZATION_KEYS
                )
            )
        absolute = relative = 0.0
        if data.get("tolerance") is not None:
            where = join_pointer(base, "tolerance")
            section = require_object(data["tolerance"], where, "tolerance")
            check_keys(section, ("absolute", "relative"), where)
            absolute = float(opt_nonneg_number(section, "absolute", where) or 0)
            relative = float(opt_nonneg_number(section, "relative", where) or 0)
            if "numeric" not in checks:
                raise bad(where, "tolerance applies to the numeric check; add it to checks")
        schema = None
        if data.get("schema") is not None:
            schema = JsonSchema.parse(data["schema"], join_pointer(base, "schema"))
        if ("schema" in checks) != (schema is not None):
            raise bad(
                join_pointer(base, "schema" if schema is not None else "checks"),
                "the schema check needs a schema, and a schema needs the schema check in checks",
            )
        from_tool = None
        if data.get("from_tool") is not None:
            where = join_pointer(base, "from_tool")
            section = require_object(data["from_tool"], where, "from_tool")
            check_keys(section, ("tool", "argument"), where)
            names = []
            for key in ("tool", "argument"):
                value = section.get(key)
                if type(value) is not str or not value:
                    raise bad(
                        join_pointer(where, key),
                        f"must be a non-empty string, got {json_type(value)}",
                    )
                names.append(value)
            if not allow_unlisted and names[0] not in tools:
                raise bad(
                    join_pointer(where, "tool"),
                    f"tool {excerpt(names[0])} is not in allowed_tools, so every call to it "
                    "would be rejected; add it to allowed_tools or set allow_unlisted_tools",
                )
            from_tool = AnswerTool(names[0], names[1])
        return cls(checks, how, absolute, relative, schema, from_tool)

    def to_dict(self) -> dict[str, Any]:
        return {
            "checks": list(self.checks),
            "from_tool": None
            if self.from_tool is None
            else {"tool": self.from_tool.tool, "argument": self.from_tool.argument},
            "normalize": {key: getattr(self.normalize, key) for key in NORMALIZATION_KEYS},
            "tolerance": {"absolute": self.absolute, "relative": self.relative},
            "schema": None if self.schema is None else self.schema.raw,
        }


def _checks(value: object, pointer: str) -> tuple[str, ...]:
    if type(value) is not list or not value:
        raise bad(
            pointer,
            f"must be a non-empty array of answer checks ({', '.join(CHECKS)}), "
            f"got {json_type(value)}",
        )
    seen: set[str] = set()
    for index, name in enumerate(value):
        if name not in CHECKS:
            shown = excerpt(name) if type(name) is str else json_type(name)
            raise bad(
                join_pointer(pointer, index),
                f"unknown answer check {shown} (expected one of {', '.join(CHECKS)})",
            )
        if name in seen:
            raise bad(join_pointer(pointer, index), f"lists {excerpt(name)} more than once")
        seen.add(name)
    return tuple(name for name in CHECKS if name in seen)
