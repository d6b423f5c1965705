"""What every transcript adapter shares.

Finding the message list of a record, naming steps so that ids stay unique, pairing tool results
with their calls, recording what could not be mapped as notes with stable codes, and assembling
the canonical trace. Nothing here reads files; every problem with the input is either a note on
the trace or an :class:`~agent_reliability_harness.errors.InputError` at a JSON pointer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from agent_reliability_harness._decode import (
    fits_in_text,
    id_part,
    json_type,
    opt_object,
    opt_text,
    resolve,
)
from agent_reliability_harness._json import loads
from agent_reliability_harness.adapters._options import MESSAGE_KEYS, RecordOptions
from agent_reliability_harness.errors import InputError, join_pointer, parse_pointer
from agent_reliability_harness.model.trace import Trace

__all__ = [
    "MESSAGE_KEYS",
    "REASONING_TYPES",
    "Builder",
    "RecordOptions",
    "Transcript",
    "is_empty",
    "locate",
    "writable_count",
]

# Content blocks and parts that carry a model's reasoning; only their number is kept.
REASONING_TYPES: Final = frozenset({"thinking", "redacted_thinking", "reasoning"})
TEXT_TYPES: Final = frozenset({"text", "input_text", "output_text"})
_WRAPPER_FIELDS: Final = ("trace_id", "agent_name", "workflow", "metadata")
# Where a record names the model that ran (the agent, when the record names no agent_name):
# OpenAI, Anthropic and Cohere requests and responses, Bedrock Converse, Gemini responses.
_MODEL_FIELDS: Final = ("model", "modelId", "modelVersion", "model_version")


def _model(wrapper: Mapping[str, Any]) -> str | None:
    """The name of the model a record says ran it, if it says so in a non-blank string."""
    for key in _MODEL_FIELDS:
        value = wrapper.get(key)
        if type(value) is str and value.strip():
            return value
    return None


_RESERVED_METADATA: Final = ("adapter", "record")
_SCALARS: Final = (str, int, float, bool)
# reason -> why a tool result was paired by position (the `reason` of tool_result_paired_by_order)
_NO_ID_REASONS: Final = {
    "missing_id": "the result has no usable tool-call id",
    "several_ids": "the result lists several tool-call ids",
    "legacy_function": "legacy function results carry no id",
}


def writable_count(count: int, pointer: str, line: int | None = None) -> int:
    """A token count an adapter added up from counts of the source, or an InputError at the
    usage that gave them when the sum has more digits than Python writes as text (each count
    read from JSON has fewer, but two of them can add up to more): such a trace could not be
    written by ``arh convert`` nor reported by ``arh validate``."""
    if not fits_in_text(count):
        raise InputError(
            "the token counts add up to a number too long to write", pointer=pointer, line=line
        )
    return count


@dataclass(frozen=True, slots=True)
class Transcript:
    """A record's message list, the pointer to it, and the wrapper object around it (if any)."""

    messages: list[Any]
    base: str
    record: Any
    wrapper: dict[str, Any] | None
    consumed: frozenset[str] = field(default_factory=frozenset)


def locate(record: Any, options: RecordOptions) -> Transcript:
    """Find the message list of ``record``; InputError when there is none."""
    if options.messages_at is not None:
        value, where = resolve(record, options.messages_at, "messages_at")
        if type(value) is not list:
            raise InputError(
                f"expected the message list here, got {json_type(value)}", pointer=where
            )
        tokens = parse_pointer(options.messages_at)
        # only a top-level member that is the message list itself counts as used up; a
        # container (answer_generation holding train_messages) still has fields of its own
        consumed = frozenset(tokens) if len(tokens) == 1 else frozenset()
        wrapper = record if type(record) is dict else None
        return Transcript(_messages(value, where), where, record, wrapper, consumed)
    if type(record) is list:
        return Transcript(_messages(record, ""), "", record, None)
    if type(record) is dict:
        for key in MESSAGE_KEYS:
            if key in record:
                value = record[key]
                if type(value) is not list:
                    raise InputError(
                        f"must be an array of messages, got {json_type(value)}",
                        pointer=join_pointer("", key),
                    )
                where = join_pointer("", key)
                return Transcript(_messages(value, where), where, record, record, frozenset({key}))
        raise InputError(
            "no message list: expected a 'messages', 'traj' or 'history' array "
            "(use --messages-at to point at another member)",
            pointer="",
        )
    raise InputError(
        f"a transcript is an array of messages or an object holding one, got {json_type(record)}",
        pointer="",
    )


def _messages(value: list[Any], where: str) -> list[Any]:
    """A message list; one with entries but no object among them is not one (a list of lists
    read as messages would be an empty trace that passes)."""
    if value and not any(type(message) is dict for message in value):
        hint = ""
        if all(type(message) is list for message in value):
            hint = f" (its entries are arrays: point --messages-at at one, such as {where}/-1)"
        raise InputError(
            "expected an array of messages (objects), got an array without any object in it" + hint,
            pointer=where,
        )
    return value


def is_empty(value: object) -> bool:
    """``null``, ``""``, ``[]`` and ``{}`` carry nothing worth a note when left unmapped."""
    return value is None or (type(value) in (str, list, dict) and not value)


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except RecursionError:  # values nested almost as deeply as the decoder allows
        return False


class Notes:
    """What an adapter could not map, in the order first met. Every note has a stable ``code``
    and a ``message``; one-off notes have a ``pointer``, tallied ones a ``count`` (and the
    ``pointers`` of the occurrences, except for reasoning, of which only the count is kept)."""

    def __init__(self) -> None:
        self._notes: list[dict[str, Any]] = []
        self._tallies: dict[tuple[str, str], dict[str, Any]] = {}

    def add(self, code: str, message: str, pointer: str | None, **details: Any) -> None:
        note: dict[str, Any] = {"code": code, "message": message}
        if pointer is not None:
            note["pointer"] = pointer
        note.update(details)
        self._notes.append(note)

    def tally(
        self,
        code: str,
        message: str,
        pointer: str | None,
        *,
        key: str = "",
        refs: str = "pointers",
        **details: Any,
    ) -> None:
        """Count one occurrence; ``pointer`` (a JSON pointer, or under ``refs`` another reference
        such as a span id) is listed when given."""
        note = self._tallies.get((code, key))
        if note is None:
            note = {"code": code, "message": message, **details, "count": 0}
            self._tallies[(code, key)] = note
            self._notes.append(note)
        note["count"] += 1
        if pointer is not None:  # the first occurrences may have had none
            note.setdefault(refs, []).append(pointer)

    def to_list(self) -> list[dict[str, Any]]:
        return self._notes


class Builder:
    """Collects the steps of one transcript and turns them into a :class:`Trace`."""

    def __init__(self, fmt: str, transcript: Transcript) -> None:
        self.fmt = fmt
        self.transcript = transcript
        self.notes = Notes()
        self.steps: list[dict[str, Any]] = []
        self._ids: set[str] = set()
        self._calls_by_id: dict[str, list[str]] = {}
        self._calls: dict[str, dict[str, Any]] = {}  # step id -> tool_call step
        self._pending: dict[str, str] = {}  # step id -> pointer of calls still without a result
        # The same calls by tool name, in order (a dict as an ordered set); for each provider id,
        # the index in _calls_by_id before which no call waits; for each generated id, the next
        # suffix to try. Each keeps pairing and naming linear in the number of calls.
        self._pending_named: dict[str, dict[str, None]] = {}
        self._waiting_from: dict[str, int] = {}
        self._suffixes: dict[str, int] = {}
        self._has_user = False
        # What the source provided, for metadata.adapter.missing (see ``missing``): the calls
        # that got a result, those whose outcome the source states, those with a provider id.
        self._answered: set[str] = set()
        self._status_known: set[str] = set()
        self._with_id: set[str] = set()
        # the step ids that are, or are made from, ids of the source (metadata.adapter.step_ids)
        self._from_source: set[str] = set()

    # -- positions and ids ---------------------------------------------------------------------

    def at(self, index: int, *keys: str | int) -> str:
        """The pointer of message ``index`` (and of ``keys`` inside it) within the record."""
        return join_pointer(self.transcript.base, index, *keys)

    def step_id(self, generated: str, preferred: str | None = None, *, source: bool = False) -> str:
        """``preferred`` (a provider's id) if no step has it yet, else ``generated`` (made
        unique with a ``-2``, ``-3``, ... suffix); ``source``: ``generated`` is made from an id
        of the source (a span id), not from a position."""
        if preferred is not None and preferred not in self._ids:
            self._ids.add(preferred)
            self._from_source.add(preferred)
            return preferred
        candidate, number = generated, self._suffixes.get(generated, 2)
        if candidate in self._ids:  # the suffixes below ``number`` were taken already
            while (candidate := f"{generated}-{number}") in self._ids:
                number += 1
            self._suffixes[generated] = number + 1
        self._ids.add(candidate)
        if source:
            self._from_source.add(candidate)
        return candidate

    def step_ids(self) -> str:
        """Where the step ids came from, for ``metadata.adapter.step_ids``
        (``model.step_refs.STEP_ID_ORIGINS``)."""
        from_source = sum(1 for step in self.steps if step["step_id"] in self._from_source)
        if from_source == 0:
            return "generated"
        return "provider" if from_source == len(self.steps) else "mixed"

    def call_id(self, value: Any, pointer: str) -> str | None:
        """A provider's tool-call id as text; missing, ``null`` and ``""`` are no id."""
        if value is None or value == "":
            return None
        if type(value) is str:
            return value
        if type(value) is int:
            return str(value)
        self.invalid(pointer, f"a tool-call id must be a string, got {json_type(value)}")
        return None

    # -- notes ---------------------------------------------------------------------------------

    def invalid(self, pointer: str, message: str) -> None:
        """A known field whose value has the wrong shape, so it is not used."""
        self.notes.add("invalid_field", message, pointer)

    def unmapped_fields(
        self, data: Mapping[str, Any], known: Iterable[str], pointer: str, where: str
    ) -> None:
        """Tally every non-empty member of ``data`` that is not in ``known``."""
        known = frozenset(known) if not isinstance(known, frozenset) else known
        for key, value in data.items():
            if key not in known and not is_empty(value):
                self.notes.tally(
                    "unmapped_field",
                    f"field {key!r} of {where} has no canonical counterpart",
                    join_pointer(pointer, key),
                    key=f"{where}\0{key}",
                    field=key,
                    where=where,
                )

    def unmapped_block(self, kind: Any, pointer: str) -> None:
        name = kind if type(kind) is str else f"<{json_type(kind)}>"
        self.notes.tally(
            "unmapped_block",
            f"content blocks of type {name!r} have no canonical counterpart",
            pointer,
            key=name,
            block_type=name,
        )

    def reasoning(self) -> None:
        """Count a reasoning block or field; its content is never kept."""
        self.notes.tally(
            "reasoning_dropped",
            "reasoning (thinking) content is not stored; only the number of blocks is kept",
            None,
        )

    def system(self, pointer: str) -> None:
        self.notes.tally(
            "system_message_not_mapped",
            "system and developer instructions are not steps of the run",
            pointer,
        )

    def unknown_role(self, role: Any, pointer: str) -> None:
        name = role if type(role) is str else f"<{json_type(role)}>"
        self.notes.tally(
            "unknown_role",
            f"messages with role {name!r} are not mapped",
            pointer,
            key=name,
            role=name,
        )

    # -- steps ---------------------------------------------------------------------------------

    def text_step(
        self,
        generated: str,
        text: str | None,
        *,
        citations: list[dict[str, Any]] | None = None,
        metadata: dict[str, Any] | None = None,
        source: bool = False,
    ) -> dict[str, Any] | None:
        """A model_response for non-blank ``text`` (None, and no step, for blank text)."""
        if text is None or not text.strip():
            return None
        step: dict[str, Any] = {
            "step_id": self.step_id(generated, source=source),
            "type": "model_response",
            "text": text,
        }
        if citations:
            step["citations"] = citations
        if metadata:
            step["metadata"] = metadata
        self.steps.append(step)
        return step

    def user_step(self, index: int, text: str | None) -> None:
        self.user_turn(f"m{index}-user", text)

    def user_turn(self, generated: str, text: str | None, *, source: bool = False) -> None:
        """A user_message step for non-blank ``text``."""
        if text is None or not text.strip():
            return
        self._has_user = True
        step_id = self.step_id(generated, source=source)
        self.steps.append({"step_id": step_id, "type": "user_message", "text": text})

    def call_step(
        self,
        generated: str,
        provider_id: str | None,
        name: Any,
        arguments: dict[str, Any],
        pointer: str,
        *,
        name_pointer: str,
        source: bool = False,
    ) -> dict[str, Any]:
        """A tool_call step, registered for pairing with its result."""
        if name is not None and type(name) is not str:
            self.invalid(name_pointer, f"a tool name must be a string, got {json_type(name)}")
            name = None
        step_id = self.step_id(generated, provider_id, source=source)
        if provider_id is not None and step_id != provider_id:
            if provider_id in self._calls_by_id:
                self.notes.add(
                    "duplicate_tool_call_id",
                    f"tool-call id {provider_id!r} was already used by an earlier call; this call "
                    f"is step {step_id!r} and its result is paired by position",
                    pointer,
                    tool_call_id=provider_id,
                    step_id=step_id,
                )
            else:
                self.notes.add(
                    "step_id_renamed",
                    f"tool-call id {provider_id!r} is already the id of another step; this call "
                    f"is step {step_id!r}",
                    pointer,
                    tool_call_id=provider_id,
                    step_id=step_id,
                )
        step: dict[str, Any] = {
            "step_id": step_id,
            "type": "tool_call",
            "tool_name": name,
            "arguments": arguments,
        }
        self.steps.append(step)
        if provider_id is not None:
            self._calls_by_id.setdefault(provider_id, []).append(step_id)
            self._with_id.add(step_id)
        self._calls[step_id] = step
        self._pending[step_id] = pointer
        if name:
            self._pending_named.setdefault(name, {})[step_id] = None
        return step

    def arguments(self, raw: Any, pointer: str, step_id: str) -> dict[str, Any]:
        """Tool-call arguments: an object, or a JSON text of one; anything else is noted."""
        if raw is None:
            return {}
        if type(raw) is dict:
            return raw
        if type(raw) is str:
            if not raw.strip():
                return {}
            try:
                decoded = loads(raw)
            except InputError as exc:
                self.notes.add(
                    "argument_parse_error",
                    "the arguments are not valid JSON, so the call is checked with no arguments",
                    pointer,
                    step_id=step_id,
                    error=exc.message
                    + (f" (line {exc.line}, column {exc.column})" if exc.line else ""),
                    raw_arguments=raw,
                )
                return {}
            if type(decoded) is dict:
                return decoded
            shape = f"decode to {json_type(decoded)}"
        else:
            shape = f"are {json_type(raw)}"
        self.notes.add(
            "arguments_not_object",
            f"the arguments {shape}, not an object, so the call is checked with no arguments",
            pointer,
            step_id=step_id,
            raw_arguments=raw,
        )
        return {}

    def first_step_since(self, count: int) -> dict[str, Any] | None:
        return self.steps[count] if len(self.steps) > count else None

    def set_usage(
        self,
        step: dict[str, Any] | None,
        pointer: str,
        input_tokens: int | None,
        output_tokens: int | None,
    ) -> None:
        """Put a message's token usage on its first step (a user turn does not carry it: no rule
        reads the metrics of user turns, so it would be lost there without a word)."""
        if input_tokens is None and output_tokens is None:
            return
        if step is None or step.get("type") == "user_message":
            self.notes.add(
                "usage_not_mapped",
                "the message has token usage but produced no step to carry it",
                pointer,
            )
            return
        if input_tokens is not None:
            step["input_tokens"] = writable_count(input_tokens, pointer)
        if output_tokens is not None:
            step["output_tokens"] = writable_count(output_tokens, pointer)

    def token_count(self, usage: Mapping[str, Any], key: str, pointer: str) -> int | None:
        value = usage.get(key)
        if value is None:
            return None
        if type(value) is float and value.is_integer() and value >= 0:
            return int(value)
        if type(value) is int and value >= 0:
            return value
        self.invalid(
            join_pointer(pointer, key),
            f"a token count must be an integer >= 0, got {json_type(value)}",
        )
        return None

    # -- content -------------------------------------------------------------------------------

    def parts_text(self, content: Any, pointer: str) -> str | None:
        """The text of a message's content: a string, or the text parts of an array of parts
        joined with newlines. Other parts are noted (reasoning only counted)."""
        if content is None or type(content) is str:
            return content
        if type(content) is not list:
            self.invalid(
                pointer,
                f"content must be a string, an array of parts or null, got {json_type(content)}",
            )
            return None
        texts: list[str] = []
        for k, part in enumerate(content):
            text = self._part_text(part, join_pointer(pointer, k))
            if text is not None:
                texts.append(text)
        return "\n".join(texts) if texts else None

    def _part_text(self, part: Any, pointer: str) -> str | None:
        if type(part) is str:
            return part
        if type(part) is not dict:
            self.notes.add(
                "non_object_block",
                f"a content part is {json_type(part)}, not an object",
                pointer,
            )
            return None
        kind = part.get("type")
        name = kind if type(kind) is str else ""  # a list or object is not a set member
        if name in REASONING_TYPES:
            self.reasoning()
            return None
        if name in TEXT_TYPES or (kind is None and "text" in part):
            # {"type": "text", "content": ...} is a common variant (AgentDojo logs)
            text = part.get("text")
            key = "text"
            if text is None and type(part.get("content")) is str:
                text, key = part["content"], "content"
            if type(text) is not str:
                self.invalid(pointer, "a text part has no string 'text'")
                return None
            self.unmapped_fields(part, ("type", key), pointer, "text parts")
            return text
        if kind == "refusal" and type(part.get("refusal")) is str:
            return str(part["refusal"])
        self.unmapped_block(kind, pointer)
        return None

    def result_value(self, content: Any, pointer: str) -> Any:
        """A tool result's output: strings and objects as they are; for an array of parts, the
        text and document data they hold (joined with newlines when all are text)."""
        if type(content) is not list:
            return content
        pieces: list[Any] = []
        for k, part in enumerate(content):
            where = join_pointer(pointer, k)
            if type(part) is dict and part.get("type") == "document":
                document = part.get("document")
                data = document.get("data") if type(document) is dict else None
                if data is None:
                    self.notes.add(
                        "document_block_missing_data",
                        "a document block has no 'document.data'",
                        where,
                    )
                else:
                    pieces.append(data)
                continue
            text = self._part_text(part, where)
            if text is not None:
                pieces.append(text)
        if not pieces:
            return None
        if all(type(p) is str for p in pieces):
            return "\n".join(pieces)
        return pieces[0] if len(pieces) == 1 else pieces

    # -- tool results --------------------------------------------------------------------------

    def attach(
        self,
        pointer: str,
        call_id: str | None,
        name: str | None,
        result: Mapping[str, Any],
        *,
        why_no_id: str = "missing_id",
        arguments: Any = None,
        status_known: bool = False,
    ) -> None:
        """Attach a tool result to its call: by id when exactly one call has that id, else to
        the earliest call still waiting for a result, preferring one with the result's tool name
        (and with its arguments, when the result repeats them). ``status_known``: the result
        says whether the call failed."""
        target: str | None = None
        if call_id is not None:
            calls = self._calls_by_id.get(call_id)
            if not calls:
                self.notes.add(
                    "unmatched_tool_result",
                    f"no tool call has the id {call_id!r}, so this result is not attached",
                    pointer,
                    tool_call_id=call_id,
                )
                return
            first = self._waiting_from.get(call_id, 0)
            while first < len(calls) and calls[first] not in self._pending:
                first += 1  # settled calls never wait again: the next search starts here
            self._waiting_from[call_id] = first
            if first == len(calls):
                self.notes.add(
                    "duplicate_tool_result",
                    f"the call with id {call_id!r} already has a result; this one is not attached",
                    pointer,
                    tool_call_id=call_id,
                    step_id=calls[-1],
                )
                return
            target = calls[first]
            if len(calls) > 1:
                self.notes.tally(
                    "tool_result_paired_by_order",
                    "tool results attached to the earliest waiting call because their id is "
                    "shared by several calls",
                    pointer,
                    key="shared_id",
                    reason="shared_id",
                )
        else:
            if not self._pending:
                self.notes.add(
                    "unmatched_tool_result",
                    "no tool call is waiting for a result, so this result is not attached",
                    pointer,
                )
                return
            steps = self._calls
            named = self._pending_named.get(name) if name else None
            if not named:
                target = next(iter(self._pending))
            elif arguments is None:
                target = next(iter(named))
            else:
                target = next(
                    (s for s in named if _same(steps[s]["arguments"], arguments)),
                    next(iter(named)),
                )
            self.notes.tally(
                "tool_result_paired_by_order",
                "tool results attached to the earliest waiting call because "
                + _NO_ID_REASONS[why_no_id],
                pointer,
                key=why_no_id,
                reason=why_no_id,
            )
        self.answered(target, status_known=status_known)
        step = self._calls[target]
        called = step["tool_name"]
        if name and called is not None and name != called:
            self.notes.add(
                "tool_result_name_mismatch",
                f"the result names tool {name!r} but is attached to a call of {called!r}",
                pointer,
                step_id=target,
            )
        step.update((k, v) for k, v in result.items() if v is not None)

    def answered(self, step_id: str, *, status_known: bool, output: bool = True) -> None:
        """Record that the call ``step_id`` is settled: the source gave it a result (``output``),
        and says whether it failed (``status_known``); it no longer waits for a result."""
        if self._pending.pop(step_id, None) is not None:
            name = self._calls[step_id]["tool_name"]
            if name:
                self._pending_named[name].pop(step_id, None)
        if output:
            self._answered.add(step_id)
        if status_known:
            self._status_known.add(step_id)

    def status_recorded(self, step_id: str) -> None:
        """Record that the source says whether the call ``step_id`` failed, without a result."""
        self._status_known.add(step_id)

    def missing(self) -> list[str]:
        """The canonical fields the source provided for none of the steps they apply to, in the
        order of ``MISSING_FIELDS`` (see TRACE-SPEC.md, "Fidelity of converted traces")."""
        agent = [s for s in self.steps if s["type"] != "user_message"]
        calls = [s["step_id"] for s in agent if s["type"] == "tool_call"]
        found = {
            "latency_ms": any(s.get("latency_ms") is not None for s in agent),
            "cost_usd": any(s.get("cost_usd") is not None for s in agent),
            "tokens": any(
                s.get("input_tokens") is not None or s.get("output_tokens") is not None
                for s in agent
            ),
            "tool_output": not calls or any(c in self._answered for c in calls),
            "tool_status": not calls or any(c in self._status_known for c in calls),
            "tool_call_id": not calls or any(c in self._with_id for c in calls),
        }
        return [name for name, present in found.items() if not present]

    # -- the trace -----------------------------------------------------------------------------

    def finish(
        self,
        options: RecordOptions,
        agent_name: str,
        workflow: str,
        *,
        consumed: Iterable[str] = (),
        started_at: str | None = None,
        ended_at: str | None = None,
    ) -> Trace:
        """Assemble the canonical trace: identity, steps, record fields, notes and
        ``metadata.adapter.missing`` (the fields the source did not give); ``started_at`` and
        ``ended_at`` are the run's times when the source records them."""
        for pointer in self._pending.values():
            self.notes.tally(
                "tool_call_without_result",
                "tool calls that never got a result",
                pointer,
            )
        transcript = self.transcript
        wrapper = transcript.wrapper
        metadata: dict[str, Any] = {}
        trace_id = options.default_id
        if wrapper is not None:
            given = opt_object(wrapper, "metadata", "")
            if given is not None:
                for key in _RESERVED_METADATA:
                    if key in given:
                        raise InputError(
                            f"metadata key {key!r} is reserved for what the adapter records",
                            pointer=join_pointer("/metadata", key),
                        )
                metadata.update(given)
            if not options.trace_id_at:
                if type(wrapper.get("trace_id")) is int:
                    raise InputError(
                        "must be a string or null, got number (--trace-id-at /trace_id takes a "
                        "number as the id)",
                        pointer="/trace_id",
                    )
                trace_id = opt_text(wrapper, "trace_id", "") or trace_id
            agent_name = opt_text(wrapper, "agent_name", "") or _model(wrapper) or agent_name
            workflow = opt_text(wrapper, "workflow", "") or workflow
            skip = frozenset((*_WRAPPER_FIELDS, *transcript.consumed, *consumed))
            kept: dict[str, Any] = {}
            left: list[str] = []
            for key, value in wrapper.items():
                if key in skip:
                    continue
                if value is None or type(value) in _SCALARS:
                    kept[key] = value
                elif value:  # an empty array or object holds nothing to lose
                    left.append(key)
            if kept:
                metadata["record"] = kept
            if left:
                self.notes.add(
                    "record_field_not_kept",
                    "fields of the record that are (non-empty) arrays or objects are not kept",
                    None,
                    fields=left,
                )
        if options.trace_id_at:
            parts: list[str] = []
            for pointer in options.trace_id_at:
                value, where = resolve(transcript.record, pointer, "trace_id_at")
                parts.append(id_part(value, where))
            trace_id = "-".join(parts)
        notes = self.notes.to_list()
        adapter: dict[str, Any] = {"missing": self.missing(), "step_ids": self.step_ids()}
        if notes:
            adapter["notes"] = notes
        metadata["adapter"] = adapter
        timed = started_at is not None or ended_at is not None
        if timed or any("timestamp" in step for step in self.steps):
            version = "1.3"  # the lowest version that reads timestamps (TRACE-SPEC.md)
        else:
            version = "1.1" if self._has_user else "1"
        document: dict[str, Any] = {
            "schema_version": version,
            "trace_id": trace_id,
            "agent_name": agent_name,
            "workflow": workflow,
            "source": self.fmt,
            "steps": self.steps,
            "metadata": metadata,
        }
        if started_at is not None:
            document["started_at"] = started_at
        if ended_at is not None:
            document["ended_at"] = ended_at
        return Trace.from_dict(document)
