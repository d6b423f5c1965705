"""Stable step references: what names a step in every recording of a run whose step ids do not.

An adapter names the steps of a converted transcript after the ids its source gave (tool-call
ids, span ids), which every new recording replaces, or after their positions in the transcript,
which move when a step is added or left out before them. It records which in
``metadata.adapter.step_ids`` (TRACE-SPEC.md, "Step ids of converted traces"). The steps of such
a trace also get a **step reference**, which is the same in every recording of the same run: the
n-th call of a tool is ``tool_call:<tool name>#<n>``, and any other step the n-th step of its
type (``model_response#<n>``, ``user_message#<n>``; a call without a tool name is
``tool_call#<n>``). Reports give a finding at such a step its reference, and ``arh compare``
matches the findings of these traces by reference instead of by step id
(docs/regression-testing.md).

A trace that does not declare ``step_ids`` (every trace written by hand or by an exporter with
ids of its own) has no references: its step ids name its steps, as they always did.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from agent_reliability_harness.model.trace import Step, Trace

__all__ = ["STEP_ID_ORIGINS", "declared_step_ids", "step_refs"]

# The values of metadata.adapter.step_ids, and what each says of the trace's step ids.
STEP_ID_ORIGINS: Final = {
    "provider": "every step id is, or is made from, an id of the source (a tool-call or span id)",
    "generated": "every step id was made by the adapter from the step's position",
    "mixed": "some step ids come from the source, the others were made by the adapter",
}


def declared_step_ids(trace: Trace) -> str | None:
    """The trace's ``metadata.adapter.step_ids`` when it is one of :data:`STEP_ID_ORIGINS`,
    else None (``metadata`` is free-form: anything else there is ignored, never an error)."""
    adapter = trace.metadata.get("adapter")
    origin = adapter.get("step_ids") if type(adapter) is dict else None
    return origin if type(origin) is str and origin in STEP_ID_ORIGINS else None


def step_refs(steps: Iterable[Step]) -> list[str]:
    """The reference of each step, in order (see the module docstring)."""
    seen: dict[str, int] = {}
    refs: list[str] = []
    for step in steps:
        if step.type == "tool_call":
            kind = f"tool_call:{step.tool_name}" if step.tool_name else "tool_call"
        else:
            kind = step.type
        number = seen[kind] = seen.get(kind, 0) + 1
        refs.append(f"{kind}#{number}")
    return refs
