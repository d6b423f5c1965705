"""Statistical gates: thresholds on pass rates, pass^k, flaky tasks and paired tests.

Thresholds come from a reviewed file (``arh.toml``, read with :mod:`tomllib`) or from ``--gate``
expressions. Each threshold checked against a workflow becomes a :class:`GateCheck`; a breached
one carries a reason that names the workflow, the metric, the value, the threshold and where the
threshold was set (``arh.toml:7``, or the ``--gate`` expression).

``arh.toml``::

    outcome = "both"            # optional: verdict, label or both

    [defaults]                  # every workflow
    significance = 0.05

    [workflows.refunds]         # one workflow; its keys replace those of [defaults]
    min_pass_rate = 0.9

The file is read by :mod:`agent_reliability_harness._toml`, which also finds the line of each
key (:func:`key_lines`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any, Final

from agent_reliability_harness._decode import unknown_key_hint
from agent_reliability_harness._toml import key_lines, line_of, parse_toml, toml_kind
from agent_reliability_harness.errors import InputError, UsageError, excerpt, join_pointer
from agent_reliability_harness.regression.trials import (
    OUTCOMES,
    PairedTest,
    Summary,
    WorkflowComparison,
)

__all__ = [
    "BASELINE_KEYS",
    "GATE_KEYS",
    "THRESHOLD_KEYS",
    "GateCheck",
    "GateFile",
    "GatePlan",
    "Setting",
    "StatGateResult",
    "check_comparisons",
    "check_summaries",
    "key_lines",
    "parse_gate_expression",
    "parse_gate_file",
]

# key -> what its value must be, in the order checks are made and listed
GATE_KEYS: Final = {
    "min_pass_rate": "a number from 0 to 1",
    "min_pass_hat_k": "a number from 0 to 1",
    "max_flaky_tasks": "an integer >= 0",
    "max_pass_rate_drop": "a number from 0 to 1",
    "max_pass_hat_k_drop": "a number from 0 to 1",
    "significance": "a number greater than 0 and less than 1",
    "pass_hat_k_significance": "a number greater than 0 and less than 1",
    "k": "an integer >= 1",
    "allow_insufficient_data": "true or false",
}
THRESHOLD_KEYS: Final = tuple(
    key for key in GATE_KEYS if key not in ("k", "allow_insufficient_data")
)
# thresholds that compare a candidate with a baseline; `arh stats` has none and skips them
BASELINE_KEYS: Final = frozenset(
    {"max_pass_rate_drop", "max_pass_hat_k_drop", "significance", "pass_hat_k_significance"}
)
_RATES: Final = frozenset(
    {"min_pass_rate", "min_pass_hat_k", "max_pass_rate_drop", "max_pass_hat_k_drop"}
)
_ALPHAS: Final = frozenset({"significance", "pass_hat_k_significance"})
_TOP_KEYS: Final = ("outcome", "defaults", "workflows")
# the most digits (and the largest exponent) a number of a --gate expression may have
_MAX_DIGITS: Final = 100


@dataclass(frozen=True, slots=True)
class Setting:
    """One key of a gate table: its value (exact) and where it was set."""

    key: str
    value: Fraction | int | bool
    shown: str  # the value as written
    origin: str  # "arh.toml:7", "arh.toml" (line unknown), or "--gate '...'"

    def to_dict(self) -> dict[str, Any]:
        value = self.value
        return {
            "key": self.key,
            "value": float(value) if isinstance(value, Fraction) else value,
            "origin": self.origin,
        }


@dataclass(frozen=True, slots=True)
class GateFile:
    """A parsed gate file."""

    source: str
    outcome: str | None
    defaults: tuple[Setting, ...]
    workflows: tuple[tuple[str, str, tuple[Setting, ...]], ...]  # (name, origin, settings)


# -- reading the file -----------------------------------------------------------------------


def _number_text(value: float | Decimal) -> str:
    if isinstance(value, Decimal) and not value.is_finite():
        value = float(value)  # as TOML spells it: nan, inf, -inf
    return excerpt(repr(value) if isinstance(value, float) else str(value), quote=False)


def _setting_value(key: str, value: object) -> tuple[Fraction | int | bool, str]:
    """Check a value for ``key``; ValueError with the reason when it is not acceptable."""
    expected = GATE_KEYS[key]
    if key == "allow_insufficient_data":
        if type(value) is not bool:
            raise ValueError(f"must be {expected}, got {toml_kind(value)}")
        return value, "true" if value else "false"
    # a gate file's decimals are read as Decimal: compared exactly as written
    if type(value) is bool or not isinstance(value, int | float | Decimal):
        raise ValueError(f"must be {expected}, got {toml_kind(value)}")
    if key in ("k", "max_flaky_tasks"):
        minimum = 1 if key == "k" else 0
        if type(value) is not int or value < minimum:
            raise ValueError(f"must be {expected}, got {_number_text(value)}")
        return value, str(value)
    if not (value.is_finite() if isinstance(value, Decimal) else math.isfinite(value)):
        raise ValueError(f"must be {expected}, got {_number_text(value)}")
    if isinstance(value, Decimal):  # its exact value is built from its digits and exponent
        problem = _too_long(str(value))
        if problem:
            raise ValueError(problem)
    exact = Fraction(repr(value)) if isinstance(value, float) else Fraction(value)
    if (key in _ALPHAS and not 0 < exact < 1) or (key in _RATES and not 0 <= exact <= 1):
        raise ValueError(f"must be {expected}, got {_number_text(value)}")
    return exact, _number_text(value)


def _table(
    data: object,
    path: tuple[str, ...],
    source: str,
    lines: Mapping[tuple[str, ...], int],
) -> tuple[Setting, ...]:
    if not isinstance(data, dict):
        raise _file_error(f"must be a table, got {toml_kind(data)}", path, source, lines)
    settings: list[Setting] = []
    for key, value in data.items():
        where = (*path, key)
        if key not in GATE_KEYS:
            hint = unknown_key_hint(key, list(GATE_KEYS))
            raise _file_error(f"unknown gate key {excerpt(key)}{hint}", where, source, lines)
        try:
            exact, shown = _setting_value(key, value)
        except ValueError as exc:
            raise _file_error(str(exc), where, source, lines) from None
        line = line_of(lines, where)
        settings.append(Setting(key, exact, shown, source if line is None else f"{source}:{line}"))
    order = list(GATE_KEYS)
    return tuple(sorted(settings, key=lambda s: order.index(s.key)))


def _file_error(
    message: str, path: tuple[str, ...], source: str, lines: Mapping[tuple[str, ...], int]
) -> InputError:
    return InputError(
        message, pointer=join_pointer("", *path), source=source, line=line_of(lines, path)
    )


def parse_gate_file(text: str, source: str) -> GateFile:
    """Parse the text of a gate file; InputError naming ``source``, the line and the key."""
    data = parse_toml(text, source, parse_float=Decimal)  # a threshold exactly as written
    lines = key_lines(text)
    for key in data:
        if key not in _TOP_KEYS:
            hint = unknown_key_hint(key, _TOP_KEYS)
            if key in GATE_KEYS:
                hint = " (gate keys belong in [defaults] or [workflows.<name>])"
            raise _file_error(f"unknown key {excerpt(key)}{hint}", (key,), source, lines)
    outcome = data.get("outcome")
    if outcome is not None and outcome not in OUTCOMES:
        shown = excerpt(outcome) if isinstance(outcome, str) else toml_kind(outcome)
        raise _file_error(
            f"must be one of {', '.join(map(repr, OUTCOMES))}, got {shown}",
            ("outcome",),
            source,
            lines,
        )
    defaults = _table(data.get("defaults", {}), ("defaults",), source, lines)
    workflows_table = data.get("workflows", {})
    if not isinstance(workflows_table, dict):
        raise _file_error(
            f"must be a table of workflows, got {toml_kind(workflows_table)}",
            ("workflows",),
            source,
            lines,
        )
    workflows = []
    for name in sorted(workflows_table):
        settings = _table(workflows_table[name], ("workflows", name), source, lines)
        line = line_of(lines, ("workflows", name))
        workflows.append((name, source if line is None else f"{source}:{line}", settings))
    tables = [defaults, *(settings for _, _, settings in workflows)]
    if not any(s.key in THRESHOLD_KEYS for settings in tables for s in settings):
        # an empty file (or one with only outcome, k or allow_insufficient_data) would check
        # nothing, and still make arh compare's --fail-on default to never
        raise InputError(
            "sets no gate: a gate file needs at least one threshold (such as min_pass_rate or "
            "significance) in [defaults] or in a [workflows.<name>] table",
            pointer=None,
            source=source,
        )
    return GateFile(source, outcome, defaults, tuple(workflows))


# -- --gate expressions -----------------------------------------------------------------------

_METRIC: Final = r"(pass rate|pass@1|pass\^k)"
_NUMBER: Final = r"((?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:e[-+]?[0-9]+)?)"
_OWN_OPTIONS: Final = {"k": "--k", "allow_insufficient_data": "--allow-insufficient-data"}
_FORMS: Final = (
    "'pass rate >= X', 'pass^k >= X', 'flaky tasks <= N', 'pass rate drop <= X', "
    "'pass^k drop <= X', 'pass rate drop significant at A', 'pass^k drop significant at A' "
    "('pass@1' may stand for 'pass rate'), or KEY=VALUE with a key of the gate file"
)


def parse_gate_expression(text: str) -> Setting:
    """A ``--gate`` expression as a setting; UsageError when it is not one of the forms."""
    spoken = " ".join(text.strip().lower().split())
    patterns = (
        (_METRIC + r" ?>= ?" + _NUMBER, ("min_pass_rate", "min_pass_hat_k")),
        (_METRIC + r" drop ?<= ?" + _NUMBER, ("max_pass_rate_drop", "max_pass_hat_k_drop")),
        (
            _METRIC + r" drop (?:is )?significant at " + _NUMBER,
            ("significance", "pass_hat_k_significance"),
        ),
        (r"(flaky tasks) ?<= ?" + _NUMBER, ("max_flaky_tasks", "max_flaky_tasks")),
    )
    key = number = None
    for pattern, keys in patterns:
        match = re.fullmatch(pattern, spoken)
        if match:
            key = keys[1] if match.group(1) == "pass^k" else keys[0]
            number = match.group(2)
            break
    else:
        match = re.fullmatch(r"([a-z_^@]+) ?= ?(\S+)", spoken)
        if match and match.group(1) in THRESHOLD_KEYS:
            key, number = match.group(1), match.group(2)
        elif match and match.group(1) in _OWN_OPTIONS:
            option = _OWN_OPTIONS[match.group(1)]
            raise UsageError(
                f"--gate {excerpt(text)}: {match.group(1)} is set with {option} or in the gate file"
            )
    if key is None or number is None:
        raise UsageError(f"--gate {excerpt(text)} is not a gate; the forms are {_FORMS}")
    problem = _too_long(number)
    if problem:
        raise UsageError(f"--gate {excerpt(text)}: {problem}")
    try:  # a decimal, as in a gate file: checked and compared exactly as written
        value: Decimal | int = int(number) if number.isdigit() else Decimal(number)
    except (ValueError, ArithmeticError):
        raise UsageError(f"--gate {excerpt(text)}: {excerpt(number)} is not a number") from None
    try:
        exact, _ = _setting_value(key, value)
    except ValueError as exc:
        raise UsageError(f"--gate {excerpt(text)}: {key} {exc}") from None
    # a valid expression is short (its number is, by _too_long): named in full where it applies
    return Setting(key, exact, number, f"--gate {text!r}")


def _too_long(number: str) -> str | None:
    """Why a number of a ``--gate`` expression is too long to use, or None.

    Its exact value is built from its digits and its exponent, so both are bounded: more than
    :data:`_MAX_DIGITS` digits, or an exponent beyond that either way (``0e99999999`` would
    take minutes), is refused before any conversion."""
    mantissa, _, exponent = number.lower().partition("e")
    digits = sum(1 for char in mantissa if char.isdigit())
    if digits > _MAX_DIGITS:
        return (
            f"the number {excerpt(number, quote=False)} has {digits} digits, too many to "
            f"use (at most {_MAX_DIGITS})"
        )
    power = exponent.lstrip("+-").replace("_", "").lstrip("0")
    if power.isdecimal() and (len(power) > len(str(_MAX_DIGITS)) or int(power) > _MAX_DIGITS):
        return (
            f"the number {excerpt(number, quote=False)} has an exponent too large to use "
            f"(at most {_MAX_DIGITS} either way)"
        )
    return None  # not a number at all is reported by the conversion that follows


# -- the plan: which thresholds apply to which workflow ---------------------------------------


@dataclass(frozen=True, slots=True)
class GatePlan:
    """Everything that decides the gates: the file, ``--gate`` settings, ``--k`` and
    ``--allow-insufficient-data``."""

    file: GateFile | None = None
    extra: tuple[Setting, ...] = ()
    k: int | None = None
    allow_insufficient: bool = False

    def _own(self, workflow: str) -> tuple[Setting, ...]:
        if self.file is None:
            return ()
        return next((s for name, _, s in self.file.workflows if name == workflow), ())

    def _lookup(self, workflow: str, key: str) -> Setting | None:
        for settings in (self._own(workflow), self.file.defaults if self.file else ()):
            found = next((s for s in settings if s.key == key), None)
            if found is not None:
                return found
        return None

    def k_for(self, workflow: str) -> int | None:
        """``--k``, else the workflow's ``k``, else the default ``k``, else None (automatic)."""
        if self.k is not None:
            return self.k
        found = self._lookup(workflow, "k")
        return None if found is None else int(found.value)

    @property
    def overall_k(self) -> int | None:
        """The k of the summary over every workflow: ``--k``, else the default ``k``."""
        if self.k is not None or self.file is None:
            return self.k
        found = next((s for s in self.file.defaults if s.key == "k"), None)
        return None if found is None else int(found.value)

    def allow_for(self, workflow: str) -> bool:
        if self.allow_insufficient:
            return True
        found = self._lookup(workflow, "allow_insufficient_data")
        return bool(found is not None and found.value)

    def thresholds_for(self, workflow: str) -> list[Setting]:
        """The file's thresholds (a workflow's own replace the defaults), then ``--gate``'s."""
        merged = {s.key: s for s in (self.file.defaults if self.file else ())}
        merged.update({s.key: s for s in self._own(workflow)})
        chosen = [merged[key] for key in THRESHOLD_KEYS if key in merged]
        return chosen + list(self.extra)

    @property
    def named_workflows(self) -> list[tuple[str, str]]:
        return (
            [] if self.file is None else [(name, origin) for name, origin, _ in self.file.workflows]
        )

    @property
    def active(self) -> bool:
        """Whether any threshold is set (a gate file sets at least one: parse_gate_file)."""
        return bool(self.extra) or self.file is not None


# -- evaluation -------------------------------------------------------------------------------

STATUSES: Final = ("pass", "fail", "insufficient", "allowed", "skipped")


@dataclass(frozen=True, slots=True)
class GateCheck:
    """One threshold checked against one workflow.

    ``status``: ``pass``; ``fail`` (breached); ``insufficient`` (the data cannot decide, which
    fails); ``allowed`` (insufficient, but allow_insufficient_data accepts it); ``skipped`` (the
    threshold needs a baseline and there is none)."""

    workflow: str
    key: str
    threshold: str
    origin: str
    status: str
    observed: str | None
    reason: str | None

    @property
    def failed(self) -> bool:
        return self.status in ("fail", "insufficient")

    def to_dict(self) -> dict[str, Any]:
        return {
            "workflow": self.workflow,
            "key": self.key,
            "threshold": self.threshold,
            "origin": self.origin,
            "status": self.status,
            "observed": self.observed,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class StatGateResult:
    """Every check made; the gate passes when none failed."""

    checks: tuple[GateCheck, ...]

    @property
    def passed(self) -> bool:
        return not any(c.failed for c in self.checks)

    @property
    def reasons(self) -> tuple[str, ...]:
        return tuple(c.reason for c in self.checks if c.failed and c.reason)

    def to_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "reasons": list(self.reasons),
            "checks": [c.to_dict() for c in self.checks],
        }


def rate_text(value: Fraction | float | None) -> str:
    """A probability with 3 decimals (``-`` for none). An exact fraction is rounded exactly,
    half to even, so 13/80 = 0.1625 shows as ``0.162`` as 5/16 = 0.3125 shows as ``0.312``."""
    if value is None:
        return "-"
    if type(value) is Fraction:
        value = round(value, 3)
    return f"{float(value):.3f}"


def change_text(before: Fraction, after: Fraction) -> str:
    """``after - before`` with its sign and 3 decimals, rounded as :func:`rate_text` rounds."""
    change = after - before
    return ("-" if change < 0 else "+") + rate_text(abs(change))


def p_text(value: Fraction) -> str:
    """A p-value with 4 significant digits (``0.03125``, ``1``, ``1.526e-05``)."""
    return f"{float(value):.4g}"


def _names(tasks: Sequence[str], limit: int = 10) -> str:
    shown = ", ".join(tasks[:limit])
    return shown + (f", and {len(tasks) - limit} more" if len(tasks) > limit else "")


def _significance(test: PairedTest, alpha: Fraction, label: str) -> tuple[str, str, str | None]:
    """(status, observed, why) of a significance threshold."""
    observed = f"p = {p_text(test.p_value)}"
    if test.pairs == 0:
        return "insufficient", "no paired tasks", "no task ran on both sides"
    if test.insufficient(alpha):
        noun = "task ran" if test.pairs == 1 else "tasks ran"
        return (
            "insufficient",
            observed,
            (
                f"{test.pairs} {noun} on both sides, and the smallest p-value that many "
                f"paired tasks can give is {p_text(test.min_p_value)}"
            ),
        )
    if test.drop and test.p_value <= alpha:
        return (
            "fail",
            observed,
            (
                # the paired test compares tasks: its means are per task, which is not the
                # pooled pass rate when tasks ran a different number of times
                f"{label} dropped significantly (mean per task {rate_text(test.baseline_mean)} "
                f"-> {rate_text(test.candidate_mean)} over {test.pairs} paired tasks, "
                f"{len(test.down)} down, {len(test.up)} up): {observed} ({test.method})"
            ),
        )
    return "pass", observed, None


def _check(
    setting: Setting,
    workflow: str,
    *,
    baseline: Summary | None,
    candidate: Summary,
    tests: tuple[PairedTest, PairedTest] | None,
    allow: bool,
) -> GateCheck:
    key, threshold = setting.key, setting.value
    k = candidate.k
    status, observed, why = "pass", None, None  # why: the text of a failure
    if key in BASELINE_KEYS and tests is None:
        status, why = "skipped", None
    elif candidate.runs == 0:
        status, why = "insufficient", "no candidate runs" if tests else "no runs"
    elif key == "min_pass_rate":
        rate = candidate.pass_rate
        observed = rate_text(rate)
        if rate is not None and rate < threshold:
            status = "fail"
            why = f"pass rate {observed} ({candidate.successes} of {candidate.runs} runs) is below"
    elif key == "min_pass_hat_k":
        value = candidate.pass_hat()
        observed = rate_text(value)
        if value is None:
            status, why = "insufficient", f"no task has {k} runs"
        elif value < threshold:
            status, why = "fail", f"pass^{k} {observed} is below"
    elif key == "max_flaky_tasks":
        flaky = [t.task for t in candidate.flaky]
        observed = str(len(flaky))
        if candidate.max_runs < 2:
            status, why = "insufficient", "every task ran once, so no task can show flakiness"
        elif len(flaky) > threshold:
            noun, verb = ("task", "exceeds") if len(flaky) == 1 else ("tasks", "exceed")
            status, why = "fail", f"{len(flaky)} flaky {noun} ({_names(flaky)}) {verb}"
    elif key in ("max_pass_rate_drop", "max_pass_hat_k_drop"):
        assert baseline is not None
        hat = key == "max_pass_hat_k_drop"
        before = baseline.pass_hat() if hat else baseline.pass_rate
        after = candidate.pass_hat() if hat else candidate.pass_rate
        label = f"pass^{k}" if hat else "pass rate"
        if baseline.runs == 0:
            status, why = "insufficient", "no baseline runs"
        elif before is None or after is None:
            status, why = "insufficient", f"no task has {k} runs on both sides"
        else:
            drop = before - after
            observed = rate_text(drop)
            if drop > threshold:
                status = "fail"
                why = (
                    f"{label} dropped {observed} ({rate_text(before)} -> {rate_text(after)}), "
                    "more than"
                )
    elif key in ("significance", "pass_hat_k_significance"):
        assert tests is not None
        hat = key == "pass_hat_k_significance"
        status, observed, why = _significance(
            tests[1] if hat else tests[0], Fraction(threshold), f"pass^{k}" if hat else "pass rate"
        )
    if status == "insufficient" and allow:
        status = "allowed"
    reason = None
    where = f"[{setting.origin}]"
    if status == "fail":
        if key in _ALPHAS:
            reason = f"workflow {workflow!r}: {why}, at {key} {setting.shown} {where}"
        else:
            reason = f"workflow {workflow!r}: {why} {key} {setting.shown} {where}"
    elif status in ("insufficient", "allowed"):
        reason = (
            f"workflow {workflow!r}: insufficient data for {key} {setting.shown}: {why} {where}"
        )
    return GateCheck(workflow, key, setting.shown, setting.origin, status, observed, reason)


def _missing(plan: GatePlan, present: set[str]) -> list[GateCheck]:
    return [
        GateCheck(
            name,
            "workflow",
            name,
            origin,
            "fail",
            None,
            f"workflow {name!r}: no runs, but the gate file sets thresholds for it [{origin}]",
        )
        for name, origin in plan.named_workflows
        if name not in present
    ]


def check_comparisons(plan: GatePlan, comparisons: Sequence[WorkflowComparison]) -> StatGateResult:
    """Check every threshold that applies to each compared workflow."""
    cases = [(c.workflow, c.baseline, c.candidate, (c.rate_test, c.hat_test)) for c in comparisons]
    return _check_all(plan, cases, comparing=True)


def check_summaries(plan: GatePlan, summaries: Sequence[Summary]) -> StatGateResult:
    """Check the thresholds that need no baseline; the others are ``skipped``."""
    return _check_all(plan, [(s.workflow or "", None, s, None) for s in summaries], comparing=False)


_Case = tuple[str, "Summary | None", "Summary", "tuple[PairedTest, PairedTest] | None"]


def _check_all(plan: GatePlan, cases: Sequence[_Case], *, comparing: bool) -> StatGateResult:
    """Each workflow's thresholds, then the named workflows that are not there. Without any
    workflow (no runs at all) the thresholds that apply to every workflow cannot be decided:
    they are insufficient data, not passed."""
    checks: list[GateCheck] = []
    for name, baseline, candidate, tests in cases:
        allow = plan.allow_for(name)
        checks += [
            _check(setting, name, baseline=baseline, candidate=candidate, tests=tests, allow=allow)
            for setting in plan.thresholds_for(name)
        ]
    if not cases:
        checks += _no_runs(plan, comparing=comparing)
    checks += _missing(plan, {case[0] for case in cases})
    return StatGateResult(tuple(checks))


def _no_runs(plan: GatePlan, *, comparing: bool) -> list[GateCheck]:
    """The checks of the default and ``--gate`` thresholds when no workflow ran at all (the
    workflows the gate file names are :func:`_missing`): those of a workflow the file does not
    name, reported under the empty name."""
    allow = plan.allow_for("")
    checks = []
    for setting in plan.thresholds_for(""):
        if setting.key in BASELINE_KEYS and not comparing:
            status, reason = "skipped", None
        else:
            status = "allowed" if allow else "insufficient"
            why = "no runs on either side" if comparing else "no runs"
            reason = (
                f"all workflows: insufficient data for {setting.key} {setting.shown}: {why} "
                f"[{setting.origin}]"
            )
        checks.append(
            GateCheck("", setting.key, setting.shown, setting.origin, status, None, reason)
        )
    return checks
