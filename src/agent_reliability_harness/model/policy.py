"""The policy (schema version 1): what a run of an agent is allowed and required to do.

A policy is a contract, so parsing is strict: every key must be known (a typo would silently
switch a rule off), every value must have the documented type, and every regular expression is
compiled here, once, so a broken pattern is reported against the policy file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from agent_reliability_harness._decode import (
    bad,
    check_json_values,
    check_keys,
    check_tree,
    finite_number,
    json_type,
    number_text,
    opt_bool,
    opt_nonneg_int,
    opt_nonneg_number,
    opt_str,
    parse_schema_version,
    req_str,
    section,
)
from agent_reliability_harness._record import Record, field
from agent_reliability_harness.errors import excerpt, join_pointer

TYPE_CHECKING = False  # `typing` costs milliseconds at start-up; only type checkers need it
if TYPE_CHECKING:
    from typing import Any, ClassVar, Final

    from agent_reliability_harness.model.policy11 import Extensions

__all__ = [
    "TYPE_NAMES",
    "ArgSpec",
    "Budgets",
    "Completion",
    "ErrorHandling",
    "Grounding",
    "Policy",
    "Sequence",
    "ToolSchema",
    "UnsafePattern",
    "value_has_type",
]

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


def _tool_names(data: Mapping[str, Any], key: str, base: str) -> tuple[str, ...]:
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


def _compile(pattern: str, flags: int, pointer: str) -> re.Pattern[str]:
    try:
        regex = re.compile(pattern, flags)
    except re.error as exc:
        raise bad(pointer, f"invalid regular expression {excerpt(pattern)}: {exc}") from None
    except (RecursionError, OverflowError, ValueError) as exc:
        raise bad(
            pointer, f"regular expression {excerpt(pattern)} cannot be compiled: {exc}"
        ) from None
    if "+" in pattern:  # a possessive repetition is written with a +
        from agent_reliability_harness.model._regex import check_engine_safe

        check_engine_safe(pattern, flags, pointer)
    return regex


class ArgSpec(Record):
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
            regex = _compile(pattern, 0, join_pointer(pointer, "pattern"))
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


class ToolSchema(Record):
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


class Budgets(Record):
    """Upper limits on latency, cost and tokens; ``None`` means not set."""

    max_total_latency_ms: int | float | None = None
    max_step_latency_ms: int | float | None = None
    max_total_cost_usd: int | float | None = None
    max_total_tokens: int | None = None

    _KEYS: ClassVar[tuple[str, ...]] = (
        "max_total_latency_ms",
        "max_step_latency_ms",
        "max_total_cost_usd",
        "max_total_tokens",
    )

    @classmethod
    def from_section(cls, raw: Mapping[str, Any]) -> Budgets:
        check_keys(raw, cls._KEYS, "/budgets")
        return cls(
            opt_nonneg_number(raw, "max_total_latency_ms", "/budgets"),
            opt_nonneg_number(raw, "max_step_latency_ms", "/budgets"),
            opt_nonneg_number(raw, "max_total_cost_usd", "/budgets"),
            opt_nonneg_int(raw, "max_total_tokens", "/budgets"),
        )

    @property
    def any_set(self) -> bool:
        return any(getattr(self, key) is not None for key in self._KEYS)


class Grounding(Record):
    """Citation requirements for model responses that are marked ``requires_grounding``."""

    require_citations: bool = False
    min_citation_coverage: float = 0.0
    require_valid_citation_urls: bool = False

    _KEYS: ClassVar[tuple[str, ...]] = (
        "require_citations",
        "min_citation_coverage",
        "require_valid_citation_urls",
    )

    @classmethod
    def from_section(cls, raw: Mapping[str, Any]) -> Grounding:
        check_keys(raw, cls._KEYS, "/grounding")
        coverage = raw.get("min_citation_coverage")
        if coverage is None:
            coverage = 0.0
        elif type(coverage) not in (int, float) or not 0 <= coverage <= 1:
            kind = type(coverage)
            shown = number_text(coverage) if kind is int or kind is float else json_type(coverage)
            raise bad(
                "/grounding/min_citation_coverage", f"must be a number from 0 to 1, got {shown}"
            )
        return cls(
            opt_bool(raw, "require_citations", "/grounding"),
            float(coverage),
            opt_bool(raw, "require_valid_citation_urls", "/grounding"),
        )


class Sequence(Record):
    """Trajectory shape: tools that must and must not be called, and a partial call order."""

    required_tools: tuple[str, ...] = ()
    forbidden_tools: tuple[str, ...] = ()
    call_order: tuple[str, ...] = ()

    _KEYS: ClassVar[tuple[str, ...]] = ("required_tools", "forbidden_tools", "call_order")

    @classmethod
    def from_section(cls, raw: Mapping[str, Any]) -> Sequence:
        check_keys(raw, cls._KEYS, "/sequence")
        required = _tool_names(raw, "required_tools", "/sequence")
        forbidden = _tool_names(raw, "forbidden_tools", "/sequence")
        both = sorted(set(required) & set(forbidden))
        if both:
            raise bad(
                "/sequence", f"lists the same tool(s) as required and forbidden: {', '.join(both)}"
            )
        return cls(required, forbidden, _tool_names(raw, "call_order", "/sequence"))


class ErrorHandling(Record):
    """How failed tool calls must be handled."""

    require_retry_on_error: bool = False
    max_attempts: int | None = None

    _KEYS: ClassVar[tuple[str, ...]] = ("require_retry_on_error", "max_attempts")

    @classmethod
    def from_section(cls, raw: Mapping[str, Any]) -> ErrorHandling:
        check_keys(raw, cls._KEYS, "/error_handling")
        return cls(
            opt_bool(raw, "require_retry_on_error", "/error_handling"),
            opt_nonneg_int(raw, "max_attempts", "/error_handling", minimum=1),
        )


class Completion(Record):
    """How a run must end, and how long it may be."""

    require_final_response: bool = False
    max_steps: int | None = None

    _KEYS: ClassVar[tuple[str, ...]] = ("require_final_response", "max_steps")

    @classmethod
    def from_section(cls, raw: Mapping[str, Any]) -> Completion:
        check_keys(raw, cls._KEYS, "/completion")
        return cls(
            opt_bool(raw, "require_final_response", "/completion"),
            opt_nonneg_int(raw, "max_steps", "/completion", minimum=1),
        )


class UnsafePattern(Record):
    """A disallowed-content regular expression, compiled case-insensitively."""

    pattern: str
    regex: re.Pattern[str] = field(compare=False)


def _risky_patterns(
    tools: Mapping[str, ToolSchema], patterns: list[UnsafePattern], allow: bool
) -> tuple[str, ...]:
    located: list[tuple[str, str, int]] = [
        (f"/unsafe_patterns/{i}", p.pattern, re.IGNORECASE) for i, p in enumerate(patterns)
    ]
    for name, tool in tools.items():
        for key in ("required_arguments", "optional_arguments"):
            for arg, spec in getattr(tool, key).items():
                if spec.pattern is not None:
                    pointer = join_pointer("/allowed_tools", name, key, arg, "pattern")
                    located.append((pointer, spec.pattern, 0))
    return risky_warnings(located, allow)


def risky_warnings(located: list[tuple[str, str, int]], allow: bool) -> tuple[str, ...]:
    """For each (pointer, pattern, flags) that can backtrack exponentially: an error, or with
    ``allow`` a warning."""
    from agent_reliability_harness.model._regex import risky_repetition

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


_POLICY_KEYS: Final = (
    "$schema",
    "schema_version",
    "policy_id",
    "description",
    "allow_unlisted_tools",
    "allowed_tools",
    "budgets",
    "unsafe_patterns",
    "grounding",
    "sequence",
    "error_handling",
    "completion",
    # policy language 1.1 (model/policy11.py)
    "provenance",
    "conditions",
    "relations",
    "confirmation",
    "loops",
)
_EXTENSION_KEYS: Final = _POLICY_KEYS[-5:]


class _NotPlainError(Exception):
    """A value that is not plain JSON data, left to ``copy.deepcopy``."""


def _plain_copy(value: Any) -> Any:
    """A deep copy of plain JSON data (``dict``, ``list``, ``str``, numbers, booleans, None),
    what a policy file holds, without importing ``copy`` (and the ``weakref`` it loads: more
    than a millisecond of every start of the command line)."""
    kind = type(value)
    if kind is dict:
        return {key: _plain_copy(item) for key, item in value.items()}
    if kind is list:
        return [_plain_copy(item) for item in value]
    if value is None or kind is str or kind is int or kind is float or kind is bool:
        return value
    raise _NotPlainError


def _copy(data: dict[str, Any]) -> dict[str, Any]:
    """A deep copy, so that changing the caller's dict (an enum list) cannot change the policy;
    the dict itself when a value cannot be copied (it is refused later, by its pointer)."""
    try:
        return _plain_copy(data)  # type: ignore[no-any-return]
    except (_NotPlainError, RecursionError):
        pass
    import copy  # values built in Python: sets, tuples, objects, a list inside itself

    try:
        return copy.deepcopy(data)
    except Exception:  # noqa: BLE001 - any value that deepcopy refuses
        return data


class Policy(Record):
    """A parsed, validated policy. Build it with :meth:`from_dict`."""

    policy_id: str
    schema_version: str = "1"
    description: str | None = None
    allow_unlisted_tools: bool = False
    allowed_tools: Mapping[str, ToolSchema] = field(default_factory=dict)
    budgets: Budgets = field(default_factory=Budgets)
    unsafe_patterns: tuple[UnsafePattern, ...] = ()
    grounding: Grounding = field(default_factory=Grounding)
    sequence: Sequence = field(default_factory=Sequence)
    error_handling: ErrorHandling = field(default_factory=ErrorHandling)
    completion: Completion = field(default_factory=Completion)
    # problems accepted on request (such as risky patterns): "<pointer>: <message>"
    warnings: tuple[str, ...] = field(default=(), compare=False)
    # the sections of policy language 1.1; None when the policy declares version 1.0
    extensions: Extensions | None = None

    @classmethod
    def from_dict(cls, data: object, *, allow_risky_patterns: bool = False) -> Policy:
        """Parse a policy; raise :class:`InputError` naming the bad key's JSON pointer.

        A regular expression in the exponential-backtracking shape (see ``_regex``) is an error,
        or, with ``allow_risky_patterns``, a warning kept in :attr:`warnings`.
        """
        if type(data) is not dict:
            raise bad("", f"a policy must be a JSON object, got {json_type(data)}")
        # JSON has neither keys other than strings nor values that contain themselves; a policy
        # built in Python may: one walk refuses both, before any other walk (which would not end)
        check_tree(data, "")
        data = _copy(data)
        version = parse_schema_version(data.get("schema_version"), "/schema_version", "policy")
        check_keys(data, _POLICY_KEYS, "")
        policy_id = req_str(data, "policy_id", "", non_empty=True)
        opt_str(data, "$schema", "")
        tools_raw = section(data, "allowed_tools")
        tools: dict[str, ToolSchema] = {}
        for name, spec in tools_raw.items():
            tools[name] = ToolSchema.from_value(name, spec, join_pointer("/allowed_tools", name))
        patterns_raw = data.get("unsafe_patterns")
        patterns: list[UnsafePattern] = []
        if patterns_raw is not None:
            if type(patterns_raw) is not list:
                raise bad(
                    "/unsafe_patterns",
                    f"must be an array of regular expressions, got {json_type(patterns_raw)}",
                )
            for index, pattern in enumerate(patterns_raw):
                pointer = f"/unsafe_patterns/{index}"
                if type(pattern) is not str or not pattern:
                    raise bad(
                        pointer,
                        "must be a non-empty regular expression string, got "
                        + ("an empty string" if pattern == "" else json_type(pattern)),
                    )
                regex = _compile(pattern, re.IGNORECASE, pointer)
                if regex.search("") is not None:
                    raise bad(
                        pointer,
                        f"pattern {excerpt(pattern)} matches the empty string, so it flags every "
                        "text",
                    )
                from agent_reliability_harness.model._regex import check_consumes

                check_consumes(pattern, re.IGNORECASE, pointer)
                patterns.append(UnsafePattern(pattern, regex))
        allow_unlisted = opt_bool(data, "allow_unlisted_tools", "")
        sequence = Sequence.from_section(section(data, "sequence"))
        if not allow_unlisted:
            for key in ("required_tools", "call_order"):
                for index, name in enumerate(getattr(sequence, key)):
                    if name not in tools:
                        raise bad(
                            f"/sequence/{key}/{index}",
                            f"tool {excerpt(name)} is not in allowed_tools, so every call to it "
                            "would be rejected; add it to allowed_tools or set "
                            "allow_unlisted_tools",
                        )
        warnings = _risky_patterns(tools, patterns, allow_risky_patterns)
        extensions = None
        if version != "1" or any(data.get(key) is not None for key in _EXTENSION_KEYS):
            from agent_reliability_harness.model.policy11 import parse_extensions

            extensions, more = parse_extensions(
                data, version, tools, allow_unlisted, allow_risky_patterns
            )
            warnings += more
        policy = cls(
            policy_id,
            version,
            opt_str(data, "description", ""),
            allow_unlisted,
            tools,
            Budgets.from_section(section(data, "budgets")),
            tuple(patterns),
            Grounding.from_section(section(data, "grounding")),
            sequence,
            ErrorHandling.from_section(section(data, "error_handling")),
            Completion.from_section(section(data, "completion")),
            warnings,
            extensions,
        )
        check_json_values(data, "")  # what no field's own check looked at, such as enum values
        return policy

    def to_dict(self) -> dict[str, Any]:
        """The canonical JSON form (every section written out, defaults included)."""
        out: dict[str, Any] = {"schema_version": self.schema_version, "policy_id": self.policy_id}
        if self.description is not None:
            out["description"] = self.description
        out["allow_unlisted_tools"] = self.allow_unlisted_tools
        out["allowed_tools"] = {name: tool.to_dict() for name, tool in self.allowed_tools.items()}
        out["budgets"] = {k: getattr(self.budgets, k) for k in Budgets._KEYS}
        out["unsafe_patterns"] = [p.pattern for p in self.unsafe_patterns]
        out["grounding"] = {k: getattr(self.grounding, k) for k in Grounding._KEYS}
        out["sequence"] = {k: list(getattr(self.sequence, k)) for k in Sequence._KEYS}
        out["error_handling"] = {k: getattr(self.error_handling, k) for k in ErrorHandling._KEYS}
        out["completion"] = {k: getattr(self.completion, k) for k in Completion._KEYS}
        if self.extensions is not None:  # written only for 1.1, so 1.0 hashes stay as they were
            out.update(self.extensions.to_dict())
        return out

    @property
    def sha256(self) -> str:
        """A hash of the policy's meaning: formatting and key order of sections do not change it."""
        text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        import hashlib  # only reports need the hash

        return hashlib.sha256(text.encode("ascii")).hexdigest()
