"""OpenTelemetry GenAI spans (format ``otel-genai``), as of semantic conventions v1.38.0.

Spans are read from OTLP/JSON exports (see ``_otlp``); each trace id becomes one trace.

* ``execute_tool`` spans become tool_call steps: ``gen_ai.tool.name``, ``gen_ai.tool.call.id``
  (the step id when usable, else the span id), ``gen_ai.tool.call.arguments`` and
  ``gen_ai.tool.call.result``.
* ``chat``, ``text_completion`` and ``generate_content`` spans become model_response steps (step
  id: the span id) with the text of their output messages and the token usage
  (``gen_ai.usage.input_tokens`` / ``output_tokens``). Tool calls the model requested are steps
  only when no ``execute_tool`` span records them. The messages a model call's input ends with
  give the user's turns and, for calls without a result of their own, the tool results.
* ``invoke_agent`` and ``create_agent`` spans name the agent (``gen_ai.agent.name``).

Every step from a span has the span's duration as ``latency_ms``; a span with status error makes
its step fail. Older names that are still common are accepted, and a note lists those met:
``gen_ai.usage.prompt_tokens`` / ``completion_tokens``, the ``gen_ai.prompt`` /
``gen_ai.completion`` attributes of ``gen_ai.content.prompt`` / ``gen_ai.content.completion``
events, and the indexed ``gen_ai.prompt.<i>.*`` / ``gen_ai.completion.<i>.*`` attributes.
"""

from __future__ import annotations

from typing import Any, Final

from agent_reliability_harness.adapters._otlp import Message, Span, SpanView, json_text, unflatten
from agent_reliability_harness.errors import join_pointer

__all__ = ["AGENT_NAME", "FORMAT", "NAMESPACES", "SEMCONV_VERSION", "WORKFLOW", "view"]

FORMAT: Final = "otel-genai"
AGENT_NAME: Final = "otel-genai-agent"
WORKFLOW: Final = "otel-genai-import"
SEMCONV_VERSION: Final = "1.38.0"
NAMESPACES: Final = ("gen_ai.",)

_CHAT: Final = frozenset({"chat", "text_completion", "generate_content"})
_MODEL_CALL_PREFIXES: Final = ("gen_ai.usage.", "gen_ai.prompt.", "gen_ai.completion.")
_AGENT: Final = frozenset({"invoke_agent", "create_agent", "invoke_workflow"})
# read for the run's identity or purely descriptive: never reported as not mapped
_DESCRIPTIVE: Final = frozenset(
    {
        "gen_ai.operation.name",
        "gen_ai.provider.name",
        "gen_ai.system",
        "gen_ai.request.model",
        "gen_ai.response.model",
        "gen_ai.response.id",
        "gen_ai.response.finish_reasons",
        "gen_ai.conversation.id",
        "gen_ai.agent.id",
        "gen_ai.agent.name",
        "gen_ai.agent.description",
        "gen_ai.tool.type",
        "gen_ai.tool.description",
        "gen_ai.output.type",
        "gen_ai.usage.total_tokens",
    }
)
# attribute names of older convention versions (and of OpenLLMetry) that are still read
DEPRECATED: Final = (
    "gen_ai.usage.prompt_tokens",
    "gen_ai.usage.completion_tokens",
    "gen_ai.prompt",
    "gen_ai.completion",
)


def _operation(span: Span) -> str:
    op = span.attributes.get("gen_ai.operation.name")
    if type(op) is str and op:
        return op
    first = span.name.split(" ", 1)[0]
    if first in _CHAT or first in _AGENT or first == "execute_tool":
        return first
    if "gen_ai.tool.name" in span.attributes:
        return "execute_tool"
    # OpenLLMetry and conventions before v1.27 have no operation name on model calls
    if any(k.startswith(_MODEL_CALL_PREFIXES) for k in span.attributes) or any(
        name in ("gen_ai.content.prompt", "gen_ai.content.completion") for name, _ in span.events
    ):
        return "chat"
    return ""


def deprecated_names(span: Span) -> list[str]:
    """The older attribute names this span uses (reported in a note)."""
    found: list[str] = [k for k in DEPRECATED[:2] if k in span.attributes]
    if any(k.startswith(("gen_ai.prompt.", "gen_ai.completion.")) for k in span.attributes):
        found.append("gen_ai.prompt.<i>.* / gen_ai.completion.<i>.*")
    if any(
        name in ("gen_ai.content.prompt", "gen_ai.content.completion") for name, _ in span.events
    ):
        found.append("gen_ai.content.prompt / gen_ai.content.completion events")
    return found


def view(span: Span) -> SpanView:
    """What an OTel GenAI span is."""
    attributes = span.attributes
    op = _operation(span)
    if op == "execute_tool":
        name = attributes.get("gen_ai.tool.name")
        if name is None and span.name.startswith("execute_tool "):
            name = span.name[len("execute_tool ") :].strip() or None
        call_id = attributes.get("gen_ai.tool.call.id")
        return SpanView(
            "tool",
            op,
            tool_name=name,
            call_id=call_id if type(call_id) is str and call_id else None,
            arguments=attributes.get("gen_ai.tool.call.arguments"),
            has_result="gen_ai.tool.call.result" in attributes,
            result=attributes.get("gen_ai.tool.call.result"),
            used=_DESCRIPTIVE
            | {
                "gen_ai.tool.name",
                "gen_ai.tool.call.id",
                "gen_ai.tool.call.arguments",
                "gen_ai.tool.call.result",
            },
        )
    if op in _CHAT:
        used = set(_DESCRIPTIVE)
        inputs = _messages_of(span, "input", used)
        output = _messages_of(span, "output", used)
        tokens = []
        for new, old in (
            ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
            ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"),
        ):
            used.update((new, old))
            tokens.append(attributes.get(new, attributes.get(old)))
        return SpanView(
            "chat",
            op,
            output=output,
            inputs=inputs or (),
            input_tokens=tokens[0],
            output_tokens=tokens[1],
            used=frozenset(used),
        )
    if op in _AGENT:
        name = attributes.get("gen_ai.agent.name")
        return SpanView(
            "agent", op, agent_name=name if type(name) is str and name else None, used=_DESCRIPTIVE
        )
    return SpanView("other", op)


def _messages_of(span: Span, side: str, used: set[str]) -> tuple[Message, ...] | None:
    """A chat span's input or output messages: ``gen_ai.<side>.messages`` on the span or on one
    of its events, else the older forms."""
    key = f"gen_ai.{side}.messages"
    used.add(key)
    raw: Any = span.attributes.get(key)
    if raw is None:
        raw = next((attrs[key] for _, attrs in span.events if key in attrs), None)
    old = "gen_ai.prompt" if side == "input" else "gen_ai.completion"
    if raw is None:
        event = "gen_ai.content.prompt" if side == "input" else "gen_ai.content.completion"
        raw = next((a.get(old) for n, a in span.events if n == event and old in a), None)
    if raw is None:
        flat = unflatten(span.attributes, old)
        used.update(k for k in span.attributes if k.startswith(old + "."))
        raw = flat or None
    if raw is None:
        return None
    ok, value = json_text(raw)
    if not ok and type(value) is str and value.lstrip()[:1] in ("[", "{"):
        # JSON that does not decode, such as a value cut off at an attribute length limit:
        # reading it as text would make a message of broken JSON (a system prompt a user turn)
        span.problems.append(
            (
                join_pointer(span.pointer, "attributes"),
                (
                    f"the {side} messages are JSON that cannot be decoded (cut off at an "
                    "attribute length limit?), so they are left out"
                ),
            )
        )
        return ()
    if not ok:  # plain text: one message of that role
        return (Message("user" if side == "input" else "assistant", texts=(str(value),)),)
    if type(value) is dict:
        value = [value]
    if type(value) is not list:
        return ()
    return tuple(m for m in (message(item, side) for item in value) if m is not None)


def message(item: Any, side: str = "output") -> Message | None:
    """One message: v1.37+ ``{role, parts: [...]}``, or the OpenAI-like ``{role, content,
    tool_calls}`` of older versions and OpenLLMetry."""
    if type(item) is not dict:
        return None
    role = item.get("role")
    role = role if type(role) is str else ("assistant" if side == "output" else "user")
    texts: list[str] = []
    calls: list[tuple[str | None, Any, Any]] = []
    results: list[tuple[str | None, Any, Any]] = []
    reasoning = 0
    parts = item.get("parts")
    if type(parts) is list:
        for part in parts:
            if type(part) is not dict:
                continue
            kind = part.get("type")
            if kind == "text" and type(part.get("content")) is str:
                texts.append(part["content"])
            elif kind == "tool_call":
                calls.append((_id(part.get("id")), part.get("name"), part.get("arguments")))
            elif kind == "tool_call_response":
                results.append((_id(part.get("id")), None, part.get("response")))
            elif kind in ("reasoning", "thinking"):
                reasoning += 1
        return Message(role, tuple(texts), tuple(calls), tuple(results), reasoning)
    content = item.get("content")
    if type(content) is str:
        texts.append(content)
    elif type(content) is list:
        texts.extend(
            p["text"]
            for p in content
            if type(p) is dict and p.get("type") in (None, "text") and type(p.get("text")) is str
        )
    tool_calls = item.get("tool_calls")
    for call in tool_calls if type(tool_calls) is list else ():
        if type(call) is not dict:
            continue
        function = call.get("function")
        source = function if type(function) is dict else call
        calls.append((_id(call.get("id")), source.get("name"), source.get("arguments")))
    if role == "tool":
        call_id = _id(item.get("tool_call_id", item.get("id")))
        return Message(role, (), (), ((call_id, item.get("name"), content),), reasoning)
    return Message(role, tuple(texts), tuple(calls), tuple(results), reasoning)


def _id(value: Any) -> str | None:
    return value if type(value) is str and value else None
