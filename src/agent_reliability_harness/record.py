"""Record a canonical trace from any agent loop, in a few lines.

::

    from agent_reliability_harness.record import Recorder

    with Recorder("run-42", agent_name="support-bot", workflow="refunds",
                  path="traces/run-42.json") as rec:
        rec.user_message("Please refund order A1")
        lookup = rec.tool(lookup_order)        # or decorate: @rec.tool
        order = lookup(order_id="A1")          # recorded: arguments, output or error, latency
        rec.model_response("Refunded.", citations=["https://shop.example/orders/A1"])

The recorder builds the same :class:`~agent_reliability_harness.model.trace.Trace` that
``arh validate`` reads, parsing each step as strictly as a trace file (a bad value raises
:class:`~agent_reliability_harness.errors.UsageError` at once). With ``guard=`` (a policy or a
:class:`~agent_reliability_harness.monitor.Monitor`) every wrapped tool is checked before it runs
and refused with :class:`~agent_reliability_harness.monitor.BlockedCallError` when the call would
break the policy.

Timing uses a monotonic clock (``time.perf_counter``) and measures latency only; the recorder is
the only part of the package that reads a clock, and what it measures is data in the trace like
any other, so validation stays deterministic. Times of day (``started_at``, ``ended_at`` and each
step's ``timestamp``, schema version 1.3) are recorded only when asked for, with
``timestamps=True`` (the system's clock, in UTC) or ``wall_clock=`` (a function returning an
aware ``datetime``): by default two recordings of the same run are the same trace.

A trace is written as one JSON file (through a temporary file and a rename) or appended as one
line to a JSON Lines file (one ``write`` to a file opened for appending), so a reader never sees
half a trace.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import math
import os
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from contextvars import ContextVar
from datetime import UTC, datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, ParamSpec, TypeVar, overload

from agent_reliability_harness._decode import fits_in_text, number_text
from agent_reliability_harness.errors import InputError, UsageError, excerpt
from agent_reliability_harness.io import refuse_directory, write_atomic
from agent_reliability_harness.model.policy import Policy
from agent_reliability_harness.model.timestamps import from_datetime, instant
from agent_reliability_harness.model.trace import Step, Trace, check_identity, schema_version_for
from agent_reliability_harness.monitor import BlockedCallError, Monitor
from agent_reliability_harness.render.traces import render_trace

if TYPE_CHECKING:
    from agent_reliability_harness.model.report import Finding
    from agent_reliability_harness.monitor import Monitor

_P = ParamSpec("_P")
_R = TypeVar("_R")

__all__ = ["Recorder", "json_value", "record_tool"]

_JSONL_SUFFIXES: Final = (".jsonl", ".ndjson")
_MAX_DEPTH: Final = 200
_LATENCY_DECIMALS: Final = 3  # a microsecond


def json_value(value: object) -> Any:
    """``value`` as plain JSON data, so that the trace holds what a trace file would hold.

    Mappings become objects (keys that are not strings are written as JSON writes them:
    ``1`` -> ``"1"``, ``None`` -> ``"null"``; other keys by ``str``), lists, tuples and sets
    become arrays (sets sorted by their JSON text), dataclass instances become objects of their
    fields, NaN and infinities become the strings ``"nan"``, ``"inf"`` and ``"-inf"``, an integer
    with more digits than Python writes as text the string ``"an integer of <n> digits"``, and
    anything else becomes its ``str()``. A container inside itself becomes ``"<cycle>"``.
    """
    return _convert(value, set(), 0)


def _integer(value: int) -> int | str:
    """An integer, or, when it has more digits than Python writes as text
    (``sys.get_int_max_str_digits()``), the text ``"an integer of <n> digits"``."""
    return value if fits_in_text(value) else number_text(value)


def _json_order(value: Any) -> str:
    """How the members of a set are ordered: by their JSON text (a set has no order of its own)."""
    return json.dumps(value, sort_keys=True)


def _key(key: object) -> str:
    if isinstance(key, str):
        return str(key)
    if key is None or isinstance(key, bool | int | float):
        return json.dumps(key)
    return str(key)


def _convert(value: object, active: set[int], depth: int) -> Any:
    if value is None or type(value) in (str, bool):
        return value
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return _integer(int(value))
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else repr(float(value))
    if isinstance(value, str):
        return str(value)
    if depth >= _MAX_DEPTH:
        return "<nested too deeply>"
    marker = id(value)
    if marker in active:
        return "<cycle>"
    active.add(marker)
    try:
        if isinstance(value, Mapping):
            return {_key(k): _convert(v, active, depth + 1) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [_convert(v, active, depth + 1) for v in value]
        if isinstance(value, set | frozenset):
            items = [_convert(v, active, depth + 1) for v in value]
            return sorted(items, key=_json_order)
        if hasattr(type(value), "__dataclass_fields__"):
            return {
                f.name: _convert(getattr(value, f.name), active, depth + 1)
                for f in dataclasses.fields(value)  # type: ignore[arg-type]
            }
        return _text(value)
    finally:
        active.discard(marker)


def _text(value: object) -> str:
    try:
        return str(value)
    except Exception:  # noqa: BLE001 - a broken __str__ must not stop the agent
        return f"<{type(value).__name__}>"


def _metadata(metadata: object) -> dict[str, Any]:
    """The trace's metadata as plain JSON; ``metadata`` must be a mapping with string keys."""
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise UsageError(
            f"metadata must be a mapping with string keys or None, got {type(metadata).__name__}"
        )
    for key in metadata:
        if not isinstance(key, str):
            raise UsageError(f"metadata keys must be strings, got {type(key).__name__}")
    return {key: json_value(value) for key, value in metadata.items()}


def _citations(citations: object) -> list[Any]:
    """One citation (a string or a mapping) or an iterable of them, as citation objects."""
    if isinstance(citations, str | Mapping):
        return [_citation(citations)]
    try:
        items = iter(citations)  # type: ignore[call-overload]
    except TypeError:
        raise UsageError(
            "citations must be a citation (a string or a mapping), an iterable of them, or "
            f"None, got {type(citations).__name__}"
        ) from None
    converted = [_citation(c) for c in items]
    if isinstance(citations, set | frozenset):
        converted.sort(key=_json_order)
    return converted


def _citation(value: object) -> Any:
    if isinstance(value, str):
        return {"url": value} if value.startswith(("http://", "https://")) else {"source": value}
    return json_value(value)


def _error_text(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class Recorder:
    """Build a canonical trace step by step; see the module docstring.

    ``path`` is written when the ``with`` block ends, also when it ends with an exception (the
    trace of a crashed run is worth keeping): ``.jsonl`` and ``.ndjson`` paths get one line
    appended, any other path is replaced by the trace as indented JSON. ``clock`` returns
    seconds from a monotonic clock; ``None`` records no latency (for reproducible traces).
    ``guard`` is a policy or a monitor that checks each wrapped tool before it runs.

    Times of day are off by default. ``timestamps=True`` (``datetime.now(UTC)``) or
    ``wall_clock`` (a function returning an aware ``datetime``, for a clock of your own) stamps
    the trace's ``started_at`` when the recorder is made, its ``ended_at`` when the ``with`` block
    ends, each wrapped tool's step with the time the call started, and each step recorded by
    :meth:`tool_call`, :meth:`model_response` or :meth:`user_message` with the time it was
    recorded, unless it is given its own ``timestamp`` (RFC 3339 text).

    A recorder follows one run and is not thread-safe. Calls of wrapped tools that overlap
    (asyncio tasks) get their step ids when they start and are recorded when they finish. With
    a guard, calls of wrapped coroutine functions run one at a time: each is checked against
    the calls recorded before it, so two overlapping calls cannot both pass a limit that only
    one of them may use (``max_calls: 1``, a side effect that must happen once).
    """

    def __init__(
        self,
        trace_id: str,
        agent_name: str = "",
        workflow: str = "",
        *,
        path: str | os.PathLike[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        source: str | None = None,
        guard: Policy | Monitor | None = None,
        clock: Callable[[], float] | None = time.perf_counter,
        timestamps: bool = False,
        wall_clock: Callable[[], datetime] | None = None,
    ) -> None:
        trace_id, agent_name, workflow = check_identity(trace_id, agent_name, workflow)
        if source is not None and not isinstance(source, str):
            raise UsageError(f"source must be a string or None, got {type(source).__name__}")
        if clock is not None and not callable(clock):
            raise UsageError(
                f"clock must be a function returning seconds, or None, got {type(clock).__name__}"
            )
        self.trace_id = trace_id
        self.agent_name = agent_name
        self.workflow = workflow
        self.path = None if path is None else _path(path, "path")
        self.metadata: dict[str, Any] = _metadata(metadata)
        self.source = None if source is None else str.__str__(source)
        self.clock = clock
        if type(timestamps) is not bool:
            raise UsageError(f"timestamps must be True or False, got {type(timestamps).__name__}")
        if wall_clock is not None and not callable(wall_clock):
            raise UsageError(
                "wall_clock must be a function returning an aware datetime, or None, got "
                f"{type(wall_clock).__name__}"
            )
        if wall_clock is None and timestamps:
            wall_clock = _utc_now
        self.wall_clock = wall_clock
        self.started_at = self._stamp()
        self.ended_at: str | None = None
        self.monitor: Monitor | None
        if isinstance(guard, Policy):
            guard = Monitor(guard, trace_id=trace_id, agent_name=agent_name, workflow=workflow)
        elif guard is not None and not isinstance(guard, Monitor):
            raise UsageError(
                f"guard must be a Policy, a Monitor or None, got {type(guard).__name__}"
            )
        self.monitor = guard
        # every finding the guard returned while the run went on, in order
        self.runtime_findings: list[Finding] = []
        self._steps: list[Step] = []
        self._numbered = 0
        self._blocked: list[dict[str, Any]] = []
        self._locks: Any = None  # event loop -> the asyncio.Lock of its guarded calls

    # -- context manager ------------------------------------------------------------------

    def __enter__(self) -> Recorder:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self.wall_clock is not None:
            ended = self._stamp()
            # a clock that went back gives no end, rather than one before the start
            if ended is not None and self.started_at is not None:
                self.ended_at = None if instant(ended) < instant(self.started_at) else ended
        if self.path is None:
            return
        if exc is None:
            self.write(self.path)
            return
        try:  # the agent's exception is what the caller must see, not one from writing
            self.write(self.path)
        except Exception as error:  # noqa: BLE001 - kept as a note on the agent's exception
            exc.add_note(f"arh: the trace could not be written to {self.path}: {error}")

    # -- steps ----------------------------------------------------------------------------

    @property
    def steps(self) -> tuple[Step, ...]:
        return tuple(self._steps)

    def _next_id(self, step_id: str | None) -> str:
        self._numbered += 1
        return f"s{self._numbered}" if step_id is None else step_id

    def _parse(self, data: dict[str, Any]) -> Step:
        try:
            return Step.from_dict(data, pointer=f"/steps/{len(self._steps)}")
        except InputError as exc:
            raise UsageError(f"cannot record step {excerpt(data.get('step_id'))}: {exc}") from None

    def _stamp(self) -> str | None:
        """The wall clock's time as RFC 3339 text, or None when no times are recorded."""
        if self.wall_clock is None:
            return None
        now = self.wall_clock()
        if not isinstance(now, datetime):
            raise UsageError(f"the wall clock must return a datetime, got {_what(now)}")
        try:
            return from_datetime(now)
        except ValueError as exc:
            raise UsageError(f"the wall clock must return an aware datetime: {exc}") from None

    def _add(self, data: dict[str, Any]) -> Step:
        if data.get("timestamp") is None:
            data["timestamp"] = self._stamp()
        step = self._parse({k: v for k, v in data.items() if v is not None})
        if self.monitor is not None:
            self.runtime_findings.extend(self.monitor.observe(step))
        self._steps.append(step)
        return step

    def tool_call(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        output: Any = None,
        error: str | None = None,
        status: str | None = None,
        latency_ms: float | None = None,
        cost_usd: float | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        metadata: Mapping[str, Any] | None = None,
        step_id: str | None = None,
        timestamp: str | None = None,
    ) -> Step:
        """Record a tool call that has happened. ``status`` defaults to ``"error"`` when
        ``error`` is given, else ``"ok"``."""
        return self._add(
            {
                "step_id": self._next_id(step_id),
                "type": "tool_call",
                "tool_name": name,
                "arguments": json_value(arguments if arguments is not None else {}),
                "output": json_value(output),
                "status": status,
                "error": error,
                "latency_ms": latency_ms,
                "cost_usd": cost_usd,
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "metadata": None if metadata is None else json_value(metadata),
                "timestamp": timestamp,
            }
        )

    def model_response(
        self,
        text: str | None,
        *,
        citations: Iterable[Mapping[str, Any] | str] | None = None,
        requires_grounding: bool = False,
        error: str | None = None,
        status: str | None = None,
        latency_ms: float | None = None,
        cost_usd: float | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        metadata: Mapping[str, Any] | None = None,
        step_id: str | None = None,
        timestamp: str | None = None,
    ) -> Step:
        """Record what the model said. A citation given as a string is an ``http(s)`` URL
        (``{"url": ...}``) or else the name of a source (``{"source": ...}``); ``citations``
        given as one string or one mapping is that one citation."""
        return self._add(
            {
                "step_id": self._next_id(step_id),
                "type": "model_response",
                "text": text,
                "citations": None if citations is None else _citations(citations),
                # False is the default; anything else but True is refused as a file's would be
                "requires_grounding": None if requires_grounding is False else requires_grounding,
                "status": status,
                "error": error,
                "latency_ms": latency_ms,
                "cost_usd": cost_usd,
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "metadata": None if metadata is None else json_value(metadata),
                "timestamp": timestamp,
            }
        )

    def user_message(
        self,
        text: str,
        *,
        metadata: Mapping[str, Any] | None = None,
        step_id: str | None = None,
        timestamp: str | None = None,
    ) -> Step:
        """Record a user turn (schema version 1.1; no rule reads it)."""
        return self._add(
            {
                "step_id": self._next_id(step_id),
                "type": "user_message",
                "text": text,
                "metadata": None if metadata is None else json_value(metadata),
                "timestamp": timestamp,
            }
        )

    def check_call(self, name: str, arguments: Mapping[str, Any] | None = None) -> list[Finding]:
        """What the guard says about calling ``name`` next, without recording anything.

        Use it in loops that call tools themselves and then record them with
        :meth:`tool_call`. Without a guard there is nothing to check and the list is empty.
        """
        if self.monitor is None:
            return []
        step = self._proposed(f"s{self._numbered + 1}", name, json_value(arguments or {}))
        found = self.monitor.check(step)
        self.runtime_findings.extend(found)
        return found

    def _proposed(self, step_id: str, name: str, arguments: Any) -> Step:
        """The call the guard is asked about; ``arguments`` already in JSON form."""
        data = {"step_id": step_id, "type": "tool_call", "tool_name": name, "arguments": arguments}
        return self._parse(data)

    # -- wrapping functions ---------------------------------------------------------------

    if TYPE_CHECKING:

        @overload
        def tool(self, fn: Callable[_P, _R], *, name: str | None = None) -> Callable[_P, _R]: ...
        @overload
        def tool(
            self, fn: None = None, *, name: str | None = None
        ) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]: ...

    def tool(self, fn: Any = None, *, name: str | None = None) -> Any:
        """Wrap a function (``rec.tool(fn)``, ``@rec.tool`` or ``@rec.tool(name=...)``) so that
        each call is recorded as a tool_call step.

        The arguments are those passed, by parameter name (defaults that were not passed are not
        recorded); the output is the return value; an exception is recorded as status error,
        with ``error`` saying ``Type: message``, and raised again. Coroutine functions are
        awaited, and so is an awaitable that a function returns (an object with an
        ``async def __call__``, an async function under a plain decorator): the step records
        what awaiting it gives, when it is awaited. ``name`` (by default the function's
        ``__name__``) is checked when the function is wrapped. With a guard, a call that would
        break the policy is refused before the function runs:
        :class:`~agent_reliability_harness.monitor.BlockedCallError` is raised and the attempt
        is listed under ``blocked_calls`` in the trace's metadata.
        """
        if name is not None and (not isinstance(name, str) or not name):
            raise UsageError(f"name must be a non-empty string or None, got {_what(name)}")
        if fn is None:
            return lambda function: self.tool(function, name=name)
        if not callable(fn):
            raise UsageError(f"the tool must be callable, got {type(fn).__name__}")
        return _wrap(self, fn, name or getattr(fn, "__name__", None) or "tool")

    def _guard_locks(self) -> tuple[Any, tuple[Recorder, Any]]:
        """The lock a guarded coroutine call takes, so that overlapping calls take turns, and
        what it passes on to the guarded calls made inside it.

        A call at the top takes the lock of its event loop (a lock belongs to the loop it is
        first used in). A call made inside another guarded call of this recorder (awaited by
        it, or in tasks it starts) takes the lock that call made for its own calls instead: the
        outer call holds its lock until they are done, so taking that one would never end."""
        import asyncio  # only async tools need it; eager: +24 ms of `import ...record`

        held = _INNER_LOCK.get()
        if held is not None and held[0] is self:
            lock = held[1]
        else:
            loop = asyncio.get_running_loop()
            if self._locks is None:
                self._locks = weakref.WeakKeyDictionary()
            lock = self._locks.get(loop)
            if lock is None:
                lock = self._locks[loop] = asyncio.Lock()
        return lock, (self, asyncio.Lock())

    def _begin(self, name: str, arguments: dict[str, Any]) -> _Started:
        """Take the call's arguments as they are before it runs (a tool may change the objects
        it was given), check the call with the guard (raising if it is refused), and start its
        clock."""
        step_id = self._next_id(None)
        recorded = json_value(arguments)
        if self.monitor is not None:
            step = self._proposed(step_id, name, recorded)
            try:
                self.runtime_findings.extend(self.monitor.guard(step))
            except BlockedCallError as exc:
                self.runtime_findings.extend(exc.findings)
                self._blocked.append(
                    {
                        "step_id": step_id,
                        "tool_name": name,
                        "arguments": step.arguments,
                        "rule_ids": sorted({f.rule_id for f in exc.findings}),
                    }
                )
                raise
        start = None if self.clock is None else self._now()
        return step_id, start, recorded, self._stamp()

    def _now(self) -> float:
        """The clock's reading; UsageError when it is not a finite number of seconds."""
        assert self.clock is not None
        now = self.clock()
        if isinstance(now, bool) or not isinstance(now, int | float) or not math.isfinite(now):
            shown = repr(now)[:100]
            raise UsageError(
                f"the clock must return a finite number of seconds, got {_what(now)} ({shown})"
            )
        return float(now)

    def _end(
        self,
        name: str,
        started: _Started,
        output: Any = None,
        error: BaseException | None = None,
    ) -> None:
        step_id, start, arguments, stamp = started
        latency = None
        bad_clock = None
        if start is not None and self.clock is not None:
            try:
                latency = round(max(0.0, (self._now() - start) * 1000.0), _LATENCY_DECIMALS)
                if not math.isfinite(latency):
                    raise UsageError(
                        f"the clock jumped from {start!r} to a time too far ahead to measure"
                    )
            except UsageError as exc:  # the call ran: record it (without latency), then say so
                latency, bad_clock = None, exc
        self._add(
            {
                "step_id": step_id,
                "type": "tool_call",
                "tool_name": name,
                "arguments": arguments,
                "output": None if error is not None else json_value(output),
                "status": "error" if error is not None else "ok",
                "error": None if error is None else _error_text(error),
                "latency_ms": latency,
                "timestamp": stamp,
            }
        )
        if bad_clock is not None:
            raise bad_clock

    # -- the trace ------------------------------------------------------------------------

    def trace(self) -> Trace:
        """The run so far as a canonical trace (schema version 1.1 if it has user turns, 1.3 if
        it has times)."""
        steps = tuple(self._steps)
        version = schema_version_for(steps, timed=self.started_at is not None)
        metadata = dict(self.metadata)
        if self._blocked:
            metadata["blocked_calls"] = list(self._blocked)
        return Trace(
            self.trace_id,
            self.agent_name,
            self.workflow,
            steps,
            version,
            self.source,
            metadata,
            started_at=self.started_at,
            ended_at=self.ended_at,
        )

    def to_dict(self) -> dict[str, Any]:
        """The trace's canonical JSON form."""
        return self.trace().to_dict()

    def write(self, path: str | os.PathLike[str]) -> None:
        """Append the trace to a ``.jsonl``/``.ndjson`` file, or write it as a JSON file."""
        text = _path(path, "path")
        if os.path.splitext(text)[1].lower() in _JSONL_SUFFIXES:
            self.append_jsonl(text)
        else:
            self.write_json(text)

    def write_json(self, path: str | os.PathLike[str]) -> None:
        """Write the trace as indented JSON, replacing the file in one rename."""
        write_atomic(_path(path, "path"), render_trace(self.trace(), indent=True))

    def append_jsonl(self, path: str | os.PathLike[str]) -> None:
        """Append the trace as one line of JSON Lines, in a single write."""
        append_line(_path(path, "path"), render_trace(self.trace(), indent=False))


def append_line(path: str, line: str) -> None:
    """Append one line (ending in a newline) to ``path`` with one ``write`` in append mode.

    Appends of one ``write`` each do not interleave, so several processes may append traces to
    one file. If the file does not end with a line break (a writer died mid-line), one is added
    first, so that the new record stands on its own line. Where the system has ``flock``, the
    look at the last byte and the write are done under an exclusive lock: another process's
    write in progress is not taken for a torn line (which added blank lines).
    """
    refuse_directory(path)
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    data = line.encode("utf-8")
    flags = os.O_RDWR | os.O_CREAT | os.O_APPEND | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags, 0o644)
    try:
        try:
            import fcntl  # POSIX only
        except ImportError:  # Windows: no advisory locks here; appends still do not interleave
            pass
        else:
            fcntl.flock(fd, fcntl.LOCK_EX)  # released when the file is closed
        if os.fstat(fd).st_size:
            os.lseek(fd, -1, os.SEEK_END)
            if os.read(fd, 1) != b"\n":
                data = b"\n" + data
        written = os.write(fd, data)
        while written < len(data):  # only on a full disk or a signal; finish the record
            written += os.write(fd, data[written:])
    finally:
        os.close(fd)


def _utc_now() -> datetime:
    """The system's time of day, for ``Recorder(timestamps=True)``."""
    return datetime.now(UTC)


def _what(value: object) -> str:
    """A bad argument for a message: an empty string as ``''``, anything else by its type."""
    return repr(value) if value == "" else type(value).__name__


def _path(path: object, name: str) -> str:
    """``path`` as a file system path (a ``str`` or an ``os.PathLike`` of one)."""
    text = os.fspath(path) if isinstance(path, str | os.PathLike) else None
    if not isinstance(text, str):
        raise UsageError(f"{name} must be a str or os.PathLike path, got {type(path).__name__}")
    return text


def _arguments(signature: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The arguments of one call by parameter name, as they were passed."""
    if signature is not None:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            pass
        else:
            out: dict[str, Any] = {}
            for key, value in bound.arguments.items():
                kind = signature.parameters[key].kind
                if kind == kind.VAR_KEYWORD:
                    out.update(value)
                else:
                    out[key] = list(value) if kind == kind.VAR_POSITIONAL else value
            return out
    out = dict(kwargs)
    if args:
        out["args"] = list(args)
    return out


# A started call: its step id, its clock reading, its arguments as recorded before it ran.
# a wrapped call as it starts: its step id, the monotonic clock's reading, its arguments and the
# time of day (or None)
_Started = tuple[str, float | None, Any, str | None]
# Within a guarded coroutine call: its recorder, and the lock the calls made inside it share.
_INNER_LOCK: ContextVar[tuple[Recorder, Any] | None] = ContextVar("arh_inner_lock", default=None)


def _wrap(recorder: Recorder, fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    try:
        signature: Any = inspect.signature(fn)
    except (TypeError, ValueError):  # some built-ins have none
        signature = None

    if inspect.iscoroutinefunction(fn):

        async def call(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            started = recorder._begin(name, _arguments(signature, args, kwargs))
            try:
                result = await fn(*args, **kwargs)
            except BaseException as exc:
                recorder._end(name, started, error=exc)
                raise
            recorder._end(name, started, output=result)
            return result

        @functools.wraps(fn)
        async def run_async(*args: Any, **kwargs: Any) -> Any:
            if recorder.monitor is None:
                return await call(args, kwargs)
            # checked against every call recorded before it; a guarded call made inside
            # another takes turns with its siblings, under a lock of its own level
            lock, inner = recorder._guard_locks()
            async with lock:
                token = _INNER_LOCK.set(inner)
                try:
                    return await call(args, kwargs)
                finally:
                    _INNER_LOCK.reset(token)

        return run_async

    async def finish(awaitable: Any, started: _Started) -> Any:
        """Await what a call returned and record that, as a coroutine function's call is."""
        try:
            result = await awaitable
        except BaseException as exc:
            recorder._end(name, started, error=exc)
            raise
        recorder._end(name, started, output=result)
        return result

    def settle(awaitable: Any, started: _Started) -> Any:
        """Record a call that returned an awaitable once it completes. A future (an asyncio
        task) is returned itself, so that it can still be cancelled or waited for."""
        import asyncio  # see _guard_locks

        if not asyncio.isfuture(awaitable):
            return finish(awaitable, started)

        def done(future: Any) -> None:
            try:
                result = future.result()
            except BaseException as exc:  # noqa: BLE001 - recorded; the awaiter gets it too
                recorder._end(name, started, error=exc)
            else:
                recorder._end(name, started, output=result)

        awaitable.add_done_callback(done)
        return awaitable

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        started = recorder._begin(name, _arguments(signature, args, kwargs))
        try:
            result = fn(*args, **kwargs)
        except BaseException as exc:
            recorder._end(name, started, error=exc)
            raise
        if inspect.isawaitable(result):  # recorded when it completes, as a coroutine's call
            return settle(result, started)
        recorder._end(name, started, output=result)
        return result

    return run


def record_tool(recorder: Recorder, *, name: str | None = None) -> Callable[[Any], Any]:
    """A decorator that records each call of the function with ``recorder``
    (the same as ``@recorder.tool``)."""
    if not isinstance(recorder, Recorder):
        raise UsageError(f"recorder must be a Recorder, got {type(recorder).__name__}")
    return recorder.tool(name=name)
