"""Paths into a call's arguments and a tool's output, and JSON equality: the small pieces that
policy language 1.1 (model/policy/) and its rules share.

Kept apart from the policy parser so that the rules can import them without loading the parser of
the 1.1 sections, which a policy of version 1 never needs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from agent_reliability_harness._decode import array_index, bad, json_type
from agent_reliability_harness.errors import UsageError, excerpt, join_pointer, parse_pointer

__all__ = ["ArgPath", "collect", "collect_located", "json_key", "string_leaves"]


def json_key(value: Any) -> Any:
    """A hashable key under which two JSON values are equal exactly when they mean the same value:
    numbers compare by value (``1`` equals ``1.0``), a boolean equals only a boolean, strings,
    arrays and objects compare element by element (objects regardless of key order)."""
    kind = type(value)
    if kind is str:
        return ("s", value)
    if kind is bool:
        return ("b", value)
    if kind is int or kind is float:
        return ("n", value)
    if value is None:
        return ("z",)
    if kind is list:
        return ("l", tuple([json_key(item) for item in value]))
    if kind is dict:
        return ("d", tuple(sorted((k, json_key(v)) for k, v in value.items())))
    return ("?", repr(value))


@dataclass(frozen=True, slots=True)
class ArgPath:
    """A location in a call's arguments or in a tool output: its text as written, its segments,
    and whether a segment is the wildcard ``*``."""

    text: str
    segments: tuple[str, ...]
    wildcard: bool

    @classmethod
    def parse(cls, raw: object, pointer: str, *, pointer_only: bool = False) -> ArgPath:
        if type(raw) is not str:
            raise bad(pointer, f"must be an argument name or a JSON pointer, got {json_type(raw)}")
        if pointer_only:
            if raw and not raw.startswith("/"):
                raise bad(
                    pointer, f"must be a JSON pointer such as '/total' or '', got {excerpt(raw)}"
                )
        elif not raw:
            raise bad(pointer, "must be an argument name or a JSON pointer, got ''")
        if raw.startswith("/") or not raw:
            try:  # the parser of every pointer, the command line's too
                segments = parse_pointer(raw)
            except UsageError as exc:
                raise bad(pointer, str(exc)) from None
        else:
            segments = (raw,)
        return cls(raw, segments, "*" in segments)

    @property
    def pointer(self) -> str:
        """The path as a JSON pointer relative to the arguments (or the output)."""
        return join_pointer("", *self.segments)


def parsed_output(output: Any) -> Any:
    """A tool output as data: a string that holds a JSON object or array (as the tool results of
    chat transcripts do) is read as that; anything else is returned as it is."""
    if type(output) is str:
        text = output.strip()
        if text[:1] in ("{", "[") and text[-1:] in ("}", "]"):
            try:
                return json.loads(text)
            except (ValueError, RecursionError):
                return output
    return output


def collect(value: Any, path: ArgPath) -> list[Any]:
    """The values at ``path`` inside ``value`` (several with wildcards, none when absent)."""
    current = [value]
    for segment in path.segments:
        found: list[Any] = []
        for node in current:
            kind = type(node)
            if kind is dict:
                if segment == "*":
                    found.extend(node.values())
                elif segment in node:
                    found.append(node[segment])
            elif kind is list:
                if segment == "*":
                    found.extend(node)
                else:
                    at = array_index(segment, len(node))
                    if at is not None:
                        found.append(node[at])
        current = found
        if not current:
            break
    return current


def collect_located(value: Any, path: ArgPath, base: str) -> list[tuple[str, Any]]:
    """Like :func:`collect`, with the JSON pointer (below ``base``) of each value."""
    current: list[tuple[str, Any]] = [(base, value)]
    for segment in path.segments:
        found: list[tuple[str, Any]] = []
        for where, node in current:
            kind = type(node)
            if kind is dict:
                if segment == "*":
                    found.extend((join_pointer(where, k), v) for k, v in node.items())
                elif segment in node:
                    found.append((join_pointer(where, segment), node[segment]))
            elif kind is list:
                if segment == "*":
                    found.extend((join_pointer(where, i), v) for i, v in enumerate(node))
                else:
                    at = array_index(segment, len(node))
                    if at is not None:
                        found.append((join_pointer(where, at), node[at]))
        current = found
        if not current:
            break
    return current


def string_leaves(value: Any, base: str, *, keys: bool = False) -> Iterator[tuple[str, str, bool]]:
    """(pointer, text, is_key) for every non-empty string of a JSON value, depth first; with
    ``keys``, an object's non-empty keys too, before its values."""
    stack: list[tuple[str, Any]] = [(base, value)]
    while stack:
        pointer, node = stack.pop()
        kind = type(node)
        if kind is str:
            if node:
                yield pointer, node, False
        elif kind is dict:
            if keys:
                for key in node:
                    if key:
                        yield join_pointer(pointer, key), key, True
            stack.extend(reversed([(join_pointer(pointer, k), v) for k, v in node.items()]))
        elif kind is list:
            stack.extend(reversed([(join_pointer(pointer, i), v) for i, v in enumerate(node)]))
