"""A small JSON Schema validator for the subset of keywords that answer checks support.

Supported (JSON Schema 2020-12 semantics): boolean schemas, ``type`` (a name or an array of
names), ``properties``, ``required``, ``additionalProperties`` (a boolean or a schema),
``items`` (a single schema), ``enum``, ``const``, ``minimum``, ``maximum``, ``minLength``,
``maxLength`` and ``pattern`` (searched, not anchored, with Python's ``re``), and the
annotations ``$schema``, ``$id``, ``$comment``, ``title``, ``description``, ``default`` and
``examples``, which are ignored. Every other keyword (``$ref``, ``allOf``, ``anyOf``,
``oneOf``, ``not``, ``if``, ``prefixItems``, ``patternProperties``, ``format``, ...) is refused
when the schema is loaded, at its JSON pointer, so that a schema never silently checks less
than it says.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from agent_reliability_harness._decode import bad, json_type
from agent_reliability_harness.errors import excerpt, join_pointer
from agent_reliability_harness.model.policy._parse import compile_regex

__all__ = ["SUPPORTED", "JsonSchema", "json_equal"]

TYPES: Final = ("null", "boolean", "object", "array", "number", "string", "integer")
_ANNOTATIONS: Final = frozenset(
    {"$schema", "$id", "$comment", "title", "description", "default", "examples"}
)
_CHECKED: Final = (
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
)
SUPPORTED: Final = frozenset(_CHECKED) | _ANNOTATIONS
_MAX_ERRORS: Final = 5  # the violations a result names (the first, in document order)


def _is_number(value: object) -> bool:
    return type(value) is int or type(value) is float


def _type_of(value: object) -> str:
    """The JSON Schema type names that ``value`` has (``integer`` for a number with no
    fractional part, as 2020-12 says: ``1.0`` is an integer)."""
    kind = type(value)
    if value is None:
        return "null"
    if kind is bool:
        return "boolean"
    if kind is int:
        return "integer"
    if isinstance(value, float):
        return "integer" if math.isfinite(value) and value.is_integer() else "number"
    if kind is str:
        return "string"
    if kind is list:
        return "array"
    return "object" if kind is dict else "unknown"


def json_equal(a: object, b: object) -> bool:
    """Equality of JSON values as JSON Schema defines it for ``enum`` and ``const``: numbers by
    value (``1 == 1.0``), booleans never equal to numbers, objects whatever their key order."""
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    if _is_number(a) and _is_number(b):
        return a == b
    if type(a) is list and type(b) is list:
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is dict and type(b) is dict:
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@dataclass(frozen=True, slots=True)
class JsonSchema:
    """A schema checked at load: every keyword supported, every value of the right type."""

    raw: Any
    patterns: Mapping[str, re.Pattern[str]]  # by the pointer of each ``pattern`` keyword

    @classmethod
    def parse(cls, raw: object, pointer: str) -> JsonSchema:
        patterns: dict[str, re.Pattern[str]] = {}
        _check(raw, pointer, pointer, patterns)
        return cls(raw, patterns)

    def errors(self, instance: object) -> list[str]:
        """The first violations of ``instance`` (each ``<instance pointer>: <what is wrong>``),
        none when it conforms."""
        out: list[str] = []
        self._walk(self.raw, "", instance, "", out)
        return out

    def _walk(self, schema: Any, where: str, value: Any, at: str, out: list[str]) -> None:
        if len(out) >= _MAX_ERRORS:
            return
        if schema is True:
            return
        if schema is False:
            out.append(f"{at or '/'}: no value is allowed here")
            return
        kind = _type_of(value)
        if "type" in schema:
            wanted = schema["type"]
            names = [wanted] if type(wanted) is str else wanted
            if not any(kind == n or (n == "number" and kind == "integer") for n in names):
                out.append(f"{at or '/'}: must be of type {' or '.join(names)}, got {kind}")
        if "enum" in schema and not any(json_equal(value, e) for e in schema["enum"]):
            out.append(f"{at or '/'}: must be one of the enum values, got {excerpt(value)}")
        if "const" in schema and not json_equal(value, schema["const"]):
            out.append(f"{at or '/'}: must equal {excerpt(schema['const'])}")
        if kind in ("integer", "number"):
            low, high = schema.get("minimum"), schema.get("maximum")
            if low is not None and value < low:
                out.append(f"{at or '/'}: {value!r} is below the minimum {low!r}")
            if high is not None and value > high:
                out.append(f"{at or '/'}: {value!r} is above the maximum {high!r}")
        elif kind == "string":
            shortest, longest = schema.get("minLength"), schema.get("maxLength")
            if shortest is not None and len(value) < shortest:
                out.append(f"{at or '/'}: shorter than minLength {shortest}")
            if longest is not None and len(value) > longest:
                out.append(f"{at or '/'}: longer than maxLength {longest}")
            if "pattern" in schema:
                regex = self.patterns[join_pointer(where, "pattern")]
                if regex.search(value) is None:
                    out.append(f"{at or '/'}: does not match pattern {excerpt(regex.pattern)}")
        elif kind == "object":
            out.extend(
                f"{at or '/'}: missing required property {excerpt(name)}"
                for name in schema.get("required", ())
                if name not in value
            )
            properties = schema.get("properties", {})
            extra = schema.get("additionalProperties", True)
            for name, item in value.items():
                below = join_pointer(at, name)
                if name in properties:
                    self._walk(
                        properties[name],
                        join_pointer(join_pointer(where, "properties"), name),
                        item,
                        below,
                        out,
                    )
                elif extra is False:
                    out.append(f"{below}: property {excerpt(name)} is not allowed")
                elif extra is not True:
                    self._walk(extra, join_pointer(where, "additionalProperties"), item, below, out)
        elif kind == "array" and "items" in schema:
            for index, item in enumerate(value):
                self._walk(
                    schema["items"],
                    join_pointer(where, "items"),
                    item,
                    join_pointer(at, index),
                    out,
                )


def _nonneg_int(value: object, pointer: str) -> None:
    if type(value) is bool or not (
        type(value) is int or (type(value) is float and value.is_integer())
    ):
        raise bad(pointer, f"must be a non-negative integer, got {json_type(value)}")
    if value < 0:
        raise bad(pointer, f"must be a non-negative integer, got {value!r}")


def _check(schema: object, pointer: str, root: str, patterns: dict[str, re.Pattern[str]]) -> None:
    """Refuse what the validator does not support, at its JSON pointer."""
    if type(schema) is bool:
        return
    if type(schema) is not dict:
        raise bad(pointer, f"a schema must be an object or a boolean, got {json_type(schema)}")
    for key in schema:
        if key not in SUPPORTED:
            raise bad(
                join_pointer(pointer, key),
                f"the JSON Schema keyword {excerpt(key)} is not supported by the answer checks "
                f"(supported: {', '.join(_CHECKED)}, and the annotations "
                f"{', '.join(sorted(_ANNOTATIONS))})",
            )
    if "type" in schema:
        wanted = schema["type"]
        names = wanted if type(wanted) is list else [wanted]
        if not names:
            raise bad(join_pointer(pointer, "type"), "must name at least one type")
        for index, name in enumerate(names):
            if name not in TYPES:
                where = join_pointer(pointer, "type")
                raise bad(
                    join_pointer(where, index) if type(wanted) is list else where,
                    f"unknown type {excerpt(name)} (expected one of {', '.join(TYPES)})",
                )
    properties = schema.get("properties")
    if properties is not None:
        if type(properties) is not dict:
            raise bad(
                join_pointer(pointer, "properties"),
                f"must be an object, got {json_type(properties)}",
            )
        for name, sub in properties.items():
            _check(sub, join_pointer(join_pointer(pointer, "properties"), name), root, patterns)
    if "required" in schema:
        required = schema["required"]
        where = join_pointer(pointer, "required")
        if type(required) is not list or any(type(n) is not str for n in required):
            raise bad(where, "must be an array of property names")
        if len(set(required)) != len(required):
            raise bad(where, "lists a property more than once")
    if "additionalProperties" in schema:
        _check(
            schema["additionalProperties"],
            join_pointer(pointer, "additionalProperties"),
            root,
            patterns,
        )
    if "items" in schema:
        items = schema["items"]
        if type(items) is list:
            raise bad(
                join_pointer(pointer, "items"),
                "the array form of items (prefixItems in 2020-12) is not supported",
            )
        _check(items, join_pointer(pointer, "items"), root, patterns)
    if "enum" in schema and type(schema["enum"]) is not list:
        raise bad(join_pointer(pointer, "enum"), "must be an array")
    for key in ("minimum", "maximum"):
        if key in schema:
            value = schema[key]
            if not _is_number(value):
                raise bad(join_pointer(pointer, key), f"must be a number, got {json_type(value)}")
    for key in ("minLength", "maxLength"):
        if key in schema:
            _nonneg_int(schema[key], join_pointer(pointer, key))
    if "pattern" in schema:
        where = join_pointer(pointer, "pattern")
        pattern = schema["pattern"]
        if type(pattern) is not str:
            raise bad(where, f"must be a regular expression string, got {json_type(pattern)}")
        patterns[where[len(root) :]] = compile_regex(pattern, 0, where)
