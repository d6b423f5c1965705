"""Reading OpenTelemetry trace exports (OTLP/JSON) for the span-based adapters.

An export request is ``{"resourceSpans": [{"resource": ..., "scopeSpans": [{"scope": ...,
"spans": [...]}]}]}``; a collector's file exporter writes one such request per line (JSON Lines).
The spans of one trace may be spread over several requests, so :func:`group` takes every request
of a file, each with its line number, and groups the spans by trace id, in the order the trace ids
first appear. :class:`SpanTrace` turns one group into a canonical trace: its spans are ordered by
start time (ties by span id), and a *dialect* (``otel_genai`` or ``openinference``) says what each
span is.

Structural problems (a request that is not an object with a ``resourceSpans`` array, a null
where an array belongs, a span without a trace id, requests without any span) are input errors;
problems inside a span are notes on its trace.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final

from agent_reliability_harness._decode import is_finite, json_type
from agent_reliability_harness._json import loads
from agent_reliability_harness.adapters._build import (
    Builder,
    RecordOptions,
    Transcript,
    writable_count,
)
from agent_reliability_harness.errors import InputError, join_pointer
from agent_reliability_harness.model.timestamps import from_unix_nanos
from agent_reliability_harness.model.trace import Trace

__all__ = [
    "Message",
    "Span",
    "SpanTrace",
    "SpanView",
    "group",
    "json_text",
    "span_traces",
    "unflatten",
]

_RESOURCE_KEYS: Final = ("resourceSpans", "resource_spans")
_SCOPE_KEYS: Final = ("scopeSpans", "scope_spans", "instrumentationLibrarySpans")
_STATUS_ERROR: Final = frozenset({2, "2", "STATUS_CODE_ERROR", "ERROR", "error"})
_STATUS_OK: Final = frozenset({1, "1", "STATUS_CODE_OK", "OK", "ok"})


@dataclass(frozen=True, slots=True)
class Span:
    """One span, its attributes decoded to plain JSON values."""

    trace_id: str
    span_id: str
    name: str
    start: int | None
    end: int | None
    attributes: dict[str, Any]
    events: tuple[tuple[str, dict[str, Any]], ...]
    error: str | None  # the status message (or error.type) when the span status is error
    pointer: str
    line: int | None
    resource: dict[str, Any]
    problems: list[tuple[str, str]] = field(default_factory=list, compare=False)
    ok: bool = False  # the status says OK in so many words (an unset status says nothing)

    def ref(self) -> dict[str, Any]:
        """How notes name this span: its id, its pointer, and the line of a JSON Lines file."""
        found: dict[str, Any] = {"span_id": self.span_id, "pointer": self.pointer}
        if self.line is not None:
            found["line"] = self.line
        return found


# -- decoding ------------------------------------------------------------------------------------


_UINT64_MAX: Final = 2**64 - 1


def _timestamp(value: Any) -> tuple[int | None, str]:
    """An OTLP timestamp (a ``fixed64`` of nanoseconds): a JSON integer or a decimal string.
    Returns (the value, "") or (None, what is wrong with it)."""
    if type(value) is str and value.isascii() and value.isdigit():
        digits = value.lstrip("0")
        # 20 digits at most: more cannot be a uint64 (and int() refuses 4,300 digits or more)
        if len(digits) > 20:
            return None, _TOO_LARGE
        value = int(digits or "0")
    elif type(value) is not int:
        return None, "a timestamp must be a whole number of nanoseconds"
    if value < 0:
        return None, "a timestamp must be a whole number of nanoseconds >= 0"
    if value > _UINT64_MAX:
        return None, _TOO_LARGE
    return value, ""


_TOO_LARGE: Final = (
    "a timestamp must fit in 64 bits (at most 18446744073709551615 nanoseconds), "
    "got a larger number"
)


def _any_value(value: Any) -> tuple[bool, Any]:
    """An OTLP ``AnyValue`` as a plain value; (False, None) when it is malformed."""
    if type(value) is not dict:
        return False, None
    if not value:
        return True, None
    if len(value) != 1:
        return False, None
    ((kind, inner),) = value.items()
    if kind == "stringValue" and type(inner) is str:
        return True, inner
    if kind == "boolValue" and type(inner) is bool:
        return True, inner
    if kind == "intValue":
        if type(inner) is int:
            return True, inner
        # int64 as a decimal string (the JSON encoding of OTLP): one optional sign, digits;
        # beyond 20 digits it cannot be an int64 (and int() refuses 4,300 digits or more)
        digits = inner[1:] if type(inner) is str and inner[:1] == "-" else inner
        if type(digits) is str and 0 < len(digits) <= 20 and digits.isascii() and digits.isdigit():
            return True, int(inner)
        return False, None
    if kind == "doubleValue":
        if type(inner) in (int, float) and is_finite(inner):
            return True, float(inner)
        return False, None
    if kind == "bytesValue" and type(inner) is str:
        return True, inner
    if kind == "arrayValue" and type(inner) is dict:
        items = inner.get("values") or []
        if type(items) is not list:
            return False, None
        decoded = [_any_value(item) for item in items]
        return all(ok for ok, _ in decoded), [v for _, v in decoded]
    if kind == "kvlistValue" and type(inner) is dict:
        pairs = inner.get("values") or []
        if type(pairs) is not list:
            return False, None
        out: dict[str, Any] = {}
        for pair in pairs:
            if type(pair) is not dict or type(pair.get("key")) is not str:
                return False, None
            ok, item = _any_value(pair.get("value", {}))
            if not ok:
                return False, None
            out[pair["key"]] = item
        return True, out
    return False, None


def _attributes(raw: Any, pointer: str, problems: list[tuple[str, str]]) -> dict[str, Any]:
    """OTLP ``KeyValue`` lists as a dict (a plain object of values is accepted as well)."""
    if raw is None:
        return {}
    if type(raw) is dict:  # some exporters write attributes as a plain object
        return dict(raw)
    if type(raw) is not list:
        problems.append((pointer, f"attributes must be an array, got {json_type(raw)}"))
        return {}
    out: dict[str, Any] = {}
    for index, pair in enumerate(raw):
        where = join_pointer(pointer, index)
        if type(pair) is not dict or type(pair.get("key")) is not str:
            problems.append((where, "an attribute must be an object with a string 'key'"))
            continue
        ok, value = _any_value(pair.get("value", {}))
        if not ok:
            problems.append((join_pointer(where, "value"), "the attribute value is malformed"))
            continue
        out[pair["key"]] = value
    return out


def _list(value: Any, pointer: str, what: str) -> list[Any]:
    """An array member; absent members are passed as [] (OTLP/JSON omits empty repeated fields),
    so a null is an error like any other value that is not an array."""
    if type(value) is not list:
        raise InputError(f"{what} must be an array, got {json_type(value)}", pointer=pointer)
    return value


def _object(value: Any, pointer: str, what: str) -> dict[str, Any]:
    if type(value) is not dict:
        raise InputError(f"{what} must be an object, got {json_type(value)}", pointer=pointer)
    return value


def _member(data: dict[str, Any], keys: Iterable[str]) -> tuple[str, Any]:
    for key in keys:
        if key in data:
            return key, data[key]
    return "", None


def _span(raw: dict[str, Any], pointer: str, line: int | None, resource: dict[str, Any]) -> Span:
    problems: list[tuple[str, str]] = []
    trace_id = raw.get("traceId", raw.get("trace_id"))
    if type(trace_id) is not str or not trace_id.strip():
        shown = "an empty string" if trace_id == "" else json_type(trace_id)
        raise InputError(
            f"a span needs a trace id (a non-empty 'traceId' string), got {shown}",
            pointer=pointer,
            line=line,
        )
    span_id = raw.get("spanId", raw.get("span_id"))
    if type(span_id) is not str:
        if span_id is not None:
            problems.append((join_pointer(pointer, "spanId"), "the span id is not a string"))
        span_id = ""
    name = raw.get("name")
    times: list[int | None] = []
    for key in ("startTimeUnixNano", "endTimeUnixNano"):
        value = raw.get(key)
        parsed, problem = (None, "") if value is None else _timestamp(value)
        if problem:
            problems.append((join_pointer(pointer, key), problem))
        times.append(parsed)
    if times[0] is not None and times[1] is not None and times[1] < times[0]:
        backwards = "the span ends before it starts (endTimeUnixNano < startTimeUnixNano)"
        problems.append((pointer, backwards + ", so its latency is not counted"))
    attributes = _attributes(raw.get("attributes"), join_pointer(pointer, "attributes"), problems)
    events: list[tuple[str, dict[str, Any]]] = []
    raw_events = raw.get("events")
    if type(raw_events) is list:
        for index, event in enumerate(raw_events):
            where = join_pointer(pointer, "events", index)
            if type(event) is not dict:
                problems.append((where, f"an event is {json_type(event)}, not an object"))
                continue
            event_name = event.get("name")
            events.append(
                (
                    event_name if type(event_name) is str else "",
                    _attributes(
                        event.get("attributes"), join_pointer(where, "attributes"), problems
                    ),
                )
            )
    elif raw_events is not None:
        problems.append((join_pointer(pointer, "events"), "events must be an array"))
    error = None
    ok = False
    status = raw.get("status")
    if type(status) is dict:
        code = status.get("code")
        ok = type(code) in (int, str) and code in _STATUS_OK
        if type(code) in (int, str) and code in _STATUS_ERROR:
            message = status.get("message")
            kind = attributes.get("error.type")
            error = (
                message
                if type(message) is str and message.strip()
                else kind
                if type(kind) is str and kind.strip()
                else "span status error"
            )
    elif status is not None:
        problems.append((join_pointer(pointer, "status"), "status must be an object"))
    return Span(
        trace_id.strip().lower(),
        span_id.lower(),
        name if type(name) is str else "",
        times[0],
        times[1],
        attributes,
        tuple(events),
        error,
        pointer,
        line,
        resource,
        problems,
        ok,
    )


def _spans(document: Any, line: int | None) -> Iterator[Span | InputError]:
    """The spans of one export request (errors located at their line)."""
    try:
        data = _object(document, "", "an OTLP export request")
        key, resources = _member(data, _RESOURCE_KEYS)
        if not key:
            raise InputError(
                "not an OTLP trace export: expected an object with a 'resourceSpans' array",
                pointer="",
            )
        resources = _list(resources, f"/{key}", key)
    except InputError as exc:
        yield _at_line(exc, line)
        return
    for i, raw_entry in enumerate(resources):
        base = join_pointer("", key, i)
        try:
            entry = _object(raw_entry, base, "a resourceSpans entry")
            resource_raw = entry.get("resource")
            resource = _attributes(
                resource_raw.get("attributes") if type(resource_raw) is dict else None,
                join_pointer(base, "resource", "attributes"),
                [],
            )
            scope_key, scopes = _member(entry, _SCOPE_KEYS)
            scopes = _list(scopes if scope_key else [], join_pointer(base, scope_key), scope_key)
            for j, raw_scope in enumerate(scopes):
                where = join_pointer(base, scope_key, j)
                scope = _object(raw_scope, where, "a scopeSpans entry")
                spans = _list(scope.get("spans", []), join_pointer(where, "spans"), "spans")
                for k, raw in enumerate(spans):
                    at = join_pointer(where, "spans", k)
                    try:
                        yield _span(_object(raw, at, "a span"), at, line, resource)
                    except InputError as exc:
                        yield _at_line(exc, line)
        except InputError as exc:
            yield _at_line(exc, line)


def _at_line(error: InputError, line: int | None) -> InputError:
    if line is None or error.line is not None:
        return error
    return InputError(error.message, pointer=error.pointer, line=line)


def group(parts: Iterable[tuple[int | None, Any]]) -> tuple[list[list[Span]], list[InputError]]:
    """The spans of export requests (each with its JSON Lines line, or None) grouped by trace
    id, groups in order of first appearance, plus an error per request or span that cannot be
    read."""
    groups: dict[str, list[Span]] = {}
    errors: list[InputError] = []
    for line, document in parts:
        for item in _spans(document, line):
            if isinstance(item, InputError):
                errors.append(item)
            else:
                groups.setdefault(item.trace_id, []).append(item)
    return list(groups.values()), errors


# -- values inside attributes ----------------------------------------------------------------------


def json_text(value: Any) -> tuple[bool, Any]:
    """An attribute that holds JSON as text (or already decoded): (True, value), or
    (False, the raw value) when it is text that is not JSON."""
    if type(value) is not str:
        return True, value
    try:
        return True, loads(value)
    except InputError:
        return False, value


def unflatten(attributes: dict[str, Any], prefix: str) -> list[Any]:
    """Indexed attributes ``<prefix>.<i>.<path>`` as a list of nested objects: ``a.0.b.c`` and
    ``a.0.d.1.e`` under prefix ``a`` give ``[{"b": {"c": ...}, "d": [None, {"e": ...}]}]``."""
    start = prefix + "."
    root: dict[int, Any] = {}
    for key in sorted(k for k in attributes if k.startswith(start)):
        tokens = key[len(start) :].split(".")
        if not tokens[0].isdigit():
            continue
        _put(root, tokens, attributes[key])
    found: list[Any] = _as_lists(root) if root else []
    return found


def _put(node: dict[Any, Any], tokens: list[str], value: Any) -> None:
    for position, token in enumerate(tokens):
        key: Any = int(token) if token.isdigit() and len(token) < 7 else token
        if position == len(tokens) - 1:
            if type(node.get(key)) is not dict:
                node[key] = value
            return
        child = node.get(key)
        if type(child) is not dict:
            child = {}
            node[key] = child
        node = child


def _as_lists(node: Any) -> Any:
    """Dicts keyed by integers become lists (in index order, gaps left out)."""
    if type(node) is not dict:
        return node
    if node and all(type(k) is int for k in node):
        return [_as_lists(node[k]) for k in sorted(node)]
    return {str(k): _as_lists(v) for k, v in node.items()}


# -- one trace -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message as the dialects read it: text, requested tool calls, tool results."""

    role: str
    texts: tuple[str, ...] = ()
    calls: tuple[tuple[str | None, Any, Any], ...] = ()  # (call id, tool name, raw arguments)
    results: tuple[tuple[str | None, Any, Any], ...] = ()  # (call id, tool name, output)
    reasoning: int = 0


@dataclass(frozen=True, slots=True)
class SpanView:
    """What a dialect makes of a span. ``kind`` is ``tool``, ``chat``, ``agent`` or ``other``."""

    kind: str
    operation: str = ""
    tool_name: Any = None
    call_id: str | None = None
    arguments: Any = None
    has_result: bool = False
    result: Any = None
    output: tuple[Message, ...] | None = None  # a chat span's response, when recorded
    inputs: tuple[Message, ...] = ()  # a chat span's input messages, when recorded
    input_tokens: Any = None
    output_tokens: Any = None
    cost_usd: Any = None
    agent_name: str | None = None
    used: frozenset[str] = frozenset()  # attribute keys the dialect read


@dataclass(frozen=True, slots=True)
class Dialect:
    """A span-based format: its name, what each span is (``view``), the attribute namespaces
    whose unread keys are noted, the default agent and workflow names, and the older attribute
    names a span uses (``legacy``, for a note)."""

    fmt: str
    view: Callable[[Span], SpanView]
    namespaces: tuple[str, ...]
    agent_name: str
    workflow: str
    legacy: Callable[[Span], list[str]] | None = None


def _latency(span: Span) -> int | float | None:
    if span.start is None or span.end is None or span.end < span.start:
        return None
    ms = (span.end - span.start) / 1e6
    return int(ms) if ms.is_integer() else ms


class SpanTrace:
    """Builds the canonical trace of one group of spans."""

    def __init__(self, dialect: Dialect, spans: list[Span]) -> None:
        self.spans = sorted(
            spans, key=lambda s: (s.start is None, s.start or 0, s.span_id, s.line or 0, s.pointer)
        )
        self.dialect = dialect
        self.builder = Builder(dialect.fmt, Transcript([], "", {}, None))
        self._carry: list[Any] = [None, None, None]  # tokens in/out and cost moved to a step
        self._carried_from: list[str] = []
        self._last_turn: tuple[int, tuple[Message, ...]] | None = None
        self._unmapped: set[str] = set()

    # -- notes -------------------------------------------------------------------------------

    def note(self, code: str, message: str, span: Span, **details: Any) -> None:
        ref = span.ref()
        self.builder.notes.add(code, message, ref.pop("pointer"), **ref, **details)

    def _problems(self, span: Span) -> None:
        for pointer, message in span.problems:
            note: dict[str, Any] = {"span_id": span.span_id}
            if span.line is not None:
                note["line"] = span.line
            self.builder.notes.add("invalid_field", message, pointer, **note)

    # -- steps -------------------------------------------------------------------------------

    def _metrics(self, step: dict[str, Any], span: Span, view: SpanView) -> None:
        latency = _latency(span)
        if latency is not None:
            step["latency_ms"] = latency
        if span.start:  # 0 is OTLP's "not set"
            step["timestamp"] = from_unix_nanos(span.start)
        tokens = self._counts(view, span)
        for key, value in zip(("input_tokens", "output_tokens", "cost_usd"), tokens, strict=True):
            carried = self._carry[("input_tokens", "output_tokens", "cost_usd").index(key)]
            if value is None and carried is None:
                continue
            total = (value or 0) + (carried or 0)
            if key != "cost_usd" and type(total) is int:  # a sum of counts of several spans
                total = writable_count(total, span.pointer, span.line)
            step[key] = total
        if any(c is not None for c in self._carry):
            for span_id in self._carried_from:
                self.builder.notes.tally(
                    "usage_moved",
                    "token usage and cost of model calls that produced no step of their own are "
                    "counted on the next step",
                    span_id or None,
                    refs="span_ids",
                    key="usage",
                )
            self._carry = [None, None, None]
            self._carried_from = []
        if span.error is not None:
            step["status"] = "error"
            step["error"] = span.error

    def _counts(self, view: SpanView, span: Span) -> list[Any]:
        counts: list[Any] = []
        for key, value in (
            ("input_tokens", view.input_tokens),
            ("output_tokens", view.output_tokens),
        ):
            if value is None:
                counts.append(None)
            elif type(value) is int and value >= 0:
                counts.append(value)
            elif type(value) is float and value.is_integer() and value >= 0:
                counts.append(int(value))
            else:
                self.note("invalid_field", f"{key} must be an integer >= 0", span)
                counts.append(None)
        cost = view.cost_usd
        if cost is not None and not (type(cost) in (int, float) and cost >= 0 and is_finite(cost)):
            self.note("invalid_field", "a cost must be a number >= 0", span)
            cost = None
        counts.append(cost)
        return counts

    def _tool_step(self, index: int, span: Span, view: SpanView) -> None:
        builder = self.builder
        generated = span.span_id or f"s{index}-tool"
        step = builder.call_step(
            generated,
            view.call_id,
            view.tool_name,
            {},
            span.pointer,
            name_pointer=span.pointer,
            source=bool(span.span_id),
        )
        if view.tool_name is None:
            self.note("invalid_field", "the tool span does not name its tool", span)
        step["arguments"] = self._arguments(view.arguments, span, step["step_id"])
        self._metrics(step, span, view)
        if view.has_result:
            if view.result is not None:
                step["output"] = view.result
            builder.answered(step["step_id"], status_known=True)
        elif span.error is not None:
            builder.answered(step["step_id"], status_known=True)
        elif span.ok:  # it says it did not fail, though its result was not recorded
            builder.status_recorded(step["step_id"])

    def _arguments(self, raw: Any, span: Span, step_id: str) -> dict[str, Any]:
        if raw is None or type(raw) is dict:
            return raw or {}
        ok, decoded = json_text(raw)
        if type(decoded) is dict:
            return decoded
        if type(raw) is str and not raw.strip():
            return {}
        code = "argument_parse_error" if not ok else "arguments_not_object"
        self.note(
            code,
            "the tool's arguments are not a JSON object, so the call is checked with no arguments",
            span,
            step_id=step_id,
            raw_arguments=raw,
        )
        return {}

    def _chat(
        self,
        index: int,
        span: Span,
        view: SpanView,
        *,
        tool_ids: set[str],
        tools: bool,
        idless: dict[str, int],
    ) -> None:
        """A model call's step; the calls it requested become steps of their own unless a tool
        span records them: one with their id, or, for a call with an id no tool span has, a
        tool span of the same tool without an id (``idless`` counts those not yet claimed)."""
        builder = self.builder
        tail = _tail(view.inputs)
        # the same tail after as many assistant messages is the same turn, seen again by the
        # next model call (a retry, a second agent); after more of them, a new turn that says
        # the same (a second "yes")
        turn = (sum(1 for m in view.inputs if m.role == "assistant"), tail)
        if turn != self._last_turn:
            self._read_tail(index, span, tail)
        self._last_turn = turn
        texts: list[str] = []
        requested: list[tuple[str | None, Any, Any]] = []
        reasoning = 0
        for message in view.output or ():
            texts.extend(message.texts)
            requested.extend(message.calls)
            reasoning += message.reasoning
        for _ in range(reasoning):
            builder.reasoning()
        text = "\n".join(t for t in texts if t.strip()) or None
        first = len(builder.steps)
        named = bool(span.span_id)  # step ids made from the span id change with each export
        step = builder.text_step(span.span_id or f"s{index}-response", text, source=named)
        if step is None and span.error is not None:
            step = {
                "step_id": builder.step_id(span.span_id or f"s{index}-response", source=named),
                "type": "model_response",
            }
            builder.steps.append(step)
        for k, (call_id, name, raw) in enumerate(requested):
            if (call_id is not None and call_id in tool_ids) or (call_id is None and tools):
                continue  # an execute_tool / TOOL span records this call
            if type(name) is str and idless.get(name):
                idless[name] -= 1  # so does a span of this tool that has no call id
                continue
            call = builder.call_step(
                f"{span.span_id or f's{index}'}-tool{k}",
                call_id,
                name if type(name) is str else None,
                {},
                span.pointer,
                name_pointer=span.pointer,
                source=named,
            )
            call["arguments"] = self._arguments(raw, span, call["step_id"])
            self.builder.notes.tally(
                "tool_call_from_message",
                "tool calls recorded only in a model call's output messages (no tool span)",
                span.span_id or None,
                refs="span_ids",
            )
        made = builder.first_step_since(first)
        if made is None:
            counts = self._counts(view, span)
            if any(c is not None for c in counts):
                self._carried_from.append(span.span_id)
                self._carry = [
                    c if old is None else (old if c is None else old + c)
                    for c, old in zip(counts, self._carry, strict=True)
                ]
            if _latency(span) is not None:
                self.builder.notes.tally(
                    "latency_not_mapped",
                    "the latency of model calls that produced no step is not counted",
                    span.span_id or None,
                    refs="span_ids",
                )
            return
        self._metrics(made, span, view)

    def _read_tail(self, index: int, span: Span, tail: tuple[Message, ...]) -> None:
        """The messages a model call's input ends with (after its last assistant message): new
        user turns become user_message steps, tool results attach to their calls."""
        builder = self.builder
        for m, message in enumerate(tail):
            if message.role in ("system", "developer"):
                builder.system(span.pointer)
            if message.role == "user" and message.texts:
                text = "\n".join(message.texts)
                builder.user_turn(
                    f"{span.span_id or f's{index}'}-user{m}", text, source=bool(span.span_id)
                )
            for call_id, name, output in message.results:
                self._result_from_message(span, call_id, name, output)

    def _result_from_message(self, span: Span, call_id: str | None, name: Any, output: Any) -> None:
        builder = self.builder
        pending = builder._pending
        if call_id is not None:
            calls = builder._calls_by_id.get(call_id)
            if calls and not any(c in pending for c in calls):
                return  # its tool span already recorded the result
        elif not pending:
            return  # tool spans recorded the results
        # a tool message does not say if the call failed
        builder.attach(
            span.pointer, call_id, name if type(name) is str else None, {"output": output}
        )

    # -- the trace ---------------------------------------------------------------------------

    def build(self) -> Trace:
        dialect = self.dialect
        views = [(span, dialect.view(span)) for span in self.spans]
        legacy: list[str] = []
        tool_ids = {v.call_id for _, v in views if v.kind == "tool" and v.call_id is not None}
        tools = any(v.kind == "tool" for _, v in views)
        idless: dict[str, int] = {}
        for _, v in views:
            if v.kind == "tool" and v.call_id is None and v.tool_name:
                idless[v.tool_name] = idless.get(v.tool_name, 0) + 1
        name = None
        for index, (span, view) in enumerate(views):
            self._problems(span)
            if view.kind == "tool":
                self._tool_step(index, span, view)
            elif view.kind == "chat":
                self._chat(index, span, view, tool_ids=tool_ids, tools=tools, idless=idless)
            elif view.kind == "agent":
                name = name or view.agent_name
            else:
                self.builder.notes.tally(
                    "span_not_mapped",
                    f"spans of operation {view.operation!r} are not steps of the run"
                    if view.operation
                    else "spans that are not model calls, tool calls or agents (HTTP, database, "
                    "...) are not steps of the run",
                    span.span_id or None,
                    refs="span_ids",
                    key=view.operation,
                    operation=view.operation or "(none)",
                )
            if view.kind != "other":
                self._unmapped.update(
                    key
                    for key in span.attributes
                    if key not in view.used and key.startswith(dialect.namespaces)
                )
                if dialect.legacy is not None:
                    legacy.extend(n for n in dialect.legacy(span) if n not in legacy)
        if any(c is not None for c in self._carry):
            self.builder.notes.add(
                "usage_not_mapped",
                "token usage or cost of model calls after the last step has no step to carry it",
                None,
            )
        if self._unmapped:
            self.builder.notes.add(
                "attributes_not_mapped",
                "span attributes the adapter does not read",
                None,
                attributes=sorted(self._unmapped),
            )
        if legacy:
            self.builder.notes.add(
                "older_attribute_names",
                "attributes of older semantic-convention versions were read",
                None,
                attributes=legacy,
            )
        if name is None:
            service = next((s.resource.get("service.name") for s in self.spans if s.resource), None)
            name = service if type(service) is str and service else None
        trace_id = self.spans[0].trace_id
        started, ended = _span_times(self.spans)
        return self.builder.finish(
            RecordOptions(None, (), trace_id),
            name or dialect.agent_name,
            dialect.workflow,
            started_at=started,
            ended_at=ended,
        )


def _span_times(spans: list[Span]) -> tuple[str | None, str | None]:
    """When the run started and ended: the earliest start and the latest end of its spans (an
    end only from a span that does not end before it starts; 0 is OTLP's "not set")."""
    start = min((s.start for s in spans if s.start), default=None)
    end = max(
        (s.end for s in spans if s.start and s.end and s.end >= s.start),
        default=None,
    )
    return (
        None if start is None else from_unix_nanos(start),
        None if end is None else from_unix_nanos(end),
    )


def _tail(messages: tuple[Message, ...]) -> tuple[Message, ...]:
    last = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=-1)
    return messages[last + 1 :]


def span_traces(
    parts: Iterable[tuple[int | None, Any]],
    pick: Callable[[list[Span]], Dialect],
    options: RecordOptions,
) -> Iterator[tuple[int | None, Trace | InputError]]:
    """One ``(line, trace or error)`` per trace id in the export requests ``parts`` (then one
    per request or span that could not be read); ``pick`` chooses the dialect of each trace."""
    if options.messages_at is not None or options.trace_id_at:
        yield (
            None,
            InputError(
                "--messages-at and --trace-id-at apply to transcripts, not to OTLP trace exports "
                "(their traces are named by their trace ids)",
                pointer="",
            ),
        )
        return
    parts = list(parts)
    groups, errors = group(parts)
    if not groups and not errors:  # like an empty JSON Lines file: nothing to check is an error
        in_lines = any(line is not None for line, _ in parts)
        yield None, InputError("the export has no spans", pointer=None if in_lines else "")
        return
    for spans in groups:
        line = min((s.line for s in spans if s.line is not None), default=None)
        try:
            yield line, SpanTrace(pick(spans), spans).build()
        except InputError as exc:
            yield line, exc
    for error in errors:
        yield error.line, error
