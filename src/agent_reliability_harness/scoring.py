"""Scoring and the verdict: category weights, applicability, and the pass rule."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Final

from agent_reliability_harness._decode import is_finite, number_text
from agent_reliability_harness.errors import UsageError
from agent_reliability_harness.model.report import CategoryResult, Finding
from agent_reliability_harness.rules.registry import CATEGORY_BY_NAME

__all__ = ["DEFAULT_FAIL_UNDER", "check_fail_under", "overall_score", "passes"]

DEFAULT_FAIL_UNDER: Final = 70.0


def overall_score(results: Iterable[CategoryResult]) -> float:
    """The weighted mean of the applicable categories' scores; 100 when none applies.

    Weights are integers and the sum is exact (``math.fsum``), so a trace that is perfect in
    every category scores exactly 100.0, not 99.99999999999999.
    """
    products: list[float] = []
    total_weight = 0
    for result in results:
        if result.applicable:
            weight = CATEGORY_BY_NAME[result.category].weight
            products.append(weight * result.score)
            total_weight += weight
    return math.fsum(products) / total_weight if total_weight else 100.0


def passes(findings: Iterable[Finding], score: float, fail_under: float) -> bool:
    """A trace passes when it has no error finding and its unrounded score is >= fail_under."""
    return score >= fail_under and not any(f.severity == "error" for f in findings)


def check_fail_under(value: object) -> float:
    """Validate a pass threshold: a finite number from 0 to 100."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UsageError(f"fail_under must be a number from 0 to 100, got {type(value).__name__}")
    if not (is_finite(value) and 0 <= value <= 100):  # is_finite: 10**400 is no float either
        raise UsageError(f"fail_under must be a number from 0 to 100, got {number_text(value)}")
    return float(value)
