"""Completion rules: a run ends with a usable answer and within its step limit."""

from __future__ import annotations

from typing import Final

from agent_reliability_harness.model.policy import Completion, Policy
from agent_reliability_harness.model.report import CategoryResult, Finding
from agent_reliability_harness.rules._facts import TraceFacts
from agent_reliability_harness.rules.online import Probe, Watch
from agent_reliability_harness.rules.registry import rule
from agent_reliability_harness.rules.ruleset import RuleSet
from agent_reliability_harness.rules.selection import Findings

CATEGORY = "completion"

NO_FINAL_RESPONSE = rule(
    "ARH-CMP-001",
    decided="at_end",
    category=CATEGORY,
    severity="error",
    title="Trace does not end with a successful final response",
    trigger="completion.require_final_response is true and the last step is not a "
    "model_response with status ok and non-blank text (or the trace has no steps). "
    "user_message steps are skipped: the last step is the last one that is not a user turn.",
    scoring="One failed completion check.",
    anchor="the last step that is not a user_message (the trace, when there is none)",
    remediation="Make the agent finish with an answer to the user; look for early exits, "
    "crashes and step limits that cut the run short.",
)
TOO_MANY_STEPS = rule(
    "ARH-CMP-002",
    decided="before_call",
    category=CATEGORY,
    severity="error",
    title="Trace has more steps than max_steps",
    trigger="completion.max_steps is set and the trace has more steps than that; "
    "user_message steps are not counted.",
    scoring="One failed completion check.",
    anchor="the trace",
    remediation="Find the loop or detour that makes the run long, or raise max_steps.",
)


def prepare(policy: Policy) -> Completion:
    return policy.completion


def _final_problem(facts: TraceFacts) -> str:
    if not facts.agent_steps:
        return "the trace has only user messages" if facts.steps else "the trace has no steps"
    last = facts.steps[facts.agent_steps[-1]]
    if last.type != "model_response":
        return f"the last step is a {last.type}"
    if last.status != "ok":
        return "the final model_response has status 'error'"
    if not (last.text or "").strip():
        return "the final model_response has no text"
    return ""


def too_many_steps_finding(count: int, limit: int, skipped: int) -> Finding:
    """ARH-CMP-002: ``count`` agent steps (``skipped`` user turns not counted) over max_steps.

    Built here for evaluate() and for the runtime monitor alike, so both word it the same way.
    """
    aside = f" ({skipped} user_message steps not counted)" if skipped else ""
    return TOO_MANY_STEPS.finding(
        f"trace has {count} steps, more than max_steps {limit}{aside}",
        expected=f"<= {limit} steps",
        observed=f"{count} steps",
    )


def evaluate(facts: TraceFacts, completion: Completion, out: Findings) -> CategoryResult:
    checks = failed = 0
    if completion.require_final_response:
        checks += 1
        problem = _final_problem(facts)
        if problem:
            at = facts.agent_steps[-1] if facts.agent_steps else None
            failed += out.add(
                NO_FINAL_RESPONSE.finding(
                    "trace does not end with a successful, non-empty model_response",
                    at=at,
                    step_id=None if at is None else facts.step_id(at),
                    expected="a final model_response with status 'ok' and text",
                    observed=problem,
                )
            )
    limit = completion.max_steps
    if limit is not None:
        checks += 1
        count = len(facts.agent_steps)
        if count > limit:
            failed += out.add(too_many_steps_finding(count, limit, len(facts.steps) - count))
    if not checks:
        return CategoryResult(CATEGORY, False, 100.0, 0, 0)
    return CategoryResult(CATEGORY, True, 100.0 * (checks - failed) / checks, checks, failed)


class _Length(Watch):
    """max_steps (ARH-CMP-002)."""

    __slots__ = ("_limit",)

    def __init__(self, limit: int) -> None:
        self._limit = limit

    def look(self, probe: Probe, out: Findings) -> None:
        if not probe.is_agent:
            return
        count = probe.state.agent_steps + 1
        if count > self._limit:
            skipped = probe.at + 1 - count
            out.add(too_many_steps_finding(count, self._limit, skipped))


def watch(policy: Policy, plan: Completion) -> Watch | None:  # noqa: ARG001
    return None if plan.max_steps is None else _Length(plan.max_steps)


RULE_SET: Final = RuleSet(CATEGORY, prepare, evaluate, watch)
