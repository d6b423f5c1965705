"""Run an OpenAI Agents SDK agent under ``arh run``: its tool calls go through the gateway.

Needs the ``openai-agents`` extra (``pip install 'agent-reliability-harness[openai-agents]'``).
You write the agent; the adapter hands it the task's tools as SDK function tools::

    # my_agents.py
    from agents import Agent
    from agent_reliability_harness.integrations.openai_agents import make_agent

    agent = make_agent(
        lambda tools, task: Agent(name="support", instructions="...", model="gpt-4o-mini",
                                  tools=tools)
    )

    # arh run --dataset golden --agent my_agents:agent -o runs/agents-sdk

Each tool is a ``FunctionTool`` named as the task's tool, with its description and JSON Schema
parameters (not in strict mode: the task's schema is used as it is), whose invocation calls
``tools.call``: a refused or failed call is returned to the model as the tool's output (the
gateway's error text), and a per-task cap (``CapExceeded``) ends the run. The agent is run with
``Runner.run_sync`` on the task's prompt, with the SDK's tracing off (nothing is sent to a
tracing service), and the answer is the run's ``final_output`` (a structured output is given as
its JSON object). The token usage of each model response is reported to the gateway as the
response arrives. The name of the agent that calls a tool (the SDK agent's ``name``) goes with
the call when ``agent_names=True`` (for handoffs between sub-agents: step ``metadata.agent``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from agent_reliability_harness.harness.protocol import TaskView, Tools
from agent_reliability_harness.integrations._protocol import (
    call_tool,
    is_cap_exceeded,
    missing_extra,
    parse_arguments,
)

__all__ = ["DEFAULT_MAX_TURNS", "AgentsSdkAgent", "make_agent"]

DEFAULT_MAX_TURNS: Final = 20
Build = Callable[[list[Any], Any], Any]
"""``build(tools, task)``: the SDK ``Agent`` to run, given the task's tools (function tools)."""


def _import() -> Any:
    # the extra may be absent: this module imports without it, so that the error says how to
    # install it (and `arh` never loads the SDK unless one of its agents runs)
    try:
        import agents
    except ImportError as exc:
        raise missing_extra("OpenAI Agents SDK", "openai-agents", exc) from None
    return agents


class _Calls:
    """The gateway as the function tools call it, with the name of the agent running."""

    def __init__(self, tools: Tools, *, agent_names: bool) -> None:
        self.tools = tools
        self.agent_names = agent_names
        self.current: str | None = None

    def run(self, name: str, text: str) -> str:
        arguments = parse_arguments(text)
        if isinstance(arguments, str):
            return arguments
        _, text = call_tool(
            self.tools, name, arguments, agent=self.current if self.agent_names else None
        )
        return text


def _tool(sdk: Any, spec: Mapping[str, Any], calls: _Calls) -> Any:
    name = str(spec["name"])

    async def invoke(context: Any, text: str) -> str:  # noqa: ARG001 - the SDK's signature
        return calls.run(name, text)

    return sdk.FunctionTool(
        name=name,
        description=str(spec.get("description") or name),
        params_json_schema=dict(spec.get("parameters") or {"type": "object", "properties": {}}),
        on_invoke_tool=invoke,
        strict_json_schema=False,
    )


def _hooks(sdk: Any, tools: Tools, calls: _Calls) -> Any:
    class Hooks(sdk.RunHooks):  # type: ignore[misc]
        """Reports each response's token usage, and follows which agent is running."""

        async def on_agent_start(self, _context: Any, agent: Any) -> None:
            calls.current = getattr(agent, "name", None)

        async def on_llm_end(self, _context: Any, _agent: Any, response: Any) -> None:
            usage = getattr(response, "usage", None)
            inputs = getattr(usage, "input_tokens", None)
            outputs = getattr(usage, "output_tokens", None)
            if isinstance(inputs, int) and isinstance(outputs, int) and (inputs or outputs):
                tools.usage(inputs, outputs)

    return Hooks()


def _answer(output: object) -> object:
    dump = getattr(output, "model_dump", None)
    if callable(dump):  # a structured output (a pydantic model)
        return dump(mode="json")
    return output


class AgentsSdkAgent:
    """An agent of the adapter protocol that builds an SDK agent per task with ``build(tools,
    task)`` and runs it."""

    def __init__(
        self, build: Build, *, max_turns: int = DEFAULT_MAX_TURNS, agent_names: bool = False
    ) -> None:
        self.build = build
        self.max_turns = max_turns
        self.agent_names = agent_names

    def __call__(self, task: TaskView, tools: Tools) -> object:
        sdk = _import()
        calls = _Calls(tools, agent_names=self.agent_names)
        sdk_tools = [_tool(sdk, spec, calls) for spec in tools.specs]
        agent = self.build(sdk_tools, task)
        try:
            result = sdk.Runner.run_sync(
                agent,
                task.prompt,
                max_turns=self.max_turns,
                hooks=_hooks(sdk, tools, calls),
                run_config=sdk.RunConfig(tracing_disabled=True),
            )
        except Exception as exc:
            # the SDK wraps a tool's exception in its UserError: a cap goes up as itself
            cause: BaseException | None = exc
            while cause is not None:
                if is_cap_exceeded(cause):
                    raise cause from None
                cause = cause.__cause__
            raise
        return _answer(result.final_output)


def make_agent(
    build: Build, *, max_turns: int = DEFAULT_MAX_TURNS, agent_names: bool = False
) -> AgentsSdkAgent:
    """The protocol agent that runs the SDK agent ``build(tools, task)`` returns. Raises the
    missing extra's error at once when the SDK is not installed."""
    _import()
    return AgentsSdkAgent(build, max_turns=max_turns, agent_names=agent_names)
