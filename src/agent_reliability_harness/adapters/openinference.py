"""OpenInference spans (format ``openinference``), as exported by Arize Phoenix instrumentations.

Spans are read from OTLP/JSON exports (see ``_otlp``); each trace id becomes one trace. The span
kind is ``openinference.span.kind``:

* ``TOOL`` spans become tool_call steps: ``tool.name``, the arguments from ``input.value`` (a JSON
  object), the output from ``output.value``, the call id from ``tool_call.id`` or ``tool.id``.
  (``tool.parameters`` is the tool's parameter *definition*, not the arguments of the call.)
* ``LLM`` spans become model_response steps with the text of ``llm.output_messages``, token
  counts from ``llm.token_count.prompt`` / ``completion`` and the cost from ``llm.cost.total``.
  Tool calls in the output messages are steps only when no ``TOOL`` span records them; the input
  messages after the last assistant message give user turns and tool results.
* ``AGENT`` spans name the agent (``agent.name``, else the span name).

Other kinds (``CHAIN``, ``RETRIEVER``, ``EMBEDDING``, ...) are not steps and are noted.
"""

from __future__ import annotations

from typing import Any, Final

from agent_reliability_harness.adapters._otlp import Message, Span, SpanView, unflatten

__all__ = ["AGENT_NAME", "FORMAT", "KIND", "NAMESPACES", "WORKFLOW", "view"]

FORMAT: Final = "openinference"
AGENT_NAME: Final = "openinference-agent"
WORKFLOW: Final = "openinference-import"
KIND: Final = "openinference.span.kind"
NAMESPACES: Final = ("llm.", "tool.", "tool_call.", "input.", "output.", "agent.", "message.")

_DESCRIPTIVE: Final = frozenset(
    {
        KIND,
        "llm.model_name",
        "llm.request.model_name",
        "llm.response.model_name",
        "llm.provider",
        "llm.system",
        "llm.invocation_parameters",
        "llm.finish_reason",
        "llm.token_count.total",
        "input.mime_type",
        "output.mime_type",
        "tool.description",
        "tool.json_schema",
        "tool.parameters",
        "agent.name",
    }
)
_LLM_PREFIXES: Final = (
    "llm.input_messages.",
    "llm.output_messages.",
    "llm.token_count.",
    "llm.cost.",
    "llm.tools.",
    "llm.prompt_template.",
)


def view(span: Span) -> SpanView:
    """What an OpenInference span is."""
    attributes = span.attributes
    kind = attributes.get(KIND)
    kind = kind.upper() if type(kind) is str else ""
    if kind == "TOOL":
        name = attributes.get("tool.name")
        if name is None and span.name:
            name = span.name
        call_id = attributes.get("tool_call.id", attributes.get("tool.id"))
        return SpanView(
            "tool",
            kind,
            tool_name=name,
            call_id=call_id if type(call_id) is str and call_id else None,
            arguments=attributes.get("input.value"),
            has_result="output.value" in attributes,
            result=attributes.get("output.value"),
            used=_DESCRIPTIVE
            | {"tool.name", "tool.id", "tool_call.id", "input.value", "output.value"},
        )
    if kind == "LLM":
        used = set(_DESCRIPTIVE) | {"input.value", "output.value"}
        used.update(k for k in attributes if k.startswith(_LLM_PREFIXES))
        inputs = [message(m) for m in unflatten(attributes, "llm.input_messages")]
        outputs = [message(m) for m in unflatten(attributes, "llm.output_messages")]
        has_output = any(k.startswith("llm.output_messages.") for k in attributes)
        return SpanView(
            "chat",
            kind,
            output=tuple(m for m in outputs if m is not None) if has_output else None,
            inputs=tuple(m for m in inputs if m is not None),
            input_tokens=attributes.get("llm.token_count.prompt"),
            output_tokens=attributes.get("llm.token_count.completion"),
            cost_usd=attributes.get("llm.cost.total"),
            used=frozenset(used),
        )
    if kind == "AGENT":
        name = attributes.get("agent.name")
        if not (type(name) is str and name):
            name = span.name or None
        return SpanView(
            "agent", kind, agent_name=name, used=_DESCRIPTIVE | {"input.value", "output.value"}
        )
    return SpanView("other", kind)


def message(entry: Any) -> Message | None:
    """One flattened ``{"message": {role, content, contents, tool_calls, tool_call_id}}``."""
    item = entry.get("message") if type(entry) is dict else None
    if type(item) is not dict:
        return None
    role = item.get("role")
    role = role if type(role) is str else ""
    texts: list[str] = []
    reasoning = 0
    if type(item.get("content")) is str:
        texts.append(item["content"])
    contents = item.get("contents")
    for part in contents if type(contents) is list else ():
        inner = part.get("message_content") if type(part) is dict else None
        if type(inner) is not dict:
            continue
        if inner.get("type") == "reasoning":
            reasoning += 1
        elif inner.get("type") in (None, "text") and type(inner.get("text")) is str:
            texts.append(inner["text"])
    calls: list[tuple[str | None, Any, Any]] = []
    tool_calls = item.get("tool_calls")
    for call in tool_calls if type(tool_calls) is list else ():
        inner = call.get("tool_call") if type(call) is dict else None
        if type(inner) is not dict:
            continue
        function = inner.get("function")
        function = function if type(function) is dict else {}
        calls.append((_id(inner.get("id")), function.get("name"), function.get("arguments")))
    if role == "tool":
        result = (_id(item.get("tool_call_id")), item.get("name"), "\n".join(texts))
        return Message(role, (), (), (result,), reasoning)
    return Message(role, tuple(texts), tuple(calls), (), reasoning)


def _id(value: Any) -> str | None:
    return value if type(value) is str and value else None
