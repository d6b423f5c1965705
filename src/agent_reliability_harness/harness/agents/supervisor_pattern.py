"""Supervisor: a supervisor delegates each step to the sub-agent that owns its tool, and
composes the answer from what they report."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent_reliability_harness.harness.agents._script import Script
from agent_reliability_harness.harness.protocol import TaskView, Tools

SUPERVISOR = "supervisor"


def supervisor(task: TaskView, tools: Tools) -> object:
    script = Script(task, tools)

    def delegate(step: Mapping[str, Any], agent: str | None) -> None:
        tools.say(f"Delegating {step['tool']} to {agent or SUPERVISOR}.", agent=SUPERVISOR)

    return script.run(delegate)
