"""`arh run` and `arh datasets` from the command line: the runs directory, its determinism, the
exit statuses, and `arh validate`, `arh stats` and `arh compare` on what it writes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from agent_reliability_harness.app import Status, worst
from agent_reliability_harness.app.run import _status
from agent_reliability_harness.cli import main
from agent_reliability_harness.harness.datasets import (
    dataset_sha256,
    file_sha256,
    manifest_for,
    open_dataset,
)
from agent_reliability_harness.harness.execute import INFRASTRUCTURE_FAILURE, TaskResult

from conftest import ROOT

TASKS = ROOT / "tests" / "data" / "tasks" / "golden-mini.jsonl"
REFERENCE = "agent_reliability_harness.harness.agents:auto"
BROKEN = str(ROOT / "examples" / "broken_agent.py") + ":broken"


def _run(out: Path, *extra: str, agent: str = REFERENCE, dataset: Path = TASKS) -> int:
    return main(["run", "--dataset", str(dataset), "--agent", agent, "-o", str(out), *extra])


def _files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*.json"))}


def _record(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "run.json").read_text(encoding="utf-8"))
    return data


def test_a_reference_run_writes_the_runs_directory(tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "ref"
    assert _run(out) == 0
    printed = capsys.readouterr().out
    assert "golden-mini.auto.seed0: 7 of 7 runs passed" in printed
    record = _record(out)
    schema = json.loads((ROOT / "schemas" / "run-record.schema.json").read_text("utf-8"))
    jsonschema.validate(record, schema)
    assert record["summary"] == {
        "runs": 7,
        "passed": 7,
        "agent_failure": 0,
        "evaluation_error": 0,
        "infrastructure_failure": 0,
        "pass_rate": 1.0,
    }
    assert record["dataset"]["sha256"] == dataset_sha256(
        [("golden-mini.jsonl", file_sha256(TASKS.read_bytes()))]
    )
    assert record["cost"]["actual_usd"] == 0.0
    # keys sorted, indented by 2, a newline at the end
    text = (out / "run.json").read_text("utf-8")
    assert text == json.dumps(record, indent=2, sort_keys=True) + "\n"
    names = sorted(p.name for p in (out / "traces").iterdir())
    assert names[0] == "mapreduce-stock-006.run1.json"
    assert len(names) == 7


def test_jobs_and_reruns_give_byte_identical_outputs(tmp_path: Path) -> None:
    assert _run(tmp_path / "one", "--repeats", "2") == 0
    assert _run(tmp_path / "two", "--repeats", "2", "--jobs", "2") == 0
    one, two = _files(tmp_path / "one"), _files(tmp_path / "two")
    assert len(one) == 2 + 14
    for name in one:
        if name != "run.json":
            assert one[name] == two[name], name
    records = [_record(tmp_path / d) for d in ("one", "two")]
    for record in records:
        del record["timings"]
    assert records[0] == records[1]


def test_the_report_is_what_arh_validate_writes_for_the_traces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    line = TASKS.read_text("utf-8").splitlines()[0]  # one task: one policy
    single = tmp_path / "one.jsonl"
    single.write_text(line + "\n", encoding="utf-8")
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps(json.loads(line)["policy"]), encoding="utf-8")
    assert _run(tmp_path / "out", dataset=single) == 0
    validated = tmp_path / "validated.json"
    monkeypatch.chdir(tmp_path / "out")  # source paths are relative to the runs directory
    status = main(
        [
            "validate",
            "--quiet",
            "--policy",
            str(policy),
            "--json-out",
            str(validated),
            "traces",
        ]
    )
    assert status == 0
    assert (tmp_path / "out" / "report.json").read_bytes() == validated.read_bytes()


def test_several_policies_make_a_per_task_report(tmp_path: Path) -> None:
    assert _run(tmp_path / "out") == 0
    report = json.loads((tmp_path / "out" / "report.json").read_text("utf-8"))
    assert report["policy"]["policy_id"] == "per-task"
    ids = [r["policy_id"] for r in report["reports"]]
    assert ids[:2] == ["refunds", "weather"]


def test_the_broken_agent_fails_and_compare_shows_the_flips(tmp_path: Path, capsys: Any) -> None:
    assert _run(tmp_path / "ref", "-q") == 0
    assert _run(tmp_path / "broken", "-q", agent=BROKEN) == 1
    record = _record(tmp_path / "broken")
    assert record["summary"]["agent_failure"] == 7
    assert record["tasks"][0]["detail"] == (
        "findings: ARH-ANS-003, ARH-ANS-009; blocked: ARH-CFM-001, ARH-SCH-005"
    )
    capsys.readouterr()
    status = main(
        [
            "compare",
            "--baseline",
            str(tmp_path / "ref" / "report.json"),
            "--candidate",
            str(tmp_path / "broken" / "report.json"),
        ]
    )
    printed = capsys.readouterr().out
    assert status == 1
    assert "answer pass->fail 7" in printed
    assert main(["stats", "--quiet", str(tmp_path / "broken" / "report.json")]) == 0


def test_ablating_a_feature_is_recorded_and_fails_its_tasks(tmp_path: Path) -> None:
    assert _run(tmp_path / "out", "-q", "--ablate", "verify,retry") == 1
    record = _record(tmp_path / "out")
    assert record["ablations"] == ["retry", "verify"]
    assert record["run_id"] == "golden-mini.auto.seed0.no-retry-verify"
    failed = [t["task_id"] for t in record["tasks"] if t["outcome"] != "passed"]
    assert failed == ["react-refund-001", "plan-weather-002"]


@pytest.mark.parametrize(
    "extra",
    [
        ["--agent", "no_such_module_xyz:agent"],
        ["--agent", "agent_reliability_harness.harness.agents:nope"],
        ["--agent", "missing-colon"],
        ["--agent", REFERENCE, "--ablate", "retries"],
    ],
)
def test_usage_errors_exit_2(tmp_path: Path, extra: list[str], capsys: Any) -> None:
    args = ["run", "--dataset", str(TASKS), "-o", str(tmp_path / "o"), *extra]
    assert main(args) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_a_bad_task_line_is_an_input_error_and_the_others_run(tmp_path: Path, capsys: Any) -> None:
    lines = TASKS.read_text("utf-8").splitlines()
    lines.insert(1, '{"schema_version": "1", "id": "x"}')
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert _run(tmp_path / "out", "-q", dataset=bad) == 3
    assert "bad.jsonl:2: missing required field 'pattern'" in capsys.readouterr().err
    assert _record(tmp_path / "out")["summary"]["passed"] == 7


def test_a_run_without_a_report_is_an_input_error_of_the_report() -> None:
    from agent_reliability_harness.app.run import render_report
    from agent_reliability_harness.harness.datasets import Dataset
    from agent_reliability_harness.model.report import RunReport

    result = TaskResult("t", 2, "t#run2", "", None, "evaluation_error", "bad", 0, 0, 0, 0.0)
    run = RunReport.from_dict(
        json.loads(render_report(Dataset("d", "1", "0" * 64, "d", ()), [result]))
    )
    assert [(e.source, e.message) for e in run.input_errors] == [("traces/t.run2.json", "bad")]


def test_a_crashed_worker_is_an_infrastructure_failure_of_the_report() -> None:
    """Its run has no trace report: an input error of kind infrastructure_failure, so that arh
    stats leaves it out of the pass rates as the machine's failure, not the evaluation's."""
    from agent_reliability_harness.app.run import render_report
    from agent_reliability_harness.harness.datasets import Dataset
    from agent_reliability_harness.model.report import RunReport

    crashed = TaskResult("t", 1, "t#run1", "", None, INFRASTRUCTURE_FAILURE, "died", 0, 0, 0, 0.0)
    bad = TaskResult("u", 1, "u#run1", "", None, "evaluation_error", "bad", 0, 0, 0, 0.0)
    data = json.loads(render_report(Dataset("d", "1", "0" * 64, "d", ()), [crashed, bad]))
    assert [e["kind"] for e in data["input_errors"]] == [
        "infrastructure_failure",
        "evaluation_error",
    ]
    assert RunReport.from_dict(data).summary().failures == {
        "agent_failure": 0,
        "evaluation_error": 1,
        "infrastructure_failure": 1,
    }


def test_a_timed_out_run_is_left_out_of_the_pass_rates(tmp_path: Path) -> None:
    """A task over its wall-time cap: its trace is written, but report.json lists it as an
    infrastructure failure (no verdict on half a run), arh stats leaves it out, and the run exits
    4. The agent sleeps past a cap of 0.2 s on the first task only."""
    agent = tmp_path / "slow.py"
    agent.write_text(
        "import time\n"
        "from agent_reliability_harness.harness.agents import auto\n"
        "def slow(task, tools):\n"
        "    if task.id == 'react-refund-001':\n"
        "        time.sleep(5)\n"
        "    return auto(task, tools)\n",
        encoding="utf-8",
    )
    lines = TASKS.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["caps"] = {"max_wall_seconds": 0.2}
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    assert _run(out, "-q", agent=f"{agent}:slow", dataset=tasks) == 4
    assert (out / "traces" / "react-refund-001.run1.json").is_file()
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert [r["trace_id"] for r in report["reports"]] == [
        json.loads(line)["id"] + "#run1" for line in lines[1:]
    ]
    [error] = report["input_errors"]
    assert error["kind"] == "infrastructure_failure"
    assert error["source"] == "traces/react-refund-001.run1.json"
    stats_out = tmp_path / "stats.json"
    assert main(["stats", "-q", str(out / "report.json"), "--json-out", str(stats_out)]) == 0
    stats = json.loads(stats_out.read_text(encoding="utf-8"))
    assert stats["excluded"] == {"runs": 1, "evaluation_error": 0, "infrastructure_failure": 1}


def test_an_infrastructure_failure_exits_4_over_3_and_1() -> None:
    def result(outcome: str) -> TaskResult:
        return TaskResult("t", 1, "t#run1", "", None, outcome, None, 0, 0, 0, 0.0)

    assert _status([result("agent_failure"), result(INFRASTRUCTURE_FAILURE)], 1) == 4
    assert _status([result("agent_failure"), result("evaluation_error")], 0) == 3
    assert _status([result("passed")], 0) == 0
    assert worst(Status.INFRASTRUCTURE, Status.USAGE) == Status.USAGE
    assert worst(Status.INPUT, Status.INFRASTRUCTURE) == Status.INFRASTRUCTURE


# -- datasets ---------------------------------------------------------------------------------


def _dataset(root: Path, name: str = "mini") -> Path:
    directory = root / name
    directory.mkdir(parents=True)
    data = TASKS.read_bytes()
    (directory / "tasks.jsonl").write_bytes(data)
    manifest = manifest_for(
        {"tasks.jsonl": data}, name=name, version="1", description="d", generator="hand", seed=0
    )
    (directory / "dataset.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    return directory


def test_datasets_list_and_verify(tmp_path: Path, capsys: Any) -> None:
    directory = _dataset(tmp_path)
    manifest = json.loads((directory / "dataset.json").read_text("utf-8"))
    assert manifest["cases"] == 7
    assert main(["datasets", "list", "--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out == f"mini  version 1  7 cases  sha256 {manifest['sha256']}\n"
    assert main(["datasets", "verify", "--root", str(tmp_path), "mini"]) == 0
    assert capsys.readouterr().out == f"ok mini: 7 cases, sha256 {manifest['sha256']}\n"
    dataset = open_dataset("mini", str(tmp_path))
    assert (dataset.name, dataset.version, len(dataset.tasks)) == ("mini", "1", 7)
    assert dataset.sha256 == manifest["sha256"]


def test_a_checkout_with_crlf_line_ends_still_verifies(tmp_path: Path) -> None:
    directory = _dataset(tmp_path)
    path = directory / "tasks.jsonl"
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    assert main(["datasets", "verify", str(directory)]) == 0


def test_a_changed_file_fails_verification_with_one_line_per_problem(
    tmp_path: Path, capsys: Any
) -> None:
    directory = _dataset(tmp_path)
    path = directory / "tasks.jsonl"
    lines = path.read_text("utf-8").splitlines()
    path.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")  # one case removed
    assert main(["datasets", "verify", "--json", str(directory)]) == 3
    (result,) = json.loads(capsys.readouterr().out)
    assert result["ok"] is False
    assert len(result["problems"]) == 2
    assert "sha256" in result["problems"][0]
    assert "6 cases, the manifest says 7" in result["problems"][1]


def test_run_finds_a_dataset_by_name_under_root(tmp_path: Path) -> None:
    _dataset(tmp_path / "datasets")
    out = tmp_path / "out"
    status = main(
        [
            "run",
            "--dataset",
            "mini",
            "--root",
            str(tmp_path / "datasets"),
            "--agent",
            REFERENCE,
            "-o",
            str(out),
            "-q",
        ]
    )
    assert status == 0
    assert _record(out)["dataset"]["version"] == "1"


def test_the_docs_dataset_holds_the_test_tasks_and_verifies() -> None:
    docs = ROOT / "docs" / "examples" / "running-agents" / "datasets" / "mini"
    assert (docs / "tasks.jsonl").read_bytes() == TASKS.read_bytes()
    assert main(["datasets", "verify", str(docs)]) == 0
