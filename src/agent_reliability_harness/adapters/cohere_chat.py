"""Cohere Chat v2 transcripts (format ``cohere-chat``).

Per message, ``i`` being its index in the message list:

* ``assistant``: ``tool_plan`` becomes the model_response ``m<i>-plan`` (marked with
  ``metadata.source_field: "tool_plan"``), the content's text ``m<i>-response`` with the message's
  citations, and each ``tool_calls[k]`` a tool_call as in ``openai-chat``.
* ``tool``: attached to its call by ``tool_call_id``; document blocks contribute their
  ``document.data``.
* ``user``: a user_message ``m<i>-user``; ``system``: a note.
"""

from __future__ import annotations

from typing import Any, Final

from agent_reliability_harness._decode import json_type
from agent_reliability_harness.adapters import openai_chat
from agent_reliability_harness.adapters._build import Builder, RecordOptions, locate
from agent_reliability_harness.errors import join_pointer
from agent_reliability_harness.model.trace import Trace

__all__ = ["FORMAT", "convert"]

FORMAT: Final = "cohere-chat"
AGENT_NAME: Final = "cohere-chat-agent"
WORKFLOW: Final = "cohere-chat-import"

_ASSISTANT_KEYS: Final = frozenset({"role", "content", "tool_plan", "tool_calls", "citations"})


def convert(record: Any, options: RecordOptions | None = None) -> Trace:
    """Build the canonical trace of one Cohere chat transcript record."""
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
            _assistant(builder, i, message)
        elif role == "tool":
            openai_chat.tool_result(builder, i, message)
        elif role == "user":
            openai_chat.user(builder, i, message)
        elif role == "system":
            builder.system(pointer)
        else:
            builder.unknown_role(role, pointer)
    return builder.finish(options, AGENT_NAME, WORKFLOW)


def _assistant(builder: Builder, i: int, message: dict[str, Any]) -> None:
    first = len(builder.steps)
    plan = message.get("tool_plan")
    if type(plan) is str:
        builder.text_step(f"m{i}-plan", plan, metadata={"source_field": "tool_plan"})
    elif plan is not None:
        builder.invalid(
            builder.at(i, "tool_plan"), f"tool_plan must be a string, got {json_type(plan)}"
        )
    text = builder.parts_text(message.get("content"), builder.at(i, "content"))
    citations = _citations(builder, message.get("citations"), builder.at(i, "citations"))
    step = builder.text_step(f"m{i}-response", text, citations=citations)
    if citations and step is None:
        builder.notes.add(
            "citation_not_mapped",
            "the message has citations but no text to carry them",
            builder.at(i, "citations"),
        )
    openai_chat.tool_calls(builder, i, message)
    _usage(builder, message.get("usage"), builder.at(i, "usage"), builder.first_step_since(first))
    builder.unmapped_fields(
        message, _ASSISTANT_KEYS | {"usage"}, builder.at(i), "assistant messages"
    )


def _usage(builder: Builder, usage: Any, pointer: str, step: dict[str, Any] | None) -> None:
    """``usage.tokens`` (what the model processed), else ``usage.billed_units``."""
    if usage is None:
        return
    if type(usage) is not dict:
        builder.invalid(pointer, f"usage must be an object, got {json_type(usage)}")
        return
    for key in ("tokens", "billed_units"):
        counts = usage.get(key)
        if type(counts) is dict:
            where = join_pointer(pointer, key)
            builder.set_usage(
                step,
                where,
                builder.token_count(counts, "input_tokens", where),
                builder.token_count(counts, "output_tokens", where),
            )
            return


def _citations(builder: Builder, value: Any, pointer: str) -> list[dict[str, Any]]:
    """Cohere citations as citations whose ``source`` lists the ids of their sources (and
    ``url`` the first document URL); the original object is kept under ``native``."""
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
        ids: list[str] = []
        url: str | None = None
        sources = native.get("sources")
        for source in sources if type(sources) is list else ():
            if type(source) is not dict:
                continue
            if type(source.get("id")) is str and source["id"]:
                ids.append(source["id"])
            document = source.get("document")
            if url is None and type(document) is dict and type(document.get("url")) is str:
                url = document["url"]
        citation: dict[str, Any] = {}
        if url:
            citation["url"] = url
        if ids:
            citation["source"] = ", ".join(ids)
        citation["native"] = native
        citations.append(citation)
    return citations
