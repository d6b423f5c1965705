"""Run a LangGraph agent under ``arh run``: its tool calls go through the harness's gateway.

Needs the ``langgraph`` extra (``pip install 'agent-reliability-harness[langgraph]'``). You
write the graph; the adapter hands it the task's tools as LangChain tools::

    # my_agents.py
    from langgraph.prebuilt import create_react_agent
    from agent_reliability_harness.integrations.langgraph import make_agent

    agent = make_agent(lambda tools, task: create_react_agent(my_model, tools))

    # arh run --dataset golden --agent my_agents:agent -o runs/langgraph

Each tool is a ``StructuredTool`` named as the task's tool, with its description and JSON
Schema parameters, whose function calls ``tools.call``: a refused or failed call is returned to
the model as the tool's error (``ToolException``), and a per-task cap (``CapExceeded``) ends the
run. The graph is invoked with the task's prompt as the one user message (``{"messages":
[("user", prompt)]}``) and the answer is the text of the last message; the token usage of each
model call (its ``usage_metadata``) is reported to the gateway as the call ends.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from agent_reliability_harness.harness.protocol import TaskView, Tools
from agent_reliability_harness.integrations._protocol import (
    call_tool,
    missing_extra,
)

__all__ = ["DEFAULT_RECURSION_LIMIT", "LangGraphAgent", "make_agent"]

DEFAULT_RECURSION_LIMIT: Final = 50
Build = Callable[[list[Any], Any], Any]
"""``build(tools, task)``: the graph to run, given the task's tools (LangChain tools)."""


def _import() -> Any:
    # the extra may be absent: this module imports without it, so that the error says how to
    # install it (and `arh` never loads LangChain unless a LangGraph agent runs)
    try:
        from langchain_core.callbacks import BaseCallbackHandler
        from langchain_core.tools import StructuredTool, ToolException
    except ImportError as exc:
        raise missing_extra("LangGraph", "langgraph", exc) from None
    return BaseCallbackHandler, StructuredTool, ToolException


def _tool(spec: Mapping[str, Any], tools: Tools) -> Any:
    _, structured_tool, tool_exception = _import()
    name = str(spec["name"])

    def run(**arguments: Any) -> str:
        ok, text = call_tool(tools, name, arguments)
        if not ok:
            raise tool_exception(text)
        return text

    return structured_tool.from_function(
        func=run,
        name=name,
        description=str(spec.get("description") or name),
        args_schema=dict(spec.get("parameters") or {"type": "object", "properties": {}}),
        infer_schema=False,
        handle_tool_error=True,
    )


def _usage_handler(tools: Tools) -> Any:
    base_handler, _, _ = _import()

    class UsageHandler(base_handler):  # type: ignore[misc, valid-type]
        """Reports each model call's token usage to the gateway as the call ends."""

        def on_llm_end(self, response: Any, **kwargs: Any) -> None:  # noqa: ARG002
            for generations in getattr(response, "generations", ()):
                for generation in generations:
                    message = getattr(generation, "message", None)
                    usage = getattr(message, "usage_metadata", None) or {}
                    inputs, outputs = usage.get("input_tokens"), usage.get("output_tokens")
                    if isinstance(inputs, int) and isinstance(outputs, int):
                        tools.usage(inputs, outputs)

    return UsageHandler()


def _text(content: object) -> object:
    """A message's content as the answer: a string as it is, the text parts of a list of
    content blocks joined, anything else as it is."""
    if isinstance(content, list):
        parts = [
            part if isinstance(part, str) else part.get("text", "")
            for part in content
            if isinstance(part, str) or (isinstance(part, dict) and part.get("type") == "text")
        ]
        return "".join(parts)
    return content


class LangGraphAgent:
    """An agent of the adapter protocol that builds a graph per task with ``build(tools,
    task)`` and invokes it."""

    def __init__(self, build: Build, *, recursion_limit: int = DEFAULT_RECURSION_LIMIT) -> None:
        self.build = build
        self.recursion_limit = recursion_limit

    def __call__(self, task: TaskView, tools: Tools) -> object:
        lc_tools = [_tool(spec, tools) for spec in tools.specs]
        graph = self.build(lc_tools, task)
        state = graph.invoke(
            {"messages": [("user", task.prompt)]},
            config={"recursion_limit": self.recursion_limit, "callbacks": [_usage_handler(tools)]},
        )
        messages = state.get("messages") if isinstance(state, dict) else None
        if not messages:
            return None
        return _text(getattr(messages[-1], "content", None))


def make_agent(build: Build, *, recursion_limit: int = DEFAULT_RECURSION_LIMIT) -> LangGraphAgent:
    """The protocol agent that runs the graph ``build(tools, task)`` returns (any runnable
    whose state has ``messages``: ``create_react_agent``, a ``StateGraph`` compiled, ...).
    Raises the missing extra's error at once when LangChain is not installed."""
    _import()
    return LangGraphAgent(build, recursion_limit=recursion_limit)
