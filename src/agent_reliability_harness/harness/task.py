"""The golden task: one case an agent is run on, with its simulated tools, its policy, its
expected outcome, its caps and the known-good reference script (docs/running-agents.md).

Parsing is strict, as for traces and policies: every key must be known (an unknown one is an
error with the closest known key), every value must have its type, and every problem is an
:class:`~agent_reliability_harness.errors.InputError` at the JSON pointer of the bad value. The
inline policy is parsed by the policy loader (errors at ``/policy/...``) and the expected outcome
by the expected-outcome model (errors at ``/expected/...``). A task file is JSON Lines, one task
per line: :func:`load_task_file` reports every bad line (its file, line and pointer) and goes on.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from agent_reliability_harness._decode import (
    bad,
    check_keys,
    json_type,
    opt_bool,
    opt_nonneg_int,
    opt_nonneg_number,
    parse_schema_version,
    req_str,
)
from agent_reliability_harness._json import decode_bytes, loads
from agent_reliability_harness.errors import InputError, excerpt, join_pointer, parse_pointer
from agent_reliability_harness.errors import UsageError as _UsageError
from agent_reliability_harness.model._jsonschema import JsonSchema
from agent_reliability_harness.model.answers import Expectation
from agent_reliability_harness.model.policy import Policy

__all__ = [
    "CATEGORIES",
    "PATTERNS",
    "Caps",
    "Reference",
    "ReferenceStep",
    "Response",
    "Task",
    "ToolSpec",
    "load_task_file",
    "parse_task_lines",
]

PATTERNS: Final = ("react", "plan_and_execute", "supervisor", "swarm", "map_reduce")
CATEGORIES: Final = (
    "normal",
    "difficult",
    "ambiguous",
    "edge",
    "adversarial",
    "failure_inducing",
)
_TASK_KEYS: Final = (
    "$schema",
    "schema_version",
    "id",
    "pattern",
    "category",
    "description",
    "prompt",
    "tools",
    "user_replies",
    "policy",
    "expected",
    "caps",
    "reference",
)
_TOOL_KEYS: Final = (
    "name",
    "description",
    "parameters",
    "returns",
    "side_effect",
    "agent",
    "latency_ms",
    "cost_usd",
    "responses",
)
_RESPONSE_KEYS: Final = ("when", "output", "error", "transient", "times")
_CAP_KEYS: Final = ("max_steps", "max_tokens", "max_cost_usd", "max_wall_seconds")
_REFERENCE_KEYS: Final = ("steps", "answer")
_STEP_KEYS: Final = ("id", "tool", "arguments", "confirm", "agent", "map", "$ref", "draft")
_DRAFT_KEYS: Final = ("arguments",)
# a task id names its trace files: letters, digits and . _ - only
_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")


def _enum(data: Mapping[str, Any], key: str, choices: tuple[str, ...]) -> str:
    value = req_str(data, key, "")
    if value not in choices:
        raise bad(f"/{key}", f"must be one of {', '.join(choices)}, got {excerpt(value)}")
    return value


def _object(raw: object, pointer: str, what: str) -> dict[str, Any]:
    if type(raw) is not dict:
        raise bad(pointer, f"{what} must be an object, got {json_type(raw)}")
    return raw


def _array(raw: object, pointer: str, what: str) -> list[Any]:
    if type(raw) is not list:
        raise bad(pointer, f"{what} must be an array, got {json_type(raw)}")
    return raw


def _pointer(raw: object, pointer: str) -> str:
    if type(raw) is not str:
        raise bad(pointer, f"must be a JSON pointer (a string), got {json_type(raw)}")
    try:
        parse_pointer(raw)
    except _UsageError as exc:
        raise bad(pointer, str(exc)) from None
    return raw


@dataclass(frozen=True, slots=True)
class Response:
    """One scripted response of a simulated tool: it applies to a call whose arguments include
    ``when`` (every key equal; ``None`` = any call), at most ``times`` times; it fails the call
    with ``error`` (``transient``: the gateway may retry) or returns ``output``."""

    when: Mapping[str, Any] | None
    output: Any = None
    error: str | None = None
    transient: bool = False
    times: int | None = None

    @classmethod
    def parse(cls, raw: object, pointer: str) -> Response:
        data = _object(raw, pointer, "a response")
        check_keys(data, _RESPONSE_KEYS, pointer)
        when = data.get("when")
        if when is not None:
            _object(when, join_pointer(pointer, "when"), "when")
        has_output, error = "output" in data, data.get("error")
        if has_output == (error is not None):
            raise bad(pointer, "give exactly one of output and error")
        if error is not None and (type(error) is not str or not error):
            where = join_pointer(pointer, "error")
            raise bad(where, f"must be a non-empty string, got {json_type(error)}")
        transient = opt_bool(data, "transient", pointer)
        if transient and error is None:
            raise bad(join_pointer(pointer, "transient"), "only an error can be transient")
        times = opt_nonneg_int(data, "times", pointer, minimum=1)
        return cls(when, data.get("output"), error, transient, times)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A simulated tool: what the agent is told (``name``, ``description``, ``parameters``),
    what its output must satisfy (``returns``), its fixture latency and cost, and its scripted
    ``responses``, tried in order."""

    name: str
    description: str
    parameters: JsonSchema | None
    returns: JsonSchema | None
    side_effect: bool
    agent: str | None
    latency_ms: int | float
    cost_usd: int | float
    responses: tuple[Response, ...]

    @classmethod
    def parse(cls, raw: object, pointer: str) -> ToolSpec:
        data = _object(raw, pointer, "a tool")
        check_keys(data, _TOOL_KEYS, pointer)
        name = req_str(data, "name", pointer, non_empty=True)
        description = req_str(data, "description", pointer) if "description" in data else ""
        schemas: list[JsonSchema | None] = []
        for key in ("parameters", "returns"):
            value = data.get(key)
            schemas.append(None if value is None else JsonSchema.parse(value, f"{pointer}/{key}"))
        agent = data.get("agent")
        if agent is not None and (type(agent) is not str or not agent):
            raise bad(
                f"{pointer}/agent", f"must be a non-empty string or null, got {json_type(agent)}"
            )
        raw_responses = _array(data.get("responses", []), f"{pointer}/responses", "responses")
        responses = tuple(
            Response.parse(r, f"{pointer}/responses/{i}") for i, r in enumerate(raw_responses)
        )
        return cls(
            name,
            description,
            schemas[0],
            schemas[1],
            opt_bool(data, "side_effect", pointer),
            agent,
            opt_nonneg_number(data, "latency_ms", pointer) or 0,
            opt_nonneg_number(data, "cost_usd", pointer) or 0,
            responses,
        )

    def spec(self) -> dict[str, Any]:
        """What the agent is told of the tool: ``name``, ``description``, ``parameters``, and
        ``agent`` (the sub-agent that owns it) when it has one."""
        parameters = {"type": "object"} if self.parameters is None else self.parameters.raw
        spec = {"name": self.name, "description": self.description, "parameters": parameters}
        if self.agent is not None:
            spec["agent"] = self.agent
        return spec


@dataclass(frozen=True, slots=True)
class Caps:
    """Per-task caps; ``None`` is no cap."""

    max_steps: int | None = None
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    max_wall_seconds: float | None = None

    @classmethod
    def parse(cls, raw: object, pointer: str) -> Caps:
        data = _object(raw, pointer, "caps")
        check_keys(data, _CAP_KEYS, pointer)
        cost = opt_nonneg_number(data, "max_cost_usd", pointer)
        wall = opt_nonneg_number(data, "max_wall_seconds", pointer)
        return cls(
            opt_nonneg_int(data, "max_steps", pointer, minimum=1),
            opt_nonneg_int(data, "max_tokens", pointer),
            None if cost is None else float(cost),
            None if wall is None else float(wall),
        )


@dataclass(frozen=True, slots=True)
class ReferenceStep:
    """One call of the known-good script (docs/golden-tasks.md: ``$ref``, ``map``, ``draft``);
    ``source`` is a map step's own ``$ref``: the step whose output it maps over (default: the
    step before)."""

    id: str
    tool: str
    arguments: Mapping[str, Any]
    confirm: str | None = None
    agent: str | None = None
    map: str | None = None
    draft: Mapping[str, Any] | None = None
    source: str | None = None


@dataclass(frozen=True, slots=True)
class Reference:
    steps: tuple[ReferenceStep, ...]
    answer: str | None


def _refs(value: Any, pointer: str, earlier: set[str], mapped: bool) -> None:
    """Check the ``$ref`` and ``$item`` values inside a step's arguments."""
    if type(value) is dict:
        if "$ref" in value:
            check_keys(value, ("$ref", "pointer"), pointer)
            step = value["$ref"]
            if type(step) is not str or step not in earlier:
                raise bad(
                    f"{pointer}/$ref",
                    f"must name an earlier step, got {excerpt(step)}"
                    + (f" (earlier: {', '.join(sorted(earlier))})" if earlier else ""),
                )
            _pointer(value.get("pointer", ""), f"{pointer}/pointer")
            return
        if "$item" in value:
            check_keys(value, ("$item",), pointer)
            if not mapped:
                raise bad(f"{pointer}/$item", "$item is only allowed in a step with map")
            _pointer(value["$item"], f"{pointer}/$item")
            return
        for key, item in value.items():
            _refs(item, join_pointer(pointer, key), earlier, mapped)
    elif type(value) is list:
        for index, item in enumerate(value):
            _refs(item, join_pointer(pointer, index), earlier, mapped)


_TEMPLATE: Final = re.compile(r"\{([A-Za-z0-9_.-]+):(/[^{}]*|)\}")


def _parse_reference(raw: object, tools: Mapping[str, ToolSpec]) -> Reference:
    data = _object(raw, "/reference", "reference")
    check_keys(data, _REFERENCE_KEYS, "/reference")
    raw_steps = _array(data.get("steps", []), "/reference/steps", "steps")
    steps: list[ReferenceStep] = []
    earlier: set[str] = set()
    for index, raw_step in enumerate(raw_steps):
        at = f"/reference/steps/{index}"
        step = _object(raw_step, at, "a reference step")
        check_keys(step, _STEP_KEYS, at)
        step_id = req_str(step, "id", at, non_empty=True)
        if step_id in earlier:
            raise bad(f"{at}/id", f"step id {excerpt(step_id)} is used twice")
        tool = req_str(step, "tool", at, non_empty=True)
        if tool not in tools:
            raise bad(f"{at}/tool", f"names no tool of the task: {excerpt(tool)}")
        arguments = _object(step.get("arguments", {}), f"{at}/arguments", "arguments")
        mapped = step.get("map")
        if mapped is not None:
            mapped = _pointer(mapped, f"{at}/map")
        _refs(arguments, f"{at}/arguments", earlier, mapped is not None)
        if mapped is not None and not steps:
            raise bad(f"{at}/map", "the first step cannot map: map points into an earlier output")
        source = step.get("$ref")
        if source is not None:
            if mapped is None:
                raise bad(f"{at}/$ref", "a step's own $ref goes with map: it names what map reads")
            if type(source) is not str or source not in earlier:
                raise bad(f"{at}/$ref", f"must name an earlier step, got {excerpt(str(source))}")
        draft = step.get("draft")
        if draft is not None:
            draft_data = _object(draft, f"{at}/draft", "draft")
            check_keys(draft_data, _DRAFT_KEYS, f"{at}/draft")
            draft = _object(
                draft_data.get("arguments", {}), f"{at}/draft/arguments", "draft arguments"
            )
        confirm = step.get("confirm")
        if confirm is not None and (type(confirm) is not str or not confirm):
            raise bad(f"{at}/confirm", f"must be a non-empty string, got {json_type(confirm)}")
        agent = step.get("agent")
        if agent is not None and (type(agent) is not str or not agent):
            raise bad(f"{at}/agent", f"must be a non-empty string, got {json_type(agent)}")
        steps.append(ReferenceStep(step_id, tool, arguments, confirm, agent, mapped, draft, source))
        earlier.add(step_id)
    answer = data.get("answer")
    if answer is not None:
        if type(answer) is not str:
            raise bad("/reference/answer", f"must be a string, got {json_type(answer)}")
        for match in _TEMPLATE.finditer(answer):
            if match.group(1) not in earlier:
                raise bad("/reference/answer", f"{match.group(0)} names no step of the reference")
    return Reference(tuple(steps), answer)


@dataclass(frozen=True, slots=True)
class Task:
    """A golden task (the contract's task object), parsed."""

    id: str
    pattern: str
    category: str
    description: str
    prompt: str
    tools: tuple[ToolSpec, ...]
    user_replies: tuple[str, ...]
    policy: Policy
    expected: Expectation | None
    caps: Caps
    reference: Reference | None
    # the task as read: the reference agents get its "reference" member as it was written
    raw: Mapping[str, Any]

    @classmethod
    def from_dict(cls, data: object) -> Task:
        """Parse a task object; raise :class:`InputError` at the bad field's JSON pointer."""
        if type(data) is not dict:
            raise bad("", f"a task must be a JSON object, got {json_type(data)}")
        check_keys(data, _TASK_KEYS, "")
        if "schema_version" not in data:
            raise bad("", "missing required field 'schema_version'")
        parse_schema_version(data["schema_version"], "/schema_version", "task")
        task_id = req_str(data, "id", "", non_empty=True)
        if not _ID.match(task_id):
            raise bad(
                "/id", f"must be letters, digits, '.', '_' and '-' only, got {excerpt(task_id)}"
            )
        pattern = _enum(data, "pattern", PATTERNS)
        category = _enum(data, "category", CATEGORIES)
        description = req_str(data, "description", "") if "description" in data else ""
        prompt = req_str(data, "prompt", "", non_empty=True)
        tools: dict[str, ToolSpec] = {}
        for index, raw in enumerate(_array(data.get("tools", []), "/tools", "tools")):
            tool = ToolSpec.parse(raw, f"/tools/{index}")
            if tool.name in tools:
                raise bad(f"/tools/{index}/name", f"tool {excerpt(tool.name)} is declared twice")
            tools[tool.name] = tool
        replies = _array(data.get("user_replies", []), "/user_replies", "user_replies")
        for index, reply in enumerate(replies):
            if type(reply) is not str or not reply:
                raise bad(
                    f"/user_replies/{index}", f"must be a non-empty string, got {json_type(reply)}"
                )
        if "policy" not in data:
            raise bad("", "missing required field 'policy'")
        try:
            policy = Policy.from_dict(data["policy"])
        except InputError as exc:
            raise exc.nested("policy") from None
        expected = None
        if data.get("expected") is not None:
            expected = Expectation.parse(data["expected"], "/expected")
        caps = Caps() if data.get("caps") is None else Caps.parse(data["caps"], "/caps")
        reference = None
        if data.get("reference") is not None:
            reference = _parse_reference(data["reference"], tools)
        return cls(
            task_id,
            pattern,
            category,
            description,
            prompt,
            tuple(tools.values()),
            tuple(replies),
            policy,
            expected,
            caps,
            reference,
            data,
        )

    def tool(self, name: str) -> ToolSpec | None:
        return next((t for t in self.tools if t.name == name), None)

    @property
    def policy_sha256(self) -> str:
        return self.policy.sha256

    def digest(self) -> str:
        """The sha256 of the task's canonical JSON (sorted keys): what a run record can cite."""
        text = json.dumps(self.raw, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


def parse_task_lines(data: bytes, source: str) -> tuple[list[Task], list[InputError]]:
    """The tasks of a JSON Lines file's bytes, and an error (file, line, pointer) for every bad
    line; blank lines are skipped. Two tasks with one id: the second is an error."""
    tasks: list[Task] = []
    errors: list[InputError] = []
    try:
        text = decode_bytes(data, "JSON Lines")
    except InputError as exc:
        return [], [exc.located(source)]
    seen: dict[str, int] = {}
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            task = Task.from_dict(loads(line))
        except InputError as exc:
            errors.append(exc.located(source, number))
            continue
        except RecursionError:
            errors.append(InputError("nested too deeply", pointer=None, source=source, line=number))
            continue
        if task.id in seen:
            errors.append(
                InputError(
                    f"task id {excerpt(task.id)} is used twice (first on line {seen[task.id]})",
                    pointer="/id",
                    source=source,
                    line=number,
                )
            )
            continue
        seen[task.id] = number
        tasks.append(task)
    return tasks, errors


def load_task_file(path: str) -> tuple[list[Task], list[InputError]]:
    """Read a JSON Lines task file (see :func:`parse_task_lines`); an unreadable file is one
    error."""
    try:
        with open(path, "rb") as stream:
            data = stream.read()
    except OSError as exc:
        return [], [InputError(f"cannot read: {exc.strerror or exc}", pointer=None, source=path)]
    return parse_task_lines(data, path)
