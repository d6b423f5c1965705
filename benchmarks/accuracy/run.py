"""Run the benchmark suite and enforce its thresholds; exit 1 on any breach.

    python benchmarks/accuracy/run.py          # check everything and print a summary
    python benchmarks/accuracy/run.py --write  # the same, then rewrite BENCHMARK-RESULTS.md

What is checked (see BENCHMARK-METHODOLOGY.md):

* the cases in benchmarks/accuracy/cases/ equal a fresh run of benchmarks/accuracy/generate.py;
* coverage: at least 250 cases, at least 30 per category, every emitted rule expected by at least
  three failure-inducing cases;
* detection: every case produces exactly its expected (severity, rule, step) findings and verdict,
  so precision and recall over (rule, step) pairs are 1.0; the 34 cases of arh 0.2.x are run
  too when ../shared is present (or ARH_SHARED_DIR points at it);
* determinism: the JSON report of all cases is byte-identical on a repeat and in processes with
  other hash seeds;
* metamorphic relations: reordering argument and policy keys, re-spacing the JSON, renaming step
  ids, adding an unrelated allowed call, and reordering the traces of a run change nothing that
  they must not change;
* adapter equivalence, when the harness has the openai-chat and anthropic-messages adapters
  (reported as skipped otherwise);
* the regression scenarios of ``arh compare`` through the library API.

The results file holds only machine-independent facts about the generated cases, so it is
byte-stable; timings go to the console.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import generate
import transcripts
from agent_reliability_harness import __version__
from agent_reliability_harness.engine import Validator
from agent_reliability_harness.model.policy import Policy
from agent_reliability_harness.model.report import RunReport, TraceReport
from agent_reliability_harness.model.trace import Trace
from agent_reliability_harness.regression import compare_reports, evaluate_gate
from agent_reliability_harness.render.json_report import render_json
from agent_reliability_harness.rules import RULES
from agent_reliability_harness.runner import run_validation

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CASES_DIR = HERE / "cases"
RESULTS_PATH = ROOT / "BENCHMARK-RESULTS.md"
SHARED = Path(os.environ.get("ARH_SHARED_DIR", ROOT.parent / "shared"))
REFERENCE_CASES = SHARED / "data" / "reference-arh" / "benchmarks" / "cases"
COMMAND = "python benchmarks/accuracy/run.py --write"
# benchmarks/perf/perf.py (`make perf`) keeps its timings between these markers of the same file;
# --write keeps that section as it is, and the sync test ignores it.
PERF_START = "<!-- perf:start -->"
PERF_END = "<!-- perf:end -->"

MIN_TOTAL = 250
MIN_PER_CATEGORY = 30
MIN_FAILURE_CASES_PER_RULE = 3
HASH_SEEDS = ("0", "1729")
CASE_KEYS = ("case_id", "category", "description", "mutation", "policy", "trace", "expected")
SEVERITIES = ("error", "warning", "info")
APPENDED_TOOL = "bench_unrelated_probe"
SCENARIO_RULES = {
    "ARH-FLW-003": "duplicate side effect",
    "ARH-SEQ-003": "wrong ordering",
    "ARH-SAF-001": "secret exposure",
}

Triple = tuple[str, str, str | None]


class CaseFileError(Exception):
    """A case file that does not have the case layout."""


@dataclass(frozen=True)
class Case:
    case_id: str
    category: str
    description: str
    mutation: str
    policy: dict[str, Any]
    trace: dict[str, Any]
    passed: bool
    findings: tuple[Triple, ...]
    origin: str  # "generated" or "0.2.x"


def _layout_problem(data: Any) -> str:
    if not isinstance(data, dict) or tuple(data) != CASE_KEYS:
        return f"keys must be exactly {', '.join(CASE_KEYS)} in that order"
    for key in ("case_id", "category", "description", "mutation"):
        if not isinstance(data[key], str) or not data[key]:
            return f"{key} must be a non-empty string"
    if not isinstance(data["policy"], dict) or not isinstance(data["trace"], dict):
        return "policy and trace must be objects"
    expected = data["expected"]
    if not isinstance(expected, dict) or set(expected) != {"passed", "findings"}:
        return "expected must be {passed, findings}"
    if not isinstance(expected["passed"], bool) or not isinstance(expected["findings"], list):
        return "expected.passed must be a boolean and expected.findings an array"
    for item in expected["findings"]:
        if not (
            isinstance(item, list)
            and len(item) == 3
            and item[0] in SEVERITIES
            and item[1] in RULES
            and (item[2] is None or isinstance(item[2], str))
        ):
            return f"bad expected finding {item!r}: [severity, registered rule id, step id|null]"
    return ""


def load_cases(directory: Path, origin: str) -> list[Case]:
    cases = []
    for path in sorted(directory.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        problem = _layout_problem(data)
        if problem:
            raise CaseFileError(f"{path}: {problem}")
        cases.append(
            Case(
                data["case_id"],
                data["category"],
                data["description"],
                data["mutation"],
                data["policy"],
                data["trace"],
                data["expected"]["passed"],
                tuple((s, r, i) for s, r, i in data["expected"]["findings"]),
                origin,
            )
        )
    ids = [c.case_id for c in cases]
    if len(set(ids)) != len(ids):
        raise CaseFileError(f"{directory}: case ids are not unique")
    return cases


_VALIDATORS: dict[str, Validator] = {}
_BY_OBJECT: dict[int, tuple[dict[str, Any], Validator]] = {}


def validator_for(policy: dict[str, Any]) -> Validator:
    """One validator per distinct policy text (key order included): loading a policy compiles
    and analyses its regular expressions, which dominates the cost of a small case."""
    hit = _BY_OBJECT.get(id(policy))
    if hit is not None and hit[0] is policy:
        return hit[1]
    key = json.dumps(policy)
    found = _VALIDATORS.get(key)
    if found is None:
        found = _VALIDATORS[key] = Validator(Policy.from_dict(policy))
    _BY_OBJECT[id(policy)] = (policy, found)  # keeps the object alive, so its id stays unique
    return found


def clone(value: Any) -> Any:
    """A deep copy of JSON data (faster than copy.deepcopy for it)."""
    return json.loads(json.dumps(value))


def validate(policy: dict[str, Any], trace: dict[str, Any]) -> TraceReport:
    return validator_for(policy).validate(Trace.from_dict(trace))


def triples(report: TraceReport) -> Counter[Triple]:
    """The findings the benchmark scores: errors and warnings (info is never expected)."""
    return Counter(
        (f.severity, f.rule_id, f.step_id) for f in report.findings if f.severity != "info"
    )


def _comparable(report: TraceReport) -> dict[str, Any]:
    """A report's JSON form without where the trace was read from."""
    out = report.to_dict()
    out.pop("source_path", None)
    out.pop("source_line", None)
    return out


# --------------------------------------------------------------------------------------------
# Detection
# --------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    case: Case
    report: TraceReport | None
    actual: Counter[Triple]
    error: str = ""

    @property
    def expected(self) -> Counter[Triple]:
        return Counter(self.case.findings)

    @property
    def correct(self) -> bool:
        return (
            self.report is not None
            and self.actual == self.expected
            and self.report.passed == self.case.passed
        )

    def pair_counts(self, rule: str | None = None) -> tuple[int, int, int]:
        """(true positives, false positives, false negatives) over (rule_id, step_id) pairs."""
        exp = Counter((r, s) for _, r, s in self.expected.elements() if rule in (None, r))
        act = Counter((r, s) for _, r, s in self.actual.elements() if rule in (None, r))
        return sum((exp & act).values()), sum((act - exp).values()), sum((exp - act).values())


def detect(case: Case) -> Outcome:
    try:
        report = validate(case.policy, case.trace)
    except Exception as exc:  # noqa: BLE001 - a crash on one case is a result, not an abort
        return Outcome(case, None, Counter(), f"{type(exc).__name__}: {exc}")
    return Outcome(case, report, triples(report))


@dataclass
class Tally:
    cases: int = 0
    correct: int = 0
    expected_pass: int = 0
    expected_findings: int = 0
    tp: int = 0
    fp: int = 0
    fn: int = 0

    def add(self, outcome: Outcome, rule: str | None = None) -> None:
        tp, fp, fn = outcome.pair_counts(rule)
        self.cases += 1
        self.correct += outcome.correct
        self.expected_pass += outcome.case.passed
        self.expected_findings += tp + fn
        self.tp, self.fp, self.fn = self.tp + tp, self.fp + fp, self.fn + fn

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0


def tally(outcomes: Iterable[Outcome]) -> Tally:
    total = Tally()
    for outcome in outcomes:
        total.add(outcome)
    return total


# --------------------------------------------------------------------------------------------
# Metamorphic relations
# --------------------------------------------------------------------------------------------


@dataclass
class Relation:
    name: str
    checks: int = 0
    skipped: int = 0
    failures: list[str] = field(default_factory=list)

    def check(self, ok: bool, case_id: str, why: str) -> None:
        self.checks += 1
        if not ok:
            self.failures.append(f"{case_id}: {why}")


def _reverse_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _reverse_keys(v) for k, v in reversed(list(value.items()))}
    if isinstance(value, list):
        return [_reverse_keys(v) for v in value]
    return value


def _rename_map(trace: dict[str, Any]) -> dict[str, str]:
    """Distinct step ids, in order of first use, mapped to new ids whose sort order is reversed."""
    distinct = list(dict.fromkeys(step["step_id"] for step in trace["steps"]))
    return {old: f"renamed-{len(distinct) - n:04d}" for n, old in enumerate(distinct)}


def _compact(value: Any) -> str:
    """No whitespace at all, non-ASCII characters written as themselves: one JSON Lines record."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _spacious(value: Any) -> str:
    """Every kind of JSON whitespace: tabs, CRLF line ends, padded separators, blank margins."""
    text = json.dumps(value, indent="\t", separators=(" ,", " :  "), ensure_ascii=True)
    return "\r\n \t" + text.replace("\n", "\r\n") + "\r\n\r\n"


def _run_files(policy: dict[str, Any], paths: list[Path]) -> dict[str, dict[str, Any]]:
    run = run_validation(validator_for(policy).policy, [str(p) for p in paths])
    if run.input_errors:
        raise RuntimeError("; ".join(str(e) for e in run.input_errors))
    return {r.trace_id: _comparable(r) for r in run.reports}


def metamorphic(outcomes: list[Outcome], workdir: Path) -> list[Relation]:
    keys = Relation("argument key order")
    policy_keys = Relation("policy key order")
    spacing = Relation("JSON whitespace")
    renaming = Relation("step ids renamed consistently")
    appended = Relation("unrelated allowed call added")
    order = Relation("trace order in a run")
    usable = [o for o in outcomes if o.report is not None]
    for outcome in usable:
        case, report = outcome.case, outcome.report
        assert report is not None
        base = _comparable(report)
        try:
            trace = clone(case.trace)
            for step in trace["steps"]:
                if isinstance(step.get("arguments"), dict):
                    step["arguments"] = _reverse_keys(step["arguments"])
            keys.check(
                _comparable(validate(case.policy, trace)) == base, case.case_id, "report changed"
            )

            policy_keys.check(
                _comparable(validate(_reverse_keys(case.policy), case.trace)) == base,
                case.case_id,
                "report changed",
            )

            mapping = _rename_map(case.trace)
            renamed = clone(case.trace)
            for step in renamed["steps"]:
                step["step_id"] = mapping[step["step_id"]]
            again = validate(case.policy, renamed)
            want = Counter(
                {
                    (s, r, None if i is None else mapping[i]): c
                    for (s, r, i), c in outcome.actual.items()
                }
            )
            renaming.check(
                triples(again) == want
                and again.passed == report.passed
                and again.score == report.score,
                case.case_id,
                "findings, verdict or score changed",
            )

            _check_appended(appended, outcome)
        except Exception as exc:  # noqa: BLE001 - report the case, keep checking the others
            # counted against the first relation so that the breach cannot go unnoticed
            keys.failures.append(
                f"{case.case_id}: the relations raised {type(exc).__name__}: {exc}"
            )
    _check_order(order, spacing, usable, workdir)
    return [keys, policy_keys, spacing, renaming, appended, order]


def _check_appended(relation: Relation, outcome: Outcome) -> None:
    """Add one call of a new, argument-less allowed tool that no rule of the policy mentions.

    Preconditions: the call must not change what the completion rules see (it goes before the
    last step when a final response is required, and the trace must not be empty then, nor at
    max_steps already).
    """
    case, report = outcome.case, outcome.report
    assert report is not None
    policy = clone(case.policy)
    completion = policy.get("completion") or {}
    steps = case.trace["steps"]
    final_required = bool(completion.get("require_final_response"))
    limit = completion.get("max_steps")
    ids = {s["step_id"] for s in steps}
    names = {s.get("tool_name") for s in steps}
    if (
        (final_required and not steps)
        or (limit is not None and len(steps) >= limit)
        or APPENDED_TOOL in names
        or APPENDED_TOOL in (policy.get("allowed_tools") or {})
    ):
        relation.skipped += 1
        return
    policy.setdefault("allowed_tools", {})
    policy["allowed_tools"] = {**(policy["allowed_tools"] or {}), APPENDED_TOOL: {}}
    sid = "unrelated-probe"
    while sid in ids:
        sid += "-x"
    trace = clone(case.trace)
    call = {"step_id": sid, "type": "tool_call", "tool_name": APPENDED_TOOL, "arguments": {}}
    at = len(steps) - 1 if final_required else len(steps)
    trace["steps"].insert(at, call)
    again = validate(policy, trace)
    errors = any(s == "error" for s, _, _ in outcome.actual)
    # A trace that fails only on its score may legitimately pass once a valid call is added.
    verdict_ok = again.passed == report.passed or (not errors and not report.passed)
    relation.check(
        triples(again) == outcome.actual and verdict_ok,
        case.case_id,
        "findings or verdict changed",
    )


def _run_safely(policy: dict[str, Any], path: Path) -> dict[str, dict[str, Any]]:
    try:
        return _run_files(policy, [path])
    except Exception as exc:  # noqa: BLE001 - every trace of the run then fails its check
        return {"error": {"message": str(exc)}}


def _check_order(
    relation: Relation, spacing: Relation, outcomes: list[Outcome], workdir: Path
) -> None:
    """Validate the traces that share a policy as runs read from files: one JSON Lines file
    forwards (compact JSON) and backwards, and a directory of one heavily spaced file per trace
    (named so that the directory order is the reverse of the case order)."""
    groups: dict[str, list[Outcome]] = {}
    for outcome in outcomes:
        key = json.dumps(outcome.case.policy, sort_keys=True)
        groups.setdefault(key, []).append(outcome)
    for number, group in enumerate(groups.values()):
        policy = group[0].case.policy
        expected = {o.case.trace["trace_id"]: _comparable(o.report) for o in group if o.report}
        forward, backward = workdir / f"g{number}.jsonl", workdir / f"g{number}-back.jsonl"
        forward.write_text("".join(_compact(o.case.trace) + "\n" for o in group), "utf-8")
        backward.write_text("".join(_compact(o.case.trace) + "\n" for o in group[::-1]), "utf-8")
        spaced_dir = workdir / f"g{number}"
        spaced_dir.mkdir()
        for n, o in enumerate(group):
            name = f"{len(group) - n:05d}.json"
            (spaced_dir / name).write_bytes(_spacious(o.case.trace).encode("utf-8"))
        runs = [_run_safely(policy, forward), _run_safely(policy, backward)]
        spaced = _run_safely(policy, spaced_dir)
        for outcome in group:
            tid = outcome.case.trace["trace_id"]
            spacing.check(
                runs[0].get(tid) == expected[tid] and spaced.get(tid) == expected[tid],
                outcome.case.case_id,
                "the report changed when the JSON was written compact or widely spaced",
            )
            if len(group) < 2:
                relation.skipped += 1
                continue
            relation.check(
                runs[1].get(tid) == expected[tid],
                outcome.case.case_id,
                "report depends on the position of the trace in the run",
            )


# --------------------------------------------------------------------------------------------
# Determinism
# --------------------------------------------------------------------------------------------


def report_bytes(cases: list[Case]) -> bytes:
    """The JSON report of every case as one run, from scratch (validators of this call only)."""
    fresh: dict[str, Validator] = {}
    reports = []
    for case in cases:
        key = json.dumps(case.policy)
        if key not in fresh:
            fresh[key] = Validator(Policy.from_dict(case.policy))
        reports.append(fresh[key].validate(Trace.from_dict(case.trace)))
    return render_json(RunReport(tuple(reports), (), None, None, __version__)).encode("utf-8")


@dataclass
class Determinism:
    repeat_identical: bool
    seeds: dict[str, bool]
    digest: str


def determinism(cases: list[Case]) -> Determinism:
    first, second = report_bytes(cases), report_bytes(cases)
    digest = hashlib.sha256(first).hexdigest()
    processes = {
        seed: subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--digest"],
            env={**os.environ, "PYTHONHASHSEED": seed},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for seed in HASH_SEEDS
    }
    seeds = {}
    for seed, process in processes.items():
        out, _err = process.communicate(timeout=300)
        seeds[seed] = process.returncode == 0 and out.strip() == digest
    return Determinism(first == second, seeds, digest)


# --------------------------------------------------------------------------------------------
# Adapter equivalence
# --------------------------------------------------------------------------------------------

Reader = Callable[[str, Any], Trace]


@dataclass
class Equivalence:
    skipped_reason: str = ""
    checks: Counter[str] = field(default_factory=Counter)
    lossless: Counter[str] = field(default_factory=Counter)
    exact: Counter[str] = field(default_factory=Counter)
    differences: list[str] = field(default_factory=list)  # informational: not exact, same verdict
    failures: list[str] = field(default_factory=list)


def _anchored(
    report: TraceReport, trace: Trace
) -> tuple[Counter[tuple[str, str, str | None]], float]:
    """Findings with model responses named by position (adapters generate their ids), and the
    score: equal for two readings of the same run when nothing differs at all."""
    names: dict[str, str] = {}
    responses = 0
    for step in trace.steps:
        if step.type == "model_response":
            names[step.step_id] = f"response #{responses}"
            responses += 1
        elif step.type == "tool_call":
            names[step.step_id] = step.step_id
    found = Counter(
        (f.severity, f.rule_id, None if f.step_id is None else names.get(f.step_id, f.step_id))
        for f in report.findings
        if f.severity != "info"
    )
    return found, report.score


def harness_reader() -> tuple[Reader | None, str]:
    """The harness's transcript reader, or why the check cannot run."""
    try:
        from agent_reliability_harness import adapters
    except ImportError as exc:  # pragma: no cover - the package always has it
        return None, f"no adapters module ({exc})"
    missing = [name for name in transcripts.FORMAT_NAMES if name not in adapters.FORMATS]
    if missing:
        return None, f"the harness has no {' or '.join(missing)} adapter yet"

    def read(fmt: str, document: Any) -> Trace:
        return adapters.to_trace(document, fmt)

    return read, ""


def adapter_equivalence(cases: list[Case], reader: Reader | None, reason: str = "") -> Equivalence:
    """Each trace, projected onto what a transcript format can carry, must get the same verdict
    and the same set of (severity, rule) findings whether it is validated directly or written as
    a transcript and read back by the harness's adapter."""
    result = Equivalence()
    if reader is None:
        result.skipped_reason = reason
        return result
    for case in cases:
        for fmt, render in transcripts.RENDERERS.items():
            try:
                projected, document, lost = render(case.trace)
                validator = validator_for(case.policy)
                direct_trace = Trace.from_dict(projected)
                direct = validator.validate(direct_trace)
                back_trace = reader(fmt, clone(document))
                back = validator.validate(back_trace)
            except Exception as exc:  # noqa: BLE001
                result.failures.append(f"{case.case_id} [{fmt}]: {type(exc).__name__}: {exc}")
                continue
            result.checks[fmt] += 1
            result.lossless[fmt] += not lost
            mine, theirs = _anchored(direct, direct_trace), _anchored(back, back_trace)
            if mine == theirs:
                result.exact[fmt] += 1
            else:
                result.differences.append(
                    f"{case.case_id} [{fmt}]: only direct {sorted(mine[0] - theirs[0], key=str)}, "
                    f"only read back {sorted(theirs[0] - mine[0], key=str)}, "
                    f"score {mine[1]:.2f} vs {theirs[1]:.2f}"
                )
            if back.passed != direct.passed or {k[:2] for k in triples(back)} != {
                k[:2] for k in triples(direct)
            }:
                result.failures.append(
                    f"{case.case_id} [{fmt}]: passed {back.passed} vs {direct.passed}, "
                    f"findings {sorted(k[:2] for k in triples(back))} vs "
                    f"{sorted(k[:2] for k in triples(direct))}"
                )
    return result


# --------------------------------------------------------------------------------------------
# Regression scenarios (the compare gate, through the library API)
# --------------------------------------------------------------------------------------------


@dataclass
class Scenarios:
    counts: Counter[str] = field(default_factory=Counter)
    failed: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)

    def fail(self, label: str, message: str) -> None:
        self.failed[label] += 1
        self.failures.append(message)


def _run_report(case: Case, trace_id: str) -> RunReport:
    validator = validator_for(case.policy)
    policy = validator.policy
    trace = clone(case.trace)
    trace["trace_id"] = trace_id
    report = validator.validate(Trace.from_dict(trace))
    return RunReport((report,), (), policy.policy_id, policy.sha256, __version__)


def regression_scenarios(cases: list[Case]) -> Scenarios:
    """For every workflow: the clean run against itself passes the gate; each failure-inducing
    case of a duplicate side effect, a wrong order or a leaked secret (same policy) fails it with
    a reason naming the rule; and going back from that failure to the clean run passes."""
    out = Scenarios()
    clean = {c.trace["workflow"]: c for c in cases if c.case_id.startswith("normal-clean-run-")}
    for workflow, good in sorted(clean.items()):
        trace_id = f"scenario-{workflow}"
        baseline = _run_report(good, trace_id)
        result = compare_reports(baseline, _run_report(good, trace_id))
        gate = evaluate_gate(result)
        label = "identical run passes the gate"
        out.counts[label] += 1
        if not gate.passed or gate.reasons or result.warnings or result.new_findings:
            out.fail(label, f"{workflow}: identical run: {gate.reasons} {result.warnings}")
        for case in cases:
            rules = {r for _, r, _ in case.findings} & SCENARIO_RULES.keys()
            if (
                case.category != "failure-inducing"
                or case.trace["workflow"] != workflow
                or case.policy != good.policy
                or not rules
            ):
                continue
            for rule in sorted(rules):
                label = f"{SCENARIO_RULES[rule]} fails the gate"
                out.counts[label] += 1
                result = compare_reports(baseline, _run_report(case, trace_id))
                gate = evaluate_gate(result)
                new = {f.rule_id for _, f in result.new_findings}
                if (
                    gate.passed
                    or rule not in new
                    or not any(rule in r for r in gate.reasons)
                    or result.warnings
                ):
                    out.fail(label, f"{case.case_id}: {label}: {gate.reasons} {result.warnings}")
            label = "fix passes the gate"
            out.counts[label] += 1
            result = compare_reports(_run_report(case, trace_id), baseline)
            gate = evaluate_gate(result)
            resolved = {f.rule_id for _, f in result.resolved_findings}
            if not gate.passed or not rules <= resolved or result.new_findings:
                out.fail(label, f"{case.case_id}: fix: {gate.reasons}, resolved {resolved}")
    return out


# --------------------------------------------------------------------------------------------
# The whole run
# --------------------------------------------------------------------------------------------


@dataclass
class Suite:
    outcomes: list[Outcome]
    relations: list[Relation]


def run_suite(cases: list[Case], workdir: Path) -> Suite:
    outcomes = [detect(c) for c in cases]
    return Suite(outcomes, metamorphic(outcomes, Path(tempfile.mkdtemp(dir=workdir))))


@dataclass
class Results:
    generated: Suite
    reference: Suite | None
    in_sync: list[str]
    determinism: Determinism
    equivalence: Equivalence
    scenarios: Scenarios
    timings: dict[str, float] = field(default_factory=dict)

    # -- coverage -----------------------------------------------------------------------------
    def category_counts(self) -> Counter[str]:
        return Counter(o.case.category for o in self.generated.outcomes)

    def failure_cases_per_rule(self) -> Counter[str]:
        counts: Counter[str] = Counter()
        for o in self.generated.outcomes:
            if o.case.category == "failure-inducing":
                counts.update({r for _, r, _ in o.case.findings})
        return counts

    # -- thresholds ---------------------------------------------------------------------------
    def thresholds(self) -> list[tuple[str, str, str, bool]]:
        rows: list[tuple[str, str, str, bool]] = []
        gen = self.generated.outcomes
        total = len(gen)
        rows.append(("generated cases", f">= {MIN_TOTAL}", str(total), total >= MIN_TOTAL))
        cats = self.category_counts()
        low = min((cats[c] for c in generate.CATEGORIES), default=0)
        rows.append(
            (
                "cases per category",
                f">= {MIN_PER_CATEGORY} in each of the 6",
                f"min {low}",
                low >= MIN_PER_CATEGORY and set(cats) == set(generate.CATEGORIES),
            )
        )
        per_rule = self.failure_cases_per_rule()
        # the judge's rules need a rubric, not a policy: tests/rules and tests/test_judge.py
        emitted = [r for r, rule in RULES.items() if rule.emitted and rule.category != "judge"]
        fewest = min((per_rule[r] for r in emitted), default=0)
        rows.append(
            (
                "failure-inducing cases per emitted rule",
                f">= {MIN_FAILURE_CASES_PER_RULE} for each of {len(emitted)} rules",
                f"min {fewest}",
                fewest >= MIN_FAILURE_CASES_PER_RULE,
            )
        )
        rows.append(
            ("cases match a fresh generation", "yes", _yes(not self.in_sync), not self.in_sync)
        )
        for label, suite in (("generated", self.generated), ("0.2.x reference", self.reference)):
            if suite is None:
                continue
            t = tally(suite.outcomes)
            rows.append(
                (f"{label}: cases correct", "all", f"{t.correct}/{t.cases}", t.correct == t.cases)
            )
            rows.append((f"{label}: precision", "1.0", _ratio(t.precision), t.precision == 1.0))
            rows.append((f"{label}: recall", "1.0", _ratio(t.recall), t.recall == 1.0))
            failures = sum(len(r.failures) for r in suite.relations)
            empty = [r.name for r in suite.relations if r.checks == 0]
            rows.append(
                (
                    f"{label}: metamorphic failures",
                    "0, every relation checked",
                    str(failures) + (f" (unchecked: {', '.join(empty)})" if empty else ""),
                    failures == 0 and not empty,
                )
            )
        det = self.determinism
        rows.append(
            ("report identical on repeat", "yes", _yes(det.repeat_identical), det.repeat_identical)
        )
        same = all(det.seeds.values())
        rows.append(
            (
                "report identical across hash seeds",
                "yes",
                _yes(same) + f" ({len(det.seeds)} seeds)",
                same,
            )
        )
        eq = self.equivalence
        if eq.skipped_reason:
            rows.append(("adapter equivalence", "no failure", "skipped", True))
        else:
            rows.append(
                (
                    "adapter equivalence",
                    "no failure",
                    f"{len(eq.failures)} failures",
                    not eq.failures,
                )
            )
        sc = self.scenarios
        kinds_ok = all(sc.counts[f"{label} fails the gate"] for label in SCENARIO_RULES.values())
        rows.append(
            (
                "regression scenarios",
                "all as expected, each kind present",
                f"{sum(sc.counts.values()) - sum(sc.failed.values())}/{sum(sc.counts.values())}",
                not sc.failures and kinds_ok,
            )
        )
        return rows

    @property
    def ok(self) -> bool:
        return all(row[3] for row in self.thresholds())


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _ratio(value: float) -> str:
    return f"{value:.4f}".rstrip("0").rstrip(".") if value != 1.0 else "1.0"


def check_in_sync() -> list[str]:
    files = generate.render_all()
    existing = {p.name for p in CASES_DIR.glob("*.json")}
    problems = [f"stale {n}" for n in sorted(existing - files.keys())]
    problems += [f"missing {n}" for n in sorted(files.keys() - existing)]
    problems += [
        f"changed {n}"
        for n in sorted(files.keys() & existing)
        if (CASES_DIR / n).read_bytes() != files[n].encode("utf-8")
    ]
    return problems


def collect(*, reference: bool = True, reader: Reader | None = None) -> Results:
    """Run everything. ``reader`` replaces the harness's adapters (for tests)."""
    timings: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        timings[name] = now - clock
        clock = now

    in_sync = check_in_sync()
    cases = load_cases(CASES_DIR, "generated")
    lap("generation check and loading")
    with tempfile.TemporaryDirectory(prefix="arh-bench-") as tmp:
        generated = run_suite(cases, Path(tmp))
        lap("detection and metamorphic relations")
        ref = None
        if reference and REFERENCE_CASES.is_dir():
            ref = run_suite(load_cases(REFERENCE_CASES, "0.2.x"), Path(tmp))
            lap("0.2.x reference cases")
    det = determinism(cases)
    lap("determinism (3 processes)")
    reason = ""
    if reader is None:
        reader, reason = harness_reader()
    equivalence = adapter_equivalence(cases, reader, reason)
    lap("adapter equivalence")
    scenarios = regression_scenarios(cases)
    lap("regression scenarios")
    return Results(generated, ref, in_sync, det, equivalence, scenarios, timings)


# --------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------


def _table(header: list[str], rows: Iterable[Iterable[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


def _detection_rows(
    outcomes: list[Outcome], key: Callable[[Outcome], str], order: Iterable[str]
) -> list[list[Any]]:
    groups: dict[str, Tally] = {k: Tally() for k in order}
    for o in outcomes:
        groups.setdefault(key(o), Tally()).add(o)
    total = tally(outcomes)
    rows = []
    for name, t in [*groups.items(), ("**total**", total)]:
        rows.append(
            [
                name,
                t.cases,
                t.expected_pass,
                t.cases - t.expected_pass,
                t.correct,
                t.expected_findings,
                t.tp,
                t.fp,
                t.fn,
                _ratio(t.precision),
                _ratio(t.recall),
            ]
        )
    return rows


DETECTION_HEADER = [
    "Category",
    "Cases",
    "Expected pass",
    "Expected fail",
    "Correct",
    "Expected findings",
    "TP",
    "FP",
    "FN",
    "Precision",
    "Recall",
]


def render_results(results: Results) -> str:
    """BENCHMARK-RESULTS.md: generated cases only, no timings, no paths, no ../shared data."""
    gen = results.generated.outcomes
    out = [
        "# Benchmark results",
        "",
        f"<!-- Written by `{COMMAND}`; do not edit by hand. -->",
        "",
        f"- Harness: agent-reliability-harness {__version__}",
        f"- Command: `{COMMAND}` (`make bench` runs the same checks without writing this file)",
        (
            f"- Cases: {len(gen)} in `benchmarks/accuracy/cases/`, generated by "
            f"`benchmarks/accuracy/generate.py` from seed {generate.SEED}"
        ),
        (
            "- What the numbers mean, and what they do not: [BENCHMARK-METHODOLOGY.md]"
            "(BENCHMARK-METHODOLOGY.md)"
        ),
        "",
        (
            "Precision and recall count (rule ID, step ID) pairs; a case is correct when its "
            "(severity, rule ID, step ID) findings equal the expected multiset and its verdict "
            "matches. Everything above the performance section (if there is one) is written by "
            "this command and checked by tests/test_benchmarks.py; the performance section is "
            "written by `benchmarks/perf/perf.py` (`make perf`) and holds timings of the machine "
            "it ran on."
        ),
        "",
        "## Thresholds",
        "",
    ]
    rows = [r for r in results.thresholds() if not r[0].startswith("0.2.x")]
    out += _table(
        ["Threshold", "Required", "Result", "Met"], ([a, b, c, _yes(d)] for a, b, c, d in rows)
    )
    out += ["", "## Detection by category", ""]
    out += _table(
        DETECTION_HEADER, _detection_rows(gen, lambda o: o.case.category, generate.CATEGORIES)
    )
    out += ["", "## Rules", ""]
    out += [
        (
            "Every registered rule, how many generated cases expect it, and how it was detected. "
            "ARH-SCH-006 is registered for reading 0.2.x reports but never emitted. The judge's "
            "rules (ARH-JDG) grade final answers under a rubric, not a policy, and have no "
            "generated case (their fixtures are in tests/rules)."
        ),
        "",
    ]
    per_rule = results.failure_cases_per_rule()
    rule_rows = []
    for rule_id, rule in sorted(RULES.items()):
        t = Tally()
        for o in gen:
            if any(r == rule_id for _, r, _ in o.expected.elements()) or any(
                r == rule_id for _, r, _ in o.actual.elements()
            ):
                t.add(o, rule_id)
        rule_rows.append(
            [
                rule_id,
                rule.severity if rule.emitted else f"{rule.severity} (never emitted)",
                per_rule[rule_id],
                t.cases,
                t.expected_findings,
                t.tp,
                t.fp,
                t.fn,
            ]
        )
    out += _table(
        [
            "Rule",
            "Severity",
            "Failure-inducing cases",
            "All cases",
            "Expected findings",
            "TP",
            "FP",
            "FN",
        ],
        rule_rows,
    )
    out += ["", "## Metamorphic relations", ""]
    out += _table(
        ["Relation", "Checks", "Failures", "Not applicable"],
        ([r.name, r.checks, len(r.failures), r.skipped] for r in results.generated.relations),
    )
    det = results.determinism
    same = det.repeat_identical
    out += [
        "",
        "## Determinism",
        "",
        f"- JSON report of all cases identical on a repeat in one process: {_yes(same)}",
        (
            f"- identical in fresh processes with PYTHONHASHSEED {', '.join(HASH_SEEDS)}: "
            f"{_yes(all(det.seeds.values()))}"
        ),
        "",
        "## Adapter equivalence",
        "",
    ]
    eq = results.equivalence
    if eq.skipped_reason:
        out.append(f"Skipped: {eq.skipped_reason}.")
    else:
        out += [
            (
                "Each case's trace is projected onto what the format can carry, written as a "
                "transcript, read back by the harness's adapter and validated; the verdict and "
                "the set of (severity, rule) findings must equal those of the projection "
                "validated directly. 'Lossless' counts the cases whose projection is the whole "
                "trace. `make bench` also prints, for information, the cases where the findings "
                "per step or the score differ without changing the verdict."
            ),
            "",
        ]
        out += _table(
            ["Format", "Cases compared", "Lossless", "Failures"],
            (
                [
                    fmt,
                    eq.checks[fmt],
                    eq.lossless[fmt],
                    sum(f"[{fmt}]" in x for x in eq.failures),
                ]
                for fmt in transcripts.FORMAT_NAMES
            ),
        )
    out += ["", "## Regression scenarios", ""]
    sc = results.scenarios
    out += _table(
        ["Scenario", "Runs", "As expected"],
        ([name, n, n - sc.failed[name]] for name, n in sorted(sc.counts.items())),
    )
    return "\n".join(out) + "\n"


def split_perf(text: str) -> tuple[str, str]:
    """(this script's part, the performance sections or ""): everything from PERF_START on
    belongs to the performance scripts (benchmarks/perf/perf.py, then dask_perf.py)."""
    start = text.find(PERF_START)
    if start < 0 or text.find(PERF_END) < start:
        return text, ""
    return text[:start].rstrip("\n") + "\n", text[start:].rstrip("\n")


def write_results(text: str, path: Path = RESULTS_PATH) -> None:
    """Write the results, keeping the performance sections that benchmarks/perf/ maintains."""
    perf = split_perf(path.read_text(encoding="utf-8"))[1] if path.exists() else ""
    if perf:
        text = f"{text}\n{perf}\n"
    path.write_text(text, encoding="utf-8", newline="\n")


def print_summary(results: Results) -> None:
    gen = results.generated.outcomes
    print(f"arh {__version__} benchmark: {len(gen)} generated cases", end="")
    if results.reference is not None:
        print(f", {len(results.reference.outcomes)} 0.2.x reference cases")
    else:
        print(f" (0.2.x reference cases not found at {REFERENCE_CASES}; skipped)")
    for problem in results.in_sync[:20]:
        print(f"  out of sync: {problem}")
    for label, suite in (("generated", results.generated), ("0.2.x", results.reference)):
        if suite is None:
            continue
        print(f"\n{label}: detection")
        for line in _table(
            DETECTION_HEADER,
            _detection_rows(suite.outcomes, lambda o: o.case.category, ()),
        ):
            print("  " + line)
        for o in suite.outcomes:
            if not o.correct:
                print(f"  WRONG {o.case.case_id}: {o.error or ''}")
                if o.report is not None:
                    print(
                        f"    expected passed={o.case.passed} "
                        f"{sorted(o.expected.elements(), key=str)}"
                    )
                    print(
                        f"    actual   passed={o.report.passed} "
                        f"{sorted(o.actual.elements(), key=str)}"
                    )
        print(f"{label}: metamorphic relations")
        for r in suite.relations:
            print(f"  {r.name}: {r.checks} checks, {len(r.failures)} failures, {r.skipped} n/a")
            for failure in r.failures[:10]:
                print(f"    {failure}")
    det = results.determinism
    print(f"\ndeterminism: repeat identical {_yes(det.repeat_identical)}; hash seeds {det.seeds}")
    eq = results.equivalence
    if eq.skipped_reason:
        print(f"adapter equivalence: skipped ({eq.skipped_reason})")
    else:
        print(
            f"adapter equivalence: {dict(eq.checks)} compared, {dict(eq.lossless)} lossless, "
            f"{dict(eq.exact)} exact"
        )
        for failure in eq.failures[:20]:
            print(f"  FAIL {failure}")
        for difference in eq.differences[:20]:
            print(f"  same verdict, not exact: {difference}")
    sc = results.scenarios
    print(f"regression scenarios: {dict(sorted(sc.counts.items()))}")
    for failure in sc.failures:
        print(f"  {failure}")
    print("\ntimings (this machine; not part of BENCHMARK-RESULTS.md):")
    for name, seconds in results.timings.items():
        print(f"  {name}: {seconds:.2f} s")
    print("\nthresholds:")
    for name, required, observed, ok in results.thresholds():
        print(f"  {'ok  ' if ok else 'FAIL'} {name}: {observed} (required {required})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the arh benchmark suite.")
    parser.add_argument("--write", action="store_true", help=f"rewrite {RESULTS_PATH.name}")
    parser.add_argument("--digest", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.digest:  # used by the determinism check in a fresh process
        print(hashlib.sha256(report_bytes(load_cases(CASES_DIR, "generated"))).hexdigest())
        return 0
    started = time.perf_counter()
    try:
        results = collect()
    except CaseFileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print_summary(results)
    if args.write:
        write_results(render_results(results))
        print(f"\nwrote {RESULTS_PATH.relative_to(ROOT)}")
    print(f"\ntotal {time.perf_counter() - started:.2f} s")
    if not results.ok:
        print("BENCHMARK THRESHOLDS NOT MET", file=sys.stderr)
        return 1
    print("all benchmark thresholds met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
