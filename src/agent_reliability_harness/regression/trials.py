"""Repeated runs of the same tasks: the outcome table, its summary, and paired comparisons.

A *trial* is one trace report: one run of one task. Trials are grouped by workflow and by a task
key, which is the ``task`` a report recorded (``arh validate --task-key``) or, failing that, the
trace id with a run marker removed (:func:`default_task_key`). A trial's *run number* is its
position among the trials of its task, in input order (reports in the order given, then report
order), so ``k`` runs of ``n`` tasks form an ``n x k`` table whether the runs come in ``k``
report files or in one.

A trial succeeds according to the outcome mode: ``verdict`` (the policy verdict), ``label`` (the
success label recorded with ``arh validate --outcome-at``) or ``both`` (the label says success and
the policy passed).
"""

from __future__ import annotations

import math
import re
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Final

from agent_reliability_harness._decode import id_part, is_finite, json_type, number_text, resolve
from agent_reliability_harness.errors import InputError, excerpt, join_pointer
from agent_reliability_harness.model.report import RunReport, TraceReport
from agent_reliability_harness.model.tasks import default_task_key
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

if TYPE_CHECKING:
    from agent_reliability_harness.model.trace import Trace
    from agent_reliability_harness.regression.stats import TaskClass


__all__ = [
    "CURVE_MAX_K",
    "OUTCOMES",
    "PairedTest",
    "Summary",
    "TaskResult",
    "Trial",
    "WorkflowComparison",
    "collect_trials",
    "compare_trials",
    "default_task_key",
    "label_report",
    "label_success",
    "summarize",
    "summarize_workflows",
    "task_at",
]

OUTCOMES: Final = ("verdict", "label", "both")
# a report to record a task key in, when only the key is wanted (task_at)
_UNLABELLED: Final = TraceReport("", "", "", "", 100.0, True, 0.0, 0.0, None, ())
# A numeric label counts as success when it is 1 within this tolerance (tau-bench's rule).
LABEL_TOLERANCE: Final = 1e-6
# The pass^k and pass@k curve goes from k = 1 to the most runs of any task, but no further than
# this: each point costs binomials of the run count, so a task of 16,000 runs took minutes.
CURVE_MAX_K: Final = 32


def natural_key(text: str) -> tuple[object, ...]:
    """Sort key that orders the digit runs of a name by value (``task-2`` before ``task-10``),
    then by the text itself, so that different names never tie."""
    parts = re.split(r"([0-9]+)", text)
    # a number compares by its length without leading zeros, then by its digits: no int()
    keyed = tuple((len(p.lstrip("0")), p.lstrip("0")) if i % 2 else p for i, p in enumerate(parts))
    return (keyed, text)


def label_success(value: bool | float | None) -> bool:
    """Whether a recorded outcome label means success: ``true``, or a number equal to 1 within
    the tolerance, written as tau-bench writes it (``abs(r - 1) <= 1e-6`` would refuse 0.999999,
    whose difference from 1 is a little over 1e-6 in binary floating point)."""
    if value is True or value is False or value is None:
        return value is True
    return bool(1 - LABEL_TOLERANCE <= value <= 1 + LABEL_TOLERANCE)


def _outcome_value(value: Any, pointer: str) -> bool | float:
    kind = type(value)
    if kind is bool:
        return bool(value)
    if kind is int or kind is float:
        if not is_finite(value):
            raise InputError(
                f"an outcome label must be finite, got {number_text(value)}", pointer=pointer
            )
        return value  # type: ignore[no-any-return]
    raise InputError(
        f"an outcome label must be true, false or a number, got {json_type(value)}", pointer=pointer
    )


def task_at(trace: Trace, task_key: str) -> str | None:
    """The task id at ``task_key`` in the canonical trace, or None when the pointer finds none
    (``label_report`` says why)."""
    try:
        return label_report(_UNLABELLED, trace, task_key=task_key, outcome_at=None).task
    except InputError:
        return None


def label_report(
    report: TraceReport, trace: Trace, *, task_key: str | None, outcome_at: str | None
) -> TraceReport:
    """Record in ``report`` the task key and the outcome label read from ``trace`` at the
    given JSON pointers (into the canonical trace). InputError at the pointer when one is
    missing or of the wrong type."""

    if task_key is None and outcome_at is None:
        return report
    document = trace.to_dict()
    # the canonical form leaves empty metadata out; a pointer into it must still find the object
    document.setdefault("metadata", {})
    for step in document["steps"]:
        step.setdefault("metadata", {})
    task = outcome = None
    try:
        if task_key is not None:
            value, where = resolve(document, task_key, "task_key")
            task = id_part(value, where, "a task key")
        if outcome_at is not None:
            value, where = resolve(document, outcome_at, "outcome_at")
            outcome = _outcome_value(value, where)
    except InputError as exc:
        raise InputError(
            f"trace {excerpt(trace.trace_id)}: {exc.message}", pointer=exc.pointer, miss=exc.miss
        ) from None
    return replace(report, task=task, outcome=outcome)


@dataclass(frozen=True, slots=True)
class Trial:
    """One run of one task."""

    workflow: str
    task: str
    run: int  # 1-based position among the trials of its task, in input order
    source: int  # index of the report it came from
    success: bool
    report: TraceReport

    @property
    def trace_id(self) -> str:
        return self.report.trace_id


def _success(report: TraceReport, outcome: str, where: str) -> bool:
    if outcome == "verdict":
        return report.passed
    if report.outcome is None:
        raise InputError(
            f"trace {excerpt(report.trace_id)} has no recorded outcome label, which --outcome "
            f"{outcome} needs (validate with --outcome-at POINTER)",
            pointer=where,
        )
    labelled = label_success(report.outcome)
    return labelled if outcome == "label" else labelled and report.passed


def collect_trials(runs: Sequence[tuple[str, RunReport]], outcome: str = "verdict") -> list[Trial]:
    """Every trace report of ``runs`` (``(name, report)`` pairs) as a trial, in input order.

    InputError, naming the report and the trace's pointer, when the outcome mode needs a label
    that a trace report lacks, or when the costs or token counts of all the trace reports add
    up to more than a summary can report."""
    if outcome not in OUTCOMES:
        raise ValueError(f"unknown outcome {outcome!r}")
    _check_totals(runs)
    trials: list[Trial] = []
    seen: Counter[tuple[str, str]] = Counter()
    for source, (name, run) in enumerate(runs):
        for index, report in enumerate(run.reports):
            where = join_pointer("/reports", index)
            try:
                success = _success(report, outcome, join_pointer(where, "outcome"))
            except InputError as exc:
                raise exc.located(name) from None
            task = report.task if report.task is not None else default_task_key(report.trace_id)
            seen[report.workflow, task] += 1
            trials.append(
                Trial(report.workflow, task, seen[report.workflow, task], source, success, report)
            )
    return trials


def _check_totals(runs: Sequence[tuple[str, RunReport]]) -> None:
    """InputError at the trace report from which the sum of every ``total_cost_usd`` exceeds
    the largest float, or the sum of every ``total_tokens`` is an integer too long to write.

    The summaries add up these totals per run, per workflow and overall: subsets of all of them.
    A report's totals are never negative (the report reader checks), so when the sum of all of
    them fits, every one of those sums does."""
    costs = [r.total_cost_usd for _, run in runs for r in run.reports]
    try:
        fits = math.isfinite(math.fsum(costs))
    except OverflowError:  # "intermediate overflow": the exact sum exceeds the largest float
        fits = False
    limit = sys.get_int_max_str_digits()
    too_long = 10**limit if limit else None
    tokens = sum(r.total_tokens or 0 for _, run in runs for r in run.reports)
    if fits and (too_long is None or tokens < too_long):
        return
    cost = Fraction(0)
    tokens = 0
    for name, run in runs:
        for index, report in enumerate(run.reports):
            where = join_pointer("/reports", index)
            cost += Fraction(report.total_cost_usd)
            try:
                float(cost)
            except OverflowError:
                raise InputError(
                    "the reports' total_cost_usd values add up to more than the largest number "
                    "a summary can hold",
                    pointer=join_pointer(where, "total_cost_usd"),
                    source=name,
                ) from None
            tokens += report.total_tokens or 0
            if too_long is not None and tokens >= too_long:
                raise InputError(
                    "the reports' total_tokens values add up to a number too long to report",
                    pointer=join_pointer(where, "total_tokens"),
                    source=name,
                )


@dataclass(frozen=True, slots=True)
class TaskResult:
    """How often one task succeeded over its runs."""

    workflow: str
    task: str
    runs: int
    successes: int
    trace_ids: tuple[str, ...]

    @property
    def task_class(self) -> TaskClass:
        return task_class(self.runs, self.successes)

    @property
    def rate(self) -> Fraction:
        return Fraction(self.successes, self.runs)

    def pass_hat(self, k: int) -> Fraction | None:
        return pass_hat_k(self.runs, self.successes, k)

    def pass_at(self, k: int) -> Fraction | None:
        return pass_at_k(self.runs, self.successes, k)

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "runs": self.runs,
            "successes": self.successes,
            "class": self.task_class,
            "trace_ids": list(self.trace_ids),
        }


@dataclass(frozen=True, slots=True)
class RunTotals:
    """The trials with one run number: their verdicts and what they measured."""

    run: int
    traces: int
    successes: int
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    cost_usd: float | None
    tokens: int | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "traces": self.traces,
            "successes": self.successes,
            "pass_rate": self.successes / self.traces,
            "latency_p50_ms": self.latency_p50_ms,
            "latency_p95_ms": self.latency_p95_ms,
            "cost_usd": self.cost_usd,
            "tokens": self.tokens,
        }


def _measures(
    reports: Sequence[TraceReport],
) -> tuple[float | None, float | None, float | None, int | None]:
    """Latency p50 and p95, cost total, token total over the reports that record them.

    A report cannot tell a recorded zero from a missing value, so a zero latency or cost counts
    as not recorded."""
    latencies = [r.total_latency_ms for r in reports if r.total_latency_ms > 0]
    costs = [r.total_cost_usd for r in reports if r.total_cost_usd > 0]
    tokens = [r.total_tokens for r in reports if r.total_tokens is not None]
    return (
        percentile(latencies, 50),
        percentile(latencies, 95),
        round(math.fsum(costs), 10) if costs else None,
        sum(tokens) if tokens else None,
    )


def _mean(values: Sequence[Fraction]) -> Fraction | None:
    return sum(values, Fraction(0)) / len(values) if values else None


def _float(value: Fraction | None) -> float | None:
    return None if value is None else float(value)


@dataclass(frozen=True, slots=True)
class Summary:
    """The outcome table of one workflow (or of all of them: ``workflow`` None) and what it
    gives: pass rate with its Wilson interval, pass@k and pass^k, task classes, rule hit rates
    and measurements per run."""

    workflow: str | None
    k: int
    tasks: tuple[TaskResult, ...]  # sorted by task key
    per_run: tuple[RunTotals, ...]
    rule_hits: tuple[tuple[str, int], ...]  # (rule id, trials with a finding of it)
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    cost_usd: float | None
    tokens: int | None

    @property
    def runs(self) -> int:
        return sum(t.runs for t in self.tasks)

    @property
    def successes(self) -> int:
        return sum(t.successes for t in self.tasks)

    @property
    def pass_rate(self) -> Fraction | None:
        """Successes over all runs (pass@1 pooled over runs); None without runs."""
        return Fraction(self.successes, self.runs) if self.runs else None

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.successes, self.runs)

    @property
    def min_runs(self) -> int:
        return min((t.runs for t in self.tasks), default=0)

    @property
    def max_runs(self) -> int:
        return max((t.runs for t in self.tasks), default=0)

    def evaluable(self, k: int | None = None) -> list[TaskResult]:
        """The tasks with at least ``k`` runs (default: this summary's k)."""
        k = self.k if k is None else k
        return [t for t in self.tasks if t.runs >= k]

    def pass_hat(self, k: int | None = None) -> Fraction | None:
        """pass^k averaged over the evaluable tasks; None when none is evaluable."""
        k = self.k if k is None else k
        return _mean([v for t in self.tasks if (v := t.pass_hat(k)) is not None])

    def pass_at(self, k: int | None = None) -> Fraction | None:
        k = self.k if k is None else k
        return _mean([v for t in self.tasks if (v := t.pass_at(k)) is not None])

    def curve(self) -> list[tuple[int, Fraction | None, Fraction | None, int]]:
        """(k, pass^k, pass@k, evaluable tasks) for k from 1 to the most runs of any task, at
        most :data:`CURVE_MAX_K`."""
        return [
            (k, self.pass_hat(k), self.pass_at(k), len(self.evaluable(k)))
            for k in range(1, min(self.max_runs, CURVE_MAX_K) + 1)
        ]

    def classes(self) -> dict[str, int]:
        counts = Counter(t.task_class for t in self.tasks)
        return {name: counts[name] for name in ("stable-pass", "stable-fail", "flaky")}

    @property
    def flaky(self) -> list[TaskResult]:
        return [t for t in self.tasks if t.task_class == "flaky"]

    def to_dict(self) -> dict[str, Any]:
        """JSON form; probabilities are floats of the exact values."""
        low, high = self.interval
        return {
            "workflow": self.workflow,
            "tasks": len(self.tasks),
            "runs": self.runs,
            "successes": self.successes,
            "runs_per_task": {"min": self.min_runs, "max": self.max_runs},
            "pass_rate": _float(self.pass_rate),
            "pass_rate_ci95": [low, high],
            "k": self.k,
            "pass_hat_k": _float(self.pass_hat()),
            "pass_at_k": _float(self.pass_at()),
            "evaluable_tasks": len(self.evaluable()),
            "not_evaluable_tasks": [t.task for t in self.tasks if t.runs < self.k],
            "by_k": [
                {
                    "k": k,
                    "pass_hat_k": _float(hat),
                    "pass_at_k": _float(at),
                    "evaluable_tasks": count,
                }
                for k, hat, at, count in self.curve()
            ],
            "classes": {key.replace("-", "_"): n for key, n in self.classes().items()},
            "flaky_tasks": [t.task for t in self.flaky],
            "rules": [
                {"rule_id": rule, "runs": n, "rate": n / self.runs} for rule, n in self.rule_hits
            ],
            "latency_p50_ms": self.latency_p50_ms,
            "latency_p95_ms": self.latency_p95_ms,
            "cost_usd": self.cost_usd,
            "tokens": self.tokens,
            "per_run": [r.to_dict() for r in self.per_run],
            "task_results": [t.to_dict() for t in self.tasks],
        }


def summarize(trials: Sequence[Trial], workflow: str | None, k: int | None = None) -> Summary:
    """Summarise ``trials`` (all of one workflow, or of several when ``workflow`` is None).

    ``k`` defaults to the fewest runs of any task, so that every task is evaluable; a larger
    ``k`` leaves the tasks with fewer runs out of pass@k and pass^k (they are listed)."""
    if k is not None and k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    grouped: dict[tuple[str, str], list[Trial]] = {}
    for trial in trials:
        grouped.setdefault((trial.workflow, trial.task), []).append(trial)
    several = len({w for w, _ in grouped}) > 1
    tasks = tuple(
        TaskResult(
            w,
            f"{w}/{task}" if several else task,
            len(group),
            sum(1 for t in group if t.success),
            tuple(t.trace_id for t in group),
        )
        for (w, task), group in sorted(
            grouped.items(), key=lambda item: (natural_key(item[0][1]), item[0][0])
        )
    )
    by_run: dict[int, list[Trial]] = {}
    for trial in trials:
        by_run.setdefault(trial.run, []).append(trial)
    per_run = tuple(
        RunTotals(
            run,
            len(group),
            sum(1 for t in group if t.success),
            *_measures([t.report for t in group]),
        )
        for run, group in sorted(by_run.items())
    )
    hits: Counter[str] = Counter()
    for trial in trials:
        hits.update({f.rule_id or f.category for f in trial.report.findings})
    rules = tuple(sorted(hits.items(), key=lambda item: (-item[1], item[0])))
    if k is None:
        k = max(1, min((t.runs for t in tasks), default=1))
    return Summary(workflow, k, tasks, per_run, rules, *_measures([t.report for t in trials]))


def _by_workflow(trials: Sequence[Trial]) -> dict[str, list[Trial]]:
    groups: dict[str, list[Trial]] = {}
    for trial in trials:
        groups.setdefault(trial.workflow, []).append(trial)
    return groups


def summarize_workflows(
    trials: Sequence[Trial], k: Mapping[str, int] | None = None
) -> list[Summary]:
    """One summary per workflow, sorted by name; ``k`` maps a workflow to its k."""
    k = k or {}
    return [
        summarize(group, workflow, k.get(workflow))
        for workflow, group in sorted(_by_workflow(trials).items())
    ]


@dataclass(frozen=True, slots=True)
class PairedTest:
    """A paired two-sided test of baseline against candidate over the tasks both ran.

    ``metric`` is ``pass rate`` (per task: successes / runs) or ``pass^k`` (per task:
    C(c, k) / C(n, k), over tasks with at least k runs on both sides)."""

    metric: str
    k: int
    pairs: int
    baseline_mean: Fraction | None
    candidate_mean: Fraction | None
    down: tuple[str, ...]  # tasks whose value dropped
    up: tuple[str, ...]  # tasks whose value rose
    method: str
    p_value: Fraction
    min_p_value: Fraction

    @property
    def drop(self) -> bool:
        """Whether the candidate's mean over the paired tasks is below the baseline's."""
        return (
            self.baseline_mean is not None
            and self.candidate_mean is not None
            and self.candidate_mean < self.baseline_mean
        )

    def insufficient(self, alpha: Fraction) -> bool:
        """Whether no outcome of this many paired tasks could be significant at ``alpha``."""
        return self.min_p_value > alpha

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "k": self.k,
            "paired_tasks": self.pairs,
            "baseline": _float(self.baseline_mean),
            "candidate": _float(self.candidate_mean),
            "down": list(self.down),
            "up": list(self.up),
            "method": self.method,
            "p_value": float(self.p_value),
            "min_p_value": float(self.min_p_value),
        }


def paired_test(baseline: Summary, candidate: Summary, metric: str) -> PairedTest:
    """Test the per-task values of ``metric`` on the tasks both summaries hold (k of the
    baseline summary, which :func:`compare_trials` makes equal on both sides)."""
    if metric not in ("pass rate", "pass^k"):
        raise ValueError(f"unknown metric {metric!r}")
    k = baseline.k
    cand = {t.task: t for t in candidate.tasks}
    pairs: list[tuple[str, Fraction, Fraction, bool]] = []
    for task in baseline.tasks:
        other = cand.get(task.task)
        if other is None:
            continue
        if metric == "pass rate":
            pairs.append((task.task, task.rate, other.rate, task.runs == other.runs == 1))
        else:
            b, c = task.pass_hat(k), other.pass_hat(k)
            if b is not None and c is not None:
                pairs.append((task.task, b, c, task.runs == other.runs == 1))
    differences = [c - b for _, b, c, _ in pairs]
    down = tuple(name for name, b, c, _ in pairs if c < b)
    up = tuple(name for name, b, c, _ in pairs if c > b)
    if pairs and all(single for *_, single in pairs):
        method, p_value = "McNemar exact", mcnemar_exact(len(down), len(up))
    else:
        exact = permutation_p_value(differences)
        if exact is None:
            method, p_value = "exact sign test", sign_test(differences)
        else:
            method, p_value = "exact paired permutation", exact
    return PairedTest(
        metric,
        k,
        len(pairs),
        _mean([b for _, b, _, _ in pairs]),
        _mean([c for _, _, c, _ in pairs]),
        down,
        up,
        method,
        p_value,
        min_p_value(len(pairs)),
    )


@dataclass(frozen=True, slots=True)
class WorkflowComparison:
    """Baseline and candidate summaries of one workflow, with the same k, and paired tests."""

    workflow: str
    baseline: Summary
    candidate: Summary
    rate_test: PairedTest
    hat_test: PairedTest

    @property
    def k(self) -> int:
        return self.baseline.k

    @property
    def only_baseline(self) -> list[str]:
        names = {t.task for t in self.candidate.tasks}
        return [t.task for t in self.baseline.tasks if t.task not in names]

    @property
    def only_candidate(self) -> list[str]:
        names = {t.task for t in self.baseline.tasks}
        return [t.task for t in self.candidate.tasks if t.task not in names]

    def to_dict(self) -> dict[str, Any]:
        return {
            "workflow": self.workflow,
            "k": self.k,
            "baseline": self.baseline.to_dict(),
            "candidate": self.candidate.to_dict(),
            "tests": [self.rate_test.to_dict(), self.hat_test.to_dict()],
            "tasks_only_in_baseline": self.only_baseline,
            "tasks_only_in_candidate": self.only_candidate,
        }


def compare_trials(
    baseline: Sequence[Trial], candidate: Sequence[Trial], k: Mapping[str, int] | None = None
) -> list[WorkflowComparison]:
    """Compare the two sides workflow by workflow (every workflow either side has, sorted).

    A workflow's k is ``k[workflow]`` when given, else the fewest runs of any task on either
    side, so that pass^k means the same on both sides."""
    k = k or {}
    base, cand = _by_workflow(baseline), _by_workflow(candidate)
    out: list[WorkflowComparison] = []
    for workflow in sorted(base.keys() | cand.keys()):
        chosen = k.get(workflow)
        if chosen is None:
            fewest = [
                min(Counter(t.task for t in side).values())
                for side in (base.get(workflow, []), cand.get(workflow, []))
                if side
            ]
            chosen = max(1, min(fewest))
        b = summarize(base.get(workflow, []), workflow, chosen)
        c = summarize(cand.get(workflow, []), workflow, chosen)
        out.append(
            WorkflowComparison(
                workflow, b, c, paired_test(b, c, "pass rate"), paired_test(b, c, "pass^k")
            )
        )
    return out
