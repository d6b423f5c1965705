"""The LangGraph adapter (integrations/langgraph.py) with LangChain's own fake chat model
(FakeMessagesListChatModel, scripted replies) in a graph built as users build theirs, and the
gateway's test double. Skipped when the langgraph extra is not installed."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langgraph", reason="the langgraph extra is not installed")
pytest.importorskip("langchain_core", reason="the langgraph extra is not installed")

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from agent_reliability_harness.integrations.langgraph import make_agent
from integration_doubles import CapExceeded, FakeTask, order_tools


class ScriptedModel(FakeMessagesListChatModel):
    """LangChain's fake model, which also keeps the messages of each call."""

    seen: list[list[BaseMessage]] = []  # noqa: RUF012 - pydantic field, one list per test

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def _call(call_id: str, name: str, args: dict[str, Any], usage: tuple[int, int] | None = None):
    extra: dict[str, Any] = {}
    if usage:
        extra["usage_metadata"] = {
            "input_tokens": usage[0],
            "output_tokens": usage[1],
            "total_tokens": sum(usage),
        }
    return AIMessage(content="", tool_calls=[{"id": call_id, "name": name, "args": args}], **extra)


def _graph(model: ScriptedModel) -> Any:
    """A ReAct graph as the LangGraph guide builds one: a model node, a tool node, and the
    condition that loops while the model calls tools."""

    def build(tools: list[Any], task: Any) -> Any:
        bound = model.bind_tools(tools)

        def call_model(state: MessagesState) -> dict[str, Any]:
            return {"messages": [bound.invoke(state["messages"])]}

        graph = StateGraph(MessagesState)
        graph.add_node("model", call_model)
        graph.add_node("tools", ToolNode(tools))
        graph.add_edge(START, "model")
        graph.add_conditional_edges("model", tools_condition, {"tools": "tools", END: END})
        graph.add_edge("tools", "model")
        return graph.compile()

    return build


def test_a_langgraph_agent_calls_through_the_gateway() -> None:
    model = ScriptedModel(
        responses=[
            _call("c1", "get_order", {"order_id": "A1"}, usage=(100, 10)),
            _call("c2", "refund", {"order_id": "A1", "amount": "42.5"}),
            _call("c3", "refund", {"order_id": "A1", "amount": 42.5}, usage=(160, 12)),
            AIMessage(
                content="Refunded 42.5.",
                usage_metadata={"input_tokens": 200, "output_tokens": 5, "total_tokens": 205},
            ),
        ],
        seen=[],
    )
    tools = order_tools()
    answer = make_agent(_graph(model))(FakeTask(), tools)
    assert answer == "Refunded 42.5."
    assert tools.log == [
        ("usage", 100, 10),
        ("call", "get_order", {"order_id": "A1"}, None),
        ("call", "refund", {"order_id": "A1", "amount": "42.5"}, None),
        ("usage", 160, 12),
        ("call", "refund", {"order_id": "A1", "amount": 42.5}, None),
        ("usage", 200, 5),
    ]
    # the prompt was the user message; each tool's output or error went back to the model
    last = model.seen[-1]
    assert last[0].content == "Refund order A1 in full."
    results = [(m.tool_call_id, m.content) for m in last if isinstance(m, ToolMessage)]
    assert results == [
        ("c1", '{"id":"A1","total":42.5}'),
        ("c2", "error: argument 'amount' must be a number"),
        ("c3", '{"refunded":42.5}'),
    ]


def test_the_tools_carry_the_task_specs() -> None:
    made: list[Any] = []

    def build(tools: list[Any], task: Any) -> Any:
        made.extend(tools)
        return _graph(ScriptedModel(responses=[AIMessage(content="ok")], seen=[]))(tools, task)

    make_agent(build)(FakeTask(), order_tools())
    assert [t.name for t in made] == ["get_order", "refund"]
    assert made[0].description == "Look up an order by id."
    assert made[0].args_schema["required"] == ["order_id"]


def test_a_cap_ends_the_graph() -> None:
    model = ScriptedModel(
        responses=[
            _call("c1", "get_order", {"order_id": "A1"}),
            _call("c2", "get_order", {"order_id": "A1"}),
            AIMessage(content="never"),
        ],
        seen=[],
    )
    tools = order_tools(cap=1)
    with pytest.raises(CapExceeded):
        make_agent(_graph(model))(FakeTask(), tools)
    assert tools.calls() == [("get_order", {"order_id": "A1"})]
