"""OpenAI Responses API items (format ``openai-responses``).

A record is a Response object (``output``, ``usage``), a log of one turn (``input`` and
``output``), or a list of items. The items are read in order, ``input`` first; ``i`` below is an
item's position in that combined list:

* ``message`` items (and ``{role, content}`` without a type): ``assistant`` text (``output_text``
  and ``refusal`` parts) becomes the model_response ``m<i>-response`` with its ``url_citation``
  (and ``file_citation``) annotations as citations; ``user`` text a user_message ``m<i>-user``;
  ``system`` and ``developer`` a note.
* ``function_call`` becomes a tool_call whose step id is its ``call_id`` (``m<i>-tool`` when
  missing or taken); ``function_call_output`` is attached to it by ``call_id``. Nothing in a
  function call's output says whether it failed.
* built-in tool calls (``web_search_call``, ``file_search_call``, ``code_interpreter_call``,
  ``mcp_call``, ``computer_call``, ...) become tool_calls named after the tool (``web_search``,
  or the MCP tool's name), with their action, query or code as arguments, their inline results
  as output, and ``status: "failed"`` as a failed step; ``*_call_output`` items are attached by
  ``call_id``.
* ``reasoning`` items are counted, never stored.

The Response's ``usage`` goes on the first step of its output.
"""

from __future__ import annotations

from typing import Any, Final

from agent_reliability_harness._decode import json_type
from agent_reliability_harness.adapters._build import (
    MESSAGE_KEYS,
    Builder,
    RecordOptions,
    Transcript,
    is_empty,
    locate,
)
from agent_reliability_harness.errors import InputError, join_pointer
from agent_reliability_harness.model.timestamps import from_unix_seconds
from agent_reliability_harness.model.trace import Trace

__all__ = ["FORMAT", "convert"]

FORMAT: Final = "openai-responses"
AGENT_NAME: Final = "openai-responses-agent"
WORKFLOW: Final = "openai-responses-import"

_MESSAGE_KEYS: Final = frozenset({"type", "id", "role", "content", "status"})
_CALL_KEYS: Final = frozenset({"type", "id", "call_id", "name", "arguments", "status"})
_OUTPUT_KEYS: Final = frozenset({"type", "id", "call_id", "output", "status"})
# built-in calls: the member holding the arguments, and the members holding results inline
_BUILTIN_KEYS: Final = frozenset(
    {
        "type",
        "id",
        "call_id",
        "name",
        "status",
        "action",
        "arguments",
        "input",
        "queries",
        "code",
        "container_id",
        "server_label",
        "output",
        "outputs",
        "results",
        "error",
        "pending_safety_checks",
    }
)
_RESULT_MEMBERS: Final = ("output", "outputs", "results")
_PART_EXTRAS: Final = ("annotations", "logprobs")
_RECORD_KEYS: Final = ("input", "output", "usage", "instructions")


def _items(record: Any, options: RecordOptions) -> tuple[Transcript, list[tuple[str, Any]], int]:
    """The record's items with their pointers, and the position where the output begins."""
    if (
        options.messages_at is not None
        or type(record) is list
        or (type(record) is dict and any(k in record for k in MESSAGE_KEYS))
    ):
        transcript = locate(record, options)
        listed = [(join_pointer(transcript.base, k), m) for k, m in enumerate(transcript.messages)]
        return transcript, listed, len(listed)
    if type(record) is not dict:
        raise InputError(
            "an OpenAI Responses record is an object with 'input' or 'output' items, or an "
            f"array of items, got {json_type(record)}",
            pointer="",
        )
    if "input" not in record and "output" not in record:
        raise InputError(
            "no items: expected an 'output' array (a Response), an 'input' array, or both",
            pointer="",
        )
    items: list[tuple[str, Any]] = []
    given = record.get("input")
    if type(given) is str:
        items.append(("/input", {"type": "message", "role": "user", "content": given}))
    elif type(given) is list:
        items.extend((join_pointer("/input", k), m) for k, m in enumerate(given))
    elif given is not None:
        raise InputError(
            f"must be a string or an array of items, got {json_type(given)}", pointer="/input"
        )
    start = len(items)
    output = record.get("output")
    if type(output) is list:
        items.extend((join_pointer("/output", k), m) for k, m in enumerate(output))
    elif output is not None:
        raise InputError(f"must be an array of items, got {json_type(output)}", pointer="/output")
    return Transcript([], "", record, record, frozenset(_RECORD_KEYS)), items, start


def convert(record: Any, options: RecordOptions | None = None) -> Trace:
    """Build the canonical trace of one OpenAI Responses record."""
    options = options or RecordOptions()
    transcript, items, start = _items(record, options)
    builder = Builder(FORMAT, transcript)
    wrapper = transcript.wrapper
    instructions = wrapper.get("instructions") if wrapper is not None else None
    if type(instructions) is str and instructions.strip():
        builder.system("/instructions")
    first = len(builder.steps)
    for i, (pointer, item) in enumerate(items):
        if i == start:
            first = len(builder.steps)
        _item(builder, i, pointer, item)
    if wrapper is not None and wrapper.get("usage") is not None:
        _usage(builder, wrapper["usage"], builder.first_step_since(first))
    if wrapper is not None and wrapper.get("created_at") is not None and start < len(items):
        _created_at(builder, wrapper["created_at"], builder.first_step_since(first))
    return builder.finish(options, AGENT_NAME, WORKFLOW)


def _created_at(builder: Builder, created: Any, step: dict[str, Any] | None) -> None:
    """The Response's ``created_at`` (unix seconds), when the model call that wrote its output
    started, as the ``timestamp`` of the output's first step (the one its usage goes on)."""
    if type(created) is not int:
        builder.invalid(
            "/created_at", f"created_at must be whole unix seconds, got {json_type(created)}"
        )
        return
    try:
        text = from_unix_seconds(created)
    except ValueError:
        builder.invalid("/created_at", f"created_at {created} is not a time between 1970 and 9999")
        return
    if step is not None:
        step["timestamp"] = text


def _item(builder: Builder, i: int, pointer: str, item: Any) -> None:
    if type(item) is not dict:
        builder.notes.add(
            "non_object_message", f"an item is {json_type(item)}, not an object", pointer
        )
        return
    kind = item.get("type")
    if kind is None and "role" in item:
        kind = "message"
    if kind == "message":
        _message(builder, i, pointer, item)
    elif kind == "function_call":
        _function_call(builder, i, pointer, item)
    elif kind == "reasoning":
        builder.reasoning()
    elif type(kind) is str and kind.endswith("_call_output"):
        _call_output(builder, pointer, item)
    elif type(kind) is str and kind.endswith("_call"):
        _builtin_call(builder, i, pointer, item, kind)
    else:
        builder.unmapped_block(kind, pointer)


def _message(builder: Builder, i: int, pointer: str, item: dict[str, Any]) -> None:
    role = item.get("role")
    content_pointer = join_pointer(pointer, "content")
    content = item.get("content")
    if role == "assistant":
        parts = content
        if type(content) is list:  # annotations are read below, as citations
            parts = [
                {k: v for k, v in p.items() if k not in _PART_EXTRAS} if type(p) is dict else p
                for p in content
            ]
        text = builder.parts_text(parts, content_pointer)
        citations = _annotations(builder, content, content_pointer)
        step = builder.text_step(f"m{i}-response", text, citations=citations)
        if citations and step is None:
            builder.notes.add(
                "citation_not_mapped",
                "the message has citations but no text to carry them",
                pointer,
            )
    elif role == "user":
        builder.user_step(i, builder.parts_text(content, content_pointer))
    elif role in ("system", "developer"):
        builder.system(pointer)
        return
    else:
        builder.unknown_role(role, pointer)
        return
    builder.unmapped_fields(item, _MESSAGE_KEYS, pointer, "message items")


def _annotations(builder: Builder, content: Any, pointer: str) -> list[dict[str, Any]]:
    """``url_citation`` and ``file_citation`` annotations of ``output_text`` parts."""
    citations: list[dict[str, Any]] = []
    if type(content) is not list:
        return citations
    for k, part in enumerate(content):
        if type(part) is not dict or part.get("type") != "output_text":
            continue
        annotations = part.get("annotations")
        if annotations is None:
            continue
        where = join_pointer(pointer, k, "annotations")
        if type(annotations) is not list:
            builder.invalid(where, f"annotations must be an array, got {json_type(annotations)}")
            continue
        for n, annotation in enumerate(annotations):
            kind = annotation.get("type") if type(annotation) is dict else None
            citation: dict[str, Any] = {}
            if kind == "url_citation" and type(annotation.get("url")) is str:
                citation["url"] = annotation["url"]
                if type(annotation.get("title")) is str and annotation["title"]:
                    citation["source"] = annotation["title"]
            elif kind == "file_citation":
                name = annotation.get("filename", annotation.get("file_id"))
                if type(name) is str and name:
                    citation["source"] = name
            if not citation:
                builder.notes.add(
                    "citation_not_mapped",
                    "only url_citation and file_citation annotations are mapped to citations",
                    join_pointer(where, n),
                )
                continue
            citation["native"] = annotation
            citations.append(citation)
    return citations


def _function_call(builder: Builder, i: int, pointer: str, item: dict[str, Any]) -> None:
    call_id = builder.call_id(item.get("call_id"), join_pointer(pointer, "call_id"))
    step = builder.call_step(
        f"m{i}-tool",
        call_id,
        item.get("name"),
        {},
        pointer,
        name_pointer=join_pointer(pointer, "name"),
    )
    step["arguments"] = builder.arguments(
        item.get("arguments"), join_pointer(pointer, "arguments"), step["step_id"]
    )
    builder.unmapped_fields(item, _CALL_KEYS, pointer, "function_call items")


def _call_output(builder: Builder, pointer: str, item: dict[str, Any]) -> None:
    call_id = builder.call_id(item.get("call_id"), join_pointer(pointer, "call_id"))
    output = builder.result_value(item.get("output"), join_pointer(pointer, "output"))
    builder.attach(pointer, call_id, None, {"output": output})
    builder.unmapped_fields(item, _OUTPUT_KEYS, pointer, f"{item['type']} items")


def _builtin_call(builder: Builder, i: int, pointer: str, item: dict[str, Any], kind: str) -> None:
    """A tool the API ran itself (or asks the caller to run, for ``computer_call`` and the like,
    whose result then comes as a ``*_call_output`` item)."""
    name = item.get("name") if type(item.get("name")) is str else kind[: -len("_call")]
    provider = item.get("call_id", item.get("id"))
    call_id = builder.call_id(
        provider, join_pointer(pointer, "call_id" if "call_id" in item else "id")
    )
    step = builder.call_step(f"m{i}-tool", call_id, name, {}, pointer, name_pointer=pointer)
    step["metadata"] = {"item_type": kind}
    arguments: dict[str, Any] = {}
    if "arguments" in item:
        arguments = builder.arguments(
            item["arguments"], join_pointer(pointer, "arguments"), step["step_id"]
        )
    elif type(item.get("action")) is dict:
        arguments = item["action"]
    else:
        for key in ("queries", "code", "input"):
            if item.get(key) is not None:
                arguments = {key: item[key]}
                break
    step["arguments"] = arguments
    status = item.get("status")
    error = item.get("error")
    failed = status == "failed" or not is_empty(error)
    if failed:
        step["status"] = "error"
        step["error"] = (
            error if type(error) is str and error.strip() else f"{kind} {status or 'failed'}"
        )
    found = next((key for key in _RESULT_MEMBERS if item.get(key) is not None), None)
    if found is not None:
        step["output"] = item[found]
    if found is not None or failed or ("call_id" not in item and status is not None):
        builder.answered(
            step["step_id"], status_known=status is not None or failed, output=found is not None
        )
    builder.unmapped_fields(item, _BUILTIN_KEYS, pointer, f"{kind} items")


def _usage(builder: Builder, usage: Any, step: dict[str, Any] | None) -> None:
    pointer = "/usage"
    if type(usage) is not dict:
        builder.invalid(pointer, f"usage must be an object, got {json_type(usage)}")
        return
    builder.set_usage(
        step,
        pointer,
        builder.token_count(usage, "input_tokens", pointer),
        builder.token_count(usage, "output_tokens", pointer),
    )
