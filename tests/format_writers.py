"""Writing a conversation in each ingest format, for the equivalence tests.

A conversation is taken from a canonical trace (usually one the openai-chat adapter built from a
real AgentDojo or tau-bench run) and written the way each provider or exporter would record it,
following the shapes described in tests/fixtures/adapters/<format>/README.md. Converting the
result back must give the same verdicts wherever the format can carry what the rules read.

This is test code: it is written from the formats' documentation, independently of the adapters.
"""

from __future__ import annotations

import json
from typing import Any

from agent_reliability_harness.model.trace import Step, Trace

__all__ = ["CARRIES_STATUS", "WRITERS", "turns", "write"]

# Formats (and variants) whose records say whether a tool call failed.
CARRIES_STATUS = {
    "otel-genai": True,
    "otel-genai-messages": False,  # no execute_tool spans: results only in later model inputs
    "openinference": True,
    "openai-responses": False,
    "gemini": True,
    "bedrock-converse": True,
}


def turns(trace: Trace) -> list[tuple[str, Any]]:
    """The conversation as ``("user", text)`` and ``("assistant", (text, [calls]))`` turns; an
    assistant turn is its text (or None) followed by its tool calls, as a model writes them."""
    out: list[tuple[str, Any]] = []
    current: list[Any] | None = None  # [text, calls]
    for step in trace.steps:
        if step.type == "user_message":
            current = None
            out.append(("user", step.text or ""))
        elif step.type == "model_response":
            if current is None or current[0] is not None or current[1]:
                current = [None, []]
                out.append(("assistant", current))
            current[0] = step.text or ""
        else:
            if current is None:
                current = [None, []]
                out.append(("assistant", current))
            current[1].append(step)
    return out


def _text(output: Any) -> str:
    return output if type(output) is str else json.dumps(output)


def _failed(step: Step) -> bool:
    return step.status == "error"


# -- request / response formats ------------------------------------------------------------------


def _responses(trace: Trace) -> Any:
    items: list[Any] = []
    for role, turn in turns(trace):
        if role == "user":
            items.append({"type": "message", "role": "user", "content": turn})
            continue
        text, calls = turn
        if text is not None:
            items.append(
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                }
            )
        items.extend(
            {
                "type": "function_call",
                "call_id": call.step_id,
                "name": call.tool_name or "",
                "arguments": json.dumps(dict(call.arguments or {})),
            }
            for call in calls
        )
        items.extend(
            {
                "type": "function_call_output",
                "call_id": call.step_id,
                "output": _text(call.output if call.output is not None else ""),
            }
            for call in calls
            if call.output is not None or _failed(call)
        )
    # the last assistant item is the response's output; everything before it its input
    cut = max((i for i, item in enumerate(items) if item.get("role") != "user"), default=0)
    return {"input": items[:cut], "output": items[cut:], "object": "response"}


def _gemini(trace: Trace) -> Any:
    contents: list[Any] = []
    for role, turn in turns(trace):
        if role == "user":
            contents.append({"role": "user", "parts": [{"text": turn}]})
            continue
        text, calls = turn
        parts: list[Any] = [] if text is None else [{"text": text}]
        parts += [
            {"functionCall": {"name": c.tool_name or "", "args": dict(c.arguments or {})}}
            for c in calls
        ]
        contents.append({"role": "model", "parts": parts})
        answers = []
        for call in calls:
            if call.output is None and not _failed(call):
                continue
            response: dict[str, Any] = {}
            if _failed(call):
                response["error"] = call.error or "failed"
                if call.output is not None:
                    response["output"] = call.output
            else:
                response["output"] = call.output
            answers.append(
                {"functionResponse": {"name": call.tool_name or "", "response": response}}
            )
        if answers:
            contents.append({"role": "user", "parts": answers})
    return {"contents": contents}


def _bedrock(trace: Trace) -> Any:
    messages: list[Any] = []
    for role, turn in turns(trace):
        if role == "user":
            messages.append({"role": "user", "content": [{"text": turn}]})
            continue
        text, calls = turn
        content: list[Any] = [] if text is None else [{"text": text}]
        content += [
            {
                "toolUse": {
                    "toolUseId": c.step_id,
                    "name": c.tool_name or "",
                    "input": dict(c.arguments or {}),
                }
            }
            for c in calls
        ]
        messages.append({"role": "assistant", "content": content})
        results = []
        for call in calls:
            if call.output is None and not _failed(call):
                continue
            if _failed(call):  # the error text is what the model is shown
                body: list[Any] = [{"text": call.error or "failed"}]
            elif type(call.output) is str:
                body = [{"text": call.output}]
            else:
                body = [{"json": call.output}]
            result = {"toolUseId": call.step_id, "content": body}
            result["status"] = "error" if _failed(call) else "success"
            results.append({"toolResult": result})
        if results:
            messages.append({"role": "user", "content": results})
    *history, last = messages or [{"role": "assistant", "content": []}]
    if last["role"] == "assistant":
        return {"modelId": "test.model-v1", "messages": history, "output": {"message": last}}
    return {"modelId": "test.model-v1", "messages": messages}


# -- span formats ----------------------------------------------------------------------------------


class _Spans:
    """Spans of one trace with increasing times and ids, dealt over ``lines`` export requests."""

    def __init__(self, trace_id: str, lines: int) -> None:
        self.trace_id = trace_id
        self.clock = 0
        self.count = 0
        self.lines: list[list[Any]] = [[] for _ in range(lines)]

    def add(self, name: str, attributes: dict[str, Any], error: str | None = None) -> str:
        self.count += 1
        span_id = f"{self.count:016x}"
        start, self.clock = self.clock, self.clock + 7
        span = {
            "traceId": self.trace_id,
            "spanId": span_id,
            "name": name,
            "startTimeUnixNano": str(1_700_000_000_000_000_000 + start * 1_000_000),
            "endTimeUnixNano": str(1_700_000_000_000_000_000 + (start + 5) * 1_000_000),
            "attributes": [{"key": k, "value": _any(v)} for k, v in attributes.items()],
            "status": {"code": 2, "message": error} if error is not None else {"code": 1},
        }
        self.lines[self.count % len(self.lines)].append(span)
        return span_id

    def requests(self) -> list[Any]:
        return [
            {
                "resourceSpans": [
                    {
                        "resource": {"attributes": [_kv("service.name", "equivalence")]},
                        "scopeSpans": [{"scope": {"name": "writer"}, "spans": spans}],
                    }
                ]
            }
            for spans in self.lines
            if spans
        ]


def _any(value: Any) -> dict[str, Any]:
    if type(value) is bool:
        return {"boolValue": value}
    if type(value) is int:
        return {"intValue": str(value)}
    return {"stringValue": value if type(value) is str else json.dumps(value)}


def _kv(key: str, value: Any) -> dict[str, Any]:
    return {"key": key, "value": _any(value)}


def _trace_hex(trace: Trace) -> str:
    import hashlib

    return hashlib.sha256(trace.trace_id.encode()).hexdigest()[:32]


def _genai(trace: Trace, *, tool_spans: bool) -> list[Any]:
    spans = _Spans(_trace_hex(trace), 3)
    spans.add("invoke_agent equivalence", {"gen_ai.operation.name": "invoke_agent"})
    history: list[Any] = []
    waiting: list[Step] = []
    for role, turn in turns(trace):
        if role == "user":
            history.append({"role": "user", "parts": [{"type": "text", "content": turn}]})
            continue
        text, calls = turn
        parts: list[Any] = [] if text is None else [{"type": "text", "content": text}]
        parts += [
            {
                "type": "tool_call",
                "id": c.step_id,
                "name": c.tool_name or "",
                "arguments": dict(c.arguments or {}),
            }
            for c in calls
        ]
        output = [{"role": "assistant", "parts": parts}]
        spans.add(
            "chat test-model",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": json.dumps(history),
                "gen_ai.output.messages": json.dumps(output),
            },
        )
        history += output
        responses = []
        for call in calls:
            if tool_spans:
                attributes = {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": call.tool_name or "",
                    "gen_ai.tool.call.id": call.step_id,
                    "gen_ai.tool.call.arguments": json.dumps(dict(call.arguments or {})),
                }
                if call.output is not None:
                    attributes["gen_ai.tool.call.result"] = call.output
                spans.add(
                    f"execute_tool {call.tool_name}",
                    attributes,
                    (call.error or "failed") if _failed(call) else None,
                )
            if call.output is not None:
                responses.append(
                    {"type": "tool_call_response", "id": call.step_id, "response": call.output}
                )
        if responses:
            history.append({"role": "tool", "parts": responses})
            waiting = calls
    if waiting and not tool_spans:  # the model is called once more with the last results
        spans.add(
            "chat test-model",
            {"gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps(history)},
        )
    return spans.requests()


def _flat_message(prefix: str, message: dict[str, Any]) -> dict[str, Any]:
    out = {f"{prefix}.message.role": message["role"]}
    if message.get("content") is not None:
        out[f"{prefix}.message.content"] = message["content"]
    if message.get("tool_call_id") is not None:
        out[f"{prefix}.message.tool_call_id"] = message["tool_call_id"]
    for k, call in enumerate(message.get("calls", ())):
        base = f"{prefix}.message.tool_calls.{k}.tool_call"
        out[f"{base}.id"] = call.step_id
        out[f"{base}.function.name"] = call.tool_name or ""
        out[f"{base}.function.arguments"] = json.dumps(dict(call.arguments or {}))
    return out


def _openinference(trace: Trace) -> list[Any]:
    spans = _Spans(_trace_hex(trace), 2)
    spans.add("agent", {"openinference.span.kind": "AGENT", "agent.name": "equivalence"})
    history: list[dict[str, Any]] = []
    for role, turn in turns(trace):
        if role == "user":
            history.append({"role": "user", "content": turn})
            continue
        text, calls = turn
        output = {"role": "assistant", "content": text, "calls": calls}
        attributes: dict[str, Any] = {"openinference.span.kind": "LLM"}
        for n, message in enumerate(history):
            attributes.update(_flat_message(f"llm.input_messages.{n}", message))
        attributes.update(_flat_message("llm.output_messages.0", output))
        spans.add("ChatCompletion", attributes)
        history.append(output)
        for call in calls:
            tool: dict[str, Any] = {
                "openinference.span.kind": "TOOL",
                "tool.name": call.tool_name or "",
                "tool_call.id": call.step_id,
                "input.value": json.dumps(dict(call.arguments or {})),
            }
            if call.output is not None:
                tool["output.value"] = _text(call.output)
                history.append(
                    {"role": "tool", "content": _text(call.output), "tool_call_id": call.step_id}
                )
            spans.add(
                call.tool_name or "tool", tool, (call.error or "failed") if _failed(call) else None
            )
    return spans.requests()


WRITERS = {
    "otel-genai": lambda t: _genai(t, tool_spans=True),
    "otel-genai-messages": lambda t: _genai(t, tool_spans=False),
    "openinference": _openinference,
    "openai-responses": _responses,
    "gemini": _gemini,
    "bedrock-converse": _bedrock,
}


def write(variant: str, trace: Trace) -> Any:
    """The conversation of ``trace`` in ``variant`` (a format name, or ``otel-genai-messages``):
    a document, or for the span formats a list of export requests (the lines of an export)."""
    return WRITERS[variant](trace)
