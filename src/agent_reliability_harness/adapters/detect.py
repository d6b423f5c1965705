"""Telling the input formats apart (``--format auto``).

A canonical trace is an object with ``steps``. Anything else must be a transcript: a message
list, or an object holding one. Which provider wrote the transcript is decided from assistant
messages only, because only the model's side differs between the formats (user and tool turns
can look alike, and a user may paste anything into a message):

1. ``cohere-chat`` if any assistant message has ``tool_plan`` or ``citations``;
2. otherwise the first assistant message with a marker decides: ``tool_calls`` or
   ``function_call`` means ``openai-chat``; a ``tool_use``-like, ``thinking`` or cited ``text``
   block in its content means ``anthropic-messages``;
3. a transcript without any marker (text only, or empty) is read as ``openai-chat``.

A non-empty array in which no element is an object is neither messages nor records: an error
(with ``--format openai-chat`` it would be a transcript of unmappable messages).
"""

from __future__ import annotations

from agent_reliability_harness.adapters._build import MESSAGE_KEYS, RecordOptions, locate
from agent_reliability_harness.adapters.anthropic_messages import (
    is_result_block,
    is_tool_use_block,
)
from agent_reliability_harness.errors import InputError
from agent_reliability_harness.model._checks import json_type

TYPE_CHECKING = False  # `typing` costs milliseconds at start-up; only type checkers need it
if TYPE_CHECKING:
    from typing import Any, Final

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


def transcript_format(messages: list[Any]) -> str:
    """The provider format of a message list, from its assistant messages."""
    assistants = [m for m in messages if type(m) is dict and m.get("role") == "assistant"]
    if any("tool_plan" in m or "citations" in m for m in assistants):
        return "cohere-chat"
    for message in assistants:
        if "tool_calls" in message or "function_call" in message:
            return "openai-chat"
        content = message.get("content")
        if type(content) is list and any(_anthropic_block(b) for b in content):
            return "anthropic-messages"
    return "openai-chat"


def detect_format(record: Any, options: RecordOptions | None = None) -> str:
    """Name the format of one record, or raise InputError when it is neither a canonical trace
    nor a transcript."""
    options = options or RecordOptions()
    if options.messages_at is None:
        if type(record) is dict and "steps" in record:
            return "arh"
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
