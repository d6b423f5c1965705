"""arh's pass^k table for the tau-bench airline runs (4 trials of 50 tasks), for docs/statistics.md.

It runs the commands that docs/statistics.md shows, in-process: `arh validate` of the recorded
trajectories with the sample policy samples/policies/tau-airline-basic.json, recording each run's
task id and reward, then `arh stats` three times, counting a run as a success by its reward
alone, by the policy verdict alone, and by both.

    python tools/tau_bench_stats.py           # print the table
    python tools/tau_bench_stats.py --write   # put it into docs/statistics.md
    python tools/tau_bench_stats.py --check   # exit 1 when docs/statistics.md differs

The data lives in ../shared (or $ARH_SHARED_DIR): data/real-traces/tau-bench/.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("ARH_SHARED_DIR", ROOT.parent / "shared"))
TAU = "data/real-traces/tau-bench/historical_trajectories/gpt-4o-airline.json"
POLICY = ROOT / "samples" / "policies" / "tau-airline-basic.json"
DOC = ROOT / "docs" / "statistics.md"
START = "<!-- tau-bench table: written by tools/tau_bench_stats.py -->"
END = "<!-- end of the tau-bench table -->"
VALIDATE = [
    "--messages-at", "/traj", "--trace-id-at", "/task_id", "--trace-id-at", "/trial",
    "--task-key", "/metadata/record/task_id", "--outcome-at", "/metadata/record/reward",
]  # fmt: skip
ROWS = (
    ("label", "the reward alone"),
    ("verdict", "the policy verdict alone"),
    ("both", "reward and verdict"),
)


def _arh(*argv: str) -> int:
    sys.path.insert(0, str(ROOT / "src"))
    from agent_reliability_harness.cli import main

    quiet = io.StringIO()
    with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
        return main(list(argv))


def statistics(data: Path) -> dict[str, Any]:
    """The `arh stats` JSON (its `overall` member) of the tau-bench runs for each outcome mode."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp, "tau.json")
        status = _arh(
            "validate", "--policy", str(POLICY), str(data), *VALIDATE,
            "--json-out", str(report), "--quiet",
        )  # fmt: skip
        if not report.exists():
            raise SystemExit(f"arh validate wrote no report (exit {status})")
        out: dict[str, Any] = {}
        for outcome, _ in ROWS:
            path = Path(tmp, f"{outcome}.json")
            _arh("stats", str(report), "--outcome", outcome, "--json-out", str(path), "--quiet")
            out[outcome] = json.loads(path.read_text(encoding="utf-8"))["overall"]
        return out


def table(data: Path) -> str:
    """The Markdown table: one row per outcome mode."""
    lines = [
        (
            "| A run succeeds by | Successes | pass^1 (95% CI) | pass^2 | pass^3 | pass^4 | pass@4 "
            "| Stable pass / flaky / stable fail |"
        ),
        "|---|---|---|---|---|---|---|---|",
    ]
    results = statistics(data)
    for outcome, label in ROWS:
        s = results[outcome]
        by_k = {row["k"]: row for row in s["by_k"]}
        low, high = s["pass_rate_ci95"]
        classes = s["classes"]
        hats = " | ".join(f"{by_k[k]['pass_hat_k']:.3f}" for k in range(2, 5))
        lines.append(
            f"| {label} (`--outcome {outcome}`) | {s['successes']} of {s['runs']} "
            f"| {s['pass_rate']:.3f} ({low:.3f}-{high:.3f}) | {hats} "
            f"| {by_k[4]['pass_at_k']:.3f} "
            f"| {classes['stable_pass']} / {classes['flaky']} / {classes['stable_fail']} |"
        )
    return "\n".join(lines) + "\n"


def _replace(doc: str, block: str) -> str:
    head, rest = doc.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{block}{END}{tail}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", action="store_true", help="update docs/statistics.md")
    group.add_argument("--check", action="store_true", help="fail when the docs differ")
    args = parser.parse_args()
    data = SHARED / TAU
    if not data.exists():
        print(f"tau-bench data not found at {data} (set ARH_SHARED_DIR)", file=sys.stderr)
        return 2
    block = table(data)
    if not (args.write or args.check):
        print(block, end="")
        return 0
    doc = DOC.read_text(encoding="utf-8")
    updated = _replace(doc, block)
    if args.check:
        if updated != doc:
            print("docs/statistics.md: the tau-bench table is out of date; run "
                  "python tools/tau_bench_stats.py --write", file=sys.stderr)  # fmt: skip
            return 1
        return 0
    DOC.write_text(updated, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
