"""Anthropic Messages transcripts (format ``anthropic-messages``).

Per message, ``i`` being its index in the message list and ``k`` the index of a content block:

* ``assistant``: a string content becomes the model_response ``m<i>-text0``; in a block list,
  each ``text`` block becomes ``m<i>-text<k>`` (its citations mapped onto ``source``/``url``), each
  ``tool_use`` (also ``server_tool_use`` and ``mcp_tool_use``) a tool_call whose step id is the
  block's id (``m<i>-tool<k>`` when missing or taken), and server tool results in the same message
  are attached to their calls. ``thinking`` and ``redacted_thinking`` blocks are only counted.
* ``user``: ``tool_result`` blocks are attached to their calls (``is_error: true`` makes the call
  fail); the text becomes a user_message ``m<i>-user``.
* the top-level ``system`` prompt and ``system`` messages: a note.
"""

from __future__ import annotations

from typing import Any, Final

from agent_reliability_harness._decode import json_type
from agent_reliability_harness.adapters._build import (
    REASONING_TYPES,
    Builder,
    RecordOptions,
    is_empty,
    locate,
)
from agent_reliability_harness.errors import join_pointer
from agent_reliability_harness.model.trace import Trace

__all__ = ["FORMAT", "convert", "is_result_block", "is_tool_use_block"]

FORMAT: Final = "anthropic-messages"
AGENT_NAME: Final = "anthropic-agent"
WORKFLOW: Final = "anthropic-messages-import"

_MESSAGE_KEYS: Final = frozenset({"role", "content", "usage"})
_TEXT_KEYS: Final = frozenset({"type", "text", "citations"})
_TOOL_USE_KEYS: Final = frozenset({"type", "id", "name", "input"})
_RESULT_KEYS: Final = frozenset({"type", "tool_use_id", "content", "is_error"})
_CLIENT_RESULTS: Final = frozenset({"tool_result", "mcp_tool_result"})


def is_tool_use_block(kind: object) -> bool:
    """``tool_use``, ``server_tool_use``, ``mcp_tool_use``: a call of a tool."""
    return type(kind) is str and kind.endswith("tool_use")


def is_result_block(kind: object) -> bool:
    """``tool_result``, ``mcp_tool_result``, ``web_search_tool_result``, ...: a tool's result."""
    return type(kind) is str and kind.endswith("tool_result")


def convert(record: Any, options: RecordOptions | None = None) -> Trace:
    """Build the canonical trace of one Anthropic Messages transcript record."""
    options = options or RecordOptions()
    transcript = locate(record, options)
    builder = Builder(FORMAT, transcript)
    consumed: tuple[str, ...] = ()
    wrapper = transcript.wrapper
    if wrapper is not None and "system" in wrapper:
        consumed = ("system",)
        if not is_empty(wrapper["system"]):
            builder.system("/system")
    for i, message in enumerate(transcript.messages):
        pointer = builder.at(i)
        if type(message) is not dict:
            builder.notes.add(
                "non_object_message", f"a message is {json_type(message)}, not an object", pointer
            )
            continue
        role = message.get("role")
        if role == "assistant":
            _assistant(builder, i, message)
        elif role == "user":
            _user(builder, i, message)
        elif role == "system":
            builder.system(pointer)
        else:
            builder.unknown_role(role, pointer)
    return builder.finish(options, AGENT_NAME, WORKFLOW, consumed=consumed)


def _blocks(builder: Builder, i: int, content: Any) -> list[Any]:
    if type(content) is list:
        return content
    if content is not None:
        builder.invalid(
            builder.at(i, "content"),
            f"content must be a string or an array of blocks, got {json_type(content)}",
        )
    return []


def _assistant(builder: Builder, i: int, message: dict[str, Any]) -> None:
    first = len(builder.steps)
    content = message.get("content")
    if type(content) is str:
        builder.text_step(f"m{i}-text0", content)
    for k, block in enumerate(_blocks(builder, i, None if type(content) is str else content)):
        pointer = builder.at(i, "content", k)
        if type(block) is not dict:
            builder.notes.add(
                "non_object_block", f"a content block is {json_type(block)}, not an object", pointer
            )
            continue
        kind = block.get("type")
        if kind == "text":
            _text(builder, i, k, block, pointer)
        elif is_tool_use_block(kind):
            _tool_use(builder, i, k, block, pointer)
        elif is_result_block(kind):
            _tool_result(builder, block, pointer)
        elif type(kind) is str and kind in REASONING_TYPES:
            builder.reasoning()
        else:
            builder.unmapped_block(kind, pointer)
    _usage(builder, message.get("usage"), builder.at(i, "usage"), builder.first_step_since(first))
    builder.unmapped_fields(message, _MESSAGE_KEYS, builder.at(i), "assistant messages")


def _text(builder: Builder, i: int, k: int, block: dict[str, Any], pointer: str) -> None:
    text = block.get("text")
    if type(text) is not str:
        builder.invalid(pointer, "a text block has no string 'text'")
        return
    citations = _citations(builder, block.get("citations"), join_pointer(pointer, "citations"))
    step = builder.text_step(f"m{i}-text{k}", text, citations=citations)
    if citations and step is None:
        builder.notes.add(
            "citation_not_mapped",
            "a blank text block has citations but no text to carry them",
            join_pointer(pointer, "citations"),
        )
    builder.unmapped_fields(block, _TEXT_KEYS, pointer, "text blocks")


def _tool_use(builder: Builder, i: int, k: int, block: dict[str, Any], pointer: str) -> None:
    provider_id = builder.call_id(block.get("id"), join_pointer(pointer, "id"))
    step = builder.call_step(
        f"m{i}-tool{k}",
        provider_id,
        block.get("name"),
        {},
        pointer,
        name_pointer=join_pointer(pointer, "name"),
    )
    raw = block.get("input")
    if raw is None or type(raw) is dict:
        step["arguments"] = raw or {}
    else:
        builder.notes.add(
            "arguments_not_object",
            f"the input is {json_type(raw)}, not an object, so the call is checked with no "
            "arguments",
            join_pointer(pointer, "input"),
            step_id=step["step_id"],
            raw_input=raw,
        )
    if block.get("type") != "tool_use":
        step["metadata"] = {"block_type": block["type"]}
    builder.unmapped_fields(block, _TOOL_USE_KEYS, pointer, f"{block['type']} blocks")


def _tool_result(builder: Builder, block: dict[str, Any], pointer: str) -> None:
    call_id = builder.call_id(block.get("tool_use_id"), join_pointer(pointer, "tool_use_id"))
    content = block.get("content")
    if str(block["type"]) in _CLIENT_RESULTS:
        output = builder.result_value(content, join_pointer(pointer, "content"))
    else:  # a server tool's result is structured data (search results, code output): kept as is
        output = content
    result: dict[str, Any] = {"output": output}
    failed = block.get("is_error")
    # a missing is_error means the call succeeded (the API's default), so every result with a
    # readable flag says whether its call failed (tool_status in metadata.adapter.missing)
    stated = True
    kind = content.get("type") if type(content) is dict else None
    if failed is True:
        result["status"] = "error"
        result["error"] = output if type(output) is str and output.strip() else "tool error"
    elif failed is not None and failed is not False:
        builder.invalid(
            join_pointer(pointer, "is_error"),
            f"is_error must be true or false, got {json_type(failed)}",
        )
        stated = False  # an unreadable flag does not say whether the call failed
    elif type(kind) is str and kind.endswith("_error"):
        # a server tool's failure: {"type": "web_search_tool_result_error", "error_code": ...}
        code = content.get("error_code") if type(content) is dict else None
        result["status"] = "error"
        result["error"] = code if type(code) is str and code else kind
    builder.attach(pointer, call_id, None, result, status_known=stated)
    builder.unmapped_fields(block, _RESULT_KEYS, pointer, f"{block['type']} blocks")


def _user(builder: Builder, i: int, message: dict[str, Any]) -> None:
    content = message.get("content")
    if type(content) is str:
        builder.user_step(i, content)
    texts: list[str] = []
    for k, block in enumerate(_blocks(builder, i, None if type(content) is str else content)):
        pointer = builder.at(i, "content", k)
        if type(block) is not dict:
            builder.notes.add(
                "non_object_block", f"a content block is {json_type(block)}, not an object", pointer
            )
            continue
        kind = block.get("type")
        if is_result_block(kind):
            _tool_result(builder, block, pointer)
        elif kind == "text" and type(block.get("text")) is str:
            texts.append(block["text"])
            builder.unmapped_fields(block, _TEXT_KEYS, pointer, "text blocks")
        else:
            builder.unmapped_block(kind, pointer)
    if texts:
        builder.user_step(i, "\n".join(texts))
    builder.unmapped_fields(message, ("role", "content"), builder.at(i), "user messages")


def _usage(builder: Builder, usage: Any, pointer: str, step: dict[str, Any] | None) -> None:
    """``input_tokens`` plus the cache tokens (all were read by the model), ``output_tokens``."""
    if usage is None:
        return
    if type(usage) is not dict:
        builder.invalid(pointer, f"usage must be an object, got {json_type(usage)}")
        return
    read = [
        builder.token_count(usage, key, pointer)
        for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    ]
    known = [n for n in read if n is not None]
    builder.set_usage(
        step,
        pointer,
        sum(known) if known else None,
        builder.token_count(usage, "output_tokens", pointer),
    )


def _citations(builder: Builder, value: Any, pointer: str) -> list[dict[str, Any]]:
    """Anthropic citation objects as citations with a ``source`` (the document's title, or its
    index) and, for web results, a ``url``; the original object is kept under ``native``."""
    if value is None:
        return []
    if type(value) is not list:
        builder.invalid(pointer, f"citations must be an array, got {json_type(value)}")
        return []
    citations: list[dict[str, Any]] = []
    for k, native in enumerate(value):
        if type(native) is not dict:
            builder.notes.add(
                "citation_not_mapped",
                f"a citation is {json_type(native)}, not an object",
                join_pointer(pointer, k),
            )
            continue
        citation: dict[str, Any] = {}
        url = native.get("url")
        if type(url) is str and url:
            citation["url"] = url
        source = next(
            (
                native[key]
                for key in ("document_title", "source", "title")
                if type(native.get(key)) is str and native[key].strip()
            ),
            None,
        )
        if source is None and type(native.get("document_index")) is int:
            source = f"document {native['document_index']}"
        if source is not None:
            citation["source"] = source
        citation["native"] = native
        citations.append(citation)
    return citations
