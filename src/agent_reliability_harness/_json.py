"""Strict JSON decoding shared by every reader of user files.

Python's ``json`` module is lenient in ways that would let ambiguous input through: it keeps the
last of duplicate keys, accepts ``NaN`` and ``Infinity``, and fails with ``RecursionError`` or a
bare ``ValueError`` on deep nesting or huge integers. Here each of those becomes an
:class:`~agent_reliability_harness.errors.InputError` that says where the problem is. The fast
path is the C decoder with a cheap duplicate-key hook; slow paths run only to locate an error.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable
from typing import Any, Final

from agent_reliability_harness.errors import TOO_DEEP, InputError, excerpt, join_pointer

__all__ = ["decode_bytes", "dumps_indented", "loads"]

_BOMS = (
    (b"\xef\xbb\xbf", None),
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"),
    (b"\xfe\xff", "UTF-16"),
)


class _DuplicateKeyError(Exception):
    pass


class _ConstantError(Exception):
    pass


def _strict_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _DuplicateKeyError
    return obj


class _OverflowError(Exception):
    pass


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (_INF, -_INF):  # a literal such as 1e400 overflows to infinity
        raise _OverflowError(text)
    return value


_INF: Final = float("inf")


def _reject_constant(name: str) -> Any:
    raise _ConstantError(name)


class _Pairs(list[tuple[str, "Any"]]):
    """An object kept as its key/value pairs, used only to locate a duplicate key."""


def _find_duplicate(text: str) -> tuple[str, str]:
    doc = json.loads(text, object_pairs_hook=_Pairs)
    stack: list[tuple[str, Any]] = [("", doc)]
    while stack:
        pointer, value = stack.pop()
        if isinstance(value, _Pairs):
            seen: set[str] = set()
            for key, _ in value:
                if key in seen:
                    return pointer, key
                seen.add(key)
            stack.extend((join_pointer(pointer, k), v) for k, v in reversed(value))
        elif isinstance(value, list):
            stack.extend((join_pointer(pointer, i), v) for i, v in reversed(list(enumerate(value))))
    return "", ""  # unreachable when called after a duplicate was seen


# Compiled on first use (by re's own cache): only error messages and SARIF regions need them.
_CONSTANT_SCAN = r'(?s)"(?:[^"\\]|\\.)*"|(-?Infinity|NaN)'
_NUMBER_SCAN = r'(?s)"(?:[^"\\]|\\.)*"|-?(\d+)(\.\d+)?([eE][-+]?\d+)?'


def _locate(text: str, index: int) -> tuple[int, int]:
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    return line, column


def loads(text: str) -> Any:
    """Decode one JSON document, refusing what the JSON standard (RFC 8259) leaves ambiguous."""
    text = text.removeprefix("\ufeff")
    if not text or text.isspace():
        raise InputError("invalid JSON: the document is empty", pointer=None, line=1, column=1)
    try:
        return json.loads(
            text,
            object_pairs_hook=_strict_object,
            parse_constant=_reject_constant,
            parse_float=_finite_float,
        )
    except json.JSONDecodeError as exc:
        # "Invalid control character at", "Unterminated string starting at": the position the
        # decoder's own message would append is the line and column given with it
        message = exc.msg.removesuffix(" at").removesuffix(" starting")
        raise InputError(
            f"invalid JSON: {message}", pointer=None, line=exc.lineno, column=exc.colno
        ) from None
    except _DuplicateKeyError:
        try:
            pointer, key = _find_duplicate(text)
        except RecursionError:
            raise InputError(f"invalid JSON: {TOO_DEEP} to process", pointer=None) from None
        raise InputError(
            f"duplicate key {excerpt(json.dumps(key), quote=False)}: JSON objects must not "
            "repeat a key",
            pointer=pointer,
        ) from None
    except _OverflowError as exc:
        where = next(
            (
                _locate(text, m.start())
                for m in re.finditer(_NUMBER_SCAN, text)
                if m.group() == exc.args[0]
            ),
            (None, None),
        )
        raise InputError(
            f"invalid JSON: the number {excerpt(exc.args[0], quote=False)} is too large to "
            "represent",
            pointer=None,
            line=where[0],
            column=where[1],
        ) from None
    except _ConstantError as exc:
        for match in re.finditer(_CONSTANT_SCAN, text):
            if match.group(1):
                line, column = _locate(text, match.start(1))
                break
        else:  # pragma: no cover - the decoder only calls the hook for these tokens
            line = column = 0
        raise InputError(
            f"invalid JSON: {exc.args[0]} is not a JSON number (use null or a finite number)",
            pointer=None,
            line=line,
            column=column,
        ) from None
    except RecursionError:
        raise InputError(f"invalid JSON: {TOO_DEEP} to process", pointer=None) from None
    except ValueError:  # an integer longer than the interpreter's digit limit
        raise _long_integer_error(text) from None


def _long_integer_error(text: str) -> InputError:
    limit = sys.get_int_max_str_digits()
    where: tuple[int | None, int | None] = (None, None)
    for match in re.finditer(_NUMBER_SCAN, text):
        digits, fraction, exponent = match.groups()
        if digits and len(digits) > limit and fraction is None and exponent is None:
            where = _locate(text, match.start())
            break
    return InputError(
        f"invalid JSON: an integer has more than {limit} digits",
        pointer=None,
        line=where[0],
        column=where[1],
    )


def decode_bytes(data: bytes, kind: str = "JSON") -> str:
    """Decode file bytes as UTF-8 (an optional UTF-8 byte-order mark is dropped); ``kind`` names
    the language of the file in messages."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            if encoding is not None:
                raise InputError(
                    f"the file is {encoding} encoded; arh reads UTF-8 {kind}", pointer=None
                )
            data = data[len(bom) :]
            break
    else:
        if b"\x00" in data[:4]:
            # JSON text starts with an ASCII character, so a NUL among the first bytes is the
            # zero half of a UTF-16 or UTF-32 code unit (RFC 4627, section 3)
            raise InputError(
                "the file looks UTF-16 or UTF-32 encoded (it has NUL bytes); arh reads UTF-8 "
                + kind,
                pointer=None,
            )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = data[: exc.start].decode("utf-8")  # valid: the first bad byte is at exc.start
        line, column = _locate(before, len(before))  # in characters, as editors count
        raise InputError(
            f"not valid UTF-8: cannot decode byte 0x{data[exc.start]:02x} at offset {exc.start}",
            pointer=None,
            line=line,
            column=column,
        ) from None


# a JSON token: a string, a structural character, or a literal (compiled by re's cache)
_TOKEN: Final = r'(?s)"(?:[^"\\]|\\.)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+'  # noqa: S105


def member_array_lines(text: str, key: str) -> list[int]:
    """The line on which each element of the top-level object's array ``key`` starts.

    Used to point reports at the line of a step in a trace file. The text must be valid JSON
    (it is only called for documents that parsed); for anything else the result is partial.
    """
    depth = 0
    line, position = 1, 0
    at_key = False  # the next string in the top-level object is a member name
    member: str | None = None
    target: int | None = None  # depth of the array once we are inside it
    element_start = False
    lines: list[int] = []
    for match in re.finditer(_TOKEN, text):
        start = match.start()
        line += text.count("\n", position, start)
        position = start
        tok = match.group()
        if target is not None and depth == target and element_start and tok not in ",]":
            lines.append(line)
            element_start = False
        if tok in "{[":
            depth += 1
            if depth == 1:
                at_key = tok == "{"
            elif depth == 2 and member == key and tok == "[":
                target, element_start = 2, True
        elif tok in "}]":
            if target is not None and depth == target:
                return lines
            depth -= 1
        elif tok == ",":
            if depth == 1:
                at_key = True
            elif target is not None and depth == target:
                element_start = True
        elif tok == ":":
            at_key = False
        elif depth == 1 and at_key and tok.startswith('"'):
            member = json.loads(tok)
    return lines


# -- encoding ------------------------------------------------------------------------------------
#
# Reports are indented, and Python's C encoder does not indent (before 3.14): with ``indent``,
# ``json.dumps`` runs its pure-Python encoder, which costs about as much as checking a trace.
# ``dumps_indented`` writes the same bytes as ``json.dumps(value, indent=2, ensure_ascii=True)``
# for the values reports are made of, with the C string escaper, and falls back to ``json.dumps``
# for anything else.

_ESCAPE_ASCII: Final = json.encoder.encode_basestring_ascii  # the C functions when available
_ESCAPE: Final = json.encoder.encode_basestring


class _UnusualValueError(Exception):
    """A value the fast encoder leaves to ``json.dumps``."""


def _float_text(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if value == _INF:
        return "Infinity"
    if value == -_INF:
        return "-Infinity"
    return float.__repr__(value)


def _encode(value: Any, newline: str, parts: list[str], escape: Callable[[str], str]) -> None:
    kind = type(value)
    if kind is str:
        parts.append(escape(value))
    elif kind is dict:
        if not value:
            parts.append("{}")
            return
        inner = newline + "  "
        separator = "{" + inner
        for key, item in value.items():
            if type(key) is not str:
                raise _UnusualValueError
            parts.append(separator)
            parts.append(escape(key))
            parts.append(": ")
            _encode(item, inner, parts, escape)
            separator = "," + inner
        parts.append(newline + "}")
    elif kind is list or kind is tuple:
        if not value:
            parts.append("[]")
            return
        inner = newline + "  "
        separator = "[" + inner
        for item in value:
            parts.append(separator)
            _encode(item, inner, parts, escape)
            separator = "," + inner
        parts.append(newline + "]")
    elif value is None:
        parts.append("null")
    elif value is True:
        parts.append("true")
    elif value is False:
        parts.append("false")
    elif kind is int:
        parts.append(int.__repr__(value))
    elif kind is float:
        parts.append(_float_text(value))
    else:
        raise _UnusualValueError


def dumps_indented(value: Any, level: int = 0, *, ensure_ascii: bool = True) -> str:
    """``json.dumps(value, indent=2, ensure_ascii=ensure_ascii)``, with every line after the
    first indented by ``level`` more steps of two spaces, as if the value were nested that deep.

    Nesting costs no C stack here, where the pure-Python encoder that ``json.dumps`` runs with
    ``indent`` resumes a generator per level (a value 900 levels deep crashed the interpreter
    with a 256 KB stack)."""
    parts: list[str] = []
    try:
        _encode(value, "\n" + "  " * level, parts, _ESCAPE_ASCII if ensure_ascii else _ESCAPE)
    except (_UnusualValueError, RecursionError):
        text = json.dumps(value, indent=2, ensure_ascii=ensure_ascii)
        return text.replace("\n", "\n" + "  " * level) if level else text
    return "".join(parts)
