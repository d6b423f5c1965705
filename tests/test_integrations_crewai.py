"""The CrewAI adapter (integrations/crewai.py) with a scripted LLM of CrewAI's own LLM interface
(crewai.llms.base_llm.BaseLLM: each call returns the next scripted text reply, and keeps the
messages it was given), and the gateway's test double. Skipped when the crewai extra is not
installed. CrewAI's telemetry and tracing are switched off for the test."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("crewai", reason="the crewai extra is not installed")

from crewai import Agent, Crew, Task
from crewai.llms.base_llm import BaseLLM

from agent_reliability_harness.integrations.crewai import make_agent
from integration_doubles import CapExceeded, FakeTask, order_tools


@pytest.fixture(autouse=True)
def _quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CREWAI_DISABLE_TELEMETRY", "OTEL_SDK_DISABLED"):
        monkeypatch.setenv(name, "true")
    monkeypatch.setenv("CREWAI_TRACING_ENABLED", "false")


class ScriptedLLM(BaseLLM):
    def __init__(self, replies: list[str], seen: list[Any]) -> None:
        super().__init__(model="scripted")
        object.__setattr__(self, "_replies", list(replies))
        object.__setattr__(self, "_seen", seen)

    def call(self, messages: Any, *args: Any, **kwargs: Any) -> str:
        self._seen.append(json.dumps(messages, default=str))
        return str(self._replies.pop(0))

    def supports_function_calling(self) -> bool:
        return False


def _action(name: str, arguments: dict[str, Any]) -> str:
    return f"Thought: I act.\nAction: {name}\nAction Input: {json.dumps(arguments)}"


def _build(replies: list[str], seen: list[Any]) -> Any:
    def build(tools: list[Any], task: Any) -> Any:
        helper = Agent(
            role="Support",
            goal="Resolve it",
            backstory="A clerk.",
            tools=tools,
            llm=ScriptedLLM(replies, seen),
        )
        work = Task(description=task.prompt, expected_output="The answer.", agent=helper)
        return Crew(agents=[helper], tasks=[work])

    return build


def test_a_crew_calls_through_the_gateway() -> None:
    seen: list[Any] = []
    replies = [
        _action("get_order", {"order_id": "B2"}),
        _action("get_order", {"order_id": "A1"}),
        "Thought: I now know the final answer\nFinal Answer: Order A1 totals 42.5.",
    ]
    tools = order_tools()
    answer = make_agent(_build(replies, seen))(FakeTask(), tools)
    assert answer == "Order A1 totals 42.5."
    assert tools.calls() == [("get_order", {"order_id": "B2"}), ("get_order", {"order_id": "A1"})]
    # the refused call's error and the output went back to the agent's model
    assert "error: no such order" in seen[1]
    assert '{\\"id\\":\\"A1\\",\\"total\\":42.5}' in seen[2]


def test_a_cap_ends_the_crew() -> None:
    replies = [
        _action("get_order", {"order_id": "A1"}),
        # not the same input again: CrewAI itself refuses a repeated call
        _action("get_order", {"order_id": "B2"}),
        "Thought: done\nFinal Answer: never",
    ]
    tools = order_tools(cap=1)
    with pytest.raises(CapExceeded):
        make_agent(_build(replies, []))(FakeTask(), tools)
    assert tools.calls() == [("get_order", {"order_id": "A1"})]
