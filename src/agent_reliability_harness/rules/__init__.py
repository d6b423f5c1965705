"""The rules: one module per category, each declaring its rules in the shared registry.

Each category module provides ``prepare(policy)``, which compiles what it needs from the policy
once, and ``evaluate(facts, plan, out)``, which appends findings to ``out`` and returns the
category's :class:`~agent_reliability_harness.model.report.CategoryResult`.
"""

from agent_reliability_harness.rules import (
    budget,
    completion,
    conditions,
    confirmation,
    flow,
    grounding,
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
)

# In scoring order; it matches registry.CATEGORIES (checked when the engine is imported).
# The modules with LANGUAGE = "1.1" run only for policies that declare language 1.1.
CATEGORY_MODULES = (
    schema,
    budget,
    safety,
    grounding,
    sequence,
    flow,
    completion,
    provenance,
    conditions,
    confirmation,
    loops,
)

__all__ = [
    "CATEGORIES",
    "CATEGORY_BY_NAME",
    "CATEGORY_MODULES",
    "RULES",
    "Category",
    "Rule",
    "lint",
]
