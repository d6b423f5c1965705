"""The confirmation section's per-tool settings: patterns, ``state`` (ARH-CFM-003) and
``separate_text_and_calls`` (ARH-CFM-004).

The statement check searches each value once per window over the statements not yet searched for
it; the property tests hold it, and the runtime monitor, to the definition in POLICY-SPEC.md
written out naively below.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_reliability_harness import Policy, Trace, validate_trace
from agent_reliability_harness.rules.confirmation import normalise_words, state_values
from test_monitor import equivalence_problems
from test_policy11 import doc, path


def test_a_policy_of_the_old_syntax_keeps_its_canonical_form() -> None:
    policy = Policy.from_dict(doc(confirmation={"tools": ["refund"], "pattern": "ok"}))
    assert policy.to_dict()["confirmation"] == {"tools": ["refund"], "pattern": "ok"}


def test_the_canonical_form_keeps_the_entries_as_written_and_reparses() -> None:
    section = {
        "tools": [
            "refund",
            {"tool": "send_money", "pattern": "confirm", "state": ["recipient", "/amount"]},
            {"tools": ["approve", "lookup"]},
            {"tool": "read_inbox"},  # sets nothing: written as the bare name
        ],
        "separate_text_and_calls": True,
    }
    policy = Policy.from_dict(doc(confirmation=section))
    canonical = policy.to_dict()
    assert canonical["confirmation"] == {
        "tools": [
            "refund",
            {"tool": "send_money", "pattern": "confirm", "state": ["recipient", "/amount"]},
            {"tools": ["approve", "lookup"]},
            "read_inbox",
        ],
        "pattern": r"\byes\b",
        "separate_text_and_calls": True,
    }
    again = Policy.from_dict(json.loads(json.dumps(canonical)))
    assert again.to_dict() == canonical
    assert again.sha256 == policy.sha256
    extensions = policy.extensions
    assert extensions is not None
    assert extensions.confirmation is not None
    assert extensions.confirmation.tools == (
        "refund",
        "send_money",
        "approve",
        "lookup",
        "read_inbox",
    )


def test_words_are_compared_case_folded_without_punctuation_or_underscores() -> None:
    assert normalise_words("Flight HAT001, Basic-Economy!") == " flight hat001 basic economy "
    assert normalise_words("basic_economy") == " basic economy "
    assert normalise_words("STRASSE") == normalise_words("Straße")
    assert normalise_words(" \t") == "  "
    # whole words: "2" is in "2 bags" and not in "2024"
    assert " 2 " in normalise_words("2 bags")
    assert " 2 " not in normalise_words("in 2024")


def test_state_values_are_the_strings_and_numbers_at_the_paths() -> None:
    arguments: dict[str, Any] = {
        "id": "AB12CD",
        "flights": [{"number": "HAT001", "date": "2024-05-20"}, {"number": "hat001"}],
        "bags": 2,
        "price": 2.0,
        "rate": 0.5,
        "insured": True,
        "note": None,
        "empty": "--",
    }
    paths = tuple(path(p) for p in ("id", "/flights/*/number", "bags", "price", "rate"))
    assert [(w, v) for w, v, _ in state_values(arguments, paths)] == [
        ("/id", "AB12CD"),
        ("/flights/0/number", "HAT001"),  # /flights/1/number is the same words
        ("/bags", 2),  # /price (2.0) is the same words, "2"
        ("/rate", 0.5),
    ]
    nested = tuple(path(p) for p in ("/flights", "insured", "note", "empty", "missing"))
    assert [w for w, _, _ in state_values(arguments, nested)] == [
        "/flights/0/number",
        "/flights/0/date",
    ]


# ---- the definition, naively, against the rules and the monitor --------------------------------

POLICY = Policy.from_dict(
    {
        "schema_version": "1.1",
        "policy_id": "confirmation-property",
        "allow_unlisted_tools": True,
        "confirmation": {
            "tools": [
                {"tool": "pay", "state": ["to", "/items/*"]},
                {"tool": "reset", "pattern": "\\bconfirm\\b"},
                "book",
            ],
            "separate_text_and_calls": True,
        },
    }
)
_VALUES = ["AB-1", "ab_1", "Cd2", 7]
_SAID = ["pay AB 1", "cd2 and 7", "nothing", "7 items", "  "]


@st.composite
def _trace(draw: st.DrawFn) -> Trace:
    steps: list[dict[str, Any]] = []
    for index in range(draw(st.integers(0, 16))):
        kind = draw(st.sampled_from(["user", "text", "text", "pay", "reset", "book", "look"]))
        step: dict[str, Any] = {"step_id": f"s{index}"}
        if kind == "user":
            text = draw(st.sampled_from(["yes", "I confirm", "no", "yes, confirm"]))
            step.update(type="user_message", text=text)
        elif kind == "text":
            step.update(type="model_response", text=draw(st.sampled_from(_SAID)))
        else:
            status = draw(st.sampled_from(["ok", "error"]))
            step.update(type="tool_call", tool_name=kind, status=status)
            if kind == "pay":
                step["arguments"] = {
                    "to": draw(st.sampled_from(_VALUES)),
                    "items": draw(st.lists(st.sampled_from(_VALUES), max_size=2)),
                }
        steps.append(step)
    return Trace.from_dict({"trace_id": "gen", "agent_name": "", "workflow": "", "steps": steps})


def _expected(trace: Trace) -> list[tuple[str, str | None]]:
    """(rule, step id) of the confirmation findings by POLICY-SPEC.md's definition."""
    steps = trace.steps
    patterns = {"pay": "yes", "book": "yes", "reset": "confirm"}
    if all(s.type != "user_message" for s in steps):  # ARH-CFM-002 when a guarded call is made
        return [("ARH-CFM-002", None)] if any(s.tool_name in patterns for s in steps) else []
    out: list[tuple[str, str | None]] = []
    for at, step in enumerate(steps):
        if step.type != "tool_call":
            continue
        tool = step.tool_name or ""
        if tool in patterns:
            start = max(
                (
                    i
                    for i in range(at)
                    if steps[i].tool_name in patterns and steps[i].status == "ok"
                ),
                default=-1,
            )
            yeses = [
                i
                for i in range(start + 1, at)
                if steps[i].type == "user_message"
                and f" {patterns[tool]} " in normalise_words(steps[i].text or "")
            ]
            if not yeses:
                out.append(("ARH-CFM-001", step.step_id))
            elif tool == "pay":
                said = [
                    normalise_words(steps[i].text or "")
                    for i in range(start + 1, yeses[-1])
                    if steps[i].type == "model_response"
                ]
                arguments = step.arguments or {}
                values = [arguments["to"], *arguments["items"]]
                if any(
                    not any(f" {normalise_words(str(v)).strip()} " in text for text in said)
                    for v in values
                ):
                    out.append(("ARH-CFM-003", step.step_id))
        previous = steps[at - 1] if at else None
        if previous is not None and previous.type == "model_response" and previous.text.strip():
            out.append(("ARH-CFM-004", step.step_id))
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trace=_trace())
def test_the_rules_follow_the_definition(trace: Trace) -> None:
    found = [
        (f.rule_id, f.step_id)
        for f in validate_trace(trace, POLICY).findings
        if f.rule_id.startswith("ARH-CFM")
    ]
    assert found == _expected(trace)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trace=_trace(), intents=st.lists(st.booleans(), min_size=16, max_size=16))
def test_the_monitor_decides_them_before_the_call_as_offline_validation_does(
    trace: Trace, intents: list[bool]
) -> None:
    assert equivalence_problems(POLICY, trace, iter(intents)) == []


def test_the_finding_says_what_was_expected_and_what_was_seen() -> None:
    trace = Trace.from_dict(
        {
            "trace_id": "t",
            "agent_name": "",
            "workflow": "",
            "steps": [
                {"step_id": "u1", "type": "user_message", "text": "pay AB-1 and Cd2"},
                {"step_id": "r1", "type": "model_response", "text": "Paying AB-1. OK?"},
                {"step_id": "u2", "type": "user_message", "text": "yes"},
                {"step_id": "r2", "type": "model_response", "text": "Paying AB-1 and Cd2."},
                {
                    "step_id": "c1",
                    "type": "tool_call",
                    "tool_name": "pay",
                    "arguments": {"to": "AB-1", "items": ["Cd2", 7]},
                },
            ],
        }
    )
    stated, turn = validate_trace(trace, POLICY).findings
    assert (stated.rule_id, stated.step_id, stated.subject) == ("ARH-CFM-003", "c1", "pay")
    assert stated.message == (
        "'pay' was confirmed by the user at step 'u2' before the agent stated /items/0 = 'Cd2', "
        "/items/1 = 7"
    )
    assert stated.expected == (
        "a model_response mentioning each stated value after the start of the trace and before "
        "the confirmation at step 'u2'"
    )
    assert stated.observed == (
        "/items/0 = 'Cd2': first mentioned at step 'r2', after the confirmation; "
        "/items/1 = 7: not mentioned"
    )
    assert (turn.rule_id, turn.step_id) == ("ARH-CFM-004", "c1")
    assert turn.message == (
        "'pay' was called right after the agent's text at step 'r2', with no user message in "
        "between: the agent spoke to the user and acted in the same turn"
    )
    assert turn.observed == "the model_response at step 'r2' directly followed by this call"
