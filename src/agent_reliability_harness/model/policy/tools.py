"""The ``allowed_tools`` section: what the policy says about each tool, its argument contracts
(a type and optional enum, pattern and range), side effects and call counts."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final

from agent_reliability_harness._decode import (
    bad,
    check_keys,
    finite_number,
    json_type,
    number_text,
    opt_bool,
    opt_nonneg_int,
    opt_str,
)
from agent_reliability_harness.errors import excerpt, join_pointer
from agent_reliability_harness.model.policy._parse import compile_regex

__all__ = ["TYPE_NAMES", "ArgSpec", "ToolSchema", "value_has_type"]

TYPE_NAMES: Final = ("str", "int", "float", "bool", "list", "dict", "any")
_TYPE_HINTS: Final = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "array": "list",
    "object": "dict",
    "none": "any",
    "null": "any",
}
_NUMERIC_TYPES: Final = ("int", "float", "any")


def value_has_type(type_name: str, value: object) -> bool:
    """Whether a JSON value satisfies an ArgSpec type (``true`` is never an ``int``)."""
    kind = type(value)
    if type_name == "str":
        return kind is str
    if type_name == "float":
        return kind is float or kind is int
    if type_name == "int":
        return kind is int
    if type_name == "bool":
        return kind is bool
    if type_name == "list":
        return kind is list
    if type_name == "dict":
        return kind is dict
    return True


@dataclass(frozen=True, slots=True)
class ArgSpec:
    """The contract for one tool argument: a type and optional enum, pattern and range."""

    type: str = "any"
    enum: tuple[Any, ...] | None = None
    pattern: str | None = None
    min: int | float | None = None
    max: int | float | None = None
    description: str | None = None
    regex: re.Pattern[str] | None = field(default=None, compare=False)

    _KEYS: ClassVar[tuple[str, ...]] = ("type", "enum", "pattern", "min", "max", "description")

    @classmethod
    def from_value(cls, raw: object, pointer: str) -> ArgSpec:
        """Parse the short form (a type name) or the object form of an argument spec."""
        if type(raw) is str:
            return cls(type=cls._type_name(raw, pointer))
        if type(raw) is not dict:
            raise bad(
                pointer, f"an argument spec must be a type name or an object, got {json_type(raw)}"
            )
        check_keys(raw, cls._KEYS, pointer)
        type_name = "any"
        if raw.get("type") is not None:
            if type(raw["type"]) is not str:
                raise bad(
                    join_pointer(pointer, "type"),
                    f"must be a type name string, got {json_type(raw['type'])}",
                )
            type_name = cls._type_name(raw["type"], join_pointer(pointer, "type"))
        enum: tuple[Any, ...] | None = None
        if raw.get("enum") is not None:
            values = raw["enum"]
            if type(values) is not list or not values:
                got = "an empty array" if type(values) is list else json_type(values)
                raise bad(
                    join_pointer(pointer, "enum"),
                    f"must be a non-empty array of allowed values, got {got}",
                )
            for index, value in enumerate(values):
                if not value_has_type(type_name, value):
                    raise bad(
                        join_pointer(pointer, "enum", index),
                        f"{json_type(value)} value does not have the argument's type {type_name!r}",
                    )
            enum = tuple(values)
        pattern = opt_str(raw, "pattern", pointer)
        regex = None
        if pattern is not None:
            if type_name not in ("str", "any"):
                raise bad(
                    join_pointer(pointer, "pattern"),
                    f"a pattern applies to strings, but the type is {type_name!r}",
                )
            regex = compile_regex(pattern, 0, join_pointer(pointer, "pattern"))
        bounds: dict[str, int | float | None] = {}
        for key in ("min", "max"):
            if raw.get(key) is None:
                bounds[key] = None
                continue
            if type_name not in _NUMERIC_TYPES:
                raise bad(
                    join_pointer(pointer, key),
                    f"a numeric bound applies to numbers, but the type is {type_name!r}",
                )
            bounds[key] = finite_number(raw[key], join_pointer(pointer, key))
        low, high = bounds["min"], bounds["max"]
        if low is not None and high is not None and low > high:
            raise bad(pointer, f"min ({excerpt(low)}) exceeds max ({excerpt(high)})")
        return cls(type_name, enum, pattern, low, high, opt_str(raw, "description", pointer), regex)

    @staticmethod
    def _type_name(raw: str, pointer: str) -> str:
        if raw in TYPE_NAMES:
            return raw
        hint = _TYPE_HINTS.get(raw.lower())
        suggestion = f" (did you mean {hint!r}?)" if hint else ""
        raise bad(
            pointer,
            f"unknown argument type {excerpt(raw)}{suggestion}; known types: "
            f"{', '.join(TYPE_NAMES)}",
        )

    def to_dict(self) -> dict[str, Any] | str:
        """The short form when only a type is set, otherwise the object form."""
        out: dict[str, Any] = {"type": self.type}
        for key in ("enum", "pattern", "min", "max", "description"):
            value = getattr(self, key)
            if value is not None:
                out[key] = list(value) if key == "enum" else value
        return self.type if len(out) == 1 else out


@dataclass(frozen=True, slots=True)
class ToolSchema:
    """What the policy says about one tool: its arguments, side effects and call counts."""

    name: str
    required_arguments: Mapping[str, ArgSpec] = field(default_factory=dict)
    optional_arguments: Mapping[str, ArgSpec] = field(default_factory=dict)
    side_effect: bool = False
    min_calls: int | None = None
    max_calls: int | None = None
    description: str | None = None

    _KEYS: ClassVar[tuple[str, ...]] = (
        "required_arguments",
        "optional_arguments",
        "side_effect",
        "min_calls",
        "max_calls",
        "description",
    )

    @classmethod
    def from_value(cls, name: str, raw: object, pointer: str) -> ToolSchema:
        if type(raw) is not dict:
            raise bad(pointer, f"a tool schema must be an object, got {json_type(raw)}")
        check_keys(raw, cls._KEYS, pointer)
        max_calls = opt_nonneg_int(raw, "max_calls", pointer)
        min_calls = opt_nonneg_int(raw, "min_calls", pointer)
        if min_calls is not None and max_calls is not None and min_calls > max_calls:
            raise bad(
                pointer,
                f"min_calls ({number_text(min_calls)}) exceeds max_calls "
                f"({number_text(max_calls)})",
            )
        maps: dict[str, dict[str, ArgSpec]] = {}
        for key in ("required_arguments", "optional_arguments"):
            value = raw.get(key)
            arg_pointer = join_pointer(pointer, key)
            if value is None:
                value = {}
            elif type(value) is not dict:
                raise bad(
                    arg_pointer,
                    f"must be an object of argument name to spec, got {json_type(value)}",
                )
            specs: dict[str, ArgSpec] = {}
            for arg, spec in value.items():
                specs[arg] = ArgSpec.from_value(spec, join_pointer(arg_pointer, arg))
            maps[key] = specs
        for arg in maps["optional_arguments"]:
            if arg in maps["required_arguments"]:
                raise bad(
                    join_pointer(pointer, "optional_arguments", arg),
                    f"argument {excerpt(arg)} is declared both required and optional",
                )
        return cls(
            name,
            maps["required_arguments"],
            maps["optional_arguments"],
            opt_bool(raw, "side_effect", pointer),
            min_calls,
            max_calls,
            opt_str(raw, "description", pointer),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.required_arguments:
            out["required_arguments"] = {k: v.to_dict() for k, v in self.required_arguments.items()}
        if self.optional_arguments:
            out["optional_arguments"] = {k: v.to_dict() for k, v in self.optional_arguments.items()}
        if self.side_effect:
            out["side_effect"] = True
        for key in ("min_calls", "max_calls", "description"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out
