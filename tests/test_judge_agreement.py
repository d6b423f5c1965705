"""Cohen's kappa, its interval and the confusion matrix (judge/agreement.py), against values
worked out by hand and against published examples."""

from __future__ import annotations

import math

import pytest

from agent_reliability_harness.judge.agreement import cohen_kappa, confusion, confusion_kappa
from agent_reliability_harness.judge.model import Confusion


def test_published_two_by_two_example() -> None:
    # The worked example of the Wikipedia article "Cohen's kappa" (section "Simple example"):
    # 50 grant proposals read by two readers, 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no; the
    # article gives po = 0.7, pe = 0.5 and kappa = 0.4.
    kappa = cohen_kappa([[20, 5], [10, 15]])
    assert kappa.items == 50
    assert kappa.observed == pytest.approx(0.7)
    assert kappa.expected == pytest.approx(0.5)
    assert kappa.value == pytest.approx(0.4)
    # The standard error of Fleiss, Cohen & Everitt (1969), by hand. Proportions p11 = .4,
    # p12 = .1, p21 = .2, p22 = .3; rows .5 .5; columns .6 .4; 1 - kappa = .6.
    #   diagonal  .4 (1 - (.5 + .6) .6)^2 + .3 (1 - (.5 + .4) .6)^2 = .04624 + .06348 = .10972
    #   off       .36 (.1 (.6 + .5)^2 + .2 (.4 + .5)^2) = .36 (.121 + .162) = .10188
    #   minus     (.4 - .5 .6)^2 = .01
    #   variance  (.10972 + .10188 - .01) / (50 .5^2) = .2016 / 12.5 = .016128
    assert kappa.se == pytest.approx(math.sqrt(0.016128))
    assert kappa.low == pytest.approx(0.4 - 1.959963984540054 * math.sqrt(0.016128))
    assert kappa.high == pytest.approx(0.4 + 1.959963984540054 * math.sqrt(0.016128))


def test_textbook_three_category_example() -> None:
    # Fleiss, Levin & Paik, Statistical Methods for Rates and Proportions (3rd ed., 2003),
    # section 18.1, the diagnoses of 100 subjects by two raters (psychotic, neurotic, organic):
    # proportions .75 .01 .04 / .05 .04 .01 / 0 0 .10, po = .89, pe = .66, kappa = .68.
    kappa = cohen_kappa([[75, 1, 4], [5, 4, 1], [0, 0, 10]])
    assert kappa.observed == pytest.approx(0.89)
    assert kappa.expected == pytest.approx(0.66)
    assert kappa.value == pytest.approx(0.23 / 0.34)
    assert round(kappa.value or 0, 2) == 0.68
    # Its standard error by the same formula: rows .80 .10 .10, columns .80 .05 .15,
    # 1 - kappa = .11 / .34.
    w = 0.11 / 0.34
    diagonal = 0.75 * (1 - 1.60 * w) ** 2 + 0.04 * (1 - 0.15 * w) ** 2 + 0.10 * (1 - 0.25 * w) ** 2
    # p_ij (p_.i + p_j.)^2 over i != j
    off = (
        0.01 * (0.80 + 0.10) ** 2
        + 0.04 * (0.80 + 0.10) ** 2
        + 0.05 * (0.05 + 0.80) ** 2
        + 0.01 * (0.05 + 0.10) ** 2
    )
    value = 0.23 / 0.34
    variance = (diagonal + w**2 * off - (value - 0.66 * w) ** 2) / (100 * 0.34**2)
    assert kappa.se == pytest.approx(math.sqrt(variance))
    assert kappa.se == pytest.approx(0.0877, abs=5e-5)  # statsmodels' cohens_kappa agrees


def test_perfect_and_chance_agreement() -> None:
    perfect = cohen_kappa([[6, 0], [0, 4]])
    assert perfect.value == 1.0
    assert perfect.se == 0.0
    assert (perfect.low, perfect.high) == (1.0, 1.0)
    # the raters' marginals are independent: agreement is what chance gives
    chance = cohen_kappa([[1, 1], [1, 1]])
    assert chance.value == pytest.approx(0.0)
    assert chance.low is not None
    assert chance.low < 0 < (chance.high or 0)
    # worse than chance: every item disagrees
    opposite = cohen_kappa([[0, 5], [5, 0]])
    assert opposite.value == pytest.approx(-1.0)
    assert opposite.low == -1.0  # clipped


def test_undefined_kappa() -> None:
    # both raters put every item in one category: chance agreement is 1, kappa is 0/0
    same = cohen_kappa([[7, 0], [0, 0]])
    assert same.value is None
    assert same.se is None
    assert same.low is None
    assert same.observed == 1.0
    assert same.expected == 1.0
    empty = cohen_kappa([[0, 0], [0, 0]])
    assert empty.items == 0
    assert empty.value is None
    assert empty.to_dict()["interval"] is None


def test_bad_tables() -> None:
    with pytest.raises(ValueError, match="square"):
        cohen_kappa([[1, 2, 3], [4, 5, 6]])
    with pytest.raises(ValueError, match=">= 0"):
        cohen_kappa([[1, -1], [0, 1]])


def test_confusion_positive_is_a_pass() -> None:
    # (label passed, judge passed)
    pairs = [(True, True)] * 3 + [(False, True)] * 2 + [(True, False)] + [(False, False)] * 4
    matrix = confusion(pairs)
    assert matrix == Confusion(
        both_pass=3, judge_pass_label_fail=2, judge_fail_label_pass=1, both_fail=4
    )
    assert matrix.n == 10
    # po = 7/10; label pass 4/10, judge pass 5/10: pe = .4 .5 + .6 .5 = .5; kappa = .2 / .5
    kappa = confusion_kappa(matrix)
    assert kappa.observed == pytest.approx(0.7)
    assert kappa.expected == pytest.approx(0.5)
    assert kappa.value == pytest.approx(0.4)
