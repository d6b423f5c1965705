"""Typed field checks shared by the strict parsers; each failure is an InputError at a pointer."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from agent_reliability_harness.errors import InputError, join_pointer

TYPE_CHECKING = False  # `typing` costs milliseconds at start-up; only type checkers need it
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "array_index",
    "bad",
    "is_finite",
    "json_type",
    "number_text",
    "opt_bool",
    "opt_nonneg_int",
    "opt_nonneg_number",
    "opt_str",
    "parse_schema_version",
    "req_str",
    "unknown_key_hint",
]

SUPPORTED_MAJOR = "1"


def json_type(value: object) -> str:
    """Name the JSON type of a decoded value (Python types outside JSON keep their own name)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def is_finite(value: int | float) -> bool:
    """``math.isfinite``, except that an integer too large for a float is not finite.

    ``math.isfinite`` converts an ``int`` to ``float`` and raises ``OverflowError`` beyond about
    1.8e308; such a number could not be added up or compared as a float later either.
    """
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def number_text(value: int | float) -> str:
    """A number for an error message; an integer too large for a float is not spelt out."""
    if type(value) is int and not is_finite(value):
        return f"an integer of {len(str(abs(value)))} digits"
    return repr(value)


def array_index(token: str, length: int, *, from_end: bool = False) -> int | None:
    """The element that a JSON pointer token names in an array of ``length``, or None (the rule
    of every pointer arh resolves). RFC 6901: ``0`` or ASCII digits without a leading zero; with
    ``from_end``, ``-1``, ``-2``, ... count from the end (the command-line pointers' extension)."""
    negative = from_end and token.startswith("-")
    digits = token[1:] if negative else token
    if not (digits.isascii() and digits.isdigit()) or (len(digits) > 1 and digits[0] == "0"):
        return None
    if len(digits) > len(str(length)):  # out of range; and int() refuses 4,300 digits or more
        return None
    number = int(digits)
    if negative:
        return length - number if 0 < number <= length else None
    return number if number < length else None


def bad(pointer: str, message: str) -> InputError:
    """The error for a bad value at ``pointer`` (callers ``raise`` it)."""
    return InputError(message, pointer=pointer)


def unknown_key_hint(key: str, known: Sequence[str]) -> str:
    """What follows "unknown key 'x'": the closest known key, or all of them."""
    import difflib  # only on the error path

    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else f"; known keys: {', '.join(known)}"


def parse_schema_version(value: object, pointer: str, what: str) -> str:
    """Accept ``null``/absent (version 1) or a string or number whose major version is 1."""
    if value is None:
        return SUPPORTED_MAJOR
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise bad(pointer, f'must be a version string such as "1", got {json_type(value)}')
    text = str(value)
    if text.split(".", 1)[0] != SUPPORTED_MAJOR:
        raise bad(
            pointer,
            f"{what} declares unsupported schema_version {text!r}; "
            f"this build reads major version {SUPPORTED_MAJOR}",
        )
    return text


def req_str(data: Mapping[str, Any], key: str, base: str, *, non_empty: bool = False) -> str:
    if key not in data:
        raise bad(base, f"missing required field {key!r}")
    value = data[key]
    if type(value) is not str:
        raise bad(join_pointer(base, key), f"must be a string, got {json_type(value)}")
    if non_empty and not value:
        raise bad(join_pointer(base, key), "must not be empty")
    return value


def opt_str(data: Mapping[str, Any], key: str, base: str) -> str | None:
    value = data.get(key)
    if value is None or type(value) is str:
        return value
    raise bad(join_pointer(base, key), f"must be a string or null, got {json_type(value)}")


def opt_bool(data: Mapping[str, Any], key: str, base: str) -> bool:
    value = data.get(key)
    if value is None:
        return False
    if type(value) is bool:
        return value
    raise bad(join_pointer(base, key), f"must be true or false, got {json_type(value)}")


def opt_nonneg_number(data: Mapping[str, Any], key: str, base: str) -> int | float | None:
    value = data.get(key)
    if value is None:
        return None
    kind = type(value)
    if kind is not int and kind is not float:
        raise bad(join_pointer(base, key), f"must be a number, got {json_type(value)}")
    if not (value >= 0 and is_finite(value)):
        raise bad(
            join_pointer(base, key), f"must be a finite number >= 0, got {number_text(value)}"
        )
    return value  # type: ignore[no-any-return]


def opt_nonneg_int(
    data: Mapping[str, Any], key: str, base: str, *, minimum: int = 0, integral_float: bool = False
) -> int | None:
    """An integer >= ``minimum``; ``integral_float`` also accepts ``4.0`` (stored as ``4``)."""
    value = data.get(key)
    if value is None:
        return None
    kind = type(value)
    if kind is float and integral_float and math.isfinite(value) and value == int(value):
        value = int(value)
    elif kind is not int:
        raise bad(join_pointer(base, key), f"must be an integer >= {minimum}, got {_show(value)}")
    if value < minimum:
        raise bad(join_pointer(base, key), f"must be an integer >= {minimum}, got {value}")
    return value


def _show(value: object) -> str:
    if isinstance(value, float):
        return repr(value)
    return json_type(value)
