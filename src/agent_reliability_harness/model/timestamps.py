"""Timestamps of traces (schema version 1.3): RFC 3339 text, checked strictly and kept as written.

A trace's ``started_at`` and ``ended_at`` and a step's ``timestamp`` are RFC 3339 date-times with
a time zone offset (``2026-01-31T09:30:00Z``, ``2026-01-31T10:30:00.25+01:00``). The parser
checks the text and keeps it unchanged, so a report shows exactly what the trace holds and a
trace written back is byte-identical. :func:`instant` orders two of them across offsets, and
:func:`from_unix_nanos` and :func:`from_unix_seconds` write the times that exporters record as
unix time, exactly (integer arithmetic, UTC, ``Z``).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Final

from agent_reliability_harness._decode import bad, json_type
from agent_reliability_harness.errors import excerpt

__all__ = ["from_datetime", "from_unix_nanos", "from_unix_seconds", "instant", "parse_timestamp"]

_FORM: Final = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]+))?"
    r"([Zz]|[+-][0-9]{2}:[0-9]{2})?"
)
_EXAMPLE: Final = "2026-01-31T09:30:00Z"
_MONTHS: Final = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_NANOS: Final = 1_000_000_000
_SECONDS_PER_DAY: Final = 86_400
_MAX_SECONDS: Final = 253_402_300_799  # 9999-12-31T23:59:59Z, the last second RFC 3339 writes


def _leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _days_in_month(year: int, month: int) -> int:
    if month == 2:
        return 29 if _leap(year) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days from 1970-01-01 to a date of the proleptic Gregorian calendar (H. Hinnant's
    ``days_from_civil``), in integers."""
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146_097 + doe - 719_468


def _civil_from_days(days: int) -> tuple[int, int, int]:
    """The inverse of :func:`_days_from_civil`."""
    days += 719_468
    era = days // 146_097
    doe = days - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day


def parse_timestamp(value: object, pointer: str) -> str:
    """The RFC 3339 date-time ``value``, unchanged; raise :class:`InputError` at ``pointer``
    saying what is wrong with it."""
    if type(value) is not str:
        hint = " (unix time is written as RFC 3339 text)" if type(value) in (int, float) else ""
        raise bad(
            pointer,
            f"must be an RFC 3339 date-time string such as {_EXAMPLE!r}, "
            f"got {json_type(value)}{hint}",
        )
    match = _FORM.fullmatch(value)
    if match is None:
        raise bad(
            pointer,
            f"must be an RFC 3339 date-time such as {_EXAMPLE!r} "
            f"(YYYY-MM-DDThh:mm:ss, optional fraction, then Z or +hh:mm), got {excerpt(value)}",
        )
    year, month, day, hour, minute, second = (int(match[i]) for i in range(1, 7))
    offset = match[8]
    problem = None
    if offset is None:
        problem = "has no time zone offset (add Z for UTC, or +hh:mm)"
    elif not 1 <= month <= 12:
        problem = f"month {match[2]} does not exist"
    elif not 1 <= day <= _days_in_month(year, month):
        problem = f"day {match[3]} does not exist in {_MONTHS[month - 1]} {match[1]}"
    elif hour > 23:
        problem = f"hour {match[4]} is out of range (00 to 23)"
    elif minute > 59:
        problem = f"minute {match[5]} is out of range (00 to 59)"
    elif second == 60:
        problem = "second 60 (a leap second) is not accepted: unix clocks never record one"
    elif second > 59:
        problem = f"second {match[6]} is out of range (00 to 59)"
    elif offset not in "Zz" and (int(offset[1:3]) > 23 or int(offset[4:6]) > 59):
        problem = f"time zone offset {offset} is out of range (-23:59 to +23:59)"
    if problem is not None:
        raise bad(pointer, f"{excerpt(value)} is not a valid RFC 3339 date-time: {problem}")
    return value


def instant(text: str) -> tuple[int, str]:
    """A key that orders valid timestamps by the instant they name, whatever their offsets:
    seconds since 1970-01-01T00:00:00Z and the digits of the fraction without trailing zeros
    (compared as strings, they compare as fractions)."""
    match = _FORM.fullmatch(text)
    if match is None or match[8] is None:
        raise ValueError(f"not a timestamp parse_timestamp accepts: {text!r}")
    year, month, day, hour, minute, second = (int(match[i]) for i in range(1, 7))
    seconds = (
        _days_from_civil(year, month, day) * _SECONDS_PER_DAY + hour * 3600 + minute * 60 + second
    )
    offset = match[8]
    if offset not in "Zz":
        shift = int(offset[1:3]) * 3600 + int(offset[4:6]) * 60
        seconds -= shift if offset[0] == "+" else -shift
    return seconds, (match[7] or "").rstrip("0")


def _utc_text(seconds: int, fraction: str) -> str:
    if not 0 <= seconds <= _MAX_SECONDS:
        raise ValueError(f"{seconds} s since 1970 is not between 1970 and 9999")
    days, rest = divmod(seconds, _SECONDS_PER_DAY)
    year, month, day = _civil_from_days(days)
    hour, rest = divmod(rest, 3600)
    minute, second = divmod(rest, 60)
    dot = f".{fraction}" if fraction else ""
    return f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}{dot}Z"


def from_unix_nanos(nanos: int) -> str:
    """The RFC 3339 text (UTC, ``Z``) of a time in nanoseconds since the unix epoch, exactly:
    the fraction has the digits it needs, up to 9 (``1733600000123456789`` is
    ``2024-12-07T19:33:20.123456789Z``); raise ``ValueError`` outside years 1970 to 9999."""
    seconds, nanos = divmod(nanos, _NANOS)
    return _utc_text(seconds, f"{nanos:09d}".rstrip("0"))


def from_datetime(moment: datetime) -> str:
    """The RFC 3339 text (UTC, ``Z``, microseconds without trailing zeros) of an aware
    ``datetime``; raise ``ValueError`` for a naive one (its time zone is unknown)."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"a datetime without a time zone ({moment.isoformat()}) names no instant")
    utc = moment.astimezone(UTC)
    fraction = f"{utc.microsecond:06d}".rstrip("0")
    return (
        f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}T{utc.hour:02d}:{utc.minute:02d}:"
        f"{utc.second:02d}{'.' + fraction if fraction else ''}Z"
    )


def from_unix_seconds(seconds: int) -> str:
    """The RFC 3339 text (UTC, ``Z``) of a whole number of seconds since the unix epoch."""
    return _utc_text(seconds, "")
