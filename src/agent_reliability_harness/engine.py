"""Validation: run every rule category over a trace, score it, and decide pass or fail."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Final

from agent_reliability_harness._decode import find_cycle, find_non_string_key
from agent_reliability_harness.errors import TOO_DEEP, ArhError, InputError, UsageError
from agent_reliability_harness.model.answers import Expectations
from agent_reliability_harness.model.fidelity import NotApplicable, not_applicable
from agent_reliability_harness.model.policy import Policy
from agent_reliability_harness.model.report import (
    NOT_RECORDED_KEYS,
    CategoryResult,
    Finding,
    TraceReport,
)
from agent_reliability_harness.model.timestamps import parse_timestamp
from agent_reliability_harness.model.trace import Step, Trace
from agent_reliability_harness.rules import RULE_SETS, RuleSet, fidelity_plan
from agent_reliability_harness.rules._facts import TraceFacts
from agent_reliability_harness.rules.answers import not_judged
from agent_reliability_harness.rules.selection import Findings, RuleSelection, check_known
from agent_reliability_harness.scoring import (
    DEFAULT_FAIL_UNDER,
    check_fail_under,
    overall_score,
    passes,
)

__all__ = ["Validator", "rule_sets", "validate_trace"]


def rule_sets(policy: Policy) -> list[RuleSet]:
    """The rule sets that check traces against ``policy``, in report order. The sets of policy
    language 1.1 are left out for a 1.0 policy, so that its reports list the same categories as
    before."""
    return [s for s in RULE_SETS if policy.extensions is not None or s.language == "1.0"]


NESTED_TRACE: Final = f"a value in the trace is {TOO_DEEP} to check"


def engine_failed(exc: SystemError) -> InputError:
    """The error for a trace on which Python's regular expression engine failed: CPython raises
    SystemError for some patterns (python/cpython#101955). The policy loader refuses the shapes
    known to do so; this keeps any other one from ending the run."""
    return InputError(
        f"Python's regular expression engine failed on this trace ({exc}); a pattern of the "
        "policy has a shape the engine cannot run: see SECURITY.md, 'Regular expressions'",
        pointer=None,
    )


_NOT_A_MAPPING: Final = "metadata and extra of a trace or step built in code must be mappings"


class Validator:
    """A policy compiled once, ready to validate any number of traces; ``selection`` switches
    rules off or changes their severity (``rules.selection.RuleSelection``)."""

    __slots__ = (
        "_expectations",
        "_fail_under",
        "_failures",
        "_fidelity",
        "_grounding",
        "plans",
        "policy",
        "selection",
    )

    def __init__(
        self,
        policy: Policy,
        fail_under: float = DEFAULT_FAIL_UNDER,
        *,
        selection: RuleSelection | None = None,
        expectations: Expectations | None = None,
    ) -> None:
        if not isinstance(policy, Policy):
            raise UsageError(
                f"policy must be a Policy, got {type(policy).__name__}; "
                "build it with Policy.from_dict(data)"
            )
        self.policy = policy
        self._fail_under = check_fail_under(fail_under)
        if expectations is not None and not isinstance(expectations, Expectations):
            raise UsageError(
                f"expectations must be Expectations, got {type(expectations).__name__}; "
                "build them with Expectations.from_dict(data)"
            )
        # the expected outcomes of traces that carry none (``--expect``), by trace id or workflow
        self._expectations = expectations
        # how failed calls look when the trace says so only in their output (tool_failures)
        self._failures = policy.tool_failures
        # the rules switched off or given another severity: the policy's rules section, with
        # ``selection`` (the caller's, such as the command line's) on top (rules/selection.py)
        check_known(policy.rules, in_policy=True)
        if selection is not None:
            check_known(selection, in_policy=False)
        self.selection = policy.rules.merged(selection) if selection else policy.rules
        # each rule set with the policy compiled for its rules (the runtime monitor reuses them)
        self.plans: tuple[tuple[RuleSet, Any], ...] = tuple(
            (rules, rules.prepare(policy)) for rules in rule_sets(policy)
        )
        off = self.selection.off
        self._fidelity = tuple(c for c in fidelity_plan(policy) if c.rule_id not in off)
        scored = [rules.category for rules, _ in self.plans if rules.category is not None]
        self._grounding = scored.index("grounding")  # its result gives the citation coverage

    def _not_judged(self, trace: Trace) -> tuple[NotApplicable, ...]:
        """The answer checks that do not apply to ``trace`` (rules switched off left out)."""
        if self.policy.answers is None:
            return ()
        off = self.selection.off
        return tuple(c for c in not_judged(trace, self.policy.answers) if c.rule_id not in off)

    def validate(
        self, trace: Trace, *, source_path: str | None = None, source_line: int | None = None
    ) -> TraceReport:
        """Check one trace; raise :class:`InputError` only for values nested too deeply to walk,
        for metric totals too large to report and for objects whose keys are not all strings
        or that contain themselves (possible in a trace built in Python), and
        :class:`UsageError` for a ``trace`` that is not a :class:`Trace` or holds steps that
        are not :class:`Step` objects."""
        problem = _find_trace_cycle(trace)
        if problem is not None:
            raise problem
        return self._validate_parsed(trace, source_path=source_path, source_line=source_line)

    def _validate_parsed(
        self, trace: Trace, *, source_path: str | None = None, source_line: int | None = None
    ) -> TraceReport:
        """:meth:`validate` for a trace whose values cannot contain themselves: one read from
        JSON text (by the command line) or made of values already checked (by the monitor)."""
        try:
            status_read = False
            if self._failures is not None:
                trace, status_read = self._failures.apply(trace)
            if self._expectations is not None:
                trace = with_expected(trace, self._expectations)
            facts = TraceFacts(trace, status_read=status_read)
            findings = Findings(self.selection)
            results: list[CategoryResult] = []
            for rules, plan in self.plans:
                result = rules.evaluate(facts, plan, findings)
                if result is not None:
                    results.append(result)
        except RecursionError:
            raise InputError(NESTED_TRACE, pointer=None) from None
        except SystemError as exc:
            raise engine_failed(exc) from None
        except (AttributeError, TypeError):
            problem = _unusable(trace)
            if problem is None:
                raise  # a bug in a rule, not a problem of the input
            raise problem from None
        findings.sort(key=Finding.sort_key)
        if facts.step_ids is not None:
            findings[:] = _with_step_refs(findings, facts.step_refs, trace.steps)
        score = overall_score(results)
        grounding = results[self._grounding]
        coverage = (
            (grounding.checks - grounding.failed) / grounding.checks
            if grounding.applicable
            else None
        )
        return TraceReport(
            trace_id=trace.trace_id,
            agent_name=trace.agent_name,
            workflow=trace.workflow,
            policy_id=self.policy.policy_id,
            score=score,
            passed=passes(findings, score, self._fail_under),
            total_latency_ms=facts.latency_total,
            total_cost_usd=facts.cost_total,
            citation_coverage=coverage,
            findings=tuple(findings),
            total_tokens=facts.tokens_total,
            source_path=source_path,
            categories=tuple(results),
            source_line=source_line,
            not_applicable=not_applicable(facts.missing, self._fidelity) + self._not_judged(trace),
            not_recorded=_not_recorded(facts),
            step_ids=facts.step_ids,
            started_at=_time(trace.started_at, "/started_at"),
            ended_at=_time(trace.ended_at, "/ended_at"),
        )


def _time(value: str | None, pointer: str) -> str | None:
    """A trace's ``started_at`` or ``ended_at`` for its report: ``Trace.from_dict`` checked it,
    a trace built in code may hold anything, which a report must not."""
    return None if value is None else parse_timestamp(value, pointer)


def _not_recorded(facts: TraceFacts) -> tuple[str, ...]:
    """The totals no step of the trace recorded (their 0.0 is not a measurement)."""
    recorded = (facts.has_latency, facts.has_cost)
    return tuple(key for key, has in zip(NOT_RECORDED_KEYS, recorded, strict=True) if not has)


def _with_step_refs(
    findings: list[Finding], refs: list[str], steps: tuple[Step, ...]
) -> list[Finding]:
    """The findings with the stable reference of their anchor step (``model.step_refs``), for a
    trace whose step ids change from one recording to the next; findings at the trace have none."""
    return [
        replace(f, step_ref=refs[f.step_index])
        if f.step_index is not None
        and f.step_id is not None
        and 0 <= f.step_index < len(steps)
        and steps[f.step_index].step_id == f.step_id
        else f
        for f in findings
    ]


def _find_trace_cycle(trace: object) -> InputError | None:
    """The error for a value of a trace built in Python that contains itself, or None (also for
    what is not a trace, or not a step, which :func:`_unusable` explains if a rule fails)."""
    if not isinstance(trace, Trace):
        return None
    problem = find_cycle(trace.metadata, "/metadata") or find_cycle(trace.extra, "")
    steps: object = trace.steps
    if problem is not None or not isinstance(steps, tuple | list):
        return problem
    for index, step in enumerate(steps):
        if not isinstance(step, Step):
            continue
        base = f"/steps/{index}"
        for value, pointer in (
            (step.arguments, f"{base}/arguments"),
            (step.output, f"{base}/output"),
            (step.citations, f"{base}/citations"),
            (step.metadata, f"{base}/metadata"),
            (step.extra, base),
        ):
            if value and not isinstance(value, str):
                problem = find_cycle(value, pointer)
                if problem is not None:
                    return problem
    return None


def _unusable(trace: object) -> ArhError | None:
    """Why the rules could not walk ``trace`` (looked for only after they failed): it is not a
    :class:`Trace`, an object in it has a key that is not a string, which JSON cannot hold but a
    trace built in Python can, its steps are not :class:`Step` objects, or a field has a value
    ``Trace.from_dict`` refuses (a Step built in code with ``latency_ms="5"``). The rules take
    what they are given without checking it again, so that the common path pays nothing for
    this."""
    if not isinstance(trace, Trace):
        return UsageError(
            f"trace must be a Trace, got {type(trace).__name__}; "
            "build it with Trace.from_dict(data)"
        )
    steps: object = trace.steps  # typed as a tuple of Step, but built in code it may be anything
    if not isinstance(steps, tuple | list):
        return UsageError(
            f"trace.steps must be a tuple of Step, got {type(steps).__name__}; "
            "build the trace with Trace.from_dict(data)"
        )
    step: object
    for index, step in enumerate(steps):
        if not isinstance(step, Step):
            return UsageError(
                f"trace.steps[{index}] must be a Step, got {type(step).__name__}; "
                "build it with Step.from_dict(data)"
            )
    try:
        document = trace.to_dict()
    except (AttributeError, TypeError, ValueError):  # extra or metadata not a mapping: whose?
        return InputError(_NOT_A_MAPPING, pointer=_first_unwritable(steps))
    problem = find_non_string_key(document, "")  # no recursion: any depth is walked
    if problem is None:
        try:
            Trace.from_dict(document)
        except InputError as exc:
            problem = exc
    return problem


def _first_unwritable(steps: tuple[Step, ...] | list[Step]) -> str:
    """The pointer of the first step ``to_dict`` fails on, or of the trace itself."""
    for index, step in enumerate(steps):
        try:
            step.to_dict()
        except (AttributeError, TypeError, ValueError):
            return f"/steps/{index}"
    return ""


_CACHE_SIZE: Final = 8
_cache: dict[tuple[int, float], tuple[Policy, Validator]] = {}


def with_expected(trace: Trace, expectations: Expectations, task: str | None = None) -> Trace:
    """``trace`` with its expected outcome from ``expectations`` (by trace id, task or workflow:
    :meth:`Expectations.for_trace`) when it carries none."""
    if trace.expected is not None:
        return trace
    found = expectations.for_trace(trace.trace_id, trace.workflow, task)
    return trace if found is None else replace(trace, expected=found)


def validate_trace(
    trace: Trace,
    policy: Policy,
    fail_under: float = DEFAULT_FAIL_UNDER,
    *,
    expectations: Expectations | None = None,
) -> TraceReport:
    """Validate one trace against a policy and return its report (score, verdict, findings);
    ``expectations`` give its expected outcome when it carries none (by trace id or workflow)."""
    if expectations is not None:
        if not isinstance(expectations, Expectations):
            raise UsageError(
                f"expectations must be Expectations, got {type(expectations).__name__}; "
                "build them with Expectations.from_dict(data)"
            )
        if isinstance(trace, Trace):
            trace = with_expected(trace, expectations)
    key = (id(policy), check_fail_under(fail_under))
    cached = _cache.get(key)
    if cached is None or cached[0] is not policy:
        if len(_cache) >= _CACHE_SIZE:
            _cache.clear()  # one atomic step, so that threads sharing the cache cannot break it
        cached = (policy, Validator(policy, fail_under))
        _cache[key] = cached
    return cached[1].validate(trace)
