"""Run a CrewAI crew under ``arh run``: its agents' tool calls go through the gateway.

Needs the ``crewai`` extra (``pip install 'agent-reliability-harness[crewai]'``, a large
install: see docs/integrations.md). You write the crew; the adapter hands it the task's tools
as CrewAI tools::

    # my_agents.py
    from crewai import Agent, Crew, Task
    from agent_reliability_harness.integrations.crewai import make_agent

    def build(tools, task):
        helper = Agent(role="Support", goal="Resolve the request", backstory="...",
                       tools=tools, llm="gpt-4o-mini")
        work = Task(description=task.prompt, expected_output="The answer.", agent=helper)
        return Crew(agents=[helper], tasks=[work])

    agent = make_agent(build)

    # arh run --dataset golden --agent my_agents:agent -o runs/crewai

Each tool is a CrewAI ``BaseTool`` named as the task's tool, with its description and an
argument model of the task's parameters (every value accepted as it is: the gateway checks
them), whose run calls ``tools.call``: a refused or failed call is returned to the agent as
the tool's result (the gateway's error text). A per-task cap (``CapExceeded``) ends the task:
CrewAI catches a tool's exceptions and tells its model, so the crew runs on (every later call
refused by the gateway) until its model stops, and then the adapter raises the cap. The crew
is run with ``kickoff()``; the answer is the output's ``raw`` text. CrewAI counts tokens per
crew, so the usage is reported once, when the crew is done (it is recorded with the final
answer).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from agent_reliability_harness.harness.protocol import TaskView, Tools
from agent_reliability_harness.integrations._protocol import (
    call_tool,
    is_cap_exceeded,
    missing_extra,
)

__all__ = ["CrewAIAgent", "make_agent"]

Build = Callable[[list[Any], Any], Any]
"""``build(tools, task)``: the ``Crew`` to run, given the task's tools (CrewAI tools)."""


def _import() -> tuple[Any, Any]:
    # the extra may be absent: this module imports without it, so that the error says how to
    # install it (and `arh` never loads CrewAI, a heavy import, unless a crew runs)
    try:
        from crewai.tools import BaseTool
        from pydantic import create_model
    except ImportError as exc:
        raise missing_extra("CrewAI", "crewai", exc) from None
    return BaseTool, create_model


def _tool(spec: Mapping[str, Any], tools: Tools, caps: list[BaseException]) -> Any:
    base_tool, create_model = _import()
    name = str(spec["name"])
    parameters = spec.get("parameters") or {}
    properties = parameters.get("properties") or {}
    required = set(parameters.get("required") or ())
    fields = {
        key: (Any, ... if key in required else None)
        for key in properties
        if isinstance(key, str) and key.isidentifier()
    }
    schema = create_model(f"{name}_arguments", **fields)

    class GatewayTool(base_tool):  # type: ignore[misc, valid-type]
        def _run(self, **arguments: Any) -> str:
            given = {key: value for key, value in arguments.items() if value is not None}
            try:
                _, text = call_tool(tools, name, given)
            except Exception as exc:
                if is_cap_exceeded(exc):
                    caps.append(exc)  # CrewAI catches a tool's exceptions: raised after
                raise
            return text

    return GatewayTool(
        name=name, description=str(spec.get("description") or name), args_schema=schema
    )


class CrewAIAgent:
    """An agent of the adapter protocol that builds a crew per task with ``build(tools,
    task)`` and kicks it off."""

    def __init__(self, build: Build) -> None:
        self.build = build

    def __call__(self, task: TaskView, tools: Tools) -> object:
        caps: list[BaseException] = []
        crew = self.build([_tool(spec, tools, caps) for spec in tools.specs], task)
        try:
            output = crew.kickoff()
        except Exception:
            if caps:
                raise caps[0] from None
            raise
        if caps:
            raise caps[0]
        usage = getattr(crew, "usage_metrics", None)
        inputs = getattr(usage, "prompt_tokens", None)
        outputs = getattr(usage, "completion_tokens", None)
        if isinstance(inputs, int) and isinstance(outputs, int) and (inputs or outputs):
            tools.usage(inputs, outputs)
        return getattr(output, "raw", output)


def make_agent(build: Build) -> CrewAIAgent:
    """The protocol agent that runs the crew ``build(tools, task)`` returns. Raises the missing
    extra's error at once when CrewAI is not installed."""
    _import()
    return CrewAIAgent(build)
