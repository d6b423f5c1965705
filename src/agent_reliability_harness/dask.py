"""Checking traces on a Dask cluster: ``arh validate --executor dask`` and the Python API for
people already in Dask.

The only module of the package that imports ``dask``, ``distributed`` and ``fsspec`` (the
``dask`` extra: ``pip install 'agent-reliability-harness[dask]'``); the command line imports it
only for ``--executor dask``.

The workers read and check the inputs in units of work: whole files (in batches), and byte
ranges of a few megabytes of a JSON Lines input, cut by its size alone (the driver reads none of
it: a worker reads the lines that start in its range, numbered from the line feeds that the
workers count in the ranges before it, a few groups of ranges ahead), with the reading and
checking of one process (:mod:`agent_reliability_harness.runner`); the driver hands them out a
few at a time, takes their outcomes back in input order and reports them as one process does,
so the reports are byte for byte those of ``arh validate`` without Dask. Inputs may be local
paths (the workers must see them at the same path) or fsspec URLs (``s3://bucket/runs/*.jsonl``,
``gs://...``, ``file://...``, ``memory://...``), compressed ones (``.jsonl.gz``) included.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import posixpath
import sys
from collections import Counter, OrderedDict, deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import chain
from types import TracebackType
from typing import IO, Any, Final

import dask
import dask.bag
import fsspec
from dask.delayed import delayed
from distributed import Client, Future, LocalCluster
from fsspec.utils import infer_compression

from agent_reliability_harness import runner
from agent_reliability_harness._decode import check_json_values, check_tree
from agent_reliability_harness._formats import SPAN_FORMAT_NAMES
from agent_reliability_harness._version import __version__
from agent_reliability_harness.app.formats import output_formats
from agent_reliability_harness.engine import Validator
from agent_reliability_harness.errors import EVALUATION_ERROR, INFRASTRUCTURE_FAILURE, InputError
from agent_reliability_harness.io import (
    ByteRange,
    Document,
    Source,
    Spool,
    cannot_read,
    count_breaks,
    expand_inputs,
    file_breaks,
    is_jsonl_name,
    is_regular_file,
    no_records,
    range_documents,
    read_range,
    stream_documents,
    utf8_name,
    write_atomic,
)
from agent_reliability_harness.io.load import (
    StepLines,
    file_size,
    is_span_export_file,
    load_policy,
    names_spans,
)
from agent_reliability_harness.io.read import _display, _tell_apart
from agent_reliability_harness.model.policy import Policy
from agent_reliability_harness.model.report import RunSummary, SummaryBuilder, TraceReport
from agent_reliability_harness.render.outputs import WriterOptions
from agent_reliability_harness.runner import (
    TraceIds,
    _base,
    _Checked,
    _checked,
    _Settings,
    _too_deep,
    _Unit,
    _unit_outcomes,
    _units,
    sorted_errors,
    usable_cpus,
)

__all__ = ["DaskExecutor", "validate_bag", "write_reports"]

# names a JSON Lines or JSON object may have, before a compression suffix
_TRACE_SUFFIXES: Final = (".json", ".jsonl", ".ndjson")


def _is_url(arg: str) -> bool:
    return "://" in arg


@dataclass(frozen=True, slots=True)
class _Object(Source):
    """An input read through fsspec: an object of a store (``path`` is its URL), or a local
    file that is compressed. ``compression`` is fsspec's name of it (``gzip``), or None."""

    compression: str | None = None
    size: int = 0


@dataclass(frozen=True, slots=True)
class _ObjectUnit:
    """Work for one worker: whole objects."""

    sources: tuple[_Object, ...]


@dataclass(frozen=True, slots=True)
class _Range:
    """Work for one worker from a JSON Lines input (a local file or an object) cut by size
    alone: the lines that start in one byte range of it (see :class:`ByteRange`), its
    ``index``-th of ``count`` ranges of ``step`` bytes; ``part.breaks`` is filled in by the
    driver before it hands the range out."""

    source: Source
    part: ByteRange
    index: int
    count: int
    step: int

    @property
    def last(self) -> bool:
        return self.index == self.count - 1


_AnyUnit = _Unit | _ObjectUnit | _Range


def _open(source: _Object) -> IO[bytes]:
    opened: IO[bytes] = fsspec.open(source.path, "rb", compression=source.compression).open()
    return opened


def _object_documents(source: _Object, limit: int) -> Iterator[Document | InputError]:
    """The documents of an object, read as a local file is read; a problem reading it is the
    same input error as a local file's."""
    try:
        with _open(source) as stream:
            yield from stream_documents(source, stream, limit)
    except OSError as exc:
        yield cannot_read(source.name, exc)
    except Exception as exc:  # noqa: BLE001 - a store's client raises errors of its own
        yield InputError(f"cannot read: {exc}", pointer=None, source=source.name)


def _object_outcomes(
    validator: Validator, settings: _Settings, unit: _ObjectUnit
) -> Iterator[_Checked | InputError]:
    limit = settings.max_input
    return chain.from_iterable(
        _checked(validator, _object_documents(s, limit), _base(s), settings) for s in unit.sources
    )


def _range_documents(
    source: Source, part: ByteRange, limit: int, tally: list[int]
) -> Iterator[Document | InputError]:
    if not isinstance(source, _Object):
        yield from read_range(source, part, tally, limit)
        return
    try:
        with _open(source) as stream:
            yield from range_documents(source, stream, part, tally, limit)
    except OSError as exc:
        yield cannot_read(source.name, exc)
    except Exception as exc:  # noqa: BLE001 - a store's client raises errors of its own
        yield InputError(f"cannot read: {exc}", pointer=None, source=source.name)


def _outcomes(
    validator: Validator, settings: _Settings, unit: _AnyUnit, tally: list[int]
) -> Iterator[_Checked | InputError]:
    if isinstance(unit, _Range):
        documents = _range_documents(unit.source, unit.part, settings.max_input, tally)
        return _checked(validator, documents, _base(unit.source), settings)
    if isinstance(unit, _ObjectUnit):
        return _object_outcomes(validator, settings, unit)
    return _unit_outcomes(validator, settings, unit, tally)


def _count(source: Source, spans: tuple[tuple[int, int], ...]) -> list[int]:
    """On a worker: the line feeds in each of a few consecutive byte ranges of an input."""
    if isinstance(source, _Object):
        with _open(source) as stream:
            return [count_breaks(stream, offset, length) for offset, length in spans]
    assert source.path is not None
    return [file_breaks(source.path, offset, length) for offset, length in spans]


_COUNT_GROUP: Final = 8  # ranges whose line feeds one task counts
_COUNT_AHEAD: Final = 2  # groups counted ahead of the ranges handed out


class _Breaks:
    """The line feeds before each byte range of one input, counted on the workers a group of
    ranges at a time (ahead of the ranges handed out, and before them: counting is cheap), so
    that a worker numbers the lines of its range as one process reading the whole input does,
    and the driver reads none of it."""

    def __init__(self, client: Client, first: _Range) -> None:
        self._client = client
        self._source = first.source
        step = first.step
        self._spans = [(i * step, step) for i in range(first.count - 1)]  # (the last: none)
        self._groups: list[Future[Any]] = []
        self._known = [0]  # the line feeds before range i, for each i < len(_known)
        self.error: BaseException | None = None

    def _ask(self, groups: int) -> None:
        while len(self._groups) < groups and len(self._groups) * _COUNT_GROUP < len(self._spans):
            start = len(self._groups) * _COUNT_GROUP
            spans = tuple(self._spans[start : start + _COUNT_GROUP])
            job = self._client.submit(_count, self._source, spans, pure=False, priority=1)
            self._groups.append(job)

    def before(self, index: int) -> int | None:
        """The line feeds before range ``index``, or None when they could not be counted
        (``error`` says why)."""
        if self.error is not None:
            return None
        needed = (index + _COUNT_GROUP - 1) // _COUNT_GROUP  # groups of the ranges before it
        self._ask(needed + _COUNT_AHEAD)
        while len(self._known) <= index:
            job = self._groups[(len(self._known) - 1) // _COUNT_GROUP]
            try:
                counts: list[int] = job.result()
            except Exception as exc:  # noqa: BLE001 - reported as the input's read error
                self.error = exc
                return None
            finally:
                job.release()
            for breaks in counts:
                self._known.append(self._known[-1] + breaks)
        return self._known[index]

    def close(self) -> None:
        for job in self._groups:
            job.release()


def _read_error(name: str, exc: BaseException) -> InputError:
    if isinstance(exc, OSError):
        return cannot_read(name, exc)
    return InputError(f"cannot read: {exc}", pointer=None, source=name)


def _is_read_error(outcome: _Checked | InputError, name: str) -> bool:
    return (
        isinstance(outcome, InputError)
        and outcome.source == name
        and outcome.pointer is None
        and outcome.line is None
        and outcome.message.startswith("cannot read")
    )


# The validators of this worker process, by run: the policy is compiled once per worker (the
# few latest runs are kept, for a cluster that several runs share), and counted.
_VALIDATORS: OrderedDict[str, tuple[Validator, _Settings]] = OrderedDict()
_KEPT_RUNS: Final = 4
COMPILED: Counter[str] = Counter()  # how many times this process compiled each run's policy


def _validator(token: str, blob: bytes) -> tuple[Validator, _Settings]:
    found = _VALIDATORS.get(token)
    if found is None:
        policy, fail_under, settings, digits = pickle.loads(blob)  # noqa: S301 - our own bytes
        # the longest integer JSON may hold is the driver's
        sys.set_int_max_str_digits(digits)
        found = _VALIDATORS[token] = (Validator(policy, fail_under), settings)
        COMPILED[token] += 1
        while len(_VALIDATORS) > _KEPT_RUNS:
            _VALIDATORS.popitem(last=False)
    return found


def _run(token: str, blob: bytes, unit: _AnyUnit) -> tuple[list[_Checked | InputError], int]:
    """Check a unit on a worker: its outcomes, and the records of a chunk."""
    validator, settings = _validator(token, blob)
    tally = [0]
    return list(_outcomes(validator, settings, unit, tally)), tally[0]


def _run_blob(policy: Policy, fail_under: float, settings: _Settings) -> tuple[str, bytes]:
    blob = pickle.dumps((policy, fail_under, settings, sys.get_int_max_str_digits()))
    return hashlib.sha256(blob).hexdigest(), blob


def _has_magic(path: str) -> bool:
    return any(character in path for character in "*?[")


def _trace_object_name(path: str) -> bool:
    name = posixpath.basename(path)
    if name.startswith("."):
        return False
    stem = name if infer_compression(name) is None else posixpath.splitext(name)[0]
    return stem.lower().endswith(_TRACE_SUFFIXES)


def _object(name: str, path: str, relative: str, size: int) -> _Object:
    """An object; one that is compressed is read, and names its traces, as the file it holds
    (``runs.jsonl.gz``: JSON Lines, its transcripts without an id ``runs:<line>``)."""
    compression = infer_compression(path)
    if compression is not None:
        path_stem, relative = posixpath.splitext(path)[0], posixpath.splitext(relative)[0]
    else:
        path_stem = path
    return _Object(name, path, is_jsonl_name(path_stem), relative, compression, size)


def _expand_url(arg: str) -> tuple[list[_Object], list[InputError]]:
    """The objects an fsspec URL names: one object, the trace files below a directory
    (searched recursively, as a local directory is), or the objects a glob matches."""
    name = utf8_name(arg)
    try:
        fs, path = fsspec.core.url_to_fs(arg)
        if _has_magic(path):
            found = fs.glob(path, detail=True)
            return [
                _object(fs.unstrip_protocol(p), fs.unstrip_protocol(p), posixpath.basename(p), s)
                for p, info in sorted(found.items())
                if info.get("type") == "file" and (s := int(info.get("size") or 0)) >= 0
            ], ([] if found else [InputError("no object matches", pointer=None, source=name)])
        if fs.isdir(path):
            root = path.rstrip("/")
            files = [
                (p, info)
                for p, info in sorted(fs.find(path, detail=True).items())
                if _trace_object_name(p)
                and not any(part.startswith(".") for part in p[len(root) :].split("/"))
            ]
            if not files:
                return [], [
                    InputError(
                        "the directory contains no .json, .jsonl or .ndjson files",
                        pointer=None,
                        source=name,
                    )
                ]
            return [
                _object(
                    fs.unstrip_protocol(p),
                    fs.unstrip_protocol(p),
                    posixpath.relpath(p, root),
                    int(info.get("size") or 0),
                )
                for p, info in files
            ], []
        if not fs.exists(path):
            return [], [InputError("no such file or directory", pointer=None, source=name)]
        return [_object(name, arg, posixpath.basename(path), int(fs.size(path) or 0))], []
    except OSError as exc:
        return [], [cannot_read(name, exc)]
    except Exception as exc:  # noqa: BLE001 - a store's client raises errors of its own
        return [], [InputError(f"cannot read: {exc}", pointer=None, source=name)]


def expand(inputs: Sequence[str]) -> tuple[list[Source], list[InputError]]:
    """The sources of the command line's inputs, in the order one process reads them: local
    paths as :func:`agent_reliability_harness.io.expand_inputs` finds them (a local file with
    a compression suffix, ``runs.jsonl.gz``, is read through fsspec), and the objects that
    fsspec URLs name; sorted by name."""
    local = [
        arg for arg in inputs if not _is_url(arg) and (arg == "-" or infer_compression(arg) is None)
    ]
    found, errors = expand_inputs(local)
    sources: dict[str, Source] = {source.name: source for source in found}
    origins: dict[str, str] = {}
    for source in found:
        origins[source.name] = source.name  # (expand_inputs told its own sources apart)
    for arg in inputs:
        if arg in local:
            continue
        if _is_url(arg):
            objects, problems = _expand_url(arg)
        elif os.path.isfile(arg):
            size = file_size(arg)
            objects, problems = [_object(_display(arg), arg, os.path.basename(arg), size)], []
        else:
            objects = []
            problems = [InputError("no such file or directory", pointer=None, source=_display(arg))]
        errors.extend(problems)
        for item in objects:
            if item.name not in sources:
                sources[item.name] = item
                origins[item.name] = arg
    if len(origins) > len(found):  # objects among them: their default ids must not meet
        _tell_apart(sources, origins)
    return [sources[key] for key in sorted(sources)], errors


def _object_batches(sources: Sequence[_Object], chunk_bytes: int) -> Iterator[_ObjectUnit]:
    """Objects read whole (compressed, OTLP exports, JSON documents) as units, in batches."""
    batch: list[_Object] = []
    size = 0
    for source in sources:
        batch.append(source)
        size += source.size
        if size >= chunk_bytes or len(batch) >= 64:
            yield _ObjectUnit(tuple(batch))
            batch, size = [], 0
    if batch:
        yield _ObjectUnit(tuple(batch))


def _spans(source: _Object, fmt: str) -> bool:
    """Is this JSON Lines object read as OTLP export requests (one unit: a trace's spans may be
    on several lines)?"""
    if fmt != "auto":
        return fmt in SPAN_FORMAT_NAMES
    try:
        with _open(source) as stream:
            head = stream.read(1 << 16)
    except Exception:  # noqa: BLE001 - reading it again reports the problem
        return False
    return names_spans(head)


def _size(source: Source) -> int:
    if isinstance(source, _Object):
        return source.size
    assert source.path is not None
    return file_size(source.path)


def _splits(source: Source, fmt: str) -> bool:
    """Is this input JSON Lines that workers read in byte ranges (not compressed, not a pipe,
    not OTLP export requests, whose traces may span lines)?"""
    if not source.jsonl or source.path is None:
        return False
    if isinstance(source, _Object):
        return source.compression is None and not _spans(source, fmt)
    return is_regular_file(source.path) and not is_span_export_file(source.path, fmt)


def _ranges(source: Source, range_bytes: int) -> Iterator[_Range]:
    """A JSON Lines input in byte ranges of ``range_bytes``, cut by its size alone (none of it
    is read here); the last range reads to the end, whatever the size has become."""
    count = max(1, -(-_size(source) // range_bytes))
    for index in range(count):
        part = ByteRange(index * range_bytes, -1 if index == count - 1 else range_bytes)
        yield _Range(source, part, index, count, range_bytes)


def _all_units(
    sources: Sequence[Source], fmt: str, chunk_bytes: int, limit: int
) -> Iterator[_AnyUnit]:
    """Units of work for the sources, in order: JSON Lines in byte ranges, other objects in
    batches, other local inputs as ``--jobs`` hands them out."""
    run: list[Source] = []  # consecutive inputs that are not cut in ranges, of one kind

    def flush() -> Iterator[_AnyUnit]:
        if run and isinstance(run[0], _Object):
            yield from _object_batches([s for s in run if isinstance(s, _Object)], chunk_bytes)
        elif run:
            yield from _units(run, fmt, chunk_bytes, limit)
        run.clear()

    for source in sources:
        if _splits(source, fmt):
            yield from flush()
            yield from _ranges(source, chunk_bytes)
            continue
        if run and isinstance(run[0], _Object) != isinstance(source, _Object):
            yield from flush()
        run.append(source)
    yield from flush()


def _for_worker(unit: _AnyUnit) -> bool:
    return isinstance(unit, _ObjectUnit | _Range) or unit.for_worker


class DaskExecutor:
    """``--executor dask``: a client of the scheduler at ``scheduler`` (``tcp://host:8786``),
    or of a ``LocalCluster`` of ``workers`` processes (default: one per CPU the process may
    use) started for the run. The client (and the cluster) is opened when the traces are first
    checked and closed when they are all checked; used as a context manager, it stays open
    until the block ends. :meth:`on` uses a client the caller opened (and closes)."""

    def __init__(self, scheduler: str | None = None, workers: int | None = None) -> None:
        self._scheduler = scheduler
        self._workers = workers
        self._cluster: LocalCluster | None = None
        self._client: Client | None = None
        self._owned = False  # the client is this executor's to close

    @classmethod
    def on(cls, client: Client) -> DaskExecutor:
        """An executor on a client the caller opened (and closes)."""
        executor = cls()
        executor._client = client
        return executor

    def __enter__(self) -> DaskExecutor:
        if self._client is None:
            if self._scheduler is None:
                # Dask's statistical profiler samples the running task's stack every 10 ms
                # for a dashboard this cluster does not have, at a cost to every check
                with dask.config.set({"distributed.worker.profile.enabled": False}):
                    self._cluster = LocalCluster(
                        n_workers=self._workers or usable_cpus(),
                        threads_per_worker=1,  # checking is CPU-bound: one thread per process
                        processes=True,
                        dashboard_address=None,
                        silence_logs=logging.ERROR,  # the console report is the only output
                    )
                # the workers are on this machine: outcomes come from them, not through the
                # scheduler (which runs in this process)
                self._client = Client(self._cluster, direct_to_workers=True)
            else:
                self._client = Client(self._scheduler)
            self._owned = True
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if not self._owned:
            return
        client, cluster = self._client, self._cluster
        self._client, self._cluster, self._owned = None, None, False
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()

    def expand(self, inputs: Sequence[str]) -> tuple[list[Source], list[InputError]]:
        return expand(inputs)

    def outcomes(
        self, sources: Sequence[Source], policy: Policy, fail_under: float, settings: _Settings
    ) -> Iterator[_Checked | InputError]:
        """The outcomes of every source in input order, computed on the cluster: a few units
        of work per worker thread in flight, taken back in order, so the driver holds no more
        than those. A unit whose task failed (a worker lost more often than Dask retries it),
        or whose values were nested too deeply for a worker's stack, is done again here, as
        one process does it."""
        opened = self._client is None
        if opened:
            self.__enter__()
        try:
            yield from self._outcomes(sources, policy, fail_under, settings)
        finally:
            if opened:
                self.__exit__(None, None, None)

    def _outcomes(
        self, sources: Sequence[Source], policy: Policy, fail_under: float, settings: _Settings
    ) -> Iterator[_Checked | InputError]:
        client = self._client
        assert client is not None
        token, blob = _run_blob(policy, fail_under, settings)
        threads = max(1, sum(client.nthreads().values()))
        local = Validator(policy, fail_under)  # for what this process checks itself
        total = sum(
            s.size if isinstance(s, _Object) else file_size(s.path)
            for s in sources
            if s.path is not None
        )
        # (read from the runner when used, as --jobs reads them)
        chunk_bytes = min(runner._CHUNK_BYTES, max(runner._MIN_CHUNK_BYTES, total // (4 * threads)))
        units = _all_units(sources, settings.fmt, chunk_bytes, settings.max_input)
        pending: deque[tuple[_AnyUnit, Future[Any] | BaseException | None]] = deque()
        records = 0  # of the JSON Lines input being read in chunks or ranges
        broken = False  # reading it failed: the rest of it is not reported
        counted: _Breaks | None = None  # the line feeds before its ranges

        def submit() -> None:
            nonlocal counted
            unit = next(units, None)
            if unit is None:
                return
            if isinstance(unit, _Range):
                if unit.index == 0:
                    if counted is not None:
                        counted.close()
                    counted = _Breaks(client, unit)
                assert counted is not None
                breaks = counted.before(unit.index)
                if breaks is None:
                    assert counted.error is not None
                    pending.append((unit, counted.error))
                    return
                unit = replace(unit, part=replace(unit.part, breaks=breaks))
            job = client.submit(_run, token, blob, unit, pure=False) if _for_worker(unit) else None
            pending.append((unit, job))

        try:
            for _ in range(2 * threads):
                submit()
            while pending:
                unit, job = pending.popleft()
                submit()
                outcomes: list[_Checked | InputError] | None = None
                count = 0
                if isinstance(job, BaseException):  # its lines could not be counted
                    outcomes = [] if broken else [_read_error(_name(unit), job)]
                elif job is not None:
                    try:
                        outcomes, count = job.result()
                    except Exception:  # noqa: BLE001 - whatever it was, this process has the answer
                        outcomes = None
                    finally:
                        job.release()
                    if outcomes is not None and any(map(_too_deep, outcomes)):
                        outcomes = None
                if outcomes is None:
                    tally = [0]
                    outcomes = list(_outcomes(local, settings, unit, tally))
                    count = tally[0]
                if not broken:
                    yield from outcomes
                    if isinstance(unit, _Range) or isinstance(job, BaseException):
                        broken = any(_is_read_error(o, _name(unit)) for o in outcomes)
                if isinstance(unit, _Range) or (isinstance(unit, _Unit) and unit.chunk):
                    records += count
                    if unit.last:
                        if not records and not broken:
                            yield no_records(_name(unit))
                        records, broken = 0, False
        finally:
            if counted is not None:
                counted.close()


def _name(unit: _AnyUnit) -> str:
    return unit.source.name if isinstance(unit, _Range) else unit.sources[0].name


# ---------------------------------------------------------------------------------------------
# The Python API: a bag of records in, a bag of report dicts out


def _bag_partition(
    records: Iterable[Any], index: int, token: str, blob: bytes
) -> list[dict[str, Any]]:
    validator, settings = _validator(token, blob)
    name = f"<bag partition {index}>"
    out: list[dict[str, Any]] = []
    documents: list[Document | InputError] = []
    for line, record in enumerate(records, 1):
        try:
            check_tree(record, "")
            check_json_values(record, "")
        except InputError as exc:
            documents.append(exc.located(name, line))
            continue
        documents.append(Document(name, line, record))
    for outcome in _checked(validator, documents, f"partition-{index}", settings):
        if isinstance(outcome, InputError):
            out.append({"input_error": outcome.to_dict()})
        elif isinstance(outcome.result, InputError):
            out.append({"input_error": outcome.result.to_dict()})
        else:
            out.append(outcome.result.to_dict())
    return out


def _as_policy(policy: Policy | str | os.PathLike[str]) -> Policy:
    return policy if isinstance(policy, Policy) else load_policy(os.fspath(policy))


def validate_bag(
    bag: dask.bag.Bag,
    policy: Policy | str | os.PathLike[str],
    *,
    fail_under: float = 70.0,
    format: str = "auto",
    messages_at: str | None = None,
    trace_id_at: Sequence[str] = (),
    agent_name: str | None = None,
    workflow: str | None = None,
    task_key: str | None = None,
    outcome_at: str | None = None,
) -> dask.bag.Bag:
    """A bag of report dicts (the ``reports`` entries of a JSON report) from a bag of trace
    dicts, or of raw transcript records read with the adapter options of ``arh validate``
    (``format``, ``messages_at``, ``trace_id_at``, ``agent_name``, ``workflow``, ``task_key``,
    ``outcome_at``). Lazy, as bags are; the policy is compiled once per worker.

    A record that cannot be read or checked gives ``{"input_error": {...}}`` in its place (the
    form of a report's ``input_errors``), located at ``<bag partition N>`` and the record's
    position in it (from 1); a transcript record without an id is named
    ``partition-N:<position>``. The records of a partition are read together as the lines of a
    JSON Lines file (OpenTelemetry export requests there are joined into traces).
    """
    settings = _Settings(
        format,
        messages_at,
        tuple(trace_id_at),
        sys.maxsize,
        keep_traces=False,
        task_key=task_key,
        outcome_at=outcome_at,
        agent_name=agent_name,
        workflow=workflow,
    )
    token, blob = _run_blob(_as_policy(policy), fail_under, settings)
    parts = [
        delayed(_bag_partition, pure=True)(part, index, token, blob)
        for index, part in enumerate(bag.to_delayed())
    ]
    reports: dask.bag.Bag = dask.bag.from_delayed(parts)
    return reports


def write_reports(
    reports: dask.bag.Bag,
    policy: Policy | str | os.PathLike[str],
    *,
    fail_under: float = 70.0,
    json_out: str | None = None,
    markdown_out: str | None = None,
    junit_out: str | None = None,
    sarif_out: str | None = None,
) -> RunSummary:
    """Write the report files of a bag from :func:`validate_bag` (as ``--json-out`` and the
    like write them), computing it a partition at a time in order, so that no more than one
    partition's reports are held here; returns the run's summary. A trace id seen twice is an
    input error, as in ``arh validate``."""
    loaded = _as_policy(policy)
    wanted = {"json": json_out, "markdown": markdown_out, "junit": junit_out, "sarif": sarif_out}
    options = WriterOptions(fail_under, StepLines())  # (bag records have no file lines)
    outputs = [
        (path, output.writer(options), Spool())
        for fmt in output_formats("validate")
        if (output := fmt.validate) is not None and (path := wanted.get(fmt.name))
    ]
    totals = SummaryBuilder()
    errors: list[InputError] = []
    ids = TraceIds()
    try:
        for part in reports.to_delayed():
            for item in part.compute():
                if "input_error" in item:
                    errors.append(_input_error(item["input_error"]))
                    continue
                report = TraceReport.from_dict(item)
                where = report.source_path or "<bag>"
                try:
                    ids.check_id(report.trace_id, where, report.source_line, "/trace_id")
                except InputError as exc:
                    errors.append(exc)
                    continue
                ids.add_id(report.trace_id, where)
                totals.add(report)
                for _, writer, spool in outputs:
                    spool.write(writer.add(report))
        summary = totals.build(
            sorted_errors(errors),
            loaded.policy_id,
            loaded.sha256,
            __version__,
            loaded.rules.choices(),
        )
        for path, writer, spool in outputs:
            write_atomic(path, [writer.head(summary), spool, writer.tail(summary)])
    finally:
        for _, _, spool in outputs:
            spool.close()
    return summary


def _input_error(data: dict[str, Any]) -> InputError:
    line = data.get("line")
    return InputError(
        str(data.get("message")),
        pointer=data.get("pointer"),
        source=data.get("source"),
        line=line if isinstance(line, int) else None,
        kind=INFRASTRUCTURE_FAILURE
        if data.get("kind") == INFRASTRUCTURE_FAILURE
        else EVALUATION_ERROR,
    )
