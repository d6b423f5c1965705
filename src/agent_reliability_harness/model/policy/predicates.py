"""Predicates of the language 1.1 sections: the ``when`` clauses that say which calls a condition
or relation applies to, and the ``match`` pairs that tie an argument of one call to an argument
of another. Argument locations are paths (see ``model/_paths.py``)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from agent_reliability_harness._decode import (
    bad,
    check_keys,
    finite_number,
    opt_nonneg_int,
    opt_str,
    require_object,
)
from agent_reliability_harness.errors import excerpt, join_pointer
from agent_reliability_harness.model._paths import ArgPath, collect, json_key
from agent_reliability_harness.model.policy._parse import compile_regex

if TYPE_CHECKING:
    from agent_reliability_harness.model.policy._context import Context

__all__ = [
    "Clause",
    "Predicate",
    "all_hold",
    "match_dict",
    "parse_match",
    "parse_output_when",
    "parse_when",
    "when_dict",
]

_PREDICATE_KEYS: Final = (
    "equals",
    "enum",
    "pattern",
    "min",
    "max",
    "exclusive_min",
    "exclusive_max",
    "not",
)
_BOUNDS: Final = ("min", "max", "exclusive_min", "exclusive_max")


def _check_range(bounds: dict[str, int | float | None], pointer: str) -> None:
    """Refuse bounds that no number meets (min above max, exclusive_min 5 with exclusive_max 5):
    a test that never holds would turn its condition off without a word."""
    lows = [(v, key) for key in ("min", "exclusive_min") if (v := bounds[key]) is not None]
    highs = [(v, key) for key in ("max", "exclusive_max") if (v := bounds[key]) is not None]
    if not lows or not highs:
        return
    # the tightest bound on each side; at equal values an exclusive bound is the tighter
    low, low_key = max(lows, key=lambda b: (b[0], b[1] == "exclusive_min"))
    high, high_key = min(highs, key=lambda b: (b[0], b[1] != "exclusive_max"))
    if (low_key, high_key) == ("min", "max") and low > high:
        raise bad(pointer, f"min ({excerpt(low)}) exceeds max ({excerpt(high)})")
    if low > high or (low == high and "exclusive" in low_key + high_key):
        raise bad(
            pointer,
            f"no number is within {low_key} {excerpt(low)} and {high_key} {excerpt(high)}, so "
            "the test "
            "never holds",
        )


@dataclass(frozen=True, slots=True)
class Predicate:
    """Tests on one value, all of which must hold: equality, membership, a full-match pattern,
    inclusive and exclusive numeric bounds, and the negation of another predicate."""

    equals: tuple[Any, ...] = ()  # () when not set, else the one value
    enum: tuple[Any, ...] | None = None
    pattern: str | None = None
    min: int | float | None = None
    max: int | float | None = None
    exclusive_min: int | float | None = None
    exclusive_max: int | float | None = None
    negated: Predicate | None = None
    regex: re.Pattern[str] | None = field(default=None, compare=False)
    keys: frozenset[Any] | None = field(default=None, compare=False)
    equals_key: Any = field(default=None, compare=False)

    def holds(self, value: Any) -> bool:
        """Whether ``value`` passes every test (a test on the wrong type fails)."""
        if self.equals and json_key(value) != self.equals_key:
            return False
        if self.keys is not None and json_key(value) not in self.keys:
            return False
        if self.regex is not None and (type(value) is not str or not self.regex.fullmatch(value)):
            return False
        if not (
            self.min is None
            and self.max is None
            and self.exclusive_min is None
            and self.exclusive_max is None
        ):
            if type(value) is not int and type(value) is not float:
                return False
            if self.min is not None and value < self.min:
                return False
            if self.max is not None and value > self.max:
                return False
            if self.exclusive_min is not None and value <= self.exclusive_min:
                return False
            if self.exclusive_max is not None and value >= self.exclusive_max:
                return False
        return self.negated is None or not self.negated.holds(value)

    @classmethod
    def parse(cls, raw: object, pointer: str, patterns: list[tuple[str, str, int]]) -> Predicate:
        data = require_object(raw, pointer, "a predicate")
        check_keys(data, _PREDICATE_KEYS, pointer)
        return cls._from(data, pointer, patterns)

    @classmethod
    def _from(
        cls, data: Mapping[str, Any], pointer: str, patterns: list[tuple[str, str, int]]
    ) -> Predicate:
        if not any(data.get(k) is not None for k in _PREDICATE_KEYS):
            raise bad(pointer, f"a predicate needs at least one of {', '.join(_PREDICATE_KEYS)}")
        equals: tuple[Any, ...] = () if data.get("equals") is None else (data["equals"],)
        enum: tuple[Any, ...] | None = None
        keys: frozenset[Any] | None = None
        if data.get("enum") is not None:
            values = data["enum"]
            if type(values) is not list or not values:
                raise bad(join_pointer(pointer, "enum"), "must be a non-empty array of values")
            enum = tuple(values)
            keys = frozenset(json_key(v) for v in values)
        pattern = opt_str(data, "pattern", pointer)
        regex = None
        if pattern is not None:
            where = join_pointer(pointer, "pattern")
            regex = compile_regex(pattern, 0, where)
            patterns.append((where, pattern, 0))
        bounds = {
            key: None
            if data.get(key) is None
            else finite_number(data[key], join_pointer(pointer, key))
            for key in _BOUNDS
        }
        _check_range(bounds, pointer)
        negated = None
        if data.get("not") is not None:
            negated = cls.parse(data["not"], join_pointer(pointer, "not"), patterns)
        return cls(
            equals,
            enum,
            pattern,
            bounds["min"],
            bounds["max"],
            bounds["exclusive_min"],
            bounds["exclusive_max"],
            negated,
            regex,
            keys,
            json_key(equals[0]) if equals else None,
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.equals:
            out["equals"] = self.equals[0]
        if self.enum is not None:
            out["enum"] = list(self.enum)
        if self.pattern is not None:
            out["pattern"] = self.pattern
        for key in _BOUNDS:
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.negated is not None:
            out["not"] = self.negated.to_dict()
        return out


@dataclass(frozen=True, slots=True)
class Clause:
    """One entry of a ``when`` object: the values at ``path`` of which at least ``min_count``
    must satisfy ``predicate``."""

    path: ArgPath
    predicate: Predicate
    min_count: int = 1

    def holds(self, data: Any) -> bool:
        """On a call's arguments, or on a tool's output for a relation's ``source.when``."""
        count = 0
        for value in collect(data, self.path):
            if self.predicate.holds(value):
                count += 1
                if count >= self.min_count:
                    return True
        return False

    def to_dict(self) -> dict[str, Any]:
        out = self.predicate.to_dict()
        if self.min_count != 1:
            out["min_count"] = self.min_count
        return out


def parse_when(raw: object, pointer: str, tool: str, context: Context) -> tuple[Clause, ...]:
    """A ``when`` object over a call's arguments (keys are argument paths)."""

    def argument(key: str, where: str) -> ArgPath:
        path = ArgPath.parse(key, where)
        context.argument(tool, path, where)
        return path

    return _parse_clauses(raw, pointer, argument, context.patterns)


def parse_output_when(
    raw: object, pointer: str, patterns: list[tuple[str, str, int]]
) -> tuple[Clause, ...]:
    """A ``when`` object over a tool's output (keys are output pointers, ``""`` the whole
    output), as a relation's ``source.when``."""
    return _parse_clauses(
        raw, pointer, lambda key, where: ArgPath.parse(key, where, pointer_only=True), patterns
    )


def _parse_clauses(
    raw: object,
    pointer: str,
    path_of: Callable[[str, str], ArgPath],
    patterns: list[tuple[str, str, int]],
) -> tuple[Clause, ...]:
    if raw is None:
        return ()
    data = require_object(raw, pointer, "when")
    clauses: list[Clause] = []
    for key, spec in data.items():
        where = join_pointer(pointer, key)
        path = path_of(key, where)
        body = require_object(spec, where, "a predicate")
        check_keys(body, (*_PREDICATE_KEYS, "min_count"), where)
        min_count = opt_nonneg_int(body, "min_count", where, minimum=1)
        if min_count is None:
            min_count = 1
        elif min_count > 1 and not path.wildcard:
            raise bad(
                join_pointer(where, "min_count"),
                "min_count above 1 needs a path with a '*' segment (one value cannot count twice)",
            )
        predicate = Predicate._from(
            {k: v for k, v in body.items() if k != "min_count"}, where, patterns
        )
        clauses.append(Clause(path, predicate, min_count))
    return tuple(clauses)


def when_dict(clauses: tuple[Clause, ...]) -> dict[str, Any]:
    return {clause.path.text: clause.to_dict() for clause in clauses}


def parse_match(
    raw: object, pointer: str, tool: str, other: str, context: Context
) -> tuple[tuple[ArgPath, ArgPath], ...]:
    """``{"<argument of this call>": "<argument of the other call>"}``, without wildcards."""
    if raw is None:
        return ()
    data = require_object(raw, pointer, "match")
    pairs: list[tuple[ArgPath, ArgPath]] = []
    for key, value in data.items():
        where = join_pointer(pointer, key)
        mine = ArgPath.parse(key, where)
        theirs = ArgPath.parse(value, where)
        for path in (mine, theirs):
            if path.wildcard:
                raise bad(where, "match paths name one value each; '*' is not allowed here")
        context.argument(tool, mine, where)
        context.argument(other, theirs, where)
        pairs.append((mine, theirs))
    return tuple(pairs)


def match_dict(pairs: tuple[tuple[ArgPath, ArgPath], ...]) -> dict[str, str]:
    return {mine.text: theirs.text for mine, theirs in pairs}


def all_hold(when: tuple[Clause, ...], data: Any) -> bool:
    """Do all the ``when`` clauses of a condition or relation hold for a call's arguments (or,
    for ``source.when``, for the source call's output)?"""
    return all(clause.holds(data) for clause in when)
