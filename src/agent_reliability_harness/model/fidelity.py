"""Fidelity of converted traces: the canonical fields a source format could not provide, and the
checks of a policy that are therefore not applicable.

An adapter records the fields its source gave for none of the steps they apply to in
``metadata.adapter.missing`` (TRACE-SPEC.md, "Fidelity of converted traces"). A check that needs
such a field cannot fail on that trace, so a pass would say nothing about it: the reports list
these checks as *not applicable* instead (each rule declares the fields its checks need:
``rules.registry.Need``). ``metadata`` is free-form, so a value there that is not
a list of the names below is ignored, never an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from agent_reliability_harness.model.trace import Trace


__all__ = [
    "MISSING_FIELDS",
    "NotApplicable",
    "declared_missing",
    "missing_fields",
    "not_applicable",
]

# The names an adapter may list in metadata.adapter.missing, and what each means.
MISSING_FIELDS: Final = {
    "latency_ms": "no step records latency_ms",
    "cost_usd": "no step records cost_usd",
    "tokens": "no step records input_tokens or output_tokens",
    "tool_output": "no tool call has its result",
    "tool_status": "no tool call says whether it failed",
    "tool_call_id": "no tool call has an id of its own",
}


@dataclass(frozen=True, slots=True)
class NotApplicable:
    """A check of the policy that a trace cannot be held to: ``rule_id`` would report it,
    ``check`` is the policy setting, and ``field`` the missing field it needs."""

    rule_id: str
    check: str
    field: str

    def to_dict(self) -> dict[str, Any]:
        return {"rule_id": self.rule_id, "check": self.check, "field": self.field}


def declared_missing(trace: Trace) -> frozenset[str]:
    """The known field names in the trace's ``metadata.adapter.missing`` (empty when absent or
    malformed)."""
    adapter = trace.metadata.get("adapter")
    missing = adapter.get("missing") if type(adapter) is dict else None
    if type(missing) is not list:
        return frozenset()
    return frozenset(name for name in missing if type(name) is str and name in MISSING_FIELDS)


def _present(trace: Trace) -> set[str]:
    """The fields of MISSING_FIELDS that a step of the trace has, in one pass. A hand-written
    trace can declare missing what it has; then the field's checks do run, and must not be
    reported as not applicable too."""
    present: set[str] = set()
    for step in trace.steps:
        if step.type == "user_message":
            continue
        if step.latency_ms is not None:
            present.add("latency_ms")
        if step.cost_usd is not None:
            present.add("cost_usd")
        if step.input_tokens is not None or step.output_tokens is not None:
            present.add("tokens")
        if step.type == "tool_call":
            if step.output is not None:
                present.add("tool_output")
            if step.status == "error":
                present.add("tool_status")
    return present


def missing_fields(trace: Trace) -> frozenset[str]:
    """The fields the trace's source did not provide: declared missing, and on no step (a
    field the trace declares missing but has on a step is not missing)."""
    declared = declared_missing(trace)
    return declared - _present(trace) if declared else declared


def not_applicable(
    missing: frozenset[str], plan: tuple[NotApplicable, ...]
) -> tuple[NotApplicable, ...]:
    """The checks of ``plan`` that need a field of ``missing`` (see :func:`missing_fields`)."""
    if not missing:
        return ()
    return tuple(check for check in plan if check.field in missing)
