"""Telling the input formats apart (``--format auto``).

A canonical trace is an object with ``steps`` (unless ``--messages-at`` is given); an
OpenTelemetry export is an object with ``resourceSpans``, with ``--messages-at`` too
(``openinference`` when a span has ``openinference.span.kind``, else ``otel-genai``). Some
objects name their format by their members:

* ``contents`` or ``candidates`` (or a ``response`` holding candidates): ``gemini``;
* ``output`` holding a ``message`` object, or ``messages`` beside ``modelId``, ``toolConfig``,
  ``inferenceConfig`` or ``metrics``: ``bedrock-converse``;
* ``output`` as an array, ``object: "response"``, or ``input`` without a message list:
  ``openai-responses``.

Anything else must be a transcript: a message list, or an object holding one. Which provider
wrote it is decided from the model's side only (user and tool turns can look alike, and a user
may paste anything into a message):

1. ``openai-responses`` if an item is a ``function_call``, a ``reasoning`` item or a built-in
   ``*_call``; ``gemini`` if a content has the role ``model``;
2. ``cohere-chat`` if any assistant message has ``tool_plan`` or ``citations``;
3. otherwise the first assistant message with a marker decides: ``tool_calls`` or
   ``function_call`` means ``openai-chat``; a ``tool_use``-like, ``thinking`` or cited ``text``
   block in its content means ``anthropic-messages``; a ``toolUse``, ``reasoningContent`` or
   ``citationsContent`` block means ``bedrock-converse``; an ``output_text`` part means
   ``openai-responses``;
4. a transcript without any marker (text only, or empty) is read as ``openai-chat``.

A non-empty array in which no element is an object is neither messages nor records: an error
(with ``--format openai-chat`` it would be a transcript of unmappable messages).
"""

from __future__ import annotations

from typing import Any, Final

from agent_reliability_harness._decode import json_type
from agent_reliability_harness.adapters._build import MESSAGE_KEYS, RecordOptions, locate
from agent_reliability_harness.adapters.anthropic_messages import (
    is_result_block,
    is_tool_use_block,
)
from agent_reliability_harness.adapters.spans import export_format
from agent_reliability_harness.errors import InputError

__all__ = ["detect_format", "transcript_format"]

_ANTHROPIC_REASONING: Final = frozenset({"thinking", "redacted_thinking"})


def _anthropic_block(block: Any) -> bool:
    if type(block) is not dict:
        return False
    kind = block.get("type")
    return (
        is_tool_use_block(kind)
        or is_result_block(kind)
        or (type(kind) is str and kind in _ANTHROPIC_REASONING)
        or (kind == "text" and "citations" in block)
    )


_BEDROCK_BLOCKS: Final = ("toolUse", "reasoningContent", "citationsContent")
_BEDROCK_RECORD: Final = ("modelId", "toolConfig", "inferenceConfig", "metrics")


def _responses_item(item: dict[str, Any]) -> bool:
    """A model-output item of the Responses API: a function call, reasoning, a built-in call."""
    kind = item.get("type")
    return type(kind) is str and (kind in ("function_call", "reasoning") or kind.endswith("_call"))


def _bedrock_block(block: Any) -> bool:
    return type(block) is dict and "type" not in block and any(k in block for k in _BEDROCK_BLOCKS)


def _output_text(block: Any) -> bool:
    return type(block) is dict and block.get("type") == "output_text"


def transcript_format(messages: list[Any]) -> str:
    """The provider format of a message list, from the model's messages and items."""
    items = [m for m in messages if type(m) is dict]
    if any(_responses_item(m) for m in items):
        return "openai-responses"
    if any(m.get("role") == "model" for m in items):
        return "gemini"
    assistants = [m for m in items if m.get("role") == "assistant"]
    if any("tool_plan" in m or "citations" in m for m in assistants):
        return "cohere-chat"
    for message in assistants:
        if "tool_calls" in message or "function_call" in message:
            return "openai-chat"
        content = message.get("content")
        if type(content) is list:
            if any(_anthropic_block(b) for b in content):
                return "anthropic-messages"
            if any(_bedrock_block(b) for b in content):
                return "bedrock-converse"
            if any(_output_text(b) for b in content):
                return "openai-responses"
    return "openai-chat"


def record_format(record: dict[str, Any]) -> str | None:
    """The format an object names by its members (None: look at its messages)."""
    if "resourceSpans" in record or "resource_spans" in record:
        return export_format(record)
    response = record.get("response")
    if (
        "contents" in record
        or "candidates" in record
        or (type(response) is dict and "candidates" in response)
    ):
        return "gemini"
    output = record.get("output")
    if type(output) is dict and "message" in output:
        return "bedrock-converse"
    if "messages" in record and any(k in record for k in _BEDROCK_RECORD):
        return "bedrock-converse"
    if any(key in record for key in MESSAGE_KEYS):
        return None
    if type(output) is list or record.get("object") == "response" or "input" in record:
        return "openai-responses"
    return None


def detect_format(record: Any, options: RecordOptions | None = None) -> str:
    """Name the format of one record, or raise InputError when it is neither a canonical trace
    nor a transcript."""
    options = options or RecordOptions()
    if type(record) is dict and ("resourceSpans" in record or "resource_spans" in record):
        # an export even with --messages-at: its spans are no transcript, and the span adapters
        # refuse the record options with an error that says so

        return export_format(record)
    if options.messages_at is None:
        if type(record) is dict and "steps" in record:
            return "arh"
        named = record_format(record) if type(record) is dict else None
        if named is not None:
            return named
        if type(record) is dict and not any(key in record for key in MESSAGE_KEYS):
            got = "an object without any of them"
        elif type(record) not in (dict, list):
            got = json_type(record)
        elif type(record) is list and record and not any(type(m) is dict for m in record):
            got = "an array without any object in it"
        else:
            got = ""
        if got:
            raise InputError(
                "cannot tell the trace format: expected a canonical trace (an object with "
                "'steps') or a transcript (an array of messages, or an object with 'messages', "
                f"'traj' or 'history'), got {got}",
                pointer="",
            )
    return transcript_format(locate(record, options).messages)
