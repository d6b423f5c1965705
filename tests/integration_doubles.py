"""A test double of the adapter protocol's task view and tool gateway (docs/integrations.md),
for the integrations' tests: tools answer from a dict of scripted functions, and every call,
question and usage report is logged in order."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agent_reliability_harness.harness.protocol import CapExceeded, ToolCallError


@dataclass(frozen=True)
class FakeTask:
    id: str = "t1"
    prompt: str = "Refund order A1 in full."
    pattern: str = "react"
    category: str = "normal"
    tools: tuple[dict[str, Any], ...] = ()
    reference: object = None
    seed: int = 7
    repeat: int = 1


def spec(name: str, description: str = "", **properties: str) -> dict[str, Any]:
    """A tool spec whose parameters are the given properties, each of the given JSON type."""
    return {
        "name": name,
        "description": description or f"The {name} tool.",
        "parameters": {
            "type": "object",
            "properties": {key: {"type": kind} for key, kind in properties.items()},
            "required": sorted(properties),
            "additionalProperties": False,
        },
    }


Handler = Callable[[dict[str, Any]], object]


@dataclass
class FakeTools:
    """``handlers`` maps a tool name to a function of the arguments (which may raise
    :class:`ToolCallError`); a tool without one fails. ``replies`` answer ``ask_user`` in
    order. ``cap`` is the most calls allowed: the next one raises :class:`CapExceeded`."""

    specs: tuple[dict[str, Any], ...]
    handlers: Mapping[str, Handler]
    replies: list[str] = field(default_factory=list)
    cap: int | None = None
    log: list[tuple[Any, ...]] = field(default_factory=list)

    def call(
        self, name: str, arguments: dict[str, Any] | None = None, *, agent: str | None = None
    ) -> object:
        calls = sum(1 for entry in self.log if entry[0] == "call")
        if self.cap is not None and calls >= self.cap:
            self.log.append(("cap", name))
            raise CapExceeded(f"the task's cap of {self.cap} calls is reached", "calls")
        self.log.append(("call", name, dict(arguments or {}), agent))
        handler = self.handlers.get(name)
        if handler is None:
            raise ToolCallError(f"no such tool: {name}")
        return handler(dict(arguments or {}))

    def ask_user(self, text: str) -> str:
        reply = self.replies.pop(0) if self.replies else ""
        self.log.append(("ask", text, reply))
        return reply

    def say(self, text: str, *, agent: str | None = None) -> None:
        self.log.append(("say", text, agent))

    def usage(self, input_tokens: int, output_tokens: int) -> None:
        self.log.append(("usage", input_tokens, output_tokens))

    def calls(self) -> list[tuple[str, dict[str, Any]]]:
        return [(entry[1], entry[2]) for entry in self.log if entry[0] == "call"]


def refuse(message: str) -> Handler:
    """A handler that always fails with ``message``."""

    def handler(arguments: dict[str, Any]) -> object:
        raise ToolCallError(message)

    return handler


def order_tools(**extra: Any) -> FakeTools:
    """The refund example: get_order answers A1, refund refuses a string amount."""

    def get_order(arguments: dict[str, Any]) -> object:
        if arguments.get("order_id") != "A1":
            raise ToolCallError("no such order")
        return {"id": "A1", "total": 42.5}

    def refund(arguments: dict[str, Any]) -> object:
        if not isinstance(arguments.get("amount"), int | float):
            raise ToolCallError("argument 'amount' must be a number")
        return {"refunded": arguments["amount"]}

    return FakeTools(
        (
            spec("get_order", "Look up an order by id.", order_id="string"),
            spec("refund", "Refund an amount of an order.", order_id="string", amount="number"),
        ),
        {"get_order": get_order, "refund": refund},
        **extra,
    )
