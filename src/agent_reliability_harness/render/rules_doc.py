"""Rule documentation generated from the registry: docs/rules.md, ``arh rules``, ``arh explain``."""

from __future__ import annotations

import json
import textwrap

from agent_reliability_harness.rules import CATEGORIES, RULES, Rule
from agent_reliability_harness.rules.registry import DECIDED

__all__ = ["explain_text", "rules_json", "rules_markdown", "rules_table"]


def _sorted_rules(category: str) -> list[Rule]:
    return sorted((r for r in RULES.values() if r.category == category), key=lambda r: r.rule_id)


def _severity(rule: Rule) -> str:
    return rule.severity + ("" if rule.severity_note is None else " (see note)")


def rules_markdown() -> str:
    """The full rule reference, written to docs/rules.md by ``arh rules --format markdown``."""
    out = [
        "# Rule reference",
        "",
        "<!-- Generated from the rule registry by `arh rules --format markdown`; do not edit. -->",
        "",
        (
            "Every finding carries one of these stable rule IDs. IDs never change meaning and "
            "are never reused. Scores are computed per category; a trace's score is the "
            "weighted mean of the categories that apply to it (see POLICY-SPEC.md)."
        ),
        "",
        "| Category | Weight | Applies when |",
        "|---|---|---|",
    ]
    out += [f"| {c.name} | {c.weight} | {c.applies_when} |" for c in CATEGORIES]
    for category in CATEGORIES:
        out += [
            "",
            f"## {category.title}",
            "",
            f"Category `{category.name}`, weight {category.weight}. Score: {category.score}.",
            "",
        ]
        out += ["| ID | Severity | Title |", "|---|---|---|"]
        out += [
            f"| [{r.rule_id}](#{r.anchor_id}) | {_severity(r)} | {r.title} |"
            for r in _sorted_rules(category.name)
        ]
        for rule in _sorted_rules(category.name):
            out += ["", f"### {rule.rule_id}", "", f"**{rule.title}**", ""]
            out.append(f"- Severity: {rule.severity}")
            if rule.severity_note:
                out.append(f"- Severity note: {rule.severity_note}")
            if not rule.emitted:
                out.append("- Status: registered for compatibility, never emitted")
            out += [
                f"- Fires when: {rule.trigger}",
                f"- Anchored at: {rule.anchor}",
                f"- Effect on the score: {rule.scoring}",
                f"- Remediation: {rule.remediation}",
                f"- Decided by the runtime monitor: {DECIDED[rule.decided]}",
            ]
            out += [
                f"- Needs: `{need.field}` for `{need.check}`; when the trace's source lacks it, "
                "the check is reported as not applicable"
                for need in rule.needs
            ]
    return "\n".join(out) + "\n"


def rules_table() -> str:
    """One line per rule: ID, default severity, category, title."""
    width = max(11, *(len(c.name) for c in CATEGORIES))
    lines = [f"{'ID':<12} {'SEVERITY':<8} {'CATEGORY':<{width}} TITLE"]
    for rule in sorted(RULES.values(), key=lambda r: r.rule_id):
        title = rule.title if rule.emitted else f"{rule.title} (not emitted)"
        lines.append(f"{rule.rule_id:<12} {rule.severity:<8} {rule.category:<{width}} {title}")
    return "\n".join(lines) + "\n"


def rules_json() -> str:
    """Every rule's metadata as JSON, for tools."""
    data = [
        {
            "rule_id": r.rule_id,
            "category": r.category,
            "severity": r.severity,
            "title": r.title,
            "trigger": r.trigger,
            "anchor": r.anchor,
            "scoring": r.scoring,
            "remediation": r.remediation,
            "severity_note": r.severity_note,
            "emitted": r.emitted,
        }
        for r in sorted(RULES.values(), key=lambda r: r.rule_id)
    ]
    return json.dumps(data, indent=2) + "\n"


def explain_text(rule: Rule) -> str:
    """A rule's page for the terminal."""

    def para(label: str, text: str) -> list[str]:
        return [
            f"{label}:",
            *textwrap.wrap(text, width=88, initial_indent="  ", subsequent_indent="  "),
            "",
        ]

    lines = [
        f"{rule.rule_id}  {rule.title}",
        "",
        f"category: {rule.category}    default severity: {rule.severity}",
        "",
    ]
    if not rule.emitted:
        lines += ["This rule is registered for compatibility and is never emitted.", ""]
    lines += para("fires when", rule.trigger)
    if rule.severity_note:
        lines += para("severity", rule.severity_note)
    lines += para("anchored at", rule.anchor)
    lines += para("effect on the score", rule.scoring)
    lines += para("remediation", rule.remediation)
    return "\n".join(lines).rstrip("\n") + "\n"
