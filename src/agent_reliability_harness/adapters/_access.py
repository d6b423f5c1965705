"""Typed access to decoded JSON for the adapters: JSON pointers, and getters that fail with an
:class:`~agent_reliability_harness.errors.InputError` at the pointer of the offending value.

Pointers follow RFC 6901 with one extension: on an array, a token ``-1``, ``-2``, ... counts from
the end (``/train_messages/-1`` is the last element). RFC 6901 gives such tokens no meaning on
arrays, so no standard pointer changes meaning.
"""

from __future__ import annotations

from collections.abc import Mapping

from agent_reliability_harness.errors import (
    InputError,
    excerpt,
    join_pointer,
    parse_pointer,
)
from agent_reliability_harness.model._checks import array_index, json_type

TYPE_CHECKING = False  # `typing` costs milliseconds at start-up; only type checkers need it
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "id_part",
    "opt_object",
    "opt_text",
    "parse_pointer",
    "resolve",
]


def resolve(value: Any, pointer: str) -> tuple[Any, str]:
    """The value at ``pointer`` inside ``value`` and its normalised pointer (indexes counted
    from the start). A missing member is an InputError at the deepest pointer that exists."""
    current = value
    where = ""
    for token in parse_pointer(pointer):
        kind = type(current)
        if kind is dict:
            if token not in current:
                raise InputError(
                    f"no member {excerpt(token)} here (looking for "
                    f"{excerpt(pointer, quote=False)})",
                    pointer=where,
                )
            current = current[token]
            where = join_pointer(where, token)
        elif kind is list:
            index = array_index(token, len(current), from_end=True)
            if index is None:
                raise InputError(
                    f"no element {excerpt(token)} in this array of {len(current)} (looking for "
                    f"{excerpt(pointer, quote=False)})",
                    pointer=where,
                )
            current = current[index]
            where = join_pointer(where, index)
        else:
            raise InputError(
                f"cannot look up {excerpt(token)} in a {json_type(current)} (looking for "
                f"{excerpt(pointer, quote=False)})",
                pointer=where,
            )
    return current, where


def opt_text(data: Mapping[str, Any], key: str, base: str) -> str | None:
    """A string member; absent, ``null`` and ``""`` are None, any other type an InputError."""
    value = data.get(key)
    if value is None or value == "":
        return None
    if type(value) is not str:
        raise InputError(
            f"must be a string or null, got {json_type(value)}", pointer=join_pointer(base, key)
        )
    return value


def opt_object(data: Mapping[str, Any], key: str, base: str) -> dict[str, Any] | None:
    """An object member; absent and ``null`` are None, any other type an InputError."""
    value = data.get(key)
    if value is None:
        return None
    if type(value) is not dict:
        raise InputError(
            f"must be an object or null, got {json_type(value)}", pointer=join_pointer(base, key)
        )
    return value


def id_part(value: Any, pointer: str, what: str = "a trace id part") -> str:
    """One part of an id taken from a record: a non-empty string or an integer."""
    if type(value) is str and value:
        return value
    if type(value) is int:
        try:
            return str(value)
        except ValueError:  # more digits than the interpreter turns into text
            raise InputError(f"{what} is an integer too long to use", pointer=pointer) from None
    shown = "an empty string" if value == "" else json_type(value)
    raise InputError(
        f"{what} must be a non-empty string or an integer, got {shown}", pointer=pointer
    )
