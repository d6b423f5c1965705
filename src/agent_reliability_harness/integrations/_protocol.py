"""What the integrations share of the adapter protocol (docs/integrations.md,
``harness/protocol.py``): how a framework's tool call goes through the gateway and what the model
is told of its outcome. Of the gateway's errors, ``ToolCallError`` (a call failed: the error text
goes back to the model) is caught, and its subclass ``CapExceeded`` (a per-task cap was reached:
the agent must stop) never is.
"""

from __future__ import annotations

import json
from typing import Any

from agent_reliability_harness.errors import UsageError
from agent_reliability_harness.harness.protocol import CapExceeded, ToolCallError, Tools

__all__ = [
    "MissingExtraError",
    "call_tool",
    "is_cap_exceeded",
    "is_tool_error",
    "missing_extra",
    "output_text",
    "parse_arguments",
    "tool_error_text",
]


class MissingExtraError(UsageError):
    """An adapter's framework is not installed: the message says which extra installs it."""


def missing_extra(framework: str, extra: str, exc: ImportError) -> MissingExtraError:
    """The error of an adapter whose framework cannot be imported."""
    return MissingExtraError(
        f"the {framework} adapter needs the {extra} extra: "
        f"pip install 'agent-reliability-harness[{extra}]' ({exc})"
    )


def is_tool_error(exc: BaseException) -> bool:
    """Whether ``exc`` is the gateway's ``ToolCallError`` (a ``CapExceeded`` included)."""
    return isinstance(exc, ToolCallError)


def is_cap_exceeded(exc: BaseException) -> bool:
    """Whether ``exc`` is the gateway's ``CapExceeded``: the task must end."""
    return isinstance(exc, CapExceeded)


def tool_error_text(exc: BaseException) -> str:
    """What the model is told when a call failed: the gateway's error text."""
    return f"error: {exc}"


def output_text(value: object) -> str:
    """A tool's output as the text of a tool message: a string as it is, anything else as
    compact JSON with sorted keys (so the same output is always the same text)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def call_tool(
    tools: Tools, name: str, arguments: dict[str, Any], *, agent: str | None = None
) -> tuple[bool, str]:
    """Run one call through the gateway (by the sub-agent ``agent``, if any): (True, output
    text), or (False, error text) when the gateway refused it or the tool failed.
    ``CapExceeded`` and any other exception go up."""
    try:
        output = tools.call(name, arguments, agent=agent)
    except Exception as exc:
        if is_cap_exceeded(exc) or not is_tool_error(exc):
            raise
        return False, tool_error_text(exc)
    return True, output_text(output)


def parse_arguments(text: object) -> dict[str, Any] | str:
    """The arguments of a model's tool call given as JSON text: an object, or the problem as a
    string that goes back to the model (a model's bad JSON is its mistake, not a crash)."""
    if isinstance(text, dict):
        return text
    if text is None or text == "":
        return {}
    if not isinstance(text, str):
        return f"error: the arguments are not a JSON object: {text!r}"
    try:
        value = json.loads(text)
    except ValueError as exc:
        return f"error: the arguments are not valid JSON: {exc}"
    if not isinstance(value, dict):
        return "error: the arguments are not a JSON object"
    return value
