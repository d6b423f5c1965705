"""Strict decoding of JSON values: the one kit of typed checks and getters that the model, the
reports, the adapters and the regression code read their inputs with. Every failure is an
:class:`~agent_reliability_harness.errors.InputError` at the JSON pointer of the offending value.

Pointers follow RFC 6901 with one extension: on an array, a token ``-1``, ``-2``, ... counts from
the end (``/train_messages/-1`` is the last element). RFC 6901 gives such tokens no meaning on
arrays, so no standard pointer changes meaning.
"""

from __future__ import annotations

import difflib
import math
import sys
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from enum import Enum
from itertools import islice
from typing import Any, Final

from agent_reliability_harness.errors import (
    InputError,
    PointerMiss,
    excerpt,
    join_pointer,
    parse_pointer,
)

__all__ = [
    "array_index",
    "bad",
    "check_json_values",
    "check_keys",
    "check_tree",
    "find_cycle",
    "find_non_string_key",
    "finite_number",
    "fits_in_text",
    "id_part",
    "is_finite",
    "json_type",
    "key_type_error",
    "number_text",
    "opt_bool",
    "opt_finite",
    "opt_finite_in",
    "opt_nonneg_int",
    "opt_nonneg_number",
    "opt_object",
    "opt_str",
    "opt_text",
    "parse_schema_version",
    "req_str",
    "require_object",
    "resolve",
    "section",
    "str_or_empty",
    "unknown_key_hint",
]

SUPPORTED_MAJOR = "1"


_JSON_TYPES: Final = {
    type(None): "null",
    bool: "boolean",
    int: "number",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
}


def json_type(value: object) -> str:
    """Name the JSON type of a decoded value. Other Python values are named by their own type,
    so that "must be a string, got <type>" never names the type it asks for: a subclass of a
    JSON type (an ``OrderedDict``, a ``StrEnum`` member) is refused by the strict checks, which
    test ``type(x) is ...``."""
    name = _JSON_TYPES.get(type(value))
    return name if name is not None else _python_type(value)


# the Python types of JSON values that a subclass could extend, with their articles
_BASES: Final = (("a", dict), ("a", list), ("a", str), ("a", float), ("an", int))


def _python_type(value: object) -> str:
    """What a value that is not exactly a JSON type is (only on error paths)."""
    kind = type(value)
    what = kind.__name__
    if isinstance(value, Enum):
        what = f"enum member {what}.{value.name}"
    for article, base in _BASES:
        if isinstance(value, base):
            name = base.__name__
            return f"{what} ({article} {name} subclass: pass a plain {name})"
    return what


def is_finite(value: int | float) -> bool:
    """``math.isfinite``, except that an integer too large for a float is not finite.

    ``math.isfinite`` converts an ``int`` to ``float`` and raises ``OverflowError`` beyond about
    1.8e308; such a number could not be added up or compared as a float later either.
    """
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


_LOG10_2: Final = math.log10(2)
_EXACT_DIGITS_BITS: Final = 1 << 18  # up to about 79,000 digits the count is checked exactly


def number_text(value: int | float) -> str:
    """A number for an error message. An integer too large for a float is not spelt out but
    described by its number of digits, counted without converting it to text (which Python
    refuses beyond ``sys.get_int_max_str_digits()`` digits, and which takes quadratic time)."""
    if not isinstance(value, int) or is_finite(value):
        return repr(value)
    magnitude = -int(value) if value < 0 else int(value)
    bits = magnitude.bit_length()
    digits = int((bits - 1) * _LOG10_2) + 1  # 2**(bits-1) <= magnitude < 2**bits: off by 1 at most
    if bits > _EXACT_DIGITS_BITS:
        return f"an integer of about {digits} digits"
    power = 10 ** (digits - 1)
    if magnitude < power:
        digits -= 1
    elif magnitude >= power * 10:
        digits += 1
    return f"an integer of {digits} digits"


def fits_in_text(value: int) -> bool:
    """Whether Python writes ``value`` as text: it refuses integers of more digits than
    ``sys.get_int_max_str_digits()`` (0: no limit). Any integer a float can hold is short enough,
    so only the others are tried."""
    if is_finite(value) or not sys.get_int_max_str_digits():
        return True
    try:  # refused quickly beyond the limit; below it, a few thousand digits at most
        str(value)
    except ValueError:
        return False
    return True


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


def resolve(value: Any, pointer: str, option: str | None = None) -> tuple[Any, str]:
    """The value at ``pointer`` inside ``value`` and its normalised pointer (indexes counted
    from the start). A missing member is an InputError at the deepest pointer that exists; when
    ``pointer`` is the value of a pointer option (``option``, such as ``outcome_at``), the error
    says so in its ``miss``."""
    current = value
    where = ""
    for token in parse_pointer(pointer):
        kind = type(current)
        if kind is dict:
            if token not in current:
                message = (
                    f"no member {excerpt(token)} here (looking for {excerpt(pointer, quote=False)})"
                )
                break
            current = current[token]
            where = join_pointer(where, token)
        elif kind is list:
            index = array_index(token, len(current), from_end=True)
            if index is None:
                message = (
                    f"no element {excerpt(token)} in this array of {len(current)} (looking for "
                    f"{excerpt(pointer, quote=False)})"
                )
                break
            current = current[index]
            where = join_pointer(where, index)
        else:
            message = (
                f"cannot look up {excerpt(token)} in a {json_type(current)} (looking for "
                f"{excerpt(pointer, quote=False)})"
            )
            break
    else:
        return current, where
    miss = None
    if option is not None:
        last = parse_pointer(pointer)[-1]  # (the empty pointer always resolves)
        miss = PointerMiss(
            option, pointer, where, _what_is_there(current), _member_named(value, last)
        )
    raise InputError(message, pointer=where, miss=miss)


_SHOWN_KEYS: Final = 20  # the most keys an error lists
_SEARCHED_OBJECTS: Final = 1000  # the most objects searched for a member of a missing name


def _what_is_there(value: Any) -> str:
    """What a pointer found where it stopped, said of it: the keys it holds, or what it is."""
    if type(value) is dict:
        if not value:
            return "is an empty object"
        keys = [excerpt(key) for key in islice(value, _SHOWN_KEYS)]
        more = len(value) - len(keys)
        return "holds the keys " + ", ".join(keys) + (f" and {more} more" if more else "")
    if type(value) is list:
        return f"is an array of {len(value)}"
    return "is null" if value is None else f"is a {json_type(value)}"


def _member_named(document: Any, name: str) -> str | None:
    """The pointer of the first member called ``name`` in the objects of ``document``, breadth
    first through objects only (not arrays, where a trace's steps are), or None."""
    queue: deque[tuple[str, dict[str, Any]]] = deque()
    if type(document) is dict:
        queue.append(("", document))
    searched = 0
    while queue and searched < _SEARCHED_OBJECTS:
        where, current = queue.popleft()
        searched += 1
        if name in current:
            return join_pointer(where, name)
        queue.extend(
            (join_pointer(where, key), child)
            for key, child in current.items()
            if type(child) is dict
        )
    return None


def bad(pointer: str, message: str) -> InputError:
    """The error for a bad value at ``pointer`` (callers ``raise`` it)."""
    return InputError(message, pointer=pointer)


def key_type_error(key: object, pointer: str) -> InputError:
    """The error for a key that is not a string in the object at ``pointer`` (JSON has none;
    data built in Python may)."""
    return bad(pointer, f"object keys must be strings, got a key of type {type(key).__name__}")


def check_tree(value: object, pointer: str) -> None:
    """Raise for the first container in or below ``value`` (depth first, in order) that contains
    itself (:func:`find_cycle`) or is an object with a key other than a string
    (:func:`key_type_error`): JSON has neither, data built in Python may, and a walk of either
    never ends or fails. It walks the whole value once, so it is for small values (such as those
    of a policy) and for error paths."""
    found = find_cycle(value, pointer, string_keys=True)
    if found is not None:
        raise found


def find_non_string_key(value: object, pointer: str) -> InputError | None:
    """The error for the first object in or below ``value`` (depth first, in order) that has a
    key other than a string, or None. Lists, tuples and mappings are walked without recursion."""
    stack: list[tuple[str, object]] = [(pointer, value)]
    while stack:
        where, node = stack.pop()
        if isinstance(node, Mapping):
            for key in node:
                if not isinstance(key, str):
                    return key_type_error(key, where)
            items = [(join_pointer(where, k), v) for k, v in node.items()]
        elif isinstance(node, list | tuple):
            items = [(join_pointer(where, i), v) for i, v in enumerate(node)]
        else:
            continue
        stack.extend(reversed(items))
    return None


def find_cycle(value: object, pointer: str, *, string_keys: bool = False) -> InputError | None:
    """The error for the first container in or below ``value`` (depth first, in order) that is
    also one of the containers it is in, or None. Data built in Python can hold itself; JSON
    cannot, and the rules, which walk values without recursion, would walk such a value for
    ever. With ``string_keys``, an object with a key other than a string is an error too
    (:func:`key_type_error`). Lists, tuples and mappings are walked without recursion."""
    inside: set[int] = set()  # ids of the containers on the path to the current one
    stack: list[tuple[str, object] | int] = [(pointer, value)]
    while stack:
        item = stack.pop()
        if type(item) is int:  # every child of that container has been walked
            inside.discard(item)
            continue
        assert type(item) is tuple
        where, node = item
        if type(node) is dict or isinstance(node, Mapping):
            if string_keys:
                for key in node:
                    if not isinstance(key, str):
                        return key_type_error(key, where)
            children: Iterable[tuple[str | int, object]] = node.items()
        elif type(node) is list or isinstance(node, tuple | list):
            children = enumerate(node)
        else:
            continue
        if id(node) in inside:
            return bad(
                where, "the value contains itself (a reference cycle), which JSON cannot hold"
            )
        inside.add(id(node))
        stack.append(id(node))
        stack.extend(
            reversed([
                (join_pointer(where, key), child)
                for key, child in children
                if type(child) is dict or type(child) is list or isinstance(child, _CONTAINERS)
            ])
        )  # fmt: skip
    return None


_CONTAINERS: Final = (Mapping, list, tuple)


def check_json_values(value: object, pointer: str) -> None:
    """Raise for the first value in or below ``value`` (depth first, in order) that JSON cannot
    hold: another type than a plain dict, list, str, int, float, bool or None, a float that is
    not finite, or an integer too long for ``sys.get_int_max_str_digits()``. Only data built in
    Python can have them; checked last, so that a field's own check speaks first."""
    stack: list[tuple[str, object]] = [(pointer, value)]
    while stack:
        where, node = stack.pop()
        if type(node) is dict:
            stack.extend(reversed([(join_pointer(where, k), v) for k, v in node.items()]))
        elif type(node) is list:
            stack.extend(reversed([(join_pointer(where, i), v) for i, v in enumerate(node)]))
        elif type(node) is float:
            if not is_finite(node):
                raise bad(where, f"must be a finite number, got {node!r}")
        elif type(node) is int:
            if not fits_in_text(node):
                raise bad(
                    where,
                    f"{number_text(node)} is more than this Python writes as text "
                    "(sys.set_int_max_str_digits)",
                )
        elif node is not None and type(node) is not str and type(node) is not bool:
            raise bad(where, f"must be a JSON value, got {json_type(node)}")


def unknown_key_hint(key: str, known: Sequence[str]) -> str:
    """What follows "unknown key 'x'": the closest known key, or all of them."""
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else f"; known keys: {', '.join(known)}"


def parse_schema_version(value: object, pointer: str, what: str) -> str:
    """Accept ``null``/absent (version 1) or a string or number whose major version is 1."""
    if value is None:
        return SUPPORTED_MAJOR
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise bad(pointer, f'must be a version string such as "1", got {json_type(value)}')
    if isinstance(value, int) and not is_finite(value):  # too long to be a version, or to str()
        raise bad(
            pointer,
            f"{what} declares unsupported schema_version {number_text(value)}; "
            f"this build reads major version {SUPPORTED_MAJOR}",
        )
    text = str(value)
    if text.split(".", 1)[0] != SUPPORTED_MAJOR:
        raise bad(
            pointer,
            f"{what} declares unsupported schema_version {excerpt(text)}; "
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
        raise bad(
            join_pointer(base, key), f"must be an integer >= {minimum}, got {number_text(value)}"
        )
    return value


def _show(value: object) -> str:
    if type(value) is float:
        return repr(value)
    return json_type(value)


def check_keys(data: Mapping[str, Any], known: Iterable[str], pointer: str) -> None:
    """Refuse a key of ``data`` that is not one of ``known``, with the closest known key."""
    known = tuple(known)
    for key in data:
        if key not in known:
            hint = unknown_key_hint(key, known)
            raise bad(join_pointer(pointer, key), f"unknown key {excerpt(key)}{hint}")


def require_object(raw: object, pointer: str, what: str) -> Mapping[str, Any]:
    """``raw`` when it is an object; ``what`` names it in the error."""
    if type(raw) is not dict:
        raise bad(pointer, f"{what} must be an object, got {json_type(raw)}")
    return raw


def section(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """An object member of a document's top level (at ``/key``); ``{}`` when absent or null."""
    value = data.get(key)
    if value is None:
        return {}
    if type(value) is not dict:
        raise bad(f"/{key}", f"must be an object, got {json_type(value)}")
    return value


def finite_number(value: object, pointer: str) -> int | float:
    """``value`` when it is a finite number (an integer or a float, never a boolean)."""
    if type(value) is not int and type(value) is not float:
        raise bad(pointer, f"must be a finite number, got {json_type(value)}")
    assert isinstance(value, int | float)
    if not is_finite(value):
        raise bad(pointer, f"must be a finite number, got {number_text(value)}")
    return value


def opt_finite(
    data: Mapping[str, Any], key: str, base: str, *, required: bool = False
) -> float | None:
    """A finite number as a float; None when absent or null (unless ``required``)."""
    value = data.get(key)
    if value is None:
        if required:
            raise bad(base, f"missing required field {key!r}")
        return None
    return float(finite_number(value, join_pointer(base, key)))


def opt_finite_in(
    data: Mapping[str, Any],
    key: str,
    base: str,
    bounds: tuple[float, float],
    *,
    required: bool = False,
) -> float | None:
    """A finite number from ``bounds[0]`` to ``bounds[1]``, as :func:`opt_finite`."""
    value = opt_finite(data, key, base, required=required)
    low, high = bounds
    if value is not None and not low <= value <= high:
        raise bad(
            join_pointer(base, key),
            f"must be a number from {low:g} to {high:g}, got {number_text(data[key])}",
        )
    return value


def str_or_empty(data: Mapping[str, Any], key: str, base: str, *, required: bool = False) -> str:
    """A string member; absent and null read as ``""`` (or, when ``required``, are an error)."""
    if key not in data or data[key] is None:
        if required:
            raise bad(base, f"missing required field {key!r}")
        return ""
    value = data[key]
    if type(value) is not str:
        raise bad(join_pointer(base, key), f"must be a string, got {json_type(value)}")
    return value


def opt_text(data: Mapping[str, Any], key: str, base: str) -> str | None:
    """A string member; absent, ``null`` and ``""`` are None, any other type an InputError."""
    value = data.get(key)
    if value is None or value == "":
        return None
    if type(value) is not str:
        raise bad(join_pointer(base, key), f"must be a string or null, got {json_type(value)}")
    return value


def opt_object(data: Mapping[str, Any], key: str, base: str) -> dict[str, Any] | None:
    """An object member; absent and ``null`` are None, any other type an InputError."""
    value = data.get(key)
    if value is None:
        return None
    if type(value) is not dict:
        raise bad(join_pointer(base, key), f"must be an object or null, got {json_type(value)}")
    return value


def id_part(value: Any, pointer: str, what: str = "a trace id part") -> str:
    """One part of an id taken from a record: a non-empty string or an integer."""
    if type(value) is str and value:
        return value
    if type(value) is int:
        try:
            return str(value)
        except ValueError:  # more digits than the interpreter turns into text
            raise bad(pointer, f"{what} is an integer too long to use") from None
    shown = "an empty string" if value == "" else json_type(value)
    raise bad(pointer, f"{what} must be a non-empty string or an integer, got {shown}")
