"""The reference agents: deterministic, driven by the task's reference script, no model.

Name them on the command line as ``agent_reliability_harness.harness.agents:<name>``: ``react``,
``plan_and_execute``, ``supervisor``, ``swarm``, ``map_reduce``, or ``auto`` (the agent of the
task's pattern).
"""

from __future__ import annotations

from collections.abc import Callable

from agent_reliability_harness.harness.agents.map_reduce_pattern import map_reduce
from agent_reliability_harness.harness.agents.plan_pattern import plan_and_execute
from agent_reliability_harness.harness.agents.react_pattern import react
from agent_reliability_harness.harness.agents.supervisor_pattern import supervisor
from agent_reliability_harness.harness.agents.swarm_pattern import swarm
from agent_reliability_harness.harness.protocol import TaskView, Tools

__all__ = ["BY_PATTERN", "auto", "map_reduce", "plan_and_execute", "react", "supervisor", "swarm"]

BY_PATTERN: dict[str, Callable[[TaskView, Tools], object]] = {
    "react": react,
    "plan_and_execute": plan_and_execute,
    "supervisor": supervisor,
    "swarm": swarm,
    "map_reduce": map_reduce,
}


def auto(task: TaskView, tools: Tools) -> object:
    """The reference agent of the task's pattern."""
    return BY_PATTERN[task.pattern](task, tools)
