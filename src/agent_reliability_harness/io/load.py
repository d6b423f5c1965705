"""Reading the files besides the traces: the policy, saved reports, gate files and the
configuration file (and finding it); a trace file again for the line of each step (SARIF); and
what the pipeline and the command line ask of the file system before reading (a file's size,
whether it holds OpenTelemetry spans, which file a path names)."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Final

from agent_reliability_harness._formats import SPAN_FORMAT_NAMES
from agent_reliability_harness._json import decode_bytes, member_array_lines
from agent_reliability_harness.errors import InputError
from agent_reliability_harness.io.read import (
    DEFAULT_MAX_INPUT,
    cannot_read,
    is_regular_file,
    os_path,
    read_input_file,
    read_json_file,
)
from agent_reliability_harness.model.answers import Expectations
from agent_reliability_harness.model.policy import Policy
from agent_reliability_harness.model.report import RunReport, TraceReport

if TYPE_CHECKING:
    from agent_reliability_harness.regression.stat_gates import GateFile

__all__ = [
    "CONFIG_NAMES",
    "REPOSITORY_MARKERS",
    "StepLines",
    "config_candidates",
    "file_key",
    "file_size",
    "find_upwards",
    "is_span_export_file",
    "load_expectations",
    "load_gate_file",
    "load_policy",
    "load_report",
    "load_toml_text",
    "names_spans",
    "real_path",
    "step_lines",
]


def load_policy(
    path: str, *, allow_risky_patterns: bool = False, max_input_bytes: int = DEFAULT_MAX_INPUT
) -> Policy:
    """Read and parse a policy file of at most ``max_input_bytes``; errors name the file."""
    try:
        return Policy.from_dict(
            read_json_file(path, max_input_bytes), allow_risky_patterns=allow_risky_patterns
        )
    except InputError as exc:
        raise (exc if exc.source else exc.located(path)) from None


def load_expectations(path: str, max_input_bytes: int = DEFAULT_MAX_INPUT) -> Expectations:
    """Read and parse an expectations file (``--expect``) of at most ``max_input_bytes``; errors
    name the file."""
    try:
        return Expectations.from_dict(read_json_file(path, max_input_bytes))
    except InputError as exc:
        raise (exc if exc.source else exc.located(path)) from None


def load_gate_file(path: str, max_input_bytes: int = DEFAULT_MAX_INPUT) -> GateFile:
    """Read and parse a gate file (``arh.toml``) of at most ``max_input_bytes``; errors name
    the file (and line and key)."""
    # only --gates reads a gate file; eager, this measured +24 ms of every `arh validate`
    from agent_reliability_harness.regression.stat_gates import parse_gate_file

    return parse_gate_file(load_toml_text(path, max_input_bytes), path)


def load_toml_text(path: str, max_input_bytes: int = DEFAULT_MAX_INPUT) -> str:
    """The text of a TOML file (a gate file, a configuration file) of at most
    ``max_input_bytes``; errors name the file."""
    try:
        data = read_input_file(path, max_input_bytes)
        return decode_bytes(data, "TOML")  # as trace files are: a UTF-8 BOM dropped, UTF-16 named
    except OSError as exc:
        raise cannot_read(path, exc) from None
    except InputError as exc:
        raise exc.located(path) from None


# The configuration file's names: in one folder the first wins (as ruff's ruff.toml wins over its
# pyproject.toml, and pytest's pytest.ini over its pyproject.toml).
CONFIG_NAMES: Final = ("arh.toml", "pyproject.toml")
# The search stops at the root of the repository, the folder holding one of these (as mypy's
# does), or else at the root of the file system (as ruff's and pytest's do).
REPOSITORY_MARKERS: Final = (".git", ".hg")


# Where a pyproject.toml may define the table tool.arh: a header or dotted key `tool.arh`
# (`[tool.arh]`, `[tool.arh.validate]`, `tool.arh.policy = ...`, quoted or spaced), a `[tool]`
# table (`arh.policy = ...` in it) or a `tool = {...}` inline table.
_TOOL_ARH: Final = re.compile(r"""["']?tool["']?\s*(?:\.\s*["']?arh["']?(?![\w-])|=|\])""")


def config_candidates(start: str) -> Iterator[tuple[str, str]]:
    """The files that may be arh's configuration file, from the folder ``start`` upwards
    (:data:`CONFIG_NAMES`, up to the root of the repository), nearest first, each with its
    text: every arh.toml, and each pyproject.toml that may have a [tool.arh] table. The others
    are not parsed: importing the configuration's reader and tomllib measured 11 ms, and parsing
    a pyproject.toml 1 to 3 ms more, on every start in a Python project."""
    for path in find_upwards(start, CONFIG_NAMES, REPOSITORY_MARKERS):
        text = load_toml_text(path)
        if os.path.basename(path) != "pyproject.toml" or _TOOL_ARH.search(text):
            yield path, text


def find_upwards(start: str, names: Sequence[str], markers: Sequence[str]) -> Iterator[str]:
    """The files called one of ``names`` in the folder ``start`` and then in each folder above
    it, nearest first (in one folder, in the order of ``names``), up to the first folder that
    holds one of ``markers`` (searched too), or the root of the file system."""
    folder = os.path.abspath(start)
    while True:
        for name in names:
            path = os.path.join(folder, name)
            if is_regular_file(path):
                yield path
        if any(os.path.lexists(os.path.join(folder, marker)) for marker in markers):
            return
        parent = os.path.dirname(folder)
        if parent == folder:
            return
        folder = parent


def load_report(path: str, max_input_bytes: int = DEFAULT_MAX_INPUT) -> RunReport:
    """Read a JSON validation report (for example a baseline) of at most ``max_input_bytes``;
    errors name the file."""
    try:
        return RunReport.from_dict(read_json_file(path, max_input_bytes))
    except InputError as exc:
        raise (exc if exc.source else exc.located(path)) from None


class StepLines:
    """For a trace read from a whole JSON file, the line on which each of its steps starts.

    SARIF results point at these lines. Files are read again here, only when a SARIF report is
    written, one at a time (reports of one file come one after another); a file that cannot be
    read (or changed meanwhile, or a pipe, which cannot be read again) just gives no lines.
    """

    def __init__(self, max_input_bytes: int = DEFAULT_MAX_INPUT) -> None:
        self._path: str | None = None
        self._lines: list[int] = []
        self._limit = max_input_bytes

    def __call__(self, report: TraceReport) -> list[int] | None:
        path = report.source_path
        if path is None or report.source_line is not None:
            return None
        if path != self._path:
            self._path = path
            self._lines = []
            if is_regular_file(os_path(path)):
                try:
                    text = decode_bytes(read_input_file(os_path(path), self._limit))
                    self._lines = member_array_lines(text, "steps")
                except (OSError, InputError, MemoryError):
                    pass
        return self._lines


def step_lines(run: RunReport) -> dict[str, list[int]]:
    """:class:`StepLines` of every report of a run, by trace id."""
    lines = StepLines()
    found = {report.trace_id: lines(report) for report in run.reports}
    return {trace_id: found for trace_id, found in found.items() if found is not None}


def file_size(path: str) -> int:
    """The size of the file ``path``; 0 when it cannot be asked (reading it reports why)."""
    try:
        return os.path.getsize(path)
    except OSError:
        return 0  # reading it reports the problem


def names_spans(head: bytes) -> bool:
    """Do the first bytes of JSON Lines name OTLP resource spans?"""
    return b'"resourceSpans"' in head or b'"resource_spans"' in head


def is_span_export_file(path: str, fmt: str) -> bool:
    """Is this JSON Lines file read as OTLP export requests? Their traces may span lines, so
    such a file is one unit of work. (Auto: its first kilobytes name ``resourceSpans``.)"""
    if fmt in SPAN_FORMAT_NAMES:
        return True
    if fmt != "auto":
        return False
    try:
        with open(path, "rb") as stream:
            head = stream.read(1 << 16)
    except OSError:
        return False
    return names_spans(head)


def file_key(path: str) -> tuple[object, ...] | None:
    """What identifies the file ``path`` names: an existing regular file by its device and inode
    (a symbolic or hard link to it is the same file), a path that does not exist yet by its
    absolute form with links resolved; None for anything else (a directory, a pipe, a device
    such as ``/dev/stdout``), which a report is written into rather than replacing it."""
    try:
        info = os.stat(path)
    except OSError:
        return ("path", os.path.normcase(real_path(path)))
    return ("file", info.st_dev, info.st_ino) if stat.S_ISREG(info.st_mode) else None


def real_path(path: str) -> str:
    """``path`` absolute, with links resolved; as it is when the current directory that a
    relative path needs was removed (reading or writing it then fails, and says so)."""
    try:
        return os.path.realpath(path)
    except OSError:
        return path
