"""Structure lint: trace problems that are reported but never scored."""

from __future__ import annotations

from agent_reliability_harness.model.report import Finding
from agent_reliability_harness.rules._facts import TraceFacts
from agent_reliability_harness.rules.registry import rule

DUPLICATE_STEP_ID = rule(
    "ARH-SCH-010",
    category="schema",
    severity="warning",
    title="Step id is used more than once",
    trigger="Two or more steps share a step_id (steps of every type count, user_message "
    "included, because ids name positions of the whole trace). Not scored; findings anchored "
    "at that id become ambiguous.",
    scoring="None: structure lint findings are not scored.",
    anchor="the first step with that id",
    remediation="Give every step a unique step_id when recording the trace.",
)


def duplicate_step_id_finding(step_id: str, count: int, first: int) -> Finding:
    """ARH-SCH-010: ``count`` steps use ``step_id``, the first at position ``first``.

    Built here for evaluate() and for the runtime monitor alike, so both word it the same way.
    """
    return DUPLICATE_STEP_ID.finding(
        f"step_id {step_id!r} is used by {count} steps; step ids should be unique",
        at=first,
        step_id=step_id,
        expected="unique step ids",
        observed=f"{count} steps with id {step_id!r}",
    )


def evaluate(facts: TraceFacts, out: list[Finding]) -> None:
    first: dict[str, int] = {}
    counts: dict[str, int] = {}
    for at, step in enumerate(facts.steps):
        sid = step.step_id
        if sid in first:
            counts[sid] += 1
        else:
            first[sid] = at
            counts[sid] = 1
    for sid, count in counts.items():
        if count > 1:
            out.append(duplicate_step_id_finding(sid, count, first[sid]))
