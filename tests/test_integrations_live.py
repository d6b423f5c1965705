"""The live agent (integrations/openai_live.py) against a fake chat-completions server on the
loopback interface (tests/judge_server.py), with the gateway's test double
(tests/integration_doubles.py). Every expected request and log is written out by hand from the
scripted conversation."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_reliability_harness.errors import UsageError
from agent_reliability_harness.integrations.openai_live import (
    DEFAULT_BASE_URL,
    LiveAgent,
    LiveAgentError,
    LiveSettings,
    agent,
    settings_from_env,
)
from integration_doubles import CapExceeded, FakeTask, order_tools
from judge_server import Reply, fake_api


def _reply(
    content: str | None = None,
    calls: list[tuple[str, str, object]] = (),  # type: ignore[assignment]
    usage: tuple[int, int] | None = None,
    **extra: Any,
) -> Reply:
    """A chat completion: its content, its tool calls as (id, name, arguments: JSON text, or
    an object encoded here), its usage (prompt, completion tokens) and more message keys."""
    message: dict[str, Any] = {"role": "assistant", "content": content, **extra}
    if calls:
        message["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                },
            }
            for call_id, name, arguments in calls
        ]
    body: dict[str, Any] = {"choices": [{"index": 0, "message": message}]}
    if usage is not None:
        body["usage"] = {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": sum(usage),
        }
    return Reply(200, json.dumps(body).encode())


def _live(url: str, **changes: Any) -> LiveAgent:
    settings = LiveSettings(url, "test-model", "sk-test", **{"retries": 0, **changes})
    return LiveAgent(settings, sleep=lambda _: None)


def test_a_scripted_conversation_goes_through_the_gateway() -> None:
    tools = order_tools(replies=["yes"])
    script = [
        _reply(calls=[("c1", "get_order", {"order_id": "A1"})], usage=(100, 10)),
        # a string amount: the gateway refuses it and the model is told why
        _reply(calls=[("c2", "refund", {"order_id": "A1", "amount": "42.5"})], usage=(150, 12)),
        _reply(calls=[("c3", "ask_user", {"question": "Refund 42.5 for order A1?"})]),
        _reply(calls=[("c4", "refund", {"order_id": "A1", "amount": 42.5})], usage=(200, 9)),
        _reply("Refunded 42.5 for order A1.", usage=(230, 8)),
    ]
    with fake_api(*script) as api:
        answer = _live(api.url)(FakeTask(), tools)

    assert answer == "Refunded 42.5 for order A1."
    assert tools.log == [
        ("usage", 100, 10),
        ("call", "get_order", {"order_id": "A1"}, None),
        ("usage", 150, 12),
        ("call", "refund", {"order_id": "A1", "amount": "42.5"}, None),
        ("ask", "Refund 42.5 for order A1?", "yes"),
        ("usage", 200, 9),
        ("call", "refund", {"order_id": "A1", "amount": 42.5}, None),
        ("usage", 230, 8),
    ]
    assert len(api.requests) == 5
    first = api.requests[0]
    assert first["path"] == "/v1/chat/completions"
    assert first["headers"]["Authorization"] == "Bearer sk-test"
    body = first["body"]
    assert (body["model"], body["temperature"], body["seed"]) == ("test-model", 0, 7)
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["messages"][1]["content"] == "Refund order A1 in full."
    assert [t["function"]["name"] for t in body["tools"]] == ["get_order", "refund", "ask_user"]
    assert body["tools"][0] == {
        "type": "function",
        "function": {
            "name": "get_order",
            "description": "Look up an order by id.",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
                "additionalProperties": False,
            },
        },
    }
    # what each tool message said: the output as compact JSON with sorted keys, the error
    # text of the refused call, the user's reply
    last = api.requests[4]["body"]["messages"]
    tool_messages = [(m["tool_call_id"], m["content"]) for m in last if m["role"] == "tool"]
    assert tool_messages == [
        ("c1", '{"id":"A1","total":42.5}'),
        ("c2", "error: argument 'amount' must be a number"),
        ("c3", "yes"),
        ("c4", '{"refunded":42.5}'),
    ]
    assert [m["role"] for m in last] == [
        "system",
        "user",
        *["assistant", "tool"] * 4,
    ]


def test_reasoning_and_the_content_beside_calls_are_not_recorded_or_sent_back() -> None:
    tools = order_tools()
    script = [
        _reply(
            "Let me look the order up first.",
            calls=[("c1", "get_order", {"order_id": "A1"})],
            reasoning_content="the user wants money back, so I must...",
        ),
        _reply("Done.", reasoning_content="I looked it up."),
    ]
    with fake_api(*script) as api:
        answer = _live(api.url)(FakeTask(), tools)
    assert answer == "Done."
    # no usage in the responses: none reported; nothing said but the call
    assert tools.log == [("call", "get_order", {"order_id": "A1"}, None)]
    assistant = api.requests[1]["body"]["messages"][2]
    assert assistant["role"] == "assistant"
    assert "reasoning_content" not in assistant
    assert "the user wants money back" not in json.dumps(api.requests[1]["body"])


def test_bad_arguments_go_back_to_the_model_without_a_call() -> None:
    tools = order_tools()
    script = [
        _reply(calls=[("c1", "get_order", "{not json")]),
        _reply(calls=[("c2", "get_order", "[1, 2]")]),
        _reply("I could not read the order."),
    ]
    with fake_api(*script) as api:
        answer = _live(api.url)(FakeTask(), tools)
    assert answer == "I could not read the order."
    assert tools.calls() == []
    messages = api.requests[2]["body"]["messages"]
    errors = [m["content"] for m in messages if m["role"] == "tool"]
    assert errors[0].startswith("error: the arguments are not valid JSON: ")
    assert errors[1] == "error: the arguments are not a JSON object"


def test_a_cap_ends_the_task_at_once() -> None:
    tools = order_tools(cap=1)
    script = [
        _reply(calls=[("c1", "get_order", {"order_id": "A1"})]),
        _reply(calls=[("c2", "get_order", {"order_id": "A1"})]),
        _reply("never asked for"),
    ]
    with fake_api(*script) as api, pytest.raises(CapExceeded):
        _live(api.url)(FakeTask(), tools)
    assert len(api.requests) == 2  # the cap was hit by the second reply's call
    assert tools.log[-1] == ("cap", "get_order")


def test_the_step_limit_ends_without_an_answer() -> None:
    tools = order_tools()
    looping = [_reply(calls=[(f"c{i}", "get_order", {"order_id": "A1"})]) for i in range(5)]
    with fake_api(*looping) as api:
        answer = _live(api.url, max_steps=3)(FakeTask(), tools)
    assert answer is None
    assert len(api.requests) == 3
    assert len(tools.calls()) == 3


def test_a_task_with_its_own_ask_user_tool_keeps_it() -> None:
    tools = order_tools()
    tools.specs = (*tools.specs, {"name": "ask_user", "description": "d", "parameters": {}})
    tools.handlers = {**tools.handlers, "ask_user": lambda _: "from the tool"}
    script = [_reply(calls=[("c1", "ask_user", {"question": "?"})]), _reply("ok")]
    with fake_api(*script) as api:
        _live(api.url)(FakeTask(), tools)
    names = [t["function"]["name"] for t in api.requests[0]["body"]["tools"]]
    assert names == ["get_order", "refund", "ask_user"]  # not twice
    assert tools.log == [("call", "ask_user", {"question": "?"}, None)]


def test_an_http_error_is_a_live_agent_error() -> None:
    with fake_api(Reply(401, b"{}")) as api, pytest.raises(LiveAgentError) as caught:
        _live(api.url)(FakeTask(), order_tools())
    assert str(caught.value) == (
        "the live agent cannot call the model: the model's API answered HTTP 401 Unauthorized"
    )


def test_server_errors_are_retried() -> None:
    script = [Reply(503, b"busy"), _reply("fine")]
    waits: list[float] = []
    with fake_api(*script) as api:
        settings = LiveSettings(api.url, "m", "k", retries=2, backoff=0.5)
        answer = LiveAgent(settings, sleep=waits.append)(FakeTask(), order_tools())
    assert answer == "fine"
    assert waits == [0.5]


def test_a_response_that_is_not_a_completion_is_an_error() -> None:
    with fake_api(Reply(200, b'{"data": []}')) as api, pytest.raises(LiveAgentError) as caught:
        _live(api.url)(FakeTask(), order_tools())
    assert str(caught.value).startswith("the model's response is not a chat completion: ")


def test_the_environment_gives_the_settings() -> None:
    env = {"ARH_AGENT_MODEL": "m", "ARH_AGENT_API_KEY": "k"}
    assert settings_from_env(env) == LiveSettings(DEFAULT_BASE_URL, "m", "k", max_steps=20)
    env2 = {**env, "ARH_AGENT_BASE_URL": "http://127.0.0.1:9/v1", "ARH_AGENT_MAX_STEPS": "4"}
    assert settings_from_env(env2) == LiveSettings("http://127.0.0.1:9/v1", "m", "k", max_steps=4)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"ARH_AGENT_API_KEY": "k"}, "the live agent needs a model: set ARH_AGENT_MODEL"),
        ({"ARH_AGENT_MODEL": "m"}, "the live agent needs an API key: set ARH_AGENT_API_KEY"),
        (
            {"ARH_AGENT_MODEL": "m", "ARH_AGENT_API_KEY": "k", "ARH_AGENT_MAX_STEPS": "x"},
            "the live agent's step limit (ARH_AGENT_MAX_STEPS) must be an integer, got 'x'",
        ),
        (
            {"ARH_AGENT_MODEL": "m", "ARH_AGENT_API_KEY": "k", "ARH_AGENT_MAX_STEPS": "0"},
            "the live agent's step limit (ARH_AGENT_MAX_STEPS) must be at least 1, got 0",
        ),
        (
            {"ARH_AGENT_MODEL": "m", "ARH_AGENT_API_KEY": "k", "ARH_AGENT_BASE_URL": "ftp://x"},
            (
                "the live agent's base URL (ARH_AGENT_BASE_URL) must start with http:// or "
                "https://, got 'ftp://x'"
            ),
        ),
    ],
)
def test_bad_settings_are_usage_errors(env: dict[str, str], message: str) -> None:
    with pytest.raises(UsageError) as caught:
        settings_from_env(env)
    assert str(caught.value) == message


def test_the_agent_function_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    with fake_api(_reply("from the env")) as api:
        monkeypatch.setenv("ARH_AGENT_BASE_URL", api.url)
        monkeypatch.setenv("ARH_AGENT_MODEL", "env-model")
        monkeypatch.setenv("ARH_AGENT_API_KEY", "env-key")
        assert agent(FakeTask(), order_tools()) == "from the env"
    assert api.requests[0]["body"]["model"] == "env-model"
    assert api.requests[0]["headers"]["Authorization"] == "Bearer env-key"
