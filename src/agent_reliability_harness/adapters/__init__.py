"""Turning input documents into canonical traces, by format name or by detection.

``FORMATS`` maps each ``--format`` name to its adapter. Every adapter is total: for any decoded
JSON value it returns a :class:`Trace` or raises :class:`InputError`; what it cannot map is kept
as notes under ``metadata.adapter.notes`` (see docs/adapters.md).

A document is one record, or an array of records (each a canonical trace or a transcript record
such as ``{"task_id": 3, "traj": [...]}``); :func:`to_traces` yields one result per record. An
OpenTelemetry export request (``otel-genai``, ``openinference``) holds the spans of any number of
traces: :func:`to_traces` yields one result per trace id, and :func:`span_traces` groups the
spans of several requests (the lines of a JSON Lines export file) before converting them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from typing import Any, Final

from agent_reliability_harness._formats import FORMAT_NAMES, SPAN_FORMAT_NAMES
from agent_reliability_harness.adapters._options import MESSAGE_KEYS, RecordOptions
from agent_reliability_harness.errors import InputError, excerpt
from agent_reliability_harness.model.trace import Trace

Adapter = Callable[[Any, RecordOptions], Trace]

__all__ = [
    "FORMATS",
    "RecordOptions",
    "detect_format",
    "is_span_export",
    "span_traces",
    "to_trace",
    "to_traces",
]


def _canonical(value: Any, options: RecordOptions | None = None) -> Trace:  # noqa: ARG001
    """A canonical trace is parsed as it is; the record options apply to transcripts only."""
    return Trace.from_dict(value)


# The transcript adapters are imported on first use: reading canonical traces does not need them
# (eager, format detection and the span adapters measured +8 and +15 ms of every `arh validate`).


def _openai_chat(value: Any, options: RecordOptions) -> Trace:
    from agent_reliability_harness.adapters import openai_chat

    return openai_chat.convert(value, options)


def _anthropic_messages(value: Any, options: RecordOptions) -> Trace:
    from agent_reliability_harness.adapters import anthropic_messages

    return anthropic_messages.convert(value, options)


def _cohere_chat(value: Any, options: RecordOptions) -> Trace:
    from agent_reliability_harness.adapters import cohere_chat

    return cohere_chat.convert(value, options)


def _one_span_trace(value: Any, fmt: str, options: RecordOptions) -> Trace:
    """The one trace of an OTLP export (see :func:`to_traces` for exports of several)."""
    results = [r for _, r in span_traces([(None, value)], fmt, options)]
    if len(results) == 1:
        if isinstance(results[0], InputError):
            raise results[0]
        return results[0]
    raise InputError(
        f"the export holds {len(results)} traces (or errors), not one; read it with to_traces",
        pointer="",
    )


def _otel_genai(value: Any, options: RecordOptions) -> Trace:
    return _one_span_trace(value, "otel-genai", options)


def _openinference(value: Any, options: RecordOptions) -> Trace:
    return _one_span_trace(value, "openinference", options)


def _openai_responses(value: Any, options: RecordOptions) -> Trace:
    from agent_reliability_harness.adapters import openai_responses

    return openai_responses.convert(value, options)


def _gemini(value: Any, options: RecordOptions) -> Trace:
    from agent_reliability_harness.adapters import gemini

    return gemini.convert(value, options)


def _bedrock_converse(value: Any, options: RecordOptions) -> Trace:
    from agent_reliability_harness.adapters import bedrock_converse

    return bedrock_converse.convert(value, options)


# Format name -> adapter, in the order `--format` lists them (the names are FORMAT_NAMES). The
# span formats' entries read an export holding one trace; to_traces reads any export.
FORMATS: Final[Mapping[str, Adapter]] = dict(
    zip(
        FORMAT_NAMES,
        (
            _canonical,
            _openai_chat,
            _anthropic_messages,
            _cohere_chat,
            _otel_genai,
            _openinference,
            _openai_responses,
            _gemini,
            _bedrock_converse,
        ),
        strict=True,
    )
)


def is_span_export(value: Any, fmt: str = "auto") -> bool:
    """Is ``value`` read as an OpenTelemetry export in format ``fmt``? (``auto``: an object
    with ``resourceSpans``.) Cheap: nothing is imported."""
    if fmt in SPAN_FORMAT_NAMES:
        return True
    return (
        fmt == "auto"
        and type(value) is dict
        and ("resourceSpans" in value or "resource_spans" in value)
    )


def span_traces(
    parts: Iterable[tuple[int | None, Any]], fmt: str = "auto", options: RecordOptions | None = None
) -> Iterator[tuple[int | None, Trace | InputError]]:
    """One ``(line, trace or error)`` per trace id in the export requests ``parts`` (each with
    the line of a JSON Lines file it was read from, or None); the spans of one trace may be
    spread over several requests. ``line`` is the first line holding the trace's spans, or the
    line of the request or span an error is about."""
    from agent_reliability_harness.adapters import spans

    return spans.convert(parts, fmt, options or RecordOptions())


def detect_format(value: Any, options: RecordOptions | None = None) -> str:
    """Name the format of a decoded record (see adapters/detect.py)."""
    if (
        type(value) is dict
        and "steps" in value
        and (options is None or options.messages_at is None)
    ):
        return "arh"
    from agent_reliability_harness.adapters import detect

    return detect.detect_format(value, options or RecordOptions())


def to_trace(value: Any, fmt: str = "auto", options: RecordOptions | None = None) -> Trace:
    """Build a canonical trace from one record in format ``fmt`` (or ``auto``)."""
    options = options or RecordOptions()
    name = detect_format(value, options) if fmt == "auto" else fmt
    adapter = FORMATS.get(name)
    if adapter is None:
        raise InputError(
            f"unknown trace format {excerpt(name)} (expected one of {', '.join(FORMATS)})",
            pointer=None,
        )
    return adapter(value, options)


def _is_record_array(document: list[Any], options: RecordOptions) -> bool:
    """An array of records, rather than one message list?"""
    if options.messages_at is not None:
        return options.messages_at != ""
    from agent_reliability_harness.adapters.detect import record_format

    return (
        bool(document)
        and all(type(item) is dict and "role" not in item for item in document)
        and any(
            any(key in item for key in ("steps", *MESSAGE_KEYS)) or record_format(item) is not None
            for item in document
        )  # records: traces, wrapped message lists, or objects that name their format (a
    )  # Response, a Gemini or Bedrock response)


def to_traces(
    document: Any, fmt: str = "auto", options: RecordOptions | None = None
) -> Iterator[tuple[str, Trace | InputError]]:
    """One ``(pointer, trace or error)`` per record of a document, in document order.

    ``pointer`` locates the record in the document (``""`` for the document itself, ``/3`` for
    the fourth record of an array); an error's pointer already includes it. A record without an
    id of its own is named ``options.default_id``, followed by ``#<index>`` in an array.
    """
    options = options or RecordOptions()
    if is_span_export(document, fmt):  # even with --messages-at (span_traces refuses it)
        for _, result in span_traces([(None, document)], fmt, options):
            yield "", result
        return
    if type(document) is list and _is_record_array(document, options):
        if not document:  # only with --messages-at; like an empty JSON Lines file, an error
            yield "", InputError("the array of records is empty", pointer="")
            return
        for index, record in enumerate(document):
            named = replace(options, default_id=f"{options.default_id}#{index}")
            try:
                yield f"/{index}", to_trace(record, fmt, named)
            except InputError as exc:
                yield f"/{index}", exc.nested(index)
        return
    try:
        yield "", to_trace(document, fmt, options)
    except InputError as exc:
        yield "", exc
