"""GitHub Actions workflow commands (``::error file=...,line=...,title=...::message``): the
annotations ``--output-format github`` prints, escaped as the runner reads them.

The runner (actions/runner, ``ActionCommand.TryParseV2``) takes a line that starts with ``::``,
reads the command name and its comma-separated ``key=value`` properties up to the next ``::``,
and the rest of the line as the message. It unescapes ``%0D``, ``%0A`` and ``%25`` in the message,
and also ``%3A`` and ``%2C`` in property values; the toolkit's ``escapeData`` and
``escapeProperty`` (actions/toolkit, ``packages/core/src/command.ts``) are the inverse, and so are
:func:`escape_data` and :func:`escape_property`. Text from a trace is first made visible
(:func:`visible`: control, bidi and other format characters as escapes, so a line break is ``\\n``
and an escape sequence cannot colour or hide the log), and the start of a legacy ``##[`` command is
defused as on the console.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from agent_reliability_harness.render._text import visible

__all__ = ["LEVELS", "annotation", "escape_data", "escape_property"]

# a finding's severity -> the workflow command that annotates it
LEVELS: Final = {"error": "error", "warning": "warning", "info": "notice"}

_DATA: Final = str.maketrans({"%": "%25", "\r": "%0D", "\n": "%0A"})
_PROPERTY: Final = str.maketrans({"%": "%25", "\r": "%0D", "\n": "%0A", ":": "%3A", ",": "%2C"})


def escape_data(text: str) -> str:
    """A workflow command's message: ``%`` as ``%25``, CR as ``%0D``, LF as ``%0A``."""
    return text.translate(_DATA)


def escape_property(text: str) -> str:
    """A workflow command's property value: as :func:`escape_data`, and ``:`` as ``%3A``, ``,``
    as ``%2C`` (a property ends at a comma, the properties at ``::``)."""
    return text.translate(_PROPERTY)


def _shown(text: str) -> str:
    """Text from an input as an annotation shows it: visible, no legacy ``##[`` command."""
    return visible(text).replace("##[", "\\x23#[")


def annotation(
    level: str,
    message: str,
    *,
    file: str | None = None,
    line: int | None = None,
    title: str | None = None,
) -> str:
    """One workflow command line (without its line break): ``level`` is ``error``, ``warning``
    or ``notice``; ``file``, ``line`` and ``title`` are left out when None."""
    properties: Iterable[tuple[str, str | None]] = (
        ("file", file),
        ("line", None if line is None else str(line)),
        ("title", title),
    )
    shown = ",".join(
        f"{key}={escape_property(_shown(value))}" for key, value in properties if value is not None
    )
    return f"::{level}{' ' + shown if shown else ''}::{escape_data(_shown(message))}"
