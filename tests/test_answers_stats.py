"""Answer outcomes in ``arh stats`` and ``arh compare``: pass rates with Wilson intervals, not
judged traces counted apart, flips; and nothing at all without answer checks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from agent_reliability_harness import Expectations, Policy, RunReport, Trace, validate_trace
from agent_reliability_harness.regression.answers import answer_outcome, answer_rates
from agent_reliability_harness.regression.compare import compare_reports
from agent_reliability_harness.regression.stat_report import stats_of
from agent_reliability_harness.render.json_report import render_json

ROOT = Path(__file__).resolve().parents[1]
POLICY = {
    "schema_version": "1.2",
    "policy_id": "p",
    "allow_unlisted_tools": True,
    "answers": {"checks": ["normalized"]},
}
EXPECT = Expectations.from_dict(
    {"expectations": [{"workflow": "w", "answer": "Paris"}, {"trace_id": "t2", "answer": "Lyon"}]}
)


def _trace(trace_id: str, text: str, workflow: str = "w") -> Trace:
    return Trace.from_dict(
        {
            "trace_id": trace_id,
            "agent_name": "a",
            "workflow": workflow,
            "steps": [{"step_id": "s1", "type": "model_response", "text": text}],
        }
    )


def _run(texts: dict[str, str], policy: dict[str, Any] = POLICY) -> RunReport:
    parsed = Policy.from_dict(policy)
    reports = tuple(
        validate_trace(_trace(i, text, "v" if i == "t4" else "w"), parsed, expectations=EXPECT)
        for i, text in texts.items()
    )
    # written and read back, as arh stats and arh compare read them
    return RunReport.from_dict(json.loads(render_json(RunReport(reports, policy_id="p"))))


BASE = {"t1": "Paris", "t2": "Lyon", "t3": "Nice", "t4": "x"}
CAND = {"t1": "paris", "t2": "Paris", "t3": "Lyon", "t4": "x"}


def test_outcomes_survive_the_json_report() -> None:
    run = _run(BASE)
    assert [answer_outcome(r) for r in run.reports] == [True, True, False, None]


def test_rates_by_hand() -> None:
    overall, v, w = answer_rates(_run(BASE).reports)
    assert (overall.workflow, overall.passed, overall.judged, overall.not_judged) == (None, 2, 3, 1)
    assert (v.workflow, v.judged, v.not_judged, v.rate) == ("v", 0, 1, None)
    assert (w.passed, w.judged) == (2, 3)
    # Wilson 95% for 2 of 3, by hand: centre (2/3 + z^2/6) / (1 + z^2/3), z = 1.959964
    low, high = w.interval
    assert low == pytest.approx(0.2077, abs=1e-4)
    assert high == pytest.approx(0.9385, abs=1e-4)


def test_stats_json_and_console() -> None:
    result = stats_of([("base.json", _run(BASE))], "verdict")
    data = result.to_dict()
    assert data["answers"][0] == {
        "workflow": None,
        "passed": 2,
        "failed": 1,
        "not_judged": 1,
        "pass_rate": 0.666667,
        "interval": [0.20766, 0.938508],
    }
    schema = json.loads((ROOT / "schemas" / "stats.schema.json").read_text(encoding="utf-8"))
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(data)) == []


def test_compare_flips() -> None:
    result = compare_reports(_run(BASE), _run(CAND))
    assert result.answers is not None
    assert result.answers.pass_to_fail == ("t2",)
    assert result.answers.fail_to_pass == ()
    up = compare_reports(_run(CAND), _run(BASE))
    assert up.answers is not None
    assert up.answers.fail_to_pass == ("t2",)
    assert (up.answers.baseline.passed, up.answers.candidate.passed) == (1, 2)


def test_nothing_without_answer_checks() -> None:
    plain = {k: v for k, v in POLICY.items() if k != "answers"}
    run = _run(BASE, plain)
    assert "answers" not in stats_of([("r.json", run)], "verdict").to_dict()
    assert compare_reports(run, run).answers is None


def test_cli_outputs(tmp_path: Path) -> None:
    for name, texts in (("base", BASE), ("cand", CAND)):
        (tmp_path / f"{name}.json").write_text(render_json(_run(texts)), encoding="utf-8")
    arh = [sys.executable, "-m", "agent_reliability_harness"]
    stats = subprocess.run(
        [*arh, "stats", str(tmp_path / "base.json")], capture_output=True, text=True, check=False
    )
    assert "ANSWERS  all traces: 2 of 3 passed 0.667 (95% CI 0.208\u20130.939)" in stats.stdout
    compare = subprocess.run(
        [
            *arh,
            "compare",
            "--baseline",
            str(tmp_path / "base.json"),
            "--candidate",
            str(tmp_path / "cand.json"),
            "--json-out",
            str(tmp_path / "cmp.json"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert "answer pass->fail 1: t2" in compare.stdout
    data = json.loads((tmp_path / "cmp.json").read_text(encoding="utf-8"))
    assert data["answers"]["pass_to_fail"] == ["t2"]
    schema = json.loads((ROOT / "schemas" / "compare.schema.json").read_text(encoding="utf-8"))
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(data)) == []


def test_bad_answers_entry_in_a_report() -> None:
    from agent_reliability_harness import InputError

    document = json.loads(render_json(_run(BASE)))
    document["reports"][0]["categories"]["answers"]["failed"] = 9
    with pytest.raises(InputError) as caught:
        RunReport.from_dict(document)
    assert caught.value.pointer == "/reports/0/categories/answers/failed"


def test_markdown_outputs() -> None:
    from agent_reliability_harness.regression.gate import evaluate_gate
    from agent_reliability_harness.render.compare import render_compare_markdown
    from agent_reliability_harness.render.stats import render_stats_markdown

    stats = render_stats_markdown(stats_of([("base.json", _run(BASE))], "verdict"))
    assert "| all traces | 2 | 1 | 1 | 0.667 (0.208\u20130.939) |" in stats
    assert "| `v` | 0 | 0 | 1 | - |" in stats
    result = compare_reports(_run(BASE), _run(CAND))
    compared = render_compare_markdown(result, evaluate_gate(result))
    assert "| Answer pass to fail | 1: `t2` |" in compared
    assert "| Answer pass rate | 0.667 (0.208\u20130.939) -> 0.333 (0.061\u20130.792) |" in compared
    plain = {k: v for k, v in POLICY.items() if k != "answers"}
    run = _run(BASE, plain)
    assert "Answer" not in render_stats_markdown(stats_of([("r.json", run)], "verdict"))
    same = compare_reports(run, run)
    assert "Answer" not in render_compare_markdown(same, evaluate_gate(same))
