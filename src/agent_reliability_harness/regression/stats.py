"""Exact statistics for repeated agent runs: intervals, pass@k and pass^k, paired tests.

Everything here is a pure function of integer counts or exact rationals. Probabilities are
:class:`fractions.Fraction` values, computed with integer arithmetic, so a p-value does not
depend on float rounding and is the same on every machine; floats appear only in the Wilson
interval (a square root) and when a value is shown.

The paired tests are two-sided. Under the null hypothesis (baseline and candidate are equally
good) each task's difference is as likely to be positive as negative; the p-value is the share
of the ``2^m`` sign assignments of the ``m`` non-zero differences whose sum is at least as far
from zero as the observed sum. With one run per task on each side the differences are -1, 0 or
+1 and this is exactly McNemar's exact test (a binomial test on the discordant pairs).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Final, Literal

TaskClass = Literal["stable-pass", "stable-fail", "flaky"]

__all__ = [
    "PERMUTATION_LIMIT",
    "Z_95",
    "mcnemar_exact",
    "min_p_value",
    "pass_at_k",
    "pass_hat_k",
    "percentile",
    "permutation_p_value",
    "sign_test",
    "task_class",
    "wilson_interval",
]

# The 97.5th percentile of the standard normal distribution: a two-sided 95% interval.
Z_95: Final = 1.959963984540054
# The exact permutation test counts sign assignments by their sums, as long as that takes at most
# this many additions (about a second); beyond it the sign test is used.
PERMUTATION_LIMIT: Final = 2_000_000

_ONE: Final = Fraction(1)


def wilson_interval(successes: int, trials: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion (95% with the default ``z``).

    ``(0.0, 1.0)`` when there are no trials. The ends are exactly 0 when there is no success
    and exactly 1 when every trial succeeded; otherwise the interval contains
    ``successes / trials``.
    """
    if not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials, got {successes} and {trials}")
    if trials == 0:
        return (0.0, 1.0)
    n = trials
    p = successes / n
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    low = 0.0 if successes == 0 else max(0.0, min(p, centre - half))
    high = 1.0 if successes == trials else min(1.0, max(p, centre + half))
    return (low, high)


def _check_counts(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n and k >= 1):
        raise ValueError(f"need 0 <= c <= n and k >= 1, got n={n}, c={c}, k={k}")


def pass_hat_k(n: int, c: int, k: int) -> Fraction | None:
    """The chance that ``k`` runs of a task, drawn without replacement from ``n`` recorded runs
    of which ``c`` succeeded, all succeed: ``C(c, k) / C(n, k)`` (tau-bench's pass^k estimator,
    unbiased for the task's true ``p^k``). None when ``n < k``: not evaluable."""
    _check_counts(n, c, k)
    if n < k:
        return None
    return Fraction(math.comb(c, k), math.comb(n, k))


def pass_at_k(n: int, c: int, k: int) -> Fraction | None:
    """The chance that at least one of ``k`` such runs succeeds: ``1 - C(n - c, k) / C(n, k)``
    (the unbiased pass@k estimator of Chen et al., 2021). None when ``n < k``."""
    _check_counts(n, c, k)
    if n < k:
        return None
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def task_class(n: int, c: int) -> TaskClass:
    """``stable-pass`` when every run succeeded, ``stable-fail`` when none did, else ``flaky``.

    A task with a single run is stable by this definition: flakiness needs two runs to show."""
    _check_counts(n, c, 1)
    if c == n:
        return "stable-pass"
    if c == 0:
        return "stable-fail"
    return "flaky"


def mcnemar_exact(down: int, up: int) -> Fraction:
    """McNemar's exact two-sided p-value for ``down`` pairs that went from success to failure
    and ``up`` pairs that went the other way: ``min(1, 2 * P(X <= min(down, up)))`` for
    ``X ~ Binomial(down + up, 1/2)``; 1 when no pair changed."""
    if down < 0 or up < 0:
        raise ValueError("counts must be >= 0")
    m = down + up
    if m == 0:
        return _ONE
    tail = sum(math.comb(m, i) for i in range(min(down, up) + 1))
    return min(_ONE, Fraction(2 * tail, 2**m))


def sign_test(differences: Sequence[Fraction]) -> Fraction:
    """The exact two-sided sign test: McNemar's test on the signs, zeros left out."""
    down = sum(1 for d in differences if d < 0)
    up = sum(1 for d in differences if d > 0)
    return mcnemar_exact(down, up)


def min_p_value(pairs: int) -> Fraction:
    """The smallest two-sided p-value any outcome of ``pairs`` paired tasks can give (every task
    moving the same way): ``2 / 2^pairs``, at most 1. A test at level alpha can only reject
    when this is <= alpha."""
    if pairs <= 0:
        return _ONE
    return min(_ONE, Fraction(2, 2**pairs))


def permutation_p_value(differences: Sequence[Fraction]) -> Fraction | None:
    """The exact two-sided paired permutation (sign-flip) test of per-task differences.

    The statistic is the sum of the differences. The differences are scaled to integers by the
    least common multiple of their denominators, and the sign assignments are counted by the
    sums their positive terms reach, so no assignment is enumerated one by one. None when the
    counting would take more than :data:`PERMUTATION_LIMIT` additions (the caller then uses
    :func:`sign_test`); it never does for up to 20 differences, which reach at most ``2^20``
    sums, nor when ``differences * (half their scaled total + 1)`` is within the limit.
    """
    nonzero = [d for d in differences if d != 0]
    if not nonzero:
        return _ONE
    scale = math.lcm(*(d.denominator for d in nonzero))
    values = [abs(int(d * scale)) for d in nonzero]
    total = sum(values)
    observed = abs(sum(int(d * scale) for d in nonzero))
    if observed == 0:
        return _ONE
    # |S| >= |S_obs| with S = 2P - total (P: the sum of the positive terms) holds for
    # P <= (total - |S_obs|) / 2 or for the mirror image, which has as many assignments.
    bound = (total - observed) // 2
    if len(values) * (bound + 1) <= PERMUTATION_LIMIT:  # a table of every sum up to the bound
        counts = [0] * (bound + 1)
        counts[0] = 1
        for value in values:
            for s in range(bound, value - 1, -1):
                counts[s] += counts[s - value]
        within = sum(counts)
    else:  # only the sums some assignment reaches: few when there are few differences
        reached = {0: 1}
        work = 0
        for value in values:
            work += len(reached)
            if work > PERMUTATION_LIMIT:
                return None
            grown = reached.copy()
            for s, count in reached.items():
                if s + value <= bound:
                    grown[s + value] = grown.get(s + value, 0) + count
            reached = grown
        within = sum(reached.values())
    return min(_ONE, Fraction(2 * within, 2 ** len(values)))


def percentile(values: Sequence[float], q: float) -> float | None:
    """The nearest-rank percentile: the smallest value with at least ``q`` percent of the values
    at or below it (always one of the values). None for no values."""
    if not 0 < q <= 100:
        raise ValueError(f"q must be in (0, 100], got {q}")
    if not values:
        return None
    ordered = sorted(values)
    rank = math.ceil(Fraction(q) / 100 * len(ordered))
    return ordered[max(rank, 1) - 1]
