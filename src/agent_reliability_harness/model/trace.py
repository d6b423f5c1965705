"""The canonical trace (schema version 1): what an agent did, step by step.

Parsing is strict about the fields the harness reads (types, ranges, required keys) and open
about everything else: unknown trace and step keys are kept in ``extra`` and otherwise ignored,
because exporters add their own fields.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Final, Literal

from agent_reliability_harness._decode import (
    bad,
    is_finite,
    json_type,
    key_type_error,
    number_text,
    opt_nonneg_int,
    opt_str,
    parse_schema_version,
    req_str,
)
from agent_reliability_harness.errors import UsageError, excerpt, join_pointer
from agent_reliability_harness.model.timestamps import instant, parse_timestamp

if TYPE_CHECKING:
    from agent_reliability_harness.model.answers import Expectation

StepType = Literal["tool_call", "model_response", "user_message"]

StepStatus = Literal["ok", "error"]

__all__ = [
    "STEP_KEYS",
    "STEP_KEYS_1_2",
    "STEP_TYPES",
    "TRACE_KEYS",
    "Step",
    "StepType",
    "Trace",
    "check_identity",
    "schema_version_for",
]

# user_message (schema version 1.1) records a user turn of a converted transcript; no rule reads it
STEP_TYPES: Final = ("tool_call", "model_response", "user_message")

# The keys of a step and of a trace that TRACE-SPEC.md defines; others are kept in ``extra``.
STEP_KEYS: Final = frozenset(
    {
        "step_id",
        "type",
        "tool_name",
        "arguments",
        "output",
        "text",
        "citations",
        "requires_grounding",
        "status",
        "error",
        "latency_ms",
        "cost_usd",
        "input_tokens",
        "output_tokens",
        "metadata",
        "timestamp",
    }
)
TRACE_KEYS: Final = frozenset(
    {"schema_version", "trace_id", "agent_name", "workflow", "steps", "source", "metadata"}
)
# before schema version 1.3, ``timestamp`` is a step key of the trace's own (kept in ``extra``)
STEP_KEYS_1_2: Final = STEP_KEYS - {"timestamp"}
_EMPTY: Final[Mapping[str, Any]] = {}
_INF: Final = float("inf")
_MAX_FLOAT: Final = 1.7976931348623157e308  # an integer above it is not finite (is_finite)


def _metric(data: Mapping[str, Any], key: str, base: str) -> int | float | None:
    value = data.get(key)
    kind = type(value)
    # the usual values first, compared without a call: is_finite costs more than the rest
    if (
        value is None
        or (kind is float and 0.0 <= value < _INF)
        or (kind is int and 0 <= value <= _MAX_FLOAT)
    ):
        return value
    if (kind is int or kind is float) and value >= 0 and is_finite(value):
        return value  # type: ignore[no-any-return]
    if kind is not int and kind is not float:
        raise bad(join_pointer(base, key), f"must be a number, got {json_type(value)}")
    raise bad(join_pointer(base, key), f"must be a finite number >= 0, got {number_text(value)}")


def _citations(value: object, base: str) -> tuple[Mapping[str, Any], ...]:
    if value is None:
        return ()
    if type(value) is not list:
        raise bad(
            join_pointer(base, "citations"),
            f"must be an array of citation objects, got {json_type(value)}",
        )
    for index, citation in enumerate(value):  # pointers are made only for an error
        if not isinstance(citation, dict):
            raise bad(
                join_pointer(join_pointer(base, "citations"), index),
                f"a citation must be an object, got {json_type(citation)}",
            )
        url, source = citation.get("url"), citation.get("source")
        if (url is not None and type(url) is not str) or (
            source is not None and type(source) is not str
        ):
            where = join_pointer(join_pointer(base, "citations"), index)
            opt_str(citation, "url", where)
            opt_str(citation, "source", where)
    return tuple(value)


def _extra(data: Mapping[str, Any], known: frozenset[str], pointer: str) -> dict[str, Any]:
    """The keys of an object that the harness does not read, kept as they are. They are the only
    ones that can be other than strings (data built in Python), so they are checked here."""
    unknown = data.keys() - known
    if len(unknown) == 1:  # the usual case (an exporter's own id, say): no order to keep
        (key,) = unknown
        if isinstance(key, str):
            return {key: data[key]}
    extra = {k: v for k, v in data.items() if k not in known}
    for key in extra:
        if not isinstance(key, str):
            raise key_type_error(key, pointer)
    return extra


def _object(data: Mapping[str, Any], key: str, base: str) -> Mapping[str, Any] | None:
    value = data.get(key)
    if value is None or type(value) is dict:
        return value
    raise bad(join_pointer(base, key), f"must be an object or null, got {json_type(value)}")


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a run: a tool call or a model response (what the agent did), or a user turn.

    ``user_message`` steps (schema version 1.1) keep the user's side of a converted transcript;
    every rule skips them. ``timestamp`` (schema version 1.3) is when the step started, the
    RFC 3339 text as the trace wrote it; no rule reads it.
    """

    step_id: str
    type: StepType
    tool_name: str | None = None
    arguments: Mapping[str, Any] | None = None
    output: Any = None
    text: str | None = None
    citations: tuple[Mapping[str, Any], ...] = ()
    requires_grounding: bool = False
    status: StepStatus = "ok"
    error: str | None = None
    latency_ms: float | None = None
    cost_usd: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)
    timestamp: str | None = None

    @classmethod
    def from_dict(cls, data: object, *, pointer: str = "", timestamps: bool = True) -> Step:
        """Parse one step; errors carry the JSON pointer of the bad field below ``pointer``.

        ``timestamps=False`` reads it as a step of a trace before schema version 1.3 does: a
        ``timestamp`` key is one of the step's own, kept in ``extra`` and not checked.
        """
        if type(data) is not dict:
            raise bad(pointer, f"a step must be an object, got {json_type(data)}")
        step_id = req_str(data, "step_id", pointer, non_empty=True)
        kind = data.get("type")
        if kind not in STEP_TYPES:
            if "type" not in data:
                raise bad(pointer, "missing required field 'type'")
            shown = excerpt(kind) if type(kind) is str else json_type(kind)
            raise bad(
                join_pointer(pointer, "type"),
                f"unknown step type {shown} (expected 'tool_call' or 'model_response', or "
                "'user_message' for a user turn)",
            )
        get = data.get
        tool_name = get("tool_name")
        if tool_name is not None and type(tool_name) is not str:
            raise bad(
                join_pointer(pointer, "tool_name"),
                f"must be a string or null, got {json_type(tool_name)}",
            )
        text = get("text")
        if text is not None and type(text) is not str:
            raise bad(
                join_pointer(pointer, "text"), f"must be a string or null, got {json_type(text)}"
            )
        error = get("error")
        if error is not None and type(error) is not str:
            raise bad(
                join_pointer(pointer, "error"), f"must be a string or null, got {json_type(error)}"
            )
        arguments = get("arguments")
        if arguments is not None and type(arguments) is not dict:
            raise bad(
                join_pointer(pointer, "arguments"),
                f"must be an object or null, got {json_type(arguments)}",
            )
        status: StepStatus
        raw_status = get("status")
        if raw_status is None:
            status = "error" if error else "ok"
        elif raw_status in ("ok", "error"):
            status = raw_status
        else:
            shown = excerpt(raw_status) if type(raw_status) is str else json_type(raw_status)
            raise bad(join_pointer(pointer, "status"), f"must be 'ok' or 'error', got {shown}")
        grounding = get("requires_grounding")
        if grounding is None:
            grounding = False
        elif type(grounding) is not bool:
            raise bad(
                join_pointer(pointer, "requires_grounding"),
                f"must be true or false, got {json_type(grounding)}",
            )
        citations = get("citations")
        metadata = get("metadata")
        if metadata is None:
            metadata = {}
        elif type(metadata) is not dict:
            raise bad(
                join_pointer(pointer, "metadata"),
                f"must be an object or null, got {json_type(metadata)}",
            )
        known = STEP_KEYS if timestamps else STEP_KEYS_1_2
        extra = _EMPTY if data.keys() <= known else _extra(data, known, pointer)
        timestamp = get("timestamp") if timestamps else None
        if timestamp is not None:
            timestamp = parse_timestamp(timestamp, join_pointer(pointer, "timestamp"))
        citations = () if citations is None else _citations(citations, pointer)
        values = (
            step_id,
            kind,
            tool_name,
            arguments,
            get("output"),
            text,
            citations,
            grounding,
            status,
            error,
            _metric(data, "latency_ms", pointer),
            _metric(data, "cost_usd", pointer),
            opt_nonneg_int(data, "input_tokens", pointer, integral_float=True),
            opt_nonneg_int(data, "output_tokens", pointer, integral_float=True),
            metadata,
            extra,
            timestamp,
        )
        if cls is not Step:  # a subclass may have an __init__ of its own
            return cls(*values)
        # Every field is checked above, so the step is made as __init__ would make it, through
        # each slot's own setter: a frozen dataclass's __init__ goes through
        # object.__setattr__ per field, which made the trace model 40% slower (one per step of
        # every trace read; benchmarks/perf/perf.py --phases).
        step = _new(Step)
        for setter, value in zip(_STEP_SETTERS, values, strict=True):
            setter(step, value)
        return step

    def to_dict(self) -> dict[str, Any]:
        """The canonical JSON form: required keys, then every field that is not at its default."""
        out: dict[str, Any] = {"step_id": self.step_id, "type": self.type}
        if self.tool_name is not None:
            out["tool_name"] = self.tool_name
        if self.arguments is not None:
            out["arguments"] = self.arguments
        if self.output is not None:
            out["output"] = self.output
        if self.text is not None:
            out["text"] = self.text
        if self.citations:
            out["citations"] = list(self.citations)
        if self.requires_grounding:
            out["requires_grounding"] = True
        if self.status != ("error" if self.error else "ok"):
            out["status"] = self.status
        if self.error is not None:
            out["error"] = self.error
        for key in ("latency_ms", "cost_usd", "input_tokens", "output_tokens"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.timestamp is not None:
            out["timestamp"] = self.timestamp
        if self.metadata:
            out["metadata"] = self.metadata
        out.update(self.extra)
        return out


_new = object.__new__
_STEP_SETTERS: Final = tuple(Step.__dict__[f.name].__set__ for f in fields(Step))


@dataclass(frozen=True, slots=True)
class Trace:
    """A recorded agent run: identity, the steps in execution order, and free-form metadata."""

    trace_id: str
    agent_name: str
    workflow: str
    steps: tuple[Step, ...]
    schema_version: str = "1"
    source: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)
    # the expected outcome of the run's task (schema version 1.2, ``expected``), or None
    expected: Expectation | None = None
    # when the run started and ended (schema version 1.3): RFC 3339 text as written, or None
    started_at: str | None = None
    ended_at: str | None = None

    @classmethod
    def from_dict(cls, data: object) -> Trace:
        """Parse a canonical trace; raise :class:`InputError` at the bad field's JSON pointer."""
        if type(data) is not dict:
            raise bad("", f"a trace must be a JSON object, got {json_type(data)}")
        version = parse_schema_version(data.get("schema_version"), "/schema_version", "trace")
        trace_id = req_str(data, "trace_id", "", non_empty=True)
        agent_name = req_str(data, "agent_name", "")
        workflow = req_str(data, "workflow", "")
        if "steps" not in data:
            raise bad("", "missing required field 'steps'")
        raw_steps = data["steps"]
        if type(raw_steps) is not list:
            raise bad("/steps", f"must be an array of steps, got {json_type(raw_steps)}")
        minor = _minor(version)
        from_dict = Step.from_dict
        timed = minor >= 3
        steps = tuple(
            [from_dict(s, pointer=f"/steps/{i}", timestamps=timed) for i, s in enumerate(raw_steps)]
        )
        source = opt_str(data, "source", "")
        metadata = _object(data, "metadata", "")
        extra = _extra(data, TRACE_KEYS, "")
        expected = None
        if "expected" in extra and minor >= 2:
            raw = extra.pop("expected")
            if raw is not None:
                from agent_reliability_harness.model.answers import Expectation

                expected = Expectation.parse(raw, "/expected")
        started_at = ended_at = None
        if timed and ("started_at" in extra or "ended_at" in extra):
            started = extra.pop("started_at", None)
            started_at, ended_at = _times(started, extra.pop("ended_at", None))
        return cls(
            trace_id,
            agent_name,
            workflow,
            steps,
            version,
            source,
            metadata or {},
            extra,
            expected,
            started_at,
            ended_at,
        )

    def to_dict(self) -> dict[str, Any]:
        """The canonical JSON form of the trace (unknown keys it was read with are kept)."""
        out: dict[str, Any] = {
            "schema_version": self.schema_version,
            "trace_id": self.trace_id,
            "agent_name": self.agent_name,
            "workflow": self.workflow,
        }
        if self.source is not None:
            out["source"] = self.source
        out["steps"] = [step.to_dict() for step in self.steps]
        if self.metadata:
            out["metadata"] = self.metadata
        if self.expected is not None:
            out["expected"] = self.expected.to_dict()
        if self.started_at is not None:
            out["started_at"] = self.started_at
        if self.ended_at is not None:
            out["ended_at"] = self.ended_at
        out.update(self.extra)
        return out


def _minor(version: str) -> int:
    """The minor version of a trace's ``schema_version`` (0 when it has none a number can say).

    A field added in a minor version is read only from a trace that declares it or a later one
    (``expected`` from 1.2, the timestamps from 1.3): an earlier trace keeps a key of that name
    as one of its own, as arh 0.2.x did, so its reports do not change.
    """
    parts = version.split(".", 2)
    if len(parts) > 1 and parts[1].isascii() and parts[1].isdigit():
        return int(parts[1])
    return 0


def _times(started: object, ended: object) -> tuple[str | None, str | None]:
    """The trace's ``started_at`` and ``ended_at``, checked: each an RFC 3339 date-time, and the
    end not before the start."""
    start = None if started is None else parse_timestamp(started, "/started_at")
    end = None if ended is None else parse_timestamp(ended, "/ended_at")
    if start is not None and end is not None and instant(end) < instant(start):
        raise bad("/ended_at", f"{excerpt(end)} is before started_at {excerpt(start)}")
    return start, end


def schema_version_for(steps: Iterable[Step], *, timed: bool = False) -> str:
    """The lowest trace schema version that can hold these steps: user turns need 1.1, and
    timestamps (a step's, or the trace's when ``timed``) 1.3."""
    steps = tuple(steps)
    if timed or any(step.timestamp is not None for step in steps):
        return "1.3"
    return "1.1" if any(step.type == "user_message" for step in steps) else "1"


def check_identity(trace_id: object, agent_name: object, workflow: object) -> tuple[str, str, str]:
    """The identity given to a trace built in Python (by a recorder or a monitor), as plain
    strings (a ``StrEnum`` member is taken for its value, which a trace file holds); raise
    :class:`UsageError` unless ``trace_id`` is a non-empty string and ``agent_name`` and
    ``workflow`` are strings."""
    names: list[str] = []
    for name, value in (("agent_name", agent_name), ("workflow", workflow)):
        if not isinstance(value, str):
            raise UsageError(f"{name} must be a string, got {type(value).__name__}")
        names.append(str.__str__(value))
    if not isinstance(trace_id, str) or not trace_id:
        raise UsageError("trace_id must be a non-empty string")
    return str.__str__(trace_id), names[0], names[1]
