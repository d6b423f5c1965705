"""Plan-and-execute: state the whole plan first, then carry it out step by step."""

from __future__ import annotations

from agent_reliability_harness.harness.agents._script import Script
from agent_reliability_harness.harness.protocol import TaskView, Tools


def plan_and_execute(task: TaskView, tools: Tools) -> object:
    script = Script(task, tools)
    lines = [f"{n}. {step['tool']}" for n, step in enumerate(script.steps, start=1)]
    tools.usage(120 + len(task.prompt) // 4, 10 + 8 * len(lines))
    tools.say("Plan:\n" + "\n".join(lines) if lines else "Plan: answer directly.")
    return script.run()
