"""The span-based formats, ``otel-genai`` and ``openinference``: OTLP/JSON exports, one trace per
trace id.

With ``--format auto`` each trace (each group of spans with one trace id) is read as
``openinference`` when one of its spans has an ``openinference.span.kind`` attribute, and as
``otel-genai`` otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Final

from agent_reliability_harness.adapters import openinference, otel_genai
from agent_reliability_harness.adapters._options import RecordOptions
from agent_reliability_harness.adapters._otlp import Dialect, Span, group, span_traces
from agent_reliability_harness.errors import InputError
from agent_reliability_harness.model.trace import Trace

__all__ = ["DIALECTS", "convert", "export_format"]

DIALECTS: Final = {
    otel_genai.FORMAT: Dialect(
        otel_genai.FORMAT,
        otel_genai.view,
        otel_genai.NAMESPACES,
        otel_genai.AGENT_NAME,
        otel_genai.WORKFLOW,
        otel_genai.deprecated_names,
    ),
    openinference.FORMAT: Dialect(
        openinference.FORMAT,
        openinference.view,
        openinference.NAMESPACES,
        openinference.AGENT_NAME,
        openinference.WORKFLOW,
    ),
}


def _is_openinference(spans: Iterable[Span]) -> bool:
    return any(openinference.KIND in span.attributes for span in spans)


def export_format(document: Any) -> str:
    """The format ``--format auto`` names for a whole export request (each trace in it is still
    decided on its own)."""
    groups, _ = group([(None, document)])
    return "openinference" if any(_is_openinference(g) for g in groups) else "otel-genai"


def convert(
    parts: Iterable[tuple[int | None, Any]], fmt: str, options: RecordOptions
) -> Iterator[tuple[int | None, Trace | InputError]]:
    """One ``(line, trace or error)`` per trace of the export requests ``parts`` (each with its
    JSON Lines line, or None), in ``fmt`` or, for ``auto``, the format of each trace."""

    def pick(spans: list[Span]) -> Dialect:
        if fmt in DIALECTS:
            return DIALECTS[fmt]
        return DIALECTS["openinference" if _is_openinference(spans) else "otel-genai"]

    return span_traces(parts, pick, options)
