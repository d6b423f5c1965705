"""Reading TOML with :mod:`tomllib`, for the files arh reads in TOML (gate files and the
configuration file): its errors as :class:`InputError` at a line and column, and the line of
each key.

:mod:`tomllib` does not say on which line a key is, so the lines come from a scan of the text
(:func:`key_lines`), which understands table headers and keys, bare or quoted, dotted or not.
"""

from __future__ import annotations

import re
import sys
import tomllib
from collections.abc import Callable, Mapping
from numbers import Number
from typing import Any, Final

from agent_reliability_harness.errors import InputError

__all__ = ["key_lines", "line_of", "parse_toml", "toml_kind"]

_BARE_KEY: Final = re.compile(r"[A-Za-z0-9_-]+")


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t":
        at += 1
    return at


def _basic_string(text: str, at: int) -> tuple[str, int] | None:
    """A TOML basic string starting at ``text[at] == '"'``: its value and the index after it."""
    out: list[str] = []
    i = at + 1
    escapes = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}
    while i < len(text):
        char = text[i]
        if char == '"':
            return "".join(out), i + 1
        if char == "\\" and i + 1 < len(text):
            code = text[i + 1]
            if code in escapes:
                out.append(escapes[code])
                i += 2
                continue
            width = {"u": 4, "U": 8}.get(code)
            if width is not None:
                digits = text[i + 2 : i + 2 + width]
                try:
                    out.append(chr(int(digits, 16)))
                except ValueError:
                    return None
                i += 2 + width
                continue
            return None
        out.append(char)
        i += 1
    return None


def _keys(text: str, at: int) -> tuple[tuple[str, ...], int] | None:
    """A dotted key starting at ``text[at]``: its parts and the index after it."""
    parts: list[str] = []
    while True:
        at = _skip_space(text, at)
        if at >= len(text):
            return None
        char = text[at]
        if char == '"':
            found = _basic_string(text, at)
            if found is None:
                return None
            part, at = found
        elif char == "'":
            end = text.find("'", at + 1)
            if end < 0:
                return None
            part, at = text[at + 1 : end], end + 1
        else:
            match = _BARE_KEY.match(text, at)
            if match is None:
                return None
            part, at = match.group(), match.end()
        parts.append(part)
        at = _skip_space(text, at)
        if at < len(text) and text[at] == ".":
            at += 1
            continue
        return tuple(parts), at


def key_lines(text: str) -> dict[tuple[str, ...], int]:
    """The line (1-based) on which each table and key of a TOML document is first written.

    A key is found at ``key = value`` under the latest table header, and a table at its header
    (``[a.b]``, ``[[a]]``) or at the first key that implies it (``a.b = 1`` implies table
    ``a``). Lines inside multi-line strings are skipped. Keys written inside inline tables or
    arrays (``t = { a = 1 }``) are not found; their enclosing key's line is used instead. A
    line ends at a line feed, as TOML and every other line number arh reports count them (not
    at the other breaks ``str.splitlines`` knows, such as U+2028 in a comment).
    """
    lines: dict[tuple[str, ...], int] = {}
    table: tuple[str, ...] = ()
    closing: str | None = None  # the delimiter of the multi-line string being skipped
    for number, raw in enumerate(text.split("\n"), 1):
        if closing is not None:
            if raw.count(closing) % 2 == 1:
                closing = None
            continue
        at = _skip_space(raw, 0)
        if at >= len(raw) or raw[at] == "#":
            continue
        if raw[at] == "[":
            start = at + 2 if raw.startswith("[[", at) else at + 1
            found = _keys(raw, start)
            if found is not None and raw[found[1] : found[1] + 1] == "]":
                table = found[0]
                for end in range(1, len(table) + 1):
                    lines.setdefault(table[:end], number)
            continue
        found = _keys(raw, at)
        if found is None or raw[found[1] : found[1] + 1] != "=":
            continue
        full = table + found[0]
        for end in range(1, len(full) + 1):
            lines.setdefault(full[:end], number)
        value = raw[found[1] + 1 :].strip()
        for quote in ('"""', "'''"):
            if value.startswith(quote) and value.count(quote) % 2 == 1:
                closing = quote
                break
    return lines


def line_of(lines: Mapping[tuple[str, ...], int], path: tuple[str, ...]) -> int | None:
    for end in range(len(path), 0, -1):
        line = lines.get(path[:end])
        if line is not None:
            return line
    return None


def toml_kind(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, Number):  # int, float, or the Decimal of parse_float=Decimal
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return "a date or time"


def _long_integer_error(text: str, source: str, exc: ValueError) -> InputError:
    """The error for a TOML integer with more digits than the interpreter turns into an int,
    at its line and column (found by a scan of the text)."""
    limit = sys.get_int_max_str_digits()
    for match in re.finditer(r"(?<![.\w])[0-9][0-9_]*(?![.\w])", text):
        if limit and sum(1 for char in match.group() if char != "_") > limit:
            start = match.start()
            return InputError(
                f"invalid TOML: an integer has more than {limit} digits",
                pointer=None,
                source=source,
                line=text.count("\n", 0, start) + 1,
                column=start - text.rfind("\n", 0, start),
            )
    return InputError(f"invalid TOML: {exc}", pointer=None, source=source)


def parse_toml(
    text: str, source: str, *, parse_float: Callable[[str], Any] = float
) -> dict[str, Any]:
    """Parse the text of a TOML file; InputError naming ``source`` (and the line and column)
    when it is not TOML."""
    try:
        data = tomllib.loads(text, parse_float=parse_float)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        line = getattr(exc, "lineno", None)
        column = getattr(exc, "colno", None)
        match = re.search(r" \(at line (\d+), column (\d+)\)$", message)
        if match:
            message = message[: match.start()]
            line, column = int(match.group(1)), int(match.group(2))
        elif message.endswith(" (at end of document)"):
            message = message.removesuffix(" (at end of document)") + " at the end of the file"
        raise InputError(
            f"invalid TOML: {message}", pointer=None, source=source, line=line, column=column
        ) from None
    except RecursionError:  # tomllib recurses once per level of arrays and inline tables
        raise InputError(
            "nested too deeply to read: arrays or inline tables hundreds of levels deep",
            pointer=None,
            source=source,
        ) from None
    except ValueError as exc:  # not a TOMLDecodeError: int() refused a very long integer
        raise _long_integer_error(text, source, exc) from None
    return data
