"""Google Gemini ``generateContent`` transcripts (format ``gemini``), camelCase or snake_case.

A record is a request or log with ``contents`` (and optionally the response's ``candidates``,
directly or under ``response``), or a list of contents. ``i`` below is a content's position;
the first candidate of a response counts as the content after the last one.

* ``model`` contents: the text parts become the model_response ``m<i>-response``, placed before
  the calls unless a text part follows a call (then after them, as the answer it is); each
  ``functionCall`` part a tool_call whose step id is its ``id`` (``m<i>-tool<k>`` when missing or
  taken); ``executableCode`` a ``code_execution`` tool_call, and a ``codeExecutionResult`` part
  after it (the model ran the code itself) its result; thought parts (``thought: true``) are
  counted, never stored.
* ``user`` (and ``function``) contents: ``functionResponse`` parts are attached to their calls
  (by ``id``, else by name and position); a response ``{"error": ...}`` makes the call fail, and a
  response ``{"output": ...}`` gives its output (any other response object is the output as it
  is). ``codeExecutionResult`` parts are attached to the code execution before them. The text
  becomes a user_message ``m<i>-user``.
* ``systemInstruction``: a note.

``usageMetadata`` (prompt and tool-use prompt tokens in, candidate and thought tokens out) goes
on the first step of the response (or of the last model content); the candidate's
``groundingMetadata`` chunks and ``citationMetadata`` become citations of its text.
"""

from __future__ import annotations

import json
from typing import Any, Final

from agent_reliability_harness._decode import json_type
from agent_reliability_harness.adapters._build import (
    MESSAGE_KEYS,
    Builder,
    RecordOptions,
    Transcript,
    locate,
)
from agent_reliability_harness.errors import InputError, join_pointer
from agent_reliability_harness.model.trace import Trace

__all__ = ["FORMAT", "convert"]

FORMAT: Final = "gemini"
AGENT_NAME: Final = "gemini-agent"
WORKFLOW: Final = "gemini-import"

# camelCase name -> snake_case name, for every member the adapter reads
_SNAKE: Final = {
    "functionCall": "function_call",
    "functionResponse": "function_response",
    "executableCode": "executable_code",
    "codeExecutionResult": "code_execution_result",
    "inlineData": "inline_data",
    "fileData": "file_data",
    "thoughtSignature": "thought_signature",
    "usageMetadata": "usage_metadata",
    "groundingMetadata": "grounding_metadata",
    "citationMetadata": "citation_metadata",
    "groundingChunks": "grounding_chunks",
    "retrievedContext": "retrieved_context",
    "systemInstruction": "system_instruction",
    "promptTokenCount": "prompt_token_count",
    "candidatesTokenCount": "candidates_token_count",
    "toolUsePromptTokenCount": "tool_use_prompt_token_count",
    "thoughtsTokenCount": "thoughts_token_count",
    "finishReason": "finish_reason",
}
_PART_KEYS: Final = frozenset({"text", "thought", "thoughtSignature", "thought_signature"})
_CONTENT_KEYS: Final = frozenset({"role", "parts"})
_RECORD_KEYS: Final = (
    "contents",
    "candidates",
    "response",
    "usageMetadata",
    "usage_metadata",
    "systemInstruction",
    "system_instruction",
)


def _get(data: dict[str, Any], key: str) -> tuple[str, Any]:
    """A member by its camelCase name or its snake_case name: (the name found, the value)."""
    if key in data:
        return key, data[key]
    snake = _SNAKE.get(key, key)
    return (snake, data[snake]) if snake in data else (key, None)


def _locate(record: Any, options: RecordOptions) -> tuple[Transcript, list[tuple[str, Any]]]:
    """The contents with their pointers; the response's first candidate (if any) last."""
    if (
        options.messages_at is not None
        or type(record) is list
        or (type(record) is dict and any(k in record for k in MESSAGE_KEYS))
    ):
        transcript = locate(record, options)
        return transcript, [
            (join_pointer(transcript.base, k), c) for k, c in enumerate(transcript.messages)
        ]
    if type(record) is not dict:
        raise InputError(
            f"a Gemini record is an object with 'contents' or an array of contents, got "
            f"{json_type(record)}",
            pointer="",
        )
    contents: list[tuple[str, Any]] = []
    given = record.get("contents")
    if type(given) is list:
        contents.extend((join_pointer("/contents", k), c) for k, c in enumerate(given))
    elif given is not None:
        raise InputError(
            f"must be an array of contents, got {json_type(given)}", pointer="/contents"
        )
    response, base = record, ""
    if type(record.get("response")) is dict:
        response, base = record["response"], "/response"
    candidates = response.get("candidates")
    if "contents" not in record and candidates is None:
        raise InputError(
            "no contents: expected a 'contents' array, a response with 'candidates', or both",
            pointer="",
        )
    if candidates is not None:
        where = join_pointer(base, "candidates")
        if type(candidates) is not list:
            raise InputError(f"must be an array, got {json_type(candidates)}", pointer=where)
        if candidates:
            candidate = candidates[0]
            if type(candidate) is not dict:
                raise InputError(
                    f"a candidate must be an object, got {json_type(candidate)}",
                    pointer=join_pointer(where, 0),
                )
            content = candidate.get("content")
            contents.append(
                (join_pointer(where, 0, "content"), content if content is not None else {})
            )
    return Transcript([], "", record, record, frozenset(_RECORD_KEYS)), contents


def convert(record: Any, options: RecordOptions | None = None) -> Trace:
    """Build the canonical trace of one Gemini record."""
    options = options or RecordOptions()
    transcript, contents = _locate(record, options)
    builder = Builder(FORMAT, transcript)
    wrapper = transcript.wrapper
    if wrapper is not None:
        key, system = _get(wrapper, "systemInstruction")
        if system:
            builder.system(join_pointer("", key))
    firsts: list[int] = []
    for i, (pointer, content) in enumerate(contents):
        first = len(builder.steps)
        if _content(builder, i, pointer, content):
            firsts.append(first)
    if wrapper is not None:
        _response_extras(builder, wrapper, firsts)
    return builder.finish(options, AGENT_NAME, WORKFLOW)


def _content(builder: Builder, i: int, pointer: str, content: Any) -> bool:
    """Map one content; True when it is the model's."""
    if type(content) is not dict:
        builder.notes.add(
            "non_object_message", f"a content is {json_type(content)}, not an object", pointer
        )
        return False
    role = content.get("role")
    if role is None:  # optional in the API: a candidate's is the model's, a request's the user's
        role = "model" if "/candidates/" in pointer else "user"
    parts = content.get("parts")
    parts_pointer = join_pointer(pointer, "parts")
    if parts is None:
        parts = []
    elif type(parts) is not list:
        builder.invalid(parts_pointer, f"parts must be an array, got {json_type(parts)}")
        parts = []
    if role == "model":
        _model(builder, i, parts, parts_pointer)
    elif role in ("user", "function", "tool"):
        _user(builder, i, parts, parts_pointer)
    elif role == "system":
        builder.system(pointer)
    else:
        builder.unknown_role(role, pointer)
    builder.unmapped_fields(content, _CONTENT_KEYS, pointer, "contents")
    return role == "model"


def _part(builder: Builder, part: Any, pointer: str) -> dict[str, Any] | None:
    if type(part) is not dict:
        builder.notes.add(
            "non_object_block", f"a part is {json_type(part)}, not an object", pointer
        )
        return None
    return part


def _model(builder: Builder, i: int, parts: list[Any], pointer: str) -> None:
    texts: list[str] = []
    last_text = -1  # the position of the last text part
    calls: list[tuple[int, str, dict[str, Any]]] = []
    results: list[tuple[Any, str]] = []  # code execution results the model ran itself
    for k, raw in enumerate(parts):
        where = join_pointer(pointer, k)
        part = _part(builder, raw, where)
        if part is None:
            continue
        if part.get("thought") is True:
            builder.reasoning()
            continue
        key, call = _get(part, "functionCall")
        code_key, code = _get(part, "executableCode")
        result_key, outcome = _get(part, "codeExecutionResult")
        if type(part.get("text")) is str:
            texts.append(part["text"])
            last_text = k
            builder.unmapped_fields(part, _PART_KEYS, where, "text parts")
        elif call is not None or code is not None:
            calls.append((k, key if call is not None else code_key, part))
        elif outcome is not None:
            results.append((outcome, join_pointer(where, result_key)))
        else:
            _unmapped_part(builder, part, where)
    text = "\n".join(texts) if texts else None
    # The text is one step: before the calls, unless text follows a call (the model ran code
    # and then answered), so that the answer stays the last step, as it was said.
    answer_last = bool(calls) and last_text > calls[0][0]
    if not answer_last:
        builder.text_step(f"m{i}-response", text)
    _model_calls(builder, i, calls, pointer)
    for outcome, where in results:  # attached to the code executions before them, in order
        _code_result(builder, outcome, where)
    if answer_last:
        builder.text_step(f"m{i}-response", text)


def _model_calls(
    builder: Builder, i: int, calls: list[tuple[int, str, dict[str, Any]]], pointer: str
) -> None:
    for k, key, part in calls:
        where = join_pointer(pointer, k, key)
        value = part[key]
        if type(value) is not dict:
            builder.invalid(where, f"{key} must be an object, got {json_type(value)}")
            continue
        if key in ("functionCall", "function_call"):
            call_id = builder.call_id(value.get("id"), join_pointer(where, "id"))
            step = builder.call_step(
                f"m{i}-tool{k}",
                call_id,
                value.get("name"),
                {},
                join_pointer(pointer, k),
                name_pointer=join_pointer(where, "name"),
            )
            step["arguments"] = builder.arguments(
                value.get("args"), join_pointer(where, "args"), step["step_id"]
            )
            builder.unmapped_fields(value, ("id", "name", "args"), where, "function calls")
        else:
            step = builder.call_step(
                f"m{i}-tool{k}",
                None,
                "code_execution",
                {},
                join_pointer(pointer, k),
                name_pointer=where,
            )
            step["arguments"] = {n: value[n] for n in ("language", "code") if n in value}
            step["metadata"] = {"part_type": key}


def _user(builder: Builder, i: int, parts: list[Any], pointer: str) -> None:
    texts: list[str] = []
    for k, raw in enumerate(parts):
        where = join_pointer(pointer, k)
        part = _part(builder, raw, where)
        if part is None:
            continue
        key, response = _get(part, "functionResponse")
        result_key, outcome = _get(part, "codeExecutionResult")
        if type(part.get("text")) is str:
            texts.append(part["text"])
        elif response is not None:
            _function_response(builder, response, join_pointer(where, key))
        elif outcome is not None:
            _code_result(builder, outcome, join_pointer(where, result_key))
        else:
            _unmapped_part(builder, part, where)
    if texts:
        builder.user_step(i, "\n".join(texts))


def _function_response(builder: Builder, value: Any, pointer: str) -> None:
    if type(value) is not dict:
        builder.invalid(pointer, f"a function response must be an object, got {json_type(value)}")
        return
    call_id = builder.call_id(value.get("id"), join_pointer(pointer, "id"))
    name = value.get("name")
    response = value.get("response")
    result: dict[str, Any] = {}
    if type(response) is dict and response.get("error") is not None:
        error = response["error"]
        result["status"] = "error"
        result["error"] = error if type(error) is str and error.strip() else _compact(error)
        if "output" in response:
            result["output"] = response["output"]
    elif type(response) is dict and set(response) == {"output"}:
        result["output"] = response["output"]
    else:
        result["output"] = response
    builder.attach(pointer, call_id, name if type(name) is str else None, result, status_known=True)
    builder.unmapped_fields(value, ("id", "name", "response"), pointer, "function responses")


def _compact(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        return "function error"


def _code_result(builder: Builder, value: Any, pointer: str) -> None:
    if type(value) is not dict:
        builder.invalid(
            pointer, f"a code execution result must be an object, got {json_type(value)}"
        )
        return
    result: dict[str, Any] = {"output": value.get("output")}
    outcome = value.get("outcome")
    if type(outcome) is str and outcome not in ("OUTCOME_OK", "OUTCOME_UNSPECIFIED"):
        result["status"] = "error"
        result["error"] = outcome
    builder.attach(pointer, None, "code_execution", result, status_known=True)


def _unmapped_part(builder: Builder, part: dict[str, Any], pointer: str) -> None:
    kind = next((k for k in part if k not in _PART_KEYS), None)
    builder.unmapped_block(kind if kind is not None else "(empty part)", pointer)


def _response_extras(builder: Builder, record: dict[str, Any], firsts: list[int]) -> None:
    """Usage and grounding of the response, on the first step of the last model content."""
    response, base = record, ""
    if type(record.get("response")) is dict:
        response, base = record["response"], "/response"
    step = builder.first_step_since(firsts[-1]) if firsts else None
    key, usage = _get(response, "usageMetadata")
    if usage is None and response is not record:
        key, usage = _get(record, "usageMetadata")
        base = ""
    if usage is not None:
        where = join_pointer(base, key)
        if type(usage) is not dict:
            builder.invalid(where, f"usage metadata must be an object, got {json_type(usage)}")
        else:
            counts = []
            for names in (
                ("promptTokenCount", "toolUsePromptTokenCount"),
                ("candidatesTokenCount", "thoughtsTokenCount"),
            ):
                found = []
                for name in names:
                    member, _ = _get(usage, name)
                    count = builder.token_count(usage, member, where)
                    if count is not None:
                        found.append(count)
                counts.append(sum(found) if found else None)
            builder.set_usage(step, where, counts[0], counts[1])
    candidates = response.get("candidates")
    if type(candidates) is list and candidates and type(candidates[0]) is dict:
        candidate = candidates[0]
        where = join_pointer("/response" if response is not record else "", "candidates", 0)
        citations = _grounding(builder, candidate, where)
        text_step = (
            next((s for s in builder.steps[firsts[-1] :] if s["type"] == "model_response"), None)
            if firsts
            else None
        )
        if citations and text_step is not None:
            text_step["citations"] = citations
        elif citations:
            builder.notes.add(
                "citation_not_mapped", "the response has grounding but no text to carry it", where
            )
        builder.unmapped_fields(
            candidate,
            (
                "content",
                "finishReason",
                "finish_reason",
                "index",
                "groundingMetadata",
                "grounding_metadata",
                "citationMetadata",
                "citation_metadata",
                "safetyRatings",
                "safety_ratings",
                "avgLogprobs",
                "avg_logprobs",
            ),
            where,
            "candidates",
        )
        if len(candidates) > 1:
            builder.notes.add(
                "candidate_not_mapped",
                "only the first candidate is read; the others were not chosen",
                join_pointer(where[: -len("/0")], 1),
                count=len(candidates) - 1,
            )


def _grounding(builder: Builder, candidate: dict[str, Any], pointer: str) -> list[dict[str, Any]]:
    citations: list[dict[str, Any]] = []
    key, grounding = _get(candidate, "groundingMetadata")
    if type(grounding) is dict:
        chunks_key, chunks = _get(grounding, "groundingChunks")
        for n, chunk in enumerate(chunks if type(chunks) is list else ()):
            source = None
            if type(chunk) is dict:
                source = chunk.get("web")
                if source is None:
                    source = _get(chunk, "retrievedContext")[1]
            if type(source) is not dict:
                builder.notes.add(
                    "citation_not_mapped",
                    "a grounding chunk without a web or retrieved-context source",
                    join_pointer(pointer, key, chunks_key, n),
                )
                continue
            citation: dict[str, Any] = {}
            if type(source.get("uri")) is str and source["uri"]:
                citation["url"] = source["uri"]
            if type(source.get("title")) is str and source["title"]:
                citation["source"] = source["title"]
            citation["native"] = chunk
            citations.append(citation)
    elif grounding is not None:
        builder.invalid(join_pointer(pointer, key), "grounding metadata must be an object")
    key, cited = _get(candidate, "citationMetadata")
    if type(cited) is dict:
        entries = cited.get("citations", cited.get("citationSources"))
        for entry in entries if type(entries) is list else ():
            if type(entry) is not dict:
                continue
            citation = {}
            if type(entry.get("uri")) is str and entry["uri"]:
                citation["url"] = entry["uri"]
            if type(entry.get("title")) is str and entry["title"]:
                citation["source"] = entry["title"]
            citation["native"] = entry
            citations.append(citation)
    return citations
