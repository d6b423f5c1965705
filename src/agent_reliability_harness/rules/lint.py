"""Structure lint: trace problems that are reported but never scored."""

from __future__ import annotations

import difflib
import functools
from collections.abc import Mapping
from typing import Any, Final

from agent_reliability_harness.errors import excerpt, join_pointer
from agent_reliability_harness.model.policy import Policy
from agent_reliability_harness.model.report import Finding
from agent_reliability_harness.model.trace import STEP_KEYS_1_2, Step
from agent_reliability_harness.rules._facts import TraceFacts
from agent_reliability_harness.rules._format import show
from agent_reliability_harness.rules.online import Probe, Watch
from agent_reliability_harness.rules.registry import rule
from agent_reliability_harness.rules.ruleset import RuleSet
from agent_reliability_harness.rules.selection import Findings

DUPLICATE_STEP_ID = rule(
    "ARH-SCH-010",
    decided="before_call",
    category="schema",
    severity="warning",
    title="Step id is used more than once",
    trigger="Two or more steps share a step_id (steps of every type count, user_message "
    "included, because ids name positions of the whole trace). Not scored; findings anchored "
    "at that id become ambiguous.",
    scoring="None: structure lint findings are not scored.",
    anchor="the first step with that id",
    remediation="Give every step a unique step_id when recording the trace.",
)


SOURCE_NOT_READ = rule(
    "ARH-SCH-011",
    decided="from_source",
    category="schema",
    severity="warning",
    title="Part of the source transcript could not be read",
    trigger="The trace was converted from a transcript or a span export, and the adapter could "
    "not read a part of it whose type is wrong for its format: a message, tool call or content "
    "block that is not an object, or a known field of the wrong type (the notes "
    "non_object_message, non_object_tool_call, non_object_block and invalid_field in "
    "metadata.adapter.notes). That part is not in the trace, so the other results cover only "
    "what could be read. One finding per note. Not scored; a monitored run has no such notes.",
    scoring="None: structure lint findings are not scored.",
    anchor="the trace (the subject is the note's JSON pointer into the source)",
    remediation="Fix what wrote the transcript; `arh convert` shows the trace the adapter "
    "built and its notes.",
)

MISSPELT_KEY = rule(
    "ARH-SCH-012",
    decided="on_step",
    category="schema",
    severity="warning",
    title="Step key looks like a misspelt trace field",
    trigger="A step has a key that TRACE-SPEC.md does not define (arh keeps such keys and "
    "otherwise ignores them, since exporters add their own) but that is close to a step field "
    "it does define, such as argument for arguments or latency for latency_ms: the two names "
    "are at least 80% alike as Python's difflib measures them. The field the key was probably "
    "meant to be is then absent, and the rules that read it see nothing. One finding per such "
    "key of a step. Not scored.",
    scoring="None: structure lint findings are not scored.",
    anchor="the step with the key (the subject is the key's JSON pointer in the step)",
    remediation="Rename the key to the field it was meant to be (the message names it), or "
    "give an exporter's own field a name that is not so close to a trace field.",
)

# The adapter notes (docs/adapters.md#notes) of a part of the source that has the wrong type.
UNREAD_NOTES: Final = (
    "invalid_field",
    "non_object_block",
    "non_object_message",
    "non_object_tool_call",
)


def _unread_parts(metadata: Mapping[str, Any], out: Findings) -> None:
    """ARH-SCH-011 for each note of an unreadable part; metadata is free-form, so anything
    else there is ignored."""
    adapter = metadata.get("adapter")
    notes = adapter.get("notes") if type(adapter) is dict else None
    if type(notes) is not list:
        return
    subjects: dict[str, int] = {}  # a pointer noted again gets a number: one fingerprint each
    for note in notes:
        if type(note) is not dict or note.get("code") not in UNREAD_NOTES:
            continue
        code = note["code"]
        pointer = note.get("pointer")
        where = pointer if type(pointer) is str else None
        text = note.get("message")
        what = show(text) if type(text) is str else code
        subject = where if where is not None else code
        seen = subjects[subject] = subjects.get(subject, 0) + 1
        out.add(
            SOURCE_NOT_READ.finding(
                f"the adapter could not read {'the source' if where is None else where}: {what}",
                subject=subject if seen == 1 else f"{subject} ({seen})",
                expected="every message, tool call, block and field of the type its format defines",
                observed=f"adapter note {code}",
            )
        )


def duplicate_step_id_finding(step_id: str, count: int, first: int) -> Finding:
    """ARH-SCH-010: ``count`` steps use ``step_id``, the first at position ``first``.

    Built here for evaluate() and for the runtime monitor alike, so both word it the same way.
    """
    return DUPLICATE_STEP_ID.finding(
        f"step_id {step_id!r} is used by {count} steps; step ids should be unique",
        at=first,
        step_id=step_id,
        expected="unique step ids",
        observed=f"{count} steps with id {step_id!r}",
    )


# the step fields before schema version 1.3: a trace of 1.2 or earlier keeps a ``timestamp``
# (or ``timestamps``) key as its own, and its report does not change with 1.3
_STEP_FIELDS: Final = sorted(STEP_KEYS_1_2)


@functools.lru_cache(maxsize=1024)
def _meant(key: str) -> str | None:
    """The step field that ``key`` (not one) is probably a misspelling of, if any."""
    close = difflib.get_close_matches(key, _STEP_FIELDS, n=1, cutoff=0.8)
    return close[0] if close else None


def _misspelt_keys(at: int, step: Step, out: Findings) -> None:
    """ARH-SCH-012 for each key of ``step`` that is not a trace field but is close to one."""
    for key in step.extra:
        meant = _meant(key)
        if meant is not None:
            out.add(
                MISSPELT_KEY.finding(
                    f"step key {excerpt(key)} is not a trace field; did you mean {meant!r}?",
                    at=at,
                    step_id=step.step_id,
                    subject=join_pointer("", key),
                    expected=f"the field {meant!r}",
                    observed=f"the key {excerpt(key)}",
                )
            )


def evaluate(facts: TraceFacts, plan: None, out: Findings) -> None:  # noqa: ARG001
    first: dict[str, int] = {}
    counts: dict[str, int] = {}
    for at, step in enumerate(facts.steps):
        if step.extra:
            _misspelt_keys(at, step, out)
        sid = step.step_id
        if sid in first:
            counts[sid] += 1
        else:
            first[sid] = at
            counts[sid] = 1
    for sid, count in counts.items():
        if count > 1:
            out.add(duplicate_step_id_finding(sid, count, first[sid]))
    if facts.trace.metadata:
        _unread_parts(facts.trace.metadata, out)


class _Lint(Watch):
    """Step ids used more than once (ARH-SCH-010) and misspelt step keys (ARH-SCH-012)."""

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        self._seen: dict[str, list[int]] = {}  # step id -> [first position, uses]

    def look(self, probe: Probe, out: Findings) -> None:
        if probe.step.extra:
            _misspelt_keys(probe.at, probe.step, out)
        step_id = probe.step.step_id
        seen = self._seen.get(step_id)
        if seen is not None:
            out.add(duplicate_step_id_finding(step_id, seen[1] + 1, seen[0]))

    def commit(self, probe: Probe) -> None:
        seen = self._seen.setdefault(probe.step.step_id, [probe.at, 0])
        seen[1] += 1


def prepare(policy: Policy) -> None:
    """Structure lint needs nothing from the policy."""


def watch(policy: Policy, plan: None) -> Watch:  # noqa: ARG001
    return _Lint()


RULE_SET: Final = RuleSet(None, prepare, evaluate, watch)
