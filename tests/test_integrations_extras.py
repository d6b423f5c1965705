"""An adapter whose framework is missing says which extra to install (an error, not a
traceback): the framework is hidden by setting its entry in sys.modules to None, which makes
its import fail as if it were not installed."""

from __future__ import annotations

import sys

import pytest

from agent_reliability_harness.errors import UsageError
from agent_reliability_harness.integrations import crewai, langgraph, openai_agents


@pytest.mark.parametrize(
    ("module", "hidden", "framework", "extra"),
    [
        (langgraph, "langchain_core", "LangGraph", "langgraph"),
        (openai_agents, "agents", "OpenAI Agents SDK", "openai-agents"),
        (crewai, "crewai", "CrewAI", "crewai"),
    ],
)
def test_a_missing_extra_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, module: object, hidden: str, framework: str, extra: str
) -> None:
    for name in [m for m in sys.modules if m == hidden or m.startswith(f"{hidden}.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, hidden, None)  # type: ignore[arg-type]
    with pytest.raises(UsageError) as caught:
        module.make_agent(lambda tools, task: None)  # type: ignore[attr-defined]
    assert str(caught.value).startswith(
        f"the {framework} adapter needs the {extra} extra: "
        f"pip install 'agent-reliability-harness[{extra}]' ("
    )
