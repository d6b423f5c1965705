"""Schema rules: every tool call must be allowed and match its argument contract."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from agent_reliability_harness._decode import json_type
from agent_reliability_harness.errors import join_pointer
from agent_reliability_harness.model.policy import ArgSpec, Policy, value_has_type
from agent_reliability_harness.model.report import CategoryResult
from agent_reliability_harness.rules._facts import TraceFacts
from agent_reliability_harness.rules._format import show, show_number
from agent_reliability_harness.rules.online import StepAlone, Watch
from agent_reliability_harness.rules.registry import Rule, rule
from agent_reliability_harness.rules.ruleset import RuleSet
from agent_reliability_harness.rules.selection import Findings

CATEGORY = "schema"

UNLISTED_TOOL = rule(
    "ARH-SCH-001",
    decided="before_call",
    category=CATEGORY,
    severity="error",
    title="Tool is not allowed by the policy",
    trigger="A tool_call names a tool that is not in allowed_tools and allow_unlisted_tools is "
    "false. Nothing else about the call is checked.",
    scoring="The call fails its schema check.",
    anchor="the tool_call step",
    remediation="Add the tool to allowed_tools with its argument contract, or stop the agent "
    "from calling it.",
)
NO_TOOL_NAME = rule(
    "ARH-SCH-002",
    decided="before_call",
    category=CATEGORY,
    severity="error",
    title="Tool call has no tool name",
    trigger="A tool_call step has no tool_name, or an empty one.",
    scoring="The call fails its schema check.",
    anchor="the tool_call step",
    remediation="Record the name of the tool that was called in tool_name.",
)
MISSING_ARGUMENT = rule(
    "ARH-SCH-003",
    decided="before_call",
    category=CATEGORY,
    severity="error",
    title="Required argument is missing",
    trigger="A call to an allowed tool lacks an argument listed in its required_arguments. One "
    "finding per missing argument.",
    scoring="The call fails its schema check (once per call, however many arguments are wrong).",
    anchor="the tool_call step",
    remediation="Make the agent pass every required argument, or move the argument to "
    "optional_arguments if the tool does not need it.",
)
WRONG_TYPE = rule(
    "ARH-SCH-004",
    decided="before_call",
    category=CATEGORY,
    severity="error",
    title="Argument has the wrong type",
    trigger="An argument's JSON type does not match its spec: str, int (a whole JSON number "
    "such as 5, never 5.0 or true), float (any number), bool, list, dict; any accepts "
    "everything. The enum, pattern and range checks are skipped for that argument.",
    scoring="The call fails its schema check (once per call, however many arguments are wrong).",
    anchor="the tool_call step",
    remediation="Fix how the agent builds the argument, or correct the type in the policy.",
)
UNDECLARED_ARGUMENT = rule(
    "ARH-SCH-005",
    decided="before_call",
    category=CATEGORY,
    severity="warning",
    title="Argument is not declared in the policy",
    trigger="A call to an allowed tool passes an argument that is neither required nor "
    "optional for that tool. A warning: it does not fail the step.",
    scoring="None: the call's schema check still passes.",
    anchor="the tool_call step",
    remediation="Declare the argument in optional_arguments if it is legitimate; otherwise stop "
    "the agent from sending it.",
)
UNKNOWN_TYPE = rule(
    "ARH-SCH-006",
    decided="before_call",
    category=CATEGORY,
    severity="info",
    title="Policy declares an unknown argument type",
    trigger="Never emitted by this version: an unknown type name is a policy error when the "
    "policy loads. The ID stays registered so that reports of arh 0.2.x that contain it can "
    "still be read and compared.",
    scoring="None.",
    anchor="the tool_call step (in 0.2.x reports)",
    remediation="Use one of the type names str, int, float, bool, list, dict or any.",
    emitted=False,
)
NOT_IN_ENUM = rule(
    "ARH-SCH-007",
    decided="before_call",
    category=CATEGORY,
    severity="error",
    title="Argument value is not one of the allowed values",
    trigger="An argument has an enum and its value equals none of the entries. Equality is "
    "type-strict: true never equals 1; 1 and 1.0 are equal only for float arguments.",
    scoring="The call fails its schema check (once per call, however many arguments are wrong).",
    anchor="the tool_call step",
    remediation="Make the agent pick one of the allowed values, or extend the enum.",
)
PATTERN_MISMATCH = rule(
    "ARH-SCH-008",
    decided="before_call",
    category=CATEGORY,
    severity="error",
    title="Argument value does not match the required pattern",
    trigger="An argument has a pattern and its value is not a string that the regular "
    "expression matches in full (Python syntax, case-sensitive).",
    scoring="The call fails its schema check (once per call, however many arguments are wrong).",
    anchor="the tool_call step",
    remediation="Make the agent produce a value in the expected format, or correct the pattern.",
)
OUT_OF_RANGE = rule(
    "ARH-SCH-009",
    decided="before_call",
    category=CATEGORY,
    severity="error",
    title="Argument value is outside the allowed numeric range",
    trigger="An argument has min and/or max and its value is below min, above max, NaN, or not "
    "a number at all.",
    scoring="The call fails its schema check (once per call, however many arguments are wrong).",
    anchor="the tool_call step",
    remediation="Make the agent keep the value within [min, max], or adjust the bounds.",
)


@dataclass(frozen=True, slots=True)
class _ToolPlan:
    required: tuple[str, ...]
    specs: Mapping[str, ArgSpec]


@dataclass(frozen=True, slots=True)
class Plan:
    tools: Mapping[str, _ToolPlan]
    allow_unlisted: bool


def prepare(policy: Policy) -> Plan:
    tools = {
        name: _ToolPlan(
            tuple(tool.required_arguments), {**tool.required_arguments, **tool.optional_arguments}
        )
        for name, tool in policy.allowed_tools.items()
    }
    return Plan(tools, policy.allow_unlisted_tools)


def _same(a: Any, b: Any, loose_numbers: bool) -> bool:
    ta, tb = type(a), type(b)
    if ta is bool or tb is bool:
        return ta is tb and a == b
    if ta in (int, float) and tb in (int, float):
        return (ta is tb or loose_numbers) and a == b
    if ta is not tb:
        return False
    if ta is list:
        return len(a) == len(b) and all(_same(x, y, False) for x, y in zip(a, b, strict=True))
    if ta is dict:
        return a.keys() == b.keys() and all(_same(a[k], b[k], False) for k in a)
    return bool(a == b)


@dataclass(frozen=True, slots=True)
class _Call:
    tool: str
    at: int
    step_id: str


def _check_value(call: _Call, arg: str, spec: ArgSpec, value: Any, out: Findings) -> bool:
    """Whether ``value`` meets its contract, or fails it only by rules switched off."""
    typed = spec.type == "any" or value_has_type(spec.type, value)
    if typed and spec.enum is None and spec.regex is None and spec.min is None and spec.max is None:
        return True  # the common case, before any message text is made
    in_enum = pattern_ok = True
    problem = ""
    if typed:  # decide first: messages are made only for a value that fails
        if spec.enum is not None:
            loose = spec.type == "float"
            in_enum = any(_same(value, option, loose) for option in spec.enum)
        if spec.regex is not None:
            pattern_ok = type(value) is str and spec.regex.fullmatch(value) is not None
        if spec.min is not None or spec.max is not None:
            problem = _range_problem(value, spec)
        if in_enum and pattern_ok and not problem:
            return True
    where = f"tool {call.tool!r} argument {arg!r}"
    shown = show(value)

    kept = 0

    def add(rule: Rule, message: str, expected: str, observed: str = shown) -> None:
        nonlocal kept
        kept |= out.add(
            rule.finding(
                f"{where} {message}",
                at=call.at,
                step_id=call.step_id,
                subject=join_pointer("/arguments", arg),
                expected=expected,
                observed=observed,
            )
        )

    if not typed:
        kind = json_type(value)
        add(
            WRONG_TYPE,
            f"must be of type {spec.type!r} but is a JSON {kind} ({shown})",
            f"type {spec.type!r}",
            f"{kind} {shown}",
        )
        return not kept
    if not in_enum:
        allowed = show(list(spec.enum or ()))
        add(NOT_IN_ENUM, f"value {shown} is not one of the allowed values {allowed}",
            f"one of {allowed}")  # fmt: skip
    if not pattern_ok:
        add(
            PATTERN_MISMATCH,
            f"value {shown} is a {json_type(value)}, not a string"
            if type(value) is not str
            else f"value {shown} does not match the pattern /{spec.pattern}/",
            f"a string fully matching /{spec.pattern}/",
        )
    if problem:
        bounds = " and ".join(
            f"{op} {show_number(bound)}"
            for op, bound in ((">=", spec.min), ("<=", spec.max))
            if bound is not None
        )
        add(OUT_OF_RANGE, f"value {problem}", f"a number {bounds}")
    return not kept


def _range_problem(value: Any, spec: ArgSpec) -> str:
    kind = type(value)
    if kind is not int and kind is not float:
        return f"{show(value)} is a {json_type(value)}, not a number"
    if kind is float and math.isnan(value):
        return "NaN cannot be within any range"
    if spec.min is not None and value < spec.min:
        return f"{show_number(value)} is below the minimum {show_number(spec.min)}"
    if spec.max is not None and value > spec.max:
        return f"{show_number(value)} is above the maximum {show_number(spec.max)}"
    return ""


def evaluate(facts: TraceFacts, plan: Plan, out: Findings) -> CategoryResult:
    steps = facts.steps
    checked = len(facts.tool_calls)
    failed = 0
    tools = plan.tools
    for at in facts.tool_calls:
        step = steps[at]
        name = step.tool_name
        if not name:
            failed += out.add(
                NO_TOOL_NAME.finding(
                    "tool_call step has no tool_name",
                    at=at,
                    step_id=step.step_id,
                    expected="a non-empty tool_name",
                    observed="tool_name is empty" if name == "" else "tool_name is missing",
                )
            )
            continue
        tool = tools.get(name)
        if tool is None:
            if plan.allow_unlisted:
                continue
            failed += out.add(
                UNLISTED_TOOL.finding(
                    f"tool {name!r} is not in the policy's allowed_tools",
                    at=at,
                    step_id=step.step_id,
                    subject=name,
                    expected="a tool listed in allowed_tools",
                    observed=f"a call to {name!r}",
                )
            )
            continue
        args = step.arguments or {}
        call = _Call(name, at, step.step_id)
        ok = True
        for required in tool.required:
            if required not in args and out.add(
                MISSING_ARGUMENT.finding(
                    f"call to {name!r} is missing the required argument {required!r}",
                    at=at,
                    step_id=step.step_id,
                    subject=join_pointer("/arguments", required),
                    expected=f"argument {required!r} present",
                    observed="argument absent",
                )
            ):
                ok = False
        specs = tool.specs
        for arg, value in args.items():
            spec = specs.get(arg)
            if spec is None:
                out.add(
                    UNDECLARED_ARGUMENT.finding(
                        f"call to {name!r} passes the undeclared argument {arg!r}",
                        at=at,
                        step_id=step.step_id,
                        subject=join_pointer("/arguments", arg),
                        expected="only arguments declared for the tool",
                        observed=f"argument {arg!r} = {show(value)}",
                    )
                )
            elif not _check_value(call, arg, spec, value, out):
                ok = False
        if not ok:
            failed += 1
    if not checked:
        return CategoryResult(CATEGORY, False, 100.0, 0, 0)
    return CategoryResult(CATEGORY, True, 100.0 * (checked - failed) / checked, checked, failed)


def watch(policy: Policy, plan: Plan) -> Watch:  # noqa: ARG001
    """Every contract rule, run on each tool call alone."""
    return StepAlone(evaluate, plan, lambda probe: probe.step.type == "tool_call")


RULE_SET: Final = RuleSet(CATEGORY, prepare, evaluate, watch)
