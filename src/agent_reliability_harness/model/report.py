"""Findings and reports: what validation produced, and their JSON form (the baseline format)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from agent_reliability_harness.errors import InputError

__all__ = [
    "SEVERITIES",
    "SEVERITY_RANK",
    "CategoryResult",
    "Finding",
    "RunReport",
    "Severity",
    "TraceReport",
]

Severity = Literal["error", "warning", "info"]
SEVERITIES: Final = ("error", "warning", "info")
SEVERITY_RANK: Final[Mapping[str, int]] = {"error": 0, "warning": 1, "info": 2}
REPORT_SCHEMA_VERSION: Final = "1"


@dataclass(frozen=True, slots=True)
class Finding:
    """One rule violation (or warning) at a step of a trace, or at the trace as a whole.

    ``subject`` says what inside the anchor the finding is about (an argument, a tool, a pair of
    tools, a text location) so that two findings of one rule at one step stay distinguishable.
    ``step_index`` is the position of the anchor step; it orders findings but is not serialised.
    """

    rule_id: str
    severity: Severity
    category: str
    message: str
    step_id: str | None = None
    expected: str | None = None
    observed: str | None = None
    remediation: str | None = None
    subject: str | None = None
    step_index: int | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON form; key order and the optional keys follow the 0.2.x report layout."""
        out: dict[str, Any] = {
            "severity": self.severity,
            "category": self.category,
            "message": self.message,
            "step_id": self.step_id,
            "rule_id": self.rule_id,
        }
        if self.expected is not None:
            out["expected"] = self.expected
        if self.observed is not None:
            out["observed"] = self.observed
        if self.remediation is not None:
            out["remediation"] = self.remediation
        if self.subject is not None:
            out["subject"] = self.subject
        return out

    def sort_key(self) -> tuple[int, int, str, str, str]:
        """Severity, then position in the trace (trace-level findings first), rule, subject."""
        index = -1 if self.step_index is None else self.step_index
        return (
            SEVERITY_RANK.get(self.severity, 9),
            index,
            self.rule_id,
            self.subject or "",
            self.message,
        )


@dataclass(frozen=True, slots=True)
class CategoryResult:
    """How one rule category scored a trace. ``score`` is 100 when the category does not apply."""

    category: str
    applicable: bool
    score: float
    checks: int
    failed: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "applicable": self.applicable,
            "score": round(self.score, 2),
            "checks": self.checks,
            "failed": self.failed,
        }


@dataclass(frozen=True, slots=True)
class TraceReport:
    """The verdict on one trace: score, pass/fail, totals and findings in report order."""

    trace_id: str
    agent_name: str
    workflow: str
    policy_id: str
    score: float
    passed: bool
    total_latency_ms: float
    total_cost_usd: float
    citation_coverage: float | None
    findings: tuple[Finding, ...]
    total_tokens: int | None = None
    source_path: str | None = None
    categories: tuple[CategoryResult, ...] = ()
    source_line: int | None = None

    @property
    def errors(self) -> int:
        """How many error-severity findings the trace has."""
        return sum(1 for f in self.findings if f.severity == "error")

    def to_dict(self) -> dict[str, Any]:
        """JSON form: the 0.2.x keys in their order, then the additions of this version."""
        out: dict[str, Any] = {
            "trace_id": self.trace_id,
            "agent_name": self.agent_name,
            "workflow": self.workflow,
            "policy_id": self.policy_id,
            "score": round(self.score, 2),
            "passed": self.passed,
            "total_latency_ms": self.total_latency_ms,
            "total_cost_usd": self.total_cost_usd,
            "citation_coverage": (
                None if self.citation_coverage is None else round(self.citation_coverage, 4)
            ),
            "findings": [f.to_dict() for f in self.findings],
        }
        if self.total_tokens is not None:
            out["total_tokens"] = self.total_tokens
        if self.source_path is not None:
            out["source_path"] = self.source_path
        if self.source_line is not None:
            out["source_line"] = self.source_line
        out["unrounded_score"] = self.score
        out["categories"] = {c.category: c.to_dict() for c in self.categories}
        return out


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values) if values else 0.0


@dataclass(frozen=True, slots=True)
class RunReport:
    """All trace reports of one run in input order, plus the inputs that could not be read."""

    reports: tuple[TraceReport, ...]
    input_errors: tuple[InputError, ...] = ()
    policy_id: str | None = None
    policy_sha256: str | None = None
    harness_version: str | None = None

    @property
    def passed(self) -> bool:
        """True when every trace passed and every input could be read."""
        return not self.input_errors and all(r.passed for r in self.reports)

    @property
    def passed_traces(self) -> int:
        return sum(1 for r in self.reports if r.passed)

    @property
    def average_score(self) -> float:
        """The mean of the unrounded trace scores (0.0 for an empty run)."""
        return _mean([r.score for r in self.reports])

    def to_dict(self) -> dict[str, Any]:
        """JSON form: ``schema_version``, ``summary``, ``reports`` as in 0.2.x, then additions."""
        total = len(self.reports)
        passed = self.passed_traces
        return {
            "schema_version": REPORT_SCHEMA_VERSION,
            "summary": {
                "total_traces": total,
                "passed_traces": passed,
                "failed_traces": total - passed,
                "average_score": round(self.average_score, 2),
                "input_errors": len(self.input_errors),
            },
            "reports": [r.to_dict() for r in self.reports],
            "harness": {"name": "agent-reliability-harness", "version": self.harness_version},
            "policy": {"policy_id": self.policy_id, "sha256": self.policy_sha256},
            "input_errors": [e.to_dict() for e in self.input_errors],
        }
