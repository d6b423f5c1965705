"""The strict policy parser: ``Policy.from_dict``, ``to_dict`` and ``sha256``.

A policy is a contract, so every unknown key and every ill-typed value is an InputError at the
JSON pointer of the offending key, with a message that says what is wrong.
"""

from __future__ import annotations

import collections
import copy
import enum
import json
import math
import re
from typing import Any

import pytest

from agent_reliability_harness import InputError, Policy
from agent_reliability_harness.model.policy import ArgSpec

from conftest import REFERENCE, load_json, require_shared

INF = math.inf
NAN = math.nan

SECTIONS = ("allowed_tools", "budgets", "grounding", "sequence", "error_handling", "completion")


def policy_doc(**fields: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"policy_id": "p"}
    doc.update(fields)
    return doc


def tool_doc(**fields: Any) -> dict[str, Any]:
    """A policy whose only tool is ``t`` with the given schema fields."""
    return policy_doc(allowed_tools={"t": fields})


def arg_doc(spec: object, *, where: str = "required_arguments") -> dict[str, Any]:
    """A policy whose tool ``t`` has the argument ``a`` with ``spec``."""
    return tool_doc(**{where: {"a": spec}})


def rejected(data: object) -> InputError:
    with pytest.raises(InputError) as info:
        Policy.from_dict(data)
    return info.value


def check_rejected(data: object, pointer: str, *fragments: str) -> None:
    err = rejected(data)
    assert err.pointer == pointer, err.message
    for fragment in fragments:
        assert fragment in err.message


def arg(spec: object) -> ArgSpec:
    return Policy.from_dict(arg_doc(spec)).allowed_tools["t"].required_arguments["a"]


ARG = "/allowed_tools/t/required_arguments/a"


class _Count(enum.IntEnum):
    TEN = 10


class _Name(enum.StrEnum):
    P = "p"


class _Flag(int):
    pass


class _Real(float):
    pass


# --- the document, top-level fields ------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "kind"), [([], "array"), ("p", "string"), (None, "null"), (1, "number")]
)
def test_policy_must_be_an_object(data: object, kind: str) -> None:
    check_rejected(data, "", "must be a JSON object", kind)


def test_minimal_policy_defaults() -> None:
    policy = Policy.from_dict({"policy_id": "p"})
    assert policy.policy_id == "p"
    assert policy.schema_version == "1"
    assert policy.allow_unlisted_tools is False
    assert policy.allowed_tools == {}
    assert policy.unsafe_patterns == ()
    assert not policy.budgets.any_set
    assert policy.grounding.min_citation_coverage == 0.0
    assert policy.sequence.required_tools == ()
    assert policy.error_handling.max_attempts is None
    assert policy.completion.max_steps is None


def test_policy_id() -> None:
    check_rejected({}, "", "missing required field 'policy_id'")
    check_rejected(policy_doc(policy_id=""), "/policy_id", "must not be empty")
    # 0.2.x ran str() on policy_id; a number or null is an error now.
    check_rejected(policy_doc(policy_id=7), "/policy_id", "must be a string, got number")
    check_rejected(policy_doc(policy_id=None), "/policy_id", "must be a string, got null")


def test_schema_version() -> None:
    assert Policy.from_dict(policy_doc(schema_version=1)).schema_version == "1"
    assert Policy.from_dict(policy_doc(schema_version="1.4")).schema_version == "1.4"
    assert Policy.from_dict(policy_doc(schema_version=None)).schema_version == "1"
    check_rejected(
        policy_doc(schema_version="2"), "/schema_version", "policy declares unsupported", "'2'"
    )
    check_rejected(policy_doc(schema_version=True), "/schema_version", "got boolean")


def test_description_schema_and_allow_unlisted() -> None:
    policy = Policy.from_dict(
        policy_doc(description="d", allow_unlisted_tools=True, **{"$schema": "https://x/p.json"})
    )
    assert policy.description == "d"
    assert policy.allow_unlisted_tools is True
    check_rejected(policy_doc(description=5), "/description", "must be a string or null")
    check_rejected(policy_doc(**{"$schema": 5}), "/$schema", "must be a string or null")
    check_rejected(
        policy_doc(allow_unlisted_tools="true"),
        "/allow_unlisted_tools",
        "must be true or false, got string",
    )
    check_rejected(
        policy_doc(allow_unlisted_tools=1),
        "/allow_unlisted_tools",
        "must be true or false, got number",
    )


# --- unknown keys, at every level --------------------------------------------------------------


@pytest.mark.parametrize(
    ("doc", "pointer", "suggestion"),
    [
        (policy_doc(budget={}), "/budget", "budgets"),
        (policy_doc(allowed_tool={}), "/allowed_tool", "allowed_tools"),
        (policy_doc(unsafe_pattern=[]), "/unsafe_pattern", "unsafe_patterns"),
        (
            tool_doc(requred_arguments={}),
            "/allowed_tools/t/requred_arguments",
            "required_arguments",
        ),
        (tool_doc(max_call=1), "/allowed_tools/t/max_call", "max_calls"),
        (tool_doc(side_effects=True), "/allowed_tools/t/side_effects", "side_effect"),
        (arg_doc({"typ": "str"}), f"{ARG}/typ", "type"),
        (arg_doc({"type": "str", "patern": "x"}), f"{ARG}/patern", "pattern"),
        (arg_doc({"type": "str", "enums": ["x"]}), f"{ARG}/enums", "enum"),
        (
            policy_doc(budgets={"max_total_cost": 1}),
            "/budgets/max_total_cost",
            "max_total_cost_usd",
        ),
        (
            policy_doc(grounding={"require_citation": True}),
            "/grounding/require_citation",
            "require_citations",
        ),
        (policy_doc(sequence={"required_tool": []}), "/sequence/required_tool", "required_tools"),
        (policy_doc(sequence={"callorder": []}), "/sequence/callorder", "call_order"),
        (
            policy_doc(error_handling={"max_attempt": 2}),
            "/error_handling/max_attempt",
            "max_attempts",
        ),
        (policy_doc(completion={"max_step": 5}), "/completion/max_step", "max_steps"),
    ],
)
def test_unknown_key_suggests_the_nearest(
    doc: dict[str, Any], pointer: str, suggestion: str
) -> None:
    err = rejected(doc)
    assert err.pointer == pointer
    typo = pointer.rsplit("/", 1)[1]
    assert f"unknown key '{typo}'" in err.message
    assert f"did you mean '{suggestion}'?" in err.message


def test_unknown_key_without_a_near_match_lists_the_known_keys() -> None:
    err = rejected(policy_doc(completion={"zzz": 1}))
    assert err.pointer == "/completion/zzz"
    assert "unknown key 'zzz'" in err.message
    assert "require_final_response" in err.message
    assert "max_steps" in err.message


def test_unknown_key_pointer_is_escaped() -> None:
    err = rejected(policy_doc(**{"a/b~c": 1}))
    assert err.pointer == "/a~1b~0c"


# --- sections: null is absent, other non-objects are errors -------------------------------------


@pytest.mark.parametrize("section", [*SECTIONS, "unsafe_patterns"])
def test_null_section_means_absent(section: str) -> None:
    assert Policy.from_dict(policy_doc(**{section: None})) == Policy.from_dict(policy_doc())


@pytest.mark.parametrize("section", SECTIONS)
@pytest.mark.parametrize(
    ("value", "kind"), [([], "array"), (0, "number"), ("", "string"), (False, "boolean")]
)
def test_falsy_non_object_section_is_rejected(section: str, value: object, kind: str) -> None:
    # 0.2.x used `raw or {}`, which silently turned these into an empty section.
    check_rejected(policy_doc(**{section: value}), f"/{section}", f"must be an object, got {kind}")


@pytest.mark.parametrize(("value", "kind"), [(0, "number"), ("", "string"), ({}, "object")])
def test_unsafe_patterns_must_be_an_array(value: object, kind: str) -> None:
    check_rejected(
        policy_doc(unsafe_patterns=value),
        "/unsafe_patterns",
        f"must be an array of regular expressions, got {kind}",
    )


def test_empty_sections_are_accepted() -> None:
    empty = {s: {} for s in SECTIONS}
    assert Policy.from_dict(policy_doc(unsafe_patterns=[], **empty)) == Policy.from_dict(
        policy_doc()
    )


# --- allowed_tools: tool schemas ---------------------------------------------------------------


def test_tool_schema_must_be_an_object() -> None:
    # A bare type name at the tool level (a legacy shape) is rejected, as in 0.2.x.
    check_rejected(
        policy_doc(allowed_tools={"t": "str"}),
        "/allowed_tools/t",
        "a tool schema must be an object, got string",
    )
    check_rejected(policy_doc(allowed_tools={"t": None}), "/allowed_tools/t", "got null")


def test_tool_pointer_escapes_the_tool_name() -> None:
    doc = policy_doc(allowed_tools={"fs/read~x": {"max_calls": -1}})
    check_rejected(doc, "/allowed_tools/fs~1read~0x/max_calls", "must be an integer >= 0")


def test_tool_schema_fields() -> None:
    doc = tool_doc(
        required_arguments={"id": "str"},
        optional_arguments={"limit": {"type": "int", "min": 1}},
        side_effect=True,
        min_calls=0,
        max_calls=2,
        description="looks things up",
    )
    tool = Policy.from_dict(doc).allowed_tools["t"]
    assert tool.name == "t"
    assert tool.required_arguments == {"id": ArgSpec("str")}
    assert tool.optional_arguments == {"limit": ArgSpec("int", min=1)}
    assert tool.side_effect is True
    assert (tool.min_calls, tool.max_calls) == (0, 2)
    assert tool.description == "looks things up"
    empty = Policy.from_dict(tool_doc()).allowed_tools["t"]
    assert empty.side_effect is False
    assert (empty.min_calls, empty.max_calls) == (None, None)


@pytest.mark.parametrize("key", ["required_arguments", "optional_arguments"])
@pytest.mark.parametrize(("value", "kind"), [([], "array"), ("id", "string"), (0, "number")])
def test_argument_maps_must_be_objects(key: str, value: object, kind: str) -> None:
    check_rejected(
        tool_doc(**{key: value}),
        f"/allowed_tools/t/{key}",
        f"must be an object of argument name to spec, got {kind}",
    )


def test_argument_maps_may_be_null() -> None:
    tool = Policy.from_dict(tool_doc(required_arguments=None)).allowed_tools["t"]
    assert tool.required_arguments == {}


def test_argument_both_required_and_optional_is_rejected() -> None:
    check_rejected(
        tool_doc(required_arguments={"id": "str"}, optional_arguments={"id": "str"}),
        "/allowed_tools/t/optional_arguments/id",
        "'id' is declared both required and optional",
    )


@pytest.mark.parametrize("key", ["min_calls", "max_calls"])
@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (-1, "must be an integer >= 0, got -1"),
        (1.0, "must be an integer >= 0, got 1.0"),
        (1.5, "must be an integer >= 0, got 1.5"),
        (True, "must be an integer >= 0, got boolean"),
        ("2", "must be an integer >= 0, got string"),
    ],
)
def test_call_counts_rejected(key: str, value: object, fragment: str) -> None:
    check_rejected(tool_doc(**{key: value}), f"/allowed_tools/t/{key}", fragment)


def test_min_calls_above_max_calls_is_rejected() -> None:
    check_rejected(
        tool_doc(min_calls=3, max_calls=2),
        "/allowed_tools/t",
        "min_calls (3) exceeds max_calls (2)",
    )
    tool = Policy.from_dict(tool_doc(min_calls=2, max_calls=2)).allowed_tools["t"]
    assert (tool.min_calls, tool.max_calls) == (2, 2)


@pytest.mark.parametrize(("value", "kind"), [("true", "string"), (1, "number"), ([], "array")])
def test_side_effect_must_be_a_json_bool(value: object, kind: str) -> None:
    check_rejected(
        tool_doc(side_effect=value),
        "/allowed_tools/t/side_effect",
        f"must be true or false, got {kind}",
    )


# --- ArgSpec -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["str", "int", "float", "bool", "list", "dict", "any"])
def test_argspec_short_and_object_form(name: str) -> None:
    assert arg(name) == ArgSpec(name)
    assert arg({"type": name}) == ArgSpec(name)


def test_argspec_object_form_defaults_to_any() -> None:
    assert arg({}) == ArgSpec("any")
    assert arg({"type": None, "description": "free"}) == ArgSpec("any", description="free")


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("string", "str"),
        ("integer", "int"),
        ("number", "float"),
        ("boolean", "bool"),
        ("array", "list"),
        ("object", "dict"),
        ("String", "str"),
    ],
)
def test_unknown_type_name_suggests_the_arh_name(name: str, hint: str) -> None:
    # 0.2.x accepted unknown type names and reported them per call (ARH-SCH-006).
    for spec, pointer in ((name, ARG), ({"type": name}, f"{ARG}/type")):
        err = rejected(arg_doc(spec))
        assert err.pointer == pointer
        assert f"unknown argument type '{name}'" in err.message
        assert f"did you mean '{hint}'?" in err.message


def test_unknown_type_name_without_hint_lists_the_types() -> None:
    err = rejected(arg_doc("uuid"))
    assert err.pointer == ARG
    assert "unknown argument type 'uuid'" in err.message
    assert "did you mean" not in err.message
    assert "str, int, float, bool, list, dict, any" in err.message


def test_argspec_of_another_json_type_is_rejected() -> None:
    check_rejected(arg_doc(5), ARG, "must be a type name or an object, got number")
    check_rejected(arg_doc(["str"]), ARG, "got array")
    check_rejected(arg_doc({"type": 5}), f"{ARG}/type", "must be a type name string, got number")


def test_argspec_in_optional_arguments_has_its_own_pointer() -> None:
    check_rejected(
        arg_doc("text", where="optional_arguments"),
        "/allowed_tools/t/optional_arguments/a",
        "unknown argument type 'text'",
    )


def test_enum() -> None:
    assert arg({"type": "str", "enum": ["email", "sms"]}).enum == ("email", "sms")
    assert arg({"type": "float", "enum": [1, 2.5]}).enum == (1, 2.5)  # an int is a float value
    assert arg({"enum": [1, "a", None]}).enum == (1, "a", None)  # any type
    assert arg({"type": "str", "enum": None}).enum is None
    for value, got in (([], "an empty array"), ("email", "string"), ({"a": 1}, "object"),
                       (3, "number"), (("a", "b"), "tuple")):  # fmt: skip
        check_rejected(
            arg_doc({"type": "str", "enum": value}),
            f"{ARG}/enum",
            f"must be a non-empty array of allowed values, got {got}",
        )


@pytest.mark.parametrize(
    ("spec", "index", "fragment"),
    [
        (
            {"type": "int", "enum": [1, "2"]},
            1,
            "string value does not have the argument's type 'int'",
        ),
        ({"type": "int", "enum": [True]}, 0, "boolean value"),  # true is not an int
        ({"type": "int", "enum": [1, 2.0]}, 1, "number value"),  # 2.0 is a float, not an int
        ({"type": "str", "enum": ["a", None]}, 1, "null value"),
        ({"type": "bool", "enum": [0]}, 0, "number value"),
    ],
)
def test_enum_values_must_have_the_type(spec: dict[str, Any], index: int, fragment: str) -> None:
    check_rejected(arg_doc(spec), f"{ARG}/enum/{index}", fragment)


def test_pattern_is_compiled_at_load() -> None:
    spec = arg({"type": "str", "pattern": "ORD-[0-9]+"})
    assert spec.pattern == "ORD-[0-9]+"
    assert isinstance(spec.regex, re.Pattern)
    assert spec.regex.fullmatch("ORD-42") is not None
    assert spec.regex.fullmatch("ord-42") is None  # argument patterns are case-sensitive
    assert arg({"pattern": "x+"}).regex is not None  # "any" accepts a pattern too


@pytest.mark.parametrize("where", ["required_arguments", "optional_arguments"])
def test_invalid_pattern_is_reported_at_its_pointer(where: str) -> None:
    check_rejected(
        arg_doc({"type": "str", "pattern": "ORD-([0-9]+"}, where=where),
        f"/allowed_tools/t/{where}/a/pattern",
        "invalid regular expression 'ORD-([0-9]+'",
    )


def test_pattern_must_be_a_string() -> None:
    check_rejected(
        arg_doc({"type": "str", "pattern": 5}), f"{ARG}/pattern", "must be a string or null"
    )


@pytest.mark.parametrize("name", ["int", "float", "bool", "list", "dict"])
def test_pattern_only_for_strings(name: str) -> None:
    check_rejected(
        arg_doc({"type": name, "pattern": "[0-9]+"}),
        f"{ARG}/pattern",
        f"a pattern applies to strings, but the type is '{name}'",
    )


def test_numeric_bounds() -> None:
    spec = arg({"type": "float", "min": 0.01, "max": 500})
    assert (spec.min, spec.max) == (0.01, 500)
    assert arg({"type": "int", "min": -5}).min == -5
    assert arg({"min": 1, "max": 1}).max == 1  # min == max is allowed; "any" takes bounds
    assert arg({"type": "int", "min": None}).min is None


@pytest.mark.parametrize("key", ["min", "max"])
@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("5", "must be a finite number, got string"),
        (True, "must be a finite number, got boolean"),
        ([1], "must be a finite number, got array"),
        (INF, "must be a finite number, got inf"),
        (-INF, "must be a finite number, got -inf"),
        (NAN, "must be a finite number, got nan"),
    ],
)
def test_numeric_bounds_rejected(key: str, value: object, fragment: str) -> None:
    check_rejected(arg_doc({"type": "float", key: value}), f"{ARG}/{key}", fragment)


@pytest.mark.parametrize("name", ["str", "bool", "list", "dict"])
@pytest.mark.parametrize("key", ["min", "max"])
def test_numeric_bounds_only_for_numbers(name: str, key: str) -> None:
    check_rejected(
        arg_doc({"type": name, key: 1}),
        f"{ARG}/{key}",
        f"a numeric bound applies to numbers, but the type is '{name}'",
    )


def test_min_above_max_is_rejected() -> None:
    check_rejected(arg_doc({"type": "int", "min": 5, "max": 1}), ARG, "min (5) exceeds max (1)")


# --- budgets -----------------------------------------------------------------------------------

BUDGET_NUMBERS = ("max_total_latency_ms", "max_step_latency_ms", "max_total_cost_usd")


def test_budgets_accepted() -> None:
    budgets = Policy.from_dict(
        policy_doc(
            budgets={
                "max_total_latency_ms": 5000,
                "max_step_latency_ms": 2000.5,
                "max_total_cost_usd": 0,
                "max_total_tokens": 4000,
            }
        )
    ).budgets
    assert budgets.max_total_latency_ms == 5000
    assert budgets.max_step_latency_ms == 2000.5
    assert budgets.max_total_cost_usd == 0
    assert budgets.max_total_tokens == 4000
    assert budgets.any_set
    assert not Policy.from_dict(policy_doc(budgets={"max_total_cost_usd": None})).budgets.any_set


@pytest.mark.parametrize("key", BUDGET_NUMBERS)
@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        # 0.2.x stored these unchecked: a string crashed validation, a negative was accepted.
        ("5000", "must be a number, got string"),
        (True, "must be a number, got boolean"),
        (-1, "must be a finite number >= 0, got -1"),
        (-0.01, "must be a finite number >= 0, got -0.01"),
        (INF, "must be a finite number >= 0, got inf"),
        (NAN, "must be a finite number >= 0, got nan"),
    ],
)
def test_budget_numbers_rejected(key: str, value: object, fragment: str) -> None:
    check_rejected(policy_doc(budgets={key: value}), f"/budgets/{key}", fragment)


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (1.5, "must be an integer >= 0, got 1.5"),
        (-1, "must be an integer >= 0, got -1"),
        ("4000", "got string"),
        (True, "got boolean"),
    ],
)
def test_token_budget_must_be_an_int(value: object, fragment: str) -> None:
    check_rejected(
        policy_doc(budgets={"max_total_tokens": value}), "/budgets/max_total_tokens", fragment
    )


# --- grounding ---------------------------------------------------------------------------------


def test_grounding_accepted() -> None:
    grounding = Policy.from_dict(
        policy_doc(
            grounding={
                "require_citations": True,
                "min_citation_coverage": 1,
                "require_valid_citation_urls": False,
            }
        )
    ).grounding
    assert grounding.require_citations is True
    assert grounding.min_citation_coverage == 1.0
    assert grounding.require_valid_citation_urls is False
    for value in (0, 0.0, 0.75, 1.0):
        coverage = Policy.from_dict(policy_doc(grounding={"min_citation_coverage": value}))
        assert coverage.grounding.min_citation_coverage == value


@pytest.mark.parametrize(
    ("value", "shown"),
    [(1.5, "1.5"), (-0.1, "-0.1"), ("0.5", "string"), (True, "boolean"), (NAN, "nan")],
)
def test_min_citation_coverage_rejected(value: object, shown: str) -> None:
    check_rejected(
        policy_doc(grounding={"min_citation_coverage": value}),
        "/grounding/min_citation_coverage",
        f"must be a number from 0 to 1, got {shown}",
    )


@pytest.mark.parametrize("key", ["require_citations", "require_valid_citation_urls"])
def test_grounding_flags_must_be_json_bools(key: str) -> None:
    check_rejected(
        policy_doc(grounding={key: "false"}),
        f"/grounding/{key}",
        "must be true or false, got string",
    )


# --- sequence ----------------------------------------------------------------------------------


def seq_doc(**sequence: Any) -> dict[str, Any]:
    tools = {name: {} for name in ("a", "b", "c")}
    return policy_doc(allowed_tools=tools, sequence=sequence)


def test_sequence_accepted() -> None:
    seq = Policy.from_dict(
        seq_doc(required_tools=["a"], forbidden_tools=["delete_all"], call_order=["a", "b", "c"])
    ).sequence
    assert seq.required_tools == ("a",)
    assert seq.forbidden_tools == ("delete_all",)  # forbidden tools need not be allowed
    assert seq.call_order == ("a", "b", "c")


@pytest.mark.parametrize("key", ["required_tools", "forbidden_tools", "call_order"])
def test_sequence_lists(key: str) -> None:
    check_rejected(seq_doc(**{key: "a"}), f"/sequence/{key}", "must be an array of tool names")
    check_rejected(seq_doc(**{key: {}}), f"/sequence/{key}", "got object")
    check_rejected(
        seq_doc(**{key: ["a", ""]}), f"/sequence/{key}/1", "must be a non-empty tool name string"
    )
    check_rejected(seq_doc(**{key: [5]}), f"/sequence/{key}/0", "got number")
    check_rejected(seq_doc(**{key: [None]}), f"/sequence/{key}/0", "got null")
    check_rejected(
        seq_doc(**{key: ["a", "b", "a"]}), f"/sequence/{key}/2", "lists 'a' more than once"
    )


def test_required_and_forbidden_overlap_is_rejected() -> None:
    check_rejected(
        seq_doc(required_tools=["b", "a"], forbidden_tools=["a", "b", "z"]),
        "/sequence",
        "same tool(s) as required and forbidden: a, b",
    )


@pytest.mark.parametrize("key", ["required_tools", "call_order"])
def test_sequence_tools_must_be_allowed(key: str) -> None:
    doc = seq_doc(**{key: ["a", "ghost"]})
    check_rejected(doc, f"/sequence/{key}/1", "'ghost' is not in allowed_tools")
    doc["allow_unlisted_tools"] = True
    assert getattr(Policy.from_dict(doc).sequence, key) == ("a", "ghost")


# --- error_handling, completion ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("section", "key"), [("error_handling", "max_attempts"), ("completion", "max_steps")]
)
def test_positive_int_limits(section: str, key: str) -> None:
    parsed = Policy.from_dict(policy_doc(**{section: {key: 1}}))
    assert getattr(getattr(parsed, section), key) == 1
    for value, fragment in (
        (0, "must be an integer >= 1, got 0"),
        (-2, "must be an integer >= 1, got -2"),
        (2.0, "must be an integer >= 1, got 2.0"),
        (True, "got boolean"),
        ("3", "got string"),
    ):
        check_rejected(policy_doc(**{section: {key: value}}), f"/{section}/{key}", fragment)


@pytest.mark.parametrize(
    ("section", "key"),
    [("error_handling", "require_retry_on_error"), ("completion", "require_final_response")],
)
def test_section_flags(section: str, key: str) -> None:
    assert getattr(getattr(Policy.from_dict(policy_doc(**{section: {key: True}})), section), key)
    check_rejected(
        policy_doc(**{section: {key: "yes"}}), f"/{section}/{key}", "must be true or false"
    )


# --- unsafe_patterns ---------------------------------------------------------------------------


def test_unsafe_patterns_are_compiled_case_insensitively() -> None:
    patterns = Policy.from_dict(
        policy_doc(unsafe_patterns=[r"\bpassword\s*[:=]", "drop table"])
    ).unsafe_patterns
    assert [p.pattern for p in patterns] == [r"\bpassword\s*[:=]", "drop table"]
    assert all(p.regex.flags & re.IGNORECASE for p in patterns)
    assert patterns[0].regex.search("PassWord: hunter2") is not None
    assert patterns[1].regex.search("then DROP TABLE users") is not None


@pytest.mark.parametrize(
    ("patterns", "pointer", "fragment"),
    [
        (
            ["ok", ""],
            "/unsafe_patterns/1",
            "must be a non-empty regular expression string, got an empty string",
        ),
        ([5], "/unsafe_patterns/0", "got number"),
        ([None], "/unsafe_patterns/0", "got null"),
        (["ok", "(unclosed"], "/unsafe_patterns/1", "invalid regular expression '(unclosed'"),
        (["a*"], "/unsafe_patterns/0", "matches the empty string"),
        (["x|"], "/unsafe_patterns/0", "matches the empty string"),
        (["^"], "/unsafe_patterns/0", "matches the empty string"),
    ],
)
def test_unsafe_patterns_rejected(patterns: list[object], pointer: str, fragment: str) -> None:
    check_rejected(policy_doc(unsafe_patterns=patterns), pointer, fragment)


# Each fails to match "" yet succeeds, without consuming a character, somewhere in almost every
# text: a finding for nearly every string, quoting an empty excerpt.
@pytest.mark.parametrize(
    "pattern",
    [r"\b", r"\B", "(?=.)", "(?=x)", "(?<=a)", r"a|\b", r"\b(?:password)?", r"(?:\bx)?\B", "(?!)"],
)
def test_unsafe_patterns_whose_shortest_match_is_empty_are_rejected(pattern: str) -> None:
    check_rejected(
        policy_doc(unsafe_patterns=["drop table", "x+", pattern]),
        "/unsafe_patterns/2",
        f"pattern {pattern!r} can match without consuming a character",
    )


@pytest.mark.parametrize(
    "pattern", [r"\bpassword\b", r"^rm -rf", r"(?<=key=)\w", r"x*y", r"(a)\1", r"(?=a)\w"]
)
def test_unsafe_patterns_with_anchors_that_consume_a_character_load(pattern: str) -> None:
    (loaded,) = Policy.from_dict(policy_doc(unsafe_patterns=[pattern])).unsafe_patterns
    assert loaded.pattern == pattern


# --- the 0.2.x reference policies --------------------------------------------------------------


def test_reference_sample_policies_parse() -> None:
    folder = require_shared(REFERENCE / "samples")
    default = Policy.from_dict(load_json(folder / "policy.json"))
    # Values read off samples/policy.json by hand.
    assert default.policy_id == "enterprise-agent-default-v1"
    assert sorted(default.allowed_tools) == [
        "calendar_schedule",
        "create_ticket",
        "crm_lookup",
        "draft_email",
        "knowledge_search",
    ]
    assert default.allowed_tools["calendar_schedule"].required_arguments["duration_minutes"] == (
        ArgSpec("int")
    )
    assert default.budgets.max_total_cost_usd == 0.25
    assert len(default.unsafe_patterns) == 8
    assert default.grounding.min_citation_coverage == 0.75

    trajectory = Policy.from_dict(load_json(folder / "policy_trajectory.json"))
    refund = trajectory.allowed_tools["issue_refund"]
    assert refund.required_arguments["amount"] == ArgSpec("float", min=0.01, max=500)
    assert refund.side_effect is True
    assert refund.max_calls == 1
    assert trajectory.sequence.call_order == (
        "lookup_order",
        "check_refund_eligibility",
        "issue_refund",
    )
    assert trajectory.error_handling.max_attempts == 3
    assert trajectory.completion.max_steps == 12


def test_all_benchmark_case_policies_parse_and_round_trip() -> None:
    folder = require_shared(REFERENCE / "benchmarks" / "cases")
    paths = sorted(folder.glob("*.json"))
    assert len(paths) == 34
    for path in paths:
        doc = load_json(path)["policy"]
        policy = Policy.from_dict(doc)
        assert policy.policy_id == doc["policy_id"], path.name
        assert Policy.from_dict(json.loads(json.dumps(policy.to_dict()))) == policy, path.name


# --- to_dict and sha256 ------------------------------------------------------------------------

RICH = {
    "$schema": "https://example.com/policy.schema.json",
    "schema_version": "1",
    "policy_id": "rich",
    "description": "every section",
    "allow_unlisted_tools": False,
    "allowed_tools": {
        "lookup": {
            "required_arguments": {"id": {"type": "str", "pattern": "ID-[0-9]+"}},
            "optional_arguments": {
                "limit": {"type": "int", "min": 1, "max": 50, "description": "page size"},
                "mode": {"type": "str", "enum": ["fast", "full"]},
                "raw": "any",
            },
            "min_calls": 1,
            "max_calls": 3,
            "description": "read",
        },
        "refund": {
            "required_arguments": {"amount": {"type": "float", "min": 0.01}},
            "side_effect": True,
        },
    },
    "budgets": {"max_total_latency_ms": 5000, "max_total_cost_usd": 0.5, "max_total_tokens": 900},
    "unsafe_patterns": ["ignore (all|previous) instructions", r"\bapi[_-]?key\b"],
    "grounding": {"require_citations": True, "min_citation_coverage": 0.5},
    "sequence": {
        "required_tools": ["lookup"],
        "forbidden_tools": ["drop"],
        "call_order": ["lookup", "refund"],
    },
    "error_handling": {"require_retry_on_error": True, "max_attempts": 2},
    "completion": {"require_final_response": True, "max_steps": 8},
}


def test_to_dict_parses_back_to_an_equal_policy() -> None:
    policy = Policy.from_dict(copy.deepcopy(RICH))
    out = policy.to_dict()
    again = Policy.from_dict(json.loads(json.dumps(out)))
    assert again == policy
    assert again.to_dict() == out
    assert again.sha256 == policy.sha256
    # The short form is kept when only a type is set.
    assert out["allowed_tools"]["lookup"]["optional_arguments"]["raw"] == "any"
    assert out["allowed_tools"]["lookup"]["optional_arguments"]["limit"] == {
        "type": "int",
        "min": 1,
        "max": 50,
        "description": "page size",
    }


def _reverse_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _reverse_keys(value[k]) for k in reversed(value)}
    if isinstance(value, list):
        return [_reverse_keys(v) for v in value]
    return value


def test_sha256_is_stable_under_key_order_and_whitespace() -> None:
    base = Policy.from_dict(copy.deepcopy(RICH))
    assert re.fullmatch("[0-9a-f]{64}", base.sha256)
    reordered_text = json.dumps(_reverse_keys(RICH), indent=7, separators=(" ,  ", " :\t"))
    reordered = Policy.from_dict(json.loads(reordered_text))
    assert list(json.loads(reordered_text)) != list(RICH)  # the order really differs
    assert reordered == base
    assert reordered.sha256 == base.sha256
    # An explicit null section, or an empty one, means the same as an absent one.
    assert (
        Policy.from_dict(policy_doc(budgets=None)).sha256 == Policy.from_dict(policy_doc()).sha256
    )
    assert Policy.from_dict(policy_doc(budgets={})).sha256 == Policy.from_dict(policy_doc()).sha256


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d["budgets"].update(max_total_tokens=901),
        lambda d: d["allowed_tools"]["lookup"].update(max_calls=4),
        lambda d: d["allowed_tools"]["refund"]["required_arguments"]["amount"].update(min=0.02),
        lambda d: d["unsafe_patterns"].reverse(),
        lambda d: d["sequence"]["call_order"].reverse(),
        lambda d: d["grounding"].update(require_citations=False),
        lambda d: d.update(policy_id="rich2"),
        lambda d: d["completion"].update(max_steps=9),
    ],
)
def test_sha256_changes_when_a_value_changes(change: Any) -> None:
    doc = copy.deepcopy(RICH)
    change(doc)
    assert Policy.from_dict(doc).sha256 != Policy.from_dict(copy.deepcopy(RICH)).sha256


def test_parsing_does_not_modify_the_input() -> None:
    doc = copy.deepcopy(RICH)
    Policy.from_dict(doc)
    assert doc == RICH


# --- data built in Python: keys, subclasses of JSON types, integers too long to show ----------

POLICY_11 = {"schema_version": "1.1", "allowed_tools": {"t": {}, "u": {}}}


@pytest.mark.parametrize(
    ("doc", "pointer", "kind"),
    [
        ({"policy_id": "p", None: 1}, "", "NoneType"),
        (policy_doc(budgets={1: 1}), "/budgets", "int"),
        (policy_doc(grounding={("a",): True}), "/grounding", "tuple"),
        (policy_doc(allowed_tools={1: {}, "a": {}}), "/allowed_tools", "int"),
        (policy_doc(allowed_tools={None: {}}), "/allowed_tools", "NoneType"),
        (
            tool_doc(required_arguments={None: "str"}),
            "/allowed_tools/t/required_arguments",
            "NoneType",
        ),
        (tool_doc(optional_arguments={2.5: "str"}), "/allowed_tools/t/optional_arguments", "float"),
        (arg_doc({None: "str"}), ARG, "NoneType"),
        (arg_doc({"enum": [{1: "x", "a": 2}]}), ARG + "/enum/0", "int"),
        (arg_doc({"enum": [[{"a": {None: 1}}]]}), ARG + "/enum/0/0/a", "NoneType"),
        (
            policy_doc(**POLICY_11, conditions=[{"tool": "t", "forbid": True, "when": {1: {}}}]),
            "/conditions/0/when",
            "int",
        ),
        (
            policy_doc(
                **POLICY_11,
                conditions=[{"tool": "t", "forbid": True, "when": {"a": {"equals": {1: 2}}}}],
            ),
            "/conditions/0/when/a/equals",
            "int",
        ),
        (
            policy_doc(
                **POLICY_11,
                conditions=[{"tool": "t", "when": {"a": {"enum": [1, {None: 2}]}}, "forbid": True}],
            ),
            "/conditions/0/when/a/enum/1",
            "NoneType",
        ),
        (
            policy_doc(
                **POLICY_11,
                conditions=[{"tool": "t", "require_prior": [{"tool": "u", "match": {None: "a"}}]}],
            ),
            "/conditions/0/require_prior/0/match",
            "NoneType",
        ),
        (policy_doc(**POLICY_11, loops={"max_identical_calls": 2, 7: 1}), "/loops", "int"),
    ],
)
def test_keys_that_are_not_strings_are_rejected(doc: object, pointer: str, kind: str) -> None:
    # JSON has no such keys; built in Python they crashed the parser or Policy.sha256
    check_rejected(doc, pointer, f"object keys must be strings, got a key of type {kind}")


def _containing_itself() -> tuple[dict[str, Any], list[Any]]:
    loop: dict[str, Any] = {"a": 1}
    loop["self"] = loop
    row: list[Any] = ["x"]
    row.append(row)
    return loop, row


@pytest.mark.parametrize(
    ("where", "pointer"),
    [
        ("description", "/description/self"),
        ("enum", "/allowed_tools/t/required_arguments/a/enum/1/1"),
        ("unknown", "/zzz/self"),
        ("condition", "/conditions/0/when/a/equals/self"),
        ("top", "/self"),
    ],
)
def test_values_that_contain_themselves_are_rejected(where: str, pointer: str) -> None:
    # JSON cannot hold such a value, a dict built in Python can: the parser's walks (its copy,
    # the key check) never returned; the field's own check would name another problem first
    loop, row = _containing_itself()
    doc = {
        "description": policy_doc(description=loop),
        "enum": arg_doc({"type": "str", "enum": ["x", row]}),
        "unknown": policy_doc(zzz=loop),
        "condition": policy_doc(
            **POLICY_11, conditions=[{"tool": "t", "forbid": True, "when": {"a": {"equals": loop}}}]
        ),
    }.get(where)
    if doc is None:
        doc = policy_doc()
        doc["self"] = doc
    check_rejected(doc, pointer, "the value contains itself (a reference cycle)")


def test_string_subclass_keys_are_strings() -> None:
    from enum import StrEnum

    class Name(StrEnum):
        LOOKUP = "lookup"

    policy = Policy.from_dict(policy_doc(allowed_tools={Name.LOOKUP: {}, "other": {}}))
    assert list(policy.allowed_tools) == ["lookup", "other"]
    assert re.fullmatch("[0-9a-f]{64}", policy.sha256)


HUGE = 10**5000  # 5001 digits: more than int_max_str_digits allows to convert to text


@pytest.mark.parametrize(
    ("doc", "pointer", "fragment"),
    [
        (policy_doc(schema_version=HUGE), "/schema_version", "unsupported schema_version"),
        (policy_doc(schema_version=-HUGE), "/schema_version", "unsupported schema_version"),
        (policy_doc(budgets={"max_total_cost_usd": HUGE}), "/budgets/max_total_cost_usd", ">= 0"),
        (
            policy_doc(budgets={"max_step_latency_ms": -HUGE}),
            "/budgets/max_step_latency_ms",
            ">= 0",
        ),
        (policy_doc(budgets={"max_total_tokens": -HUGE}), "/budgets/max_total_tokens", ">= 0"),
        (
            policy_doc(grounding={"min_citation_coverage": HUGE}),
            "/grounding/min_citation_coverage",
            "from 0 to 1",
        ),
        (arg_doc({"type": "int", "min": HUGE}), ARG + "/min", "finite number"),
        (arg_doc({"type": "int", "max": -HUGE}), ARG + "/max", "finite number"),
        (tool_doc(min_calls=HUGE, max_calls=1), "/allowed_tools/t", "exceeds max_calls"),
        (tool_doc(max_calls=-HUGE), "/allowed_tools/t/max_calls", ">= 0"),
        (
            policy_doc(**POLICY_11, loops={"max_identical_calls": HUGE, "window": 3}),
            "/loops/window",
            "max_identical_calls",
        ),
        (
            policy_doc(**POLICY_11, loops={"max_cycle_repeats": 1, "max_cycle_length": HUGE}),
            "/loops/max_cycle_length",
            "from 2 to 16",
        ),
    ],
)
def test_integers_too_long_to_show_are_described_by_length(
    int_digits_limit: int, doc: object, pointer: str, fragment: str
) -> None:
    check_rejected(doc, pointer, fragment, "an integer of 5001 digits")


@pytest.mark.parametrize(
    ("values", "pointer", "message"),
    [
        ([b"x"], "/0", "must be a JSON value, got bytes"),
        (["a", {"b": {1, 2}}], "/1/b", "must be a JSON value, got set"),
        ([1, [2, (3,)]], "/1/1", "must be a JSON value, got tuple"),
        ([float("nan")], "/0", "must be a finite number, got nan"),
        ([[float("-inf")]], "/0/0", "must be a finite number, got -inf"),
    ],
)
def test_enum_values_json_cannot_hold_are_rejected(
    values: list[object], pointer: str, message: str
) -> None:
    # an argument of type "any" takes any enum value; these made Policy.sha256 raise TypeError
    check_rejected(arg_doc({"type": "any", "enum": values}), ARG + "/enum" + pointer, message)
    condition = {"tool": "t", "forbid": True, "when": {"a": {"enum": values}}}
    check_rejected(
        policy_doc(**POLICY_11, conditions=[condition]), "/conditions/0/when/a/enum" + pointer
    )


def test_enum_integers_too_long_to_write_follow_the_interpreter_limit(
    int_digits_limit: int,
) -> None:
    doc = arg_doc({"type": "any", "enum": [HUGE]})
    if int_digits_limit:
        check_rejected(
            doc,
            ARG + "/enum/0",
            "an integer of 5001 digits is more than this Python writes as text",
        )
    else:  # with the limit off, the value can be written, so the hash exists
        assert re.fullmatch("[0-9a-f]{64}", Policy.from_dict(doc).sha256)


@pytest.mark.parametrize(
    ("doc", "pointer", "shown"),
    [
        (
            collections.OrderedDict(policy_id="p"),
            "",
            "OrderedDict (a dict subclass: pass a plain dict)",
        ),
        (policy_doc(unsafe_patterns=("x",)), "/unsafe_patterns", "tuple"),
        (policy_doc(budgets=collections.OrderedDict()), "/budgets", "OrderedDict (a dict subclass"),
        (
            policy_doc(budgets={"max_total_tokens": _Count.TEN}),
            "/budgets/max_total_tokens",
            "enum member _Count.TEN (an int subclass: pass a plain int)",
        ),
        (
            policy_doc(grounding={"require_citations": _Flag(1)}),
            "/grounding/require_citations",
            "_Flag (an int subclass: pass a plain int)",
        ),
        (
            policy_doc(policy_id=_Name.P),
            "/policy_id",
            "got enum member _Name.P (a str subclass: pass a plain str)",
        ),
        (
            policy_doc(sequence={"required_tools": [_Name.P]}),
            "/sequence/required_tools/0",
            "got enum member _Name.P (a str subclass",
        ),
        (arg_doc({"type": "int", "min": _Real(1.5)}), ARG + "/min", "_Real (a float subclass"),
    ],
)
def test_subclasses_of_json_types_are_named_by_their_type(
    doc: object, pointer: str, shown: str
) -> None:
    # the checks test `type(x) is ...`; the message used to name the JSON type they ask for
    check_rejected(doc, pointer, shown)


def test_a_policy_does_not_change_when_the_dict_it_was_read_from_does() -> None:
    data = policy_doc(allowed_tools={"t": {"required_arguments": {"a": {"enum": [[1]]}}}})
    policy = Policy.from_dict(data)
    before = (policy.to_dict(), policy.sha256)
    data["allowed_tools"]["t"]["required_arguments"]["a"]["enum"][0].append(2)
    data["allowed_tools"]["t"]["required_arguments"]["a"]["enum"].append("x")
    assert (policy.to_dict(), policy.sha256) == before
    assert policy.allowed_tools["t"].required_arguments["a"].enum == ([1],)
