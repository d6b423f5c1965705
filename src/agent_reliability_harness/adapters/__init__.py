"""Turning input documents into canonical traces, by format name or by detection.

``FORMATS`` maps each ``--format`` name to its adapter. Every adapter is total: for any decoded
JSON value it returns a :class:`Trace` or raises :class:`InputError`; what it cannot map is kept
as notes under ``metadata.adapter.notes`` (see docs/adapters.md).

A document is one record, or an array of records (each a canonical trace or a transcript record
such as ``{"task_id": 3, "traj": [...]}``); :func:`to_traces` yields one result per record.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from agent_reliability_harness._formats import FORMAT_NAMES
from agent_reliability_harness._record import replace
from agent_reliability_harness.adapters._options import MESSAGE_KEYS, RecordOptions
from agent_reliability_harness.errors import InputError
from agent_reliability_harness.model.trace import Trace

TYPE_CHECKING = False  # `typing` costs milliseconds at start-up; only type checkers need it
if TYPE_CHECKING:
    from typing import Any, Final

    Adapter = Callable[[Any, RecordOptions], Trace]
__all__ = ["FORMATS", "RecordOptions", "detect_format", "to_trace", "to_traces"]


def _canonical(value: Any, options: RecordOptions | None = None) -> Trace:  # noqa: ARG001
    """A canonical trace is parsed as it is; the record options apply to transcripts only."""
    return Trace.from_dict(value)


# The transcript adapters are imported on first use: reading canonical traces does not need them.


def _openai_chat(value: Any, options: RecordOptions) -> Trace:
    from agent_reliability_harness.adapters import openai_chat

    return openai_chat.convert(value, options)


def _anthropic_messages(value: Any, options: RecordOptions) -> Trace:
    from agent_reliability_harness.adapters import anthropic_messages

    return anthropic_messages.convert(value, options)


def _cohere_chat(value: Any, options: RecordOptions) -> Trace:
    from agent_reliability_harness.adapters import cohere_chat

    return cohere_chat.convert(value, options)


# Format name -> adapter, in the order `--format` lists them (the names are FORMAT_NAMES).
FORMATS: Final[Mapping[str, Adapter]] = dict(
    zip(FORMAT_NAMES, (_canonical, _openai_chat, _anthropic_messages, _cohere_chat), strict=True)
)


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
            f"unknown trace format {name!r} (expected one of {', '.join(FORMATS)})", pointer=None
        )
    return adapter(value, options)


def _is_record_array(document: list[Any], options: RecordOptions) -> bool:
    """An array of records, rather than one message list?"""
    if options.messages_at is not None:
        return options.messages_at != ""
    return (
        bool(document)
        and all(type(item) is dict and "role" not in item for item in document)
        and any(key in item for item in document for key in ("steps", *MESSAGE_KEYS))
    )


def to_traces(
    document: Any, fmt: str = "auto", options: RecordOptions | None = None
) -> Iterator[tuple[str, Trace | InputError]]:
    """One ``(pointer, trace or error)`` per record of a document, in document order.

    ``pointer`` locates the record in the document (``""`` for the document itself, ``/3`` for
    the fourth record of an array); an error's pointer already includes it. A record without an
    id of its own is named ``options.default_id``, followed by ``#<index>`` in an array.
    """
    options = options or RecordOptions()
    if type(document) is list and _is_record_array(document, options):
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
