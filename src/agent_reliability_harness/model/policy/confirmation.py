"""The ``confirmation`` section (language 1.1): calls of the guarded tools need a user message
that confirms them since the last such call.

``tools`` lists the guarded tools: a tool name, or an object that gives one tool (``tool``) or a
group of tools (``tools``) a confirmation pattern of their own and the argument values the agent
must state before the user's yes (``state``). ``separate_text_and_calls`` asks that the agent never
speak to the user and call a tool in the same turn.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final

from agent_reliability_harness._decode import bad, check_keys, json_type, opt_bool, require_object
from agent_reliability_harness.errors import excerpt, join_pointer
from agent_reliability_harness.model._paths import ArgPath
from agent_reliability_harness.model.policy._context import Context
from agent_reliability_harness.model.policy._parse import tool_names

__all__ = ["DEFAULT_CONFIRMATION_PATTERN", "Confirmation", "Guard"]

DEFAULT_CONFIRMATION_PATTERN: Final = r"\byes\b"


@dataclass(frozen=True, slots=True)
class Guard:
    """An object entry of ``confirmation.tools``: settings of one tool or of a group of tools.

    ``pattern`` (None: the section's) is what a confirming user message must match; ``state`` are
    the argument paths whose values a model_response must mention before that message.
    """

    tools: tuple[str, ...]
    group: bool = False  # written with ``tools`` (a group) rather than ``tool``
    pattern: str | None = None
    state: tuple[ArgPath, ...] = ()
    description: str | None = None
    regex: re.Pattern[str] | None = field(default=None, compare=False)

    _KEYS: ClassVar[tuple[str, ...]] = ("tool", "tools", "pattern", "state", "description")

    @classmethod
    def parse(cls, raw: dict[str, Any], where: str, context: Context) -> Guard:
        check_keys(raw, cls._KEYS, where)
        has_tool, has_tools = raw.get("tool") is not None, raw.get("tools") is not None
        if has_tool == has_tools:
            raise bad(where, "give exactly one of 'tool' (one tool) and 'tools' (a group)")
        if has_tool:
            name = raw["tool"]
            if type(name) is not str or not name:
                raise bad(
                    join_pointer(where, "tool"),
                    f"must be a non-empty tool name, got {json_type(name)}",
                )
            tools: tuple[str, ...] = (name,)
            context.tool(name, join_pointer(where, "tool"))
        else:
            tools = tool_names(raw, "tools", where)
            if not tools:
                raise bad(join_pointer(where, "tools"), "must name at least one tool")
            for index, name in enumerate(tools):
                context.tool(name, join_pointer(where, "tools", index))
        pattern, regex = raw.get("pattern"), None
        if pattern is not None:
            regex = context.regex(
                pattern, join_pointer(where, "pattern"), flags=re.IGNORECASE, searched=True
            )
        state = cls._state(raw.get("state"), join_pointer(where, "state"), tools, context)
        description = raw.get("description")
        if description is not None and type(description) is not str:
            raise bad(
                join_pointer(where, "description"),
                f"must be a string, got {json_type(description)}",
            )
        return cls(tools, has_tools, pattern, state, description, regex)

    @staticmethod
    def _state(
        raw: object, pointer: str, tools: tuple[str, ...], context: Context
    ) -> tuple[ArgPath, ...]:
        if raw is None:
            return ()
        if type(raw) is not list or not raw:
            raise bad(pointer, f"must be a non-empty array of argument paths, got {json_type(raw)}")
        paths: list[ArgPath] = []
        seen: dict[tuple[str, ...], int] = {}
        for index, item in enumerate(raw):
            where = join_pointer(pointer, index)
            path = ArgPath.parse(item, where)
            if path.segments in seen:
                raise bad(
                    where,
                    f"path {excerpt(path.text)} is already listed at index {seen[path.segments]}",
                )
            seen[path.segments] = index
            for name in tools:
                context.argument(name, path, where)
            paths.append(path)
        return tuple(paths)

    def to_value(self) -> str | dict[str, Any]:
        """The entry in the canonical form: a bare tool name when it sets nothing."""
        if not self.group and self.pattern is None and not self.state and self.description is None:
            return self.tools[0]
        out: dict[str, Any] = {"tools": list(self.tools)} if self.group else {"tool": self.tools[0]}
        if self.pattern is not None:
            out["pattern"] = self.pattern
        if self.state:
            out["state"] = [path.text for path in self.state]
        if self.description is not None:
            out["description"] = self.description
        return out


@dataclass(frozen=True, slots=True)
class Confirmation:
    """Calls of ``tools`` need a user message matching ``pattern`` since the last such call."""

    tools: tuple[str, ...]
    pattern: str = DEFAULT_CONFIRMATION_PATTERN
    listed: bool = False  # whether the policy listed the tools (else: its side-effect tools)
    regex: re.Pattern[str] | None = field(default=None, compare=False)
    # the object entries of ``tools``, in order (a tool listed by name alone has none)
    guards: tuple[Guard, ...] = ()
    # the entries of ``tools`` as written: a tool name, or the index of its guard in ``guards``
    entries: tuple[str | int, ...] = ()
    separate_text_and_calls: bool = False

    _KEYS: ClassVar[tuple[str, ...]] = ("tools", "pattern", "separate_text_and_calls")

    @classmethod
    def parse(cls, raw: object, context: Context) -> Confirmation:
        base = "/confirmation"
        data = require_object(raw, base, "confirmation")
        check_keys(data, cls._KEYS, base)
        listed = data.get("tools") is not None
        tools, guards, entries = cls._tools(data.get("tools"), join_pointer(base, "tools"), context)
        if listed and not tools:
            raise bad(join_pointer(base, "tools"), "must name at least one tool")
        if not listed:
            tools = tuple(name for name, tool in context.tools.items() if tool.side_effect)
            if not tools:
                raise bad(
                    base,
                    "no tool to guard: list the tools in tools, or mark tools side_effect: true "
                    "in allowed_tools",
                )
        pattern = data.get("pattern")
        if pattern is None:
            pattern = DEFAULT_CONFIRMATION_PATTERN
            regex = re.compile(pattern, re.IGNORECASE)
        else:
            regex = context.regex(
                pattern, join_pointer(base, "pattern"), flags=re.IGNORECASE, searched=True
            )
        separate = opt_bool(data, "separate_text_and_calls", base)
        return cls(tools, pattern, listed, regex, guards, entries, separate)

    @staticmethod
    def _tools(
        raw: object, pointer: str, context: Context
    ) -> tuple[tuple[str, ...], tuple[Guard, ...], tuple[str | int, ...]]:
        """The guarded tools in order, the object entries, and every entry as written."""
        if raw is None:
            return (), (), ()
        if type(raw) is not list:
            raise bad(
                pointer,
                f"must be an array of tool names, got {json_type(raw)}",
            )
        names: list[str] = []
        guards: list[Guard] = []
        entries: list[str | int] = []
        seen: dict[str, str] = {}
        for index, item in enumerate(raw):
            where = join_pointer(pointer, index)
            if type(item) is str and item:
                context.tool(item, where)
                listed: tuple[str, ...] = (item,)
                entries.append(item)
            elif type(item) is dict:
                guard = Guard.parse(item, where, context)
                listed = guard.tools
                entries.append(len(guards))
                guards.append(guard)
            else:
                raise bad(
                    where,
                    "must be a non-empty tool name string or an object with 'tool' or 'tools', "
                    f"got {json_type(item)}",
                )
            for name in listed:
                if name in seen:
                    raise bad(where, f"lists {excerpt(name)} more than once (at {seen[name]})")
                seen[name] = where
                names.append(name)
        return tuple(names), tuple(guards), tuple(entries)

    def to_dict(self) -> dict[str, Any]:
        tools: list[Any] = list(self.tools)
        if self.guards:
            tools = [
                entry if isinstance(entry, str) else self.guards[entry].to_value()
                for entry in self.entries
            ]
        out: dict[str, Any] = {"tools": tools, "pattern": self.pattern}
        if self.separate_text_and_calls:  # written only when set, so other hashes stay the same
            out["separate_text_and_calls"] = True
        return out
