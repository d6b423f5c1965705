"""The experiments of docs/experiments.md (tools/experiments.py): the committed page still holds
(the reduced check), and its key claims hold when checked on their own, task by task.

The full experiment (every agent, seed and repeat) takes minutes and runs in `make experiments`;
here `--check --quick` reruns the `auto` agent's four ablation runs and the sampling agent's
seed-0 run and compares them with docs/experiments.json, and checks that the page is what that
file renders to."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from agent_reliability_harness.cli import main

from conftest import ROOT

GOLDEN = ROOT / "datasets" / "golden"
AUTO = "agent_reliability_harness.harness.agents:auto"
SAMPLING = str(ROOT / "examples" / "sampling_agent.py") + ":sampling"
DATA = ROOT / "docs" / "experiments.json"


def _task(task_id: str) -> dict[str, Any]:
    pattern = task_id.split("-", maxsplit=1)[0]
    for line in (GOLDEN / f"{pattern}.jsonl").read_text(encoding="utf-8").splitlines():
        task: dict[str, Any] = json.loads(line)
        if task["id"] == task_id:
            return task
    raise AssertionError(task_id)


def _write(path: Path, tasks: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks), encoding="utf-8")
    return path


def _run(tasks: Path, out: Path, *extra: str, agent: str = AUTO) -> dict[str, Any]:
    status = main(["run", "--dataset", str(tasks), "--agent", agent, "-o", str(out), "-q", *extra])
    assert status in (0, 1)
    record: dict[str, Any] = json.loads((out / "run.json").read_text(encoding="utf-8"))
    return record


def _outcomes(record: dict[str, Any]) -> list[str]:
    return [task["outcome"] for task in record["tasks"]]


def test_the_reduced_check_passes() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "experiments.py"), "--check", "--quick"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr


def test_a_transient_error_fails_without_retry_and_passes_with_it(tmp_path: Path) -> None:
    # react-failure-inducing-001: "the look-up fails transiently first (retry)"
    task = _task("react-failure-inducing-001")
    first = task["tools"][0]["responses"][0]
    assert first.get("transient") is True
    assert first.get("times") == 1
    tasks = _write(tmp_path / "t.jsonl", [task])
    assert _outcomes(_run(tasks, tmp_path / "full")) == ["passed"]
    ablated = _run(tasks, tmp_path / "no-retry", "--ablate", "retry")
    assert _outcomes(ablated) == ["agent_failure"]
    assert "ARH-FLW-001" in ablated["tasks"][0]["detail"]


def test_a_corrupt_first_response_fails_without_verification(tmp_path: Path) -> None:
    # react-failure-inducing-002: the first get_order output has no "total", which `returns`
    # requires; without verification the agent takes it as it is and cannot answer the total
    task = _task("react-failure-inducing-002")
    assert "total" not in task["tools"][0]["responses"][0]["output"]
    tasks = _write(tmp_path / "t.jsonl", [task])
    assert _outcomes(_run(tasks, tmp_path / "full")) == ["passed"]
    ablated = _run(tasks, tmp_path / "no-verify", "--ablate", "verify")
    assert _outcomes(ablated) == ["agent_failure"]
    assert "ARH-ANS-009" in ablated["tasks"][0]["detail"]


def _tool_calls(out: Path) -> list[dict[str, Any]]:
    trace = json.loads((out / "traces" / "t.run1.json").read_text(encoding="utf-8"))
    return [step for step in trace["steps"] if step["type"] == "tool_call"]


def test_a_draft_argument_goes_through_without_argument_validation(tmp_path: Path) -> None:
    # react-failure-inducing-003 sends "#BK-43501" first. Its policy's contract refuses it
    # before argument validation would (ARH-SCH-008, so the task does not flip without argument
    # validation); with the contract's pattern taken out, only the tool's `parameters` schema
    # refuses the draft.
    task = _task("react-failure-inducing-003")
    task["id"] = "t"
    task["policy"]["allowed_tools"]["get_booking"]["required_arguments"]["booking_ref"] = "str"
    tasks = _write(tmp_path / "t.jsonl", [task])
    _run(tasks, tmp_path / "full")
    refused = [c for c in _tool_calls(tmp_path / "full") if c["arguments"]["booking_ref"][0] == "#"]
    assert len(refused) == 1
    assert refused[0]["metadata"]["gateway"] == "refused_arguments"
    assert "output" not in refused[0]
    _run(tasks, tmp_path / "ablated", "--ablate", "validate_arguments")
    sent = [c for c in _tool_calls(tmp_path / "ablated") if c["arguments"]["booking_ref"][0] == "#"]
    # the draft reached the simulated tool, whose catch-all fixture answered it
    assert len(sent) >= 1
    assert all((c.get("metadata") or {}).get("gateway") != "refused_arguments" for c in sent)


def test_a_lenient_tool_gets_the_wrong_answer_without_argument_validation(tmp_path: Path) -> None:
    # react-failure-inducing-010 looks ticket TCK-45688 up with the draft id "TCK 45688" first,
    # which its policy accepts ("str") and the tool's `parameters` refuse (the pattern); the
    # lenient tool answers that draft with another ticket, TCK-45686 (the fixture, read here)
    task = _task("react-failure-inducing-010")
    task["id"] = "t"
    assert task["reference"]["steps"][0]["draft"] == {"arguments": {"ticket_id": "TCK 45688"}}
    assert task["policy"]["allowed_tools"]["get_ticket"]["required_arguments"] == {
        "ticket_id": {"type": "str"}
    }
    lenient = task["tools"][0]["responses"][0]
    assert lenient["when"] == {"ticket_id": "TCK 45688"}
    assert lenient["output"]["id"] == "TCK-45686"
    tasks = _write(tmp_path / "t.jsonl", [task])
    full = _run(tasks, tmp_path / "full")
    assert _outcomes(full) == ["passed"]
    assert full["tasks"][0]["detail"] in (None, "")
    calls = _tool_calls(tmp_path / "full")
    assert [c["arguments"]["ticket_id"] for c in calls] == ["TCK 45688", "TCK-45688"]
    assert calls[0]["error"].startswith("invalid arguments: ")
    assert calls[0]["metadata"]["gateway"] == "refused_arguments"
    ablated = _run(tasks, tmp_path / "ablated", "--ablate", "validate_arguments")
    assert _outcomes(ablated) == ["agent_failure"]
    assert "ARH-ANS-009" in ablated["tasks"][0]["detail"]
    calls = _tool_calls(tmp_path / "ablated")
    assert [c["arguments"]["ticket_id"] for c in calls] == ["TCK 45688"]
    assert calls[0]["output"]["id"] == "TCK-45686"


def test_the_committed_ablation_flips_are_the_tasks_made_for_each_feature() -> None:
    # the dataset's own descriptions say which feature each failure_inducing task is for
    by_feature: dict[str, set[str]] = {
        "retry": set(),
        "verification": set(),
        "argument validation: lenient tool": set(),
    }
    for path in GOLDEN.glob("*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            task = json.loads(line)
            for feature, ids in by_feature.items():
                if task["description"].endswith(f"({feature})"):
                    ids.add(task["id"])
    data = json.loads(DATA.read_text(encoding="utf-8"))
    for agent, rows in data["ablations"].items():
        assert rows["complete"]["pass_rate_pct"] == 100.0, agent
        # a corrupt result is retried like a transient error: without retry both kinds fail
        retry = set(rows["retry"]["flips"]["tasks"])
        assert retry == by_feature["retry"] | by_feature["verification"], agent
        assert set(rows["verify"]["flips"]["tasks"]) <= by_feature["verification"], agent
        # the drafts the policy refuses never reach argument validation; those only the tools'
        # parameters refuse reach a lenient tool without it, and only those tasks flip
        lenient = by_feature["argument validation: lenient tool"]
        assert len(lenient) == 15
        assert set(rows["validate_arguments"]["flips"]["tasks"]) == lenient, agent


def _golden_subset(tmp_path: Path) -> Path:
    lines = (GOLDEN / "react.jsonl").read_text(encoding="utf-8").splitlines()
    return _write(tmp_path / "react.jsonl", [json.loads(line) for line in lines])


def _files(out: Path) -> dict[str, bytes]:
    files = {p.name: p.read_bytes() for p in (out / "traces").iterdir()}
    files["report.json"] = (out / "report.json").read_bytes()
    return files


def test_the_sampling_agent_gives_the_same_bytes_for_the_same_seed(tmp_path: Path) -> None:
    tasks = _golden_subset(tmp_path)
    _run(tasks, tmp_path / "a", "--seed", "3", "--repeats", "2", agent=SAMPLING)
    _run(tasks, tmp_path / "b", "--seed", "3", "--repeats", "2", agent=SAMPLING)
    first, second = _files(tmp_path / "a"), _files(tmp_path / "b")
    assert len(first) == 59 * 2 + 1
    assert first == second


def test_the_sampling_agent_depends_on_the_seed(tmp_path: Path) -> None:
    tasks = _golden_subset(tmp_path)
    records = [
        _run(tasks, tmp_path / f"s{seed}", "--seed", str(seed), agent=SAMPLING) for seed in (0, 1)
    ]
    outcomes = [_outcomes(record) for record in records]
    assert outcomes[0] != outcomes[1]
    details = [t["detail"] or "" for record in records for t in record["tasks"]]
    # its mistakes show up as the rules the harness reports: a skipped confirmation is blocked
    assert any("ARH-CFM-001" in detail for detail in details)
    # and the reference agent, given the same seeds, does not change at all
    for seed in (0, 1):
        assert set(_outcomes(_run(tasks, tmp_path / f"r{seed}", "--seed", str(seed)))) == {"passed"}
