"""Sequence rules: which tools must and must not be called, in what partial order, how often."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from agent_reliability_harness.model.policy import Policy
from agent_reliability_harness.model.report import CategoryResult, Finding
from agent_reliability_harness.rules._facts import TraceFacts
from agent_reliability_harness.rules.online import Probe, Watch
from agent_reliability_harness.rules.registry import rule
from agent_reliability_harness.rules.ruleset import RuleSet
from agent_reliability_harness.rules.selection import Findings

CATEGORY = "sequence"

REQUIRED_NOT_CALLED = rule(
    "ARH-SEQ-001",
    decided="at_end",
    category=CATEGORY,
    severity="error",
    title="Required tool was never called",
    trigger="A tool in sequence.required_tools has no tool_call in the trace. One check per "
    "required tool.",
    scoring="One failed sequence check per required tool that was not called.",
    anchor="the trace",
    remediation="Make sure the agent performs the required step (for example a lookup before "
    "acting), or remove the tool from required_tools.",
)
FORBIDDEN_CALLED = rule(
    "ARH-SEQ-002",
    decided="before_call",
    category=CATEGORY,
    severity="error",
    title="Forbidden tool was called",
    trigger="A tool in sequence.forbidden_tools was called. One check per forbidden tool, one "
    "finding per call.",
    scoring="One failed sequence check per forbidden tool, however many times it was called.",
    anchor="each call of the forbidden tool",
    remediation="Remove the tool from the agent's toolset or instructions so it cannot be called.",
)
ORDER_VIOLATION = rule(
    "ARH-SEQ-003",
    decided="before_call",
    category=CATEGORY,
    severity="error",
    title="Tools were called in the wrong order",
    trigger="For every pair of tools in sequence.call_order that were both called, the first "
    "call of the earlier-listed tool must come before the first call of the later-listed one. "
    "One check and at most one finding per pair; tools that were not called are not checked "
    "(combine with required_tools for that). It is a partial order: other tools may come "
    "anywhere.",
    scoring="One failed sequence check per violated pair.",
    anchor="the first call of the later-listed tool of the pair",
    remediation="Make the agent perform the prerequisite step first (for example look up and "
    "check eligibility before issuing a refund).",
)
TOO_MANY_CALLS = rule(
    "ARH-SEQ-004",
    decided="before_call",
    category=CATEGORY,
    severity="error",
    title="Tool was called more often than max_calls",
    trigger="A tool with max_calls in allowed_tools was called more times than that.",
    scoring="One failed sequence check.",
    anchor="the trace",
    remediation="Stop the agent from repeating the call (cache results, end loops), or raise "
    "max_calls.",
)
TOO_FEW_CALLS = rule(
    "ARH-SEQ-005",
    decided="at_end",
    category=CATEGORY,
    severity="error",
    title="Tool was called less often than min_calls",
    trigger="A tool with min_calls in allowed_tools was called fewer times than that (also when "
    "it was never called).",
    scoring="One failed sequence check.",
    anchor="the trace",
    remediation="Make the agent perform the call as often as required, or lower min_calls.",
)


@dataclass(frozen=True, slots=True)
class Plan:
    required: tuple[str, ...]
    forbidden: tuple[str, ...]
    order: tuple[str, ...]
    bounds: tuple[tuple[str, int | None, int | None], ...]


def prepare(policy: Policy) -> Plan:
    bounds = tuple(
        (name, tool.min_calls, tool.max_calls)
        for name, tool in sorted(policy.allowed_tools.items())
        if tool.min_calls is not None or tool.max_calls is not None
    )
    seq = policy.sequence
    return Plan(seq.required_tools, seq.forbidden_tools, seq.call_order, bounds)


def _times(n: int) -> str:
    return "1 time" if n == 1 else f"{n} times"


# The findings that can be decided step by step are built here, for evaluate() and for the
# runtime monitor alike, so that both word them the same way.


def forbidden_finding(tool: str, at: int, step_id: str, calls: int) -> Finding:
    """ARH-SEQ-002 at one call of a forbidden tool that was called ``calls`` times in all."""
    return FORBIDDEN_CALLED.finding(
        f"forbidden tool {tool!r} was called",
        at=at,
        step_id=step_id,
        subject=tool,
        expected=f"no calls to {tool!r}",
        observed=f"called {_times(calls)}",
    )


def order_finding(earlier: tuple[str, int, str], later: tuple[str, int, str]) -> Finding:
    """ARH-SEQ-003 for a pair of tools, each given as (tool, first position, its step id)."""
    tool, first, first_id = earlier
    later_tool, later_first, later_id = later
    return ORDER_VIOLATION.finding(
        f"call order violation: the first call of {tool!r} must come before the "
        f"first call of {later_tool!r}",
        at=later_first,
        step_id=later_id,
        subject=f"{tool} < {later_tool}",
        expected=f"{tool!r} before {later_tool!r}",
        observed=f"{later_tool!r} first at step {later_id!r} (#{later_first + 1}), {tool!r} "
        f"first at step {first_id!r} (#{first + 1})",
    )


def too_many_calls_finding(tool: str, count: int, high: int) -> Finding:
    """ARH-SEQ-004: ``tool`` was called ``count`` times, more than its max_calls ``high``."""
    return TOO_MANY_CALLS.finding(
        f"tool {tool!r} was called {_times(count)}, more than max_calls {high}",
        subject=tool,
        expected=f"<= {high} calls",
        observed=f"{count} calls",
    )


def evaluate(facts: TraceFacts, plan: Plan, out: Findings) -> CategoryResult:
    calls = facts.calls_by_tool
    checks = failed = 0
    for tool in plan.required:
        checks += 1
        if tool not in calls:
            failed += out.add(
                REQUIRED_NOT_CALLED.finding(
                    f"required tool {tool!r} was never called",
                    subject=tool,
                    expected=f"at least one call to {tool!r}",
                    observed="0 calls",
                )
            )
    for tool in plan.forbidden:
        checks += 1
        positions = calls.get(tool)
        if positions:
            failed += out.add_all(
                forbidden_finding(tool, at, facts.step_id(at), len(positions)) for at in positions
            )
    called = [(tool, calls[tool][0]) for tool in plan.order if tool in calls]
    for i, (earlier, first_earlier) in enumerate(called):
        for later, first_later in called[i + 1 :]:
            checks += 1
            if first_earlier > first_later:
                failed += out.add(
                    order_finding(
                        (earlier, first_earlier, facts.step_id(first_earlier)),
                        (later, first_later, facts.step_id(first_later)),
                    )
                )
    for tool, low, high in plan.bounds:
        count = len(calls.get(tool, ()))
        if high is not None:
            checks += 1
            if count > high:
                failed += out.add(too_many_calls_finding(tool, count, high))
        if low is not None:
            checks += 1
            if count < low:
                failed += out.add(
                    TOO_FEW_CALLS.finding(
                        f"tool {tool!r} was called {_times(count)}, fewer than min_calls {low}",
                        subject=tool,
                        expected=f">= {low} calls",
                        observed=f"{count} calls",
                    )
                )
    if not checks:
        return CategoryResult(CATEGORY, False, 100.0, 0, 0)
    return CategoryResult(CATEGORY, True, 100.0 * (checks - failed) / checks, checks, failed)


class _Calls(Watch):
    """Forbidden tools, call order and max_calls (ARH-SEQ-002, -003, -004)."""

    __slots__ = ("_after", "_forbidden", "_max_calls")

    def __init__(self, plan: Plan) -> None:
        self._forbidden = frozenset(plan.forbidden)
        order = plan.order
        # for each tool of call_order, the tools listed after it (their first calls must follow)
        self._after = {tool: order[i + 1 :] for i, tool in enumerate(order)}
        self._max_calls = {name: high for name, _, high in plan.bounds if high is not None}

    def look(self, probe: Probe, out: Findings) -> None:
        tool = probe.tool
        if tool is None:
            return
        at, step_id = probe.at, probe.step.step_id
        count = probe.state.counts.get(tool, 0) + 1
        if tool in self._forbidden:
            out.add(forbidden_finding(tool, at, step_id, count))
        if count == 1:
            for later in self._after.get(tool, ()):
                first = probe.state.firsts.get(later)
                if first is not None:
                    out.add(order_finding((tool, at, step_id), (later, *first)))
        high = self._max_calls.get(tool)
        if high is not None and count > high:
            out.add(too_many_calls_finding(tool, count, high))


def watch(policy: Policy, plan: Plan) -> Watch | None:  # noqa: ARG001
    calls = _Calls(plan)
    return calls if calls._forbidden or calls._after or calls._max_calls else None


RULE_SET: Final = RuleSet(CATEGORY, prepare, evaluate, watch)
