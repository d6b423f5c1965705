"""The runtime guard: the policy of offline validation, applied while the agent runs.

A :class:`Monitor` follows one run step by step::

    monitor = Monitor(policy, trace_id="run-42")
    found = monitor.check(step)      # before the tool runs: what this step would violate
    ...                              # run the tool, unless an error finding says otherwise
    monitor.observe(completed_step)  # after it ran: record it (and report what its outcome adds)
    monitor.finish()                 # at the end: the findings of offline validation, exactly

Only *monotone* findings can be decided while the run goes on: those that no later step can take
back. ``check`` and ``observe`` report these, worded exactly as offline validation words them:

* per step: every schema rule (ARH-SCH-001..009), unsafe content (ARH-SAF-001), grounding of a
  response (ARH-GRD-001, ARH-GRD-003) and the step latency budget (ARH-BUD-001);
* from what came before: forbidden tools (ARH-SEQ-002), call order (ARH-SEQ-003), max_calls
  (ARH-SEQ-004), retry storms (ARH-FLW-002), duplicate side effects (ARH-FLW-003), total latency,
  cost and token budgets already exceeded (ARH-BUD-002..004), max_steps (ARH-CMP-002) and
  repeated step ids (ARH-SCH-010);
* with a policy of language 1.1, all before the call runs, since none needs its outcome:
  untrusted values reaching a sink (ARH-PRV-001), conditions and relations (ARH-CND-001..004),
  a guarded call without confirmation (ARH-CFM-001), the identical call over the limit
  (ARH-LOP-001), and the call that repeats a cycle once too often (ARH-LOP-002; every further
  call that continues the cycle reports it again, with the counts so far).

Each finding that ``check`` or ``observe`` returns for the step at position ``i`` equals a finding
of ``validate_trace`` on the steps ``0..i`` (counts in messages are those of that prefix), and it
stays in the result of every longer run. One finding can only come late: a guarded call made
before the run's first user turn. Offline validation of such a run cannot tell an unconfirmed
call from a run without user turns (it says only that confirmation cannot be verified,
ARH-CFM-002, a warning); the ARH-CFM-001 findings of those calls are reported with the first
user turn. Findings that depend on how the run ends (required tools never called, min_calls,
unretried errors, citation coverage, the final response, budgets that cannot be verified,
ARH-CFM-002) come only from :meth:`Monitor.finish`, which validates the recorded steps with the
same :class:`~agent_reliability_harness.engine.Validator` as ``arh validate``. A monitored run
is not converted from a transcript, so it has no adapter notes and never ARH-SCH-011.

Cost per step, whatever the length of the run (it grows with the size of the step and of the
policy only; amortised where a watch keeps a queue): every rule of language 1.0, conditions and
relations (O(the tool's conditions and relations and the values they read)), confirmation
(O(1), plus one pattern search per user turn) and loops (O(max_cycle_length), plus the
arguments' size). Provenance is the exception: a step adds its own text once (normalised and
appended, never re-read), but a sink call looks each of its values up in the untrusted text
recorded since that value's previous lookup, so a value never seen before costs one C-speed
scan of all the untrusted text so far, O(its length); see ``_Provenance``. No watch replays a
category over the run: the 1.1 watches keep the state of their rule's own sweep
(``conditions.Sweep``, the confirmation and loop counters) and build findings with their rule
module's functions, so the texts cannot drift.

Adding a rule means adding a ``_Watch`` to ``_WATCHES``: ``create`` makes it from the policy and
the rules' plans, which the monitor's validator has compiled once (``None`` when the policy does
not use it), ``look`` appends what a step would add to the findings
without changing anything, and ``commit`` updates the watch's own state once the step is
recorded. tests/test_monitor.py lists which rules are decided early; a new rule fails its
completeness test until it is placed. The module is pure: it never reads a clock or a file.
"""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Mapping

from agent_reliability_harness._decode import find_cycle, fits_in_text
from agent_reliability_harness._record import replace
from agent_reliability_harness.engine import NESTED_TRACE, Validator, engine_failed
from agent_reliability_harness.errors import ArhError, InputError, UsageError, excerpt
from agent_reliability_harness.model.policy import Policy
from agent_reliability_harness.model.report import Finding, TraceReport
from agent_reliability_harness.model.trace import Step, Trace, check_identity, schema_version_for
from agent_reliability_harness.rules import (
    budget,
    completion,
    conditions,
    confirmation,
    flow,
    grounding,
    lint,
    loops,
    provenance,
    safety,
    schema,
    sequence,
)
from agent_reliability_harness.rules._facts import (
    COST_DECIMALS,
    LATENCY_DECIMALS,
    TraceFacts,
    arguments_key,
    sum_too_large,
    tokens_too_long,
)
from agent_reliability_harness.rules._taint import GrowingCorpus
from agent_reliability_harness.scoring import DEFAULT_FAIL_UNDER

TYPE_CHECKING = False  # `typing` costs milliseconds at start-up; only type checkers need it
if TYPE_CHECKING:
    from typing import Any, Final

    from agent_reliability_harness.model.policy.loops import Loops

    Plans = Mapping[str, Any]  # rule category -> its plan (Validator.plans)

__all__ = ["BlockedCallError", "Monitor"]

# Every finite float is a whole multiple of 2**-1074, so sums in these units are exact.
_UNIT_EXPONENT: Final = 1074
_UNIT: Final = 1 << _UNIT_EXPONENT


class BlockedCallError(ArhError):
    """A step was refused before it ran: checking it found at least one error.

    ``findings`` are all the findings of the check (warnings included); ``step`` is the step
    that was refused. Nothing was recorded for it.
    """

    def __init__(self, step: Step, findings: list[Finding]) -> None:
        self.step = step
        self.findings = tuple(findings)
        errors = [f for f in findings if f.severity == "error"]
        what = f"tool {excerpt(step.tool_name)}" if step.type == "tool_call" else f"a {step.type}"
        lines = [f"{f.rule_id} {f.message}" for f in errors]
        super().__init__(f"blocked {what} at step {excerpt(step.step_id)}: " + "; ".join(lines))


class _Probe:
    """One step at one position, with what several watches need from it, worked out once."""

    __slots__ = ("_key", "at", "is_agent", "state", "step", "tool")

    def __init__(self, step: Step, state: _State) -> None:
        self.step = step
        self.state = state  # the steps before this one
        self.at = len(state.steps)
        self.is_agent = step.type != "user_message"
        # a named tool call is what calls_by_tool indexes offline
        self.tool = step.tool_name if step.type == "tool_call" and step.tool_name else None
        self._key: str | None = None

    @property
    def key(self) -> str:
        """The identity of the call's arguments (see ``_facts.arguments_key``)."""
        if self._key is None:
            self._key = arguments_key(self.step.arguments, self.at)
        return self._key


class _State:
    """What every watch may read about the steps recorded so far."""

    __slots__ = ("agent_steps", "counts", "firsts", "steps")

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.agent_steps = 0
        self.counts: dict[str, int] = {}  # named tool -> calls so far
        self.firsts: dict[str, tuple[int, str]] = {}  # named tool -> (position, step id) of call 1

    def commit(self, probe: _Probe) -> None:
        self.steps.append(probe.step)
        if probe.is_agent:
            self.agent_steps += 1
        tool = probe.tool
        if tool is not None:
            count = self.counts.get(tool, 0)
            if not count:
                self.firsts[tool] = (probe.at, probe.step.step_id)
            self.counts[tool] = count + 1


class _Watch:
    """A family of rules that can be decided step by step (see the module docstring)."""

    __slots__ = ()

    @classmethod
    def create(cls, policy: Policy, plans: Plans) -> _Watch | None:
        raise NotImplementedError

    def look(self, probe: _Probe, out: list[Finding]) -> None:
        raise NotImplementedError

    def commit(self, probe: _Probe) -> None:
        """Update the watch's own state; ``probe.state`` is still that of the steps before."""


class _StepRules(_Watch):
    """The rules that look at one step alone, run by their own category code on that step."""

    __slots__ = ("_grounding", "_patterns", "_schema", "_step_limit")

    def __init__(self, policy: Policy, plans: Plans) -> None:
        self._schema = plans[schema.CATEGORY]
        self._patterns = plans[safety.CATEGORY]
        self._grounding = plans[grounding.CATEGORY]
        self._step_limit = policy.budgets.max_step_latency_ms

    @classmethod
    def create(cls, policy: Policy, plans: Plans) -> _Watch | None:
        return cls(policy, plans)

    def look(self, probe: _Probe, out: list[Finding]) -> None:
        step = probe.step
        if not probe.is_agent:
            return
        found: list[Finding] = []
        if step.type == "tool_call" or self._patterns or step.requires_grounding:
            facts = TraceFacts(Trace("", "", "", (step,)))
            if step.type == "tool_call":
                schema.evaluate(facts, self._schema, found)
            if self._patterns:
                safety.evaluate(facts, self._patterns, found)
            if facts.grounded:
                kept = len(found)
                grounding.evaluate(facts, self._grounding, found)
                # coverage (ARH-GRD-002) is a trace-level matter, decided at the end
                found[kept:] = [f for f in found[kept:] if f.rule_id != "ARH-GRD-002"]
        out.extend(replace(f, step_index=probe.at) for f in found)
        limit = self._step_limit
        latency = step.latency_ms
        if limit is not None and latency is not None and latency > limit:
            out.append(budget.step_latency_finding(probe.at, step.step_id, latency, limit))


class _Calls(_Watch):
    """Forbidden tools, call order and max_calls (ARH-SEQ-002, -003, -004)."""

    __slots__ = ("_after", "_forbidden", "_max_calls")

    def __init__(self, plan: sequence.Plan) -> None:
        self._forbidden = frozenset(plan.forbidden)
        order = plan.order
        # for each tool of call_order, the tools listed after it (their first calls must follow)
        self._after = {tool: order[i + 1 :] for i, tool in enumerate(order)}
        self._max_calls = {name: high for name, _, high in plan.bounds if high is not None}

    @classmethod
    def create(cls, policy: Policy, plans: Plans) -> _Watch | None:  # noqa: ARG003
        watch = cls(plans[sequence.CATEGORY])
        return watch if watch._forbidden or watch._after or watch._max_calls else None

    def look(self, probe: _Probe, out: list[Finding]) -> None:
        tool = probe.tool
        if tool is None:
            return
        at, step_id = probe.at, probe.step.step_id
        count = probe.state.counts.get(tool, 0) + 1
        if tool in self._forbidden:
            out.append(sequence.forbidden_finding(tool, at, step_id, count))
        if count == 1:
            for later in self._after.get(tool, ()):
                first = probe.state.firsts.get(later)
                if first is not None:
                    out.append(sequence.order_finding((tool, at, step_id), (later, *first)))
        high = self._max_calls.get(tool)
        if high is not None and count > high:
            out.append(sequence.too_many_calls_finding(tool, count, high))


class _Group:
    """The calls of one tool with identical arguments."""

    __slots__ = ("count", "over", "succeeded")

    def __init__(self) -> None:
        self.count = 0
        self.over: tuple[int, str] | None = None  # the first call over max_attempts
        self.succeeded: str | None = None  # step id of the first call with status ok


class _Repeats(_Watch):
    """Retry storms and duplicate side effects (ARH-FLW-002, -003)."""

    __slots__ = ("_groups", "_limit", "_side_effects")

    def __init__(self, plan: flow.Plan) -> None:
        self._limit = plan.max_attempts
        self._side_effects = plan.side_effect_tools
        self._groups: dict[tuple[str, str], _Group] = {}

    @classmethod
    def create(cls, policy: Policy, plans: Plans) -> _Watch | None:  # noqa: ARG003
        watch = cls(plans[flow.CATEGORY])
        return watch if watch._limit is not None or watch._side_effects else None

    def _watched(self, tool: str | None) -> bool:
        return tool is not None and (self._limit is not None or tool in self._side_effects)

    def look(self, probe: _Probe, out: list[Finding]) -> None:
        tool = probe.tool
        if tool is None or not self._watched(tool):
            return
        at, step_id = probe.at, probe.step.step_id
        group = self._groups.get((tool, probe.key))
        count = (group.count if group is not None else 0) + 1
        limit = self._limit
        if limit is not None and count > limit:
            over = (at, step_id) if group is None or group.over is None else group.over
            out.append(flow.retry_storm_finding(tool, count, limit, *over))
        if tool in self._side_effects and group is not None and group.succeeded is not None:
            out.append(
                flow.duplicate_side_effect_finding(tool, group.succeeded, count, at, step_id)
            )

    def commit(self, probe: _Probe) -> None:
        tool = probe.tool
        if tool is None or not self._watched(tool):
            return
        group = self._groups.setdefault((tool, probe.key), _Group())
        group.count += 1
        if self._limit is not None and group.count == self._limit + 1:
            group.over = (probe.at, probe.step.step_id)
        if group.succeeded is None and probe.step.status == "ok":
            group.succeeded = probe.step.step_id


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


class _Totals(_Watch):
    """Total latency, cost and token budgets already exceeded (ARH-BUD-002, -003, -004).

    Sums are kept exactly (in whole units of 2**-1074), so each total is the correctly rounded
    sum that ``math.fsum`` gives offline, at O(1) per step. They are kept without budgets too:
    a step that makes a total too large for a report is refused as offline validation refuses
    the trace, instead of a run that can no longer be reported.
    """

    __slots__ = ("_cost", "_cost_limit", "_latency", "_latency_limit", "_token_limit", "_tokens")

    def __init__(self, policy: Policy) -> None:
        budgets = policy.budgets
        self._latency_limit = budgets.max_total_latency_ms
        self._cost_limit = budgets.max_total_cost_usd
        self._token_limit = budgets.max_total_tokens
        self._latency = 0
        self._cost = 0
        self._tokens: int | None = None

    @classmethod
    def create(cls, policy: Policy, plans: Plans) -> _Watch | None:  # noqa: ARG003
        return cls(policy)

    def _tokens_after(self, step: Step) -> int | None:
        if step.input_tokens is None and step.output_tokens is None:
            return self._tokens
        return (self._tokens or 0) + (step.input_tokens or 0) + (step.output_tokens or 0)

    def look(self, probe: _Probe, out: list[Finding]) -> None:
        if not probe.is_agent:
            return
        step, at = probe.step, probe.at
        limit = self._latency_limit
        if step.latency_ms is not None or limit is not None:
            units = self._latency + (0 if step.latency_ms is None else _units(step.latency_ms))
            total = round(_total(units, "latency_ms", at), LATENCY_DECIMALS)
            if limit is not None and total > limit:
                out.append(budget.total_latency_finding(total, limit))
        limit = self._cost_limit
        if step.cost_usd is not None or limit is not None:
            units = self._cost + (0 if step.cost_usd is None else _units(step.cost_usd))
            total = round(_total(units, "cost_usd", at), COST_DECIMALS)
            if limit is not None and total > limit:
                out.append(budget.total_cost_finding(total, limit))
        tokens = self._tokens_after(step)
        # checked when this step adds tokens (a sum that long is tried by writing it out)
        if tokens is not self._tokens and tokens is not None and not fits_in_text(tokens):
            raise tokens_too_long(f"/steps/{at}")
        token_limit = self._token_limit
        if token_limit is not None and tokens is not None and tokens > token_limit:
            out.append(budget.total_tokens_finding(tokens, token_limit))

    def commit(self, probe: _Probe) -> None:
        if not probe.is_agent:
            return
        step = probe.step
        if step.latency_ms is not None:
            self._latency += _units(step.latency_ms)
        if step.cost_usd is not None:
            self._cost += _units(step.cost_usd)
        self._tokens = self._tokens_after(step)


class _Length(_Watch):
    """max_steps (ARH-CMP-002)."""

    __slots__ = ("_limit",)

    def __init__(self, limit: int) -> None:
        self._limit = limit

    @classmethod
    def create(cls, policy: Policy, plans: Plans) -> _Watch | None:  # noqa: ARG003
        limit = policy.completion.max_steps
        return None if limit is None else cls(limit)

    def look(self, probe: _Probe, out: list[Finding]) -> None:
        if not probe.is_agent:
            return
        count = probe.state.agent_steps + 1
        if count > self._limit:
            skipped = probe.at + 1 - count
            out.append(completion.too_many_steps_finding(count, self._limit, skipped))


class _StepIds(_Watch):
    """Step ids used more than once (ARH-SCH-010, a warning)."""

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        self._seen: dict[str, list[int]] = {}  # step id -> [first position, uses]

    @classmethod
    def create(cls, policy: Policy, plans: Plans) -> _Watch | None:  # noqa: ARG003
        return cls()

    def look(self, probe: _Probe, out: list[Finding]) -> None:
        step_id = probe.step.step_id
        seen = self._seen.get(step_id)
        if seen is not None:
            out.append(lint.duplicate_step_id_finding(step_id, seen[1] + 1, seen[0]))

    def commit(self, probe: _Probe) -> None:
        seen = self._seen.setdefault(probe.step.step_id, [probe.at, 0])
        seen[1] += 1


class _Provenance(_Watch):
    """Values from untrusted output reaching a sink (ARH-PRV-001, policy language 1.1).

    Each recorded step's text goes into the rule's corpora (``provenance.source_texts``: user
    turns and trusted output, or untrusted output), normalised once and appended to a
    :class:`~agent_reliability_harness.rules._taint.GrowingCorpus`. A sink call's values
    (``provenance.sink_values``) are looked up there before it runs. Not O(1): a value costs one
    ``bytes.find`` (C speed) over the untrusted text recorded since that value's previous lookup,
    so a value never seen before scans all the untrusted text so far, O(its length), and a
    value seen before only what was added since; a value found there is looked up in the
    trusted text the same way. Other steps cost O(their own text).
    """

    __slots__ = ("_plan", "_trusted", "_untrusted")

    def __init__(self, plan: provenance.Plan) -> None:
        self._plan = plan
        self._untrusted = GrowingCorpus()
        self._trusted = GrowingCorpus()

    @classmethod
    def create(cls, policy: Policy, plans: Plans) -> _Watch | None:  # noqa: ARG003
        plan = plans.get(provenance.CATEGORY)
        return None if plan is None else cls(plan)

    def look(self, probe: _Probe, out: list[Finding]) -> None:
        tool = probe.tool
        sinks = self._plan.sinks.get(tool) if tool is not None and self._untrusted else None
        if not sinks:
            return
        step, at = probe.step, probe.at
        untrusted, trusted = self._untrusted, self._trusted
        minimum = self._plan.provenance.min_value_length
        for sink in sinks:
            for value in provenance.sink_values(step, sink, minimum):
                source = untrusted.first(value.key)
                if source < 0 or (trusted and trusted.first(value.key) >= 0):
                    continue
                origin = probe.state.steps[source]
                out.append(
                    provenance.untrusted_value_finding(
                        step, at, sink, value, origin=origin, source=source
                    )
                )

    def commit(self, probe: _Probe) -> None:
        texts = provenance.source_texts(self._plan, probe.step)
        if texts is not None:
            (self._trusted if texts[0] else self._untrusted).add(probe.at, texts[1])


class _Conditions(_Watch):
    """Conditions and relations (ARH-CND-001..004, policy language 1.1).

    The monitor keeps the rule's own :class:`~agent_reliability_harness.rules.conditions.Sweep`
    for the run: the latest successful call per tool and match values, and each source's
    parsed output. A call is checked against it before it runs; a successful call is indexed
    once recorded. O(the conditions and relations of the tool, plus the size of the arguments
    and outputs they read) per call.
    """

    __slots__ = ("_sweep",)

    def __init__(self, plan: conditions.Plan) -> None:
        self._sweep = conditions.Sweep(plan)

    @classmethod
    def create(cls, policy: Policy, plans: Plans) -> _Watch | None:  # noqa: ARG003
        plan = plans.get(conditions.CATEGORY)
        return None if plan is None else cls(plan)

    def look(self, probe: _Probe, out: list[Finding]) -> None:
        if probe.tool is not None:
            self._sweep.check(probe.at, probe.step, out)

    def commit(self, probe: _Probe) -> None:
        if probe.tool is not None and probe.step.status == "ok":
            self._sweep.record(probe.at, probe.step)


class _Confirmation(_Watch):
    """Confirmation before side effects (ARH-CFM-001, policy language 1.1), O(1) per step plus
    one pattern search per user turn.

    The rule's state: whether a user turn matching the pattern came since the previous
    successful guarded call, and that call's id. Once the run has a user turn, an unconfirmed
    guarded call is reported before it runs. Before the first user turn it cannot be: offline
    validation of such a run says only that confirmation cannot be verified (ARH-CFM-002, at the
    end), since the run may never have a user turn. Those calls' findings are kept and reported
    with the first user turn (by ``check`` and ``observe`` of it), when offline validation
    starts reporting them.
    """

    __slots__ = ("_confirmed", "_pending", "_plan", "_previous", "_users")

    def __init__(self, plan: confirmation.Plan) -> None:
        self._plan = plan
        self._users = False  # whether a user turn was recorded
        self._confirmed = False  # a confirmation not yet used up by a successful guarded call
        self._previous: str | None = None  # step id of the previous successful guarded call
        self._pending: list[Finding] = []  # unconfirmed guarded calls before the first user turn

    @classmethod
    def create(cls, policy: Policy, plans: Plans) -> _Watch | None:  # noqa: ARG003
        plan = plans.get(confirmation.CATEGORY)
        return None if plan is None else cls(plan)

    def _guarded(self, probe: _Probe) -> bool:
        return probe.tool is not None and probe.tool in self._plan.tools

    def look(self, probe: _Probe, out: list[Finding]) -> None:
        if probe.step.type == "user_message":
            if not self._users:
                out.extend(self._pending)
        elif self._users and not self._confirmed and self._guarded(probe):
            out.append(
                confirmation.not_confirmed_finding(self._plan, probe.step, probe.at, self._previous)
            )

    def commit(self, probe: _Probe) -> None:
        step = probe.step
        if step.type == "user_message":
            self._users = True
            self._pending = []
            if step.text and self._plan.search.search(step.text):
                self._confirmed = True
            return
        if not self._guarded(probe):
            return
        if not self._users:  # so not confirmed either
            self._pending.append(
                confirmation.not_confirmed_finding(self._plan, step, probe.at, self._previous)
            )
        if step.status == "ok":
            self._confirmed = False
            self._previous = step.step_id


if TYPE_CHECKING:
    # per cycle length: (calls in a row that matched the call a cycle earlier; the stretch's
    # first cycle as call ids, whether it is primitive, its first step id; (position, step id)
    # of the call that completed repetition max_cycle_repeats + 1)
    _Cycle = tuple[int, tuple[int, ...], bool, str, tuple[int, str] | None]


class _Loops(_Watch):
    """Loops (ARH-LOP-001, -002, policy language 1.1), the rule's sweeps kept open for the run.

    Identical calls: per distinct call (tool and arguments, as the rule keys them), the calls
    still inside the window, never more than max_identical_calls. Cycles: per cycle length ``p``
    (2 to max_cycle_length, at most 16), how many calls in a row have matched the call ``p``
    before, where that stretch started and which call took it over the limit; only the last
    max_cycle_length calls are kept. O(max_cycle_length) per call, plus the arguments' size to
    key it. A cycle over the limit is reported by every call that continues it, with the counts
    so far, as offline validation of the run so far words it.
    """

    __slots__ = ("_calls", "_cycles", "_ids", "_last", "_loops", "_names", "_recent", "_reported")

    def __init__(self, section: Loops) -> None:
        self._loops = section
        self._calls = 0  # named tool calls so far
        self._ids: dict[str, int] = {}  # call key -> small integer, in order of first call
        self._names: list[str] = []  # tool name per call id
        # identical calls: call key -> (call number, position, step id) of the calls in the window
        self._recent: dict[str, deque[tuple[int, int, str]]] = {}
        self._reported: set[str] = set()
        # cycles: (call id, position, step id) of the last max_cycle_length calls
        self._last: deque[tuple[int, int, str]] = deque(maxlen=section.max_cycle_length)
        self._cycles: list[_Cycle] = [(0, (), False, "", None)] * (section.max_cycle_length + 1)

    @classmethod
    def create(cls, policy: Policy, plans: Plans) -> _Watch | None:  # noqa: ARG003
        plan = plans.get(loops.CATEGORY)
        return None if plan is None else cls(plan.loops)

    def _key(self, probe: _Probe, tool: str) -> str:
        return loops.call_key(tool, None if self._loops.ignore_arguments else probe.key)

    def look(self, probe: _Probe, out: list[Finding]) -> None:
        tool = probe.tool
        if tool is None:
            return
        key = self._key(probe, tool)
        step_id = probe.step.step_id
        section = self._loops
        limit = section.max_identical_calls
        if limit is not None and key not in self._reported:
            queue = self._recent.get(key, ())
            stale = 0
            if section.window is not None:
                edge = self._calls - section.window
                while stale < len(queue) and queue[stale][0] <= edge:
                    stale += 1
            calls = len(queue) - stale + 1
            if calls > limit:  # limit >= 1, so the queue has the first call in the window
                out.append(
                    loops.identical_finding(
                        section,
                        tool,
                        calls=calls,
                        first_id=queue[stale][2],
                        at=probe.at,
                        step_id=step_id,
                    )
                )
        repeats = section.max_cycle_repeats
        if repeats is not None:
            for _, (run, block, primitive, first_id, over) in self._advance(key, probe):
                if primitive and over is not None:
                    out.append(
                        loops.cycle_finding(
                            repeats=repeats,
                            run=run,
                            cycle=[self._names[number] for number in block],
                            first_id=first_id,
                            at=over[0],
                            step_id=over[1],
                        )
                    )

    def _advance(self, key: str, probe: _Probe) -> list[tuple[int, _Cycle]]:
        """The cycle state of each length after the call ``probe`` (nothing is changed)."""
        repeats = self._loops.max_cycle_repeats
        assert repeats is not None
        number = self._ids.get(key, -1)  # -1: a call never made before matches no earlier one
        last = self._last
        count = len(last)
        states: list[tuple[int, _Cycle]] = []
        for period in range(2, self._loops.max_cycle_length + 1):
            if period > count or last[-period][0] != number:
                states.append((period, (0, (), False, "", None)))
                continue
            run, block, primitive, first_id, over = self._cycles[period]
            run += 1
            if run == 1:  # a new stretch: its first cycle is the last `period` calls
                block = tuple(entry[0] for entry in list(last)[count - period :])
                primitive = loops.primitive(list(block))
                first_id = last[-period][2]
            if run == period * repeats:  # this call completes repetition repeats + 1
                over = (probe.at, probe.step.step_id)
            states.append((period, (run, block, primitive, first_id, over)))
        return states

    def commit(self, probe: _Probe) -> None:
        tool = probe.tool
        if tool is None:
            return
        key = self._key(probe, tool)
        section = self._loops
        limit = section.max_identical_calls
        if limit is not None and key not in self._reported:
            queue = self._recent.get(key)
            if queue is None:
                queue = self._recent[key] = deque()
            queue.append((self._calls, probe.at, probe.step.step_id))
            if section.window is not None:
                while queue[0][0] <= self._calls - section.window:
                    queue.popleft()
            if len(queue) > limit:
                self._reported.add(key)
                del self._recent[key]
        if section.max_cycle_repeats is not None:
            for period, state in self._advance(key, probe):
                self._cycles[period] = state
            number = self._ids.get(key)
            if number is None:
                number = self._ids[key] = len(self._names)
                self._names.append(tool)
            self._last.append((number, probe.at, probe.step.step_id))
        self._calls += 1


def _same_call(checked: Step, done: Step) -> bool:
    """Whether ``done`` is the step that was checked (what was known of it before it ran)."""
    return (
        checked.step_id == done.step_id
        and checked.type == done.type
        and checked.tool_name == done.tool_name
        and checked.arguments == done.arguments
    )


_WATCHES: Final = (
    _StepRules,
    _Calls,
    _Repeats,
    _Totals,
    _Length,
    _StepIds,
    _Provenance,
    _Conditions,
    _Confirmation,
    _Loops,
)


def _uncopyable(value: Mapping[str, Any], pointer: str) -> InputError:
    """The error for the first value in ``value`` (depth first, in order) that ``copy.deepcopy``
    refuses (a lock, a generator, an object whose ``__deepcopy__`` fails), at its pointer. Only
    on the error path: each child is copied in turn to find it."""
    from agent_reliability_harness._decode import json_type, key_type_error
    from agent_reliability_harness.errors import join_pointer

    node: object = value
    where = pointer
    inside = {id(value)}  # a value that contains itself is not entered again
    reason = "copy.deepcopy fails"
    while True:
        children: list[tuple[str, object]] = []
        if isinstance(node, Mapping):
            for key, child in node.items():
                if not isinstance(key, str):
                    return key_type_error(key, where)
                children.append((join_pointer(where, key), child))
        elif isinstance(node, list | tuple):
            children = [(join_pointer(where, index), child) for index, child in enumerate(node)]
        for child_where, child in children:
            if id(child) in inside:
                continue
            try:
                copy.deepcopy(child)
            except Exception as exc:  # noqa: BLE001 - as in Monitor._probe
                node, where = child, child_where
                reason = f"{type(exc).__name__}: {exc}"
                inside.add(id(child))
                break
        else:
            why = excerpt(reason, quote=False)
            return InputError(
                f"a value of type {json_type(node)} cannot be copied ({why}); a step holds JSON "
                "data: strings, numbers, booleans, null, lists and objects",
                pointer=where,
            )


class Monitor:
    """Guard one run of an agent with a policy, step by step; see the module docstring.

    Steps are :class:`~agent_reliability_harness.model.trace.Step` objects or their JSON form
    (a mapping, parsed strictly; an :class:`InputError` points at ``/steps/<position>``);
    anything else is a :class:`UsageError`, and so are a ``policy`` that is not a
    :class:`Policy` and an identity the trace could not hold (``trace_id`` must be a non-empty
    string, ``agent_name`` and ``workflow`` strings). A monitor follows one run and is not
    thread-safe.
    """

    __slots__ = (
        "_checked",
        "_state",
        "_validator",
        "_watches",
        "agent_name",
        "trace_id",
        "workflow",
    )

    def __init__(
        self,
        policy: Policy,
        *,
        trace_id: str = "runtime",
        agent_name: str = "",
        workflow: str = "",
        fail_under: float = DEFAULT_FAIL_UNDER,
    ) -> None:
        self._validator = Validator(policy, fail_under)  # a UsageError unless it is a Policy
        trace_id, agent_name, workflow = check_identity(trace_id, agent_name, workflow)
        self.trace_id = trace_id
        self.agent_name = agent_name
        self.workflow = workflow
        plans = self._validator.plans  # the rules' own plans, compiled once
        watches = (watch.create(policy, plans) for watch in _WATCHES)
        self._watches = tuple(watch for watch in watches if watch is not None)
        self._state = _State()
        self._checked: tuple[Step, list[Finding]] | None = None

    @property
    def policy(self) -> Policy:
        return self._validator.policy

    @property
    def steps(self) -> tuple[Step, ...]:
        """The steps observed so far, in order."""
        return tuple(self._state.steps)

    def _probe(self, step: Step | Mapping[str, Any]) -> _Probe:
        """The step as the monitor keeps it: parsed from its JSON form, and a copy, so that an
        agent that reuses its argument dicts for the next call cannot change a recorded step
        (and a Step built in code is checked as one read from a file)."""
        if isinstance(step, Step):
            data: Mapping[str, Any] = step.to_dict()
        elif isinstance(step, Mapping):
            data = step
        else:
            raise UsageError(
                f"a step must be a Step or its JSON form (a mapping), got {type(step).__name__}"
            )
        where = f"/steps/{len(self._state.steps)}"
        try:
            data = copy.deepcopy(data if type(data) is dict else dict(data))
        except RecursionError:
            raise InputError(NESTED_TRACE, pointer=None) from None
        except Exception:  # noqa: BLE001 - whatever a value's own __deepcopy__ or pickling raises
            raise _uncopyable(data, where) from None
        problem = find_cycle(data, where)  # a copy keeps a cycle, and a rule would walk it for ever
        if problem is not None:
            raise problem
        return _Probe(Step.from_dict(data, pointer=where), self._state)

    def _look(self, probe: _Probe) -> list[Finding]:
        found: list[Finding] = []
        try:
            for watch in self._watches:
                watch.look(probe, found)
        except RecursionError:
            raise InputError(NESTED_TRACE, pointer=None) from None
        except SystemError as exc:
            raise engine_failed(exc) from None
        except (AttributeError, TypeError):
            # looked for only after a rule failed, as Validator.validate does: a key that is not
            # a string, which a step built in Python can hold and JSON cannot
            from agent_reliability_harness._decode import find_non_string_key

            where = f"/steps/{len(self._state.steps)}"
            problem = find_non_string_key(probe.step.to_dict(), where)
            if problem is None:
                raise  # a bug in a rule, not a problem of the step
            raise problem from None
        found.sort(key=Finding.sort_key)
        return found

    def check(self, step: Step | Mapping[str, Any]) -> list[Finding]:
        """The findings this step would add if it were recorded next, without recording it.

        Call it before a tool runs, with the step as it is known then (its name and
        arguments); rules that need the outcome (output, status, latency) wait for
        :meth:`observe`.
        """
        probe = self._probe(step)
        found = self._look(probe)
        self._checked = (probe.step, found)
        return found

    def guard(self, step: Step | Mapping[str, Any]) -> list[Finding]:
        """:meth:`check` the step and raise :class:`BlockedCallError` if an error was found at
        it (or at no step); otherwise return the findings. An error at an earlier step, which
        only this one reveals (a call made without the confirmation the first user turn turns
        out not to give), cannot be undone by refusing this step, and does not block it."""
        found = self.check(step)
        here = len(self._state.steps)
        if any(f.severity == "error" and f.step_index in (None, here) for f in found):
            assert self._checked is not None
            raise BlockedCallError(self._checked[0], found)
        return found

    def observe(self, step: Step | Mapping[str, Any]) -> list[Finding]:
        """Record a step that happened; return the findings it adds that :meth:`check` did not
        already return for it (those that depend on its outcome; all of them when the last
        check was not of this step: same id, type, tool and arguments)."""
        probe = self._probe(step)
        found = self._look(probe)
        checked = self._checked
        if checked is not None and _same_call(checked[0], probe.step):
            returned = set(checked[1])  # a set: a user turn can bring thousands of findings
            found = [f for f in found if f not in returned]
        self._checked = None
        for watch in self._watches:
            watch.commit(probe)
        self._state.commit(probe)
        return found

    def trace(self) -> Trace:
        """The run so far as a canonical trace."""
        steps = tuple(self._state.steps)
        version = schema_version_for(steps)
        return Trace(self.trace_id, self.agent_name, self.workflow, steps, version)

    def report(self) -> TraceReport:
        """Offline validation of the steps observed so far (score, verdict, findings)."""
        return self._validator._validate_parsed(self.trace())  # its steps were checked by _probe

    def finish(self) -> list[Finding]:
        """The findings of offline validation of the recorded run, in report order."""
        return list(self.report().findings)
