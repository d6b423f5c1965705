"""The golden dataset through the real runtime: every reference agent passes every task of it,
the broken example agent fails every one, and `arh compare` of the two shows the flips.

The dataset's own checker (tools/generate_golden.py, tests/test_golden_dataset.py) simulates the
task format independently of the gateway; these tests run the gateway, the monitor and the
validator on it, so a disagreement between the two readings of the format shows up here."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from agent_reliability_harness.cli import main

from conftest import ROOT

GOLDEN = ROOT / "datasets" / "golden"
AGENTS = ("auto", "react", "plan_and_execute", "supervisor", "swarm", "map_reduce")
BROKEN = str(ROOT / "examples" / "broken_agent.py") + ":broken"


def _run(out: Path, agent: str) -> int:
    return main(["run", "--dataset", str(GOLDEN), "--agent", agent, "-o", str(out), "-q"])


def _tasks() -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for path in sorted(GOLDEN.glob("*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
    ]


def _asks_first(task: dict[str, Any]) -> bool:
    return any("confirm" in step for step in task["reference"]["steps"])


def _record(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "run.json").read_text(encoding="utf-8"))
    return data


@pytest.mark.parametrize("agent", AGENTS)
def test_each_reference_agent_passes_every_golden_task(tmp_path: Path, agent: str) -> None:
    status = _run(tmp_path, f"agent_reliability_harness.harness.agents:{agent}")
    record = _record(tmp_path)
    failed = [task["task_id"] for task in record["tasks"] if task["outcome"] != "passed"]
    assert failed == []
    assert status == 0
    assert record["summary"]["runs"] == 295
    assert record["dataset"]["name"] == "golden"


def test_the_broken_agent_fails_every_golden_task_and_compare_shows_it(
    tmp_path: Path, capsys: Any
) -> None:
    assert _run(tmp_path / "ref", "agent_reliability_harness.harness.agents:auto") == 0
    assert _run(tmp_path / "broken", BROKEN) == 1
    record = _record(tmp_path / "broken")
    assert Counter(task["outcome"] for task in record["tasks"]) == {"agent_failure": 295}
    details = [task["detail"] for task in record["tasks"]]
    # it answers "All done." without looking anything up: every task's must_mention fails
    assert all(detail.startswith("findings: ARH-ANS-009") for detail in details)
    # it never asks before a side effect: the policy blocks those calls, in every task whose
    # reference script asks the user first (141 of the 295: 137 of the first 280, and the four
    # lenient-tool tasks whose draft amount goes to a confirmed action in orders, travel, banking)
    unconfirmed = sum("ARH-CFM-001" in detail for detail in details)
    assert unconfirmed == sum(_asks_first(task) for task in _tasks()) == 141
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
    assert status == 1
    assert "answer pass->fail 295" in capsys.readouterr().out
