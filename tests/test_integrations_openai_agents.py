"""The OpenAI Agents SDK adapter (integrations/openai_agents.py) with a scripted model of the
SDK's own model interface (agents.models.interface.Model: each call returns the next scripted
response, and keeps what it was given), and the gateway's test double. Skipped when the
openai-agents extra is not installed."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("agents", reason="the openai-agents extra is not installed")

from agents import Agent, ModelResponse, Usage
from agents.models.interface import Model
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from agent_reliability_harness.integrations.openai_agents import make_agent
from integration_doubles import CapExceeded, FakeTask, order_tools


def _call(call_id: str, name: str, args: dict[str, Any]) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        arguments=json.dumps(args), call_id=call_id, name=name, type="function_call", id=call_id
    )


def _text(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id="m",
        content=[ResponseOutputText(text=text, type="output_text", annotations=[])],
        role="assistant",
        status="completed",
        type="message",
    )


class ScriptedModel(Model):
    def __init__(self, *responses: tuple[Any, tuple[int, int]]) -> None:
        self.responses = list(responses)
        self.inputs: list[Any] = []

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        self.inputs.append(input)
        item, (inputs, outputs) = self.responses.pop(0)
        usage = Usage(
            requests=1, input_tokens=inputs, output_tokens=outputs, total_tokens=inputs + outputs
        )
        return ModelResponse(output=[item], usage=usage, response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def _build(model: ScriptedModel, name: str = "support") -> Any:
    return lambda tools, _: Agent(name=name, instructions="Help.", model=model, tools=tools)


def test_an_sdk_agent_calls_through_the_gateway() -> None:
    model = ScriptedModel(
        (_call("c1", "get_order", {"order_id": "A1"}), (100, 10)),
        (_call("c2", "refund", {"order_id": "A1", "amount": "42.5"}), (0, 0)),
        (_call("c3", "refund", {"order_id": "A1", "amount": 42.5}), (160, 12)),
        (_text("Refunded 42.5."), (200, 5)),
    )
    tools = order_tools()
    answer = make_agent(_build(model))(FakeTask(), tools)
    assert answer == "Refunded 42.5."
    # a response without usage (0, 0) reports none
    assert tools.log == [
        ("usage", 100, 10),
        ("call", "get_order", {"order_id": "A1"}, None),
        ("call", "refund", {"order_id": "A1", "amount": "42.5"}, None),
        ("usage", 160, 12),
        ("call", "refund", {"order_id": "A1", "amount": 42.5}, None),
        ("usage", 200, 5),
    ]
    assert model.inputs[0] == "Refund order A1 in full." or model.inputs[0][0]["content"] == (
        "Refund order A1 in full."
    )
    outputs = [
        (item["call_id"], item["output"])
        for item in model.inputs[-1]
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]
    assert outputs == [
        ("c1", '{"id":"A1","total":42.5}'),
        ("c2", "error: argument 'amount' must be a number"),
        ("c3", '{"refunded":42.5}'),
    ]


def test_agent_names_go_with_the_calls_when_asked() -> None:
    model = ScriptedModel(
        (_call("c1", "get_order", {"order_id": "A1"}), (0, 0)), (_text("ok"), (0, 0))
    )
    tools = order_tools()
    make_agent(_build(model, name="billing"), agent_names=True)(FakeTask(), tools)
    assert tools.log == [("call", "get_order", {"order_id": "A1"}, "billing")]


def test_a_cap_ends_the_run() -> None:
    model = ScriptedModel(
        (_call("c1", "get_order", {"order_id": "A1"}), (0, 0)),
        (_call("c2", "get_order", {"order_id": "A1"}), (0, 0)),
        (_text("never"), (0, 0)),
    )
    tools = order_tools(cap=1)
    with pytest.raises(CapExceeded):
        make_agent(_build(model))(FakeTask(), tools)
    assert tools.calls() == [("get_order", {"order_id": "A1"})]
