"""ReAct: call a tool, observe its output, decide the next step from it."""

from __future__ import annotations

from agent_reliability_harness.harness.agents._script import Script
from agent_reliability_harness.harness.protocol import TaskView, Tools


def react(task: TaskView, tools: Tools) -> object:
    """Each step's arguments are filled from the outputs observed so far, then called."""
    return Script(task, tools).run()
