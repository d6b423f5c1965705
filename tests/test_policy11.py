"""Policy language 1.1: parsing of provenance, conditions, relations, confirmation and loops.

Every section is strict like the rest of a policy: unknown keys are errors at their JSON pointer,
values are type-checked, names of tools and arguments are checked against allowed_tools, and the
sections need ``"schema_version": "1.1"``. The JSON Schema must agree with the parser on every
document below, except the cross-field checks it cannot express (``GAPS``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from agent_reliability_harness import InputError, Policy, Trace, validate_trace
from agent_reliability_harness.model._paths import ArgPath, collect, json_key
from agent_reliability_harness.model.policy import minor_version
from agent_reliability_harness.model.policy.predicates import Predicate

from conftest import ROOT, Run, load_json, schema_validator

SAMPLE_POLICIES = sorted((ROOT / "samples" / "policies").glob("*.json"))


TOOLS: dict[str, Any] = {
    "read_inbox": {},
    "send_money": {
        "required_arguments": {"recipient": "str", "amount": "float"},
        "side_effect": True,
    },
    "lookup": {"required_arguments": {"order_id": "str"}},
    "refund": {"required_arguments": {"order_id": "str", "amount": "float"}, "side_effect": True},
    "approve": {},
}
PROVENANCE: dict[str, Any] = {
    "untrusted": {"tools": ["read_inbox"]},
    "sinks": [{"tool": "send_money", "argument": "recipient"}],
}
CONDITION: dict[str, Any] = {
    "name": "big-refund",
    "tool": "refund",
    "when": {"amount": {"exclusive_min": 100}},
    "require_prior": ["approve"],
}
RELATION: dict[str, Any] = {
    "name": "within-total",
    "tool": "refund",
    "argument": "amount",
    "op": "<=",
    "source": {"tool": "lookup", "output": "/total", "match": {"order_id": "order_id"}},
}


def doc(**sections: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "schema_version": "1.1",
        "policy_id": "p",
        "allowed_tools": copy.deepcopy(TOOLS),
    }
    out.update(sections)
    return out


def with_value(document: dict[str, Any], path: tuple[str | int, ...], value: object) -> Any:
    out = copy.deepcopy(document)
    parent: Any = out
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    return out


def rejected(document: object) -> InputError:
    with pytest.raises(InputError) as info:
        Policy.from_dict(document)
    return info.value


# ---- version gating ----------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["provenance", "conditions", "relations", "confirmation", "loops"])
@pytest.mark.parametrize("version", [None, "1", "1.0", 1, 1.0, "1.x"])
def test_sections_need_version_1_1(key: str, version: object) -> None:
    values = {
        "provenance": PROVENANCE,
        "conditions": [CONDITION],
        "relations": [RELATION],
        "confirmation": {},
        "loops": {"max_identical_calls": 2},
    }
    document = doc(**{key: values[key]})
    if version is None:
        del document["schema_version"]
    else:
        document["schema_version"] = version
    error = rejected(document)
    assert error.pointer == f"/{key}"
    assert 'declare "schema_version": "1.1"' in error.message
    # it said "this policy declares '1'" of a policy that declares nothing
    if version is None:
        assert error.message.endswith("(this policy declares no schema_version, which means '1')")
    else:
        assert error.message.endswith(f"(this policy declares {str(version)!r})")
    assert not schema_validator("policy").is_valid(document)


@pytest.mark.parametrize("version", ["1.1", 1.1, "1.2", "1.10", 1.5])
def test_later_minor_versions_may_use_the_sections(version: object) -> None:
    document = doc(loops={"max_identical_calls": 2}, schema_version=version)
    assert Policy.from_dict(document).extensions is not None
    assert schema_validator("policy").is_valid(document)


def test_null_sections_are_absent_in_any_version() -> None:
    document = {"policy_id": "p", "provenance": None, "conditions": None, "loops": None}
    assert Policy.from_dict(document).extensions is None
    assert schema_validator("policy").is_valid(document)


@pytest.mark.parametrize(
    ("text", "minor"), [("1", 0), ("1.0", 0), ("1.1", 1), ("1.10", 10), ("1.x", 0), ("1.1.5", 1)]
)
def test_minor_version(text: str, minor: int) -> None:
    assert minor_version(text) == minor


def test_a_1_0_policy_keeps_its_canonical_form_and_hash() -> None:
    # The canonical form of a 1.0 policy has exactly the keys it had before language 1.1, so
    # the hashes of existing baselines do not change; 1.1 adds its five sections.
    old_keys = {
        "schema_version",
        "policy_id",
        "allow_unlisted_tools",
        "allowed_tools",
        "budgets",
        "unsafe_patterns",
        "grounding",
        "sequence",
        "error_handling",
        "completion",
    }
    plain = Policy.from_dict({"policy_id": "p", "allowed_tools": TOOLS})
    assert set(plain.to_dict()) == old_keys
    newer = Policy.from_dict(doc())
    assert set(newer.to_dict()) == old_keys | {
        "provenance",
        "conditions",
        "relations",
        "confirmation",
        "loops",
    }
    assert plain.sha256 != newer.sha256  # the version and the sections are part of the meaning


def test_canonical_form_is_stable_and_reparses() -> None:
    document = doc(
        provenance=PROVENANCE,
        conditions=[CONDITION],
        relations=[RELATION],
        confirmation={},
        loops={"max_identical_calls": 2, "window": 3},
    )
    policy = Policy.from_dict(document)
    canonical = policy.to_dict()
    again = Policy.from_dict(json.loads(json.dumps(canonical)))
    assert again.to_dict() == canonical
    assert again.sha256 == policy.sha256
    # defaults are written out
    assert canonical["provenance"]["min_value_length"] == 8
    assert canonical["confirmation"] == {"tools": ["send_money", "refund"], "pattern": r"\byes\b"}
    assert canonical["loops"] == {
        "max_identical_calls": 2,
        "window": 3,
        "max_cycle_repeats": None,
        "max_cycle_length": None,  # it applies to cycles only
        "ignore_arguments": False,
    }
    cycles = Policy.from_dict(doc(loops={"max_cycle_repeats": 2})).to_dict()["loops"]
    assert cycles["max_cycle_length"] == 4
    assert canonical["relations"][0]["if_missing"] == "fail"


# ---- accepted documents (parser and schema) ---------------------------------------------------

VALID = {
    "provenance-minimal": doc(provenance=PROVENANCE),
    "provenance-all-tools": doc(
        provenance={
            "untrusted": {"all_tools": True, "output_patterns": ["<information>"]},
            "trusted_tools": ["lookup"],
            "sinks": [
                {"tool": "send_money", "argument": "/recipient", "description": "d"},
                {"tool": "refund", "argument": "order_id", "extract": "[a-z]+-[0-9]+"},
            ],
            "min_value_length": 1,
        }
    ),
    "condition-forbid": doc(
        conditions=[{"tool": "refund", "when": {"amount": {"min": 0, "max": 10}}, "forbid": True}]
    ),
    "condition-prior-match": doc(
        conditions=[
            {
                "tool": "refund",
                "require_prior": ["approve", {"tool": "lookup", "match": {"order_id": "order_id"}}],
            }
        ]
    ),
    "condition-every-test": doc(
        conditions=[
            {
                "tool": "send_money",
                "when": {
                    "recipient": {"equals": "x", "enum": ["x", 1], "pattern": "x+"},
                    "amount": {"exclusive_min": 0, "exclusive_max": 5, "not": {"equals": 3}},
                    "/recipient/*": {"pattern": "y", "min_count": 2},
                },
                "forbid": True,
            }
        ]
    ),
    "relation": doc(relations=[RELATION]),
    "relation-in-wildcards": doc(
        relations=[
            {
                "tool": "approve",
                "argument": "/items/*/sku",
                "op": "in",
                "source": {"tool": "lookup", "output": "/items/*/sku"},
                "if_missing": "skip",
            }
        ]
    ),
    "relation-whole-output": doc(
        relations=[
            {
                "tool": "refund",
                "argument": "order_id",
                "op": "==",
                "source": {"tool": "lookup", "output": ""},
            }
        ]
    ),
    "relation-count-times-plus": doc(
        relations=[
            {
                "tool": "refund",
                "argument": {"count": "/amount/*"},
                "op": "in",
                "source": {
                    "tool": ["lookup", "refund"],
                    "output": {"count": {"pattern": "item: (?P<value>\\S+)"}},
                    "match": {"order_id": "order_id"},
                    "when": {"/status": {"equals": "open"}, "": {"pattern": "(?s).*"}},
                    "times": [50, 100.5],
                    "plus": -1,
                },
            }
        ]
    ),
    "relation-pattern-and-pointer-objects": doc(
        relations=[
            {
                "tool": "refund",
                "argument": "amount",
                "op": "<=",
                "source": {
                    "tool": "lookup",
                    "output": {"pattern": "^total: (?P<value>[0-9.]+)$", "pointer": None},
                    "times": 2,
                    "when": None,
                    "plus": None,
                },
            },
            {
                "tool": "refund",
                "argument": "amount",
                "op": "==",
                "source": {"tool": "lookup", "output": {"count": {"pointer": "/items"}}},
            },
        ]
    ),
    "provenance-fields-and-require": doc(
        provenance={
            "untrusted": {"tools": ["read_inbox"]},
            "fields": [
                {"tool": "read_inbox", "pattern": "^to: (?P<value>\\S+)$", "trust": "trusted"},
                {"tool": "lookup", "pointer": "/notes/*", "trust": "untrusted"},
            ],
            "trusted_tools": ["lookup"],
            "sinks": [
                {
                    "tool": "send_money",
                    "argument": "recipient",
                    "min_value_length": 2,
                    "require": {"sources": ["user", "trusted", "policy"], "values": ["x1"]},
                },
                {
                    "tool": "refund",
                    "argument": "order_id",
                    "require": {"sources": ["user"], "match": "exact"},
                },
            ],
        }
    ),
    "confirmation-default": doc(confirmation={}),
    "confirmation-listed": doc(confirmation={"tools": ["refund"], "pattern": "confirm"}),
    "confirmation-per-tool": doc(
        confirmation={
            "tools": [
                "refund",
                {"tool": "send_money", "pattern": "\\bconfirm\\b", "state": ["recipient"]},
                {"tools": ["approve", "lookup"], "description": "account changes"},
            ],
            "separate_text_and_calls": True,
        }
    ),
    "confirmation-separate-off": doc(confirmation={"separate_text_and_calls": False}),
    "loops-identical": doc(loops={"max_identical_calls": 1, "window": 2}),
    "loops-cycles": doc(
        loops={"max_cycle_repeats": 1, "max_cycle_length": 16, "ignore_arguments": True}
    ),
    "unlisted-tools": {
        "schema_version": "1.1",
        "policy_id": "p",
        "allow_unlisted_tools": True,
        "conditions": [{"tool": "anything", "require_prior": ["other"]}],
        "confirmation": {"tools": ["anything"]},
    },
    "empty-lists": doc(conditions=[], relations=[]),
}


@pytest.mark.parametrize("document", VALID.values(), ids=VALID.keys())
def test_valid_1_1_policy_is_accepted_by_parser_and_schema(document: Any) -> None:
    Policy.from_dict(document)
    assert [e.message for e in schema_validator("policy").iter_errors(document)] == []


@pytest.mark.parametrize("path", SAMPLE_POLICIES, ids=[p.name for p in SAMPLE_POLICIES])
def test_sample_policies_are_valid(path: Any) -> None:
    document = load_json(path)
    Policy.from_dict(document)
    assert [e.message for e in schema_validator("policy").iter_errors(document)] == []


# ---- rejected documents: the parser's pointer and message, and the schema ---------------------

P, C, R = ("provenance",), ("conditions", 0), ("relations", 0)
BASE_P, BASE_C, BASE_R = (
    doc(provenance=PROVENANCE),
    doc(conditions=[CONDITION]),
    doc(relations=[RELATION]),
)

INVALID: dict[str, tuple[Any, str, str]] = {
    # provenance
    "provenance-array": (doc(provenance=[]), "/provenance", "must be an object"),
    "provenance-unknown-key": (
        with_value(BASE_P, (*P, "sink"), []),
        "/provenance/sink",
        "did you mean 'sinks'?",
    ),
    "no-untrusted": (
        doc(provenance={"sinks": PROVENANCE["sinks"]}),
        "/provenance",
        "missing required field 'untrusted'",
    ),
    "untrusted-empty": (
        with_value(BASE_P, (*P, "untrusted"), {}),
        "/provenance/untrusted",
        "name the untrusted tools",
    ),
    "untrusted-both": (
        with_value(BASE_P, (*P, "untrusted"), {"tools": ["read_inbox"], "all_tools": True}),
        "/provenance/untrusted",
        "either tools or all_tools",
    ),
    "untrusted-tool-unknown": (
        with_value(BASE_P, (*P, "untrusted", "tools"), ["read_inbx"]),
        "/provenance/untrusted/tools/0",
        "not in allowed_tools",
    ),
    "output-pattern-empty-match": (
        with_value(BASE_P, (*P, "untrusted", "output_patterns"), ["x*"]),
        "/provenance/untrusted/output_patterns/0",
        "matches the empty string",
    ),
    "output-pattern-zero-width": (
        with_value(BASE_P, (*P, "untrusted", "output_patterns"), ["\\b"]),
        "/provenance/untrusted/output_patterns/0",
        "can match without consuming a character",
    ),
    "output-pattern-invalid": (
        with_value(BASE_P, (*P, "untrusted", "output_patterns"), ["("]),
        "/provenance/untrusted/output_patterns/0",
        "invalid regular expression",
    ),
    "output-patterns-empty": (
        with_value(BASE_P, (*P, "untrusted", "output_patterns"), []),
        "/provenance/untrusted/output_patterns",
        "non-empty array",
    ),
    "trusted-and-untrusted": (
        with_value(BASE_P, (*P, "trusted_tools"), ["read_inbox"]),
        "/provenance/trusted_tools/0",
        "both untrusted and trusted",
    ),
    "no-sinks": (
        with_value(BASE_P, (*P, "sinks"), []),
        "/provenance/sinks",
        "non-empty array",
    ),
    "sink-unknown-argument": (
        with_value(BASE_P, (*P, "sinks", 0, "argument"), "recipent"),
        "/provenance/sinks/0/argument",
        "declares no argument 'recipent'",
    ),
    "sink-twice": (
        with_value(BASE_P, (*P, "sinks"), PROVENANCE["sinks"] * 2),
        "/provenance/sinks/1",
        "listed twice",
    ),
    "sink-twice-spelt-differently": (
        with_value(
            BASE_P,
            (*P, "sinks"),
            [
                {"tool": "send_money", "argument": "recipient"},
                {"tool": "send_money", "argument": "/recipient"},
            ],
        ),
        "/provenance/sinks/1",
        "sink send_money./recipient is listed twice",
    ),
    "sink-inside-another": (
        with_value(
            BASE_P,
            (*P, "sinks"),
            [
                {"tool": "send_money", "argument": "/recipient/*"},
                {"tool": "send_money", "argument": "recipient"},
            ],
        ),
        "/provenance/sinks/1",
        "sink send_money.recipient overlaps the sink send_money./recipient/*",
    ),
    "sink-argument-bad-escape": (
        with_value(BASE_P, (*P, "sinks", 0, "argument"), "/recipient~~"),
        "/provenance/sinks/0/argument",
        "invalid JSON pointer '/recipient~~'",
    ),
    "sink-no-argument": (
        with_value(BASE_P, (*P, "sinks", 0), {"tool": "send_money"}),
        "/provenance/sinks/0",
        "missing required field 'argument'",
    ),
    "extract-empty-match": (
        with_value(BASE_P, (*P, "sinks", 0, "extract"), "[0-9]*"),
        "/provenance/sinks/0/extract",
        "matches the empty string",
    ),
    "extract-zero-width": (
        with_value(BASE_P, (*P, "sinks", 0, "extract"), "(?=[0-9])"),
        "/provenance/sinks/0/extract",
        "can match without consuming a character",
    ),
    "field-without-trust": (
        with_value(BASE_P, (*P, "fields"), [{"tool": "read_inbox", "pointer": "/x"}]),
        "/provenance/fields/0",
        "'trust'",
    ),
    "field-pointer-and-pattern": (
        with_value(
            BASE_P,
            (*P, "fields"),
            [
                {
                    "tool": "read_inbox",
                    "pointer": "/x",
                    "pattern": "(?P<value>x)",
                    "trust": "trusted",
                }
            ],
        ),
        "/provenance/fields/0",
        "not both",
    ),
    "field-pattern-without-value-group": (
        with_value(
            BASE_P,
            (*P, "fields"),
            [{"tool": "read_inbox", "pattern": "to: (x)", "trust": "trusted"}],
        ),
        "/provenance/fields/0/pattern",
        "no group named 'value'",
    ),
    "field-tool-unknown": (
        with_value(BASE_P, (*P, "fields"), [{"tool": "nope", "pointer": "", "trust": "trusted"}]),
        "/provenance/fields/0/tool",
        "not in allowed_tools",
    ),
    "sink-min-value-length-zero": (
        with_value(BASE_P, (*P, "sinks", 0, "min_value_length"), 0),
        "/provenance/sinks/0/min_value_length",
        ">= 1",
    ),
    "require-unknown-source": (
        with_value(BASE_P, (*P, "sinks", 0, "require"), {"sources": ["web"]}),
        "/provenance/sinks/0/require/sources/0",
        "must be one of",
    ),
    "require-values-without-policy": (
        with_value(BASE_P, (*P, "sinks", 0, "require"), {"sources": ["user"], "values": ["x"]}),
        "/provenance/sinks/0/require/sources",
        "'policy'",
    ),
    "require-unknown-match": (
        with_value(BASE_P, (*P, "sinks", 0, "require"), {"sources": ["user"], "match": "fuzzy"}),
        "/provenance/sinks/0/require/match",
        "must be one of",
    ),
    "extract-risky": (
        with_value(BASE_P, (*P, "sinks", 0, "extract"), "(a+)+b"),
        "/provenance/sinks/0/extract",
        "--allow-risky-patterns",
    ),
    "min-length-0": (
        with_value(BASE_P, (*P, "min_value_length"), 0),
        "/provenance/min_value_length",
        "integer >= 1",
    ),
    # conditions
    "conditions-object": (doc(conditions={}), "/conditions", "must be an array"),
    "condition-unknown-key": (
        with_value(BASE_C, (*C, "forbidden"), True),
        "/conditions/0/forbidden",
        "did you mean 'forbid'?",
    ),
    "condition-no-tool": (doc(conditions=[{"forbid": True}]), "/conditions/0", "'tool'"),
    "condition-both": (
        with_value(BASE_C, (*C, "forbid"), True),
        "/conditions/0",
        "exactly one of forbid",
    ),
    "condition-neither": (
        doc(conditions=[{"tool": "refund"}]),
        "/conditions/0",
        "exactly one of forbid",
    ),
    "condition-prior-unknown": (
        with_value(BASE_C, (*C, "require_prior"), ["aprove"]),
        "/conditions/0/require_prior/0",
        "not in allowed_tools",
    ),
    "condition-prior-match-wildcard": (
        with_value(
            BASE_C,
            (*C, "require_prior"),
            [{"tool": "lookup", "match": {"/order_id/*": "order_id"}}],
        ),
        "/conditions/0/require_prior/0/match/~1order_id~1*",
        "'*' is not allowed",
    ),
    "condition-prior-match-unknown-argument": (
        with_value(
            BASE_C, (*C, "require_prior"), [{"tool": "lookup", "match": {"order_id": "order"}}]
        ),
        "/conditions/0/require_prior/0/match/order_id",
        "declares no argument 'order'",
    ),
    "when-unknown-argument": (
        with_value(BASE_C, (*C, "when"), {"amout": {"min": 1}}),
        "/conditions/0/when/amout",
        "declares no argument 'amout'",
    ),
    "when-unknown-test": (
        with_value(BASE_C, (*C, "when"), {"amount": {"greater": 1}}),
        "/conditions/0/when/amount/greater",
        "unknown key 'greater'",
    ),
    "when-no-test": (
        with_value(BASE_C, (*C, "when"), {"amount": {}}),
        "/conditions/0/when/amount",
        "at least one of",
    ),
    "when-min-above-max": (
        with_value(BASE_C, (*C, "when"), {"amount": {"min": 5, "max": 1}}),
        "/conditions/0/when/amount",
        "exceeds max",
    ),
    "when-empty-exclusive-range": (
        with_value(BASE_C, (*C, "when"), {"amount": {"exclusive_min": 5, "exclusive_max": 5}}),
        "/conditions/0/when/amount",
        "no number is within exclusive_min 5 and exclusive_max 5, so the test never holds",
    ),
    "when-empty-half-open-range": (
        with_value(BASE_C, (*C, "when"), {"amount": {"min": 1, "exclusive_min": 4, "max": 4}}),
        "/conditions/0/when/amount",
        "no number is within exclusive_min 4 and max 4",
    ),
    "when-count-without-wildcard": (
        with_value(BASE_C, (*C, "when"), {"amount": {"min": 1, "min_count": 2}}),
        "/conditions/0/when/amount/min_count",
        "needs a path with a '*'",
    ),
    "when-count-inside-not": (
        with_value(BASE_C, (*C, "when"), {"/amount/*": {"not": {"min": 1, "min_count": 2}}}),
        "/conditions/0/when/~1amount~1*/not/min_count",
        "unknown key 'min_count'",
    ),
    "when-bound-string": (
        with_value(BASE_C, (*C, "when"), {"amount": {"min": "1"}}),
        "/conditions/0/when/amount/min",
        "finite number",
    ),
    "when-pattern-invalid": (
        with_value(BASE_C, (*C, "when"), {"order_id": {"pattern": "["}}),
        "/conditions/0/when/order_id/pattern",
        "invalid regular expression",
    ),
    # RFC 6901: '~' is followed by 0 or 1, in policy paths as in --messages-at (one parser)
    "when-pointer-bad-escape": (
        with_value(BASE_C, (*C, "when"), {"/amount~2": {"min": 1}}),
        "/conditions/0/when/~1amount~02",
        "invalid JSON pointer '/amount~2': '~' must be followed by 0 or 1 (~0 is '~', ~1 is '/')",
    ),
    "prior-match-pointer-bad-escape": (
        with_value(
            BASE_C, (*C, "require_prior"), [{"tool": "lookup", "match": {"order_id": "/order_id~"}}]
        ),
        "/conditions/0/require_prior/0/match/order_id",
        "invalid JSON pointer '/order_id~'",
    ),
    "condition-names-repeat": (
        doc(conditions=[CONDITION, CONDITION]),
        "/conditions/1/name",
        "already used by /conditions/0",
    ),
    # relations
    "relation-unknown-op": (
        with_value(BASE_R, (*R, "op"), "=<"),
        "/relations/0/op",
        "unknown operator '=<'",
    ),
    "relation-no-source": (
        doc(relations=[{k: v for k, v in RELATION.items() if k != "source"}]),
        "/relations/0",
        "missing required field 'source'",
    ),
    "relation-output-not-pointer": (
        with_value(BASE_R, (*R, "source", "output"), "total"),
        "/relations/0/source/output",
        "must be a JSON pointer",
    ),
    "relation-output-bad-escape": (
        with_value(BASE_R, (*R, "source", "output"), "/total~x"),
        "/relations/0/source/output",
        "invalid JSON pointer '/total~x'",
    ),
    "relation-compare-with-many": (
        with_value(BASE_R, (*R, "source", "output"), "/items/*/price"),
        "/relations/0/source/output",
        "needs 'in' or 'not_in'",
    ),
    "relation-if-missing": (
        with_value(BASE_R, (*R, "if_missing"), "warn"),
        "/relations/0/if_missing",
        "'fail' or 'skip'",
    ),
    "relation-source-tool-unknown": (
        with_value(BASE_R, (*R, "source", "tool"), "lookups"),
        "/relations/0/source/tool",
        "not in allowed_tools",
    ),
    "relation-several-factors-with-a-comparison": (
        with_value(BASE_R, (*R, "source", "times"), [50, 100]),
        "/relations/0/source/times",
        "several factors (several values) needs 'in' or 'not_in'",
    ),
    "relation-factor-twice": (
        with_value(BASE_R, (*R, "source", "times"), [1, 1.0]),
        "/relations/0/source/times",
        "lists a factor more than once",
    ),
    "relation-no-factors": (
        with_value(BASE_R, (*R, "source", "times"), []),
        "/relations/0/source/times",
        "must be a number or an array of 1 to 16 numbers",
    ),
    "relation-factor-boolean": (
        with_value(BASE_R, (*R, "source", "times"), [True]),
        "/relations/0/source/times/0",
        "must be a finite number, got boolean",
    ),
    "relation-plus-string": (
        with_value(BASE_R, (*R, "source", "plus"), "1"),
        "/relations/0/source/plus",
        "must be a finite number, got string",
    ),
    "relation-output-number": (
        with_value(BASE_R, (*R, "source", "output"), 3),
        "/relations/0/source/output",
        "must be a JSON pointer, a {pointer} or {pattern} object, or {count: ...}, got number",
    ),
    "relation-count-of-count": (
        with_value(BASE_R, (*R, "source", "output"), {"count": {"count": "/items/*"}}),
        "/relations/0/source/output/count/count",
        "unknown key 'count'",
    ),
    "relation-count-null": (
        with_value(BASE_R, (*R, "source", "output"), {"count": None}),
        "/relations/0/source/output/count",
        "must be a JSON pointer or a {pointer} or {pattern} object",
    ),
    "relation-count-with-other-key": (
        with_value(BASE_R, (*R, "source", "output"), {"count": "/items/*", "pointer": "/x"}),
        "/relations/0/source/output/pointer",
        "unknown key 'pointer'",
    ),
    "relation-count-of-many-compared": (
        with_value(BASE_R, (*R, "source", "output"), {"pointer": "/items/*/price"}),
        "/relations/0/source/output",
        "'*' (several values) needs 'in' or 'not_in'",
    ),
    "relation-pattern-without-value": (
        with_value(BASE_R, (*R, "source", "output"), {"pattern": "total: ([0-9]+)"}),
        "/relations/0/source/output/pattern",
        "has no group named 'value'",
    ),
    "relation-pattern-empty-match": (
        with_value(BASE_R, (*R, "source", "output"), {"pattern": "(?P<value>[0-9]*)"}),
        "/relations/0/source/output/pattern",
        "matches the empty string",
    ),
    "relation-argument-count-unknown-argument": (
        with_value(BASE_R, (*R, "argument"), {"count": "/amout/*"}),
        "/relations/0/argument/count",
        "declares no argument 'amout'",
    ),
    "relation-argument-object-without-count": (
        with_value(BASE_R, (*R, "argument"), {"path": "amount"}),
        "/relations/0/argument/path",
        "unknown key 'path'",
    ),
    "relation-argument-count-null": (
        with_value(BASE_R, (*R, "argument"), {"count": None}),
        "/relations/0/argument",
        "missing required field 'count'",
    ),
    "relation-source-tools-empty": (
        with_value(BASE_R, (*R, "source", "tool"), []),
        "/relations/0/source/tool",
        "must be a tool name or a non-empty array of tool names",
    ),
    "relation-source-tools-repeat": (
        with_value(BASE_R, (*R, "source", "tool"), ["lookup", "lookup"]),
        "/relations/0/source/tool/1",
        "lists 'lookup' more than once",
    ),
    "relation-source-tools-unknown": (
        with_value(BASE_R, (*R, "source", "tool"), ["lookup", "lookups"]),
        "/relations/0/source/tool/1",
        "not in allowed_tools",
    ),
    "relation-source-tools-match-argument": (
        with_value(BASE_R, (*R, "source", "tool"), ["lookup", "send_money"]),
        "/relations/0/source/match/order_id",
        "declares no argument 'order_id'",
    ),
    "relation-source-when-not-pointer": (
        with_value(BASE_R, (*R, "source", "when"), {"status": {"equals": "open"}}),
        "/relations/0/source/when/status",
        "must be a JSON pointer",
    ),
    "relation-source-when-no-test": (
        with_value(BASE_R, (*R, "source", "when"), {"/status": {}}),
        "/relations/0/source/when/~1status",
        "at least one of",
    ),
    # confirmation
    "confirmation-tools-empty": (
        doc(confirmation={"tools": []}),
        "/confirmation/tools",
        "at least one tool",
    ),
    "confirmation-nothing-to-guard": (
        {"schema_version": "1.1", "policy_id": "p", "confirmation": {}},
        "/confirmation",
        "no tool to guard",
    ),
    "confirmation-pattern-empty-match": (
        doc(confirmation={"pattern": "(yes)?"}),
        "/confirmation/pattern",
        "matches the empty string",
    ),
    "confirmation-pattern-zero-width": (
        doc(confirmation={"pattern": "yes|\\b"}),
        "/confirmation/pattern",
        "can match without consuming a character",
    ),
    "confirmation-entry-both": (
        doc(confirmation={"tools": [{"tool": "refund", "tools": ["approve"]}]}),
        "/confirmation/tools/0",
        "exactly one of 'tool' (one tool) and 'tools' (a group)",
    ),
    "confirmation-entry-neither": (
        doc(confirmation={"tools": [{"pattern": "ok"}]}),
        "/confirmation/tools/0",
        "exactly one of 'tool' (one tool) and 'tools' (a group)",
    ),
    "confirmation-entry-unknown-key": (
        doc(confirmation={"tools": [{"tool": "refund", "states": ["amount"]}]}),
        "/confirmation/tools/0/states",
        "did you mean 'state'?",
    ),
    "confirmation-entry-not-object": (
        doc(confirmation={"tools": [3]}),
        "/confirmation/tools/0",
        "must be a non-empty tool name string or an object",
    ),
    "confirmation-entry-group-empty": (
        doc(confirmation={"tools": [{"tools": []}]}),
        "/confirmation/tools/0/tools",
        "at least one tool",
    ),
    "confirmation-tool-twice": (
        doc(confirmation={"tools": ["refund", {"tools": ["approve", "refund"]}]}),
        "/confirmation/tools/1",
        "lists 'refund' more than once (at /confirmation/tools/0)",
    ),
    "confirmation-entry-tool-unknown": (
        doc(confirmation={"tools": [{"tool": "refunds"}]}),
        "/confirmation/tools/0/tool",
        "not in allowed_tools",
    ),
    "confirmation-entry-pattern-empty-match": (
        doc(confirmation={"tools": [{"tool": "refund", "pattern": "(ok)?"}]}),
        "/confirmation/tools/0/pattern",
        "matches the empty string",
    ),
    "confirmation-state-empty": (
        doc(confirmation={"tools": [{"tool": "refund", "state": []}]}),
        "/confirmation/tools/0/state",
        "non-empty array of argument paths",
    ),
    "confirmation-state-unknown-argument": (
        doc(confirmation={"tools": [{"tool": "refund", "state": ["/order/id"]}]}),
        "/confirmation/tools/0/state/0",
        "declares no argument 'order'",
    ),
    "confirmation-state-twice": (
        doc(confirmation={"tools": [{"tool": "refund", "state": ["amount", "/amount"]}]}),
        "/confirmation/tools/0/state/1",
        "already listed at index 0",
    ),
    "confirmation-separate-not-boolean": (
        doc(confirmation={"separate_text_and_calls": "yes"}),
        "/confirmation/separate_text_and_calls",
        "must be true or false",
    ),
    "confirmation-unknown-key": (
        doc(confirmation={"pattern": "yes", "tool": ["refund"]}),
        "/confirmation/tool",
        "did you mean 'tools'?",
    ),
    # loops
    "loops-no-limit": (doc(loops={"window": 3}), "/loops", "sets no limit"),
    "loops-window-alone": (
        doc(loops={"max_cycle_repeats": 2, "window": 3}),
        "/loops/window",
        "applies to max_identical_calls",
    ),
    "loops-window-too-small": (
        doc(loops={"max_identical_calls": 3, "window": 3}),
        "/loops/window",
        "can never hold more",
    ),
    "loops-cycle-length-alone": (
        doc(loops={"max_identical_calls": 3, "max_cycle_length": 3}),
        "/loops/max_cycle_length",
        "applies to max_cycle_repeats",
    ),
    "loops-cycle-length-too-long": (
        doc(loops={"max_cycle_repeats": 3, "max_cycle_length": 17}),
        "/loops/max_cycle_length",
        "from 2 to 16",
    ),
    "loops-zero": (doc(loops={"max_identical_calls": 0}), "/loops/max_identical_calls", ">= 1"),
    "loops-fraction": (doc(loops={"max_cycle_repeats": 1.5}), "/loops/max_cycle_repeats", ">= 1"),
}
# Checks the JSON Schema cannot express: the parser is stricter there (see the schema's
# description). Every other invalid document must be refused by the schema too.
GAPS = {
    # Python regular expressions: the schema does not mark them format "regex" (ECMA-262)
    "output-pattern-invalid",
    "when-pattern-invalid",
    "untrusted-tool-unknown",
    "output-pattern-empty-match",
    "output-pattern-zero-width",
    "trusted-and-untrusted",
    "sink-unknown-argument",
    "sink-twice",
    "sink-twice-spelt-differently",
    "sink-inside-another",
    "extract-empty-match",
    "extract-zero-width",
    "extract-risky",
    "field-pattern-without-value-group",
    "field-tool-unknown",
    "require-values-without-policy",
    "condition-prior-unknown",
    "condition-prior-match-wildcard",
    "condition-prior-match-unknown-argument",
    "when-unknown-argument",
    "when-min-above-max",
    "when-empty-exclusive-range",
    "when-empty-half-open-range",
    "when-count-without-wildcard",
    "condition-names-repeat",
    "relation-compare-with-many",
    "relation-source-tool-unknown",
    "relation-several-factors-with-a-comparison",
    "relation-count-of-many-compared",
    "relation-pattern-without-value",
    "relation-pattern-empty-match",
    "relation-argument-count-unknown-argument",
    "relation-source-tools-unknown",
    "relation-source-tools-match-argument",
    "confirmation-nothing-to-guard",
    "confirmation-pattern-empty-match",
    "confirmation-pattern-zero-width",
    "confirmation-tool-twice",
    "confirmation-entry-tool-unknown",
    "confirmation-entry-pattern-empty-match",
    "confirmation-state-unknown-argument",
    "confirmation-state-twice",
    "loops-window-alone",
    "loops-window-too-small",
    "loops-cycle-length-alone",
}


@pytest.mark.parametrize(("name", "case"), INVALID.items(), ids=INVALID.keys())
def test_invalid_1_1_policy_is_rejected(name: str, case: tuple[Any, str, str]) -> None:
    document, pointer, fragment = case
    error = rejected(document)
    assert (error.pointer, fragment in error.message) == (pointer, True), error.message
    assert schema_validator("policy").is_valid(document) == (name in GAPS)


def test_policy_paths_and_command_line_pointers_follow_one_rule(arh: Callable[..., Run]) -> None:
    # '~2' was accepted in a policy path (as the member 'amount~2') and refused by --messages-at
    document = with_value(BASE_R, (*R, "argument"), "/amount~2")
    message = rejected(document).message
    run = arh("convert", "--messages-at", "/amount~2", "x.json")
    assert run.status == 2
    assert run.err.splitlines()[-1] == f"arh convert: error: argument --messages-at: {message}"


def test_risky_patterns_can_be_accepted_as_warnings() -> None:
    document = with_value(BASE_P, (*P, "sinks", 0, "extract"), "(a+)+b")
    policy = Policy.from_dict(document, allow_risky_patterns=True)
    message = (
        "/provenance/sinks/0/extract: pattern '(a+)+b' nests a repetition of varying length inside "
        "another (as in '(a+)+' or '(a{1,2})+'), so matching can take exponential time on some "
        "texts"
    )
    assert policy.warnings == (message,)


# ---- the building blocks ----------------------------------------------------------------------


def test_json_key_equality() -> None:
    assert json_key(1) == json_key(1.0)
    assert json_key(True) != json_key(1)
    assert json_key(None) != json_key(False)
    assert json_key({"a": [1, "x"], "b": None}) == json_key({"b": None, "a": [1.0, "x"]})
    assert json_key([1, 2]) != json_key([2, 1])
    assert json_key("1") != json_key(1)


def path(text: str) -> ArgPath:
    return ArgPath.parse(text, "")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("amount", [5]),
        ("/amount", [5]),
        ("/items/*/sku", ["a", "b"]),
        ("/items/1/sku", ["b"]),
        ("/items/01/sku", []),  # not an array index
        ("/items/-1/sku", []),  # policy paths do not count from the end
        ("/items/\u0661/sku", []),  # a digit, but not an ASCII one
        ("/items/" + "1" * 5000 + "/sku", []),  # int() refuses it: once a ValueError
        ("/items/9/sku", []),
        ("/meta/*", [1, 2]),
        ("/a~1b", ["slash"]),
        ("/t~0", ["tilde"]),
        ("t~2", ["name"]),  # an argument's name, not a pointer: any text
        ("/missing/*", []),
        ("/amount/*", []),
    ],
)
def test_paths_collect_values(text: str, expected: list[Any]) -> None:
    arguments = {
        "amount": 5,
        "items": [{"sku": "a"}, {"sku": "b"}, {"no": 1}],
        "meta": {"x": 1, "y": 2},
        "a/b": "slash",
        "t~": "tilde",
        "t~2": "name",
    }
    assert collect(arguments, path(text)) == expected


def predicate(raw: dict[str, Any]) -> Predicate:
    return Predicate.parse(raw, "", [])


@pytest.mark.parametrize(
    ("raw", "value", "holds"),
    [
        ({"equals": 1}, 1.0, True),
        ({"equals": 1}, True, False),
        ({"equals": "a"}, "A", False),
        ({"enum": [1, "x"]}, "x", True),
        ({"enum": [1, "x"]}, 2, False),
        ({"pattern": "a.c"}, "abc", True),
        ({"pattern": "a.c"}, "abcd", False),  # a full match
        ({"pattern": "1"}, 1, False),  # a pattern needs a string
        ({"min": 1, "max": 2}, 2, True),
        ({"min": 1, "max": 2}, 2.5, False),
        ({"exclusive_min": 100}, 100, False),
        ({"exclusive_min": 100}, 100.01, True),
        ({"exclusive_max": 0}, -1, True),
        ({"min": 0}, True, False),  # booleans are not numbers
        ({"min": 0}, "5", False),
        ({"not": {"pattern": ".*@example\\.com"}}, "eve@evil.example", True),
        ({"not": {"pattern": ".*@example\\.com"}}, "ann@example.com", False),
        ({"not": {"min": 10}}, "text", True),  # the negation of a failed type test holds
        ({"min": 1, "not": {"equals": 3}}, 3, False),
    ],
)
def test_predicates(raw: dict[str, Any], value: object, holds: bool) -> None:
    assert predicate(raw).holds(value) is holds


@pytest.mark.parametrize("key", ["equals", "enum"])
def test_deeply_nested_values_are_an_input_error(key: str) -> None:
    # A value nested deeper than the interpreter can compare (a policy built in Python; the JSON
    # reader refuses such files already) is an input error, never a RecursionError.
    value: Any = []
    for _ in range(5000):
        value = [value]
    clause = {key: [value] if key == "enum" else value}
    error = rejected(
        doc(conditions=[{"tool": "refund", "when": {"amount": clause}, "forbid": True}])
    )
    assert "nested too deeply" in error.message


def test_1_1_rules_on_deeply_nested_trace_values_are_an_input_error() -> None:
    value: Any = "x"
    for _ in range(5000):
        value = [value]
    policy = Policy.from_dict(
        doc(conditions=[{"tool": "refund", "when": {"amount": {"equals": 1}}, "forbid": True}])
    )
    trace = Trace.from_dict(
        {
            "trace_id": "t",
            "agent_name": "a",
            "workflow": "w",
            "steps": [
                {
                    "step_id": "s1",
                    "type": "tool_call",
                    "tool_name": "refund",
                    "arguments": {"order_id": "A", "amount": value},
                }
            ],
        }
    )
    with pytest.raises(InputError, match="nested too deeply"):
        validate_trace(trace, policy)


def test_relation_references_round_trip_and_old_relations_keep_their_form() -> None:
    policy = Policy.from_dict(VALID["relation-count-times-plus"])
    canonical = policy.to_dict()
    again = Policy.from_dict(json.loads(json.dumps(canonical)))
    assert (again.to_dict(), again.sha256) == (canonical, policy.sha256)
    assert canonical["relations"][0]["source"]["times"] == [50, 100.5]
    # a relation written before the new keys is written out as before (its hash is unchanged)
    plain = Policy.from_dict(doc(relations=[RELATION])).to_dict()["relations"][0]
    assert plain["source"] == RELATION["source"]
    assert plain["argument"] == "amount"
    # {"pointer": p} means p
    spelled = with_value(BASE_R, (*R, "source", "output"), {"pointer": "/total"})
    assert Policy.from_dict(spelled).sha256 == Policy.from_dict(BASE_R).sha256
