"""A live agent over an OpenAI-compatible chat-completions API, with function calling.

Opt-in: nothing calls a model unless ``arh run`` is given this agent, and then only with the
settings of the environment (docs/integrations.md, "The live agent")::

    ARH_AGENT_MODEL=gpt-4o-mini ARH_AGENT_API_KEY=... \\
        arh run --dataset golden --agent agent_reliability_harness.integrations.openai_live:agent

The conversation: a system message, the task's prompt as the user message, and the task's tools
as functions (``tools.specs``, plus ``ask_user`` when the task has no tool of that name, which
asks the simulated user). Each reply that calls tools has each call run through the gateway
(``tools.call``), and its output, or the error the agent sees, goes back as a tool message; a
reply without a call is the final answer. The ``usage`` of each response is reported through
``tools.usage`` before the calls it made. Only the calls and the final answer are recorded (by
the gateway): the content of a reply that calls tools and any reasoning field of a reply are
never recorded. The request asks for ``temperature`` 0 and the task's ``seed``.

HTTP goes through :func:`agent_reliability_harness.judge.client.post_json`, the judge's client:
standard library only, a timeout per request, retries with exponential backoff of timeouts,
connection errors, HTTP 408, 429 (``Retry-After`` honoured) and 5xx. A failure after the
retries, or a response that is not a chat completion, is a :class:`LiveAgentError`; a model
that makes no final answer within the step limit ends with no answer (``None``).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from agent_reliability_harness.errors import UsageError, excerpt
from agent_reliability_harness.harness.protocol import TaskView, Tools
from agent_reliability_harness.integrations._protocol import (
    call_tool,
    parse_arguments,
)
from agent_reliability_harness.judge.client import ClientSettings, JudgeCallError, post_json

__all__ = [
    "ASK_USER",
    "DEFAULT_BASE_URL",
    "ENV_API_KEY",
    "ENV_BASE_URL",
    "ENV_MAX_STEPS",
    "ENV_MODEL",
    "SYSTEM_PROMPT",
    "LiveAgent",
    "LiveAgentError",
    "LiveSettings",
    "agent",
    "settings_from_env",
]

ENV_BASE_URL: Final = "ARH_AGENT_BASE_URL"
ENV_MODEL: Final = "ARH_AGENT_MODEL"
ENV_API_KEY: Final = "ARH_AGENT_API_KEY"
ENV_MAX_STEPS: Final = "ARH_AGENT_MAX_STEPS"
DEFAULT_BASE_URL: Final = "https://api.openai.com/v1"
DEFAULT_MAX_STEPS: Final = 20
SYSTEM_PROMPT: Final = (
    "You complete the user's task with the tools you are given. Call a tool when you need "
    "information or must act; when a tool fails, decide from its error whether to try again "
    "differently. Ask the user with ask_user before an irreversible action or when the task is "
    "ambiguous. When you are done, reply with the final answer only."
)
ASK_USER: Final = {
    "name": "ask_user",
    "description": "Ask the user a question (a confirmation, a missing detail); returns the reply.",
    "parameters": {
        "type": "object",
        "properties": {"question": {"type": "string"}},
        "required": ["question"],
        "additionalProperties": False,
    },
}


class LiveAgentError(RuntimeError):
    """The model could not be called, or its response is not a chat completion."""


@dataclass(frozen=True, slots=True)
class LiveSettings:
    """Where the model is (``base_url``: ``/chat/completions`` is appended), which ``model``,
    the ``api_key`` sent as a bearer token, the most model calls a task may take
    (``max_steps``), and each request's ``timeout`` in seconds, ``retries`` and first
    ``backoff`` in seconds (doubled at each retry)."""

    base_url: str
    model: str
    api_key: str
    max_steps: int = DEFAULT_MAX_STEPS
    timeout: float = 60.0
    retries: int = 3
    backoff: float = 1.0

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise UsageError(
                f"the live agent's base URL ({ENV_BASE_URL}) must start with http:// or "
                f"https://, got {excerpt(self.base_url)}"
            )
        if not self.model:
            raise UsageError(f"the live agent needs a model: set {ENV_MODEL}")
        if self.max_steps < 1:
            raise UsageError(
                f"the live agent's step limit ({ENV_MAX_STEPS}) must be at least 1, "
                f"got {self.max_steps}"
            )


def settings_from_env(environ: Mapping[str, str] | None = None) -> LiveSettings:
    """The settings from ``ARH_AGENT_BASE_URL`` (default: OpenAI's API), ``ARH_AGENT_MODEL``
    and ``ARH_AGENT_API_KEY`` (both required) and ``ARH_AGENT_MAX_STEPS`` (default 20); a
    :class:`UsageError` naming the variable that is missing or wrong."""
    env = os.environ if environ is None else environ
    model = env.get(ENV_MODEL, "")
    if not model:
        raise UsageError(f"the live agent needs a model: set {ENV_MODEL}")
    api_key = env.get(ENV_API_KEY, "")
    if not api_key:
        raise UsageError(f"the live agent needs an API key: set {ENV_API_KEY}")
    steps_text = env.get(ENV_MAX_STEPS, str(DEFAULT_MAX_STEPS))
    try:
        max_steps = int(steps_text)
    except ValueError:
        raise UsageError(
            f"the live agent's step limit ({ENV_MAX_STEPS}) must be an integer, got "
            f"{excerpt(steps_text)}"
        ) from None
    return LiveSettings(
        env.get(ENV_BASE_URL, "") or DEFAULT_BASE_URL, model, api_key, max_steps=max_steps
    )


def _function(spec: Mapping[str, Any]) -> dict[str, Any]:
    function: dict[str, Any] = {"name": spec["name"]}
    if spec.get("description"):
        function["description"] = spec["description"]
    function["parameters"] = spec.get("parameters") or {"type": "object", "properties": {}}
    return {"type": "function", "function": function}


def _count(usage: Mapping[str, Any], key: str) -> int:
    value = usage.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


class LiveAgent:
    """An agent of the adapter protocol that asks the model of ``settings``; ``sleep`` waits
    between retries (tests pass one that does not wait)."""

    def __init__(
        self,
        settings: LiveSettings,
        *,
        system_prompt: str = SYSTEM_PROMPT,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.settings = settings
        self.system_prompt = system_prompt
        self._sleep = sleep
        self._url = settings.base_url.rstrip("/") + "/chat/completions"
        self._client = ClientSettings(
            settings.base_url,
            settings.model,
            settings.api_key,
            timeout=settings.timeout,
            retries=settings.retries,
            backoff=settings.backoff,
        )

    def _complete(self, body: dict[str, Any]) -> dict[str, Any]:
        payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
        try:
            raw = post_json(
                self._url, payload, self._client, sleep=self._sleep, service="the model's API"
            )
        except JudgeCallError as exc:
            raise LiveAgentError(f"the live agent cannot call the model: {exc}") from None
        try:
            reply = json.loads(raw.decode("utf-8"))
            message = reply["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError):
            text = raw.decode("utf-8", "replace")
            raise LiveAgentError(
                f"the model's response is not a chat completion: {excerpt(text)}"
            ) from None
        if type(message) is not dict:
            raise LiveAgentError("the model's response has no choices[0].message object")
        usage = reply.get("usage")
        return {"message": message, "usage": usage if isinstance(usage, dict) else {}}

    def __call__(self, task: TaskView, tools: Tools) -> object:
        specs = list(tools.specs)
        names = {spec["name"] for spec in specs}
        asks = "ask_user" not in names
        functions = [_function(spec) for spec in specs]
        if asks:
            functions.append(_function(ASK_USER))
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": self.system_prompt},
            {"role": "user", "content": task.prompt},
        ]
        for _ in range(self.settings.max_steps):
            body: dict[str, Any] = {
                "model": self.settings.model,
                "messages": messages,
                "temperature": 0,
                "seed": task.seed,
            }
            if functions:
                body["tools"] = functions
            reply = self._complete(body)
            message, usage = reply["message"], reply["usage"]
            if usage:
                tools.usage(_count(usage, "prompt_tokens"), _count(usage, "completion_tokens"))
            calls = message.get("tool_calls")
            content = message.get("content")
            if not isinstance(calls, list) or not calls:
                return content if isinstance(content, str) else None
            # the reply goes back as the model sent it, less any reasoning field
            messages.append(
                {
                    "role": "assistant",
                    "content": content if isinstance(content, str) else None,
                    "tool_calls": calls,
                }
            )
            for index, call in enumerate(calls):
                messages.append(self._run_call(call, index, tools, asks=asks))
        return None

    def _run_call(self, call: object, index: int, tools: Tools, *, asks: bool) -> dict[str, Any]:
        """The tool message that answers one of the model's calls."""
        if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
            raise LiveAgentError(f"the model's tool call {index} is not an object with a function")
        call_id = call.get("id")
        function = call["function"]
        name = function.get("name")
        if not isinstance(name, str) or not name:
            raise LiveAgentError(f"the model's tool call {index} has no function name")
        arguments = parse_arguments(function.get("arguments"))
        if isinstance(arguments, str):
            text = arguments
        elif asks and name == "ask_user":
            question = arguments.get("question")
            text = tools.ask_user(question if isinstance(question, str) else json.dumps(arguments))
        else:
            _, text = call_tool(tools, name, arguments)
        return {"role": "tool", "tool_call_id": call_id, "content": text}


def agent(task: TaskView, tools: Tools) -> object:
    """The live agent with the settings of the environment (see :func:`settings_from_env`):
    what ``arh run --agent agent_reliability_harness.integrations.openai_live:agent`` runs."""
    return LiveAgent(settings_from_env())(task, tools)
