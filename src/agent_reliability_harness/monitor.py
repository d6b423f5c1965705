"""The runtime guard: the policy of offline validation, applied while the agent runs.

A :class:`Monitor` follows one run step by step::

    monitor = Monitor(policy, trace_id="run-42")
    found = monitor.check(step)      # before the tool runs: what this step would violate
    ...                              # run the tool, unless an error finding says otherwise
    monitor.observe(completed_step)  # after it ran: record it (and report what its outcome adds)
    monitor.finish()                 # at the end: the findings of offline validation, exactly

Only *monotone* findings can be decided while the run goes on: those that no later step can take
back. Each rule says when its findings can be decided (``Rule.decided``, shown in docs/rules.md):
``check`` reports those decided before the call, from the steps before it and the call's tool
and arguments; ``observe`` adds those that need the step's outcome; the findings decided only at
the end of the run (a required tool never called, an error never retried, citation coverage,
...) come from :meth:`Monitor.finish`, which validates the recorded steps with the same
:class:`~agent_reliability_harness.engine.Validator` as ``arh validate``. A monitored run is not
converted from a transcript, so it has no adapter notes and never the rules decided from them.

Each finding that ``check`` or ``observe`` returns for the step at position ``i`` equals a finding
of ``validate_trace`` on the steps ``0..i`` (counts in messages are those of that prefix), and it
stays in the result of every longer run. One finding can only come late: a guarded call made
before the run's first user turn. Offline validation of such a run cannot tell an unconfirmed
call from a run without user turns (it says only that confirmation cannot be verified,
ARH-CFM-002, a warning); the ARH-CFM-001 findings of those calls are reported with the first
user turn.

The monitor only drives the rules: each rule set keeps the state of its own fold over the run
(a :class:`~agent_reliability_harness.rules.online.Watch`, made by ``RuleSet.watch`` from the
plan the validator compiled once), ``look`` appends what a step would add without changing
anything, and ``commit`` advances the state once the step is recorded. Cost per step, whatever
the length of the run, grows with the size of the step and of the policy only, except for
provenance, where a value never seen before costs one C-speed scan of the untrusted text so far
(see ``rules.provenance``). The module is pure: it never reads a clock or a file.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from agent_reliability_harness._decode import (
    find_cycle,
    find_non_string_key,
    json_type,
    key_type_error,
)
from agent_reliability_harness.engine import NESTED_TRACE, Validator, engine_failed
from agent_reliability_harness.errors import ArhError, InputError, UsageError, excerpt, join_pointer
from agent_reliability_harness.model.answers import Expectations
from agent_reliability_harness.model.policy import Policy
from agent_reliability_harness.model.report import Finding, TraceReport
from agent_reliability_harness.model.trace import Step, Trace, check_identity, schema_version_for
from agent_reliability_harness.rules.online import Probe, RunState
from agent_reliability_harness.rules.selection import Findings, RuleSelection
from agent_reliability_harness.scoring import DEFAULT_FAIL_UNDER

__all__ = ["BlockedCallError", "Monitor"]


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


def _same_call(checked: Step, done: Step) -> bool:
    """Whether ``done`` is the step that was checked (what was known of it before it ran)."""
    return (
        checked.step_id == done.step_id
        and checked.type == done.type
        and checked.tool_name == done.tool_name
        and checked.arguments == done.arguments
    )


def _uncopyable(value: Mapping[str, Any], pointer: str) -> InputError:
    """The error for the first value in ``value`` (depth first, in order) that ``copy.deepcopy``
    refuses (a lock, a generator, an object whose ``__deepcopy__`` fails), at its pointer. Only
    on the error path: each child is copied in turn to find it."""
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
    thread-safe. ``selection`` switches rules off or changes their severity, and
    ``expectations`` give the run's expected outcome (by its trace id or workflow) to the answer
    checks of :meth:`report` and :meth:`finish`, as for
    :class:`~agent_reliability_harness.engine.Validator` (``rules.selection``).
    """

    __slots__ = (
        "_checked",
        "_recorded",
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
        selection: RuleSelection | None = None,
        expectations: Expectations | None = None,
    ) -> None:
        # a UsageError unless it is a Policy
        self._validator = Validator(
            policy, fail_under, selection=selection, expectations=expectations
        )
        trace_id, agent_name, workflow = check_identity(trace_id, agent_name, workflow)
        self.trace_id = trace_id
        self.agent_name = agent_name
        self.workflow = workflow
        # each rule set's fold, kept step by step, on the plans the validator compiled once
        watches = (rules.watch(policy, plan) for rules, plan in self._validator.plans)
        self._watches = tuple(watch for watch in watches if watch is not None)
        self._state = RunState()
        self._recorded: list[Step] = []  # the steps as given (the rules see them as read)
        self._checked: tuple[Step, list[Finding]] | None = None

    @property
    def policy(self) -> Policy:
        return self._validator.policy

    @property
    def steps(self) -> tuple[Step, ...]:
        """The steps observed so far, in order."""
        return tuple(self._recorded)

    def _probe(self, step: Step | Mapping[str, Any]) -> tuple[Probe, Step]:
        """The step as the rules see it, and as the monitor keeps it: parsed from its JSON
        form, and a copy, so that an agent that reuses its argument dicts for the next call
        cannot change a recorded step (and a Step built in code is checked as one read from a
        file). The rules see a call whose output the policy's ``tool_failures`` declares a
        failure with status ``error``, as offline validation does."""
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
        parsed = Step.from_dict(data, pointer=where)
        failures = self._validator.policy.tool_failures
        if failures is None:
            return Probe(parsed, self._state), parsed
        try:
            seen = failures.read(parsed)
        except RecursionError:
            raise InputError(NESTED_TRACE, pointer=None) from None
        return Probe(seen, self._state), parsed

    def _look(self, probe: Probe) -> list[Finding]:
        found = Findings(self._validator.selection)
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
        probe, given = self._probe(step)
        found = self._look(probe)
        self._checked = (given, found)
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
        probe, given = self._probe(step)
        found = self._look(probe)
        checked = self._checked
        if checked is not None and _same_call(checked[0], given):
            returned = set(checked[1])  # a set: a user turn can bring thousands of findings
            found = [f for f in found if f not in returned]
        self._checked = None
        for watch in self._watches:
            watch.commit(probe)
        self._state.commit(probe)
        self._recorded.append(given)
        return found

    def trace(self) -> Trace:
        """The run so far as a canonical trace."""
        steps = tuple(self._recorded)
        version = schema_version_for(steps)
        return Trace(self.trace_id, self.agent_name, self.workflow, steps, version)

    def report(self) -> TraceReport:
        """Offline validation of the steps observed so far (score, verdict, findings)."""
        return self._validator._validate_parsed(self.trace())  # its steps were checked by _probe

    def finish(self) -> list[Finding]:
        """The findings of offline validation of the recorded run, in report order."""
        return list(self.report().findings)
