"""Swarm: agents hand the task off to each other when the next tool belongs to another agent."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent_reliability_harness.harness.agents._script import Script
from agent_reliability_harness.harness.protocol import TaskView, Tools


def swarm(task: TaskView, tools: Tools) -> object:
    script = Script(task, tools)
    current: list[str | None] = [None]

    def hand_off(step: Mapping[str, Any], agent: str | None) -> None:
        if current[0] is not None and agent is not None and agent != current[0]:
            tools.say(f"Handing off to {agent} for {step['tool']}.", agent=current[0])
        if agent is not None:
            current[0] = agent

    return script.run(hand_off)
