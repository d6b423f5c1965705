"""Running a validation from files: the pipeline behind ``arh validate`` and ``arh compare``.

It reads the inputs one document at a time, validates each trace as soon as it is read, and
reports every input error through a callback as it happens, so one bad file never stops the run.
"""

from __future__ import annotations

import gc
import os
import posixpath
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, replace
from itertools import chain, islice
from typing import Any, Final, Literal, Protocol

from agent_reliability_harness._decode import check_json_values, check_tree
from agent_reliability_harness._formats import FORMAT_NAMES, SPAN_FORMAT_NAMES
from agent_reliability_harness._version import __version__
from agent_reliability_harness.adapters import (
    RecordOptions,
    is_span_export,
    span_traces,
    to_traces,
)
from agent_reliability_harness.engine import Validator, with_expected
from agent_reliability_harness.errors import (
    INFRASTRUCTURE_FAILURE,
    TOO_DEEP,
    InputError,
    UsageError,
    excerpt,
    join_pointer,
    parse_pointer,
)
from agent_reliability_harness.io import (
    DEFAULT_MAX_INPUT,
    STDIN_NAME,
    Chunk,
    Document,
    Source,
    cannot_read,
    expand_inputs,
    is_regular_file,
    jsonl_chunks,
    no_records,
    read_chunk,
    read_documents,
    read_whole,
    stdin_chunks,
)
from agent_reliability_harness.io.load import (  # (load_* and StepLines: their 1.x home)
    StepLines,
    file_size,
    is_span_export_file,
    load_expectations,
    load_gate_file,
    load_policy,
    load_report,
    names_spans,
    step_lines,
)
from agent_reliability_harness.model.answers import Expectations
from agent_reliability_harness.model.policy import Policy
from agent_reliability_harness.model.report import RunReport, TraceReport
from agent_reliability_harness.model.trace import Trace

__all__ = [
    "Executor",
    "ReadTrace",
    "StepLines",
    "TraceIds",
    "UnmatchedPointerError",
    "iter_reports",
    "load_expectations",
    "load_gate_file",
    "load_policy",
    "load_report",
    "load_traces",
    "read_traces",
    "run_validation",
    "sorted_errors",
    "step_lines",
]


def _default_id(relative: str) -> str:
    """The id of a trace that names none: its file's relative path without the suffix."""
    stem, suffix = posixpath.splitext(relative)
    return stem if suffix else relative


@dataclass(frozen=True, slots=True)
class ReadTrace:
    """A trace and where it was read: its file, its JSON Lines line, the pointer of its record
    in the document (``""`` for the document itself), and the pointer of the record's
    ``trace_id`` (of the record when it has none)."""

    trace: Trace
    source: str
    line: int | None
    pointer: str
    id_pointer: str

    @property
    def where(self) -> str:
        where = self.source if self.line is None else f"{self.source}:{self.line}"
        return f"{where} (record {self.pointer})" if self.pointer else where


# Which document each pointer option reads: the record as the input holds it, or the canonical
# trace an adapter made of it (what arh convert prints).
_READS_RECORD: Final = frozenset({"messages_at", "trace_id_at"})


class UnmatchedPointerError(UsageError):
    """A pointer option (``--outcome-at`` and the like) that matched nothing in any record of a
    run: one error in place of one per record, naming the document the option reads and what
    the first record holds where the pointer stops."""

    def __init__(self, first: InputError, records: int) -> None:
        miss = first.miss
        assert miss is not None
        self.first = first
        self.records = records
        option = "--" + miss.option.replace("_", "-")
        if miss.option in _READS_RECORD:
            read = "each input record as it is, not in the trace converted from it"
            noun = "record"
        else:
            read = "the canonical trace converted from each record (as arh convert prints it)"
            noun = "trace"
        count = f"the only {noun}" if records == 1 else f"any of the {records} {noun}s"
        at = miss.found or "the top level"
        message = (
            f"{option} {excerpt(miss.pointer, quote=False)} matches nothing in {count}. It is "
            f"read in {read}; in {'it' if records == 1 else 'the first one'} "
            f"({first.location()}), {at} {miss.there}"
        )
        if miss.suggestion is not None:
            message += f". Did you mean {option} {excerpt(miss.suggestion, quote=False)}?"
        super().__init__(message)


class _Unmatched:
    """The errors of a run with pointer options, reported through ``report`` once it is known
    that the options match in some record; when an option matches in none,
    :meth:`finish` raises one :class:`UnmatchedPointerError` in place of its errors.

    An option matches nothing in the run when every record that was read failed because that
    option found nothing in it. Until a record says otherwise (a trace was checked, or a record
    failed in another way) every error is held back, so that all are reported in their order;
    errors about reading an input (no JSON pointer: a missing file, no records) are no record
    and decide nothing."""

    def __init__(self, report: Callable[[InputError], None]) -> None:
        self._report = report
        self._held: list[InputError] | None = []  # None: decided, errors pass through
        self._first: InputError | None = None  # the first record's error, while all miss
        self._records = 0

    def error(self, error: InputError) -> None:
        if self._held is None:
            self._report(error)
            return
        self._held.append(error)
        miss = error.miss
        if miss is None:
            if error.pointer is not None:  # a record that failed otherwise
                self.matched()
        elif self._first is None:
            self._first = error
            self._records = 1
        else:
            first = self._first.miss
            assert first is not None
            if (miss.option, miss.pointer) != (first.option, first.pointer):
                self.matched()  # another option missed: the first one matched in that record
            else:
                self._records += 1

    def matched(self) -> None:
        """A record got past the options: report what was held, and every error from now on."""
        if self._held is not None:
            held, self._held = self._held, None
            for error in held:
                self._report(error)

    def finish(self) -> None:
        """At the end of the run: report what was held, or raise UnmatchedPointerError after
        reporting the held errors that are not about the option."""
        if self._held is None or self._first is None:
            self.matched()
            return
        held, self._held = self._held, None
        for error in held:
            if error.miss is None:
                self._report(error)
        raise UnmatchedPointerError(self._first, self._records)


def read_traces(
    inputs: Sequence[str],
    fail: Callable[[InputError], None],
    *,
    fmt: str = "auto",
    messages_at: str | None = None,
    trace_id_at: Sequence[str] = (),
    max_input_bytes: int = DEFAULT_MAX_INPUT,
    agent_name: str | None = None,
    workflow: str | None = None,
) -> Iterator[ReadTrace]:
    """Every trace in ``inputs`` and where it was read, in input order (sorted paths, then
    JSON Lines order, then array order); problems go to ``fail``. ``max_input_bytes`` is the
    most one input (a file read whole, or a line of JSON Lines) may hold. ``agent_name`` and
    ``workflow``, when given, replace those of every trace (``--agent-name``, ``--workflow``).

    A transcript record without an id is named after its file's path relative to the argument
    it was found under (the path as given when that name is also another argument's), plus
    ``:<line>`` for a JSON Lines record and ``#<index>`` in an array.
    When ``messages_at`` or a ``trace_id_at`` pointer matches nothing in any record, the records'
    errors are replaced by one :class:`UnmatchedPointerError`, raised at the end.
    """
    guard = _Unmatched(fail) if messages_at is not None or trace_id_at else None
    if guard is not None:
        fail = guard.error
    sources, bad_inputs = expand_inputs(inputs)
    for error in bad_inputs:
        fail(error)
    settings = _Settings(
        fmt,
        messages_at,
        tuple(trace_id_at),
        max_input_bytes,
        keep_traces=True,
        agent_name=agent_name,
        workflow=workflow,
    )
    for source in sources:
        documents = read_documents(source, max_input_bytes)
        for outcome in _source_traces(documents, _base(source), settings):
            if isinstance(outcome, InputError):
                fail(outcome)
                continue
            if guard is not None:
                guard.matched()
            box = [outcome]
            del outcome
            yield box.pop()  # see _source_traces: nothing kept while the caller has it
    if guard is not None:
        guard.finish()


# The name errors give an in-memory document, as ``<stdin>`` names standard input.
DOCUMENT_NAME: Final = "<document>"
_DEFAULT_DOCUMENT_ID: Final = "transcript"


def load_traces(
    source: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | dict[str, Any] | list[Any],
    format: str = "auto",
    *,
    messages_at: str | None = None,
    trace_id_at: str | Sequence[str] = (),
    agent_name: str | None = None,
    workflow: str | None = None,
    on_error: Callable[[InputError], None] | None = None,
    max_input_bytes: int = DEFAULT_MAX_INPUT,
) -> list[Trace]:
    """The canonical traces ``arh validate`` would check, read as it reads them.

    ``source`` is a path (a trace or transcript file, a directory searched recursively, a JSON
    Lines file, or ``-`` for standard input), a list of paths (as the command line's arguments),
    or a document already decoded from JSON (a ``dict`` or a ``list``, such as ``json.load``
    returns), whose records without an id of their own are named ``transcript`` (``#<index>``
    in an array). ``format``, ``messages_at``, ``trace_id_at``, ``agent_name``, ``workflow`` and
    ``max_input_bytes`` are the options ``--format``, ``--messages-at``, ``--trace-id-at`` (one
    pointer, or several to join), ``--agent-name``, ``--workflow`` and ``--max-input-size``.

    The traces come in the command line's order, and a trace id read twice is an error, as it is
    there. Without ``on_error``, the first problem raises its :class:`InputError` (naming the
    file, the line of a JSON Lines record and the JSON pointer); with it, every problem is
    passed to it and the other traces are returned. Arguments of the wrong kind raise
    :class:`UsageError`.
    """
    pointers = _load_arguments(format, messages_at, trace_id_at, agent_name, workflow)
    paths = _paths(source)

    def fail(error: InputError) -> None:
        if on_error is None:
            raise error
        on_error(error)

    reads: Iterator[ReadTrace | InputError]
    if paths is None:
        settings = _Settings(
            format,
            messages_at,
            pointers,
            max_input_bytes,
            keep_traces=True,
            agent_name=agent_name,
            workflow=workflow,
        )
        reads = _document_traces(source, settings)
    else:
        reads = read_traces(
            paths,
            fail,
            fmt=format,
            messages_at=messages_at,
            trace_id_at=pointers,
            max_input_bytes=max_input_bytes,
            agent_name=agent_name,
            workflow=workflow,
        )
    return [read.trace for read in unique_traces(reads, fail)]


def unique_traces(
    reads: Iterable[ReadTrace | InputError], fail: Callable[[InputError], None]
) -> Iterator[ReadTrace]:
    """The traces read, each id once: an error read, or a trace whose id was read before, goes
    to ``fail`` instead (reports and baselines are keyed by trace id)."""
    ids = TraceIds()
    for read in reads:
        if isinstance(read, InputError):
            fail(read)
            continue
        try:
            ids.check(read)
        except InputError as exc:
            fail(exc)
            continue
        ids.add(read)
        yield read


def _load_arguments(
    fmt: object,
    messages_at: object,
    trace_id_at: object,
    agent_name: object,
    workflow: object,
) -> tuple[str, ...]:
    """Check the options of :func:`load_traces` as the command line checks its own; return the
    trace id pointers."""
    if fmt not in ("auto", *FORMAT_NAMES):
        raise UsageError(
            f"format must be one of auto, {', '.join(FORMAT_NAMES)}; got {excerpt(fmt)}"
        )
    pointers = (trace_id_at,) if isinstance(trace_id_at, str) else trace_id_at
    if not isinstance(pointers, Sequence) or not all(isinstance(p, str) for p in pointers):
        raise UsageError("trace_id_at must be a JSON pointer or a sequence of them")
    for name, value in (("messages_at", messages_at), *(("trace_id_at", p) for p in pointers)):
        if value is None and name == "messages_at":
            continue
        if not isinstance(value, str):
            raise UsageError(f"{name} must be a JSON pointer (a str) or None")
        try:
            parse_pointer(value)
        except UsageError as exc:
            raise UsageError(f"{name}: {exc}") from None
    if fmt in ("arh", *SPAN_FORMAT_NAMES) and (messages_at is not None or pointers):
        raise UsageError(f"messages_at and trace_id_at apply to transcripts, not to format {fmt}")
    for name, value in (("agent_name", agent_name), ("workflow", workflow)):
        if value is not None and not isinstance(value, str):
            raise UsageError(f"{name} must be a str or None, got {type(value).__name__}")
    return tuple(pointers)


def _paths(source: object) -> list[str] | None:
    """The inputs a ``source`` of :func:`load_traces` names, or None for a decoded document."""
    if isinstance(source, str | os.PathLike):
        return [os.fspath(source)]
    if isinstance(source, dict):
        return None
    if (
        isinstance(source, list | tuple)
        and source
        and all(isinstance(item, str | os.PathLike) for item in source)
    ):
        return [os.fspath(item) for item in source]
    if isinstance(source, list):
        return None
    raise UsageError(
        "load_traces reads a path, a list of paths, or a document decoded from JSON (a dict or "
        f"a list), got {type(source).__name__}"
    )


def _document_traces(document: Any, settings: _Settings) -> Iterator[ReadTrace | InputError]:
    """The traces of a document decoded in Python, held to what JSON can hold."""
    try:
        check_tree(document, "")
        check_json_values(document, "")
    except InputError as exc:
        yield exc.located(DOCUMENT_NAME)
        return
    yield from _source_traces(
        [Document(DOCUMENT_NAME, None, document)], _DEFAULT_DOCUMENT_ID, settings
    )


def _source_traces(
    documents: Iterable[Document | InputError], base: str, settings: _Settings
) -> Iterator[ReadTrace | InputError]:
    """The traces of one source's documents, or the (located) error in their place. The records
    of a JSON Lines file that are OpenTelemetry export requests are read together: a trace's
    spans may be on several lines.

    While a trace is being checked and reported, this generator holds no reference to it, nor,
    once its last trace is handed out, to its document: both are freed as soon as the consumer
    lets go of them, not kept alive (and walked by the garbage collector) until the next one is
    read."""
    documents = iter(documents)
    leading: list[InputError] = []
    first = next(documents, None)
    while isinstance(first, InputError):
        leading.append(first)
        first = next(documents, None)
    yield from leading
    if first is None:
        return
    if first.line is not None and is_span_export(first.value, settings.fmt):
        yield from _span_file_traces(first, documents, settings)
        return
    pending = [first]  # not a chain: its iterator of the first would keep that document
    del first
    while True:
        item = pending.pop() if pending else next(documents, None)
        if item is None:
            return
        if isinstance(item, InputError):
            yield item
            continue
        source, line, value = item.source, item.line, item.value
        del item  # each document is let go once its traces are checked
        options = RecordOptions(
            settings.messages_at, settings.trace_id_at, base if line is None else f"{base}:{line}"
        )
        results = to_traces(value, settings.fmt, options)
        upcoming = _next_trace(results)
        while upcoming is not None:
            pointer, result = upcoming
            box: list[ReadTrace | InputError] = [
                result.located(source, line)
                if isinstance(result, InputError)
                else ReadTrace(
                    _named(result, settings), source, line, pointer, _id_pointer(value, pointer)
                )
            ]
            del result
            upcoming = _next_trace(results)
            if upcoming is None:  # the document's last record (``results`` is done with it too)
                value = None
            yield box.pop()  # from a box, so that no local names the trace while it is checked


_NO_MEMORY: Final = "not enough memory to check this trace"


def _next_trace(
    results: Iterator[tuple[str, Trace | InputError]],
) -> tuple[str, Trace | InputError] | None:
    """The next of a document's traces; an error in its place when there is not enough memory
    to build it (the document's other traces are then not read)."""
    try:
        return next(results, None)
    except MemoryError:
        pass
    return "", InputError(_NO_MEMORY, pointer=None, kind=INFRASTRUCTURE_FAILURE)


def _span_file_traces(
    first: Document, documents: Iterator[Document | InputError], settings: _Settings
) -> Iterator[ReadTrace | InputError]:
    """The traces of a JSON Lines file of OTLP export requests, one per trace id, in order of
    their first line; the whole file is read first (memory is bounded by the file)."""
    lines: dict[int | None, Document] = {first.line: first}
    for item in documents:
        if isinstance(item, InputError):
            yield item
        else:
            lines[item.line] = item
    options = RecordOptions(settings.messages_at, settings.trace_id_at, "")
    parts = [(line, item.value) for line, item in lines.items()]
    for line, result in span_traces(parts, settings.fmt, options):
        if isinstance(result, InputError):
            yield result.located(first.source)  # the error names its own line
        else:
            item = lines.get(line, first)
            named = _named(result, settings)
            yield ReadTrace(named, item.source, item.line, "", _id_pointer(item.value, ""))


def _named(trace: Trace, settings: _Settings) -> Trace:
    """The trace with the agent name and workflow the run was given, in place of its own: they
    describe the run (``--agent-name``, ``--workflow``)."""
    if settings.agent_name is None and settings.workflow is None:
        return trace
    return replace(
        trace,
        agent_name=trace.agent_name if settings.agent_name is None else settings.agent_name,
        workflow=trace.workflow if settings.workflow is None else settings.workflow,
    )


def _id_pointer(document: Any, pointer: str) -> str:
    """The pointer of a record's ``trace_id`` field, or of the record when it has none."""
    record: Any = document if not pointer else document[int(pointer[1:])]
    if type(record) is dict and "trace_id" in record:
        return join_pointer(pointer, "trace_id")
    return pointer


class TraceIds:
    """Where each trace id was first read; a repeated id is an input error (reports and
    baselines are keyed by it)."""

    def __init__(self) -> None:
        self._seen: dict[str, str] = {}

    def check(self, read: ReadTrace) -> None:
        """Raise InputError (located) if another trace already had this id."""
        self.check_id(read.trace.trace_id, read.source, read.line, read.id_pointer)

    def check_id(self, trace_id: str, source: str, line: int | None, pointer: str) -> None:
        first = self._seen.get(trace_id)
        if first is not None:
            raise InputError(
                f"duplicate trace_id {excerpt(trace_id)}: already read from {first}",
                pointer=pointer,
            ).located(source, line)

    def add(self, read: ReadTrace) -> None:
        self._seen[read.trace.trace_id] = read.where

    def add_id(self, trace_id: str, where: str) -> None:
        self._seen[trace_id] = where


@dataclass(frozen=True, slots=True)
class _Settings:
    """What a worker needs besides the policy: how to read records, and what to send back."""

    fmt: str
    messages_at: str | None
    trace_id_at: tuple[str, ...]
    max_input: int  # bytes (see io.read_documents)
    keep_traces: bool
    task_key: str | None = None  # JSON pointers into each trace, recorded in its report
    outcome_at: str | None = None
    agent_name: str | None = None  # the names of every trace, when the run is given them
    workflow: str | None = None
    expectations: Expectations | None = None  # the expected outcomes of --expect


@dataclass(frozen=True, slots=True)
class _Checked:
    """One trace read and validated (or failing validation), with what the duplicate-id check
    needs; the check itself happens in input order, in the process that writes the reports."""

    trace_id: str
    where: str
    source: str
    line: int | None
    id_pointer: str
    result: TraceReport | InputError
    trace: Trace | None


def _checked(
    validator: Validator,
    documents: Iterable[Document | InputError],
    base: str,
    settings: _Settings,
) -> Iterator[_Checked | InputError]:
    """Read the traces of a source's documents and validate each, in order.

    The cyclic garbage collector is paused while one trace is read and checked. A trace's parsed
    JSON and model are many containers without reference cycles, all alive until the trace is
    checked; collections triggered while they are allocated would traverse them over and over
    (about a quarter of the time of a 20,000-step trace). Between traces most of it is freed,
    so the collections that are due then are cheap, and they still find any cycle made.
    """
    outcomes = _source_traces(documents, base, settings)
    while True:
        running = gc.isenabled()
        gc.disable()
        try:
            outcome = next(outcomes, None)
            checked = (
                outcome
                if outcome is None or isinstance(outcome, InputError)
                else _check(validator, outcome, settings)
            )
            del outcome  # not kept while the next trace is read
        finally:
            if running:
                gc.enable()
        if checked is None:
            return
        yield checked


def _check(validator: Validator, read: ReadTrace, settings: _Settings) -> _Checked:
    trace = read.trace
    result: TraceReport | InputError
    try:
        if settings.expectations is not None:
            trace = _expected(trace, settings.expectations, settings.task_key)
        result = validator._validate_parsed(  # read from JSON text: no value contains itself
            trace,
            source_path=None if read.source == STDIN_NAME else read.source,
            source_line=read.line,
        )
        if settings.task_key is not None or settings.outcome_at is not None:
            # only --task-key and --outcome-at need it; eager: +16 ms of every `arh validate`
            from agent_reliability_harness.regression.trials import label_report

            result = label_report(
                result, trace, task_key=settings.task_key, outcome_at=settings.outcome_at
            )
    except InputError as exc:
        result = exc if exc.source else exc.located(read.source, read.line)
    except MemoryError:
        result = InputError(_NO_MEMORY, pointer=None, kind=INFRASTRUCTURE_FAILURE).located(
            read.source, read.line
        )
    return _Checked(
        trace.trace_id,
        read.where,
        read.source,
        read.line,
        read.id_pointer,
        result,
        trace if settings.keep_traces else None,
    )


def _expected(trace: Trace, expectations: Expectations, task_key: str | None) -> Trace:
    """The trace with its expected outcome from ``--expect`` (by trace id, task or workflow;
    the task as ``--task-key`` names it, else the trace id without a run marker). A task key
    that finds nothing is left to ``label_report``, which says so after validation."""
    task = None
    if task_key is not None and expectations.by_task and trace.expected is None:
        from agent_reliability_harness.regression.trials import task_at  # as label_report below

        task = task_at(trace, task_key)
    return with_expected(trace, expectations, task)


def _base(source: Source) -> str:
    return _default_id(source.relative or posixpath.basename(source.name))


def _outcomes(
    validator: Validator, source: Source, settings: _Settings
) -> Iterator[_Checked | InputError]:
    """The outcomes of one whole source, read and checked in this process."""
    documents = read_documents(source, settings.max_input)
    return _checked(validator, documents, _base(source), settings)


@dataclass(frozen=True, slots=True)
class _Unit:
    """Work for one worker: whole sources, or one chunk of a JSON Lines file (or of standard
    input); or, with ``local``, documents this process reads and checks itself."""

    sources: tuple[Source, ...]
    chunk: Chunk | None = None
    last: bool = True  # the chunk is the file's last
    local: Iterator[Document | InputError] | None = None

    @property
    def for_worker(self) -> bool:
        return self.local is None and (self.chunk is not None or self.sources[0].path is not None)


_worker: tuple[Validator, _Settings] | None = None


def _start_worker(policy: Policy, fail_under: float, settings: _Settings, digits: int) -> None:
    global _worker  # noqa: PLW0603 - one validator per worker process, built once
    # the longest integer JSON may hold is the main process's (a spawned worker would otherwise
    # take it from the environment)
    sys.set_int_max_str_digits(digits)
    _worker = (Validator(policy, fail_under), settings)


def _unit_outcomes(
    validator: Validator, settings: _Settings, unit: _Unit, tally: list[int]
) -> Iterator[_Checked | InputError]:
    """The outcomes of a unit; ``tally[0]`` gets the records (lines that decode and are not
    blank) of a chunk added to it. Not a generator itself: the checks run as deep in the stack
    as those of one process do (how deeply nested a value can be checked depends on it)."""
    source = unit.sources[0]
    if unit.local is not None:
        return _checked(validator, unit.local, _base(source), settings)
    if unit.chunk is None:
        return chain.from_iterable(_outcomes(validator, s, settings) for s in unit.sources)
    documents = read_chunk(source, unit.chunk, tally, settings.max_input)
    return _checked(validator, documents, _base(source), settings)


def _run_unit(unit: _Unit) -> tuple[list[_Checked | InputError], int]:
    """Validate a unit in a worker: its outcomes, and the records of a chunk."""
    assert _worker is not None
    validator, settings = _worker
    tally = [0]
    return list(_unit_outcomes(validator, settings, unit, tally)), tally[0]


AUTO_JOBS_MIN_BYTES: Final = 8 << 20
"""With ``jobs="auto"``, the least input (bytes of the files, or of standard input read so far)
for which worker processes are started: below it, starting them costs more than they save. Set
from the measurements of ``benchmarks/perf/jobs_auto.py`` on a 2-CPU machine (the realistic
corpus of ``make perf``, docs/large-runs.md has its last run): in a quiet moment, two processes
were faster than one from 4.1 MB on (medians), by 14-21% at 8.3 MB; this leaves a margin above
that break-even, where the gain is within the noise. (Under the load of other work, no size was
reliably faster.)"""

_CHUNK_BYTES: Final = 4 << 20  # work is handed out in pieces of at most about this size,
_MIN_CHUNK_BYTES: Final = 64 << 10  # and at least this, about four per worker
_STDIN_CHUNK_BYTES: Final = 1 << 20  # (standard input is read, and held, a piece at a time)
_BATCH_FILES: Final = 64


def _jsonl_units(source: Source, chunk_bytes: int) -> Iterator[_Unit]:
    """A JSON Lines file in chunks, cut as they are handed out (the last one is marked)."""
    assert source.path is not None
    previous: Chunk | None = None
    try:
        for chunk in jsonl_chunks(source.path, chunk_bytes):
            if previous is not None:
                yield _Unit((source,), previous, last=False)
            previous = chunk
    except OSError:
        if previous is None:
            yield _Unit((source,))  # reading it again reports the error
            return
        yield _Unit((source,), previous, last=False)
        # the rest, to the end: reading it reports the error, or whatever can be read
        end, line = previous.offset + previous.length, previous.first_line + previous.lines
        yield _Unit((source,), Chunk(end, -1, line))
        return
    yield _Unit((source,)) if previous is None else _Unit((source,), previous)  # (empty file)


def _stdin_units(source: Source, fmt: str, limit: int) -> Iterator[_Unit]:
    """Standard input as units of work: JSON Lines in chunks of the lines read so far, for the
    workers; one document, an OTLP export (whose traces may span lines) or a read error, for
    this process."""
    try:
        chunks = stdin_chunks(_STDIN_CHUNK_BYTES, limit)
        if isinstance(chunks, bytes):
            local = read_whole(source, chunks, limit)
            del chunks  # read_whole lets go of the bytes once it has decoded them
            yield _Unit((source,), local=local)
            return
        pending = next(chunks)  # there is one: the input has a line that is not blank
        if fmt in SPAN_FORMAT_NAMES or (fmt == "auto" and names_spans(_head(pending))):
            yield _Unit((source,), local=_read_chunks(source, chain([pending], chunks)))
            return
    except OSError as exc:
        yield _Unit((source,), local=iter([cannot_read(source.name, exc)]))
        return
    except InputError as exc:  # one document, too large
        yield _Unit((source,), local=iter([exc.located(source.name)]))
        return
    while True:
        try:
            chunk = next(chunks, None)
        except OSError as exc:  # what was read is checked, then the error reported
            yield _Unit((source,), pending)
            yield _Unit((source,), local=iter([cannot_read(source.name, exc)]))
            return
        if chunk is None:
            yield _Unit((source,), pending)
            return
        yield _Unit((source,), pending, last=False)
        pending = chunk


def _head(chunk: Chunk) -> bytes:
    """The first 64 KiB of the lines of a chunk of standard input."""
    head = b""
    for line in chunk.data or ():
        if isinstance(line, bytes):
            head += line[: (1 << 16) - len(head)]
            if len(head) >= 1 << 16:
                break
    return head


def _read_chunks(source: Source, chunks: Iterator[Chunk]) -> Iterator[Document | InputError]:
    tally = [0]
    try:
        for chunk in chunks:
            yield from read_chunk(source, chunk, tally)
    except OSError as exc:
        yield cannot_read(source.name, exc)


def _units(sources: Sequence[Source], fmt: str, chunk_bytes: int, limit: int) -> Iterator[_Unit]:
    """Cut the sources into units of work: JSON Lines files and standard input in chunks
    (except OTLP exports and named pipes), other files in batches."""
    batch: list[Source] = []
    size = 0
    for source in sources:
        if (
            source.path is not None
            and source.jsonl
            and is_regular_file(source.path)  # a pipe can be read only once, whole
            and not is_span_export_file(source.path, fmt)
        ):
            if batch:
                yield _Unit(tuple(batch))
                batch, size = [], 0
            yield from _jsonl_units(source, chunk_bytes)
            continue
        if source.path is None:
            if batch:
                yield _Unit(tuple(batch))
                batch, size = [], 0
            yield from _stdin_units(source, fmt, limit)
            continue
        batch.append(source)
        size += file_size(source.path)
        if size >= chunk_bytes or len(batch) >= _BATCH_FILES:
            yield _Unit(tuple(batch))
            batch, size = [], 0
    if batch:
        yield _Unit(tuple(batch))


def _too_deep(outcome: _Checked | InputError) -> bool:
    """Did a value nested too deeply for the stack stop this outcome?"""
    error = outcome.result if isinstance(outcome, _Checked) else outcome
    return isinstance(error, InputError) and TOO_DEEP in error.message


def usable_cpus() -> int:
    """The number of CPUs this process may run on."""
    counter = getattr(os, "process_cpu_count", None)  # Python 3.13+: honours CPU affinity
    if counter is None and hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, (counter or os.cpu_count)() or 1)


def _parallel(
    sources: Sequence[Source],
    policy: Policy,
    fail_under: float,
    settings: _Settings,
    *,
    jobs: int,
    total: int,
    min_bytes: int,
) -> Iterator[_Checked | InputError]:
    """The outcomes of every source in input order, computed by ``jobs`` worker processes:
    ``total`` is the size of the files, and the workers start once the input (the files, and
    standard input as it is read) reaches ``min_bytes``; this process checks what came before."""
    local = Validator(policy, fail_under)  # for what this process checks itself
    chunk_bytes = min(_CHUNK_BYTES, max(_MIN_CHUNK_BYTES, total // (4 * jobs)))
    units = _units(sources, settings.fmt, chunk_bytes, settings.max_input)
    # When a worker would get one piece of work at most (one trace, say), workers would only
    # add their start: this process does it all.
    first = list(islice(units, 3))
    units = chain(first, units)
    workers = sum(unit.for_worker for unit in first) >= 2
    seen = total  # bytes of input so far: the files, and the lines of standard input read

    # (one loop for both, in this frame: how deeply a value can be checked here depends on the
    # frames below, which must be those of one process)
    with ExitStack() as stack:
        pool: Any = None
        pending: deque[tuple[_Unit, Any]] = deque()
        records = 0  # of the JSON Lines file being read in chunks

        def submit() -> None:
            nonlocal pool, seen, workers
            unit = next(units, None)
            if unit is None:
                return
            if unit.chunk is not None and unit.chunk.data is not None:
                seen += unit.chunk.length
            if pool is None and workers and seen >= min_bytes:
                # started once the input reaches min_bytes: what came before is checked here
                workers = False  # (one attempt)
                import multiprocessing  # eager: +6 ms of every `arh validate`

                try:
                    pool = stack.enter_context(
                        multiprocessing.get_context().Pool(
                            jobs,
                            _start_worker,
                            (policy, fail_under, settings, sys.get_int_max_str_digits()),
                        )
                    )
                except (OSError, ImportError):
                    # no worker processes on this system (they need its shared semaphores,
                    # which some containers lack): this process checks everything, as with
                    # one job
                    pool = None
            worker = pool is not None and unit.for_worker
            pending.append((unit, pool.apply_async(_run_unit, (unit,)) if worker else None))

        for _ in range(2 * jobs):
            submit()
        while pending:
            unit, job = pending.popleft()
            submit()
            outcomes: list[_Checked | InputError] | None = None
            if job is not None:
                try:
                    outcomes, count = job.get()
                except Exception:  # noqa: BLE001 - whatever it was, one process has the answer
                    # A result the worker could not send back (pickling a trace that holds a
                    # value nested deeply exceeds the recursion limit), or a failure in the
                    # worker: its unit is done again here, as one process would do it (a
                    # failure that is not the worker's own happens here again, as it would
                    # with one process).
                    outcomes = None
                if outcomes is not None and any(map(_too_deep, outcomes)):
                    # How deep a value can be decoded and checked depends on the stack, which
                    # is deeper in a worker: its unit is done again here, at the depth one
                    # process would do it (the same frames as in iter_reports), for the same
                    # outcome.
                    outcomes = None
            if outcomes is None:  # a unit for this process, or one to do again
                tally = [0]
                yield from _unit_outcomes(local, settings, unit, tally)
                count = tally[0]
            else:
                yield from outcomes
            if unit.chunk is not None:
                records += count
                if unit.last:
                    if not records:
                        yield no_records(unit.sources[0].name)
                    records = 0


class Executor(Protocol):
    """Where the traces are read and checked when not in this process and its ``--jobs``
    workers: ``arh validate --executor dask`` (:mod:`agent_reliability_harness.dask`). It
    finds the inputs, then yields the outcome of each source in input order, as
    :func:`_parallel` does; :func:`iter_reports` checks the ids and reports them, so the
    reports are those of one process."""

    def expand(self, inputs: Sequence[str]) -> tuple[list[Source], list[InputError]]: ...

    def outcomes(
        self, sources: Sequence[Source], policy: Policy, fail_under: float, settings: _Settings
    ) -> Iterator[_Checked | InputError]: ...


def iter_reports(
    policy: Policy,
    inputs: Sequence[str],
    *,
    fmt: str = "auto",
    fail_under: float = 70.0,
    on_error: Callable[[InputError], None],
    messages_at: str | None = None,
    trace_id_at: Sequence[str] = (),
    on_trace: Callable[[Trace, TraceReport], None] | None = None,
    jobs: int | Literal["auto"] = 1,
    task_key: str | None = None,
    outcome_at: str | None = None,
    max_input_bytes: int = DEFAULT_MAX_INPUT,
    agent_name: str | None = None,
    workflow: str | None = None,
    executor: Executor | None = None,
    expectations: Expectations | None = None,
    judge: Callable[[Trace, TraceReport], TraceReport] | None = None,
) -> Iterator[TraceReport]:
    """Validate every trace found in ``inputs`` and yield its report, in input order (sorted
    paths, then JSON Lines order, then array order); problems go to ``on_error`` as they occur.

    With ``jobs`` > 1, worker processes read and validate the traces; the reports, errors and
    their order are exactly those of one process. ``jobs="auto"`` starts one per usable CPU
    when the input holds at least :data:`AUTO_JOBS_MIN_BYTES`, and none for less.
    ``max_input_bytes`` is the most one input (a file read whole, or a line of JSON Lines) may
    hold; a larger one is an input error. ``agent_name`` and ``workflow``, when given, replace
    those of every trace. An ``executor`` (``--executor dask``) finds the inputs and checks them
    in place of ``jobs``. ``expectations`` (``--expect``) give the expected outcome of traces
    that carry none. ``judge`` (``--rubric``: ``judge.stage.JudgeStage``) adds the judge's
    verdict to each report, in this process and in input order.

    ``messages_at`` and ``trace_id_at`` read each input record; ``task_key`` and ``outcome_at``
    read the canonical trace made of it. When one of them matches nothing in any record of the
    run, its errors are replaced by one :class:`UnmatchedPointerError`, raised at the end (after
    the other errors); when it matches in some, each record where it does not is an input error.
    """
    settings = _Settings(
        fmt,
        messages_at,
        tuple(trace_id_at),
        max_input_bytes,
        on_trace is not None or judge is not None,
        task_key,
        outcome_at,
        agent_name,
        workflow,
        expectations,
    )
    pointers = (messages_at, task_key, outcome_at)
    guard = _Unmatched(on_error) if trace_id_at or any(p is not None for p in pointers) else None
    if guard is not None:
        on_error = guard.error
    sources, bad_inputs = expand_inputs(inputs) if executor is None else executor.expand(inputs)
    for error in bad_inputs:
        on_error(error)
    outcomes: Iterable[_Checked | InputError]
    # checking is CPU-bound: more workers than CPUs would only take memory
    workers, min_bytes = (usable_cpus(), AUTO_JOBS_MIN_BYTES) if jobs == "auto" else (jobs, 0)
    if workers > 1:
        workers = min(workers, usable_cpus())
    total = 0
    if workers > 1 and executor is None:
        total = sum(file_size(source.path) for source in sources if source.path is not None)
    stdin = any(source.path is None for source in sources)
    if executor is not None:
        outcomes = executor.outcomes(sources, policy, fail_under, settings)
    elif workers > 1 and (stdin or total >= min_bytes):
        outcomes = _parallel(
            sources, policy, fail_under, settings, jobs=workers, total=total, min_bytes=min_bytes
        )
    else:
        validator = Validator(policy, fail_under)
        outcomes = (o for source in sources for o in _outcomes(validator, source, settings))
    ids = TraceIds()
    for outcome in outcomes:
        if isinstance(outcome, InputError):
            on_error(outcome)
            continue
        try:
            ids.check_id(outcome.trace_id, outcome.source, outcome.line, outcome.id_pointer)
        except InputError as exc:
            on_error(exc)
            continue
        if isinstance(outcome.result, InputError):
            on_error(outcome.result)
            continue
        ids.add_id(outcome.trace_id, outcome.where)
        if guard is not None:
            guard.matched()
        result = outcome.result
        if judge is not None and outcome.trace is not None:
            result = judge(outcome.trace, result)
        if on_trace is not None and outcome.trace is not None:
            on_trace(outcome.trace, result)
        yield result
    if guard is not None:
        guard.finish()


def sorted_errors(errors: Iterable[InputError]) -> tuple[InputError, ...]:
    """Input errors in report order: by source, then line."""
    return tuple(sorted(errors, key=lambda e: (e.source or "", e.line or 0)))


def run_validation(
    policy: Policy,
    inputs: Sequence[str],
    *,
    fmt: str = "auto",
    fail_under: float = 70.0,
    on_error: Callable[[InputError], None] | None = None,
    messages_at: str | None = None,
    trace_id_at: Sequence[str] = (),
    on_trace: Callable[[Trace, TraceReport], None] | None = None,
    jobs: int | Literal["auto"] = 1,
    task_key: str | None = None,
    outcome_at: str | None = None,
    max_input_bytes: int = DEFAULT_MAX_INPUT,
    agent_name: str | None = None,
    workflow: str | None = None,
    executor: Executor | None = None,
    expectations: Expectations | None = None,
) -> RunReport:
    """Validate every trace found in ``inputs`` and collect the run's report.

    ``messages_at`` and ``trace_id_at`` are JSON pointers into each transcript record: where
    its messages are, and the parts of its trace id (joined with ``-``). ``on_trace`` is called
    with each trace and its report, in report order (the HTML report keeps some traces this way).
    ``task_key`` and ``outcome_at`` are JSON pointers into each canonical trace: its task and
    its success label, recorded in its report (``task``, ``outcome``) for the statistics.
    ``max_input_bytes`` is the most one input may hold (see :func:`iter_reports`), which also
    says when :class:`UnmatchedPointerError` is raised.
    ``agent_name`` and ``workflow``, when given, replace those of every trace; ``executor``
    checks the traces elsewhere (see :func:`iter_reports`); ``expectations`` give the expected
    outcome of traces that carry none.
    """
    errors: list[InputError] = []

    def fail(error: InputError) -> None:
        errors.append(error)
        if on_error is not None:
            on_error(error)

    reports = tuple(
        iter_reports(
            policy,
            inputs,
            fmt=fmt,
            fail_under=fail_under,
            on_error=fail,
            messages_at=messages_at,
            trace_id_at=trace_id_at,
            on_trace=on_trace,
            jobs=jobs,
            task_key=task_key,
            outcome_at=outcome_at,
            max_input_bytes=max_input_bytes,
            agent_name=agent_name,
            workflow=workflow,
            executor=executor,
            expectations=expectations,
        )
    )
    return RunReport(
        reports,
        sorted_errors(errors),
        policy.policy_id,
        policy.sha256,
        __version__,
        policy.rules.choices(),
    )
