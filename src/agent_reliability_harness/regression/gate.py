"""The CI gate: decide from a comparison whether the candidate may land."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final

from agent_reliability_harness.errors import UsageError, excerpt
from agent_reliability_harness.regression.compare import CompareResult, TraceDelta

__all__ = ["FAIL_ON_MODES", "GateResult", "evaluate_gate", "trace_reasons"]

FAIL_ON_MODES: Final = ("regressions", "failures", "never")
_LISTED: Final = 10  # entries named in one reason line before "and N more"


@dataclass(frozen=True, slots=True)
class GateResult:
    """The gate's verdict and, when it fails, one reason per line."""

    passed: bool
    reasons: tuple[str, ...]
    fail_on: str
    max_score_drop: float | None = None
    fail_on_drift: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "reasons": list(self.reasons),
            "fail_on": self.fail_on,
            "max_score_drop": self.max_score_drop,
            "fail_on_drift": self.fail_on_drift,
        }


def check_gate_options(
    fail_on: str, max_score_drop: float | None, fail_on_drift: bool = False
) -> None:
    """Reject gate options that are invalid or that do not apply to the chosen mode."""
    if fail_on not in FAIL_ON_MODES:
        raise UsageError(
            f"unknown fail_on {excerpt(fail_on)} (expected one of {', '.join(FAIL_ON_MODES)})"
        )
    if max_score_drop is not None:
        if isinstance(max_score_drop, bool) or not isinstance(max_score_drop, int | float):
            raise UsageError("max_score_drop must be a number")
        if not (math.isfinite(max_score_drop) and max_score_drop >= 0):
            raise UsageError(f"max_score_drop must be a finite number >= 0, got {max_score_drop!r}")
        if fail_on != "regressions":
            raise UsageError(
                f"max_score_drop applies only to fail_on 'regressions', not {excerpt(fail_on)}"
            )
    if fail_on_drift and fail_on == "never":
        raise UsageError("fail_on_drift does not apply to fail_on 'never'")


def _limit_text(limit: float) -> str:
    """A score-drop limit with 2 decimals, or as written when those would change it (0.999)."""
    text = f"{limit:.2f}"
    return text if Decimal(text) == Decimal(repr(limit)) else repr(limit)


def _drop_text(drop: Decimal | None, limit: float) -> str:
    """A drop beyond ``limit`` with 2 decimals, or as many more as show that it is beyond."""
    assert drop is not None
    for places in range(2, 18):
        text = f"{drop:.{places}f}"
        if Decimal(text) > Decimal(repr(limit)):
            return text
    return str(drop)


def _listing(counts: Counter[str]) -> str:
    items = [f"{key} (x{n})" if n > 1 else key for key, n in counts.items()]
    shown = ", ".join(items[:_LISTED])
    hidden = sum(list(counts.values())[_LISTED:])
    return shown + (f", and {hidden} more" if hidden else "")


def evaluate_gate(
    result: CompareResult,
    fail_on: str = "regressions",
    max_score_drop: float | None = None,
    *,
    fail_on_drift: bool = False,
) -> GateResult:
    """Apply a gate mode to a comparison.

    ``regressions`` fails on new error findings, traces that went from pass to fail, added traces
    that fail, and (when ``max_score_drop`` is set) score drops larger than the limit.
    ``failures`` fails when any candidate trace fails. ``never`` always passes. With
    ``fail_on_drift``, drift warnings (different policy or harness version) fail it too.
    """
    check_gate_options(fail_on, max_score_drop, fail_on_drift)
    limit = None if max_score_drop is None else float(max_score_drop) + 0.0  # no "-0.00"
    reasons: list[str] = []
    if fail_on == "regressions":
        errors = Counter(
            f"{trace_id}:{f.rule_id or f.category}"
            for trace_id, f in result.new_findings
            if f.severity == "error"
        )
        if errors:
            reasons.append(_new_errors(errors))
        reasons += [
            f"trace {t.trace_id!r} regressed from pass to fail"
            for t in result.traces
            if t.status_change == "pass->fail"
        ]
        reasons += [f"added trace {t.trace_id!r} fails" for t in result.traces if _added_failing(t)]
        if limit is not None:
            reasons += [
                f"trace {t.trace_id!r} score dropped {_drop_text(t.score_drop, limit)} points "
                f"(limit {_limit_text(limit)})"
                for t in result.traces
                if t.score_drop is not None and t.dropped_beyond(limit)
            ]
    elif fail_on == "failures":
        failing = [t.trace_id for t in result.traces if _fails(t)]
        if failing:
            shown = Counter(failing)
            noun = "trace" if len(failing) == 1 else "traces"
            reasons.append(f"candidate has {len(failing)} failing {noun}: {_listing(shown)}")
    if fail_on_drift:
        reasons += [f"drift: {w}" for w in result.warnings]
    return GateResult(not reasons, tuple(reasons), fail_on, limit, fail_on_drift)


def _new_errors(errors: Counter[str]) -> str:
    """``2 new error findings: t1:ARH-FLW-003, ...`` of a count of new error findings."""
    total = sum(errors.values())
    noun = "finding" if total == 1 else "findings"
    return f"{total} new error {noun}: {_listing(errors)}"


def _fails(delta: TraceDelta) -> bool:
    """Whether the trace fails in the candidate (mode ``failures``)."""
    return delta.candidate is not None and not delta.candidate.passed


def _added_failing(delta: TraceDelta) -> bool:
    """Whether the trace is new in the candidate and fails there (mode ``regressions``)."""
    return delta.status_change == "added" and _fails(delta)


def trace_reasons(delta: TraceDelta, gate: GateResult) -> tuple[str, ...]:
    """What ``gate`` holds against one trace, in the words of its reasons but without the trace
    id: in mode ``regressions`` its new error findings, a change from pass to fail, an added
    trace that fails and a score drop beyond the limit; in mode ``failures`` a candidate that
    fails; nothing in mode ``never``. A trace has reasons exactly when :func:`evaluate_gate`
    counts it against the gate (its reasons name the trace, unless a long list leaves it among
    "and N more"); drift and the statistical gates are about the whole run, not one trace."""
    if gate.fail_on == "failures":
        return ("fails in the candidate",) if _fails(delta) else ()
    if gate.fail_on != "regressions":
        return ()
    reasons: list[str] = []
    errors = Counter(f.rule_id or f.category for f in delta.new_findings if f.severity == "error")
    if errors:
        reasons.append(_new_errors(errors))
    if delta.status_change == "pass->fail":
        reasons.append("regressed from pass to fail")
    if _added_failing(delta):
        reasons.append("added, and fails")
    limit = gate.max_score_drop
    if limit is not None and delta.dropped_beyond(limit):
        reasons.append(
            f"score dropped {_drop_text(delta.score_drop, limit)} points "
            f"(limit {_limit_text(limit)})"
        )
    return tuple(reasons)
