"""The policy: what a run of an agent is allowed and required to do.

A policy is a contract, so parsing is strict: every key must be known (a typo would silently
switch a rule off), every value must have the documented type, and every regular expression is
compiled here, once, so a broken pattern is reported against the policy file.

This module holds the :class:`Policy` aggregate: its ``from_dict`` and canonical form, the schema
versions and the wiring of the sections, each of which lives in a module named for what it is:

- ``tools``: ``allowed_tools``, the tools and their argument contracts
- ``budgets``: ``budgets``
- ``content``: ``unsafe_patterns`` and ``grounding``
- ``sequence``: ``sequence``, required and forbidden tools and a partial call order
- ``completion``: ``completion`` and ``error_handling``
- ``failures``: ``tool_failures``, how a failed call looks when the source says so only in words

and, in policy language 1.1 (``"schema_version": "1.1"`` or a later 1.x; POLICY-SPEC.md, "Policy
language 1.1"), ``provenance``, ``conditions`` (with ``relations``; their ``when`` clauses in
``predicates``), ``confirmation`` and ``loops``. Names of tools and arguments in those sections are
checked against ``allowed_tools`` where the policy declares them (``_context``).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from agent_reliability_harness._decode import (
    bad,
    check_json_values,
    check_keys,
    check_tree,
    json_type,
    opt_bool,
    opt_str,
    parse_schema_version,
    req_str,
    section,
)
from agent_reliability_harness.errors import excerpt, join_pointer
from agent_reliability_harness.model.policy._parse import risky_warnings
from agent_reliability_harness.model.policy.budgets import Budgets
from agent_reliability_harness.model.policy.completion import Completion, ErrorHandling
from agent_reliability_harness.model.policy.content import (
    Grounding,
    UnsafePattern,
    parse_unsafe_patterns,
)
from agent_reliability_harness.model.policy.selection import RuleSelection
from agent_reliability_harness.model.policy.sequence import Sequence
from agent_reliability_harness.model.policy.tools import (
    TYPE_NAMES,
    ArgSpec,
    ToolSchema,
    value_has_type,
)

if TYPE_CHECKING:
    from agent_reliability_harness.model.policy.answers import Answers
    from agent_reliability_harness.model.policy.conditions import Condition, Relation
    from agent_reliability_harness.model.policy.confirmation import Confirmation
    from agent_reliability_harness.model.policy.failures import ToolFailures
    from agent_reliability_harness.model.policy.loops import Loops
    from agent_reliability_harness.model.policy.provenance import Provenance

__all__ = [
    "KEYS",
    "TYPE_NAMES",
    "ArgSpec",
    "Budgets",
    "Completion",
    "ErrorHandling",
    "Extensions",
    "Grounding",
    "Policy",
    "RuleSelection",
    "Sequence",
    "ToolSchema",
    "UnsafePattern",
    "minor_version",
    "parse_extensions",
    "risky_warnings",
    "value_has_type",
]

# The top-level sections of language 1.1, in the order the canonical form writes them.
KEYS: Final = ("provenance", "conditions", "relations", "confirmation", "loops")


def minor_version(version: str) -> int:
    """The minor part of a schema_version text: ``"1.1"`` -> 1; ``"1"`` and ``"1.x"`` -> 0."""
    parts = version.split(".", 2)
    if len(parts) > 1 and parts[1].isascii() and parts[1].isdigit():
        return int(parts[1])
    return 0


def _risky_patterns(
    tools: Mapping[str, ToolSchema], patterns: list[UnsafePattern], allow: bool
) -> tuple[str, ...]:
    located: list[tuple[str, str, int]] = [
        (f"/unsafe_patterns/{i}", p.pattern, re.IGNORECASE) for i, p in enumerate(patterns)
    ]
    for name, tool in tools.items():
        for key in ("required_arguments", "optional_arguments"):
            for arg, spec in getattr(tool, key).items():
                if spec.pattern is not None:
                    pointer = join_pointer("/allowed_tools", name, key, arg, "pattern")
                    located.append((pointer, spec.pattern, 0))
    return risky_warnings(located, allow)


_POLICY_KEYS: Final = (
    "$schema",
    "schema_version",
    "policy_id",
    "description",
    "allow_unlisted_tools",
    "allowed_tools",
    "budgets",
    "unsafe_patterns",
    "grounding",
    "sequence",
    "error_handling",
    "tool_failures",
    "completion",
    "rules",
    *KEYS,  # policy language 1.1
    "answers",  # policy language 1.2
)


class _NotPlainError(Exception):
    """A value that is not plain JSON data, left to ``copy.deepcopy``."""


def _plain_copy(value: Any) -> Any:
    """A deep copy of plain JSON data (``dict``, ``list``, ``str``, numbers, booleans, None),
    what a policy file holds, several times faster than ``copy.deepcopy``."""
    kind = type(value)
    if kind is dict:
        return {key: _plain_copy(item) for key, item in value.items()}
    if kind is list:
        return [_plain_copy(item) for item in value]
    if value is None or kind is str or kind is int or kind is float or kind is bool:
        return value
    raise _NotPlainError


def _copy(data: dict[str, Any]) -> dict[str, Any]:
    """A deep copy, so that changing the caller's dict (an enum list) cannot change the policy;
    the dict itself when a value cannot be copied (it is refused later, by its pointer)."""
    try:
        return _plain_copy(data)  # type: ignore[no-any-return]
    except (_NotPlainError, RecursionError):
        pass
    try:  # values built in Python: sets, tuples, objects, a list inside itself
        return copy.deepcopy(data)
    except Exception:  # noqa: BLE001 - any value that deepcopy refuses
        return data


@dataclass(frozen=True, slots=True)
class Policy:
    """A parsed, validated policy. Build it with :meth:`from_dict`."""

    policy_id: str
    schema_version: str = "1"
    description: str | None = None
    allow_unlisted_tools: bool = False
    allowed_tools: Mapping[str, ToolSchema] = field(default_factory=dict)
    budgets: Budgets = field(default_factory=Budgets)
    unsafe_patterns: tuple[UnsafePattern, ...] = ()
    grounding: Grounding = field(default_factory=Grounding)
    sequence: Sequence = field(default_factory=Sequence)
    error_handling: ErrorHandling = field(default_factory=ErrorHandling)
    completion: Completion = field(default_factory=Completion)
    # problems accepted on request (such as risky patterns): "<pointer>: <message>"
    warnings: tuple[str, ...] = field(default=(), compare=False)
    # the sections of policy language 1.1; None when the policy declares version 1.0
    extensions: Extensions | None = None
    # rules switched off or given another severity (the ``rules`` section)
    rules: RuleSelection = field(default_factory=RuleSelection)
    # how failed calls look when the source says so only in their output (``tool_failures``)
    tool_failures: ToolFailures | None = None
    # the answer checks (``answers``, language 1.2); None when the policy has none
    answers: Answers | None = None

    @classmethod
    def from_dict(cls, data: object, *, allow_risky_patterns: bool = False) -> Policy:
        """Parse a policy; raise :class:`InputError` naming the bad key's JSON pointer.

        A regular expression in the exponential-backtracking shape (see ``_regex``) is an error,
        or, with ``allow_risky_patterns``, a warning kept in :attr:`warnings`.
        """
        if type(data) is not dict:
            raise bad("", f"a policy must be a JSON object, got {json_type(data)}")
        # JSON has neither keys other than strings nor values that contain themselves; a policy
        # built in Python may: one walk refuses both, before any other walk (which would not end)
        check_tree(data, "")
        data = _copy(data)
        version = parse_schema_version(data.get("schema_version"), "/schema_version", "policy")
        check_keys(data, _POLICY_KEYS, "")
        policy_id = req_str(data, "policy_id", "", non_empty=True)
        opt_str(data, "$schema", "")
        tools_raw = section(data, "allowed_tools")
        tools: dict[str, ToolSchema] = {}
        for name, spec in tools_raw.items():
            tools[name] = ToolSchema.from_value(name, spec, join_pointer("/allowed_tools", name))
        patterns = parse_unsafe_patterns(data.get("unsafe_patterns"))
        allow_unlisted = opt_bool(data, "allow_unlisted_tools", "")
        sequence = Sequence.from_section(section(data, "sequence"))
        if not allow_unlisted:
            for key in ("required_tools", "call_order"):
                for index, name in enumerate(getattr(sequence, key)):
                    if name not in tools:
                        raise bad(
                            f"/sequence/{key}/{index}",
                            f"tool {excerpt(name)} is not in allowed_tools, so every call to it "
                            "would be rejected; add it to allowed_tools or set "
                            "allow_unlisted_tools",
                        )
        warnings = _risky_patterns(tools, patterns, allow_risky_patterns)
        failures = None
        if data.get("tool_failures") is not None:
            failures, more = _parse_failures(
                data["tool_failures"], tools, allow_unlisted, allow_risky_patterns
            )
            warnings += more
        extensions = None
        if version != "1" or any(data.get(key) is not None for key in KEYS):
            extensions, more = parse_extensions(
                data, version, tools, allow_unlisted, allow_risky_patterns
            )
            warnings += more
        answers = None
        if data.get("answers") is not None:
            answers, more = _parse_answers(
                data, version, tools, allow_unlisted, allow_risky_patterns
            )
            warnings += more
        policy = cls(
            policy_id,
            version,
            opt_str(data, "description", ""),
            allow_unlisted,
            tools,
            Budgets.from_section(section(data, "budgets")),
            tuple(patterns),
            Grounding.from_section(section(data, "grounding")),
            sequence,
            ErrorHandling.from_section(section(data, "error_handling")),
            Completion.from_section(section(data, "completion")),
            warnings,
            extensions,
            RuleSelection.from_section(section(data, "rules")),
            failures,
            answers,
        )
        check_json_values(data, "")  # what no field's own check looked at, such as enum values
        return policy

    def to_dict(self) -> dict[str, Any]:
        """The canonical JSON form (every section written out, defaults included)."""
        out: dict[str, Any] = {"schema_version": self.schema_version, "policy_id": self.policy_id}
        if self.description is not None:
            out["description"] = self.description
        out["allow_unlisted_tools"] = self.allow_unlisted_tools
        out["allowed_tools"] = {name: tool.to_dict() for name, tool in self.allowed_tools.items()}
        out["budgets"] = {k: getattr(self.budgets, k) for k in Budgets._KEYS}
        out["unsafe_patterns"] = [p.pattern for p in self.unsafe_patterns]
        out["grounding"] = {k: getattr(self.grounding, k) for k in Grounding._KEYS}
        out["sequence"] = {k: list(getattr(self.sequence, k)) for k in Sequence._KEYS}
        out["error_handling"] = {k: getattr(self.error_handling, k) for k in ErrorHandling._KEYS}
        out["completion"] = {k: getattr(self.completion, k) for k in Completion._KEYS}
        if self.extensions is not None:  # written only for 1.1, so 1.0 hashes stay as they were
            out.update(self.extensions.to_dict())
        if self.rules:  # written only when set, so other policies' hashes stay as they were
            out["rules"] = self.rules.to_dict()
        if self.tool_failures is not None:  # likewise
            out["tool_failures"] = self.tool_failures.to_dict()
        if self.answers is not None:  # likewise
            out["answers"] = self.answers.to_dict()
        return out

    @property
    def sha256(self) -> str:
        """A hash of the policy's meaning: formatting and key order of sections do not change it."""
        text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        import hashlib  # only report files need the hash; eager: +3.6 ms of `arh validate`

        return hashlib.sha256(text.encode("ascii")).hexdigest()


def _parse_failures(
    raw: object,
    tools: Mapping[str, ToolSchema],
    allow_unlisted: bool,
    allow_risky_patterns: bool,
) -> tuple[ToolFailures, tuple[str, ...]]:
    """The ``tool_failures`` section (language 1.0 and later), and the warnings for risky
    patterns accepted on request."""
    # only a policy with this section needs its parser and the parsing context (eager: +3 ms)
    from agent_reliability_harness.model.policy._context import Context
    from agent_reliability_harness.model.policy.failures import ToolFailures

    context = Context(tools, allow_unlisted)
    try:
        failures = ToolFailures.parse(raw, context)
    except RecursionError:
        raise bad("", "a value in the policy is nested too deeply to process") from None
    return failures, risky_warnings(context.patterns, allow_risky_patterns)


def _parse_answers(
    data: Mapping[str, Any],
    version: str,
    tools: Mapping[str, ToolSchema],
    allow_unlisted: bool,
    allow_risky_patterns: bool,
) -> tuple[Answers, tuple[str, ...]]:
    """The ``answers`` section (language 1.2), and the warnings for risky patterns of its
    schema accepted on request."""
    if minor_version(version) < 2:
        raise bad(
            "/answers",
            "the answers section belongs to policy language 1.2; declare "
            f'"schema_version": "1.2" (this policy declares {excerpt(version)})',
        )
    from agent_reliability_harness.model.policy.answers import Answers

    try:
        answers = Answers.parse(data["answers"], tools, allow_unlisted)
    except RecursionError:
        raise bad("", "a value in the policy is nested too deeply to process") from None
    located: list[tuple[str, str, int]] = []
    if answers.schema is not None:
        located = [
            (f"/answers/schema{pointer}", regex.pattern, 0)
            for pointer, regex in answers.schema.patterns.items()
        ]
    return answers, risky_warnings(located, allow_risky_patterns)


# ---------------------------------------------------------------------------------------------
# The sections of policy language 1.1


@dataclass(frozen=True, slots=True)
class Extensions:
    """The language 1.1 sections of a policy (present on every policy that declares 1.1)."""

    provenance: Provenance | None = None
    conditions: tuple[Condition, ...] = ()
    relations: tuple[Relation, ...] = ()
    confirmation: Confirmation | None = None
    loops: Loops | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "provenance": None if self.provenance is None else self.provenance.to_dict(),
            "conditions": [c.to_dict() for c in self.conditions],
            "relations": [r.to_dict() for r in self.relations],
            "confirmation": None if self.confirmation is None else self.confirmation.to_dict(),
            "loops": None if self.loops is None else self.loops.to_dict(),
        }


def _list(data: Mapping[str, Any], key: str) -> list[Any]:
    value = data.get(key)
    if value is None:
        return []
    if type(value) is not list:
        raise bad(f"/{key}", f"must be an array, got {json_type(value)}")
    return value


def _unique_names(names: list[str], key: str) -> None:
    seen: dict[str, int] = {}
    for index, name in enumerate(names):
        if name in seen:
            raise bad(
                f"/{key}/{index}/name",
                f"name {excerpt(name)} is already used by /{key}/{seen[name]}",
            )
        seen[name] = index


def parse_extensions(
    data: Mapping[str, Any],
    version: str,
    tools: Mapping[str, ToolSchema],
    allow_unlisted: bool,
    allow_risky_patterns: bool,
) -> tuple[Extensions | None, tuple[str, ...]]:
    """Parse the 1.1 sections of a policy; return them (``None`` for a policy that declares
    version 1.0) and the warnings for risky patterns accepted on request."""
    if minor_version(version) < 1:
        declared = (
            f"declares {excerpt(version)}"
            if data.get("schema_version") is not None
            else f"declares no schema_version, which means {excerpt(version)}"
        )
        for key in KEYS:
            if data.get(key) is not None:
                raise bad(
                    f"/{key}",
                    f"the {key} section belongs to policy language 1.1; declare "
                    f'"schema_version": "1.1" (this policy {declared})',
                )
        return None, ()
    try:
        return _parse(data, tools, allow_unlisted, allow_risky_patterns)
    except RecursionError:
        raise bad("", "a value in the policy is nested too deeply to process") from None


def _parse(
    data: Mapping[str, Any],
    tools: Mapping[str, ToolSchema],
    allow_unlisted: bool,
    allow_risky_patterns: bool,
) -> tuple[Extensions, tuple[str, ...]]:
    # a policy of version 1 never needs the parsers of the 1.1 sections (eager: +11 ms)
    from agent_reliability_harness.model.policy._context import Context
    from agent_reliability_harness.model.policy.conditions import Condition, Relation
    from agent_reliability_harness.model.policy.confirmation import Confirmation
    from agent_reliability_harness.model.policy.loops import Loops
    from agent_reliability_harness.model.policy.provenance import Provenance

    context = Context(tools, allow_unlisted)
    provenance = None
    if data.get("provenance") is not None:
        provenance = Provenance.parse(data["provenance"], context)
    conditions = tuple(
        Condition.parse(raw, index, context) for index, raw in enumerate(_list(data, "conditions"))
    )
    _unique_names([c.name for c in conditions], "conditions")
    relations = tuple(
        Relation.parse(raw, index, context) for index, raw in enumerate(_list(data, "relations"))
    )
    _unique_names([r.name for r in relations], "relations")
    confirmation = None
    if data.get("confirmation") is not None:
        confirmation = Confirmation.parse(data["confirmation"], context)
    loops = None if data.get("loops") is None else Loops.parse(data["loops"])
    warnings = risky_warnings(context.patterns, allow_risky_patterns)
    return Extensions(provenance, conditions, relations, confirmation, loops), warnings
