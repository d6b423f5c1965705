"""Rule selection: which rules run and at which severity, and the list their findings go to.

A rule switched off reports nothing. A severity override changes the severity of the rule's
findings, and with them the verdict, the SARIF level and the exit status. A check that fails only
by findings of rules switched off, or lowered from error to warning or info, counts as passed, as
a warning does not fail a check (a step with only warnings passes its contract). One score is a
measurement rather than a count of checks: citation coverage, which ARH-GRD-001 switched off or
lowered does not raise. Every rule set adds its findings through :meth:`Findings.add`, which
applies the selection, so no rule can forget it.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from agent_reliability_harness.errors import InputError, UsageError, excerpt, join_pointer
from agent_reliability_harness.model.policy.selection import RuleSelection
from agent_reliability_harness.model.report import Finding
from agent_reliability_harness.rules.registry import RULES

if TYPE_CHECKING:
    from agent_reliability_harness.model.report import Severity

__all__ = [
    "Findings",
    "RuleSelection",
    "check_known",
    "choose",
    "grouped",
    "rules_named",
    "unknown_rule",
]


def check_known(selection: RuleSelection, *, in_policy: bool) -> None:
    """Refuse a rule ID of ``selection`` that no rule has, with the closest one: an
    :class:`InputError` at ``/rules/<id>`` for the policy's own ``rules`` section, else a
    :class:`UsageError`."""
    for rule_id in (*selection.off, *(rule_id for rule_id, _ in selection.severity)):
        if rule_id not in RULES:
            message = unknown_rule(rule_id)
            if in_policy:
                raise InputError(message, pointer=join_pointer("/rules", rule_id))
            raise UsageError(message)


def unknown_rule(code: str) -> str:
    """The message for a rule ID (or a prefix of IDs) that names no rule, with the closest
    ID or prefix."""
    known = {rule_id[:n] for rule_id in RULES for n in (7, len(rule_id))}
    close = difflib.get_close_matches(code.strip().upper(), sorted(known), n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]}?)" if close else "; `arh rules` lists them"
    return f"unknown rule {excerpt(code)}{hint}"


def rules_named(code: str) -> list[str]:
    """The registered rule IDs a code names, in ID order: a whole ID (``ARH-FLW-003``) or a
    prefix of IDs (``ARH-FLW`` is the category, ``ARH-FLW-00`` part of it, ``ARH`` every rule),
    as ruff reads rule codes. Case does not matter; a code that names no rule names none."""
    code = code.strip().upper()
    if not code:
        return []
    return sorted(rule_id for rule_id in RULES if rule_id.startswith(code))


def choose(
    select: Iterable[str] | None = None,
    ignore: Iterable[str] = (),
    severity: Iterable[tuple[str, str]] = (),
) -> RuleSelection:
    """The selection that rule codes (IDs or prefixes, see :func:`rules_named`) make, with
    ruff's vocabulary: ``select`` names the rules that run (None: all of them), ``ignore``
    switches rules off, and ``severity`` gives rules another severity (a later code wins over an
    earlier one). Where a selected and an ignored code both name a rule, the longer code wins
    (``--select ARH-FLW --ignore ARH-FLW-003`` runs the category but that rule; the other way
    round runs that rule alone of it); of two equally long codes, ignore wins. A code that
    names no rule is a :class:`UsageError`; a rule both switched off and given a severity stays
    off."""
    chosen: dict[str, tuple[int, bool]] = {}  # rule ID -> (the deciding code's length, on)
    for on, codes in ((True, select or ()), (False, ignore)):
        for code in codes:
            named = rules_named(code)
            if not named:
                raise UsageError(unknown_rule(code))
            for rule_id in named:
                length = len(code.strip())
                decided = chosen.get(rule_id)
                if decided is None or length >= decided[0]:
                    chosen[rule_id] = (length, on)
    if select is None:
        off = [rule_id for rule_id, (_, on) in chosen.items() if not on]
    else:
        off = [rule_id for rule_id in RULES if not chosen.get(rule_id, (0, False))[1]]
    levels: dict[str, Any] = {}  # RuleSelection.of checks each is a severity
    for code, level in severity:
        named = rules_named(code)
        if not named:
            raise UsageError(unknown_rule(code))
        levels.update(dict.fromkeys(named, level))
    for rule_id in off:  # a rule switched off reports nothing, at any severity
        levels.pop(rule_id, None)
    return RuleSelection.of(off, levels)


def grouped(choices: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """Rule choices as a report shows them, by rule ID: a category all of whose registered rules
    have one choice is one entry, ``("ARH-BUD-*", "off")`` (as after ``--select``, which
    switches every other rule off)."""
    listed = dict(choices)
    shown: list[tuple[str, str]] = []
    done: set[str] = set()
    for rule_id, choice in sorted(listed.items()):
        if rule_id in done:
            continue
        category = rules_named(rule_id[:7]) if len(rule_id) > 7 else []
        if len(category) > 1 and all(listed.get(other) == choice for other in category):
            shown.append((rule_id[:7] + "-*", choice))
            done.update(category)
        else:
            shown.append((rule_id, choice))
    return shown


class Findings(list[Finding]):
    """The findings of one trace, in the order the rules add them, with the selection applied.

    ``add`` returns 1 when the finding fails its check, and 0 when its rule is switched off or
    lowered from error, so that a rule counts a failed check as ``failed += out.add(finding)``.
    """

    __slots__ = ("_off", "_severity")

    def __init__(self, selection: RuleSelection | None = None) -> None:
        super().__init__()
        self._off = frozenset(selection.off) if selection else frozenset()
        self._severity: dict[str, Severity] = dict(selection.severity) if selection else {}

    def add(self, finding: Finding) -> int:
        rule_id = finding.rule_id
        if rule_id in self._off:
            return 0
        level = self._severity.get(rule_id)
        if level is None or level == finding.severity:
            self.append(finding)
            return 1
        self.append(replace(finding, severity=level))
        return 0 if finding.severity == "error" else 1

    def add_all(self, findings: Iterable[Finding]) -> int:
        """Add each finding; 1 when any was kept (one failed check), else 0."""
        kept = 0
        for finding in findings:
            kept |= self.add(finding)
        return kept
