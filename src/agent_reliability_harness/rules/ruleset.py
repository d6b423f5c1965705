"""A rule set: the rules of one module and how to run them, offline and step by step."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_reliability_harness.model.policy import Policy
    from agent_reliability_harness.model.report import CategoryResult
    from agent_reliability_harness.rules._facts import TraceFacts
    from agent_reliability_harness.rules.online import Watch
    from agent_reliability_harness.rules.selection import Findings

__all__ = ["RuleSet"]


@dataclass(frozen=True, slots=True)
class RuleSet:
    """The rules of one module and how to run them: a category's rules share one pass over the
    trace, since they are scored together (structure lint has no category and no score).

    ``prepare`` compiles what the rules need from a policy once (``None``: nothing to check);
    ``evaluate`` folds the rules over a whole trace, appends findings and returns the category's
    result; ``watch`` makes the state of the same fold for a run checked step by step (the
    runtime monitor), or ``None`` when no rule of the set can be decided before the end.
    ``language`` is the policy language that introduced the set: a 1.0 policy's reports list
    only the 1.0 categories.
    """

    category: str | None
    prepare: Callable[[Policy], Any]
    evaluate: Callable[[TraceFacts, Any, Findings], CategoryResult | None]
    watch: Callable[[Policy, Any], Watch | None]
    language: str = "1.0"
