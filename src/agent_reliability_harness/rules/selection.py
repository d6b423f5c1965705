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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from agent_reliability_harness.errors import UsageError, excerpt
from agent_reliability_harness.model.report import SEVERITIES, Finding
from agent_reliability_harness.rules.registry import RULES

if TYPE_CHECKING:
    from agent_reliability_harness.model.report import Severity

__all__ = ["Findings", "RuleSelection"]


@dataclass(frozen=True, slots=True)
class RuleSelection:
    """Rules switched off, and severities changed, by rule ID (both sorted, so that equal
    selections are equal values)."""

    off: tuple[str, ...] = ()
    severity: tuple[tuple[str, Severity], ...] = ()

    @classmethod
    def of(
        cls, off: Iterable[str] = (), severity: Mapping[str, Severity] | None = None
    ) -> RuleSelection:
        """A selection of registered rules; a :class:`UsageError` names an ID that is not one
        (with the closest one) and a severity that is not error, warning or info."""
        switched = sorted(set(off))
        changed = sorted((severity or {}).items())
        for rule_id in (*switched, *(rule_id for rule_id, _ in changed)):
            if rule_id not in RULES:
                raise UsageError(f"unknown rule {excerpt(rule_id)}{_closest(rule_id)}")
        for rule_id, level in changed:
            if level not in SEVERITIES:
                raise UsageError(
                    f"unknown severity {excerpt(level)} for {rule_id}; "
                    f"expected one of: {', '.join(SEVERITIES)}"
                )
        return cls(tuple(switched), tuple(changed))

    def merged(self, other: RuleSelection) -> RuleSelection:
        """This selection with ``other``'s choices on top (the command line's over the
        policy's): a rule ``other`` sets a severity for is switched on again."""
        severity = dict(self.severity) | dict(other.severity)
        off = (set(self.off) - {rule_id for rule_id, _ in other.severity}) | set(other.off)
        return RuleSelection(tuple(sorted(off)), tuple(sorted(severity.items())))

    def __bool__(self) -> bool:
        return bool(self.off or self.severity)


def _closest(rule_id: str) -> str:
    close = difflib.get_close_matches(rule_id.upper(), sorted(RULES), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else "; `arh rules` lists them"


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
