"""docs/rules.md, `arh rules` and `arh explain` all come from the one rule registry."""

from __future__ import annotations

from collections.abc import Callable

from agent_reliability_harness.render.rules_doc import rules_markdown
from agent_reliability_harness.rules import CATEGORIES, RULES

from conftest import ROOT, Run

# The rule IDs of arh 0.2.x (a compatibility contract: they are never renamed or reused). Rules
# added since are checked through the registry itself, so adding one touches no list here.
IDS_0_2 = (
    [f"ARH-SCH-{n:03d}" for n in range(1, 11)]
    + [f"ARH-BUD-{n:03d}" for n in range(1, 8)]
    + ["ARH-SAF-001"]
    + [f"ARH-GRD-{n:03d}" for n in range(1, 4)]
    + [f"ARH-SEQ-{n:03d}" for n in range(1, 6)]
    + [f"ARH-FLW-{n:03d}" for n in range(1, 4)]
    + ["ARH-CMP-001", "ARH-CMP-002"]
)


def test_registry_keeps_every_0_2_rule_id() -> None:
    assert set(IDS_0_2) <= set(RULES)


def test_rules_md_is_current() -> None:
    committed = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert committed == rules_markdown(), "docs/rules.md is stale: run `make docs`"


def test_rules_md_has_a_section_per_rule_and_category() -> None:
    text = rules_markdown()
    for rule_id in RULES:
        assert f"\n### {rule_id}\n" in text
    for category in CATEGORIES:
        assert f"\n## {category.title}\n" in text


def test_arh_rules_lists_every_rule(arh: Callable[..., Run]) -> None:
    run = arh("rules")
    assert run.status == 0
    listed = [line.split()[0] for line in run.out.splitlines()[1:]]
    assert listed == sorted(RULES)


def test_arh_rules_markdown_is_the_doc(arh: Callable[..., Run]) -> None:
    run = arh("rules", "--format", "markdown")
    assert run.out == (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")


def test_explain_every_rule(arh: Callable[..., Run]) -> None:
    for rule_id, rule in RULES.items():
        run = arh("explain", rule_id.lower())
        assert run.status == 0
        assert run.out.startswith(f"{rule_id}  {rule.title}\n")
        assert "remediation:" in run.out


def test_explain_unknown_rule_suggests(arh: Callable[..., Run]) -> None:
    run = arh("explain", "ARH-FLW-030")
    assert run.status == 2
    assert "unknown rule 'ARH-FLW-030'" in run.err
    assert "did you mean ARH-FLW-003?" in run.err
