"""The adapter protocol: what the harness hands an agent and what it expects back.

An agent is any callable ``agent(task: TaskView, tools: Tools) -> object`` that returns its final
answer (a string, or any JSON value). It sees the task as a :class:`TaskView` (never the expected
outcome) and reaches the world only through ``tools``, the gateway, which records every call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["Agent", "CapExceeded", "TaskView", "ToolCallError", "Tools"]


class ToolCallError(Exception):
    """A tool call failed; the message is the error text the agent sees (the tool's error after
    retries, a refused argument, a call the policy blocks). The agent may catch it and go on."""


class CapExceeded(ToolCallError):  # noqa: N818 - the contract's name
    """A per-task cap (steps, tokens, cost, wall time) was exceeded: the task's trace ends with
    what was recorded, and every later call raises this again."""

    def __init__(self, message: str, cap: str) -> None:
        super().__init__(message)
        self.cap = cap


@dataclass(frozen=True, slots=True)
class TaskView:
    """What an agent is told of a task: its ``prompt``, its ``tools`` (specs with ``name``,
    ``description``, ``parameters``), the known-good ``reference`` script (for the reference
    agents; a real agent ignores it), and the run's ``seed`` and ``repeat`` (from 1)."""

    id: str
    prompt: str
    pattern: str
    category: str
    tools: tuple[Mapping[str, Any], ...]
    reference: Mapping[str, Any] | None
    seed: int
    repeat: int


class Tools(Protocol):
    """The gateway the harness hands in (``harness.gateway.Gateway`` is the implementation)."""

    @property
    def specs(self) -> tuple[Mapping[str, Any], ...]: ...

    def call(
        self, name: str, arguments: Mapping[str, Any] | None = None, *, agent: str | None = None
    ) -> object: ...

    def ask_user(self, text: str) -> str: ...

    def say(self, text: str, *, agent: str | None = None) -> None: ...

    def usage(self, input_tokens: int, output_tokens: int) -> None: ...


class Agent(Protocol):
    """An agent: the task and the gateway in, the final answer out."""

    def __call__(self, task: TaskView, tools: Tools, /) -> object: ...
