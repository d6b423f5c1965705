"""The rules: one module per category, each declaring its rules in the shared registry and
running them as one :class:`~agent_reliability_harness.rules.registry.RuleSet`.

A rule set's ``prepare(policy)`` compiles what its rules need from the policy once,
``evaluate(facts, plan, out)`` folds them over a whole trace (appending findings to ``out`` and
returning the category's :class:`~agent_reliability_harness.model.report.CategoryResult`), and
``watch(policy, plan)`` keeps the same fold for a run checked step by step (``rules.online``).
"""

from typing import Final

from agent_reliability_harness.rules import (
    budget,
    completion,
    conditions,
    confirmation,
    flow,
    grounding,
    judge,
    lint,
    loops,
    provenance,
    safety,
    schema,
    sequence,
)
from agent_reliability_harness.rules.registry import (
    CATEGORIES,
    CATEGORY_BY_NAME,
    RULES,
    Category,
    Rule,
    fidelity_plan,
)
from agent_reliability_harness.rules.ruleset import RuleSet

# In scoring order, then the structure lint, which is not scored. The sets of language 1.1 run
# only for policies that declare language 1.1.
RULE_SETS: Final = (
    schema.RULE_SET,
    budget.RULE_SET,
    safety.RULE_SET,
    grounding.RULE_SET,
    sequence.RULE_SET,
    flow.RULE_SET,
    completion.RULE_SET,
    provenance.RULE_SET,
    conditions.RULE_SET,
    confirmation.RULE_SET,
    loops.RULE_SET,
    judge.RULE_SET,
    lint.RULE_SET,
)
if tuple(s.category for s in RULE_SETS if s.category) != tuple(c.name for c in CATEGORIES):
    raise ImportError(
        "rule sets are out of step with the registry's categories"
    )  # pragma: no cover

__all__ = [
    "CATEGORIES",
    "CATEGORY_BY_NAME",
    "RULES",
    "RULE_SETS",
    "Category",
    "Rule",
    "RuleSet",
    "fidelity_plan",
]
