"""Amazon Bedrock Converse transcripts (format ``bedrock-converse``).

A record is a Converse request or log with ``messages`` (and optionally the response's
``output.message``, ``usage`` and ``metrics``), a response alone, or a list of messages. ``i``
below is a message's position; the response's message counts as the message after the last one.

* ``assistant`` messages: ``text`` blocks become the model_response ``m<i>-response`` (with the
  citations of ``citationsContent`` blocks), placed before the message's calls unless a text
  block follows a call (then after them); each ``toolUse`` block a tool_call whose step id is
  its ``toolUseId`` (``m<i>-tool<k>`` when missing or taken); ``reasoningContent`` blocks are
  counted, never stored.
* ``user`` messages: ``toolResult`` blocks are attached to their calls by ``toolUseId``
  (``status: "error"`` makes the call fail; text content is joined, a ``json`` content kept as
  it is); the text becomes a user_message ``m<i>-user``.
* ``system``: a note.

``usage`` (input tokens plus cache read and write tokens, output tokens) and
``metrics.latencyMs`` go on the first step of the response message.
"""

from __future__ import annotations

from typing import Any, Final

from agent_reliability_harness._decode import is_finite, json_type
from agent_reliability_harness.adapters._build import (
    Builder,
    RecordOptions,
    Transcript,
    is_empty,
    locate,
)
from agent_reliability_harness.adapters._options import MESSAGE_KEYS
from agent_reliability_harness.errors import InputError, join_pointer
from agent_reliability_harness.model.trace import Trace

__all__ = ["FORMAT", "convert"]

FORMAT: Final = "bedrock-converse"
AGENT_NAME: Final = "bedrock-converse-agent"
WORKFLOW: Final = "bedrock-converse-import"

_MESSAGE_KEYS: Final = frozenset({"role", "content"})
_TOOL_USE_KEYS: Final = frozenset({"toolUseId", "name", "input", "type"})
_RESULT_KEYS: Final = frozenset({"toolUseId", "content", "status", "type"})
_RECORD_KEYS: Final = ("messages", "output", "usage", "metrics", "system")


def _locate(record: Any, options: RecordOptions) -> tuple[Transcript, list[tuple[str, Any]]]:
    """The messages with their pointers, the response's message (if any) last."""
    wrapped = (  # a log that holds the messages under 'traj' or 'history', as docs/adapters.md
        type(record) is dict  # says of every transcript format
        and "messages" not in record
        and "output" not in record
        and any(key in record for key in MESSAGE_KEYS)
    )
    if options.messages_at is not None or type(record) is list or wrapped:
        transcript = locate(record, options)
        return transcript, [
            (join_pointer(transcript.base, k), m) for k, m in enumerate(transcript.messages)
        ]
    if type(record) is not dict:
        raise InputError(
            "a Bedrock Converse record is an object with 'messages' or 'output', or an array of "
            f"messages, got {json_type(record)}",
            pointer="",
        )
    if "messages" not in record and "output" not in record:
        raise InputError(
            "no messages: expected a 'messages' array, a response 'output', or both", pointer=""
        )
    messages: list[tuple[str, Any]] = []
    given = record.get("messages")
    if type(given) is list:
        messages.extend((join_pointer("/messages", k), m) for k, m in enumerate(given))
    elif given is not None:
        raise InputError(
            f"must be an array of messages, got {json_type(given)}", pointer="/messages"
        )
    output = record.get("output")
    if output is not None:
        if type(output) is not dict:
            raise InputError(f"must be an object, got {json_type(output)}", pointer="/output")
        if output.get("message") is not None:
            messages.append(("/output/message", output["message"]))
    return Transcript([], "", record, record, frozenset(_RECORD_KEYS)), messages


def convert(record: Any, options: RecordOptions | None = None) -> Trace:
    """Build the canonical trace of one Bedrock Converse record."""
    options = options or RecordOptions()
    transcript, messages = _locate(record, options)
    builder = Builder(FORMAT, transcript)
    wrapper = transcript.wrapper
    if wrapper is not None and not is_empty(wrapper.get("system")):
        builder.system("/system")
    first = 0
    for i, (pointer, message) in enumerate(messages):
        first = len(builder.steps)
        if type(message) is not dict:
            builder.notes.add(
                "non_object_message", f"a message is {json_type(message)}, not an object", pointer
            )
            continue
        role = message.get("role", "assistant" if pointer == "/output/message" else None)
        content = message.get("content")
        where = join_pointer(pointer, "content")
        if type(content) is str:  # not the API's shape, but unambiguous
            content = [{"text": content}]
        elif type(content) is not list:
            if content is not None:
                builder.invalid(where, f"content must be an array, got {json_type(content)}")
            content = []
        if role == "assistant":
            _assistant(builder, i, content, where)
        elif role == "user":
            _user(builder, i, content, where)
        elif role == "system":
            builder.system(pointer)
        else:
            builder.unknown_role(role, pointer)
        builder.unmapped_fields(message, _MESSAGE_KEYS, pointer, "messages")
    if wrapper is not None and "usage" in transcript.consumed:  # a Converse record, read here
        # the response's usage and latency go on its first step; a record without the
        # response's message ('output') has no step to carry them: noted, not dropped
        has_response = bool(messages) and messages[-1][0] == "/output/message"
        step = builder.first_step_since(first) if has_response else None
        _usage(builder, wrapper.get("usage"), step)
        _latency(builder, wrapper.get("metrics"), step)
    return builder.finish(options, AGENT_NAME, WORKFLOW)


def _blocks(builder: Builder, content: list[Any], pointer: str) -> list[tuple[int, str, Any]]:
    """(index, block kind, value) of the content blocks: each is an object with one member."""
    found: list[tuple[int, str, Any]] = []
    for k, block in enumerate(content):
        where = join_pointer(pointer, k)
        if type(block) is not dict:
            builder.notes.add(
                "non_object_block", f"a content block is {json_type(block)}, not an object", where
            )
            continue
        kinds = [key for key in block if key != "type"]
        if not kinds:
            builder.unmapped_block("(empty block)", where)
            continue
        found.append((k, kinds[0], block[kinds[0]]))
    return found


def _assistant(builder: Builder, i: int, content: list[Any], pointer: str) -> None:
    texts: list[str] = []
    last_text = -1  # the position of the last text block
    citations: list[dict[str, Any]] = []
    calls: list[tuple[int, Any]] = []
    for k, kind, value in _blocks(builder, content, pointer):
        where = join_pointer(pointer, k, kind)
        if kind == "text" and type(value) is str:
            texts.append(value)
            last_text = k
        elif kind == "toolUse":
            calls.append((k, value))
        elif kind == "reasoningContent":
            builder.reasoning()
        elif kind == "citationsContent" and type(value) is dict:
            texts.extend(_cited_text(value))
            last_text = k
            citations.extend(_citations(builder, value.get("citations"), where))
        else:
            builder.unmapped_block(kind, join_pointer(pointer, k))
    text = "\n".join(texts) if texts else None
    # The text is one step: before the calls, unless text follows a call (then it is the answer
    # and stays the last step, as it was said).
    answer_last = bool(calls) and last_text > calls[0][0]
    if not answer_last:
        _response(builder, i, text, citations, pointer)
    _tool_uses(builder, i, calls, pointer)
    if answer_last:
        _response(builder, i, text, citations, pointer)


def _response(
    builder: Builder, i: int, text: str | None, citations: list[dict[str, Any]], pointer: str
) -> None:
    step = builder.text_step(f"m{i}-response", text, citations=citations)
    if citations and step is None:
        builder.notes.add(
            "citation_not_mapped", "the message has citations but no text to carry them", pointer
        )


def _tool_uses(builder: Builder, i: int, calls: list[tuple[int, Any]], pointer: str) -> None:
    for k, value in calls:
        where = join_pointer(pointer, k, "toolUse")
        if type(value) is not dict:
            builder.invalid(where, f"toolUse must be an object, got {json_type(value)}")
            continue
        call_id = builder.call_id(value.get("toolUseId"), join_pointer(where, "toolUseId"))
        call = builder.call_step(
            f"m{i}-tool{k}",
            call_id,
            value.get("name"),
            {},
            join_pointer(pointer, k),
            name_pointer=join_pointer(where, "name"),
        )
        call["arguments"] = builder.arguments(
            value.get("input"), join_pointer(where, "input"), call["step_id"]
        )
        builder.unmapped_fields(value, _TOOL_USE_KEYS, where, "toolUse blocks")


def _cited_text(value: dict[str, Any]) -> list[str]:
    content = value.get("content")
    return [
        c["text"]
        for c in (content if type(content) is list else ())
        if type(c) is dict and type(c.get("text")) is str
    ]


def _citations(builder: Builder, value: Any, pointer: str) -> list[dict[str, Any]]:
    """Citations with the cited document's ``title`` as source and a web location's ``url``."""
    if value is None:
        return []
    if type(value) is not list:
        builder.invalid(join_pointer(pointer, "citations"), "citations must be an array")
        return []
    citations: list[dict[str, Any]] = []
    for n, native in enumerate(value):
        if type(native) is not dict:
            builder.notes.add(
                "citation_not_mapped",
                f"a citation is {json_type(native)}, not an object",
                join_pointer(pointer, "citations", n),
            )
            continue
        citation: dict[str, Any] = {}
        location = native.get("location")
        web = location.get("web") if type(location) is dict else None
        if type(web) is dict and type(web.get("url")) is str and web["url"]:
            citation["url"] = web["url"]
        for key in ("title", "source"):
            if type(native.get(key)) is str and native[key].strip():
                citation["source"] = native[key]
                break
        citation["native"] = native
        citations.append(citation)
    return citations


def _user(builder: Builder, i: int, content: list[Any], pointer: str) -> None:
    texts: list[str] = []
    for k, kind, value in _blocks(builder, content, pointer):
        where = join_pointer(pointer, k, kind)
        if kind == "text" and type(value) is str:
            texts.append(value)
        elif kind == "toolResult":
            _tool_result(builder, value, where)
        else:
            builder.unmapped_block(kind, join_pointer(pointer, k))
    if texts:
        builder.user_step(i, "\n".join(texts))


def _tool_result(builder: Builder, value: Any, pointer: str) -> None:
    if type(value) is not dict:
        builder.invalid(pointer, f"toolResult must be an object, got {json_type(value)}")
        return
    call_id = builder.call_id(value.get("toolUseId"), join_pointer(pointer, "toolUseId"))
    pieces: list[Any] = []
    content = value.get("content")
    if type(content) is list:
        for n, part in enumerate(content):
            if type(part) is dict and type(part.get("text")) is str:
                pieces.append(part["text"])
            elif type(part) is dict and "json" in part:
                pieces.append(part["json"])
            elif type(part) is dict and part:
                builder.unmapped_block(next(iter(part)), join_pointer(pointer, "content", n))
            else:
                builder.notes.add(
                    "non_object_block",
                    "a tool result content entry is not a non-empty object",
                    join_pointer(pointer, "content", n),
                )
    elif content is not None:
        builder.invalid(join_pointer(pointer, "content"), "content must be an array")
    output: Any = None
    if pieces and all(type(p) is str for p in pieces):
        output = "\n".join(pieces)
    elif pieces:
        output = pieces[0] if len(pieces) == 1 else pieces
    result: dict[str, Any] = {"output": output}
    status = value.get("status")
    if status == "error":
        result["status"] = "error"
        result["error"] = output if type(output) is str and output.strip() else "tool error"
    elif status not in (None, "success"):
        builder.invalid(join_pointer(pointer, "status"), "status must be 'success' or 'error'")
    builder.attach(pointer, call_id, None, result, status_known=True)
    builder.unmapped_fields(value, _RESULT_KEYS, pointer, "toolResult blocks")


def _usage(builder: Builder, usage: Any, step: dict[str, Any] | None) -> None:
    if usage is None:
        return
    if type(usage) is not dict:
        builder.invalid("/usage", f"usage must be an object, got {json_type(usage)}")
        return
    read = [
        builder.token_count(usage, key, "/usage")
        for key in ("inputTokens", "cacheReadInputTokens", "cacheWriteInputTokens")
    ]
    known = [n for n in read if n is not None]
    builder.set_usage(
        step,
        "/usage",
        sum(known) if known else None,
        builder.token_count(usage, "outputTokens", "/usage"),
    )


def _latency(builder: Builder, metrics: Any, step: dict[str, Any] | None) -> None:
    if metrics is None:
        return
    value = metrics.get("latencyMs") if type(metrics) is dict else None
    if value is None:
        if type(metrics) is not dict:
            builder.invalid("/metrics", f"metrics must be an object, got {json_type(metrics)}")
        return
    if type(value) not in (int, float) or value < 0 or not is_finite(value):
        builder.invalid("/metrics/latencyMs", "latencyMs must be a number >= 0")
        return
    if step is None:
        builder.notes.add(
            "usage_not_mapped",
            "the response has metrics but produced no step to carry them",
            "/metrics",
        )
        return
    step["latency_ms"] = value
