"""Render a canonical trace as an OpenAI chat or Anthropic messages transcript (test tooling).

The adapter-equivalence check of benchmarks/accuracy/run.py writes each benchmark trace in both
transcript forms, reads them back with the harness's adapters, and compares verdicts. A transcript
cannot carry everything a canonical trace can (latency, cost, token counts, ``requires_grounding``,
citations, metadata, an error status in OpenAI chat, unnamed tool calls), so each renderer first
*projects* the trace onto what its format can express and reports which fields it dropped. The
comparison is then between the projection, validated directly, and the transcript read back: the
same verdict and the same set of (severity, rule) pairs are expected. A case whose projection drops
nothing is "lossless". Both transcript forms open with a user turn (the user's request, unless the
trace starts with a user_message step of its own), and the projection keeps user turns as
user_message steps, so it has that opening turn too.

These renderers are written from the public shape of the two APIs, not from the adapters, so
they are an independent second implementation of the mapping.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

__all__ = ["FORMAT_NAMES", "RENDERERS", "Rendered", "project", "to_anthropic", "to_openai"]

FORMAT_NAMES = ("openai-chat", "anthropic-messages")
_TRACE_KEYS = ("schema_version", "trace_id", "agent_name", "workflow", "steps")
_CALL_KEYS = ("step_id", "type", "tool_name", "arguments", "output", "status", "error")
_RESPONSE_KEYS = ("step_id", "type", "text")
_USER_KEYS = ("step_id", "type", "text")

# (projected canonical trace, transcript document, dropped fields)
Rendered = tuple[dict[str, Any], dict[str, Any], list[str]]


def _content(value: Any) -> str:
    """A tool result as transcript text: strings as they are, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def project(trace: dict[str, Any], fmt: str) -> tuple[dict[str, Any], list[str]]:
    """The part of ``trace`` that format ``fmt`` can carry, and what had to be dropped."""
    lost: list[str] = []

    def drop(what: str) -> None:
        if what not in lost:
            lost.append(what)

    out = {k: copy.deepcopy(trace[k]) for k in _TRACE_KEYS if k in trace}
    out["steps"] = []
    for key, value in trace.items():
        if key not in _TRACE_KEYS and value is not None:
            drop(f"trace.{key}")
    seen: set[str] = set()
    steps = trace["steps"]
    if not steps or steps[0]["type"] != "user_message":
        # The transcript opens with the user's request (see _task): a user turn of the run.
        ids = {step["step_id"] for step in steps}
        opening = "task"
        while opening in ids:
            opening += "~"
        out["steps"].append({"step_id": opening, "type": "user_message", "text": _task(trace)})
    for step in steps:
        kind = step["type"]
        if kind == "user_message":
            for key, value in step.items():
                if key not in _USER_KEYS and value not in (None, False, [], {}):
                    drop(f"step.{key}")
            out["steps"].append(
                {"step_id": step["step_id"], "type": "user_message", "text": step.get("text") or ""}
            )
            continue
        keep = _CALL_KEYS if kind == "tool_call" else _RESPONSE_KEYS
        for key, value in step.items():
            if key not in keep and value not in (None, False, [], {}):
                drop(f"step.{key}")
        if kind == "tool_call":
            if not step.get("tool_name"):
                drop("unnamed tool call")
                continue
            new: dict[str, Any] = {
                "step_id": step["step_id"],
                "type": "tool_call",
                "tool_name": step["tool_name"],
                "arguments": copy.deepcopy(step.get("arguments") or {}),
            }
            if step["step_id"] in seen:
                drop("repeated step id")
                new["step_id"] = f"{step['step_id']}~{len(out['steps'])}"
            failed = step.get("status") == "error" or (
                step.get("status") is None and bool(step.get("error"))
            )
            output = step.get("output")
            if failed and fmt == "openai-chat":
                # Chat tool messages have no error flag: the error text is the content.
                drop("step.status")
                text = step.get("error") or (None if output is None else _content(output))
                if text is not None:
                    new["output"] = text
            elif failed:
                new["status"] = "error"
                new["error"] = step.get("error") or (
                    "tool error" if output is None else _content(output)
                )
                if output is not None and step.get("error"):
                    drop("step.output of a failed call")
            elif output is not None:
                new["output"] = _content(output)
                if not isinstance(output, str):
                    drop("structured tool output")
        else:
            if step.get("status") == "error" or step.get("error"):
                drop("step.status")
            new = {
                "step_id": step["step_id"],
                "type": "model_response",
                "text": step.get("text") or "",
            }
            if not step.get("text"):
                drop("empty response text")
        seen.add(step["step_id"])
        out["steps"].append(new)
    return out, lost


def _wrapper(trace: dict[str, Any], messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "trace_id": trace["trace_id"],
        "agent_name": trace["agent_name"],
        "workflow": trace["workflow"],
        "messages": messages,
    }


def _task(trace: dict[str, Any]) -> str:
    return f"Please run the {trace['workflow']} workflow for me."


def to_openai(trace: dict[str, Any]) -> Rendered:
    """Chat Completions messages: assistant ``tool_calls`` answered by ``role: tool`` messages."""
    projected, lost = project(trace, "openai-chat")
    messages: list[dict[str, Any]] = []
    for step in projected["steps"]:
        if step["type"] == "user_message":
            messages.append({"role": "user", "content": step["text"]})
            continue
        if step["type"] == "model_response":
            messages.append({"role": "assistant", "content": step["text"]})
            continue
        call = {
            "id": step["step_id"],
            "type": "function",
            "function": {
                "name": step["tool_name"],
                "arguments": json.dumps(step["arguments"], ensure_ascii=False),
            },
        }
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        if "output" in step:
            messages.append(
                {"role": "tool", "tool_call_id": step["step_id"], "content": step["output"]}
            )
    return projected, _wrapper(projected, messages), lost


def to_anthropic(trace: dict[str, Any]) -> Rendered:
    """Anthropic Messages: ``tool_use`` blocks answered by ``tool_result`` blocks."""
    projected, lost = project(trace, "anthropic-messages")
    messages: list[dict[str, Any]] = []
    for step in projected["steps"]:
        if step["type"] == "user_message":
            messages.append({"role": "user", "content": [{"type": "text", "text": step["text"]}]})
            continue
        if step["type"] == "model_response":
            messages.append(
                {"role": "assistant", "content": [{"type": "text", "text": step["text"]}]}
            )
            continue
        use = {
            "type": "tool_use",
            "id": step["step_id"],
            "name": step["tool_name"],
            "input": step["arguments"],
        }
        messages.append({"role": "assistant", "content": [use]})
        result: dict[str, Any] | None = None
        if step.get("status") == "error":
            result = {"content": step["error"], "is_error": True}
        elif "output" in step:
            result = {"content": step["output"]}
        if result is not None:
            block = {"type": "tool_result", "tool_use_id": step["step_id"], **result}
            messages.append({"role": "user", "content": [block]})
    return projected, _wrapper(projected, messages), lost


RENDERERS: dict[str, Callable[[dict[str, Any]], Rendered]] = {
    "openai-chat": to_openai,
    "anthropic-messages": to_anthropic,
}
