"""The table of report formats, read from the modules of
:mod:`agent_reliability_harness.render.formats`: the command line makes its ``--<format>-out``
options from it, and the commands write their reports through it."""

from __future__ import annotations

import importlib
import os
from typing import Literal

from agent_reliability_harness.render import formats
from agent_reliability_harness.render.outputs import OutputFormat

__all__ = ["output_formats", "report_to_stdout"]

_FOUND: list[OutputFormat] = []


def _names() -> list[str]:
    """The modules of the formats package (its ``.py`` files; not those starting with ``_``)."""
    names = set()
    for folder in formats.__path__:
        for entry in os.listdir(folder):
            stem, suffix = os.path.splitext(entry)
            if suffix == ".py" and not stem.startswith("_"):
                names.add(stem)
    return sorted(names)


def output_formats(
    command: Literal["validate", "compare", "stats"] | None = None,
) -> list[OutputFormat]:
    """Every report format (of ``command``: those that write its report), in option order."""
    if not _FOUND:
        found = [importlib.import_module(f"{formats.__name__}.{n}").FORMAT for n in _names()]
        _FOUND.extend(sorted(found, key=lambda f: (f.order, f.name)))
    return [f for f in _FOUND if command is None or getattr(f, command) is not None]


def report_to_stdout(args: object, command: Literal["validate", "compare", "stats"]) -> bool:
    """Whether a report of ``command`` goes to standard output (``--json-out -``): then the
    console report and the "written to" lines are not printed, so that standard output holds
    that report alone."""
    paths = [getattr(args, f.attribute, None) for f in output_formats(command)]
    return "-" in paths or getattr(args, "candidate_json_out", None) == "-"
