"""Loop rules (policy language 1.1): identical calls piling up, and cycles of calls repeating.

Calls are compared by tool name and arguments (identical as for max_attempts: equal JSON with keys
sorted), or by tool name alone with ``ignore_arguments``. Each distinct call is given a small
integer once, so every later comparison is constant time.

* Identical calls: one pass with, per distinct call, a queue of the positions (in the sequence of
  named tool calls) still inside the window. Linear in the number of calls.
* Cycles: for each cycle length ``p`` from 2 to ``max_cycle_length``, one pass that counts how
  long the sequence has been repeating itself with period ``p``. Linear in the number of calls
  times ``max_cycle_length`` (at most 16).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from agent_reliability_harness.model.policy import Policy
from agent_reliability_harness.model.report import CategoryResult, Finding
from agent_reliability_harness.rules._facts import TraceFacts
from agent_reliability_harness.rules.online import Probe, Watch
from agent_reliability_harness.rules.registry import rule
from agent_reliability_harness.rules.ruleset import RuleSet
from agent_reliability_harness.rules.selection import Findings

if TYPE_CHECKING:
    # the parser of the 1.1 sections is loaded only for policies that declare 1.1
    from agent_reliability_harness.model.policy.loops import Loops


CATEGORY = "loops"
LANGUAGE: Final = "1.1"

IDENTICAL_CALLS = rule(
    "ARH-LOP-001",
    decided="before_call",
    category=CATEGORY,
    severity="error",
    title="Identical call repeated too often within the window",
    trigger="loops.max_identical_calls is set and more than that many calls of one tool with "
    "identical arguments (or of one tool, with ignore_arguments) fall within loops.window "
    "consecutive tool calls (within the whole trace when no window is set), whatever their "
    "outcomes. One check per distinct call.",
    scoring="One failed loops check per distinct call over the limit.",
    anchor="the first call over the limit",
    remediation="Make the agent notice that it is repeating itself: use what the call already "
    "returned, change the request, or stop and tell the user.",
)
CYCLE = rule(
    "ARH-LOP-002",
    decided="before_call",
    category=CATEGORY,
    severity="error",
    title="Cycle of calls repeated too often",
    trigger="loops.max_cycle_repeats is set and a cycle, a block of 2 to max_cycle_length "
    "consecutive tool calls that is not itself a repetition of a shorter block (A, B and A, "
    "B, A are cycles, A, A is not), occurs more than max_cycle_repeats times back to back "
    "(A, B, A, B, A, B is A, B three times). A cycle is reported with its shortest length; one "
    "finding per run of repetitions.",
    scoring="One loops check for the whole trace, failed when any cycle is too long.",
    anchor="the call that completes the first repetition over the limit",
    remediation="Find what the agent waits for in the cycle (a result it never accepts, a state "
    "that never changes) and give it a way out; bound the number of rounds.",
)


@dataclass(frozen=True, slots=True)
class Plan:
    loops: Loops


def prepare(policy: Policy) -> Plan | None:
    section = None if policy.extensions is None else policy.extensions.loops
    return None if section is None else Plan(section)


def call_key(name: str, arguments: str | None) -> str:
    """What makes two calls the same call: the tool's name and, unless arguments are ignored
    (``None``), the arguments' key (``_facts.arguments_key``)."""
    return name if arguments is None else f"{name}\x00{arguments}"


def _call_ids(facts: TraceFacts, ignore_arguments: bool) -> tuple[list[int], list[str]]:
    """A small integer per distinct call, for each named call in order; and a label per id."""
    ids: dict[str, int] = {}
    labels: list[str] = []
    sequence: list[int] = []
    steps = facts.steps
    for at in facts.named_calls:
        step = steps[at]
        name = step.tool_name or ""
        key = call_key(name, None if ignore_arguments else facts.arguments_key(at))
        number = ids.get(key)
        if number is None:
            number = ids[key] = len(labels)
            labels.append(name)
        sequence.append(number)
    return sequence, labels


def evaluate(facts: TraceFacts, plan: Plan | None, out: Findings) -> CategoryResult:
    if plan is None or not facts.named_calls:
        return CategoryResult(CATEGORY, False, 100.0, 0, 0)
    loops = plan.loops
    sequence, labels = _call_ids(facts, loops.ignore_arguments)
    checks = failed = 0
    if loops.max_identical_calls is not None:
        checks += len(labels)
        failed += _identical(facts, loops, sequence, labels, out)
    if loops.max_cycle_repeats is not None:
        checks += 1
        failed += _cycles(facts, loops, sequence, labels, out) > 0
    return CategoryResult(CATEGORY, True, 100.0 * (checks - failed) / checks, checks, failed)


def _identical(
    facts: TraceFacts, loops: Loops, sequence: list[int], labels: list[str], out: Findings
) -> int:
    limit = loops.max_identical_calls
    assert limit is not None
    window = loops.window
    recent: dict[int, deque[int]] = {}
    reported: set[int] = set()
    failed = 0
    for index, number in enumerate(sequence):
        if number in reported:
            continue
        queue = recent.get(number)
        if queue is None:
            queue = recent[number] = deque()
        queue.append(index)
        if window is not None:
            while queue[0] <= index - window:
                queue.popleft()
        if len(queue) > limit:
            reported.add(number)
            at = facts.named_calls[index]
            first = facts.step_id(facts.named_calls[queue[0]])
            failed += out.add(
                identical_finding(
                    loops,
                    labels[number],
                    calls=len(queue),
                    first_id=first,
                    at=at,
                    step_id=facts.step_id(at),
                )
            )
    return failed


def identical_finding(
    loops: Loops, tool: str, *, calls: int, first_id: str, at: int, step_id: str
) -> Finding:
    """ARH-LOP-001 at the call ``step_id`` (position ``at``), the ``calls``-th identical call
    within the window, which starts at step ``first_id``."""
    limit = loops.max_identical_calls
    window = loops.window
    what = "calls of" if loops.ignore_arguments else "identical calls of"
    scope = "in the trace" if window is None else f"within {window} tool calls"
    return IDENTICAL_CALLS.finding(
        f"{calls} {what} {tool!r} {scope} (from step {first_id!r}), more than "
        f"max_identical_calls {limit}",
        at=at,
        step_id=step_id,
        subject=tool,
        expected=f"<= {limit} {what} the tool {scope}",
        observed=f"{calls} calls",
    )


def primitive(block: list[int]) -> bool:
    """Whether ``block`` is not a repetition of a shorter block (so its cycle length is its own)."""
    size = len(block)
    return all(block[:d] * (size // d) != block for d in range(1, size // 2 + 1) if size % d == 0)


def _cycles(
    facts: TraceFacts, loops: Loops, sequence: list[int], labels: list[str], out: Findings
) -> int:
    repeats = loops.max_cycle_repeats
    assert repeats is not None
    found = 0
    count = len(sequence)
    for period in range(2, loops.max_cycle_length + 1):
        threshold = (
            period * repeats
        )  # matching calls in a row: the cycle then occurs repeats+1 times
        run = 0
        for index in range(period, count + 1):
            if index < count and sequence[index] == sequence[index - period]:
                run += 1
                continue
            if run >= threshold:
                start = index - run - period  # first call of the periodic stretch
                block = sequence[start : start + period]
                if primitive(block):
                    # the call that completes repetition repeats + 1
                    over = facts.named_calls[start + period * (repeats + 1) - 1]
                    found += out.add(
                        cycle_finding(
                            repeats=repeats,
                            run=run,
                            cycle=[labels[number] for number in block],
                            first_id=facts.step_id(facts.named_calls[start]),
                            at=over,
                            step_id=facts.step_id(over),
                            first_name=facts.step_name(facts.named_calls[start]),
                        )
                    )
            run = 0
    return found


def cycle_finding(
    *,
    repeats: int,
    run: int,
    cycle: list[str],
    first_id: str,
    at: int,
    step_id: str,
    first_name: str | None = None,
) -> Finding:
    """ARH-LOP-002 for the calls of ``cycle`` (tool names) repeating from step ``first_id``, with
    ``run`` calls after the first round matching the call a cycle earlier; anchored at the call
    that completes repetition ``repeats`` + 1 (``step_id``, at position ``at``). The subject
    names the first step by ``first_name`` (its stable reference in a converted trace, whose
    step ids change between recordings), else by its id."""
    period = len(cycle)
    total = (run + period) // period
    shown = " -> ".join(cycle)
    return CYCLE.finding(
        f"the cycle {shown} repeats {total} times in a row from step {first_id!r}, more than "
        f"max_cycle_repeats {repeats}",
        at=at,
        step_id=step_id,
        subject=f"cycle {shown} from {first_id if first_name is None else first_name}",
        expected=f"<= {repeats} repetitions of a cycle",
        observed=f"{total} repetitions ({run + period} calls)",
    )


# per cycle length: (calls in a row that matched the call a cycle earlier; the stretch's
# first cycle as call ids, whether it is primitive, its first step id; (position, step id)
# of the call that completed repetition max_cycle_repeats + 1)
_Cycle = tuple[int, tuple[int, ...], bool, str, tuple[int, str] | None]


class _Loops(Watch):
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

    def _key(self, probe: Probe, tool: str) -> str:
        return call_key(tool, None if self._loops.ignore_arguments else probe.key)

    def look(self, probe: Probe, out: Findings) -> None:
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
                out.add(
                    identical_finding(
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
                    out.add(
                        cycle_finding(
                            repeats=repeats,
                            run=run,
                            cycle=[self._names[number] for number in block],
                            first_id=first_id,
                            at=over[0],
                            step_id=over[1],
                        )
                    )

    def _advance(self, key: str, probe: Probe) -> list[tuple[int, _Cycle]]:
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
            run, block, is_primitive, first_id, over = self._cycles[period]
            run += 1
            if run == 1:  # a new stretch: its first cycle is the last `period` calls
                block = tuple(entry[0] for entry in list(last)[count - period :])
                is_primitive = primitive(list(block))
                first_id = last[-period][2]
            if run == period * repeats:  # this call completes repetition repeats + 1
                over = (probe.at, probe.step.step_id)
            states.append((period, (run, block, is_primitive, first_id, over)))
        return states

    def commit(self, probe: Probe) -> None:
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


def watch(policy: Policy, plan: Plan | None) -> Watch | None:  # noqa: ARG001
    return None if plan is None else _Loops(plan.loops)


RULE_SET: Final = RuleSet(CATEGORY, prepare, evaluate, watch, language="1.1")
