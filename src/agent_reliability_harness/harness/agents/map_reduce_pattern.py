"""Map-reduce: fan a step out over the items of an earlier output, then reduce the results."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent_reliability_harness.harness.agents._script import Script
from agent_reliability_harness.harness.protocol import TaskView, Tools


def map_reduce(task: TaskView, tools: Tools) -> object:
    script = Script(task, tools)

    def announce(step: Mapping[str, Any], agent: str | None) -> None:
        if isinstance(step.get("map"), str):
            tools.say(f"Map: {step['tool']} over each item at {step['map']}.", agent=agent)

    answer = script.run(announce)
    tools.usage(100 + 20 * script.calls, 10 + len(answer) // 4)
    tools.say(f"Reduce: {script.calls} results into one answer.")
    return answer
