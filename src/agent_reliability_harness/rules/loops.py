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

from agent_reliability_harness._record import Record
from agent_reliability_harness.model.policy import Policy
from agent_reliability_harness.model.report import CategoryResult, Finding
from agent_reliability_harness.rules._facts import TraceFacts
from agent_reliability_harness.rules.registry import rule

TYPE_CHECKING = False  # `typing` costs milliseconds at start-up; only type checkers need it
if TYPE_CHECKING:
    from typing import Final

    # the parser of the 1.1 sections is loaded only for policies that declare 1.1
    from agent_reliability_harness.model.policy.loops import Loops

CATEGORY = "loops"
LANGUAGE: Final = "1.1"

IDENTICAL_CALLS = rule(
    "ARH-LOP-001",
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


class Plan(Record):
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


def evaluate(facts: TraceFacts, plan: Plan | None, out: list[Finding]) -> CategoryResult:
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
    facts: TraceFacts, loops: Loops, sequence: list[int], labels: list[str], out: list[Finding]
) -> int:
    limit = loops.max_identical_calls
    assert limit is not None
    window = loops.window
    recent: dict[int, deque[int]] = {}
    reported: set[int] = set()
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
            out.append(
                identical_finding(
                    loops,
                    labels[number],
                    calls=len(queue),
                    first_id=first,
                    at=at,
                    step_id=facts.step_id(at),
                )
            )
    return len(reported)


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
    facts: TraceFacts, loops: Loops, sequence: list[int], labels: list[str], out: list[Finding]
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
                    found += 1
                    # the call that completes repetition repeats + 1
                    over = facts.named_calls[start + period * (repeats + 1) - 1]
                    out.append(
                        cycle_finding(
                            repeats=repeats,
                            run=run,
                            cycle=[labels[number] for number in block],
                            first_id=facts.step_id(facts.named_calls[start]),
                            at=over,
                            step_id=facts.step_id(over),
                        )
                    )
            run = 0
    return found


def cycle_finding(
    *, repeats: int, run: int, cycle: list[str], first_id: str, at: int, step_id: str
) -> Finding:
    """ARH-LOP-002 for the calls of ``cycle`` (tool names) repeating from step ``first_id``, with
    ``run`` calls after the first round matching the call a cycle earlier; anchored at the call
    that completes repetition ``repeats`` + 1 (``step_id``, at position ``at``)."""
    period = len(cycle)
    total = (run + period) // period
    shown = " -> ".join(cycle)
    return CYCLE.finding(
        f"the cycle {shown} repeats {total} times in a row from step {first_id!r}, more than "
        f"max_cycle_repeats {repeats}",
        at=at,
        step_id=step_id,
        subject=f"cycle {shown} from {first_id}",
        expected=f"<= {repeats} repetitions of a cycle",
        observed=f"{total} repetitions ({run + period} calls)",
    )
