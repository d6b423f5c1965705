"""Answer outcomes in the statistics and the comparison: was each trace's answer right?

A trace's *answer outcome* is read from its report's ``answers`` category (policy language 1.2):
pass when the category applied and no answer check failed, fail when one failed, and *not judged*
when the category did not apply (no expected outcome) or the report has none. Not-judged traces
are counted apart and never enter a pass rate. Reports without an ``answers`` category give no
answer statistics at all, so their outputs stay as they were.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from agent_reliability_harness.model.report import TraceReport
from agent_reliability_harness.regression.stats import wilson_interval

__all__ = ["AnswerFlips", "AnswerRate", "answer_flips", "answer_outcome", "answer_rates"]


def answer_outcome(report: TraceReport) -> bool | None:
    """True (the answer passed every answer check that applied), False (one failed) or None
    (not judged)."""
    for category in report.categories:
        if category.category == "answers":
            return category.failed == 0 if category.applicable else None
    return None


def _has_answers(reports: Iterable[TraceReport]) -> bool:
    return any(c.category == "answers" for r in reports for c in r.categories)


@dataclass(frozen=True, slots=True)
class AnswerRate:
    """The answer pass rate of a group of traces (a workflow, or all of them: ``None``), with
    its 95% Wilson interval; ``not_judged`` traces had no expected outcome."""

    workflow: str | None
    passed: int
    judged: int
    not_judged: int

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.passed, self.judged)

    @property
    def rate(self) -> float | None:
        return self.passed / self.judged if self.judged else None

    def to_dict(self) -> dict[str, Any]:
        low, high = self.interval
        return {
            "workflow": self.workflow,
            "passed": self.passed,
            "failed": self.judged - self.passed,
            "not_judged": self.not_judged,
            "pass_rate": None if self.rate is None else round(self.rate, 6),
            "interval": [round(low, 6), round(high, 6)],
        }


def _rate(workflow: str | None, outcomes: list[bool | None]) -> AnswerRate:
    judged = [o for o in outcomes if o is not None]
    return AnswerRate(workflow, sum(judged), len(judged), len(outcomes) - len(judged))


def answer_rates(reports: Iterable[TraceReport]) -> tuple[AnswerRate, ...]:
    """All traces, then each workflow in sorted order; ``()`` when no report has an answers
    category (a policy without answer checks)."""
    reports = list(reports)
    if not _has_answers(reports):
        return ()
    by_workflow: dict[str, list[bool | None]] = {}
    for report in reports:
        by_workflow.setdefault(report.workflow, []).append(answer_outcome(report))
    overall = _rate(None, [answer_outcome(r) for r in reports])
    return (overall, *(_rate(w, by_workflow[w]) for w in sorted(by_workflow)))


@dataclass(frozen=True, slots=True)
class AnswerFlips:
    """Answer outcomes of the traces on both sides of a comparison (matched by trace id): the
    pass rates of each side and the traces whose answer went from pass to fail or back."""

    baseline: AnswerRate
    candidate: AnswerRate
    pass_to_fail: tuple[str, ...]
    fail_to_pass: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline.to_dict(),
            "candidate": self.candidate.to_dict(),
            "pass_to_fail": list(self.pass_to_fail),
            "fail_to_pass": list(self.fail_to_pass),
        }


def answer_flips(
    baseline: Mapping[str, TraceReport], candidate: Mapping[str, TraceReport]
) -> AnswerFlips | None:
    """The answer flips between two runs (reports by trace id); None when neither side has an
    answers category."""
    if not (_has_answers(baseline.values()) or _has_answers(candidate.values())):
        return None
    down: list[str] = []
    up: list[str] = []
    for trace_id in sorted(baseline.keys() & candidate.keys()):
        before = answer_outcome(baseline[trace_id])
        after = answer_outcome(candidate[trace_id])
        if before is True and after is False:
            down.append(trace_id)
        elif before is False and after is True:
            up.append(trace_id)
    return AnswerFlips(
        _rate(None, [answer_outcome(r) for r in baseline.values()]),
        _rate(None, [answer_outcome(r) for r in candidate.values()]),
        tuple(down),
        tuple(up),
    )
