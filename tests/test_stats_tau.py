"""The tau-bench table of docs/statistics.md: the script that writes it runs, the committed table
is what it writes, and the reward row agrees with pass^k computed here from the raw rewards."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections import Counter
from fractions import Fraction
from functools import cache
from pathlib import Path

from conftest import REAL_TRACES, ROOT, SHARED, load_script, require_shared

TAU = REAL_TRACES / "tau-bench" / "historical_trajectories" / "gpt-4o-airline.json"
SCRIPT = ROOT / "tools" / "tau_bench_stats.py"


@cache
def _script(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, ARH_SHARED_DIR=str(SHARED))
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=300,
    )


def test_the_docs_hold_the_scripts_table() -> None:
    require_shared(TAU)
    printed = _script()
    assert printed.returncode == 0, printed.stderr
    doc = (ROOT / "docs" / "statistics.md").read_text(encoding="utf-8")
    assert printed.stdout in doc
    checked = _script("--check")
    assert checked.returncode == 0, checked.stderr


def test_the_reward_row_matches_pass_hat_k_of_the_raw_rewards() -> None:
    records = json.loads(require_shared(TAU).read_text(encoding="utf-8"))
    # tau-bench: a trial succeeds when its reward is 1; pass^k = mean over tasks of
    # C(c, k) / C(n, k), with n = 4 trials per task
    trials = Counter(r["task_id"] for r in records)
    successes = Counter(r["task_id"] for r in records if r["reward"] == 1)
    assert set(trials.values()) == {4}
    expected = [
        f"{float(sum(Fraction(math.comb(successes[t], k), math.comb(4, k)) for t in trials) / len(trials)):.3f}"  # noqa: E501
        for k in range(1, 5)
    ]
    # the data set's README: 84 successes in 200 records
    assert sum(successes.values()) == 84
    assert expected[0] == "0.420"
    rows = {
        line.split(" | ")[0]: line.split(" | ")
        for line in _script().stdout.splitlines()
        if line.startswith(("| the", "| reward"))
    }
    label = rows["| the reward alone (`--outcome label`)"]
    assert label[1] == "84 of 200"
    assert [label[2].split(" ")[0], label[3], label[4], label[5]] == expected
    # classes by hand: tasks with 4 of 4, some, and 0 of 4 rewarded trials
    stable = sum(1 for t in trials if successes[t] == 4)
    never = sum(1 for t in trials if successes[t] == 0)
    assert label[7] == f"{stable} / {len(trials) - stable - never} / {never} |"
    # a run succeeds by both only if it succeeds by each: never more successes than either
    verdict = int(rows["| the policy verdict alone (`--outcome verdict`)"][1].split(" ")[0])
    both = int(rows["| reward and verdict (`--outcome both`)"][1].split(" ")[0])
    assert both <= min(84, verdict)


def test_the_prose_under_the_table_states_its_numbers(tmp_path: Path) -> None:
    # "only 10 of the 50 tasks are solved in all four trials, and more than half of them are
    # flaky"; "the five runs it fails all have reward 0: four ... (ARH-FLW-002), one ...
    # (ARH-FLW-003)"; "Without tool_failures ... one rewarded run (task 13, trial 2) ..."
    records = json.loads(require_shared(TAU).read_text(encoding="utf-8"))
    doc = (ROOT / "docs" / "statistics.md").read_text(encoding="utf-8")
    trials = Counter(r["task_id"] for r in records)
    successes = Counter(r["task_id"] for r in records if r["reward"] == 1)
    stable = sum(1 for t in trials if successes[t] == 4)
    flaky = sum(1 for t in trials if 0 < successes[t] < 4)
    assert (stable, len(trials)) == (10, 50)
    assert "only 10 of\nthe 50 tasks are solved in all four trials" in doc
    assert flaky > len(trials) / 2
    assert "more than half of them are flaky" in doc
    tool = load_script("arh_tau_bench_stats", SCRIPT)
    policy = json.loads(tool.POLICY.read_text(encoding="utf-8"))

    def failing(document: dict[str, object], name: str) -> list[tuple[str, float, list[str]]]:
        """(trace id, reward, error rule IDs) of the runs the policy fails, from the report the
        documented command writes."""
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(document), encoding="utf-8")
        report = tmp_path / f"{name}-report.json"
        assert tool._arh(
            "validate", "--policy", str(path), str(TAU), *tool.VALIDATE,
            "--json-out", str(report), "--quiet",
        ) in (0, 1)  # fmt: skip
        reports = json.loads(report.read_text(encoding="utf-8"))["reports"]
        return [
            (
                r["trace_id"],
                r["outcome"],
                sorted({f["rule_id"] for f in r["findings"] if f["severity"] == "error"}),
            )
            for r in reports
            if not r["passed"]
        ]

    now = failing(policy, "policy")
    assert len(now) == 5
    assert "the five runs it fails all have reward 0" in doc
    assert {outcome for _, outcome, _ in now} == {0}
    assert sorted(rules for _, _, rules in now) == [["ARH-FLW-002"]] * 4 + [["ARH-FLW-003"]]
    assert "four repeated an identical call more often" in doc
    assert "one booked the same flights again" in doc
    del policy["tool_failures"]
    before = failing(policy, "before")
    assert [(t, rules) for t, outcome, rules in before if outcome == 1] == [
        ("13-2", ["ARH-FLW-003"])
    ]
    assert "one rewarded run (task 13, trial 2)" in doc
    assert "(ARH-FLW-003)" in doc
