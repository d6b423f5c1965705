"""Comparing a candidate run with a baseline: what changed per trace, and which findings are new.

Findings are matched by fingerprint, never by message (messages hold measured values). The
fingerprint is (trace_id, rule_id, category, step, subject); matching is multiset matching in
three passes, each only over what the previous left unmatched:

1. equal fingerprints;
2. equal fingerprints but for the subject, when one side has none (a report of arh 0.2.x);
3. equal (trace_id, category, step) when one side has no rule_id (a report of arh 0.1.x):
   two findings that both carry rule ids never match here.

The step is the finding's ``step_id``, or its ``step_ref`` when the trace's reports on both
sides record that its step ids were made by an adapter (``TraceReport.step_ids``): those change
from one recording to the next, the references do not (``model.step_refs``).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final, Literal

from agent_reliability_harness.errors import (
    no_failures,
)
from agent_reliability_harness.model.report import (
    Finding,
    ReportLike,
    RunReport,
    TraceReport,
    as_run_report,
)
from agent_reliability_harness.regression.answers import AnswerFlips, answer_flips

StatusChange = Literal["added", "removed", "pass->fail", "fail->pass", "unchanged"]

__all__ = ["CompareResult", "TraceDelta", "compare_reports", "trace_delta"]

_ROUND_DELTA: Final = 6


def _step_id(finding: Finding) -> str:
    return finding.step_id or ""


def _step_ref(finding: Finding) -> str:
    """The finding's stable step reference; its step id in a report that has none for it."""
    return finding.step_ref or finding.step_id or ""


def _match(
    new: list[Finding],
    gone: list[Finding],
    key: Callable[[Finding], Hashable],
    loose: Callable[[Finding], bool] | None = None,
) -> None:
    """Remove matched pairs from ``new`` and ``gone``: each new finding takes the first
    unmatched finding of ``gone`` with its key, in list order. With ``loose``, two findings of
    one key match only when either of them is loose (one side lacks what the key leaves out).

    Each side keeps, per key, a queue of what is still unmatched (all of them, and the loose
    ones), so the matching is linear however many findings share a key."""
    everyone: dict[Hashable, deque[int]] = {}
    loose_ones: dict[Hashable, deque[int]] = {}
    for index, finding in enumerate(gone):
        found = key(finding)
        everyone.setdefault(found, deque()).append(index)
        if loose is not None and loose(finding):
            loose_ones.setdefault(found, deque()).append(index)
    used: set[int] = set()
    kept: list[Finding] = []
    for finding in new:
        found = key(finding)
        # a loose finding (or any, without ``loose``) may take any finding of its key
        queue = everyone if loose is None or loose(finding) else loose_ones
        waiting = queue.get(found)
        while waiting and waiting[0] in used:  # taken through the other queue
            waiting.popleft()
        if waiting:
            used.add(waiting.popleft())
        else:
            kept.append(finding)
    new[:] = kept
    gone[:] = [f for i, f in enumerate(gone) if i not in used]


def diff_findings(
    baseline: Iterable[Finding],
    candidate: Iterable[Finding],
    *,
    any_step: bool = False,
    by_ref: bool = False,
) -> tuple[tuple[Finding, ...], tuple[Finding, ...]]:
    """Split two findings lists into (new in candidate, resolved from baseline).

    Findings are matched by fingerprint, as multisets, in rounds: the whole fingerprint, then
    without the subject where a finding has none (0.2.x reports), then without the rule ID where
    one has none (0.1.x reports). With ``any_step``, the findings still unmatched are then
    matched in the same three rounds without their steps. In every round a finding takes one of
    its own severity first, so a new error beside an old warning of one fingerprint is the new
    one, whatever the order of the findings in the files. ``by_ref``: a finding's step is its
    stable step reference (a trace whose step ids were made by an adapter), else its step id."""
    step = _step_ref if by_ref else _step_id

    def order(f: Finding) -> tuple[str, str, str, str, str, str]:
        return (f.rule_id, f.category, step(f), f.subject or "", f.message, f.severity)

    new = sorted(candidate, key=order)
    gone = sorted(baseline, key=order)
    rounds: list[tuple[Callable[[Finding], Hashable], Callable[[Finding], bool] | None]] = [
        (lambda f: (f.rule_id, f.category, step(f), f.subject or ""), None),
        (lambda f: (f.rule_id, f.category, step(f)), lambda f: f.subject is None),
        (lambda f: (f.category, step(f)), lambda f: not f.rule_id),
    ]
    if any_step:
        rounds += [
            (lambda f: (f.rule_id, f.category, f.subject or ""), None),
            (lambda f: (f.rule_id, f.category), lambda f: f.subject is None),
            (lambda f: f.category, lambda f: not f.rule_id),
        ]
    for key, loose in rounds:
        if not (new and gone):
            break
        _match(new, gone, lambda f, key=key: (key(f), f.severity), loose)  # type: ignore[misc]
        _match(new, gone, key, loose)
    return tuple(new), tuple(gone)


@dataclass(frozen=True, slots=True)
class TraceDelta:
    """How one trace differs between baseline and candidate."""

    trace_id: str
    status_change: StatusChange
    baseline: TraceReport | None
    candidate: TraceReport | None
    new_findings: tuple[Finding, ...]
    resolved_findings: tuple[Finding, ...]

    @property
    def score_delta(self) -> float | None:
        """Candidate minus baseline score; unrounded when both reports carry exact scores."""
        if self.baseline is None or self.candidate is None:
            return None
        if self.baseline.score_is_exact and self.candidate.score_is_exact:
            return self.candidate.score - self.baseline.score
        return round(self.candidate.score, 2) - round(self.baseline.score, 2)

    @property
    def score_drop(self) -> Decimal | None:
        """How far the score fell (negative when it rose), as the exact difference of the
        scores as written: the unrounded ones when both reports carry them, else the 2-decimal
        ones (8.05 to 3.05 is a drop of 5.00, where the floats differ by 5.000000000000001)."""
        if self.baseline is None or self.candidate is None:
            return None
        before, after = self.baseline.score, self.candidate.score
        if not (self.baseline.score_is_exact and self.candidate.score_is_exact):
            before, after = round(before, 2), round(after, 2)
        return Decimal(repr(before)) - Decimal(repr(after))

    def dropped_beyond(self, limit: float | None) -> bool:
        """Whether the score fell by more than ``limit`` (``--max-score-drop``, compared as
        written; None: no limit), which fails the ``regressions`` gate."""
        drop = self.score_drop
        return limit is not None and drop is not None and drop > Decimal(repr(float(limit)))

    @property
    def latency_delta_ms(self) -> float | None:
        if self.baseline is None or self.candidate is None:
            return None
        return round(self.candidate.total_latency_ms - self.baseline.total_latency_ms, _ROUND_DELTA)

    @property
    def cost_delta_usd(self) -> float | None:
        if self.baseline is None or self.candidate is None:
            return None
        return round(self.candidate.total_cost_usd - self.baseline.total_cost_usd, _ROUND_DELTA)

    @property
    def changed(self) -> bool:
        """A status change, or findings that appeared or went away."""
        return (
            self.status_change != "unchanged"
            or bool(self.new_findings)
            or bool(self.resolved_findings)
        )

    @property
    def notable(self) -> bool:
        """Changed, or the score moved."""
        delta = self.score_delta
        return self.changed or (delta is not None and round(delta, 2) != 0)

    def to_dict(self) -> dict[str, Any]:
        """JSON form: the 0.2.x keys in their order (scores as the reports give them)."""
        delta = self.score_delta
        return {
            "trace_id": self.trace_id,
            "status_change": self.status_change,
            "baseline_passed": None if self.baseline is None else self.baseline.passed,
            "candidate_passed": None if self.candidate is None else self.candidate.passed,
            "baseline_score": None if self.baseline is None else round(self.baseline.score, 2),
            "candidate_score": None if self.candidate is None else round(self.candidate.score, 2),
            "score_delta": None if delta is None else round(delta, 2) + 0.0,  # not -0.0
            "latency_delta_ms": self.latency_delta_ms,
            "cost_delta_usd": self.cost_delta_usd,
            "new_findings": [_ref(self.trace_id, f) for f in self.new_findings],
            "resolved_findings": [_ref(self.trace_id, f) for f in self.resolved_findings],
        }


def _ref(trace_id: str, finding: Finding) -> dict[str, Any]:
    out: dict[str, Any] = {
        "trace_id": trace_id,
        "severity": finding.severity,
        "category": finding.category,
        "message": finding.message,
        "step_id": finding.step_id,
        "rule_id": finding.rule_id,
    }
    if finding.subject is not None:
        out["subject"] = finding.subject
    if finding.step_ref is not None:
        out["step_ref"] = finding.step_ref
    return out


def _policy_label(run: RunReport) -> str:
    ids = {r.policy_id for r in run.reports}
    if len(ids) == 1:
        return next(iter(ids))
    if not ids:
        return run.policy_id or ""
    return ",".join(sorted(i for i in ids if i))


@dataclass(frozen=True, slots=True)
class Side:
    """What is known about how one side of a comparison was produced."""

    policy_id: str
    policy_sha256: str | None
    harness_version: str | None
    input_errors: int
    # the run's three kinds of failure (docs/exit-codes.md), from its trace reports and input
    # errors: a report without the keys (arh 0.2.x) reads as failing traces being agent failures
    # and input errors without a kind evaluation errors
    # (RunSummary.failures: the three counts by kind, in the order of FAILURE_KINDS)
    failures: dict[str, int] = field(default_factory=no_failures)

    @classmethod
    def of(cls, run: RunReport) -> Side:
        return cls(
            _policy_label(run),
            run.policy_sha256,
            run.harness_version,
            len(run.input_errors),
            run.summary().failures,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "policy_id": self.policy_id,
            "policy_sha256": self.policy_sha256,
            "harness_version": self.harness_version,
            "input_errors": self.input_errors,
            **self.failures,
        }


def _drift(base: Side, cand: Side) -> tuple[str, ...]:
    warnings: list[str] = []
    if base.policy_id != cand.policy_id:
        warnings.append(
            f"baseline and candidate were checked against different policies: "
            f"{base.policy_id!r} and {cand.policy_id!r}"
        )
    elif base.policy_sha256 and cand.policy_sha256 and base.policy_sha256 != cand.policy_sha256:
        warnings.append(
            f"policy {base.policy_id!r} changed between baseline and candidate (sha256 "
            f"{base.policy_sha256[:12]} and {cand.policy_sha256[:12]})"
        )
    if base.harness_version != cand.harness_version:

        def name(version: str | None) -> str:
            return (
                f"arh {version}"
                if version
                else "an arh version that does not record it (0.2.x or older)"
            )

        warnings.append(
            f"baseline was written by {name(base.harness_version)}, candidate by "
            f"{name(cand.harness_version)}"
        )
    for label, side in (("baseline", base), ("candidate", cand)):
        if side.input_errors:
            plural = "s" if side.input_errors != 1 else ""
            warnings.append(
                f"the {label} report records {side.input_errors} input error{plural}: traces from "
                "unreadable inputs are missing from it"
            )
    return tuple(warnings)


def _selection_drift(
    base: Sequence[tuple[str, str]], cand: Sequence[tuple[str, str]]
) -> tuple[str, ...]:
    """A warning when the two runs switched different rules off or changed different severities
    (``--select``, ``--ignore``, ``--severity`` or a policy's rules section): a rule switched
    off in the candidate would otherwise look like resolved findings."""
    before, after = dict(base), dict(cand)
    changed = [
        (rule_id, before.get(rule_id, "on"), after.get(rule_id, "on"))
        for rule_id in sorted(before.keys() | after.keys())
        if before.get(rule_id) != after.get(rule_id)
    ]
    if not changed:
        return ()
    shown = ", ".join(f"{rule_id} {was} -> {now}" for rule_id, was, now in changed[:10])
    more = f" and {len(changed) - 10} more" if len(changed) > 10 else ""
    warning = (
        "baseline and candidate ran different rule selections (baseline -> candidate: "
        f"{shown}{more}): findings of these rules are not comparable"
    )
    return (warning,)


@dataclass(frozen=True, slots=True)
class CompareResult:
    """The comparison of a candidate run with a baseline run."""

    baseline: Side
    candidate: Side
    traces: tuple[TraceDelta, ...]
    warnings: tuple[str, ...]
    # answer pass rates and flips; None when neither side has answer checks
    answers: AnswerFlips | None = None

    def _count(self, change: str) -> int:
        return sum(1 for t in self.traces if t.status_change == change)

    @property
    def new_findings(self) -> list[tuple[str, Finding]]:
        return [(t.trace_id, f) for t in self.traces for f in t.new_findings]

    @property
    def resolved_findings(self) -> list[tuple[str, Finding]]:
        return [(t.trace_id, f) for t in self.traces for f in t.resolved_findings]

    @property
    def score_deltas(self) -> list[float]:
        return [d for t in self.traces if (d := t.score_delta) is not None]

    def summary(self) -> dict[str, Any]:
        """The 0.2.x summary block."""
        deltas = self.score_deltas
        drops = [-d for d in deltas if d < 0]
        new = self.new_findings
        return {
            "traces_compared": sum(
                1 for t in self.traces if t.baseline is not None and t.candidate is not None
            ),
            "traces_added": self._count("added"),
            "traces_removed": self._count("removed"),
            "pass_to_fail": self._count("pass->fail"),
            "fail_to_pass": self._count("fail->pass"),
            "new_findings": len(new),
            "new_error_findings": sum(1 for _, f in new if f.severity == "error"),
            "resolved_findings": len(self.resolved_findings),
            "average_score_delta": (
                round(math.fsum(deltas) / len(deltas), 2) + 0.0 if deltas else 0.0  # not -0.0
            ),
            "max_score_drop": round(max(drops), 2) if drops else 0.0,
        }


def _status(base: TraceReport | None, cand: TraceReport | None) -> StatusChange:
    if base is None:
        return "added"
    if cand is None:
        return "removed"
    if base.passed and not cand.passed:
        return "pass->fail"
    if cand.passed and not base.passed:
        return "fail->pass"
    return "unchanged"


def compare_reports(
    baseline: ReportLike, candidate: ReportLike, *, any_step: bool = False
) -> CompareResult:
    """Compare two validation reports (from any arh version) trace by trace. ``any_step``
    matches findings whatever their anchor steps (see :func:`diff_findings`), for traces whose
    step ids change from run to run.

    Each report is a :class:`RunReport` or, as arh 0.2.x took them, the JSON report as read from
    its file (a bad one raises :class:`InputError` naming ``<baseline>`` or ``<candidate>``)."""
    baseline = as_run_report(baseline, "<baseline>")
    candidate = as_run_report(candidate, "<candidate>")
    base = {r.trace_id: r for r in baseline.reports}
    cand = {r.trace_id: r for r in candidate.reports}
    deltas = tuple(
        trace_delta(trace_id, base.get(trace_id), cand.get(trace_id), any_step=any_step)
        for trace_id in sorted(base.keys() | cand.keys())
    )
    sides = Side.of(baseline), Side.of(candidate)
    warnings = _drift(*sides) + _selection_drift(baseline.rules, candidate.rules)
    if not any_step:
        warnings += _refs_on_one_side(deltas)
    if base and cand and base.keys().isdisjoint(cand.keys()):
        # nothing is compared: every trace is added or removed, which is almost always a run
        # whose trace ids change (or the wrong report)
        disjoint = (
            f"no trace id is on both sides, so every trace of the baseline ({len(base):,}) is "
            f"removed and every trace of the candidate ({len(cand):,}) added: do the trace ids "
            "stay the same from run to run?"
        )
        warnings += (disjoint,)
    return CompareResult(sides[0], sides[1], deltas, warnings, answer_flips(base, cand))


def trace_delta(
    trace_id: str,
    baseline: TraceReport | None,
    candidate: TraceReport | None,
    *,
    any_step: bool = False,
) -> TraceDelta:
    """How one trace changed between a baseline and a candidate (either may lack it). Its
    findings are matched by stable step reference when both reports record that the trace's
    step ids were made by an adapter (see :func:`diff_findings`)."""
    new, resolved = diff_findings(
        _findings(baseline),
        _findings(candidate),
        any_step=any_step,
        by_ref=_by_ref(baseline, candidate),
    )
    return TraceDelta(trace_id, _status(baseline, candidate), baseline, candidate, new, resolved)


def _by_ref(baseline: TraceReport | None, candidate: TraceReport | None) -> bool:
    return (
        baseline is not None
        and candidate is not None
        and baseline.step_ids is not None
        and candidate.step_ids is not None
    )


def _refs_on_one_side(deltas: Iterable[TraceDelta]) -> tuple[str, ...]:
    """The warnings for traces whose step ids one report records as made by an adapter and the
    other does not (a report written before reports recorded step references): their findings
    are matched by step id, which changes from one recording to the next."""
    only = {"candidate": 0, "baseline": 0}
    for delta in deltas:
        base, cand = delta.baseline, delta.candidate
        if (
            base is not None
            and cand is not None
            and (base.step_ids is None) != (cand.step_ids is None)
        ):
            only["candidate" if base.step_ids is None else "baseline"] += 1
    warnings = []
    for side, count in only.items():
        if count:
            other = "baseline" if side == "candidate" else "candidate"
            many = count != 1
            warnings.append(
                f"{count:,} trace{'s' if many else ''} converted from transcripts "
                f"{'have' if many else 'has'} stable step references in the {side} report "
                f"only, so {'their' if many else 'its'} findings are matched by step id, which "
                f"changes from one recording to the next: write the {other} report again with "
                "this version of arh, or pass --any-step"
            )
    return tuple(warnings)


def _findings(report: TraceReport | None) -> Iterable[Finding]:
    return () if report is None else report.findings
