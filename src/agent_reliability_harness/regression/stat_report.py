"""The statistics of ``arh stats`` and of ``arh compare``'s statistical gates, from reports.

:func:`stats_of` summarises one side; :func:`compare_stats` compares two sides workflow by
workflow and checks the gates. Several reports per side (one per run, or shards) are merged by
:func:`merge_runs` for the trace-by-trace comparison, which needs one report per side.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from agent_reliability_harness._version import __version__
from agent_reliability_harness.errors import (
    EVALUATION_ERROR,
    INFRASTRUCTURE_FAILURE,
    no_failures,
)
from agent_reliability_harness.model.report import RunReport
from agent_reliability_harness.regression.answers import AnswerRate, answer_rates
from agent_reliability_harness.regression.judged import JudgeRate, judge_rates
from agent_reliability_harness.regression.stat_gates import (
    GatePlan,
    StatGateResult,
    check_comparisons,
    check_summaries,
)
from agent_reliability_harness.regression.trials import (
    Summary,
    WorkflowComparison,
    collect_trials,
    compare_trials,
    summarize,
    summarize_workflows,
)

__all__ = [
    "ReportInfo",
    "StatComparison",
    "StatsResult",
    "compare_stats",
    "merge_runs",
    "stats_of",
]


@dataclass(frozen=True, slots=True)
class ReportInfo:
    """What one input report says about how it was produced."""

    path: str
    traces: int
    policy_id: str | None
    policy_sha256: str | None
    harness_version: str | None
    input_errors: int
    # the run's three kinds of failure (docs/exit-codes.md), as :class:`Side` counts them
    # (RunSummary.failures: the three counts by kind, in the order of FAILURE_KINDS)
    failures: dict[str, int] = field(default_factory=no_failures)

    @classmethod
    def of(cls, path: str, run: RunReport) -> ReportInfo:
        return cls(
            path,
            len(run.reports),
            run.policy_id,
            run.policy_sha256,
            run.harness_version,
            len(run.input_errors),
            run.summary().failures,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "traces": self.traces,
            "policy_id": self.policy_id,
            "policy_sha256": self.policy_sha256,
            "harness_version": self.harness_version,
            "input_errors": self.input_errors,
            **self.failures,
        }


def _report_warnings(label: str, infos: Sequence[ReportInfo]) -> list[str]:
    """Input errors recorded in reports, and reports of one side made differently."""
    return [
        f"{label}report {info.path} records {info.input_errors} input "
        f"error{'s' if info.input_errors != 1 else ''}: traces from unreadable inputs are "
        "missing from it"
        for info in infos
        if info.input_errors
    ] + _difference_warnings(label, infos)


def _difference_warnings(label: str, infos: Sequence[ReportInfo]) -> list[str]:
    warnings = []
    if len({(i.policy_id, i.policy_sha256) for i in infos}) > 1:
        warnings.append(f"the {label}reports were checked against different policies")
    if len({i.harness_version for i in infos}) > 1:
        warnings.append(f"the {label}reports were written by different arh versions")
    return warnings


@dataclass(frozen=True, slots=True)
class StatsResult:
    """``arh stats``: the summaries of one side and the gate checks."""

    outcome: str
    reports: tuple[ReportInfo, ...]
    overall: Summary
    workflows: tuple[Summary, ...]
    gate: StatGateResult | None
    warnings: tuple[str, ...]
    # answer pass rates (all traces, then each workflow); none without answer checks
    answers: tuple[AnswerRate, ...] = ()
    # the judge's pass rates, when the reports have judge outcomes (regression/judged.py)
    judge: tuple[JudgeRate, ...] = ()

    @property
    def passed(self) -> bool:
        return self.gate is None or self.gate.passed

    @property
    def excluded(self) -> dict[str, int]:
        """The runs left out of every pass rate, as the reports' input errors are (they have no
        trace report): how many, and how many of them were evaluation errors and
        infrastructure failures (docs/statistics.md). A run the machine could not check is not
        the agent's failure, so it is not counted as one."""
        runs = sum(info.input_errors for info in self.reports)
        infrastructure = sum(info.failures[INFRASTRUCTURE_FAILURE] for info in self.reports)
        return {
            "runs": runs,
            EVALUATION_ERROR: runs - infrastructure,
            INFRASTRUCTURE_FAILURE: infrastructure,
        }

    def to_dict(self) -> dict[str, Any]:
        out = {
            "schema_version": "1",
            "outcome": self.outcome,
            "reports": [r.to_dict() for r in self.reports],
            "overall": self.overall.to_dict(),
            "workflows": [w.to_dict() for w in self.workflows],
            "gate": None if self.gate is None else self.gate.to_dict(),
            "warnings": list(self.warnings),
            "harness": {"name": "agent-reliability-harness", "version": __version__},
        }
        excluded = self.excluded
        if excluded["runs"]:  # only then: the statistics of complete runs stay as they were
            out["excluded"] = excluded
        if self.answers:  # written only with answer outcomes, so other outputs stay as they were
            out["answers"] = [rate.to_dict() for rate in self.answers]
        if self.judge:  # only then: the reports of runs without a judge stay as they were
            out["judge"] = [rate.to_dict() for rate in self.judge]
        return out


def stats_of(
    runs: Sequence[tuple[str, RunReport]], outcome: str, plan: GatePlan | None = None
) -> StatsResult:
    """Summarise the runs of one side, per workflow and overall, and check the gates that need
    no baseline. InputError (naming the report) when the outcome needs a missing label."""
    plan = plan or GatePlan()
    trials = collect_trials(runs, outcome)
    workflows = sorted({t.workflow for t in trials})
    chosen = {w: k for w in workflows if (k := plan.k_for(w)) is not None}
    summaries = summarize_workflows(trials, chosen)
    overall = summarize(trials, None, plan.overall_k)
    infos = tuple(ReportInfo.of(path, run) for path, run in runs)
    gate = check_summaries(plan, summaries) if plan.active else None
    answers = answer_rates(report for _, run in runs for report in run.reports)
    return StatsResult(
        outcome,
        infos,
        overall,
        tuple(summaries),
        gate,
        tuple(_report_warnings("", infos)),
        answers,
        judge=judge_rates(report for _, run in runs for report in run.reports),
    )


@dataclass(frozen=True, slots=True)
class StatComparison:
    """The statistical part of ``arh compare``."""

    outcome: str
    baseline: tuple[ReportInfo, ...]
    candidate: tuple[ReportInfo, ...]
    workflows: tuple[WorkflowComparison, ...]
    gate: StatGateResult
    warnings: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "baseline_reports": [r.to_dict() for r in self.baseline],
            "candidate_reports": [r.to_dict() for r in self.candidate],
            "workflows": [w.to_dict() for w in self.workflows],
            "gate": self.gate.to_dict(),
            "warnings": list(self.warnings),
        }


def compare_stats(
    baseline: Sequence[tuple[str, RunReport]],
    candidate: Sequence[tuple[str, RunReport]],
    outcome: str,
    plan: GatePlan,
) -> StatComparison:
    """Compare the two sides per workflow and check every gate of ``plan``."""
    base = collect_trials(baseline, outcome)
    cand = collect_trials(candidate, outcome)
    workflows = sorted({t.workflow for t in base} | {t.workflow for t in cand})
    chosen = {w: k for w in workflows if (k := plan.k_for(w)) is not None}
    comparisons = compare_trials(base, cand, chosen)
    infos = (
        tuple(ReportInfo.of(p, r) for p, r in baseline),
        tuple(ReportInfo.of(p, r) for p, r in candidate),
    )
    # input errors and reports made differently are drift warnings of the comparison itself
    warnings: list[str] = []
    for comparison in comparisons:
        only = comparison.only_baseline, comparison.only_candidate
        for side, tasks in zip(("baseline", "candidate"), only, strict=True):
            if tasks:
                noun = "task" if len(tasks) == 1 else "tasks"
                warnings.append(
                    f"workflow {comparison.workflow!r}: {len(tasks)} {noun} only in the {side}, "
                    "left out of the paired tests"
                )
    return StatComparison(
        outcome,
        *infos,
        tuple(comparisons),
        check_comparisons(plan, comparisons),
        tuple(warnings),
    )


def merge_runs(runs: Sequence[tuple[str, RunReport]], label: str) -> tuple[RunReport, list[str]]:
    """One report from several (``(path, report)`` pairs of one side, ``label`` ``baseline``
    or ``candidate``) for the trace-by-trace comparison, and warnings when the reports were
    checked against different policies or written by different arh versions.

    Reports whose trace ids are all different (shards of one run) are concatenated. When a
    trace id occurs in more than one report (runs of the same tasks), every trace id becomes
    ``<id>@<n>``, ``n`` being the report's position (from 1), so that each side still has
    unique ids; run ``n`` of the baseline then pairs with run ``n`` of the candidate. The policy
    and the harness version are those of the first report.
    """
    if len(runs) == 1:
        return runs[0][1], []
    ids = [r.trace_id for _, run in runs for r in run.reports]
    renamed = len(ids) != len(set(ids))
    reports = tuple(
        replace(report, trace_id=f"{report.trace_id}@{n}") if renamed else report
        for n, (_, run) in enumerate(runs, 1)
        for report in run.reports
    )
    first = runs[0][1]
    merged = RunReport(
        reports,
        tuple(e for _, run in runs for e in run.input_errors),
        first.policy_id,
        first.policy_sha256,
        first.harness_version,
        first.rules,
    )
    infos = [ReportInfo.of(path, run) for path, run in runs]
    return merged, _difference_warnings(f"{label} ", infos)
