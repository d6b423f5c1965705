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
from typing import TYPE_CHECKING

from agent_reliability_harness.errors import InputError, UsageError, excerpt, join_pointer
from agent_reliability_harness.model.policy.selection import RuleSelection
from agent_reliability_harness.model.report import Finding
from agent_reliability_harness.rules.registry import RULES

if TYPE_CHECKING:
    from agent_reliability_harness.model.report import Severity

__all__ = ["Findings", "RuleSelection", "check_known", "unknown_rule"]


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


def unknown_rule(rule_id: str) -> str:
    """The message for an ID that no rule has, with the closest one."""
    close = difflib.get_close_matches(rule_id.upper(), sorted(RULES), n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]}?)" if close else "; `arh rules` lists them"
    return f"unknown rule {excerpt(rule_id)}{hint}"


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
