"""Condition and relation rules (policy language 1.1).

A *condition* applies to the calls of one tool whose arguments satisfy its ``when`` clauses; such a
call is forbidden, or needs earlier successful calls of other tools (optionally with matching
arguments). A *relation* compares an argument of a call (or the number of its values) with a
reference in the output of the latest earlier successful call of another tool (optionally the one
with matching arguments, and only when that output meets the relation's ``source.when``): the
value at a pointer, the values a pattern extracts from text, or their number, scaled and shifted
by constants.

One pass over the tool calls, in order. Each successful call is indexed under the argument values
that conditions and relations match on, so a later call finds its prior or its source by one
dictionary lookup; each output is parsed and searched at most once per pointer. The cost is linear
in the number of calls times the number of conditions and relations, plus the size of the
arguments and outputs they read. The sweep (:class:`Sweep`) is also what the runtime monitor keeps
for a run, so both check a call the same way.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final

from agent_reliability_harness.errors import join_pointer
from agent_reliability_harness.model._paths import (
    ArgPath,
    collect,
    collect_located,
    json_key,
    parsed_output,
)
from agent_reliability_harness.model.policy import Policy
from agent_reliability_harness.model.policy.predicates import all_hold
from agent_reliability_harness.model.report import CategoryResult, Finding
from agent_reliability_harness.model.trace import Step
from agent_reliability_harness.rules._facts import TraceFacts
from agent_reliability_harness.rules._format import show
from agent_reliability_harness.rules.online import Probe, Watch
from agent_reliability_harness.rules.registry import Need, rule
from agent_reliability_harness.rules.ruleset import RuleSet
from agent_reliability_harness.rules.selection import Findings

if TYPE_CHECKING:
    # the parser of the 1.1 sections is loaded only for policies that declare 1.1
    from agent_reliability_harness.model.policy.conditions import (
        Condition,
        Prior,
        Reference,
        Relation,
    )

Paths = tuple[ArgPath, ...]

CATEGORY = "conditions"


def _has_relations(policy: Policy) -> bool:
    return policy.extensions is not None and bool(policy.extensions.relations)


LANGUAGE: Final = "1.1"

PRIOR_MISSING = rule(
    "ARH-CND-001",
    decided="before_call",
    category=CATEGORY,
    severity="error",
    title="Conditional call without the required prior call",
    trigger="A call meets the when clauses of a condition with require_prior, and for at least "
    "one of the required tools there is no earlier call with status ok (with the same values at "
    "the match paths, when the requirement has a match). One check per condition and call that "
    "meets its when clauses.",
    scoring="One failed conditions check per call and condition.",
    anchor="the call",
    remediation="Make the agent perform the required step first (an approval, a lookup that "
    "identifies the customer or the record), or narrow the condition.",
)
FORBIDDEN_BY_CONDITION = rule(
    "ARH-CND-002",
    decided="before_call",
    category=CATEGORY,
    severity="error",
    title="Call is forbidden by a condition",
    trigger="A call meets the when clauses of a condition with forbid: true. One check per "
    "condition and call that meets its when clauses.",
    scoring="One failed conditions check per call and condition.",
    anchor="the call",
    remediation="Stop the agent from making such calls (refuse, escalate, or ask the user for "
    "an allowed alternative), or narrow the condition if it forbids legitimate calls.",
)
RELATION_VIOLATED = rule(
    "ARH-CND-003",
    decided="before_call",
    category=CATEGORY,
    severity="error",
    title="Argument violates its relation to an earlier output",
    trigger="A call meets a relation's when clauses, and a value at the relation's argument "
    "path does not stand in the relation's operator to the reference taken from the output of "
    "the latest earlier successful call of the source tool (==, !=, <, <=, >, >= compare with "
    "the one value at the output pointer; in and not_in with the values there). Ordering needs "
    "two numbers or two strings. One check per relation and call; one finding per bad value.",
    scoring="One failed conditions check per call and relation.",
    anchor="the call",
    remediation="Make the agent take the value from what it looked up (an amount within the "
    "total, an id from the customer's profile) instead of from the conversation or a guess.",
)
RELATION_UNCHECKED = rule(
    "ARH-CND-004",
    decided="before_call",
    needs=(Need("tool_output", "relations", _has_relations),),
    category=CATEGORY,
    severity="error",
    title="Relation has no earlier output to compare with",
    trigger="A call meets a relation's when clauses and has a value at the argument path, but "
    "there is no earlier successful call of the source tool (with the same values at the match "
    "paths), or its output has no value at the pointer: nothing or null there, or, with *, no "
    "object or array for the first * to run over (an empty array is a value, the empty set). "
    "Not raised when the relation sets if_missing: skip.",
    scoring="One failed conditions check per call and relation.",
    anchor="the call",
    remediation="Make the agent look the reference up before acting on it, or set if_missing: "
    "skip when acting without a lookup is acceptable.",
)


# An index of the successful calls of one tool, keyed by the values at some of their argument
# paths: (tool, the paths' texts). Plain strings, so that looking one up on every call is cheap
# (a path's text identifies it).
_IndexKey = tuple[str, tuple[str, ...]]


def _index_key(tool: str, paths: Paths) -> _IndexKey:
    return tool, tuple(path.text for path in paths)


@dataclass(frozen=True, slots=True)
class _Lookup:
    """How a call finds an earlier call of ``tool``: the values at ``mine`` (its own argument
    paths) looked up in ``index``, the earlier calls keyed by the values at their paths."""

    mine: Paths
    index: _IndexKey


@dataclass(frozen=True, slots=True)
class Plan:
    # tool -> its conditions, each with the lookup of each of its require_prior entries
    conditions: Mapping[str, tuple[tuple[Condition, tuple[_Lookup, ...]], ...]]
    # tool -> its relations, each with the lookup of its source call in each source tool
    relations: Mapping[str, tuple[tuple[Relation, tuple[_Lookup, ...]], ...]]
    # tool -> the indexes its successful calls feed, with the paths each is keyed by
    indexes: Mapping[str, tuple[tuple[_IndexKey, Paths], ...]]


def prepare(policy: Policy) -> Plan | None:
    ext = policy.extensions
    if ext is None or not (ext.conditions or ext.relations):
        return None
    conditions: dict[str, list[tuple[Condition, tuple[_Lookup, ...]]]] = {}
    relations: dict[str, list[tuple[Relation, tuple[_Lookup, ...]]]] = {}
    indexes: dict[str, dict[_IndexKey, Paths]] = {}

    def lookup(tool: str, match: tuple[tuple[ArgPath, ArgPath], ...]) -> _Lookup:
        theirs = tuple(path for _, path in match)
        index = _index_key(tool, theirs)
        indexes.setdefault(tool, {})[index] = theirs
        return _Lookup(tuple(path for path, _ in match), index)

    for condition in ext.conditions:
        lookups = tuple(lookup(prior.tool, prior.match) for prior in condition.require_prior)
        conditions.setdefault(condition.tool, []).append((condition, lookups))
    for relation in ext.relations:
        sources = tuple(lookup(tool, relation.source_match) for tool in relation.source_tools)
        relations.setdefault(relation.tool, []).append((relation, sources))
    return Plan(
        {tool: tuple(group) for tool, group in conditions.items()},
        {tool: tuple(group) for tool, group in relations.items()},
        {tool: tuple(group.items()) for tool, group in indexes.items()},
    )


def _key(arguments: Mapping[str, Any], paths: Paths) -> tuple[Any, ...] | None:
    """The values at ``paths`` (each a single location) as a hashable key; None if one is absent."""
    parts: list[Any] = []
    for path in paths:
        found = collect(arguments, path)
        if not found:
            return None
        parts.append(json_key(found[0]))
    return tuple(parts)


class Sweep:
    """The conditions and relations of one run, checked call by call in trace order.

    :meth:`check` a named call, then :meth:`record` it if it succeeded. Both cost O(the
    conditions and relations of the tool, plus the size of the arguments and outputs they read),
    whatever the length of the run: offline validation sweeps a whole trace with one, and the
    runtime monitor keeps one per run.
    """

    __slots__ = ("latest", "outputs", "plan", "references")

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        # index -> key -> (position, step) of the latest successful call with those values
        self.latest: dict[_IndexKey, dict[tuple[Any, ...], tuple[int, Step]]] = {}
        self.outputs: dict[int, Any] = {}
        self.references: dict[tuple[int, str, bool], tuple[bool, Any]] = {}

    def record(self, at: int, step: Step) -> None:
        """Index a successful call under the values its tool's indexes match on."""
        arguments = step.arguments or {}
        for index, paths in self.plan.indexes.get(step.tool_name or "", ()):
            key = _key(arguments, paths)
            if key is not None:
                self.latest.setdefault(index, {})[key] = (at, step)

    def find(self, lookup: _Lookup, args: Any) -> tuple[int, Step] | None:
        """The latest earlier successful call that ``lookup`` finds for ``args``."""
        key = _key(args, lookup.mine)
        if key is None:
            return None
        return self.latest.get(lookup.index, {}).get(key)

    def output(self, at: int, step: Step) -> Any:
        """The output of the call at ``at`` as data, parsed once."""
        if at not in self.outputs:
            self.outputs[at] = parsed_output(step.output)
        return self.outputs[at]

    def reference(self, at: int, step: Step, relation: Relation) -> tuple[bool, Any]:
        """(found, value or set of keys) of the relation's reference in ``step``, at ``at``."""
        ref = relation.reference
        members = relation.op in ("in", "not_in")
        cache_key = (at, _reference_key(ref), members)
        cached = self.references.get(cache_key)
        if cached is not None:
            return cached
        result = (
            _pointer_reference(self.output(at, step), ref.pointer, members)
            if ref.plain and ref.pointer is not None
            else _extended_reference(self.output(at, step), step.output, ref, members)
        )
        self.references[cache_key] = result
        return result

    def check(self, at: int, step: Step, out: Findings) -> tuple[int, int]:
        """Check the named call ``step`` at position ``at`` against what was recorded before it;
        append its findings to ``out`` and return (checks made, checks failed)."""
        plan = self.plan
        name = step.tool_name or ""
        args = step.arguments or {}
        checks = failed = 0
        for condition, lookups in plan.conditions.get(name, ()):
            if not condition.applies(args):
                continue
            checks += 1
            if condition.forbid:
                failed += out.add(_forbidden(step, at, condition))
                continue
            missing = [
                prior
                for prior, lookup in zip(condition.require_prior, lookups, strict=True)
                if self.find(lookup, args) is None
            ]
            if missing:
                failed += out.add(_prior_missing(step, at, condition, missing))
        for relation, sources in plan.relations.get(name, ()):
            if not relation.applies(args):
                continue
            values = _argument_values(args, relation)
            if not values:
                continue
            source = self.find(sources[0], args)
            for lookup in sources[1:]:  # the latest call of any of the source tools
                other = self.find(lookup, args)
                if other is not None and (source is None or other[0] > source[0]):
                    source = other
            if (
                source is not None
                and relation.source_when
                and not all_hold(relation.source_when, self.output(*source))
            ):
                continue  # the source's output is not one the relation is about
            found, reference = (
                (False, None) if source is None else self.reference(*source, relation)
            )
            if not found:
                if relation.if_missing == "skip":
                    continue
                checks += 1
                source_id = source_tool = None
                if source is not None:
                    source_id, source_tool = source[1].step_id, source[1].tool_name
                failed += out.add(_unchecked(step, at, relation, source_id, source_tool))
                continue
            assert source is not None
            checks += 1
            bad = [(p, v) for p, v in values if not _holds(v, relation.op, reference)]
            if bad:
                failed += out.add_all(
                    _violated(
                        step,
                        at=at,
                        relation=relation,
                        source=source[1],
                        pointer=p,
                        value=v,
                        reference=reference,
                    )
                    for p, v in bad
                )
        return checks, failed


def _argument_values(args: Mapping[str, Any], relation: Relation) -> list[tuple[str, Any]]:
    """(JSON pointer in the step, value) of each value the relation compares: the values at its
    argument path, or their number (at the path up to its first '*'); none: not checked."""
    path = relation.argument
    if not relation.count_argument:
        return collect_located(args, path, "/arguments")
    counted = count_at(args, path)
    if counted is None:
        return []
    head = path.segments[: path.segments.index("*")] if path.wildcard else path.segments
    return [(join_pointer("/arguments", *head), counted)]


def _pointer_reference(output: Any, pointer: ArgPath, members: bool) -> tuple[bool, Any]:
    """The reference at a plain output pointer (the form of 1.1 before extraction objects)."""
    values = collect(output, pointer)
    if members:
        if pointer.wildcard:
            # the values reached through '*', even none: the output has a value at the
            # pointer when what the first '*' runs over is an object or an array
            found = _wildcard_found(output, pointer)
        else:
            found = bool(values) and values[0] is not None
            if found and type(values[0]) is list:
                values = values[0]  # its elements; an empty array is an empty set
        return found, frozenset(json_key(v) for v in values)
    # null, or no output at all, is no value to compare with
    value = values[0] if values else None
    return value is not None, value


def _wildcard_found(data: Any, path: ArgPath) -> bool:
    """Whether what the first '*' of ``path`` runs over, in ``data``, is an object or array."""
    head = path.segments[: path.segments.index("*")]
    return any(type(v) in (dict, list) for v in collect(data, ArgPath("", head, False)))


def count_at(data: Any, path: ArgPath) -> int | None:
    """The number of values at ``path`` in ``data`` (``{"count": path}``): with '*', how many
    it reaches, when what the first '*' runs over is an object or an array; without, the
    elements of the array or the members of the object found there. None: nothing to count."""
    if path.wildcard:
        return len(collect(data, path)) if _wildcard_found(data, path) else None
    values = collect(data, path)
    if values and type(values[0]) in (dict, list):
        return len(values[0])
    return None


# a string that is, in full, a JSON number: what a pattern extracts from text reads as a number
# where it meets one (a comparison with a number, arithmetic)
_NUMBER: Final = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


@dataclass(frozen=True, slots=True)
class _Text:
    """A value a pattern extracted: its text, and the number it reads as (None if it does not)."""

    text: str
    number: int | float | None


@dataclass(frozen=True, slots=True)
class _Members:
    """The set a relation's ``in`` and ``not_in`` compare with, when a value in it can have two
    keys (extracted text that reads as a number): the keys, and how many values they are."""

    keys: frozenset[Any]
    size: int


def _text(text: str) -> _Text:
    if _NUMBER.fullmatch(text) is None:
        return _Text(text, None)
    if text.isdigit() or (text[0] == "-" and text[1:].isdigit()):
        return _Text(text, int(text))
    number = float(text)
    return _Text(text, number if math.isfinite(number) else None)


def _number(value: Any) -> int | float | None:
    """A reference value as a number for arithmetic: a number (a boolean is not one), or text
    that reads as one; anything else is not a number."""
    if type(value) is _Text:
        return value.number
    if type(value) is int or type(value) is float:
        return value
    return None


def _keys(value: Any) -> tuple[Any, ...]:
    """The keys under which a reference value is a member of a set: extracted text is its
    string, and the number it reads as."""
    if type(value) is _Text:
        if value.number is None:
            return (json_key(value.text),)
        return json_key(value.text), json_key(value.number)
    return (json_key(value),)


def _reference_key(ref: Reference) -> str:
    """A cache key for a reference within one run (a pattern and a pointer never share one)."""
    if ref.plain and ref.pointer is not None:
        return ref.pointer.text
    if ref.pointer is not None:
        what = "p" + ref.pointer.text
    else:
        assert ref.extract is not None
        what = "r" + (ref.extract.pattern or "")
    return repr((what, ref.count, ref.times, ref.plus))


def _extended_reference(data: Any, output: Any, ref: Reference, members: bool) -> tuple[bool, Any]:
    """The reference of an extraction object, a count or arithmetic (see POLICY-SPEC.md)."""
    values: list[Any]
    if ref.count:
        if ref.pointer is not None:
            counted = count_at(data, ref.pointer)
        else:  # a pattern: how many values it extracts from the text there is
            assert ref.extract is not None
            counted = None if output is None else len(ref.extract.find(output))
        if counted is None:
            return False, frozenset() if members else None
        values = [counted]
        found = True
    elif ref.pointer is not None:
        found, value = _pointer_reference(data, ref.pointer, False)
        if ref.pointer.wildcard:
            found = _wildcard_found(data, ref.pointer)
            values = collect(data, ref.pointer)
        else:
            values = [value] if found else []
            if members and found and type(value) is list:
                values = value
    else:  # a pattern: every value it extracts, as text (the first for a comparison)
        assert ref.extract is not None
        found = output is not None
        values = [_text(f.value) for f in ref.extract.find(output)] if found else []
        if not members:
            found = bool(values)
            values = values[:1]
    if ref.arithmetic:
        times = ref.times or (1,)
        plus = 0 if ref.plus is None else ref.plus
        results: list[Any] = []
        for value in values:
            number = _number(value)
            if number is None:
                continue
            for factor in times:
                result = number * factor + plus
                if type(result) is int or math.isfinite(result):
                    results.append(result)
        values = results
        if not members:
            found = bool(values)
    if members:
        keys = frozenset(key for value in values for key in _keys(value))
        return found, _Members(keys, len({_keys(value)[0] for value in values}))
    return found, values[0] if found else None


def _holds(value: Any, op: str, reference: Any) -> bool:
    if type(reference) is _Members:
        reference = reference.keys
    elif type(reference) is _Text:
        # extracted text meets a number: it counts as the number it reads as, if any
        if type(value) in (int, float) and reference.number is not None:
            reference = reference.number
        else:
            reference = reference.text
    if op == "in":
        return json_key(value) in reference
    if op == "not_in":
        return json_key(value) not in reference
    if op == "==":
        return bool(json_key(value) == json_key(reference))
    if op == "!=":
        return bool(json_key(value) != json_key(reference))
    numbers = (int, float)
    if type(value) in numbers and type(reference) in numbers:
        pass
    elif not (type(value) is str and type(reference) is str):
        return False  # not comparable
    if op == "<":
        return bool(value < reference)
    if op == "<=":
        return bool(value <= reference)
    if op == ">":
        return bool(value > reference)
    return bool(value >= reference)


def evaluate(facts: TraceFacts, plan: Plan | None, out: Findings) -> CategoryResult:
    if plan is None:
        return CategoryResult(CATEGORY, False, 100.0, 0, 0)
    if plan.relations and "tool_output" in facts.missing:
        # the source recorded no tool results: no relation has anything to compare with, which
        # is not the agent's doing (the report lists the relations as not applicable)
        plan = replace(plan, relations={})
    sweep = Sweep(plan)
    steps = facts.steps
    checks = failed = 0
    for at in facts.named_calls:
        step = steps[at]
        made, bad = sweep.check(at, step, out)
        checks += made
        failed += bad
        if step.status == "ok":
            sweep.record(at, step)
    if not checks:
        return CategoryResult(CATEGORY, False, 100.0, 0, 0)
    return CategoryResult(CATEGORY, True, 100.0 * (checks - failed) / checks, checks, failed)


def _describe_prior(prior: Prior) -> str:
    if not prior.match:
        return repr(prior.tool)
    pairs = ", ".join(f"{theirs.text} = this call's {mine.text}" for mine, theirs in prior.match)
    return f"{prior.tool!r} with {pairs}"


def _forbidden(step: Step, at: int, condition: Condition) -> Finding:
    return FORBIDDEN_BY_CONDITION.finding(
        f"call to {step.tool_name!r} is forbidden by condition {condition.name!r}",
        at=at,
        step_id=step.step_id,
        subject=condition.name,
        expected=f"no call to {condition.tool!r} that meets the condition",
        observed=f"arguments {show(step.arguments or {})}",
    )


def _prior_missing(step: Step, at: int, condition: Condition, missing: list[Prior]) -> Finding:
    wanted = " and ".join(_describe_prior(p) for p in missing)
    return PRIOR_MISSING.finding(
        f"call to {step.tool_name!r} meets condition {condition.name!r} but no successful call "
        f"of {wanted} came before it",
        at=at,
        step_id=step.step_id,
        subject=condition.name,
        expected=f"an earlier successful call of {wanted}",
        observed="none before this call",
    )


def _unchecked(
    step: Step, at: int, relation: Relation, source_id: str | None, source_tool: str | None
) -> Finding:
    ref = relation.reference
    tools = " or ".join(repr(tool) for tool in relation.source_tools)
    target = ref.describe(source_tool or "|".join(relation.source_tools))
    if source_id is None:
        match = "" if not relation.source_match else " with matching arguments"
        why = f"no earlier successful call of {tools}{match}"
    elif ref.plain and ref.pointer is not None:
        why = (
            f"the output of step {source_id!r} has no value at "
            f"{ref.pointer.text or '(the whole output)'!r}"
        )
    else:
        what = "number" if ref.count or ref.arithmetic else "value"
        why = f"the output of step {source_id!r} gives no {what} for {target}"
    return RELATION_UNCHECKED.finding(
        f"relation {relation.name!r} cannot be checked for {step.tool_name!r}: {why}",
        at=at,
        step_id=step.step_id,
        subject=relation.name,
        expected=f"{relation.describe_argument()} {relation.op} {target}",
        observed=why,
    )


def _violated(
    step: Step,
    *,
    at: int,
    relation: Relation,
    source: Step,
    pointer: str,
    value: Any,
    reference: Any,
) -> Finding:
    source_id = source.step_id
    target = relation.reference.describe(source.tool_name or "")
    if type(reference) is _Members:
        shown = f"one of {reference.size} values"
    elif relation.op in ("in", "not_in"):
        shown = f"one of {len(reference)} values"
    else:
        shown = show(reference.text if type(reference) is _Text else reference)
    return RELATION_VIOLATED.finding(
        f"{pointer} = {show(value)} of {step.tool_name!r} breaks relation {relation.name!r}: "
        f"expected {relation.op} {target} ({shown}, from step {source_id!r})",
        at=at,
        step_id=step.step_id,
        subject=f"{relation.name} {pointer}",
        expected=f"{relation.describe_argument()} {relation.op} {target} ({shown})",
        observed=show(value),
    )


class _Conditions(Watch):
    """Conditions and relations (ARH-CND-001..004, policy language 1.1).

    The monitor keeps the rule's own :class:`~agent_reliability_harness.rules.conditions.Sweep`
    for the run: the latest successful call per tool and match values, and each source's
    parsed output. A call is checked against it before it runs; a successful call is indexed
    once recorded. O(the conditions and relations of the tool, plus the size of the arguments
    and outputs they read) per call.
    """

    __slots__ = ("_sweep",)

    def __init__(self, plan: Plan) -> None:
        self._sweep = Sweep(plan)

    def look(self, probe: Probe, out: Findings) -> None:
        if probe.tool is not None:
            self._sweep.check(probe.at, probe.step, out)

    def commit(self, probe: Probe) -> None:
        if probe.tool is not None and probe.step.status == "ok":
            self._sweep.record(probe.at, probe.step)


def watch(policy: Policy, plan: Plan | None) -> Watch | None:  # noqa: ARG001
    return None if plan is None else _Conditions(plan)


RULE_SET: Final = RuleSet(CATEGORY, prepare, evaluate, watch, language="1.1")
