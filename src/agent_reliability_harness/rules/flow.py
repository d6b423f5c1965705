"""Flow rules: tool errors are retried, retries are bounded, side effects happen once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from agent_reliability_harness.model.policy import Policy
from agent_reliability_harness.model.report import CategoryResult, Finding
from agent_reliability_harness.rules._facts import TraceFacts
from agent_reliability_harness.rules.online import Probe, Watch
from agent_reliability_harness.rules.registry import Need, rule
from agent_reliability_harness.rules.ruleset import RuleSet
from agent_reliability_harness.rules.selection import Findings

CATEGORY = "flow"

ERROR_NOT_RETRIED = rule(
    "ARH-FLW-001",
    decided="at_end",
    needs=(
        Need(
            "tool_status",
            "error_handling.require_retry_on_error",
            lambda policy: policy.error_handling.require_retry_on_error,
        ),
    ),
    category=CATEGORY,
    severity="error",
    title="Tool error was never retried",
    trigger="error_handling.require_retry_on_error is true and a tool call with status error "
    "is not followed by any later call of the same tool (with any arguments and any outcome). "
    "One check per failed call.",
    scoring="One failed flow check per failed call that was never retried.",
    anchor="the failed call",
    remediation="Make the agent retry or recover from tool errors instead of carrying on "
    "(or answering) as if the call had worked.",
)
RETRY_STORM = rule(
    "ARH-FLW-002",
    decided="before_call",
    category=CATEGORY,
    severity="error",
    title="Identical call repeated more than max_attempts",
    trigger="error_handling.max_attempts is set and one tool was called with identical "
    "arguments more than max_attempts times, whatever the outcomes (a polling loop is a loop "
    "too). Arguments are identical when their JSON is equal with keys sorted; 1 and 1.0 differ. "
    "One check per distinct (tool, arguments).",
    scoring="One failed flow check per (tool, arguments) group over the limit.",
    anchor="the first call over the limit",
    remediation="Bound the agent's retries, back off, or change the request between attempts.",
)
DUPLICATE_SIDE_EFFECT = rule(
    "ARH-FLW-003",
    decided="before_call",
    category=CATEGORY,
    severity="error",
    title="Side-effect call repeated after it succeeded",
    trigger="A tool marked side_effect: true was called again with identical arguments after "
    "an identical call had succeeded (status ok). Every such later call is a finding, even "
    "if it failed, because it was attempted. Retrying identical calls before the first "
    "success is allowed. One check per distinct (tool, arguments) of a side-effect tool. When "
    "the trace's source records no failures (tool_status in metadata.adapter.missing), every "
    "call counts as a success, and the message says so.",
    scoring="One failed flow check per (tool, arguments) group with duplicates.",
    anchor="each repeated call",
    remediation="Make side-effect calls idempotent (check state before acting, use "
    "idempotency keys) and never repeat a call that already succeeded.",
)


@dataclass(frozen=True, slots=True)
class Plan:
    retry_on_error: bool
    max_attempts: int | None
    side_effect_tools: frozenset[str]


def prepare(policy: Policy) -> Plan:
    side_effects = frozenset(n for n, t in policy.allowed_tools.items() if t.side_effect)
    handling = policy.error_handling
    return Plan(handling.require_retry_on_error, handling.max_attempts, side_effects)


# The findings that can be decided step by step are built here, for evaluate() and for the
# runtime monitor alike, so that both word them the same way.


def retry_storm_finding(tool: str, calls: int, limit: int, at: int, step_id: str) -> Finding:
    """ARH-FLW-002 at the first call over the limit, of ``calls`` identical calls in all."""
    return RETRY_STORM.finding(
        f"retry storm: tool {tool!r} was called {calls} times with "
        f"identical arguments, more than max_attempts {limit}",
        at=at,
        step_id=step_id,
        subject=tool,
        expected=f"<= {limit} identical calls",
        observed=f"{calls} identical calls",
    )


def duplicate_side_effect_finding(
    tool: str, succeeded: str, calls: int, at: int, step_id: str, *, status_known: bool = True
) -> Finding:
    """ARH-FLW-003 at a repeat of the call that succeeded at step ``succeeded`` (that did not
    fail, as far as the trace can tell, when its source records no failures)."""
    outcome = "succeeded"
    if not status_known:
        outcome += " (its source records no failures, so every call counts as a success)"
    return DUPLICATE_SIDE_EFFECT.finding(
        f"duplicate side effect: tool {tool!r} was called again with identical "
        f"arguments after step {succeeded!r} {outcome}",
        at=at,
        step_id=step_id,
        subject=tool,
        expected="one successful call per distinct set of arguments",
        observed=f"{calls} calls with identical arguments",
    )


def evaluate(facts: TraceFacts, plan: Plan, out: Findings) -> CategoryResult:
    steps = facts.steps
    calls = facts.calls_by_tool
    checks = failed = 0
    if plan.retry_on_error:
        for tool, positions in calls.items():
            last = positions[-1]
            for at in positions:
                if steps[at].status != "error":
                    continue
                checks += 1
                if at == last:
                    failed += out.add(
                        ERROR_NOT_RETRIED.finding(
                            f"tool {tool!r} failed and was never called again",
                            at=at,
                            step_id=steps[at].step_id,
                            subject=tool,
                            expected=f"a later call to {tool!r}",
                            observed="no later call",
                        )
                    )
    limit = plan.max_attempts
    side_effects = plan.side_effect_tools
    status_known: bool | None = None  # looked up at the first duplicate side effect
    if limit is None and not side_effects:
        return _result(checks, failed)
    for tool, positions in calls.items():
        is_side_effect = tool in side_effects
        if limit is None and not is_side_effect:
            continue
        groups: dict[str, list[int]] = {}
        if len(positions) == 1:  # a lone call needs no key to be in a group of its own
            groups[""] = positions
        else:
            for at in positions:
                groups.setdefault(facts.arguments_key(at), []).append(at)
        for group in groups.values():
            if limit is not None:
                checks += 1
                if len(group) > limit:
                    at = group[limit]
                    failed += out.add(
                        retry_storm_finding(tool, len(group), limit, at, steps[at].step_id)
                    )
            if is_side_effect:
                checks += 1
                first_ok = next((i for i, at in enumerate(group) if steps[at].status == "ok"), None)
                if first_ok is None or first_ok == len(group) - 1:
                    continue
                first = steps[group[first_ok]].step_id
                if status_known is None:
                    status_known = "tool_status" not in facts.missing
                failed += out.add_all(
                    duplicate_side_effect_finding(
                        tool, first, len(group), at, steps[at].step_id, status_known=status_known
                    )
                    for at in group[first_ok + 1 :]
                )
    return _result(checks, failed)


def _result(checks: int, failed: int) -> CategoryResult:
    if not checks:
        return CategoryResult(CATEGORY, False, 100.0, 0, 0)
    return CategoryResult(CATEGORY, True, 100.0 * (checks - failed) / checks, checks, failed)


class _Group:
    """The calls of one tool with identical arguments."""

    __slots__ = ("count", "over", "succeeded")

    def __init__(self) -> None:
        self.count = 0
        self.over: tuple[int, str] | None = None  # the first call over max_attempts
        self.succeeded: str | None = None  # step id of the first call with status ok


class _Repeats(Watch):
    """Retry storms and duplicate side effects (ARH-FLW-002, -003)."""

    __slots__ = ("_groups", "_limit", "_side_effects")

    def __init__(self, plan: Plan) -> None:
        self._limit = plan.max_attempts
        self._side_effects = plan.side_effect_tools
        self._groups: dict[tuple[str, str], _Group] = {}

    def _watched(self, tool: str | None) -> bool:
        return tool is not None and (self._limit is not None or tool in self._side_effects)

    def look(self, probe: Probe, out: Findings) -> None:
        tool = probe.tool
        if tool is None or not self._watched(tool):
            return
        at, step_id = probe.at, probe.step.step_id
        group = self._groups.get((tool, probe.key))
        count = (group.count if group is not None else 0) + 1
        limit = self._limit
        if limit is not None and count > limit:
            over = (at, step_id) if group is None or group.over is None else group.over
            out.add(retry_storm_finding(tool, count, limit, *over))
        if tool in self._side_effects and group is not None and group.succeeded is not None:
            out.add(duplicate_side_effect_finding(tool, group.succeeded, count, at, step_id))

    def commit(self, probe: Probe) -> None:
        tool = probe.tool
        if tool is None or not self._watched(tool):
            return
        group = self._groups.setdefault((tool, probe.key), _Group())
        group.count += 1
        if self._limit is not None and group.count == self._limit + 1:
            group.over = (probe.at, probe.step.step_id)
        if group.succeeded is None and probe.step.status == "ok":
            group.succeeded = probe.step.step_id


def watch(policy: Policy, plan: Plan) -> Watch | None:  # noqa: ARG001
    if plan.max_attempts is None and not plan.side_effect_tools:
        return None
    return _Repeats(plan)


RULE_SET: Final = RuleSet(CATEGORY, prepare, evaluate, watch)
