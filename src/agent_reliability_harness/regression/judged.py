"""The judge's outcomes over runs (docs/answers-and-judge.md, "The judge"): the pass rate of
each rubric version and model with its Wilson interval (``arh stats``), and the traces whose
judge verdict flipped between a baseline and a candidate (``arh compare``).

A rate counts the traces that were judged (verdict pass or fail); the traces not judged and the
judgment errors are counted beside it, never as passes. A flip needs the same rubric, rubric
version and model on both sides: a verdict of another judge is not comparable.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from agent_reliability_harness.model.judge_outcome import JudgeOutcome
from agent_reliability_harness.model.report import TraceReport
from agent_reliability_harness.regression.compare import CompareResult
from agent_reliability_harness.regression.stats import wilson_interval

__all__ = [
    "JudgeFlip",
    "JudgeRate",
    "judge_comparison",
    "judge_flips",
    "judge_rates",
    "side_rates",
]

JudgeKey = tuple[str, str, str]  # rubric, rubric version, model


def _key(outcome: JudgeOutcome) -> JudgeKey:
    return (outcome.rubric, outcome.rubric_version, outcome.model)


@dataclass(frozen=True, slots=True)
class JudgeRate:
    """The judge outcomes of one rubric version and model over a run."""

    rubric: str
    rubric_version: str
    model: str
    passed: int
    failed: int
    not_judged: int
    errors: int
    gating: bool

    @property
    def judged(self) -> int:
        return self.passed + self.failed

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.judged if self.judged else None

    @property
    def interval(self) -> tuple[float, float]:
        """The 95% Wilson interval of the pass rate (0 to 1 when nothing was judged)."""
        return wilson_interval(self.passed, self.judged)

    def to_dict(self) -> dict[str, Any]:
        low, high = self.interval
        return {
            "rubric": self.rubric,
            "rubric_version": self.rubric_version,
            "model": self.model,
            "judged": self.judged,
            "passed": self.passed,
            "failed": self.failed,
            "not_judged": self.not_judged,
            "errors": self.errors,
            "pass_rate": self.pass_rate,
            "interval": [low, high],
            "gating": self.gating,
        }


def judge_rates(reports: Iterable[TraceReport]) -> tuple[JudgeRate, ...]:
    """The rate of each rubric version and model that judged a trace of ``reports``, sorted by
    rubric, version and model; empty when no report has a judge outcome."""
    counts: dict[JudgeKey, list[int]] = {}
    gating: dict[JudgeKey, bool] = {}
    slots = {"pass": 0, "fail": 1, "not_judged": 2, "error": 3}
    for report in reports:
        if report.judge is None:
            continue
        key = _key(report.judge)
        counts.setdefault(key, [0, 0, 0, 0])[slots[report.judge.verdict]] += 1
        gating[key] = gating.get(key, False) or report.judge.gating
    rates = []
    for key in sorted(counts):
        rubric, version, model = key
        passed, failed, not_judged, errors = counts[key]
        rates.append(
            JudgeRate(rubric, version, model, passed, failed, not_judged, errors, gating[key])
        )
    return tuple(rates)


@dataclass(frozen=True, slots=True)
class JudgeFlip:
    """A trace whose judge verdict went from pass to fail or from fail to pass."""

    trace_id: str
    baseline: str
    candidate: str

    @property
    def change(self) -> str:
        return f"{self.baseline}->{self.candidate}"

    def to_dict(self) -> dict[str, str]:
        return {"trace_id": self.trace_id, "baseline": self.baseline, "candidate": self.candidate}


def judge_flips(result: CompareResult) -> tuple[JudgeFlip, ...]:
    """The traces on both sides judged pass or fail by the same rubric version and model whose
    verdict changed, in trace id order."""
    flips = []
    for delta in result.traces:
        base = delta.baseline.judge if delta.baseline is not None else None
        cand = delta.candidate.judge if delta.candidate is not None else None
        if (
            base is not None
            and cand is not None
            and _key(base) == _key(cand)
            and {base.verdict, cand.verdict} == {"pass", "fail"}
        ):
            flips.append(JudgeFlip(delta.trace_id, base.verdict, cand.verdict))
    return tuple(flips)


def side_rates(result: CompareResult, side: str) -> tuple[JudgeRate, ...]:
    """The judge rates of one side (``baseline`` or ``candidate``) of a comparison."""
    reports = (d.baseline if side == "baseline" else d.candidate for d in result.traces)
    return judge_rates(r for r in reports if r is not None)


def judge_comparison(result: CompareResult) -> dict[str, Any] | None:
    """The ``judge`` block of ``arh compare``'s JSON report: each side's rates and the flips;
    None when neither side has a judge outcome (the report is then as before)."""
    sides = [side_rates(result, "baseline"), side_rates(result, "candidate")]
    if not any(sides):
        return None
    flips = judge_flips(result)
    return {
        "baseline": [r.to_dict() for r in sides[0]],
        "candidate": [r.to_dict() for r in sides[1]],
        "pass_to_fail": sum(1 for f in flips if f.change == "pass->fail"),
        "fail_to_pass": sum(1 for f in flips if f.change == "fail->pass"),
        "flips": [f.to_dict() for f in flips],
    }
