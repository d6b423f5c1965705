"""The ``rules`` section: rules switched off, or given another severity, by rule ID.

``"rules": {"ARH-SCH-010": "off", "ARH-FLW-003": "warning"}``. The command line's ``--ignore``
and ``--severity`` make the same choices and win over the policy's. What a selection does to
findings and scores is in ``rules/selection.py``; that each ID names a registered rule is checked
there too, since the model does not know the rules.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from agent_reliability_harness._decode import bad, json_type
from agent_reliability_harness.errors import UsageError, excerpt, join_pointer
from agent_reliability_harness.model.report import SEVERITIES

if TYPE_CHECKING:
    from agent_reliability_harness.model.report import Severity

__all__ = ["OFF", "RuleSelection", "well_formed_rule_id"]

OFF: Final = "off"


def well_formed_rule_id(text: str) -> bool:
    """``ARH-XXX-NNN``: three upper-case ASCII letters and three digits."""
    prefix, letters, dash, digits = text[:4], text[4:7], text[7:8], text[8:]
    return (
        prefix == "ARH-"
        and len(letters) == 3
        and letters.isascii()
        and letters.isalpha()
        and letters.isupper()
        and dash == "-"
        and len(digits) == 3
        and digits.isascii()
        and digits.isdigit()
    )


@dataclass(frozen=True, slots=True)
class RuleSelection:
    """Rules switched off, and severities changed, by rule ID (both sorted, so that equal
    selections are equal values). Empty by default: every rule on, at its own severity."""

    off: tuple[str, ...] = ()
    severity: tuple[tuple[str, Severity], ...] = ()

    @classmethod
    def of(
        cls, off: Iterable[str] = (), severity: Mapping[str, Severity] | None = None
    ) -> RuleSelection:
        """A selection made in code or on the command line; a :class:`UsageError` names a rule
        ID that is not of the form ARH-XXX-NNN and a severity that is not error, warning or
        info. (Whether each ID is a registered rule is checked by the validator.)"""
        switched = sorted(set(off))
        changed = sorted((severity or {}).items())
        for rule_id in (*switched, *(rule_id for rule_id, _ in changed)):
            if not isinstance(rule_id, str) or not well_formed_rule_id(rule_id):
                raise UsageError(f"not a rule ID: {excerpt(rule_id)} (expected ARH-XXX-NNN)")
        for rule_id, level in changed:
            if level not in SEVERITIES:
                raise UsageError(
                    f"unknown severity {excerpt(level)} for {rule_id}; "
                    f"expected one of: {', '.join(SEVERITIES)}"
                )
        return cls(tuple(switched), tuple(changed))

    @classmethod
    def from_section(cls, raw: Mapping[str, Any]) -> RuleSelection:
        """The policy's ``rules`` object (an :class:`InputError` at ``/rules/<id>``)."""
        off: list[str] = []
        severity: dict[str, Severity] = {}
        for rule_id, value in raw.items():
            where = join_pointer("/rules", rule_id)
            if not well_formed_rule_id(rule_id):
                raise bad(where, f"not a rule ID: {excerpt(rule_id)} (expected ARH-XXX-NNN)")
            if value == OFF:
                off.append(rule_id)
            elif value in SEVERITIES:
                severity[rule_id] = value
            else:
                shown = excerpt(value) if type(value) is str else f"a JSON {json_type(value)}"
                raise bad(where, f"must be one of: off, {', '.join(SEVERITIES)}; got {shown}")
        return cls(tuple(sorted(off)), tuple(sorted(severity.items())))

    def merged(self, other: RuleSelection) -> RuleSelection:
        """This selection with ``other``'s choices on top (the command line's over the
        policy's): a rule ``other`` sets a severity for is switched on again."""
        severity = dict(self.severity) | dict(other.severity)
        on_again = {rule_id for rule_id, _ in other.severity}
        off = (set(self.off) - on_again) | set(other.off)
        for rule_id in off:
            severity.pop(rule_id, None)
        return RuleSelection(tuple(sorted(off)), tuple(sorted(severity.items())))

    def choices(self) -> tuple[tuple[str, str], ...]:
        """(rule ID, ``"off"`` or the severity), by rule ID: what a report lists."""
        return tuple(sorted([*((rule_id, OFF) for rule_id in self.off), *self.severity]))

    def to_dict(self) -> dict[str, str]:
        """The ``rules`` object, by rule ID: ``"off"`` or the severity."""
        return dict(self.choices())

    def __bool__(self) -> bool:
        return bool(self.off or self.severity)
