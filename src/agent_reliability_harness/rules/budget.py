"""Budget rules: latency, cost and token limits, and budgets the trace cannot be checked against."""

from __future__ import annotations

from typing import Final

from agent_reliability_harness._decode import fits_in_text
from agent_reliability_harness.model.policy import Budgets, Policy
from agent_reliability_harness.model.report import CategoryResult, Finding
from agent_reliability_harness.model.trace import Step
from agent_reliability_harness.rules._facts import (
    COST_DECIMALS,
    LATENCY_DECIMALS,
    TraceFacts,
    sum_too_large,
    tokens_too_long,
)
from agent_reliability_harness.rules._format import amount
from agent_reliability_harness.rules.online import Probe, Watch
from agent_reliability_harness.rules.registry import Need, rule
from agent_reliability_harness.rules.ruleset import RuleSet
from agent_reliability_harness.rules.selection import Findings

# Every finite float is a whole multiple of 2**-1074, so sums in these units are exact.
_UNIT_EXPONENT: Final = 1074
_UNIT: Final = 1 << _UNIT_EXPONENT

CATEGORY = "budget"
_UNVERIFIABLE = (
    "None: an unverifiable budget is not a check (with no other budget checks the category "
    "scores 100)."
)

STEP_LATENCY = rule(
    "ARH-BUD-001",
    decided="on_step",
    needs=(
        Need(
            "latency_ms",
            "budgets.max_step_latency_ms",
            lambda policy: policy.budgets.max_step_latency_ms is not None,
        ),
    ),
    category=CATEGORY,
    severity="error",
    title="Step latency exceeds the per-step budget",
    trigger="max_step_latency_ms is set and a step's latency_ms is strictly greater. Each step "
    "that records latency is one check; steps without it are not checked. user_message steps "
    "are never checked, and no budget counts their latency, cost or tokens.",
    scoring="Each step that records latency_ms is one budget check; a slow step fails its check.",
    anchor="the slow step",
    remediation="Find out why the step is slow (tool timeouts, oversized prompts), or raise "
    "max_step_latency_ms if the budget is unrealistic.",
)
TOTAL_LATENCY = rule(
    "ARH-BUD-002",
    decided="on_step",
    needs=(
        Need(
            "latency_ms",
            "budgets.max_total_latency_ms",
            lambda policy: policy.budgets.max_total_latency_ms is not None,
        ),
    ),
    category=CATEGORY,
    severity="error",
    title="Total latency exceeds the budget",
    trigger="max_total_latency_ms is set, at least one step records latency_ms, and the sum of "
    "all recorded latencies is strictly greater than the budget.",
    scoring="One failed budget check.",
    anchor="the trace",
    remediation="Cut steps or slow calls from the run, or raise max_total_latency_ms.",
)
TOTAL_COST = rule(
    "ARH-BUD-003",
    decided="on_step",
    needs=(
        Need(
            "cost_usd",
            "budgets.max_total_cost_usd",
            lambda policy: policy.budgets.max_total_cost_usd is not None,
        ),
    ),
    category=CATEGORY,
    severity="error",
    title="Total cost exceeds the budget",
    trigger="max_total_cost_usd is set, at least one step records cost_usd, and the sum of all "
    "recorded costs is strictly greater than the budget.",
    scoring="One failed budget check.",
    anchor="the trace",
    remediation="Use fewer or cheaper model calls, or raise max_total_cost_usd.",
)
TOTAL_TOKENS = rule(
    "ARH-BUD-004",
    decided="on_step",
    needs=(
        Need(
            "tokens",
            "budgets.max_total_tokens",
            lambda policy: policy.budgets.max_total_tokens is not None,
        ),
    ),
    category=CATEGORY,
    severity="error",
    title="Total token usage exceeds the budget",
    trigger="max_total_tokens is set, at least one step records input_tokens or output_tokens, "
    "and their sum over all steps is strictly greater than the budget.",
    scoring="One failed budget check.",
    anchor="the trace",
    remediation="Shorten prompts and outputs or make fewer model calls, or raise max_total_tokens.",
)
NO_TOKEN_DATA = rule(
    "ARH-BUD-005",
    decided="at_end",
    category=CATEGORY,
    severity="warning",
    title="Token budget is set but the trace has no token data",
    trigger="max_total_tokens is set and no step records input_tokens or output_tokens, so the "
    "budget cannot be verified.",
    scoring=_UNVERIFIABLE,
    anchor="the trace",
    remediation="Record token usage in the trace, or remove max_total_tokens.",
)
NO_LATENCY_DATA = rule(
    "ARH-BUD-006",
    decided="at_end",
    category=CATEGORY,
    severity="warning",
    title="Latency budget is set but the trace has no latency data",
    trigger="max_total_latency_ms or max_step_latency_ms is set and no step records latency_ms, "
    "so the budget cannot be verified.",
    scoring=_UNVERIFIABLE,
    anchor="the trace",
    remediation="Record latency_ms in the trace, or remove the latency budget.",
)
NO_COST_DATA = rule(
    "ARH-BUD-007",
    decided="at_end",
    category=CATEGORY,
    severity="warning",
    title="Cost budget is set but the trace has no cost data",
    trigger="max_total_cost_usd is set and no step records cost_usd, so the budget cannot be "
    "verified.",
    scoring=_UNVERIFIABLE,
    anchor="the trace",
    remediation="Record cost_usd in the trace, or remove max_total_cost_usd.",
)


def prepare(policy: Policy) -> Budgets:
    return policy.budgets


def _ms(value: float, limit: float) -> tuple[str, str]:
    return amount(value, limit, 0)


# The findings that can be decided step by step are built here, for evaluate() and for the
# runtime monitor alike, so that both word them the same way.


def step_latency_finding(at: int, step_id: str, latency: float, limit: float) -> Finding:
    """ARH-BUD-001: the step at ``at`` took longer than max_step_latency_ms."""
    shown, limit_shown = _ms(latency, limit)
    return STEP_LATENCY.finding(
        f"step latency {shown} ms exceeds max_step_latency_ms of {limit_shown} ms",
        at=at,
        step_id=step_id,
        expected=f"<= {limit_shown} ms",
        observed=f"{shown} ms",
    )


def total_latency_finding(total: float, limit: float) -> Finding:
    """ARH-BUD-002 for a total latency (rounded as TraceFacts rounds it) over the budget."""
    shown, limit_shown = _ms(total, limit)
    return TOTAL_LATENCY.finding(
        f"total latency {shown} ms exceeds max_total_latency_ms of {limit_shown} ms",
        expected=f"<= {limit_shown} ms",
        observed=f"{shown} ms",
    )


def total_cost_finding(total: float, limit: float) -> Finding:
    """ARH-BUD-003 for a total cost (rounded as TraceFacts rounds it) over the budget."""
    shown, limit_shown = amount(total, limit, 4)
    return TOTAL_COST.finding(
        f"total cost ${shown} exceeds max_total_cost_usd of ${limit_shown}",
        expected=f"<= ${limit_shown}",
        observed=f"${shown}",
    )


def total_tokens_finding(tokens: int, limit: int) -> Finding:
    """ARH-BUD-004 for a token total over the budget."""
    return TOTAL_TOKENS.finding(
        f"total token usage {tokens} exceeds max_total_tokens of {limit}",
        expected=f"<= {limit} tokens",
        observed=f"{tokens} tokens",
    )


def evaluate(facts: TraceFacts, budgets: Budgets, out: Findings) -> CategoryResult:
    if not budgets.any_set:
        return CategoryResult(CATEGORY, False, 100.0, 0, 0)
    checks = failed = 0
    step_limit = budgets.max_step_latency_ms
    total_limit = budgets.max_total_latency_ms
    if step_limit is not None or total_limit is not None:
        if not facts.has_latency:
            out.add(
                NO_LATENCY_DATA.finding(
                    "the policy sets a latency budget but no step records latency_ms, so it "
                    "cannot be verified",
                    expected="steps with latency_ms",
                    observed="no latency data",
                )
            )
        else:
            if step_limit is not None:
                steps = facts.steps
                for at in facts.agent_steps:
                    step = steps[at]
                    latency = step.latency_ms
                    if latency is None:
                        continue
                    checks += 1
                    if latency > step_limit:
                        failed += out.add(
                            step_latency_finding(at, step.step_id, latency, step_limit)
                        )
            if total_limit is not None:
                checks += 1
                if facts.latency_total > total_limit:
                    failed += out.add(total_latency_finding(facts.latency_total, total_limit))
    cost_limit = budgets.max_total_cost_usd
    if cost_limit is not None:
        if not facts.has_cost:
            out.add(
                NO_COST_DATA.finding(
                    "the policy sets max_total_cost_usd but no step records cost_usd, so it cannot "
                    "be verified",
                    expected="steps with cost_usd",
                    observed="no cost data",
                )
            )
        else:
            checks += 1
            if facts.cost_total > cost_limit:
                failed += out.add(total_cost_finding(facts.cost_total, cost_limit))
    token_limit = budgets.max_total_tokens
    if token_limit is not None:
        tokens = facts.tokens_total
        if tokens is None:
            out.add(
                NO_TOKEN_DATA.finding(
                    "the policy sets max_total_tokens but no step records token usage, so it "
                    "cannot be verified",
                    expected="steps with input_tokens or output_tokens",
                    observed="no token data",
                )
            )
        else:
            checks += 1
            if tokens > token_limit:
                failed += out.add(total_tokens_finding(tokens, token_limit))
    score = 100.0 * (checks - failed) / checks if checks else 100.0
    return CategoryResult(CATEGORY, True, score, checks, failed)


def _units(value: float) -> int:
    """``value`` as an exact whole number of 2**-1074 (a float's smallest step)."""
    numerator, denominator = float(value).as_integer_ratio()
    return numerator * (_UNIT // denominator)


def _total(units: int, key: str, at: int) -> float:
    """The float nearest an exact sum, as ``math.fsum`` gives it, or TraceFacts' error (at the
    step that makes the sum too large)."""
    try:
        return units / _UNIT
    except OverflowError:
        raise sum_too_large(key, f"/steps/{at}/{key}") from None


class _Totals(Watch):
    """The step latency budget (ARH-BUD-001) and the total latency, cost and token budgets
    already exceeded (ARH-BUD-002, -003, -004).

    Sums are kept exactly (in whole units of 2**-1074), so each total is the correctly rounded
    sum that ``math.fsum`` gives offline, at O(1) per step. They are kept without budgets too:
    a step that makes a total too large for a report is refused as offline validation refuses
    the trace, instead of a run that can no longer be reported.
    """

    __slots__ = (
        "_cost",
        "_cost_limit",
        "_latency",
        "_latency_limit",
        "_step_limit",
        "_token_limit",
        "_tokens",
    )

    def __init__(self, budgets: Budgets) -> None:
        self._step_limit = budgets.max_step_latency_ms
        self._latency_limit = budgets.max_total_latency_ms
        self._cost_limit = budgets.max_total_cost_usd
        self._token_limit = budgets.max_total_tokens
        self._latency = 0
        self._cost = 0
        self._tokens: int | None = None

    def _tokens_after(self, step: Step) -> int | None:
        if step.input_tokens is None and step.output_tokens is None:
            return self._tokens
        return (self._tokens or 0) + (step.input_tokens or 0) + (step.output_tokens or 0)

    def look(self, probe: Probe, out: Findings) -> None:
        if not probe.is_agent:
            return
        step, at = probe.step, probe.at
        limit = self._step_limit
        if limit is not None and step.latency_ms is not None and step.latency_ms > limit:
            out.add(step_latency_finding(at, step.step_id, step.latency_ms, limit))
        limit = self._latency_limit
        if step.latency_ms is not None or limit is not None:
            units = self._latency + (0 if step.latency_ms is None else _units(step.latency_ms))
            total = round(_total(units, "latency_ms", at), LATENCY_DECIMALS)
            if limit is not None and total > limit:
                out.add(total_latency_finding(total, limit))
        limit = self._cost_limit
        if step.cost_usd is not None or limit is not None:
            units = self._cost + (0 if step.cost_usd is None else _units(step.cost_usd))
            total = round(_total(units, "cost_usd", at), COST_DECIMALS)
            if limit is not None and total > limit:
                out.add(total_cost_finding(total, limit))
        tokens = self._tokens_after(step)
        # checked when this step adds tokens (a sum that long is tried by writing it out)
        if tokens is not self._tokens and tokens is not None and not fits_in_text(tokens):
            raise tokens_too_long(f"/steps/{at}")
        token_limit = self._token_limit
        if token_limit is not None and tokens is not None and tokens > token_limit:
            out.add(total_tokens_finding(tokens, token_limit))

    def commit(self, probe: Probe) -> None:
        if not probe.is_agent:
            return
        step = probe.step
        if step.latency_ms is not None:
            self._latency += _units(step.latency_ms)
        if step.cost_usd is not None:
            self._cost += _units(step.cost_usd)
        self._tokens = self._tokens_after(step)


def watch(policy: Policy, plan: Budgets) -> Watch:  # noqa: ARG001
    return _Totals(plan)


RULE_SET: Final = RuleSet(CATEGORY, prepare, evaluate, watch)
