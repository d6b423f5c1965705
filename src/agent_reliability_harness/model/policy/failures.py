"""The ``tool_failures`` section: how a failed tool call looks when the trace's source says so
only in the call's output (POLICY-SPEC.md, "tool_failures").

Chat transcripts have no failure flag on a tool result: a tool that failed answers with text
(``Error: ...``, as tau-bench's tools do) or with a JSON payload (``{"error": "timeout"}``). The
section declares what such an output looks like, for every tool (``default``) or per tool
(``tools``, which replaces the default for that tool). A call whose output matches one of its
tool's tests is read with status ``error`` before the rules run, so that the retry, side-effect,
confirmation and condition rules see the failure offline and in the runtime monitor alike.

A declaration only adds failures: a call that the trace records as failed stays failed, with its
own error text, and no test can make it succeed. (``"status": "ok"`` is the default of the trace
format, which a canonical trace leaves out, so it is not told apart from a status never written.)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

from agent_reliability_harness._decode import bad, check_keys, json_type, opt_str, require_object
from agent_reliability_harness.errors import excerpt, join_pointer
from agent_reliability_harness.model._paths import ArgPath, collect, json_key, parsed_output

if TYPE_CHECKING:
    from agent_reliability_harness.model.policy._context import Context
    from agent_reliability_harness.model.trace import Step, Trace

__all__ = ["FailureTest", "ToolFailures"]


@dataclass(frozen=True, slots=True)
class FailureTest:
    """One way a failed call's output looks.

    Without ``pointer``, ``pattern`` is searched in the output when it is a string (the text as
    the source recorded it). With ``pointer``, the test reads the values at that JSON pointer of
    the output (a string holding a JSON object or array is read as that JSON, as everywhere in a
    policy): ``equals`` holds for a value equal to it, ``pattern`` for a string it is found in,
    and the pointer alone for any value that is not ``null``. The test matches when one value
    does.
    """

    pointer: ArgPath | None = None
    pattern: str | None = None
    equals: tuple[Any, ...] = ()  # () when not set, else the one value
    description: str | None = None
    regex: re.Pattern[str] | None = field(default=None, compare=False)
    equals_key: Any = field(default=None, compare=False)

    _KEYS: ClassVar[tuple[str, ...]] = ("pointer", "pattern", "equals", "description")

    @classmethod
    def parse(cls, raw: object, pointer: str, context: Context) -> FailureTest:
        data = require_object(raw, pointer, "a failure test")
        check_keys(data, cls._KEYS, pointer)
        where = None
        if data.get("pointer") is not None:
            where = ArgPath.parse(
                data["pointer"], join_pointer(pointer, "pointer"), pointer_only=True
            )
        equals: tuple[Any, ...] = () if data.get("equals") is None else (data["equals"],)
        pattern = data.get("pattern")
        if equals and where is None:
            raise bad(
                join_pointer(pointer, "equals"),
                "equals compares the value at a pointer: add one ('' for the whole output)",
            )
        if where is None and pattern is None:
            raise bad(
                pointer,
                "a failure test needs a pattern (searched in the output text), a pointer (into "
                "the output), or both",
            )
        if equals and pattern is not None:
            raise bad(pointer, "give either pattern or equals, not both")
        regex = None
        if pattern is not None:
            regex = context.regex(pattern, join_pointer(pointer, "pattern"), flags=0, searched=True)
        return cls(
            where,
            pattern,
            equals,
            opt_str(data, "description", pointer),
            regex,
            json_key(equals[0]) if equals else None,
        )

    def matches(self, output: Any, data: Any) -> bool:
        """Whether a call's ``output`` (and ``data``, the output read as JSON) says it failed."""
        if self.pointer is None:
            regex = self.regex
            return regex is not None and type(output) is str and regex.search(output) is not None
        for value in collect(data, self.pointer):
            if self.regex is not None:
                if type(value) is str and self.regex.search(value) is not None:
                    return True
            elif self.equals:
                if json_key(value) == self.equals_key:
                    return True
            elif value is not None:
                return True
        return False

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.pointer is not None:
            out["pointer"] = self.pointer.text
        if self.pattern is not None:
            out["pattern"] = self.pattern
        if self.equals:
            out["equals"] = self.equals[0]
        if self.description is not None:
            out["description"] = self.description
        return out


def _tests(raw: object, pointer: str, context: Context) -> tuple[FailureTest, ...]:
    if type(raw) is not list:
        raise bad(pointer, f"must be an array of failure tests, got {json_type(raw)}")
    return tuple(
        FailureTest.parse(item, join_pointer(pointer, index), context)
        for index, item in enumerate(raw)
    )


@dataclass(frozen=True, slots=True)
class ToolFailures:
    """How failed calls look: the tests of every tool (``default``), and of named tools
    (``tools``, each list replacing the default for its tool; an empty list means that the
    tool's outputs never say it failed). A call failed when one of its tool's tests matches."""

    default: tuple[FailureTest, ...] = ()
    tools: Mapping[str, tuple[FailureTest, ...]] = field(default_factory=dict)

    _KEYS: ClassVar[tuple[str, ...]] = ("default", "tools")

    @classmethod
    def parse(cls, raw: object, context: Context) -> ToolFailures:
        base = "/tool_failures"
        data = require_object(raw, base, "tool_failures")
        check_keys(data, cls._KEYS, base)
        default: tuple[FailureTest, ...] = ()
        if data.get("default") is not None:
            default = _tests(data["default"], join_pointer(base, "default"), context)
            if not default:
                raise bad(join_pointer(base, "default"), "must hold at least one failure test")
        tools: dict[str, tuple[FailureTest, ...]] = {}
        tools_base = join_pointer(base, "tools")
        if data.get("tools") is not None:
            listed = require_object(data["tools"], tools_base, "tools")
            for name, tests_raw in listed.items():
                where = join_pointer(tools_base, name)
                if not name:
                    raise bad(where, "a tool name must not be empty")
                context.tool(name, where)
                tests = _tests(tests_raw, where, context)
                if not tests and not default:
                    raise bad(
                        where,
                        f"an empty list exempts tool {excerpt(name)} from the default tests, "
                        "and there are none",
                    )
                tools[name] = tests
        if not default and not tools:
            raise bad(base, "declares no failure test: give default, tools, or both")
        return cls(default, tools)

    def tests_for(self, tool: str | None) -> tuple[FailureTest, ...]:
        """The tests of a call of ``tool`` (the default for a call without a tool name)."""
        if tool is not None:
            tests = self.tools.get(tool)
            if tests is not None:
                return tests
        return self.default

    def _tests_of(self, step: Step) -> tuple[FailureTest, ...]:
        """The tests that read ``step``: those of its tool for a call with an output, else
        none."""
        if step.type != "tool_call" or step.output is None:
            return ()
        return self.tests_for(step.tool_name)

    @staticmethod
    def _matches(step: Step, tests: tuple[FailureTest, ...]) -> bool:
        output = step.output
        data = parsed_output(output) if any(t.pointer is not None for t in tests) else output
        return any(test.matches(output, data) for test in tests)

    def failed(self, step: Step) -> bool:
        """Whether the output of the tool call ``step`` matches one of its tool's tests."""
        tests = self._tests_of(step)
        return bool(tests) and self._matches(step, tests)

    def read(self, step: Step) -> Step:
        """``step``, with status ``error`` when it is a call with status ``ok`` that failed."""
        if step.status == "ok" and self.failed(step):
            return replace(step, status="error")
        return step

    def apply(self, trace: Trace) -> tuple[Trace, bool]:
        """The trace with every call that failed by the section's tests given status
        ``error``, and whether the section read any of its calls (then the trace says whether
        its calls failed, whatever its source could record)."""
        steps = trace.steps
        read = False
        marked: list[Step] | None = None
        for index, step in enumerate(steps):
            tests = self._tests_of(step)
            if not tests:
                continue
            read = True
            if step.status == "ok" and self._matches(step, tests):
                if marked is None:
                    marked = list(steps)
                marked[index] = replace(step, status="error")
        if marked is None:
            return trace, read
        return replace(trace, steps=tuple(marked)), read

    def to_dict(self) -> dict[str, Any]:
        return {
            "default": [test.to_dict() for test in self.default] or None,
            "tools": {
                name: [test.to_dict() for test in tests] for name, tests in self.tools.items()
            },
        }
