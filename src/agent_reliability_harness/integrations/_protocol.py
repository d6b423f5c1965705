"""What the integrations use of the adapter protocol (docs/integrations.md), typed structurally.

The harness hands an agent a task view and the tool gateway; these protocols name only the
parts the integrations use, so any object of that shape fits (the harness's own, or a test
double). The gateway's errors are recognised by their class names along the exception's MRO:
``ToolCallError`` (a call failed: the error text goes back to the model) and its subclass
``CapExceeded`` (a per-task cap was reached: the agent must stop, so it is never caught here).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from agent_reliability_harness.errors import UsageError

__all__ = [
    "Agent",
    "MissingExtraError",
    "TaskViewLike",
    "ToolsLike",
    "call_tool",
    "is_cap_exceeded",
    "is_tool_error",
    "missing_extra",
    "output_text",
    "parse_arguments",
    "tool_error_text",
]


class TaskViewLike(Protocol):
    """The task as an agent sees it (never its expected outcome)."""

    @property
    def id(self) -> str: ...

    @property
    def prompt(self) -> str: ...

    @property
    def seed(self) -> int: ...


class ToolsLike(Protocol):
    """The tool gateway: every call goes through it and is recorded."""

    @property
    def specs(self) -> tuple[Mapping[str, Any], ...]: ...

    def call(
        self, name: str, arguments: dict[str, Any] | None = None, *, agent: str | None = None
    ) -> object: ...

    def ask_user(self, text: str) -> str: ...

    def usage(self, input_tokens: int, output_tokens: int) -> None: ...


Agent = Callable[[Any, Any], object]
"""An agent of the adapter protocol: ``agent(task, tools) -> final answer``."""


class MissingExtraError(UsageError):
    """An adapter's framework is not installed: the message says which extra installs it."""


def missing_extra(framework: str, extra: str, exc: ImportError) -> MissingExtraError:
    """The error of an adapter whose framework cannot be imported."""
    return MissingExtraError(
        f"the {framework} adapter needs the {extra} extra: "
        f"pip install 'agent-reliability-harness[{extra}]' ({exc})"
    )


def _named(exc: BaseException, name: str) -> bool:
    return any(cls.__name__ == name for cls in type(exc).__mro__)


def is_tool_error(exc: BaseException) -> bool:
    """Whether ``exc`` is the gateway's ``ToolCallError`` (a ``CapExceeded`` included)."""
    return _named(exc, "ToolCallError")


def is_cap_exceeded(exc: BaseException) -> bool:
    """Whether ``exc`` is the gateway's ``CapExceeded``: the task must end."""
    return _named(exc, "CapExceeded")


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
    tools: ToolsLike, name: str, arguments: dict[str, Any], *, agent: str | None = None
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
