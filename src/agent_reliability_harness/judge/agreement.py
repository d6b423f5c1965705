"""How well a judge agrees with hand labels: Cohen's kappa with its interval, and the confusion
matrix of pass/fail verdicts. Pure functions of counts: no randomness, so the same labels and
verdicts always give the same numbers.

Kappa (Cohen 1960) is ``(po - pe) / (1 - pe)``: the observed agreement ``po`` beyond the
agreement ``pe`` that two raters with the same marginal rates would reach by chance. Its
interval is the large-sample one, ``kappa +/- z * se``, with the standard error of Fleiss,
Cohen & Everitt (1969), "Large sample standard errors of kappa and weighted kappa",
Psychological Bulletin 72(5):323-327 (Fleiss, Levin & Paik, *Statistical Methods for Rates
and Proportions*, 3rd ed., 2003, section 18.1), clipped to [-1, 1]. With few items, or when
the raters agree on every item, that interval is narrow or empty of width and overstates the
certainty: the record keeps the number of items beside it.

A confusion matrix of verdicts (:class:`~agent_reliability_harness.judge.model.Confusion`)
takes the hand label as the truth and a pass as the positive: a false positive is an answer the
judge passes that the hand label fails (a miss), a false negative one the judge fails that the
hand label passes (a false alarm).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from agent_reliability_harness.judge.model import Confusion
from agent_reliability_harness.regression.stats import Z_95

__all__ = ["Kappa", "cohen_kappa", "confusion", "confusion_kappa"]


def confusion(pairs: Iterable[tuple[bool, bool]]) -> Confusion:
    """The confusion matrix of ``(label_passed, judge_passed)`` pairs."""
    both_pass = false_pos = false_neg = both_fail = 0
    for label_passed, judge_passed in pairs:
        if judge_passed:
            if label_passed:
                both_pass += 1
            else:
                false_pos += 1
        elif label_passed:
            false_neg += 1
        else:
            both_fail += 1
    return Confusion(both_pass, false_pos, false_neg, both_fail)


def confusion_kappa(matrix: Confusion, z: float = Z_95) -> Kappa:
    """Cohen's kappa of the judge and the hand labels over ``matrix``, with its interval."""
    return cohen_kappa(
        (
            (matrix.both_pass, matrix.judge_fail_label_pass),  # label pass: judge pass, fail
            (matrix.judge_pass_label_fail, matrix.both_fail),  # label fail: judge pass, fail
        ),
        z,
    )


@dataclass(frozen=True, slots=True)
class Kappa:
    """Cohen's kappa of a table of counts, and what it was computed from.

    ``value``, ``se``, ``low`` and ``high`` are None when kappa is undefined: no items, or
    chance agreement of 1 (both raters gave every item the same one category).
    """

    items: int
    observed: float  # po, the share of items the raters agree on
    expected: float  # pe, the agreement expected by chance from the marginal rates
    value: float | None
    se: float | None  # large-sample standard error (Fleiss, Cohen & Everitt 1969)
    low: float | None  # value - z * se, clipped to [-1, 1]
    high: float | None  # value + z * se, clipped to [-1, 1]

    def to_dict(self) -> dict[str, object]:
        return {
            "items": self.items,
            "observed_agreement": self.observed,
            "chance_agreement": self.expected,
            "kappa": self.value,
            "standard_error": self.se,
            "interval": None if self.low is None else [self.low, self.high],
        }


def cohen_kappa(table: Sequence[Sequence[int]], z: float = Z_95) -> Kappa:
    """Cohen's kappa of a square table of counts (rows one rater's categories, columns the other
    rater's, in the same order), with its large-sample interval at ``z``."""
    k = len(table)
    if any(len(row) != k for row in table):
        raise ValueError("the table of counts must be square")
    if any(count < 0 for row in table for count in row):
        raise ValueError("counts must be >= 0")
    n = sum(sum(row) for row in table)
    if n == 0:
        return Kappa(0, 0.0, 0.0, None, None, None, None)
    p = [[count / n for count in row] for row in table]
    rows = [sum(row) for row in p]  # p_i.
    cols = [sum(p[i][j] for i in range(k)) for j in range(k)]  # p_.j
    po = math.fsum(p[i][i] for i in range(k))
    pe = math.fsum(rows[i] * cols[i] for i in range(k))
    if math.isclose(pe, 1.0):
        return Kappa(n, po, pe, None, None, None, None)
    kappa = (po - pe) / (1 - pe)
    # Fleiss, Cohen & Everitt (1969): the variance of kappa when it is not zero
    diagonal = math.fsum(p[i][i] * (1 - (rows[i] + cols[i]) * (1 - kappa)) ** 2 for i in range(k))
    off = math.fsum(
        p[i][j] * (cols[i] + rows[j]) ** 2 for i in range(k) for j in range(k) if i != j
    )
    variance = (diagonal + (1 - kappa) ** 2 * off - (kappa - pe * (1 - kappa)) ** 2) / (
        n * (1 - pe) ** 2
    )
    se = math.sqrt(max(variance, 0.0))
    low = max(-1.0, kappa - z * se)
    high = min(1.0, kappa + z * se)
    return Kappa(n, po, pe, kappa, se, low, high)
