"""The benchmark suite: cases in sync with the generator, results file in sync with the runner,
every case valid against the JSON Schemas, coverage minima, and the runner's checks able to fail.

Coverage is counted here from the case files themselves, independently of
benchmarks/accuracy/run.py.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import sys
from collections import Counter
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from agent_reliability_harness.model.trace import Step, Trace
from agent_reliability_harness.rules import RULES

from conftest import ROOT, load_json, load_script, schema_validator

BENCH = ROOT / "benchmarks" / "accuracy"
CASES = BENCH / "cases"
CATEGORIES = ("normal", "difficult", "ambiguous", "edge", "adversarial", "failure-inducing")


def _load(name: str, path: Path) -> ModuleType:
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))  # run.py imports generate and transcripts by name
    return load_script(name, path)


@cache
def bench() -> ModuleType:
    return _load("arh_benchmark_run", BENCH / "run.py")


@cache
def generator() -> ModuleType:
    bench()
    return sys.modules["generate"]


@cache
def transcripts() -> ModuleType:
    bench()
    return sys.modules["transcripts"]


@cache
def fresh_generation() -> dict[str, str]:
    return generator().render_all()  # type: ignore[no-any-return]


@cache
def case_files() -> dict[str, dict[str, Any]]:
    return {p.name: load_json(p) for p in sorted(CASES.glob("*.json"))}


@pytest.fixture(scope="module")
def results() -> Any:
    """One full run of the suite (without the ../shared reference cases), shared by the tests."""
    return bench().collect(reference=False)


# ---- generator and results file in sync ------------------------------------------------------


def test_committed_cases_equal_a_fresh_generation() -> None:
    fresh = fresh_generation()
    on_disk = {p.name: p.read_bytes() for p in CASES.glob("*.json")}
    assert sorted(on_disk) == sorted(fresh), "run python benchmarks/accuracy/generate.py"
    changed = [name for name, text in fresh.items() if on_disk[name] != text.encode("utf-8")]
    assert not changed, f"out of date (run python benchmarks/accuracy/generate.py): {changed[:5]}"
    assert not [p for p in CASES.iterdir() if p.suffix != ".json"]


def test_generation_is_repeatable_in_process() -> None:
    assert generator().render_all() == fresh_generation()


def test_committed_results_file_is_what_the_runner_writes(results: Any) -> None:
    committed = (ROOT / "BENCHMARK-RESULTS.md").read_text(encoding="utf-8")
    own, _perf = bench().split_perf(committed)
    assert own == bench().render_results(results), "run python benchmarks/accuracy/run.py --write"


def test_all_thresholds_hold(results: Any) -> None:
    failing = [row for row in results.thresholds() if not row[3]]
    assert not failing
    assert results.ok


def test_results_file_has_no_timings_or_paths(results: Any) -> None:
    text = bench().render_results(results)
    assert " s\n" not in text
    assert " ms" not in text
    assert str(ROOT) not in text
    assert "shared" not in text
    assert f"agent-reliability-harness {bench().__version__}" in text
    assert "`python benchmarks/accuracy/run.py --write`" in text


# ---- the cases themselves --------------------------------------------------------------------


CASE_SCHEMA = {
    "type": "object",
    "required": ["case_id", "category", "description", "mutation", "policy", "trace", "expected"],
    "additionalProperties": False,
    "properties": {
        "case_id": {"type": "string", "pattern": "^[a-z0-9-]+$"},
        "category": {"enum": list(CATEGORIES)},
        "description": {"type": "string", "minLength": 20},
        "mutation": {"type": "string", "minLength": 4},
        "policy": {"type": "object"},
        "trace": {"type": "object"},
        "expected": {
            "type": "object",
            "required": ["passed", "findings"],
            "additionalProperties": False,
            "properties": {
                "passed": {"type": "boolean"},
                "findings": {
                    "type": "array",
                    "items": {
                        "type": "array",
                        "prefixItems": [
                            {"enum": ["error", "warning"]},
                            {"enum": sorted(RULES)},
                            {"type": ["string", "null"]},
                        ],
                        "minItems": 3,
                        "maxItems": 3,
                    },
                },
            },
        },
    },
}


def test_every_case_validates_against_the_schemas() -> None:
    envelope = Draft202012Validator(CASE_SCHEMA)
    problems = []
    policies: dict[str, str] = {}  # the distinct policies (a few dozen) are validated once each
    for name, case in case_files().items():
        policies.setdefault(json.dumps(case["policy"]), name)
        for kind, document in (("case", case), ("trace", case["trace"])):
            validator = envelope if kind == "case" else schema_validator(kind)
            problems += [f"{name} {kind}: {e.message}" for e in validator.iter_errors(document)]
    for text, name in policies.items():
        errors = schema_validator("policy").iter_errors(json.loads(text))
        problems += [f"{name} policy: {e.message}" for e in errors]
    assert len(policies) > 20
    assert not problems, problems[:10]


def test_cases_are_self_consistent() -> None:
    trace_ids = set()
    for name, case in case_files().items():
        assert name == f"{case['case_id']}.json"
        trace = case["trace"]
        assert trace["trace_id"] == f"bench-{case['case_id']}"
        trace_ids.add(trace["trace_id"])
        step_ids = {s["step_id"] for s in trace["steps"]}
        findings = case["expected"]["findings"]
        for _severity, _rule, step_id in findings:
            assert step_id is None or step_id in step_ids, (name, step_id)
        has_error = any(f[0] == "error" for f in findings)
        # An error always fails a trace; only a score below 70 can fail one without an error.
        assert not (has_error and case["expected"]["passed"]), name
        Trace.from_dict(trace)  # every trace parses (policies are parsed by the runner)
    assert len(trace_ids) == len(case_files())


def test_category_minima() -> None:
    counts = Counter(case["category"] for case in case_files().values())
    assert set(counts) == set(CATEGORIES)
    assert sum(counts.values()) >= 250
    assert min(counts.values()) >= 30, counts


def test_every_emitted_rule_has_three_failure_inducing_cases() -> None:
    per_rule: Counter[str] = Counter()
    workflows: dict[str, set[str]] = {}
    for case in case_files().values():
        if case["category"] != "failure-inducing":
            continue
        rules = {f[1] for f in case["expected"]["findings"]}
        per_rule.update(rules)
        for rule in rules:
            workflows.setdefault(rule, set()).add(case["trace"]["workflow"])
    # the judge's rules need a rubric, not a policy: tests/rules and tests/test_judge.py
    emitted = [r for r, rule in RULES.items() if rule.emitted and rule.category != "judge"]
    assert len(emitted) >= 30
    assert {r: per_rule[r] for r in emitted if per_rule[r] < 3} == {}
    # ... and each in at least three different workflows
    assert {r: sorted(workflows.get(r, ())) for r in emitted if len(workflows.get(r, ())) < 3} == {}


def test_cases_use_several_workflows_and_normal_cases_are_clean() -> None:
    workflows = Counter(case["trace"]["workflow"] for case in case_files().values())
    assert len(workflows) >= 6
    for name, case in case_files().items():
        if case["category"] == "normal":
            assert case["expected"] == {"passed": True, "findings": []}, name


def test_the_long_difficult_runs_are_as_the_methodology_says() -> None:
    # BENCHMARK-METHODOLOGY.md: "Violations hidden in runs of 27 to 36 steps"
    lengths = {
        len(case["trace"]["steps"])
        for case in case_files().values()
        if case["category"] == "difficult" and len(case["trace"]["steps"]) > 20
    }
    assert (min(lengths), max(lengths)) == (27, 36)
    text = (ROOT / "BENCHMARK-METHODOLOGY.md").read_text(encoding="utf-8")
    assert "Violations hidden in runs of 27 to 36 steps" in text


# ---- the runner's checks can fail ------------------------------------------------------------


def _case(case_id: str) -> Any:
    data = case_files()[f"{case_id}.json"]
    run = bench()
    return run.Case(
        data["case_id"],
        data["category"],
        data["description"],
        data["mutation"],
        data["policy"],
        data["trace"],
        data["expected"]["passed"],
        tuple(tuple(f) for f in data["expected"]["findings"]),
        "generated",
    )


def test_a_wrong_expectation_is_a_false_negative_or_positive() -> None:
    run = bench()
    case = _case("failure-inducing-arh-sch-007-1-billing")
    assert run.detect(case).correct
    (finding,) = case.findings
    missing = dataclasses.replace(case, findings=())
    extra = dataclasses.replace(case, findings=(finding, ("error", "ARH-SEQ-001", None)))
    wrong_verdict = dataclasses.replace(case, passed=True)
    assert run.detect(missing).pair_counts() == (0, 1, 0)
    assert run.detect(extra).pair_counts() == (1, 0, 1)
    for bad in (missing, extra, wrong_verdict):
        assert not run.detect(bad).correct


def test_thresholds_fail_on_one_wrong_case(results: Any) -> None:
    run = bench()
    outcomes = list(results.generated.outcomes)
    first = outcomes[0]
    outcomes[0] = run.detect(dataclasses.replace(first.case, passed=not first.case.passed))
    broken = dataclasses.replace(
        results, generated=dataclasses.replace(results.generated, outcomes=outcomes)
    )
    assert not broken.ok
    assert [row[0] for row in broken.thresholds() if not row[3]] == ["generated: cases correct"]


def test_a_key_order_dependent_validator_breaks_a_relation(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A validator whose findings depend on argument order must be caught by the relation."""
    run = bench()
    case = _case("normal-clean-run-billing")
    outcome = run.detect(case)
    real = run.validate

    def order_sensitive(policy: dict[str, Any], trace: dict[str, Any]) -> Any:
        report = real(policy, trace)
        payment = next(s for s in trace["steps"] if s.get("tool_name") == "schedule_payment")
        if next(iter(payment["arguments"])) != "invoice_id":
            return dataclasses.replace(report, passed=not report.passed)
        return report

    monkeypatch.setattr(run, "validate", order_sensitive)
    relations = {r.name: r for r in run.metamorphic([outcome], tmp_path)}
    assert relations["argument key order"].failures  # reversed keys changed the "verdict"
    assert not relations["policy key order"].failures


def test_step_id_renaming_is_consistent_and_reverses_order() -> None:
    run = bench()
    trace = {"steps": [{"step_id": "b"}, {"step_id": "a"}, {"step_id": "b"}, {"step_id": "c"}]}
    mapping = run._rename_map(trace)
    assert list(mapping) == ["b", "a", "c"]
    assert len(set(mapping.values())) == 3
    assert sorted(mapping.values(), reverse=True) == list(mapping.values())


def test_reverse_keys_keeps_list_order() -> None:
    run = bench()
    value = {"a": 1, "b": {"x": [3, {"p": 1, "q": 2}], "y": 2}}
    reversed_value = run._reverse_keys(value)
    assert reversed_value == value
    assert list(reversed_value) == ["b", "a"]
    assert list(reversed_value["b"]) == ["y", "x"]
    assert reversed_value["b"]["x"][0] == 3
    assert list(reversed_value["b"]["x"][1]) == ["q", "p"]


# ---- transcripts and adapter equivalence -----------------------------------------------------

FAILED_CALL_TRACE = {
    "schema_version": "1",
    "trace_id": "t-1",
    "agent_name": "a",
    "workflow": "w",
    "steps": [
        {
            "step_id": "c1",
            "type": "tool_call",
            "tool_name": "lookup",
            "arguments": {"id": 7},
            "status": "error",
            "error": "timed out",
            "latency_ms": 12,
        },
        {"step_id": "c2", "type": "tool_call", "tool_name": "lookup", "arguments": {"id": 7},
         "output": {"ok": True}},
        {"step_id": "m1", "type": "model_response", "text": "done", "requires_grounding": True,
         "citations": [{"source": "x"}]},
    ],
}  # fmt: skip


def test_openai_rendering_by_hand() -> None:
    projected, document, lost = transcripts().to_openai(FAILED_CALL_TRACE)
    assert set(lost) >= {"step.latency_ms", "step.status", "structured tool output"}
    assert {"step.requires_grounding", "step.citations"} <= set(lost)
    messages = document["messages"]
    assert [m["role"] for m in messages] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    # the transcript opens with the user's request, and the projection records it as a user turn
    assert messages[0] == {"role": "user", "content": "Please run the w workflow for me."}
    assert projected["steps"][0] == {
        "step_id": "task",
        "type": "user_message",
        "text": "Please run the w workflow for me.",
    }
    assert messages[1]["tool_calls"][0]["function"] == {"name": "lookup", "arguments": '{"id": 7}'}
    # chat tool messages have no error flag: the error text becomes the result
    assert messages[2] == {"role": "tool", "tool_call_id": "c1", "content": "timed out"}
    assert messages[4]["content"] == '{"ok": true}'
    assert messages[5] == {"role": "assistant", "content": "done"}
    assert projected["steps"][1] == {
        "step_id": "c1",
        "type": "tool_call",
        "tool_name": "lookup",
        "arguments": {"id": 7},
        "output": "timed out",
    }


def test_anthropic_rendering_by_hand() -> None:
    projected, document, lost = transcripts().to_anthropic(FAILED_CALL_TRACE)
    assert "step.status" not in lost
    messages = document["messages"]
    use = messages[1]["content"][0]
    assert use == {"type": "tool_use", "id": "c1", "name": "lookup", "input": {"id": 7}}
    assert messages[2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "c1",
        "content": "timed out",
        "is_error": True,
    }
    assert messages[-1]["content"] == [{"type": "text", "text": "done"}]
    assert messages[0] == {
        "role": "user",
        "content": [{"type": "text", "text": "Please run the w workflow for me."}],
    }
    assert projected["steps"][1]["status"] == "error"
    assert projected["steps"][1]["error"] == "timed out"


def _read_openai(document: dict[str, Any]) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    by_id: dict[str, dict[str, Any]] = {}
    for message in document["messages"]:
        if message["role"] == "assistant" and message.get("tool_calls"):
            for call in message["tool_calls"]:
                step = {
                    "step_id": call["id"],
                    "type": "tool_call",
                    "tool_name": call["function"]["name"],
                    "arguments": json.loads(call["function"]["arguments"]),
                }
                by_id[call["id"]] = step
                steps.append(step)
        elif message["role"] == "assistant":
            steps.append(
                {
                    "step_id": f"response-{len(steps)}",
                    "type": "model_response",
                    "text": message["content"],
                }
            )
        elif message["role"] == "tool":
            by_id[message["tool_call_id"]]["output"] = message["content"]
        elif message["role"] == "user":
            steps.append(
                {
                    "step_id": f"user-{len(steps)}",
                    "type": "user_message",
                    "text": message["content"],
                }
            )
    return steps


def _read_anthropic(document: dict[str, Any], keep_errors: bool = True) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    by_id: dict[str, dict[str, Any]] = {}
    for message in document["messages"]:
        user = message["role"] == "user"
        if isinstance(message["content"], str):
            if user:
                steps.append(
                    {"step_id": f"user-{len(steps)}", "type": "user_message",
                     "text": message["content"]}
                )  # fmt: skip
            continue
        for block in message["content"]:
            if block["type"] == "tool_use":
                step = {"step_id": block["id"], "type": "tool_call", "tool_name": block["name"],
                        "arguments": block["input"]}  # fmt: skip
                by_id[block["id"]] = step
                steps.append(step)
            elif block["type"] == "text":
                steps.append(
                    {
                        "step_id": f"{'user' if user else 'response'}-{len(steps)}",
                        "type": "user_message" if user else "model_response",
                        "text": block["text"],
                    }
                )
            elif block["type"] == "tool_result":
                target = by_id[block["tool_use_id"]]
                if block.get("is_error") and keep_errors:
                    target["status"], target["error"] = "error", block["content"]
                elif not block.get("is_error"):
                    target["output"] = block["content"]
    return steps


def _reader(keep_errors: bool = True) -> Any:
    """A small independent reader of the two transcript forms (the inverse of the renderers)."""

    def read(fmt: str, document: dict[str, Any]) -> Trace:
        steps = (
            _read_openai(document)
            if fmt == "openai-chat"
            else _read_anthropic(document, keep_errors)
        )
        return Trace(
            document["trace_id"],
            document["agent_name"],
            document["workflow"],
            tuple(Step.from_dict(s) for s in steps),
        )

    return read


def _hard_cases() -> Iterator[Any]:
    """The failure-inducing and adversarial cases: every rule, failed calls, odd content."""
    for name, data in case_files().items():
        if data["category"] in ("failure-inducing", "adversarial"):
            yield _case(name.removesuffix(".json"))


def test_equivalence_passes_with_a_faithful_reader() -> None:
    cases = list(_hard_cases())
    result = bench().adapter_equivalence(cases, _reader())
    assert not result.skipped_reason
    assert result.failures == []
    assert result.checks == {"openai-chat": len(cases), "anthropic-messages": len(cases)}


def test_equivalence_catches_a_reader_that_drops_error_status() -> None:
    result = bench().adapter_equivalence(list(_hard_cases()), _reader(keep_errors=False))
    failing = {f.split(" ")[0] for f in result.failures}
    assert failing, "dropping is_error must change some verdict (ARH-FLW-001 cases)"
    assert all("[anthropic-messages]" in f for f in result.failures)
    assert "failure-inducing-arh-flw-001-1-warehouse" in failing


def test_equivalence_is_skipped_not_failed_without_adapters() -> None:
    run = bench()
    result = run.adapter_equivalence(list(_hard_cases())[:3], None, "no adapters here")
    assert result.skipped_reason == "no adapters here"
    assert not result.failures
    assert not result.checks


def test_skipped_equivalence_is_met_in_the_thresholds(results: Any) -> None:
    skipped = dataclasses.replace(
        results, equivalence=bench().Equivalence(skipped_reason="adapters not available")
    )
    rows = {row[0]: row for row in skipped.thresholds()}
    assert rows["adapter equivalence"][2:] == ("skipped", True)
    assert "Skipped: adapters not available." in bench().render_results(skipped)


# ---- the performance section of the results file is kept --------------------------------------


def test_write_keeps_the_performance_section(tmp_path: Path) -> None:
    run = bench()
    path = tmp_path / "BENCHMARK-RESULTS.md"
    perf = f"{run.PERF_START}\n## Performance\n\n| a | b |\n{run.PERF_END}"
    path.write_text(f"# old results\n\n{perf}\n", encoding="utf-8")
    run.write_results("# new results\n", path)
    text = path.read_text(encoding="utf-8")
    assert text == f"# new results\n\n{perf}\n"
    assert run.split_perf(text) == ("# new results\n", perf)
    run.write_results("# newer\n", tmp_path / "fresh.md")
    assert (tmp_path / "fresh.md").read_text(encoding="utf-8") == "# newer\n"


def test_regression_scenarios_cover_every_kind(results: Any) -> None:
    counts = results.scenarios.counts
    assert counts["identical run passes the gate"] == 6
    for kind in ("duplicate side effect", "wrong ordering", "secret exposure"):
        assert counts[f"{kind} fails the gate"] >= 1
    assert counts["fix passes the gate"] >= 3
    assert not results.scenarios.failures


def test_gate_scenario_fails_when_the_candidate_is_clean() -> None:
    """Feeding a clean run as the 'failing' candidate must be reported, not silently pass."""
    run = bench()
    clean = _case("normal-clean-run-helpdesk")
    leak = _case("failure-inducing-arh-saf-001-2-helpdesk")
    fake = dataclasses.replace(leak, trace=copy.deepcopy(clean.trace))
    scenarios = run.regression_scenarios([clean, fake])
    assert scenarios.failed["secret exposure fails the gate"] == 1
