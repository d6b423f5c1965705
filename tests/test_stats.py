"""The statistics of repeated runs, function by function: intervals, pass@k and pass^k, exact
paired tests, grouping, gate files and gate expressions.

Expected values come from published tables or are worked out by hand in the comments; the
property tests compare the fast implementations with brute-force enumeration.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_reliability_harness.errors import InputError, UsageError
from agent_reliability_harness.model.report import Finding, RunReport, TraceReport
from agent_reliability_harness.regression.stat_gates import (
    GatePlan,
    change_text,
    check_comparisons,
    check_summaries,
    key_lines,
    parse_gate_expression,
    parse_gate_file,
    rate_text,
)
from agent_reliability_harness.regression.stats import (
    mcnemar_exact,
    min_p_value,
    pass_at_k,
    pass_hat_k,
    percentile,
    permutation_p_value,
    sign_test,
    task_class,
    wilson_interval,
)
from agent_reliability_harness.regression.trials import (
    collect_trials,
    compare_trials,
    default_task_key,
    label_success,
    summarize,
)

PROPERTIES = settings(max_examples=200, deadline=None)

# -- Wilson interval ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("successes", "trials", "low", "high"),
    [
        # Newcombe (1998), "Two-sided confidence intervals for the single proportion: comparison
        # of seven methods", Statistics in Medicine 17:857-872, Table II, method 3 (score
        # interval without continuity correction), to 4 decimals
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ],
)
def test_wilson_interval_matches_newcombes_table(
    successes: int, trials: int, low: float, high: float
) -> None:
    got = wilson_interval(successes, trials)
    assert (round(got[0], 4), round(got[1], 4)) == (low, high)


def test_wilson_interval_at_the_extremes() -> None:
    # with no success the score interval is [0, z^2 / (n + z^2)], with only successes
    # [n / (n + z^2)), 1]: z = 1.959964, z^2 = 3.841459; n = 10 gives 0.277533 and 0.722467
    assert wilson_interval(0, 10) == (0.0, pytest.approx(3.841459 / 13.841459, abs=1e-6))
    assert wilson_interval(10, 10) == (pytest.approx(10 / 13.841459, abs=1e-6), 1.0)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError, match="successes"):
        wilson_interval(3, 2)


@PROPERTIES
@given(st.integers(0, 500).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_interval_contains_the_estimate(counts: tuple[int, int]) -> None:
    successes, trials = counts
    low, high = wilson_interval(successes, trials)
    assert 0.0 <= low <= high <= 1.0
    if trials:
        assert low <= successes / trials <= high
        if 0 < successes < trials:
            assert low < successes / trials < high


# -- pass@k and pass^k --------------------------------------------------------------------------


def test_pass_hat_k_is_taus_estimator() -> None:
    # tau-bench (Yao et al., 2024) defines pass^k = E_task[C(c, k) / C(n, k)], c successes of n
    # trials. By hand: n=4, c=2, k=2: C(2,2)/C(4,2) = 1/6; c=3: 3/6; c=4, k=4: 1; c=3, k=4: 0
    assert pass_hat_k(4, 2, 2) == Fraction(1, 6)
    assert pass_hat_k(4, 3, 2) == Fraction(1, 2)
    assert pass_hat_k(4, 4, 4) == 1
    assert pass_hat_k(4, 3, 4) == 0
    assert pass_hat_k(4, 1, 1) == Fraction(1, 4)  # k=1: the task's success rate
    assert pass_hat_k(3, 3, 4) is None  # n < k: not evaluable


def test_pass_at_k_is_the_unbiased_estimator() -> None:
    # Chen et al. (2021): pass@k = 1 - C(n - c, k) / C(n, k). n=4, c=1, k=2: 1 - 3/6 = 1/2;
    # n=10, c=0: 0; n=5, c=3, k=3: 1 - C(2,3)/C(5,3) = 1 - 0 = 1
    assert pass_at_k(4, 1, 2) == Fraction(1, 2)
    assert pass_at_k(10, 0, 3) == 0
    assert pass_at_k(5, 3, 3) == 1
    assert pass_at_k(2, 1, 3) is None
    with pytest.raises(ValueError, match="0 <= c <= n"):
        pass_at_k(2, 3, 1)


@PROPERTIES
@given(st.integers(1, 30).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_pass_hat_k_falls_and_pass_at_k_rises_with_k(counts: tuple[int, int]) -> None:
    n, c = counts
    hats = [pass_hat_k(n, c, k) for k in range(1, n + 1)]
    ats = [pass_at_k(n, c, k) for k in range(1, n + 1)]
    assert all(a is not None and b is not None and a >= b for a, b in itertools.pairwise(hats))
    assert all(a is not None and b is not None and a <= b for a, b in itertools.pairwise(ats))
    assert hats[0] == ats[0] == Fraction(c, n)
    assert all(h is not None and a is not None and h <= a for h, a in zip(hats, ats, strict=True))


def test_task_classes() -> None:
    assert task_class(4, 4) == "stable-pass"
    assert task_class(4, 0) == "stable-fail"
    assert task_class(4, 2) == "flaky"
    assert task_class(1, 1) == "stable-pass"  # one run cannot show flakiness


# -- exact tests --------------------------------------------------------------------------------

# McNemar's exact two-sided p-value, 2 * P(X <= min(b, c)) for X ~ Binomial(b + c, 1/2), capped
# at 1. Worked out by hand:
#   b=6, c=0:  2 * C(6,0) / 2^6                  = 2/64          = 1/32
#   b=5, c=1:  2 * (C(6,0) + C(6,1)) / 2^6       = 2 * 7/64      = 7/32
#   b=5, c=0:  2 / 2^5                           = 1/16
#   b=10, c=2: 2 * (1 + 12 + 66) / 2^12          = 158/4096      = 79/2048
#   b=8, c=1:  2 * (1 + 9) / 2^9                 = 20/512        = 5/128
#   b=3, c=3:  2 * (1 + 6 + 15 + 20) / 64 > 1    -> 1
#   b=1, c=0:  2 * 1/2 = 1;  b=c=0: nothing changed -> 1
MCNEMAR_TABLE = [
    (6, 0, Fraction(1, 32)),
    (5, 1, Fraction(7, 32)),
    (5, 0, Fraction(1, 16)),
    (10, 2, Fraction(79, 2048)),
    (8, 1, Fraction(5, 128)),
    (3, 3, Fraction(1)),
    (1, 0, Fraction(1)),
    (0, 0, Fraction(1)),
]


@pytest.mark.parametrize(("down", "up", "expected"), MCNEMAR_TABLE)
def test_mcnemar_exact_against_hand_computed_binomial_sums(
    down: int, up: int, expected: Fraction
) -> None:
    assert mcnemar_exact(down, up) == expected
    assert mcnemar_exact(up, down) == expected  # two-sided: symmetric
    # the permutation test on -1/+1 differences is the same test
    differences = [Fraction(-1)] * down + [Fraction(1)] * up + [Fraction(0)] * 3
    assert permutation_p_value(differences) == expected
    assert sign_test(differences) == expected


def test_permutation_test_by_hand() -> None:
    # differences -1/2, -1/4, +1/4, -1; scaled by 4: -2, -1, +1, -4, sum -6. Of the 16 sign
    # assignments, |sum| >= 6 holds for -8, +8 and the four that flip only one of the 1s:
    # 6/16 = 3/8
    assert permutation_p_value(
        [Fraction(-1, 2), Fraction(-1, 4), Fraction(1, 4), Fraction(-1)]
    ) == (Fraction(3, 8))
    assert permutation_p_value([]) == 1
    assert permutation_p_value([Fraction(0), Fraction(0)]) == 1  # identical runs: p = 1
    assert permutation_p_value([Fraction(1), Fraction(-1)]) == 1  # the sum is 0


def _brute_force(differences: list[Fraction]) -> Fraction:
    nonzero = [abs(d) for d in differences if d]
    observed = abs(sum(differences, Fraction(0)))
    if not nonzero:
        return Fraction(1)
    hits = sum(
        1
        for signs in itertools.product((1, -1), repeat=len(nonzero))
        if abs(sum((s * d for s, d in zip(signs, nonzero, strict=True)), Fraction(0))) >= observed
    )
    return Fraction(hits, 2 ** len(nonzero))


@PROPERTIES
@given(
    st.lists(
        st.builds(Fraction, st.integers(-6, 6), st.sampled_from([1, 2, 3, 4, 6])),
        max_size=8,
    )
)
def test_permutation_test_equals_enumeration(differences: list[Fraction]) -> None:
    p = permutation_p_value(differences)
    assert p == _brute_force(differences)
    pairs = len([d for d in differences if d])
    assert p is not None
    assert min_p_value(pairs) <= p <= 1


# Run counts that are distinct primes: the differences' common denominator is their product
# (about 10^12 for nine tasks), far too many sums for a table of every one.
_PRIMES = (11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89)


def test_permutation_test_of_few_tasks_with_coprime_run_counts() -> None:
    # Nine tasks, run counts the primes 11 to 41: seven went from all runs passing to one (a
    # drop of 1 - 1/n), two from none to one (a small rise of 1/n). The assignments as extreme
    # as the observed one keep the seven drops negative and give the two small terms any signs
    # (4 of them), with their mirror images: p = 8/2^9 = 1/64. (The table of every sum would
    # need 9 * ~10^12 cells; the sign test would give 2 * 46/512 = 0.1797.)
    differences = [Fraction(1, n) - 1 for n in _PRIMES[:7]] + [Fraction(1, n) for n in _PRIMES[7:9]]
    assert permutation_p_value(differences) == Fraction(1, 64) == _brute_force(differences)
    assert sign_test(differences) == Fraction(2 * (1 + 9 + 36), 512)


@PROPERTIES
@given(
    st.lists(
        st.tuples(st.sampled_from(_PRIMES), st.integers(-100, 100)),
        min_size=1,
        max_size=10,
        unique_by=lambda pair: pair[0],
    )
)
def test_permutation_test_with_large_common_denominators(pairs: list[tuple[int, int]]) -> None:
    differences = [Fraction(numerator, n) for n, numerator in pairs]
    assert permutation_p_value(differences) == _brute_force(differences)


def test_permutation_test_counts_every_reachable_sum_for_twenty_tasks() -> None:
    # 2^20 sums at most: always counted exactly, whatever the denominators
    differences = [Fraction((-1) ** i * (i + 1), n) for i, n in enumerate(_PRIMES)]
    assert permutation_p_value(differences) is not None


def test_permutation_test_refuses_huge_tables() -> None:
    # 3000 differences of alternating sign over the denominator 1000003 (a prime): the sum
    # is near 0, so counting needs about 3000 * 750000 cells; the caller uses the sign test
    differences = [Fraction((-1) ** i * (i % 997 + 1), 1_000_003) for i in range(3000)]
    assert permutation_p_value(differences) is None
    # the same signs with equal magnitudes: one denominator, a small table
    assert permutation_p_value([Fraction((-1) ** i) for i in range(3000)]) == 1


def test_rates_and_changes_round_the_exact_fraction_half_to_even() -> None:
    # ties at the third decimal go to the even digit, as Python formats an exact binary tie
    assert rate_text(Fraction(5, 16)) == "0.312"  # 0.3125
    assert rate_text(Fraction(13, 80)) == "0.162"  # 0.1625, whose nearest float is above it
    assert rate_text(Fraction(7, 16)) == "0.438"  # 0.4375
    assert rate_text(Fraction(2, 3)) == "0.667"
    assert rate_text(None) == "-"
    # 3/5 -> 13/16: +17/80 = +0.2125, shown as the difference of the two rounded rates
    assert change_text(Fraction(3, 5), Fraction(13, 16)) == "+0.212"
    assert change_text(Fraction(13, 16), Fraction(3, 5)) == "-0.212"
    # a drop too small for 3 decimals keeps its sign
    assert change_text(Fraction(1, 2), Fraction(4999, 10000)) == "-0.000"
    assert change_text(Fraction(1, 2), Fraction(1, 2)) == "+0.000"


def test_min_p_value() -> None:
    # the most extreme outcome of m pairs: all move the same way, 2 / 2^m
    assert min_p_value(0) == 1
    assert min_p_value(1) == 1
    assert min_p_value(4) == Fraction(1, 8)
    assert min_p_value(5) == Fraction(1, 16)  # > 0.05: five tasks can never be significant
    assert min_p_value(6) == Fraction(1, 32)  # <= 0.05


def test_percentile_nearest_rank() -> None:
    # the nearest-rank example of Wikipedia's "Percentile" article: 15, 20, 35, 40, 50 give
    # P5 = 15, P30 = 20, P40 = 20, P50 = 35, P100 = 50
    values = [50, 15, 40, 20, 35]
    assert [percentile(values, q) for q in (5, 30, 40, 50, 100)] == [15, 20, 20, 35, 50]
    assert percentile([], 50) is None
    with pytest.raises(ValueError, match="q must be"):
        percentile(values, 0)


# -- grouping -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("trace_id", "task"),
    [
        ("refund-07-run3", "refund-07"),
        ("refund-07_trial_2", "refund-07"),
        ("refund-07.seed-42", "refund-07"),
        ("refund-07#Attempt4", "refund-07"),
        ("refund-07/run-1", "refund-07"),
        ("refund-07 try2", "refund-07"),
        ("run-2/refund-07", "refund-07"),
        ("trial_1/refund-07-run2", "refund-07"),
        ("rebook-1001", "rebook-1001"),  # a bare number names a task
        ("12-3", "12-3"),
        ("run-1", "run-1"),  # nothing would be left
        ("refund-run", "refund-run"),  # no digits
        ("refundrun2", "refundrun2"),  # no separator before the word
    ],
)
def test_default_task_key(trace_id: str, task: str) -> None:
    assert default_task_key(trace_id) == task


def test_label_success() -> None:
    assert label_success(True)
    assert not label_success(False)
    assert label_success(1)
    assert label_success(1.0)
    assert label_success(0.9999999)  # within 1e-6 of 1, as tau-bench counts a reward
    # the edges, as tau-bench writes its test (1 - 1e-6 <= reward <= 1 + 1e-6): abs(r - 1)
    # is 1.0000000000287557e-06 for 0.999999, a little over 1e-6 in binary floating point
    assert label_success(0.999999)
    assert label_success(1.000001)
    assert not label_success(0.9999989)
    assert not label_success(1.0000011)
    assert not label_success(0.999)
    assert not label_success(0.5)
    assert not label_success(None)


def _report(
    trace_id: str,
    passed: bool,
    *,
    workflow: str = "w",
    task: str | None = None,
    outcome: bool | float | None = None,
    rules: tuple[str, ...] = (),
    latency: float = 0.0,
) -> TraceReport:
    findings = tuple(Finding(rule, "error", "flow", "m") for rule in rules)
    return TraceReport(
        trace_id=trace_id,
        agent_name="a",
        workflow=workflow,
        policy_id="p",
        score=100.0 if passed else 50.0,
        passed=passed,
        total_latency_ms=latency,
        total_cost_usd=0.0,
        citation_coverage=None,
        findings=findings,
        task=task,
        outcome=outcome,
    )


def _runs(table: dict[str, str]) -> list[tuple[str, RunReport]]:
    """One report per run from ``{task: "PPF..."}`` (P passed, F failed in that run)."""
    width = max(len(v) for v in table.values())
    return [
        (
            f"run{r}.json",
            RunReport(
                tuple(
                    _report(task, row[r] == "P", latency=100.0 * (r + 1))
                    for task, row in table.items()
                    if r < len(row)
                )
            ),
        )
        for r in range(width)
    ]


def test_summary_of_an_outcome_table() -> None:
    # 3 tasks x 4 runs: a passes 4, b 2, c 0. By hand: pass rate 6/12; pass^2 = (1 + 1/6 + 0)
    # / 3 = 7/18; pass^4 = (1 + 0 + 0) / 3 = 1/3; pass@2 = (1 + 5/6 + 0) / 3 = 11/18
    trials = collect_trials(_runs({"a": "PPPP", "b": "PFFP", "c": "FFFF"}))
    summary = summarize(trials, "w")
    assert summary.k == 4
    assert (summary.runs, summary.successes, summary.pass_rate) == (12, 6, Fraction(1, 2))
    assert summary.pass_hat(2) == Fraction(7, 18)
    assert summary.pass_hat() == Fraction(1, 3)
    assert summary.pass_at(2) == Fraction(11, 18)
    assert summary.classes() == {"stable-pass": 1, "stable-fail": 1, "flaky": 1}
    assert [t.task for t in summary.flaky] == ["b"]
    assert [(r.run, r.traces, r.successes) for r in summary.per_run] == [
        (1, 3, 2),
        (2, 3, 1),
        (3, 3, 1),
        (4, 3, 2),
    ]
    # every trace of run r took 100 * r ms: p50 and p95 of three equal values are that value
    assert [r.latency_p50_ms for r in summary.per_run] == [100.0, 200.0, 300.0, 400.0]


def test_the_curve_stops_at_32_but_any_k_is_computed() -> None:
    # a task of 16,000 runs took minutes: every k up to 16,000, each with binomials of 16,000
    trials = collect_trials(_runs({"a": "P" * 39 + "F"}))
    summary = summarize(trials, "w", 40)
    curve = summary.curve()
    assert [k for k, *_ in curve] == list(range(1, 33))
    # by hand: pass^k = C(39, k) / C(40, k) = (40 - k) / 40; pass@k = 1 - C(1, k) / C(40, k),
    # 39/40 for k = 1 and 1 beyond
    assert all(hat == Fraction(40 - k, 40) for k, hat, _, _ in curve)
    assert [at for _, _, at, _ in curve] == [Fraction(39, 40)] + [Fraction(1)] * 31
    assert summary.pass_hat() == 0  # k = 40 itself: C(39, 40) = 0
    assert len(summary.to_dict()["by_k"]) == 32


def test_tasks_with_fewer_runs_are_not_evaluable() -> None:
    trials = collect_trials(_runs({"a": "PPPP", "b": "PP"}))
    assert summarize(trials, "w").k == 2  # the default: the fewest runs of any task
    summary = summarize(trials, "w", 3)
    assert [t.task for t in summary.evaluable()] == ["a"]
    assert summary.pass_hat() == 1  # averaged over the evaluable task only
    assert summarize(trials, "w", 5).pass_hat() is None


def test_one_report_with_every_run_equals_one_report_per_run() -> None:
    per_run = _runs({"a": "PFP", "b": "FFP"})
    # the same runs in one report, told apart by a run suffix of the trace id
    together = RunReport(
        tuple(
            _report(f"{report.trace_id}-run{r}", report.passed)
            for r, (_, run) in enumerate(per_run, 1)
            for report in run.reports
        )
    )
    first = summarize(collect_trials(per_run), "w")
    second = summarize(collect_trials([("all.json", together)]), "w")
    # a: 2 of 3, b: 1 of 3. pass^1 = (2/3 + 1/3) / 2 = 1/2; pass^3 = (0 + 0) / 2 = 0
    for summary in (first, second):
        assert (summary.k, summary.pass_hat(1), summary.pass_hat()) == (3, Fraction(1, 2), 0)
    assert [(t.task, t.runs, t.successes) for t in first.tasks] == [
        (t.task, t.runs, t.successes) for t in second.tasks
    ]


def test_recorded_task_and_labels() -> None:
    run = RunReport(
        (
            _report("x1", True, task="T", outcome=1),
            _report("x2", True, task="T", outcome=0.0),
            _report("x3", False, task="T", outcome=True),
        )
    )
    by = {mode: summarize(collect_trials([("r.json", run)], mode), "w") for mode in
          ("verdict", "label", "both")}  # fmt: skip
    assert [t.task for t in by["verdict"].tasks] == ["T"]
    assert by["verdict"].successes == 2
    assert by["label"].successes == 2
    assert by["both"].successes == 1  # only x1: labelled success and passed


def test_a_missing_label_names_the_report_and_the_trace() -> None:
    run = RunReport((_report("x1", True, outcome=1), _report("x2", True)))
    with pytest.raises(InputError) as caught:
        collect_trials([("runs.json", run)], "label")
    assert caught.value.source == "runs.json"
    assert caught.value.pointer == "/reports/1/outcome"
    assert "'x2' has no recorded outcome label" in caught.value.message


def test_rule_hit_rates_count_runs_not_findings() -> None:
    run = RunReport(
        (
            _report("a", False, rules=("ARH-FLW-003", "ARH-FLW-003")),
            _report("b", False, rules=("ARH-FLW-003", "ARH-CMP-001")),
            _report("c", True),
            _report("d", False, rules=("ARH-CMP-001",)),
        )
    )
    summary = summarize(collect_trials([("r.json", run)]), "w")
    assert summary.rule_hits == (("ARH-CMP-001", 2), ("ARH-FLW-003", 2))


@PROPERTIES
@given(st.lists(st.text("PF", min_size=1, max_size=5), min_size=1, max_size=8))
def test_comparison_of_identical_sides_gives_p_1(rows: list[str]) -> None:
    runs = _runs({f"t{i}": row for i, row in enumerate(rows)})
    trials = collect_trials(runs)
    (comparison,) = compare_trials(trials, trials)
    for test in (comparison.rate_test, comparison.hat_test):
        assert test.p_value == 1
        assert test.down == test.up == ()
        assert not test.drop


@PROPERTIES
@given(
    st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=1, max_size=8).map(
        lambda rows: {
            f"t{i}": ("P" * b + "F" * (4 - b), "P" * c + "F" * (4 - c))
            for i, (b, c) in enumerate(rows)
        }
    )
)
def test_paired_tests_are_exact_and_bounded(table: dict[str, tuple[str, str]]) -> None:
    base = collect_trials(_runs({t: rows[0] for t, rows in table.items()}))
    cand = collect_trials(_runs({t: rows[1] for t, rows in table.items()}))
    (comparison,) = compare_trials(base, cand)
    rate = comparison.rate_test
    # the differences of per-task success rates, in quarters
    differences = [Fraction(c.count("P") - b.count("P"), 4) for b, c in table.values()]
    assert rate.method == "exact paired permutation"
    assert rate.p_value == _brute_force(differences)
    assert rate.pairs == len(table)
    assert min_p_value(len(table)) <= rate.p_value <= 1
    hats = comparison.baseline.curve()
    assert all(a[1] is not None and b[1] is not None and a[1] >= b[1]
               for a, b in itertools.pairwise(hats))  # fmt: skip


def test_single_runs_use_mcnemar() -> None:
    # 10 tasks: 6 pass->fail, 1 fail->pass, 3 unchanged: McNemar p = 2 * (1 + 7) / 2^7 = 1/8
    base = collect_trials(_runs({f"t{i}": "P" if i < 9 else "F" for i in range(10)}))
    row = ["F"] * 6 + ["P"] * 3 + ["P"]
    cand = collect_trials(_runs({f"t{i}": row[i] for i in range(10)}))
    (comparison,) = compare_trials(base, cand)
    assert comparison.rate_test.method == "McNemar exact"
    assert comparison.rate_test.p_value == Fraction(1, 8)
    assert comparison.rate_test.down == ("t0", "t1", "t2", "t3", "t4", "t5")
    assert comparison.rate_test.up == ("t9",)


# -- gate files ---------------------------------------------------------------------------------

GATES = """\
# the team's gates
outcome = "both"

[defaults]
significance = 0.05
k = 2

[workflows.refunds]
min_pass_rate = 0.9   # refunds must be reliable
max_flaky_tasks = 1

[workflows."rebook.v2"]
min_pass_hat_k = 0.5
allow_insufficient_data = true
notes = '''
[workflows.fake]
min_pass_rate = 1
'''
"""


def test_key_lines_finds_tables_and_keys() -> None:
    lines = key_lines(GATES)
    assert lines[("outcome",)] == 2
    assert lines[("defaults",)] == 4
    assert lines[("defaults", "significance")] == 5
    assert lines[("workflows",)] == 8
    assert lines[("workflows", "refunds", "max_flaky_tasks")] == 10
    assert lines[("workflows", "rebook.v2")] == 12
    assert lines[("workflows", "rebook.v2", "allow_insufficient_data")] == 14
    assert ("workflows", "fake") not in lines  # inside a multi-line string


def test_key_lines_dotted_and_quoted_keys() -> None:
    text = 'a.b = 1\n[x]\n"quoted key" = 2\ny . \'z\' = 3\n[ "t\\u0041" . u ]\nv = 4\n'
    lines = key_lines(text)
    assert lines[("a", "b")] == 1
    assert lines[("a",)] == 1
    assert lines[("x", "quoted key")] == 3
    assert lines[("x", "y", "z")] == 4
    assert lines[("tA", "u", "v")] == 6


@pytest.mark.parametrize("separator", ["\u2028", "\u0085", "\x0c", "\r"])
def test_key_lines_count_line_feeds_only(separator: str) -> None:
    # A comment may hold U+2028 (or U+0085, a form feed; a lone CR is not valid TOML, and then
    # only an error's line, from tomllib, matters): str.splitlines broke the line there, and
    # every key after it was reported a line too far down.
    text = f"# a note{separator}that goes on\n[defaults]\nk = 2\n"
    lines = key_lines(text)
    assert lines[("defaults",)] == 2
    assert lines[("defaults", "k")] == 3


def test_gate_file_settings_and_their_lines() -> None:
    parsed = parse_gate_file(GATES.replace("notes = '''", "# '''").replace(
        "[workflows.fake]\nmin_pass_rate = 1\n'''\n", ""), "arh.toml")  # fmt: skip
    assert parsed.outcome == "both"
    assert [(s.key, s.shown, s.origin) for s in parsed.defaults] == [
        ("significance", "0.05", "arh.toml:5"),
        ("k", "2", "arh.toml:6"),
    ]
    name, origin, settings_ = parsed.workflows[1]
    assert (name, origin) == ("refunds", "arh.toml:8")
    assert [(s.key, s.value, s.origin) for s in settings_] == [
        ("min_pass_rate", Fraction(9, 10), "arh.toml:9"),  # the decimal, not its binary float
        ("max_flaky_tasks", 1, "arh.toml:10"),
    ]
    plan = GatePlan(parsed)
    assert plan.k_for("refunds") == 2
    assert [s.key for s in plan.thresholds_for("refunds")] == [
        "min_pass_rate",
        "max_flaky_tasks",
        "significance",
    ]
    assert plan.allow_for("rebook.v2")
    assert not plan.allow_for("refunds")


def test_gate_file_thresholds_are_the_decimals_as_written() -> None:
    # TOML reads a float, whose binary value is not the decimal written: 2/3 passed this
    text = "[defaults]\nmin_pass_rate = 0.66666666666666666666667\nsignificance = 5e-2\n"
    [rate, alpha] = parse_gate_file(text, "arh.toml").defaults
    assert rate.value == Fraction("0.66666666666666666666667") > Fraction(2, 3)
    assert rate.shown == "0.66666666666666666666667"
    assert alpha.value == Fraction(1, 20)
    # read as decimals, long ones are bounded as in --gate (1e-50000000 took minutes to build)
    long = (
        ("1e-50000000", "the number 1E-50000000 has an exponent too large to use"),
        ("0." + "1" * 200, r"has 201 digits, too many to use \(at most 100\)"),
    )
    for bad, shown in (("inf", "got inf"), ("-inf", "got -inf"), *long):
        with pytest.raises(InputError, match=shown):
            parse_gate_file(f"[defaults]\nmin_pass_rate = {bad}\n", "arh.toml")


@pytest.mark.parametrize(
    ("text", "key", "value"),
    [
        ("pass rate >= 5e-1", "min_pass_rate", Fraction(1, 2)),
        ("pass^k drop <= 2.5E-1", "max_pass_hat_k_drop", Fraction(1, 4)),
        ("pass rate drop significant at 1e-3", "significance", Fraction(1, 1000)),
    ],
)
def test_gate_phrases_take_numbers_with_an_exponent(text: str, key: str, value: Fraction) -> None:
    setting = parse_gate_expression(text)
    assert (setting.key, setting.value) == (key, value)


@pytest.mark.parametrize(
    ("text", "line", "pointer", "message"),
    [
        ("[workflows.a]\nmin_pas_rate = 0.9\n", 2, "/workflows/a/min_pas_rate",
         "unknown gate key 'min_pas_rate' (did you mean 'min_pass_rate'?)"),
        ("[defaults]\nsignificance = 1\n", 2, "/defaults/significance",
         "must be a number greater than 0 and less than 1, got 1"),
        ("[defaults]\nmin_pass_rate = '0.9'\n", 2, "/defaults/min_pass_rate",
         "must be a number from 0 to 1, got a string"),
        ("[defaults]\nmax_flaky_tasks = 1.5\n", 2, "/defaults/max_flaky_tasks",
         "must be an integer >= 0, got 1.5"),
        ("\n\nk = 3\n", 3, "/k", "unknown key 'k' (gate keys belong in [defaults] or"),
        ("outcome = 'reward'\n", 1, "/outcome", "must be one of 'verdict', 'label', 'both'"),
        ("workflows = 3\n", 1, "/workflows", "must be a table of workflows, got a number"),
        ("[workflows]\nrefunds = true\n", 2, "/workflows/refunds", "must be a table, got a"),
        ("[defults]\n", 1, "/defults", "unknown key 'defults' (did you mean 'defaults'?)"),
        ("[defaults]\nmin_pass_rate = nan\n", 2, "/defaults/min_pass_rate", "got nan"),
    ],
)  # fmt: skip
def test_gate_file_errors_name_file_line_and_key(
    text: str, line: int, pointer: str, message: str
) -> None:
    with pytest.raises(InputError) as caught:
        parse_gate_file(text, "ci/arh.toml")
    error = caught.value
    assert (error.source, error.line, error.pointer) == ("ci/arh.toml", line, pointer)
    assert message in error.message


def test_gate_files_nested_too_deeply_or_with_too_long_integers_are_input_errors() -> None:
    import sys

    deep = "x = " + "[" * 2000 + "]" * 2000 + "\n"
    with pytest.raises(InputError) as caught:
        parse_gate_file(deep, "deep.toml")
    assert str(caught.value) == (
        "deep.toml: nested too deeply to read: arrays or inline tables hundreds of levels deep"
    )
    limit = sys.get_int_max_str_digits()
    if not limit:
        return  # the interpreter reads integers of any length
    long = "[defaults]\nmin_pass_rate = 0.5\nmax_flaky_tasks = 1_" + "9" * limit + "\n"
    with pytest.raises(InputError) as caught:
        parse_gate_file(long, "long.toml")
    error = caught.value
    assert (error.source, error.line, error.column, error.pointer) == ("long.toml", 3, 19, None)
    assert error.message == f"invalid TOML: an integer has more than {limit} digits"


def test_invalid_toml_is_an_input_error_with_its_position() -> None:
    with pytest.raises(InputError) as caught:
        parse_gate_file("[defaults]\nsignificance = = 0.05\n", "arh.toml")
    assert (caught.value.source, caught.value.line) == ("arh.toml", 2)
    assert caught.value.message.startswith("invalid TOML: ")
    assert caught.value.pointer is None


@pytest.mark.parametrize(
    ("expression", "key", "value"),
    [
        ("pass^k drop significant at 0.05", "pass_hat_k_significance", Fraction(1, 20)),
        ("Pass rate drop is significant at .01", "significance", Fraction(1, 100)),
        ("pass@1 >= 0.9", "min_pass_rate", Fraction(9, 10)),
        ("pass^k>=0.5", "min_pass_hat_k", Fraction(1, 2)),
        ("pass rate drop <= 0.1", "max_pass_rate_drop", Fraction(1, 10)),
        ("pass^k drop <= 0", "max_pass_hat_k_drop", Fraction(0)),
        ("flaky tasks <= 2", "max_flaky_tasks", 2),
        ("min_pass_rate=0.75", "min_pass_rate", Fraction(3, 4)),
        ("significance = 1e-3", "significance", Fraction(1, 1000)),
        ("significance=1e-100", "significance", Fraction(1, 10**100)),
        ("pass rate >= 0." + "9" * 99, "min_pass_rate", 1 - Fraction(1, 10**99)),  # 100 digits
        # just under 1, where a float would be 1.0 and refused: checked as written
        ("significance = 0.99999999999999999", "significance", 1 - Fraction(1, 10**17)),
    ],
)
def test_gate_expressions(expression: str, key: str, value: Fraction | int) -> None:
    setting = parse_gate_expression(expression)
    assert (setting.key, setting.value) == (key, value)
    assert setting.origin == f"--gate {expression!r}"


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("pass rate > 0.9", "is not a gate; the forms are"),
        ("pass rate >= 1.5", "must be a number from 0 to 1"),
        # just over 1, where a float would be 1.0 and accepted
        ("pass rate >= 1.0000000000000001", "must be a number from 0 to 1, got 1.0000000000000001"),
        ("pass^k drop significant at 0", "greater than 0 and less than 1"),
        ("flaky tasks <= 1.5", "must be an integer >= 0"),
        ("k=3", "k is set with --k"),
        ("allow_insufficient_data=true", "--allow-insufficient-data"),
        ("min_pass_rate=high", "'high' is not a number"),
        ("pass rate >= 0." + "9" * 4400,
         "0." + "9" * 98 + "... (4402 characters) has 4401 digits, too many to use (at most 100)"),
        ("pass^k drop <= 0." + "0" * 100, "has 101 digits, too many to use (at most 100)"),
        ("flaky tasks <= " + "9" * 4400, "has 4400 digits, too many to use (at most 100)"),
        ("min_pass_rate=0e999999",
         "the number 0e999999 has an exponent too large to use (at most 100 either way)"),
        ("significance=1e-101", "has an exponent too large to use"),
    ],
)  # fmt: skip
def test_bad_gate_expressions_are_usage_errors(expression: str, message: str) -> None:
    with pytest.raises(UsageError, match="--gate") as caught:
        parse_gate_expression(expression)
    assert message in str(caught.value)
    assert len(str(caught.value)) < 400  # a long expression is abbreviated


# -- gate checks --------------------------------------------------------------------------------


def _plan(*expressions: str, allow: bool = False) -> GatePlan:
    return GatePlan(None, tuple(parse_gate_expression(e) for e in expressions), None, allow)


def test_threshold_checks_and_their_reasons() -> None:
    base = collect_trials(_runs({"a": "PPPP", "b": "PPPP", "c": "PPPF"}))
    cand = collect_trials(_runs({"a": "PPPP", "b": "PFPP", "c": "FFFF"}))
    comparisons = compare_trials(base, cand)
    result = check_comparisons(
        _plan(
            "pass rate >= 0.75",  # candidate: 7/12 = 0.583 < 0.75
            "pass^k >= 0.3",  # k = 4: (1 + 0 + 0) / 3 = 0.333: passes
            "flaky tasks <= 0",  # b is flaky
            "pass rate drop <= 0.2",  # 11/12 - 7/12 = 1/3 > 0.2
            "pass rate drop significant at 0.05",  # 3 tasks can reach 2/8 at best: insufficient
        ),
        comparisons,
    )
    assert [c.status for c in result.checks] == ["fail", "pass", "fail", "fail", "insufficient"]
    assert not result.passed
    assert result.reasons == (
        (
            "workflow 'w': pass rate 0.583 (7 of 12 runs) is below min_pass_rate 0.75 "
            "[--gate 'pass rate >= 0.75']"
        ),
        "workflow 'w': 1 flaky task (b) exceeds max_flaky_tasks 0 [--gate 'flaky tasks <= 0']",
        (
            "workflow 'w': pass rate dropped 0.333 (0.917 -> 0.583), more than max_pass_rate_drop "
            "0.2 [--gate 'pass rate drop <= 0.2']"
        ),
        (
            "workflow 'w': insufficient data for significance 0.05: 3 tasks ran on both sides, and "
            "the smallest p-value that many paired tasks can give is 0.25 "
            "[--gate 'pass rate drop significant at 0.05']"
        ),
    )
    allowed = check_comparisons(
        _plan("pass rate drop significant at 0.05", allow=True), comparisons
    )
    assert [c.status for c in allowed.checks] == ["allowed"]
    assert allowed.passed


def test_exact_thresholds_are_not_fooled_by_binary_floats() -> None:
    # 4 of 5 runs pass: exactly 0.8, which min_pass_rate 0.8 accepts (the float 0.8 is a bit
    # more than 4/5, and a float comparison would fail the gate)
    cand = collect_trials(_runs({"a": "PPPPF"}))
    result = check_summaries(_plan("pass rate >= 0.8"), [summarize(cand, "w")])
    assert result.passed


def test_significant_drop_fails_and_improvement_passes() -> None:
    # 6 tasks, each 4 of 4 -> 1 of 4: all six differences are -3/4, p = 2/64 = 1/32 <= 0.05
    good = {f"t{i}": "PPPP" for i in range(6)}
    bad = {f"t{i}": "PFFF" for i in range(6)}
    plan = _plan("pass rate drop significant at 0.05")
    drop = compare_trials(collect_trials(_runs(good)), collect_trials(_runs(bad)))
    assert drop[0].rate_test.p_value == Fraction(1, 32)
    assert not check_comparisons(plan, drop).passed
    gain = compare_trials(collect_trials(_runs(bad)), collect_trials(_runs(good)))
    assert gain[0].rate_test.p_value == Fraction(1, 32)
    assert check_comparisons(plan, gain).passed  # significant, but not a drop


def test_baseline_thresholds_are_skipped_without_a_baseline() -> None:
    trials = collect_trials(_runs({"a": "PF"}))
    result = check_summaries(
        _plan("pass rate drop significant at 0.05", "pass rate >= 0.1"), [summarize(trials, "w")]
    )
    assert [c.status for c in result.checks] == ["skipped", "pass"]
    assert result.passed


def test_single_runs_cannot_show_flakiness() -> None:
    trials = collect_trials(_runs({"a": "P", "b": "F"}))
    result = check_summaries(_plan("flaky tasks <= 3"), [summarize(trials, "w")])
    assert [c.status for c in result.checks] == ["insufficient"]


def test_a_workflow_named_in_the_file_without_runs_fails() -> None:
    parsed = parse_gate_file("[workflows.refunds]\nmin_pass_rate = 0.5\n", "arh.toml")
    trials = collect_trials(_runs({"a": "P"}))
    result = check_summaries(GatePlan(parsed), [summarize(trials, "w")])
    assert result.reasons == (
        "workflow 'refunds': no runs, but the gate file sets thresholds for it [arh.toml:1]",
    )


def test_gates_without_any_run_fail_closed() -> None:
    # No workflow at all: nothing can decide a threshold, so each is insufficient data (which
    # fails), not passed for want of anything to check; --allow-insufficient-data lets it pass.
    plan = _plan("pass rate >= 0.9", "pass rate drop significant at 0.05")
    result = check_comparisons(plan, [])
    assert [(c.key, c.status) for c in result.checks] == [
        ("min_pass_rate", "insufficient"),
        ("significance", "insufficient"),
    ]
    assert not result.passed
    assert result.reasons[0] == (
        "all workflows: insufficient data for min_pass_rate 0.9: no runs on either side "
        "[--gate 'pass rate >= 0.9']"
    )
    # without a baseline, the threshold that needs one is skipped, the other one fails closed
    alone = check_summaries(plan, [])
    assert [c.status for c in alone.checks] == ["insufficient", "skipped"]
    assert not alone.passed
    allowed = check_comparisons(
        _plan("pass rate >= 0.9", "pass rate drop significant at 0.05", allow=True), []
    )
    assert [c.status for c in allowed.checks] == ["allowed", "allowed"]
    assert allowed.passed
    # a gate file's defaults too, and its named workflow still fails as missing
    parsed = parse_gate_file(
        "[defaults]\nmin_pass_rate = 0.5\n[workflows.refunds]\nmin_pass_rate = 0.8\n", "arh.toml"
    )
    filed = check_comparisons(GatePlan(parsed), [])
    assert [(c.workflow, c.key, c.status) for c in filed.checks] == [
        ("", "min_pass_rate", "insufficient"),
        ("refunds", "workflow", "fail"),
    ]


def test_math_helpers_do_not_use_floats_for_probabilities() -> None:
    # a p-value of 200 paired tasks is far below the smallest float increment near 1 and
    # still exact: 2 / 2^200
    differences = [Fraction(-1)] * 200
    p = permutation_p_value(differences)
    assert type(p) is Fraction  # a float would hold this value too (a power of two)
    assert p == Fraction(2, 2**200)
