"""Findings and reports: what validation produced, and their JSON form (the baseline format)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from agent_reliability_harness._decode import (
    bad,
    json_type,
    number_text,
    opt_bool,
    opt_finite,
    opt_finite_in,
    opt_nonneg_int,
    opt_str,
    parse_schema_version,
    require_object,
    section,
    str_or_empty,
)
from agent_reliability_harness.errors import (
    AGENT_FAILURE,
    EVALUATION_ERROR,
    FAILURE_KINDS,
    INFRASTRUCTURE_FAILURE,
    InputError,
    UsageError,
    excerpt,
    join_pointer,
)
from agent_reliability_harness.model.fidelity import NotApplicable
from agent_reliability_harness.model.judge_outcome import JudgeOutcome, judge_outcome_from_dict
from agent_reliability_harness.model.step_refs import STEP_ID_ORIGINS
from agent_reliability_harness.model.timestamps import parse_timestamp

Severity = Literal["error", "warning", "info"]

__all__ = [
    "NOT_RECORDED_KEYS",
    "SEVERITIES",
    "SEVERITY_RANK",
    "CategoryResult",
    "ExactSum",
    "Finding",
    "ReportLike",
    "RunReport",
    "RunSummary",
    "Severity",
    "SummaryBuilder",
    "TraceReport",
    "as_run_report",
]

SEVERITIES: Final = ("error", "warning", "info")
SEVERITY_RANK: Final[Mapping[str, int]] = {"error": 0, "warning": 1, "info": 2}
REPORT_SCHEMA_VERSION: Final = "1"
# The totals a trace report always writes (0.2.x readers need them) that can lack a measure: when
# no step of the trace records the field, the total is written as 0 and its key is listed under
# ``not_recorded``, so that a real zero and an absent measure stay apart.
NOT_RECORDED_KEYS: Final = ("total_latency_ms", "total_cost_usd")


@dataclass(frozen=True, slots=True)
class Finding:
    """One rule violation (or warning) at a step of a trace, or at the trace as a whole.

    ``subject`` says what inside the anchor the finding is about (an argument, a tool, a pair of
    tools, a text location) so that two findings of one rule at one step stay distinguishable.
    ``step_index`` is the position of the anchor step; it orders findings but is not serialised.
    ``step_ref`` names the anchor step in every recording of a trace whose step ids change from
    one recording to the next (``model.step_refs``); None for a trace with step ids of its own.
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
    step_ref: str | None = None

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
        if self.step_ref is not None:
            out["step_ref"] = self.step_ref
        return out

    @classmethod
    def from_dict(cls, data: object, *, pointer: str = "") -> Finding:
        """Read a finding from a JSON report written by any arh version."""
        return _finding_from_dict(data, pointer)

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
    # False when the score was read from a report that only holds the 2-decimal rounded score
    score_is_exact: bool = field(default=True, compare=False)
    # what `arh validate --task-key` and `--outcome-at` read from the trace (docs/statistics.md)
    task: str | None = None
    outcome: bool | float | None = None
    # checks of the policy that need a field the trace's source did not provide (model/fidelity)
    not_applicable: tuple[NotApplicable, ...] = ()
    # the totals that no step recorded (keys of NOT_RECORDED_KEYS, in that order): their values
    # are 0.0 placeholders, not measurements
    not_recorded: tuple[str, ...] = ()
    # where the trace's step ids came from, for a converted trace (model/step_refs): its
    # findings then carry step references, by which `arh compare` matches them; None for step
    # ids of the trace's own
    step_ids: str | None = None
    # the judge's verdict, when `arh validate` was given a rubric (docs/answers-and-judge.md)
    judge: JudgeOutcome | None = None
    # when the run started and ended, as the trace wrote them (schema version 1.3), or None
    started_at: str | None = None
    ended_at: str | None = None

    @classmethod
    def from_dict(cls, data: object, *, pointer: str = "") -> TraceReport:
        """Read one trace report from a JSON report written by any arh version."""
        return _trace_report_from_dict(data, pointer)

    @property
    def failure(self) -> str | None:
        """Which kind of failure the trace is (docs/exit-codes.md): ``agent_failure`` when it
        failed (its findings, or its score, fail it); ``evaluation_error`` when it passed the
        rules but a judge whose verdict gates the build gave none (not judged, or no usable
        judgment), so that nobody can say it passed; None when it passed."""
        if not self.passed:
            return AGENT_FAILURE
        judge = self.judge
        if judge is not None and judge.gating and judge.verdict in ("not_judged", "error"):
            return EVALUATION_ERROR
        return None

    @property
    def errors(self) -> int:
        """How many error-severity findings the trace has."""
        return sum(1 for f in self.findings if f.severity == "error")

    @property
    def recorded_latency_ms(self) -> float | None:
        """The total latency, or None when no step of the trace recorded one."""
        return None if "total_latency_ms" in self.not_recorded else self.total_latency_ms

    @property
    def recorded_cost_usd(self) -> float | None:
        """The total cost, or None when no step of the trace recorded one."""
        return None if "total_cost_usd" in self.not_recorded else self.total_cost_usd

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
        if self.task is not None:
            out["task"] = self.task
        if self.outcome is not None:
            out["outcome"] = self.outcome
        if self.not_applicable:
            out["not_applicable"] = [check.to_dict() for check in self.not_applicable]
        if self.not_recorded:
            out["not_recorded"] = list(self.not_recorded)
        if self.step_ids is not None:
            out["step_ids"] = self.step_ids
        if self.started_at is not None:
            out["started_at"] = self.started_at
        if self.ended_at is not None:
            out["ended_at"] = self.ended_at
        if self.judge is not None:
            out["judge"] = self.judge.to_dict()
        out["failure"] = self.failure
        return out


class ExactSum:
    """A sum of floats kept exactly, as non-overlapping partials (Shewchuk's algorithm, the one
    behind ``math.fsum``); :attr:`value` is the correctly rounded total, so it equals ``fsum``
    of every value added, in any order, while holding only a handful of floats."""

    __slots__ = ("_partials",)

    def __init__(self) -> None:
        self._partials: list[float] = []

    def add(self, x: float) -> None:
        partials = self._partials
        kept = 0
        for partial in partials:
            big, small = (partial, x) if abs(x) < abs(partial) else (x, partial)
            high = big + small
            low = small - (high - big)
            if low:
                partials[kept] = low
                kept += 1
            x = high
        del partials[kept:]
        partials.append(x)

    @property
    def value(self) -> float:
        return math.fsum(self._partials)


@dataclass(frozen=True, slots=True)
class RunSummary:
    """What a run's report says besides its trace reports: the totals, the inputs that could not
    be read, and the policy and harness. Streaming writers put it around the trace reports."""

    total: int
    passed: int
    average_score: float
    total_latency_ms: float
    input_errors: tuple[InputError, ...] = ()
    policy_id: str | None = None
    policy_sha256: str | None = None
    harness_version: str | None = None
    # the policy's rule selection, command line included: (rule ID, "off" or a severity)
    rules: tuple[tuple[str, str], ...] = ()
    # the traces that passed the rules but that a gating judge could not decide
    undecided: int = 0

    @property
    def failed(self) -> int:
        return self.total - self.passed

    @property
    def failures(self) -> dict[str, int]:
        """How many of each kind of failure the run had (docs/exit-codes.md): the failed traces
        (``agent_failure``), the traces a gating judge could not decide and the inputs that
        could not be checked (``evaluation_error``), and the inputs the machine could not check
        (``infrastructure_failure``)."""
        infrastructure = sum(e.kind == INFRASTRUCTURE_FAILURE for e in self.input_errors)
        return {
            AGENT_FAILURE: self.failed,
            EVALUATION_ERROR: self.undecided + len(self.input_errors) - infrastructure,
            INFRASTRUCTURE_FAILURE: infrastructure,
        }

    def to_dict(self, reports: list[dict[str, Any]]) -> dict[str, Any]:
        """The JSON report with these trace reports (see :meth:`RunReport.to_dict`)."""
        return {
            "schema_version": REPORT_SCHEMA_VERSION,
            "summary": {
                "total_traces": self.total,
                "passed_traces": self.passed,
                "failed_traces": self.failed,
                "average_score": round(self.average_score, 2),
                "input_errors": len(self.input_errors),
                **self.failures,
            },
            "reports": reports,
            "harness": {"name": "agent-reliability-harness", "version": self.harness_version},
            "policy": self._policy(),
            "input_errors": [e.to_dict() for e in self.input_errors],
        }

    def _policy(self) -> dict[str, Any]:
        policy: dict[str, Any] = {"policy_id": self.policy_id, "sha256": self.policy_sha256}
        if self.rules:  # only when set: reports of runs without a selection stay as they were
            policy["rules"] = dict(self.rules)
        return policy


class SummaryBuilder:
    """Adds up trace reports one at a time, in memory that does not grow with their number."""

    __slots__ = ("_latency", "_scores", "passed", "total", "undecided")

    def __init__(self) -> None:
        self.total = 0
        self.passed = 0
        self.undecided = 0
        self._scores = ExactSum()
        self._latency = 0.0  # summed in report order, exactly as ``sum`` over the reports does

    def add(self, report: TraceReport) -> None:
        self.total += 1
        self.passed += report.passed
        self.undecided += report.failure == EVALUATION_ERROR
        self._scores.add(report.score)
        self._latency += report.total_latency_ms

    def build(
        self,
        input_errors: Sequence[InputError] = (),
        policy_id: str | None = None,
        policy_sha256: str | None = None,
        harness_version: str | None = None,
        rules: Sequence[tuple[str, str]] = (),
    ) -> RunSummary:
        return RunSummary(
            self.total,
            self.passed,
            self._scores.value / self.total if self.total else 0.0,
            self._latency,
            tuple(input_errors),
            policy_id,
            policy_sha256,
            harness_version,
            tuple(rules),
            self.undecided,
        )


@dataclass(frozen=True, slots=True)
class RunReport:
    """All trace reports of one run in input order, plus the inputs that could not be read."""

    reports: tuple[TraceReport, ...]
    input_errors: tuple[InputError, ...] = ()
    policy_id: str | None = None
    policy_sha256: str | None = None
    harness_version: str | None = None
    # the policy's rule selection, command line included: (rule ID, "off" or a severity)
    rules: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_dict(cls, data: object) -> RunReport:
        """Read a JSON validation report (a baseline) written by any arh version."""
        return _run_report_from_dict(data)

    @property
    def passed(self) -> bool:
        """True when every trace passed and every input could be read."""
        return not self.input_errors and all(r.passed for r in self.reports)

    @property
    def passed_traces(self) -> int:
        return sum(report.passed for report in self.reports)

    @property
    def average_score(self) -> float:
        """The mean of the unrounded trace scores (0.0 for an empty run)."""
        return self.summary().average_score

    def summary(self) -> RunSummary:
        """Everything but the trace reports, with the run's totals."""
        builder = SummaryBuilder()
        for report in self.reports:
            builder.add(report)
        return builder.build(
            self.input_errors,
            self.policy_id,
            self.policy_sha256,
            self.harness_version,
            self.rules,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON form: ``schema_version``, ``summary``, ``reports`` as in 0.2.x, then additions."""
        return self.summary().to_dict([r.to_dict() for r in self.reports])


# What the renderers and compare_reports take as a run: a RunReport, a JSON report as read from
# a file (written by any arh version), or a sequence of trace reports (as arh 0.2.x's renderers
# took them).
ReportLike = RunReport | Mapping[str, Any] | Sequence[TraceReport]


def as_run_report(value: object, name: str = "<report>") -> RunReport:
    """``value`` as a :class:`RunReport`. A JSON report is read as a baseline is (an
    :class:`InputError` at the bad field's pointer, located at ``name``); a sequence of trace
    reports is a run of those traces, with their policy id when they share one. Anything else is
    a :class:`UsageError`."""
    if isinstance(value, RunReport):
        return value
    if isinstance(value, Mapping):
        try:
            return RunReport.from_dict(dict(value))
        except InputError as exc:
            raise exc.located(name) from None
    if (
        isinstance(value, Sequence)
        and not isinstance(value, str | bytes)
        and all(isinstance(r, TraceReport) for r in value)
    ):
        reports = tuple(value)
        policies = {r.policy_id for r in reports}
        return RunReport(reports, policy_id=policies.pop() if len(policies) == 1 else None)
    raise UsageError(
        f"{name.strip('<>')} must be a RunReport, a JSON report as read from a file (a dict), "
        f"or a sequence of TraceReport, got {type(value).__name__}"
    )


# Reading reports back (baselines). Reports written by arh 0.2.x and 0.1.x are accepted: the keys
# this version added are optional, and findings of 0.1.x have no rule_id. Everything that is read
# is type-checked, so a hand-edited or foreign file is an InputError, never a crash later on.
# Values are held to what validation writes (scores from 0 to 100, totals >= 0, the three
# severities), so that sums and differences of them stay finite and no finding is left uncounted.

_SCORES: Final = (0.0, 100.0)
_NOT_A_REPORT: Final = (
    "not a validation report: expected an object with a 'reports' array "
    "(as written by `arh validate --json-out`)"
)


def _get_total(data: Mapping[str, Any], key: str, pointer: str) -> float:
    """A metric total: finite and ``>= 0``, as the sum of step metrics that are; 0.0 if absent."""
    value = opt_finite(data, key, pointer)
    if value is None:
        return 0.0
    if value < 0:
        raise InputError(
            f"must be a finite number >= 0, got {number_text(data[key])}",
            pointer=join_pointer(pointer, key),
        )
    return value or 0.0  # -0.0 and 0 read as 0.0


def _finding_from_dict(data: object, pointer: str) -> Finding:
    if type(data) is not dict:
        raise InputError(f"a finding must be an object, got {json_type(data)}", pointer=pointer)
    severity = str_or_empty(data, "severity", pointer, required=True)
    if severity not in SEVERITIES:
        raise InputError(
            f"must be 'error', 'warning' or 'info', got {excerpt(severity)}",
            pointer=join_pointer(pointer, "severity"),
        )
    step_id = opt_str(data, "step_id", pointer)
    return Finding(
        str_or_empty(data, "rule_id", pointer),
        severity,  # type: ignore[arg-type]  # checked above
        str_or_empty(data, "category", pointer),
        str_or_empty(data, "message", pointer),
        step_id,
        opt_str(data, "expected", pointer),
        opt_str(data, "observed", pointer),
        opt_str(data, "remediation", pointer),
        opt_str(data, "subject", pointer),
        step_ref=opt_str(data, "step_ref", pointer),
    )


def _get_opt_task(data: Mapping[str, Any], pointer: str) -> str | None:
    task = opt_str(data, "task", pointer)
    if task == "":
        raise InputError("must not be empty", pointer=join_pointer(pointer, "task"))
    return task


def _get_outcome(data: Mapping[str, Any], pointer: str) -> bool | float | None:
    value = data.get("outcome")
    if value is None or type(value) is bool:
        return value
    number = opt_finite(data, "outcome", pointer)  # checks that it is a finite number
    return value if type(value) is int else number  # 1 stays 1, as validation wrote it


def _get_not_recorded(data: Mapping[str, Any], pointer: str) -> tuple[str, ...]:
    """``not_recorded``: absent (as in reports of 0.2.x, whose zero totals may be measured or
    not) or an array of distinct keys of :data:`NOT_RECORDED_KEYS`."""
    value = data.get("not_recorded")
    if value is None:
        return ()
    where = join_pointer(pointer, "not_recorded")
    if type(value) is not list:
        raise InputError(f"must be an array, got {json_type(value)}", pointer=where)
    for index, key in enumerate(value):
        if type(key) is not str or key not in NOT_RECORDED_KEYS or value.index(key) != index:
            shown = excerpt(key) if type(key) is str else json_type(key)
            raise InputError(
                "must be 'total_latency_ms' or 'total_cost_usd', each listed once, got " + shown,
                pointer=join_pointer(where, index),
            )
    return tuple(k for k in NOT_RECORDED_KEYS if k in value)


def _trace_report_from_dict(data: object, pointer: str) -> TraceReport:
    if type(data) is not dict:
        raise InputError(
            f"a trace report must be an object, got {json_type(data)}", pointer=pointer
        )
    trace_id = str_or_empty(data, "trace_id", pointer, required=True)
    if not trace_id:
        raise InputError("must not be empty", pointer=join_pointer(pointer, "trace_id"))
    passed = data.get("passed")
    if type(passed) is not bool:
        where = join_pointer(pointer, "passed")
        raise InputError(f"must be true or false, got {json_type(passed)}", pointer=where)
    rounded = opt_finite_in(data, "score", pointer, _SCORES, required=True)
    exact = opt_finite_in(data, "unrounded_score", pointer, _SCORES)
    findings = data.get("findings")
    if findings is None:
        findings = []
    if type(findings) is not list:
        where = join_pointer(pointer, "findings")
        raise InputError(f"must be an array, got {json_type(findings)}", pointer=where)
    line = data.get("source_line")
    return TraceReport(
        trace_id=trace_id,
        agent_name=str_or_empty(data, "agent_name", pointer),
        workflow=str_or_empty(data, "workflow", pointer),
        policy_id=str_or_empty(data, "policy_id", pointer),
        score=exact if exact is not None else rounded,  # type: ignore[arg-type]
        passed=passed,
        total_latency_ms=_get_total(data, "total_latency_ms", pointer),
        total_cost_usd=_get_total(data, "total_cost_usd", pointer),
        citation_coverage=opt_finite_in(data, "citation_coverage", pointer, (0.0, 1.0)),
        findings=tuple(
            _finding_from_dict(f, join_pointer(pointer, "findings", i))
            for i, f in enumerate(findings)
        ),
        total_tokens=opt_nonneg_int(data, "total_tokens", pointer),
        source_path=opt_str(data, "source_path", pointer),
        source_line=line if type(line) is int else None,
        score_is_exact=exact is not None,
        task=_get_opt_task(data, pointer),
        outcome=_get_outcome(data, pointer),
        not_recorded=_get_not_recorded(data, pointer),
        step_ids=_get_step_ids(data, pointer),
        started_at=_get_time(data, "started_at", pointer),
        ended_at=_get_time(data, "ended_at", pointer),
        judge=judge_outcome_from_dict(data.get("judge"), join_pointer(pointer, "judge")),
        categories=_get_answers(data, pointer),
    )


def _get_answers(data: Mapping[str, Any], pointer: str) -> tuple[CategoryResult, ...]:
    """The ``answers`` entry of ``categories`` (the answer outcome ``arh stats`` and ``arh
    compare`` count), or nothing: the other categories are not read back."""
    categories = data.get("categories")
    if type(categories) is not dict or categories.get("answers") is None:
        return ()
    where = join_pointer(pointer, "categories", "answers")
    entry = require_object(categories["answers"], where, "a category")
    applicable = opt_bool(entry, "applicable", where)
    checks = opt_nonneg_int(entry, "checks", where) or 0
    failed = opt_nonneg_int(entry, "failed", where) or 0
    if failed > checks:
        raise bad(join_pointer(where, "failed"), f"must be at most checks ({checks}), got {failed}")
    score = opt_finite_in(entry, "score", where, _SCORES)
    return (
        CategoryResult("answers", applicable, 100.0 if score is None else score, checks, failed),
    )


def _get_time(data: Mapping[str, Any], key: str, pointer: str) -> str | None:
    """``started_at`` or ``ended_at``: absent, or the RFC 3339 text of the trace."""
    value = data.get(key)
    return None if value is None else parse_timestamp(value, join_pointer(pointer, key))


def _get_step_ids(data: Mapping[str, Any], pointer: str) -> str | None:
    """``step_ids``: absent, or one of the origins validation writes (model/step_refs)."""
    origin = opt_str(data, "step_ids", pointer)
    if origin is not None and origin not in STEP_ID_ORIGINS:
        raise InputError(
            f"must be one of: {', '.join(STEP_ID_ORIGINS)}; got {excerpt(origin)}",
            pointer=join_pointer(pointer, "step_ids"),
        )
    return origin


def _input_errors_from_dict(data: object) -> tuple[InputError, ...]:
    """The ``input_errors`` of a report: absent or null, or an array of objects with a string
    ``message`` (the other members are kept when they have the type arh writes)."""
    if data is None:
        return ()
    if type(data) is not list:
        raise InputError(f"must be an array, got {json_type(data)}", pointer="/input_errors")
    errors = []
    for index, entry in enumerate(data):
        if type(entry) is not dict or type(entry.get("message")) is not str:
            shown = "an object without a string message" if type(entry) is dict else None
            raise InputError(
                "an input error must be an object with a string message, got "
                f"{shown or json_type(entry)}",
                pointer=f"/input_errors/{index}",
            )
        errors.append(_input_error_from_dict(entry, index))
    return tuple(errors)


def _input_error_from_dict(data: dict[str, Any], index: int) -> InputError:
    fields = {k: data.get(k) for k in ("source", "line", "column", "pointer", "message")}
    kind = data.get("kind", EVALUATION_ERROR)  # absent in reports of 0.2.x
    if kind not in FAILURE_KINDS[1:]:
        raise InputError(
            f"must be 'evaluation_error' or 'infrastructure_failure', got "
            f"{excerpt(kind) if type(kind) is str else json_type(kind)}",
            pointer=f"/input_errors/{index}/kind",
        )
    return InputError(
        str(fields["message"]),
        pointer=fields["pointer"] if type(fields["pointer"]) is str else None,
        source=fields["source"] if type(fields["source"]) is str else None,
        line=fields["line"] if type(fields["line"]) is int else None,
        column=fields["column"] if type(fields["column"]) is int else None,
        kind=kind,
    )


def _run_report_from_dict(data: object) -> RunReport:
    if type(data) is not dict or "reports" not in data:
        raise InputError(_NOT_A_REPORT, pointer="")
    # absent (read as 1, as a trace's) or of major version 1; a report of another major version
    # may mean something else by the same keys, so it is refused rather than misread
    parse_schema_version(data.get("schema_version"), "/schema_version", "report")
    entries = data["reports"]
    if type(entries) is not list:
        raise InputError(f"must be an array, got {json_type(entries)}", pointer="/reports")
    reports: list[TraceReport] = []
    seen: dict[str, int] = {}
    for index, entry in enumerate(entries):
        report = _trace_report_from_dict(entry, f"/reports/{index}")
        if report.trace_id in seen:
            raise InputError(
                f"duplicate trace_id {excerpt(report.trace_id)} (first at /reports/"
                f"{seen[report.trace_id]}); comparison needs unique trace ids",
                pointer=f"/reports/{index}/trace_id",
            )
        seen[report.trace_id] = index
        reports.append(report)
    summary = section(data, "summary")
    opt_finite_in(summary, "average_score", "/summary", _SCORES)
    harness = section(data, "harness")
    policy = section(data, "policy")
    return RunReport(
        tuple(reports),
        _input_errors_from_dict(data.get("input_errors")),
        opt_str(policy, "policy_id", "/policy"),
        _get_sha256(policy),
        opt_str(harness, "version", "/harness"),
        _get_rules(policy),
    )


def _get_rules(policy: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """``policy.rules``: rule ID to ``"off"`` or a severity (absent when no rule was switched)."""
    rules = policy.get("rules")
    if rules is None:
        return ()
    if type(rules) is not dict:
        raise InputError(f"must be an object, got {json_type(rules)}", pointer="/policy/rules")
    for rule_id, value in rules.items():
        if value != "off" and value not in SEVERITIES:
            raise InputError(
                f"must be one of: off, {', '.join(SEVERITIES)}; got {excerpt(value)}",
                pointer=join_pointer("/policy/rules", rule_id),
            )
    return tuple(sorted(rules.items()))


_HEX: Final = frozenset("0123456789abcdef")


def _get_sha256(policy: Mapping[str, Any]) -> str | None:
    """``policy.sha256`` as arh writes it: 64 lower-case hex digits (compare copies it into its
    own report), or null."""
    value = opt_str(policy, "sha256", "/policy")
    if value is not None and (len(value) != 64 or not _HEX.issuperset(value)):
        raise InputError(
            f"must be a SHA-256 in 64 lower-case hex digits, got {excerpt(value)}",
            pointer="/policy/sha256",
        )
    return value
