"""What the pages and the API show of the index, shared by both: filters, summaries, links."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final
from urllib.parse import quote, urlencode

from agent_reliability_harness.model.report import TraceReport
from agent_reliability_harness.serve.index import FAILURE_KINDS, Index, LoadedRun

__all__ = [
    "PAGE_ROWS",
    "VERDICTS",
    "Filters",
    "age_seconds",
    "compare_url",
    "run_api_url",
    "run_summary",
    "run_url",
    "trace_row",
    "trace_url",
]

PAGE_ROWS: Final = 200  # traces per page of a run
VERDICTS: Final = ("passed", "failed", *FAILURE_KINDS)
_TEXT_CHARS: Final = 200  # the longest search text or rule id taken from a query


def run_url(run_id: str) -> str:
    return "/runs/" + quote(run_id, safe="")


def run_api_url(run_id: str) -> str:
    return "/api/runs/" + quote(run_id, safe="")


def trace_url(run_id: str, trace_id: str) -> str:
    return "/trace?" + urlencode({"run": run_id, "trace": trace_id})


def compare_url(base: str, head: str) -> str:
    return "/compare?" + urlencode({"base": base, "head": head})


@dataclass(frozen=True, slots=True)
class Filters:
    """The trace filters of a run's page and API: a verdict or outcome, a rule id that fired,
    a text searched (case-insensitive) in trace ids, agents, workflows, tasks, rule ids and
    finding messages."""

    verdict: str = ""
    rule: str = ""
    q: str = ""

    @classmethod
    def of(cls, query: dict[str, list[str]]) -> Filters:
        """From a parsed query string; an unknown verdict is ignored (no filter)."""

        def first(name: str) -> str:
            return query.get(name, [""])[0][:_TEXT_CHARS].strip()

        verdict = first("verdict")
        return cls(verdict if verdict in VERDICTS else "", first("rule"), first("q"))

    def to_dict(self) -> dict[str, str | None]:
        return {"verdict": self.verdict or None, "rule": self.rule or None, "q": self.q or None}

    def query(self) -> dict[str, str]:
        """The non-empty filters, for the links of other pages of the same listing."""
        return {
            k: v for k, v in (("verdict", self.verdict), ("rule", self.rule), ("q", self.q)) if v
        }

    def apply(self, run: LoadedRun) -> list[TraceReport]:
        if run.report is None:
            return []
        needle = self.q.casefold()
        out = []
        for report in run.report.reports:
            if self.verdict:
                outcome = run.outcome(report.trace_id, report.passed)
                if self.verdict == "passed" and not report.passed:
                    continue
                if self.verdict == "failed" and report.passed:
                    continue
                if self.verdict in FAILURE_KINDS and outcome != self.verdict:
                    continue
            if self.rule and not any(f.rule_id == self.rule for f in report.findings):
                continue
            if needle and not _mentions(report, needle):
                continue
            out.append(report)
        return out


def _mentions(report: TraceReport, needle: str) -> bool:
    fields = [report.trace_id, report.agent_name, report.workflow, report.task or ""]
    if any(needle in value.casefold() for value in fields):
        return True
    return any(
        needle in (f.rule_id or "").casefold() or needle in f.message.casefold()
        for f in report.findings
    )


def rule_ids(run: LoadedRun) -> list[str]:
    """The rule ids that fired in a run, sorted."""
    if run.report is None:
        return []
    return sorted({f.rule_id for r in run.report.reports for f in r.findings if f.rule_id})


def age_seconds(run: LoadedRun, now: datetime) -> int | None:
    """Seconds from the run's end to ``now`` (None: the run records no end)."""
    finished = run.finished()
    if finished is None:
        return None
    return max(0, math.floor((now - finished).total_seconds()))


def run_summary(run: LoadedRun, now: datetime) -> dict[str, Any]:
    """One run as the API lists it."""
    agent = run.record.get("agent") if run.record is not None else None
    agent_id = agent.get("id") if isinstance(agent, dict) else None
    return {
        "id": run.id,
        "kind": run.kind,
        "benchmark": run.benchmark,
        "run_id": _text(run.record.get("run_id")) if run.record is not None else None,
        "agent": agent_id if isinstance(agent_id, str) else None,
        "traces": run.traces,
        "passed": run.passed,
        "pass_rate": run.pass_rate,
        "failures": run.failures,
        "finished_at": run.finished_at,
        "age_seconds": age_seconds(run, now),
        "problems": list(run.problems),
        "links": {"page": run_url(run.id), "api": run_api_url(run.id)},
    }


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def trace_row(run: LoadedRun, report: TraceReport) -> dict[str, Any]:
    """One trace of a run as the API lists it."""
    return {
        "trace_id": report.trace_id,
        "passed": report.passed,
        "outcome": run.outcome(report.trace_id, report.passed),
        "score": round(report.score, 2),
        "errors": sum(1 for f in report.findings if f.severity == "error"),
        "warnings": sum(1 for f in report.findings if f.severity == "warning"),
        "rule_ids": sorted({f.rule_id for f in report.findings if f.rule_id}),
        "links": {"page": trace_url(run.id, report.trace_id)},
    }


def latest(index: Index) -> dict[str, Sequence[LoadedRun]]:
    """Runs by benchmark, latest first, without the baselines."""
    return {
        name: [r for r in runs if r.kind != "baseline"]
        for name, runs in index.benchmarks().items()
        if any(r.kind != "baseline" for r in runs)
    }
