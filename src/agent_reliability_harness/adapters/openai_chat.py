"""OpenAI Chat Completions transcripts (format ``openai-chat``), with the dialects of real logs.

Per message, ``i`` being its index in the message list:

* ``assistant``: the content's text becomes the model_response ``m<i>-response``; then each
  ``tool_calls[k]`` becomes a tool_call whose step id is the call's id (``m<i>-tool<k>`` when the
  id is missing, empty or already taken); a legacy ``function_call`` becomes ``m<i>-function``.
* ``tool`` and legacy ``function`` messages: the result is attached to its call.
* ``user``: a user_message ``m<i>-user``. ``system`` and ``developer``: a note.

Dialects: ``function`` as the tool name (a string) beside an ``args`` object (AgentDojo),
``tool_call_ids`` as a list (SWE-agent), a tool message's ``error`` text (AgentDojo), content as an
array of parts with ``text`` or ``content`` strings, and arguments as JSON text or an object.
"""

from __future__ import annotations

from typing import Any, Final

from agent_reliability_harness._decode import json_type
from agent_reliability_harness.adapters._build import (
    Builder,
    RecordOptions,
    is_empty,
    locate,
)
from agent_reliability_harness.errors import join_pointer
from agent_reliability_harness.model.trace import Trace

__all__ = ["FORMAT", "convert"]

FORMAT: Final = "openai-chat"
AGENT_NAME: Final = "openai-chat-agent"
WORKFLOW: Final = "openai-chat-import"

_ASSISTANT_KEYS: Final = frozenset(
    {
        "role",
        "content",
        "tool_calls",
        "function_call",
        "refusal",
        "annotations",
        "usage",
        "reasoning",
        "reasoning_content",
    }
)
_TOOL_KEYS: Final = frozenset(
    {"role", "content", "tool_call_id", "tool_call_ids", "name", "error", "tool_call"}
)
_FUNCTION_RESULT_KEYS: Final = frozenset({"role", "content", "name"})
_USER_KEYS: Final = frozenset({"role", "content"})
_CALL_KEYS: Final = frozenset({"id", "type", "function", "args", "arguments", "name", "index"})
_FUNCTION_KEYS: Final = frozenset({"name", "arguments"})
_REASONING_FIELDS: Final = ("reasoning", "reasoning_content")


def convert(record: Any, options: RecordOptions | None = None) -> Trace:
    """Build the canonical trace of one OpenAI chat transcript record."""
    options = options or RecordOptions()
    transcript = locate(record, options)
    builder = Builder(FORMAT, transcript)
    for i, message in enumerate(transcript.messages):
        pointer = builder.at(i)
        if type(message) is not dict:
            builder.notes.add(
                "non_object_message", f"a message is {json_type(message)}, not an object", pointer
            )
            continue
        role = message.get("role")
        if role == "assistant":
            assistant(builder, i, message, _ASSISTANT_KEYS)
        elif role == "tool":
            tool_result(builder, i, message)
        elif role == "function":
            _function_result(builder, i, message)
        elif role == "user":
            user(builder, i, message)
        elif role in ("system", "developer"):
            builder.system(pointer)
        else:
            builder.unknown_role(role, pointer)
    return builder.finish(options, AGENT_NAME, WORKFLOW)


def user(builder: Builder, i: int, message: dict[str, Any]) -> None:
    builder.user_step(i, builder.parts_text(message.get("content"), builder.at(i, "content")))
    builder.unmapped_fields(message, _USER_KEYS, builder.at(i), "user messages")


def assistant(builder: Builder, i: int, message: dict[str, Any], known: frozenset[str]) -> None:
    """Text first (as it was generated), then the tool calls, then the usage."""
    first = len(builder.steps)
    text = builder.parts_text(message.get("content"), builder.at(i, "content"))
    metadata = None
    refusal = message.get("refusal")
    if type(refusal) is str and refusal.strip() and (text is None or not text.strip()):
        text, metadata = refusal, {"source_field": "refusal"}
    elif not is_empty(refusal):
        known = known - {"refusal"}  # beside text (or not text): noted as unmapped
    for key in _REASONING_FIELDS:
        if not is_empty(message.get(key)):
            builder.reasoning()
    citations = _annotations(builder, message.get("annotations"), builder.at(i, "annotations"))
    step = builder.text_step(f"m{i}-response", text, citations=citations, metadata=metadata)
    if citations and step is None:
        builder.notes.add(
            "citation_not_mapped",
            "the message has citations but no text to carry them",
            builder.at(i, "annotations"),
        )
    tool_calls(builder, i, message)
    legacy = message.get("function_call")
    if legacy is not None:
        _legacy_call(builder, i, legacy)
    _usage(builder, message.get("usage"), builder.at(i, "usage"), builder.first_step_since(first))
    builder.unmapped_fields(message, known, builder.at(i), "assistant messages")


def tool_calls(builder: Builder, i: int, message: dict[str, Any]) -> None:
    calls = message.get("tool_calls")
    if type(calls) is list:
        for k, call in enumerate(calls):
            tool_call(builder, i, k, call)
    elif calls is not None:
        builder.invalid(
            builder.at(i, "tool_calls"),
            f"tool_calls must be an array or null, got {json_type(calls)}",
        )


def tool_call(builder: Builder, i: int, k: int, call: Any) -> None:
    """One entry of ``tool_calls``: OpenAI's ``{id, function: {name, arguments}}`` or the
    ``{id, function: "<name>", args: {...}}`` dialect."""
    pointer = builder.at(i, "tool_calls", k)
    if type(call) is not dict:
        builder.notes.add(
            "non_object_tool_call", f"a tool call is {json_type(call)}, not an object", pointer
        )
        return
    name: Any = call.get("name")
    name_pointer = join_pointer(pointer, "name")
    raw: Any = None
    raw_pointer = join_pointer(pointer, "arguments")
    found = False
    function = call.get("function")
    if type(function) is dict:
        if function.get("name") is not None:
            name, name_pointer = function["name"], join_pointer(pointer, "function", "name")
        if "arguments" in function:
            raw, raw_pointer = function["arguments"], join_pointer(pointer, "function", "arguments")
            found = True
        builder.unmapped_fields(
            function, _FUNCTION_KEYS, join_pointer(pointer, "function"), "tool-call functions"
        )
    elif type(function) is str:
        name, name_pointer = function, join_pointer(pointer, "function")
    elif function is not None:
        builder.invalid(
            join_pointer(pointer, "function"),
            f"'function' must be an object or a tool name, got {json_type(function)}",
        )
    if not found:
        for key in ("arguments", "args"):
            if key in call:
                raw, raw_pointer = call[key], join_pointer(pointer, key)
                break
    provider_id = builder.call_id(call.get("id"), join_pointer(pointer, "id"))
    step = builder.call_step(
        f"m{i}-tool{k}", provider_id, name, {}, pointer, name_pointer=name_pointer
    )
    step["arguments"] = builder.arguments(raw, raw_pointer, step["step_id"])
    builder.unmapped_fields(call, _CALL_KEYS, pointer, "tool calls")


def _legacy_call(builder: Builder, i: int, call: Any) -> None:
    pointer = builder.at(i, "function_call")
    if type(call) is not dict:
        builder.invalid(pointer, f"function_call must be an object, got {json_type(call)}")
        return
    step = builder.call_step(
        f"m{i}-function",
        None,
        call.get("name"),
        {},
        pointer,
        name_pointer=join_pointer(pointer, "name"),
    )
    step["arguments"] = builder.arguments(
        call.get("arguments"), join_pointer(pointer, "arguments"), step["step_id"]
    )
    builder.unmapped_fields(call, _FUNCTION_KEYS, pointer, "function_call objects")


def tool_result(builder: Builder, i: int, message: dict[str, Any]) -> None:
    """A ``tool`` message: attached by ``tool_call_id`` (or a one-element ``tool_call_ids``),
    else by position; ``error`` text makes the call fail."""
    pointer = builder.at(i)
    call_id = builder.call_id(message.get("tool_call_id"), builder.at(i, "tool_call_id"))
    why = "missing_id"
    ids = message.get("tool_call_ids")
    if call_id is None and ids is not None:
        if type(ids) is list and len(ids) == 1:
            call_id = builder.call_id(ids[0], builder.at(i, "tool_call_ids", 0))
        elif type(ids) is list and len(ids) > 1:
            why = "several_ids"
        elif type(ids) is not list:
            builder.invalid(
                builder.at(i, "tool_call_ids"),
                f"tool_call_ids must be an array, got {json_type(ids)}",
            )
    name = message.get("name")
    echo = message.get("tool_call")  # AgentDojo repeats the call on its result
    arguments = None
    if type(echo) is dict:
        arguments = echo.get("args") if type(echo.get("args")) is dict else None
        function = echo.get("function")
        if type(name) is not str:
            if type(function) is dict:
                name = function.get("name")
            elif type(function) is str:
                name = function
        if call_id is None:
            call_id = builder.call_id(echo.get("id"), builder.at(i, "tool_call", "id"))
    result: dict[str, Any] = {
        "output": builder.result_value(message.get("content"), builder.at(i, "content"))
    }
    error = message.get("error")
    # A chat tool message has no failure flag; one with an `error` text or null (AgentDojo) says
    # whether its call failed (see tool_status in metadata.adapter.missing).
    stated = "error" in message and error in (None, "")
    if type(error) is str and error.strip():
        result["status"] = "error"
        result["error"] = error
        stated = True
    elif not is_empty(error):
        builder.invalid(
            builder.at(i, "error"), f"error must be a string or null, got {json_type(error)}"
        )
    builder.attach(
        pointer,
        call_id,
        name if type(name) is str else None,
        result,
        why_no_id=why,
        arguments=arguments,
        status_known=stated,
    )
    builder.unmapped_fields(message, _TOOL_KEYS, pointer, "tool messages")


def _function_result(builder: Builder, i: int, message: dict[str, Any]) -> None:
    """A legacy ``role: "function"`` result: it has only the tool's name, no id."""
    name = message.get("name")
    output = builder.result_value(message.get("content"), builder.at(i, "content"))
    builder.attach(
        builder.at(i),
        None,
        name if type(name) is str else None,
        {"output": output},
        why_no_id="legacy_function",
    )
    builder.unmapped_fields(message, _FUNCTION_RESULT_KEYS, builder.at(i), "function messages")


def _usage(builder: Builder, usage: Any, pointer: str, step: dict[str, Any] | None) -> None:
    if usage is None:
        return
    if type(usage) is not dict:
        builder.invalid(pointer, f"usage must be an object, got {json_type(usage)}")
        return
    counts = []
    for keys in (("prompt_tokens", "input_tokens"), ("completion_tokens", "output_tokens")):
        key = next((k for k in keys if k in usage), keys[0])
        counts.append(builder.token_count(usage, key, pointer))
    builder.set_usage(step, pointer, counts[0], counts[1])


def _annotations(builder: Builder, value: Any, pointer: str) -> list[dict[str, Any]]:
    """``url_citation`` annotations as citations with ``url`` and ``source`` (the title)."""
    if value is None:
        return []
    if type(value) is not list:
        builder.invalid(pointer, f"annotations must be an array, got {json_type(value)}")
        return []
    citations: list[dict[str, Any]] = []
    for k, annotation in enumerate(value):
        inner = annotation.get("url_citation") if type(annotation) is dict else None
        if type(inner) is not dict or annotation.get("type") != "url_citation":
            builder.notes.add(
                "citation_not_mapped",
                "only url_citation annotations are mapped to citations",
                join_pointer(pointer, k),
            )
            continue
        citation: dict[str, Any] = {}
        url, title = inner.get("url"), inner.get("title")
        if type(url) is str:
            citation["url"] = url
        if type(title) is str and title:
            citation["source"] = title
        citation["native"] = annotation
        citations.append(citation)
    return citations
