"""The rules applied step by step, as the runtime monitor drives them.

Offline, each rule set folds over a whole trace at once (``RuleSet.evaluate``, with the indexes
of :class:`~agent_reliability_harness.rules._facts.TraceFacts`). While an agent runs, the same
rule set keeps a :class:`Watch`: its own state of that fold, advanced one step at a time.
``look`` appends the findings a step would add, exactly as offline validation of the run up to
that step words them, without changing anything; ``commit`` advances the state once the step
is recorded. A :class:`Probe` carries one step and what several watches need from it, worked
out once; :class:`RunState` is what every watch may read about the steps before it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from agent_reliability_harness.model.trace import Step, Trace
from agent_reliability_harness.rules._facts import TraceFacts, arguments_key
from agent_reliability_harness.rules.selection import Findings

if TYPE_CHECKING:
    from agent_reliability_harness.model.report import Finding

__all__ = ["Probe", "RunState", "StepAlone", "Watch"]


class RunState:
    """What every watch may read about the steps recorded so far."""

    __slots__ = ("agent_steps", "counts", "firsts", "steps")

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.agent_steps = 0
        self.counts: dict[str, int] = {}  # named tool -> calls so far
        self.firsts: dict[str, tuple[int, str]] = {}  # named tool -> (position, step id) of call 1

    def commit(self, probe: Probe) -> None:
        self.steps.append(probe.step)
        if probe.is_agent:
            self.agent_steps += 1
        tool = probe.tool
        if tool is not None:
            count = self.counts.get(tool, 0)
            if not count:
                self.firsts[tool] = (probe.at, probe.step.step_id)
            self.counts[tool] = count + 1


class Probe:
    """One step at the next position of a run, with what several watches need from it."""

    __slots__ = ("_alone", "_key", "at", "is_agent", "state", "step", "tool")

    def __init__(self, step: Step, state: RunState) -> None:
        self.step = step
        self.state = state  # the steps before this one
        self.at = len(state.steps)
        self.is_agent = step.type != "user_message"
        # a named tool call is what calls_by_tool indexes offline
        self.tool = step.tool_name if step.type == "tool_call" and step.tool_name else None
        self._key: str | None = None
        self._alone: TraceFacts | None = None

    @property
    def key(self) -> str:
        """The identity of the call's arguments (see ``_facts.arguments_key``)."""
        if self._key is None:
            self._key = arguments_key(self.step.arguments, self.at)
        return self._key

    @property
    def alone(self) -> TraceFacts:
        """The facts of a trace of this step alone, for the rules that look at one step at a
        time and run their offline fold on it (their findings are anchored at position 0)."""
        if self._alone is None:
            self._alone = TraceFacts(Trace("", "", "", (self.step,)))
        return self._alone


class Watch:
    """The state of one rule set's fold over a run (see the module docstring)."""

    __slots__ = ()

    def look(self, probe: Probe, out: Findings) -> None:
        raise NotImplementedError

    def commit(self, probe: Probe) -> None:
        """Advance the watch's own state; ``probe.state`` is still that of the steps before."""


class StepAlone(Watch):
    """The watch of a rule set whose rules look at one step at a time: its offline fold, run on
    each step that ``applies`` to, alone, with the findings anchored at the step's position.
    ``keep`` leaves out what only the whole run decides (a coverage over all the steps)."""

    __slots__ = ("_applies", "_evaluate", "_keep", "_plan")

    def __init__(
        self,
        evaluate: Callable[[TraceFacts, Any, Findings], object],
        plan: Any,
        applies: Callable[[Probe], bool],
        keep: Callable[[Finding], bool] | None = None,
    ) -> None:
        self._evaluate = evaluate
        self._plan = plan
        self._applies = applies
        self._keep = keep

    def look(self, probe: Probe, out: Findings) -> None:
        if not self._applies(probe):
            return
        found = Findings()
        self._evaluate(probe.alone, self._plan, found)
        keep = self._keep
        out.add_all(
            replace(finding, step_index=probe.at)
            for finding in found
            if keep is None or keep(finding)
        )
