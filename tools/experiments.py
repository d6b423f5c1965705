"""Experiments with `arh run` on the golden dataset: ablations of the tool gateway and
reproducibility (docs/experiments.md).

    python tools/experiments.py                  # run everything, print the tables
    python tools/experiments.py --write          # ... and write docs/experiments.md and .json
    python tools/experiments.py --check          # regenerate in memory; exit 1 if they differ
    python tools/experiments.py --check --quick  # the reduced check of the tests (see below)

Every run goes through the command line's own ``main(["run", ...])`` into a temporary
directory, so the experiment measures what users run; one of the same-seed invocations runs in a
separate process (``python -m agent_reliability_harness run``, another ``PYTHONHASHSEED``).
The script runs from the repository's root, so the paths recorded in the runs (the dataset, the
example agent) are relative and the outputs are the same in any checkout.

Nothing measured with a clock goes into the files: they hold pass rates, counts, rule ids and
sha256s, and two runs of the script write the same bytes.

``--quick`` checks a reduced configuration in seconds: the page is what the committed JSON
renders to, the `auto` agent's four ablation runs give the committed numbers, and the sampling
agent's seed-0 run gives its committed pass rate and sha256s. The full check (every agent,
every seed and repeat) runs in ``make experiments``, which rewrites the files.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from agent_reliability_harness.cli import main as arh

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "experiments.md"
DATA = ROOT / "docs" / "experiments.json"
DATASET = "datasets/golden"
REFERENCE = "agent_reliability_harness.harness.agents:"
AGENTS = ("react", "plan_and_execute", "supervisor", "swarm", "map_reduce", "auto")
FEATURES = ("retry", "verify", "validate_arguments")
COMPLETE = "complete"
SAMPLING = "examples/sampling_agent.py:sampling"
SEEDS = (0, 1, 2, 3, 4)
SAME_SEED_REPEATS = 3
STATS_REPEATS = 5
PATTERNS = ("react", "plan_and_execute", "supervisor", "swarm", "map_reduce")
CATEGORIES = ("normal", "difficult", "ambiguous", "edge", "adversarial", "failure_inducing")

JSON = Any


# --------------------------------------------------------------------------- running


def run_args(
    agent: str, *, seed: int = 0, repeats: int = 1, ablate: str | None = None
) -> list[str]:
    """The arguments of ``arh run`` for one configuration (without ``-o``)."""
    args = ["run", "--dataset", DATASET, "--agent", agent, "--seed", str(seed)]
    if repeats != 1:
        args += ["--repeats", str(repeats)]
    if ablate:
        args += ["--ablate", ablate]
    return args


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Runner:
    """Runs ``arh run`` configurations into a temporary directory and reads what they wrote."""

    def __init__(self, scratch: Path, jobs: int) -> None:
        self.scratch = scratch
        self.jobs = jobs
        self.commands: list[str] = []
        self.last = scratch
        self._count = 0

    def _out(self) -> Path:
        self._count += 1
        return self.scratch / f"run{self._count}"

    def run(self, args: list[str], *, separate_process: bool = False) -> Run:
        out = self.last = self._out()
        full = [*args, "--jobs", str(self.jobs), "-o", str(out), "-q"]
        shown = "arh " + " ".join([*args, "-o", "OUT"])
        if shown not in self.commands:
            self.commands.append(shown)
        if separate_process:
            env = {**os.environ, "PYTHONHASHSEED": "1"}
            command = [sys.executable, "-m", "agent_reliability_harness", *full]
            status = subprocess.run(command, cwd=ROOT, env=env, check=False).returncode
        else:
            status = arh(full)
        if status not in (0, 1):
            raise SystemExit(f"experiments: `{shown}` exited {status}")
        return Run.read(out)


class Run:
    """What one ``arh run`` wrote: its run record's tasks, the traces and their sha256s."""

    def __init__(self, record: JSON, traces: dict[str, bytes], report: bytes) -> None:
        self.record = record
        self.traces = traces  # file name -> bytes
        self.report_sha256 = _sha256(report)
        listing = "".join(f"{_sha256(traces[n])}  traces/{n}\n" for n in sorted(traces))
        self.traces_sha256 = _sha256(listing.encode("utf-8"))

    @classmethod
    def read(cls, out: Path) -> Run:
        record = json.loads((out / "run.json").read_text(encoding="utf-8"))
        traces = {path.name: path.read_bytes() for path in (out / "traces").iterdir()}
        return cls(record, traces, (out / "report.json").read_bytes())

    def trace(self, task_id: str, repeat: int) -> JSON:
        return json.loads(self.traces[f"{task_id}.run{repeat}.json"])

    @property
    def tasks(self) -> list[JSON]:
        tasks: list[JSON] = self.record["tasks"]
        return tasks

    def pass_rate_pct(self, repeat: int | None = None) -> float:
        tasks = [t for t in self.tasks if repeat is None or t["repeat"] == repeat]
        return _pct(sum(t["outcome"] == "passed" for t in tasks), len(tasks))

    def shas(self) -> JSON:
        return {"report_sha256": self.report_sha256, "traces_sha256": self.traces_sha256}


def _pct(part: int, whole: int) -> float:
    return round(100 * part / whole, 2) if whole else 0.0


def _spread(values: Sequence[float]) -> float:
    return round(max(values) - min(values), 2)


# --------------------------------------------------------------------------- ablations


def _rules(detail: str | None) -> tuple[list[str], list[str]]:
    """The finding and blocked rule ids of a run record's ``detail``."""
    findings: list[str] = []
    blocked: list[str] = []
    for part in (detail or "").split("; "):
        for prefix, into in (("findings: ", findings), ("blocked: ", blocked)):
            if part.startswith(prefix):
                into.extend(rule.strip() for rule in part[len(prefix) :].split(","))
    return findings, blocked


def _counts(counter: Counter[str], order: Sequence[str] | None = None) -> dict[str, int]:
    keys = [k for k in order if counter[k]] if order is not None else sorted(counter)
    return {key: counter[key] for key in keys}


def _gateway(run: Run) -> JSON:
    """What the gateway did in every trace of a run: refused arguments, corrupt results, retries
    and the calls the policy blocked (by rule)."""
    steps: Counter[str] = Counter()
    blocked: Counter[str] = Counter()
    for task in run.tasks:
        trace = run.trace(task["task_id"], task["repeat"])
        for step in trace["steps"]:
            metadata = step.get("metadata") or {}
            if metadata.get("gateway"):
                steps[str(metadata["gateway"])] += 1
            if (metadata.get("attempt") or 1) > 1:
                steps["retries"] += 1
        for call in (trace.get("metadata") or {}).get("blocked_calls") or []:
            for rule in call.get("rule_ids") or [call.get("reason")]:
                blocked[str(rule)] += 1
    return {
        "refused_arguments": steps["refused_arguments"],
        "corrupt_results": steps["corrupt_result"],
        "retries": steps["retries"],
        "blocked_calls": _counts(blocked),
    }


def ablation(run: Run, complete: Run | None) -> JSON:
    """One ablation row: the pass rate, and the runs whose outcome differs from the complete
    gateway's (count per category, per pattern, per outcome, and their rule ids)."""
    outcomes = Counter(task["outcome"] for task in run.tasks)
    flips: list[JSON] = []
    if complete is not None:
        before = {(t["task_id"], t["repeat"]): t["outcome"] for t in complete.tasks}
        flips = [t for t in run.tasks if t["outcome"] != before[(t["task_id"], t["repeat"])]]
    category: Counter[str] = Counter()
    pattern: Counter[str] = Counter()
    outcome: Counter[str] = Counter()
    findings: Counter[str] = Counter()
    blocked: Counter[str] = Counter()
    for task in flips:
        metadata = run.trace(task["task_id"], task["repeat"])["metadata"]
        category[metadata["category"]] += 1
        pattern[metadata["pattern"]] += 1
        outcome[task["outcome"]] += 1
        found, refused = _rules(task["detail"])
        findings.update(found)
        blocked.update(refused)
    return {
        "runs": len(run.tasks),
        "passed": outcomes["passed"],
        "pass_rate_pct": run.pass_rate_pct(),
        "outcomes": _counts(outcomes),
        "flips": {
            "count": len(flips),
            "by_category": _counts(category, CATEGORIES),
            "by_pattern": _counts(pattern, PATTERNS),
            "by_outcome": _counts(outcome),
            "findings": _counts(findings),
            "blocked": _counts(blocked),
            "tasks": sorted(t["task_id"] for t in flips),
        },
        "gateway": _gateway(run),
        **run.shas(),
    }


def ablations(runner: Runner, agents: Sequence[str]) -> tuple[JSON, dict[str, Run]]:
    results: JSON = {}
    completes: dict[str, Run] = {}
    for agent in agents:
        complete = runner.run(run_args(REFERENCE + agent))
        completes[agent] = complete
        rows = {COMPLETE: ablation(complete, None)}
        for feature in FEATURES:
            rows[feature] = ablation(
                runner.run(run_args(REFERENCE + agent, ablate=feature)), complete
            )
        results[agent] = rows
    return results, completes


# --------------------------------------------------------------------------- reproducibility


def _without(trace: JSON, *keys: str) -> str:
    """A trace's JSON with its id and the given metadata keys taken out."""
    trace = dict(trace, trace_id=None)
    trace["metadata"] = {k: v for k, v in (trace.get("metadata") or {}).items() if k not in keys}
    return json.dumps(trace, sort_keys=True)


def same_seed(runner: Runner) -> JSON:
    """`auto` with one seed: K repeats in one run, and two invocations (one in another
    process): the spread of the pass rate over the repeats, and the sha256s of both."""
    args = run_args(REFERENCE + "auto", repeats=SAME_SEED_REPEATS)
    first = runner.run(args)
    second = runner.run(args, separate_process=True)
    rates = [first.pass_rate_pct(k) for k in range(1, SAME_SEED_REPEATS + 1)]
    same_as_first = sum(
        _without(first.trace(t["task_id"], t["repeat"]), "repeat")
        == _without(first.trace(t["task_id"], 1), "repeat")
        for t in first.tasks
    )
    return {
        "repeats": SAME_SEED_REPEATS,
        "pass_rate_pct_by_repeat": rates,
        "spread_pp": _spread(rates),
        "repeats_equal_to_run1": same_as_first,
        "runs": len(first.tasks),
        "invocations": [first.shas(), second.shas()],
        "byte_identical": first.shas() == second.shas() and first.traces == second.traces,
    }


def seeds(runner: Runner, agent: str, seed0: Run | None = None) -> tuple[JSON, dict[int, Run]]:
    """One run per seed: the pass rate of each, and its spread."""
    runs = {
        s: seed0 if s == 0 and seed0 is not None else runner.run(run_args(agent, seed=s))
        for s in SEEDS
    }
    rates = {str(s): runs[s].pass_rate_pct() for s in SEEDS}
    base = runs[SEEDS[0]]
    same = all(
        _without(runs[s].trace(t["task_id"], 1), "seed")
        == _without(base.trace(t["task_id"], 1), "seed")
        for s in SEEDS
        for t in base.tasks
    )
    result = {
        "pass_rate_pct_by_seed": rates,
        "spread_pp": _spread(list(rates.values())),
        "traces_equal_apart_from_seed": same,
        "runs_that_differ_from_seed0": {str(s): _flips_between(base, runs[s]) for s in SEEDS[1:]},
        "sha256_by_seed": {str(s): runs[s].shas() for s in SEEDS},
    }
    return result, runs


def sampling_seed0(runner: Runner, seed0: Run) -> JSON:
    """The sampling agent's seed 0 again, in another process: byte-identical or not."""
    again = runner.run(run_args(SAMPLING), separate_process=True)
    return {
        "invocations": [seed0.shas(), again.shas()],
        "byte_identical": again.shas() == seed0.shas() and again.traces == seed0.traces,
    }


def _flips_between(a: Run, b: Run) -> int:
    outcome = {t["task_id"]: t["outcome"] for t in a.tasks}
    return sum(t["outcome"] != outcome[t["task_id"]] for t in b.tasks)


def repeated_stats(runner: Runner) -> JSON:
    """The sampling agent with ``--repeats 5``, summarised by ``arh stats``."""
    run = runner.run(run_args(SAMPLING, repeats=STATS_REPEATS))
    stats_path = runner.scratch / "stats.json"
    status = arh(["stats", str(runner.last / "report.json"), "--json-out", str(stats_path), "-q"])
    if status != 0:
        raise SystemExit(f"experiments: arh stats exited {status}")
    runner.commands.append("arh stats OUT/report.json")
    overall = json.loads(stats_path.read_text(encoding="utf-8"))["overall"]
    flaky_by_category: Counter[str] = Counter()
    for task in overall["task_results"]:
        if task["class"] == "flaky":
            flaky_by_category[run.trace(task["task"], 1)["metadata"]["category"]] += 1
    rates = [round(100 * r["pass_rate"], 2) for r in overall["per_run"]]
    return {
        "repeats": STATS_REPEATS,
        "runs": overall["runs"],
        "tasks": overall["tasks"],
        "pass_at_1": round(overall["pass_rate"], 4),
        "pass_at_1_ci95": [round(x, 4) for x in overall["pass_rate_ci95"]],
        "by_k": [
            {
                "k": r["k"],
                "pass_hat_k": round(r["pass_hat_k"], 4),
                "pass_at_k": round(r["pass_at_k"], 4),
            }
            for r in overall["by_k"]
        ],
        "classes": overall["classes"],
        "flaky_by_category": _counts(flaky_by_category, CATEGORIES),
        "pass_rate_pct_by_repeat": rates,
        "spread_pp_over_repeats": _spread(rates),
        **run.shas(),
    }


# --------------------------------------------------------------------------- the experiment


def _dataset(run: Run) -> JSON:
    dataset = run.record["dataset"]
    return {"name": dataset["name"], "cases": dataset["cases"], "sha256": dataset["sha256"]}


def experiment(runner: Runner) -> JSON:
    """Every configuration: the data of docs/experiments.json."""
    rows, completes = ablations(runner, AGENTS)
    reference_seeds, _ = seeds(runner, REFERENCE + "auto", completes["auto"])
    sampling_seeds, sampling_runs = seeds(runner, SAMPLING)
    return {
        "dataset": _dataset(completes["auto"]),
        "ablations": rows,
        "reproducibility": {
            "same_seed": same_seed(runner),
            "reference_seeds": reference_seeds,
            "sampling_seeds": sampling_seeds,
            "sampling_same_seed": sampling_seed0(runner, sampling_runs[0]),
            "sampling_repeats": repeated_stats(runner),
        },
        "commands": runner.commands,
    }


def quick(runner: Runner, committed: JSON) -> list[str]:
    """The reduced check: the problems found (empty when the committed numbers hold)."""
    problems: list[str] = []
    rows, _ = ablations(runner, ("auto",))
    if rows["auto"] != committed["ablations"]["auto"]:
        problems.append("the auto agent's ablation runs differ from docs/experiments.json")
    run = runner.run(run_args(SAMPLING))
    seeds_data = committed["reproducibility"]["sampling_seeds"]
    if (
        run.pass_rate_pct() != seeds_data["pass_rate_pct_by_seed"]["0"]
        or run.shas() != seeds_data["sha256_by_seed"]["0"]
    ):
        problems.append("the sampling agent's seed-0 run differs from docs/experiments.json")
    return problems


# --------------------------------------------------------------------------- the page


def _pct_text(value: float) -> str:
    return f"{value:.2f} %"


def _list(counts: Mapping[str, int], order: Sequence[str] = ()) -> str:
    """``a 1, b 2`` in the order given, then the other keys sorted (the JSON file sorts keys)."""
    keys = [k for k in order if k in counts] + sorted(k for k in counts if k not in order)
    return ", ".join(f"{key} {counts[key]}" for key in keys) or "-"


def _agents(rows: JSON) -> list[tuple[str, JSON]]:
    return [(agent, rows[agent]) for agent in AGENTS if agent in rows]


def _ablation_tables(rows: JSON) -> list[str]:
    head = "| Agent | complete | " + " | ".join(f"no `{f}`" for f in FEATURES) + " |"
    lines = [head, "|---|" + "---:|" * (len(FEATURES) + 1)]
    for agent, by in _agents(rows):
        cells = [
            f"{_pct_text(by[c]['pass_rate_pct'])} ({by[c]['passed']}/{by[c]['runs']})"
            for c in (COMPLETE, *FEATURES)
        ]
        lines.append(f"| `{agent}` | " + " | ".join(cells) + " |")
    lines += [
        "",
        (
            "What flips when a feature is removed (runs whose outcome differs from the complete"
            " gateway's, for the same agent):"
        ),
        "",
        "| Removed | Agent | Flips | By category | By pattern | Outcome | Findings | Blocked |",
        "|---|---|---:|---|---|---|---|---|",
    ]
    for feature in FEATURES:
        for agent, by in _agents(rows):
            f = by[feature]["flips"]
            cells = [
                f"`{feature}`",
                f"`{agent}`",
                str(f["count"]),
                _list(f["by_category"], CATEGORIES),
                _list(f["by_pattern"], PATTERNS),
                _list(f["by_outcome"]),
                _list(f["findings"]),
                _list(f["blocked"]),
            ]
            lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        (
            "What the gateway did in all the traces of a run (steps recorded with"
            " `metadata.gateway` `refused_arguments` or `corrupt_result`, retries, and the calls"
            " the policy blocked, by rule, from each trace's `metadata.blocked_calls`):"
        ),
        "",
        "| Agent | Configuration | Refused arguments | Corrupt results | Retries | Blocked calls |",
        "|---|---|---:|---:|---:|---|",
    ]
    for agent, by in _agents(rows):
        for config in (COMPLETE, *FEATURES):
            g = by[config]["gateway"]
            name = config if config == COMPLETE else f"no `{config}`"
            lines.append(
                f"| `{agent}` | {name} | {g['refused_arguments']} | {g['corrupt_results']} | "
                f"{g['retries']} | {_list(g['blocked_calls'])} |"
            )
    return lines


def _reading(rows: JSON) -> list[str]:
    """What breaks when each feature is removed, in words made from the numbers."""
    auto = rows["auto"]
    lines: list[str] = []
    for feature in FEATURES:
        row, base = auto[feature], auto[COMPLETE]
        f = row["flips"]
        same = all(by[feature]["flips"]["tasks"] == f["tasks"] for _, by in _agents(rows))
        agents = "every agent" if same else "the `auto` agent (the others differ: see the table)"
        if f["count"]:
            categories = _list(f["by_category"], CATEGORIES)
            what = (
                f"{f['count']} of {row['runs']} runs flip for {agents} "
                f"(pass rate {_pct_text(base['pass_rate_pct'])} -> "
                f"{_pct_text(row['pass_rate_pct'])}): by category {categories}; "
                f"outcome {_list(f['by_outcome'])}; their findings {_list(f['findings'])}"
            )
            if f["blocked"]:
                what += f"; blocked on the way: {_list(f['blocked'])}"
        else:
            what = "no run flips, for any agent" if same else f"no run flips for {agents}"
        g, g0 = row["gateway"], base["gateway"]
        changes = [
            f"{label} {g0[key]} -> {g[key]}"
            for key, label in (
                ("refused_arguments", "refused arguments"),
                ("corrupt_results", "corrupt results"),
                ("retries", "retries"),
            )
            if g[key] != g0[key]
        ]
        if g["blocked_calls"] != g0["blocked_calls"]:
            changes.append(
                f"blocked calls {_list(g0['blocked_calls'])} -> {_list(g['blocked_calls'])}"
            )
        if not changes:
            changes.append(
                f"refused arguments {g['refused_arguments']} and blocked calls"
                f" {_list(g['blocked_calls'])}, the same with and without it"
            )
            if not g["refused_arguments"] and g["blocked_calls"]:
                changes.append(
                    "the policy's monitor checks a call before argument validation does, so the"
                    " drafts its argument contracts refuse never reach argument validation"
                )
        elif feature == "validate_arguments" and g["blocked_calls"] == g0["blocked_calls"] != {}:
            changes.append(
                f"blocked calls {_list(g['blocked_calls'])}, the same with and without it: the"
                " policy's monitor checks a call before argument validation does, so the drafts"
                " its argument contracts refuse never reach argument validation; the drafts it"
                " accepts, which only the tools' `parameters` refuse, do (the lenient tools of"
                " [golden-tasks.md](golden-tasks.md#lenient-tools-what-argument-validation-is-for))"
            )
        gateway = "; ".join(changes)
        lines.append(f"- **Without `{feature}`**, {what}. In the traces of `auto`: {gateway}.")
    return lines


def _sha_row(label: str, shas: JSON) -> str:
    return f"| {label} | `{shas['report_sha256']}` | `{shas['traces_sha256']}` |"


def _yes(flag: bool) -> str:
    return "yes" if flag else "**no**"


def render(data: JSON) -> str:
    """docs/experiments.md from the data of docs/experiments.json (read back from its JSON
    text, so the page is the same whether the data was just computed or read from the file)."""
    data = json.loads(dumps(data))
    dataset = data["dataset"]
    rows = data["ablations"]
    rep = data["reproducibility"]
    same, ref, smp = rep["same_seed"], rep["reference_seeds"], rep["sampling_seeds"]
    again, stats = rep["sampling_same_seed"], rep["sampling_repeats"]
    lines = [
        "# Experiments",
        "",
        "<!-- Generated by tools/experiments.py (make experiments); do not edit by hand. -->",
        "",
        (
            "What `arh run` shows on the golden dataset"
            f" (`{dataset['name']}`, {dataset['cases']} tasks, sha256 `{dataset['sha256']}`):"
            " how much each feature of the tool gateway"
            " ([running-agents.md](running-agents.md#the-tool-gateway)) contributes to the"
            " reference agents' pass rate, and whether runs are reproducible. Every number on this"
            " page is written by [tools/experiments.py](../tools/experiments.py), which runs the"
            " commands below through the command line's own entry point; the same numbers are in"
            " [experiments.json](experiments.json). No timings are recorded here (not measured)."
        ),
        "",
        "- [Reproduce](#reproduce)",
        "- [Ablations](#ablations)",
        "- [Reproducibility](#reproducibility)",
        "",
        "## Reproduce",
        "",
        "```sh",
        (
            "make experiments                     # runs everything and rewrites this page and"
            " experiments.json"
        ),
        "python tools/experiments.py --check  # regenerates in memory; exit 1 if they differ",
        "```",
        "",
        (
            "The runs, from the repository's root (`OUT` is a fresh temporary directory each time;"
            " the script adds `--jobs` and `-q`, which change nothing in the outputs):"
        ),
        "",
        "```text",
        *data["commands"],
        "```",
        "",
        (
            "`tests/test_experiments.py` runs `python tools/experiments.py --check --quick` (the"
            " page is what experiments.json renders to; the `auto` agent's four ablation runs and"
            " the sampling agent's seed-0 run give the committed numbers and sha256s); the full"
            " check runs every configuration and takes minutes."
        ),
        "",
        "## Ablations",
        "",
        (
            "Each reference agent on every task with the complete gateway, and with one feature"
            " removed (`--ablate`), seed 0, one run per task. Pass rate (passed/runs):"
        ),
        "",
        *_ablation_tables(rows),
        "",
        "### What breaks",
        "",
        *_reading(rows),
        "",
        "## Reproducibility",
        "",
        (
            f"**Same seed.** `auto`, seed 0, `--repeats {same['repeats']}`, run twice (the second"
            " time in another process, with another `PYTHONHASHSEED`):"
        ),
        "",
        "| | |",
        "|---|---|",
        "| pass rate by repeat | "
        + ", ".join(_pct_text(r) for r in same["pass_rate_pct_by_repeat"])
        + " |",
        f"| spread (max - min) | {same['spread_pp']:.2f} pp |",
        (
            f"| runs whose trace equals its task's run 1 (apart from trace id and repeat) |"
            f" {same['repeats_equal_to_run1']} of {same['runs']} |"
        ),
        (
            f"| report.json and every trace byte-identical in both invocations |"
            f" {_yes(same['byte_identical'])} |"
        ),
        "",
        "| Invocation | sha256 of report.json | sha256 of the traces' listing |",
        "|---|---|---|",
        *(_sha_row(str(n), s) for n, s in enumerate(same["invocations"], 1)),
        "",
        (
            "The traces' listing is one line `<sha256>  traces/<file>` per trace, sorted, as"
            " `sha256sum` writes it."
        ),
        "",
        (
            "**Varied seeds.** One run per seed. The reference agents ignore the seed, so their"
            " spread is 0 by construction (their traces differ only in the recorded seed:"
            f" {_yes(ref['traces_equal_apart_from_seed'])}). The sampling agent"
            " ([examples/sampling_agent.py](../examples/sampling_agent.py)) follows the same"
            " reference script but, like a model sampled at a temperature, makes mistakes drawn"
            " from a `random.Random` seeded from `(seed, task id, repeat)`: it sometimes skips a"
            " confirmation, answers before its last call, or gives up when its draft arguments are"
            " refused."
        ),
        "",
        "| Seed | `auto` | sampling agent | sampling runs that differ from seed 0 |",
        "|---:|---:|---:|---:|",
    ]
    for seed, rate in sorted(ref["pass_rate_pct_by_seed"].items(), key=lambda kv: int(kv[0])):
        differ = smp["runs_that_differ_from_seed0"].get(seed, "-")
        lines.append(
            f"| {seed} | {_pct_text(rate)} | {_pct_text(smp['pass_rate_pct_by_seed'][seed])} |"
            f" {differ} |"
        )
    lines += [
        f"| spread | {ref['spread_pp']:.2f} pp | {smp['spread_pp']:.2f} pp | |",
        "",
        (
            "The sampling agent with the same seed twice (the second time in another process):"
            f" byte-identical: {_yes(again['byte_identical'])}."
        ),
        "",
        "| Invocation | sha256 of report.json | sha256 of the traces' listing |",
        "|---|---|---|",
        *(_sha_row(str(n), s) for n, s in enumerate(again["invocations"], 1)),
        "",
        f"**Repeats.** The sampling agent, seed 0, `--repeats {stats['repeats']}`"
        f" ({stats['runs']} runs of {stats['tasks']} tasks), summarised by `arh stats`"
        " ([statistics.md](statistics.md)): pass@1"
        f" {stats['pass_at_1']:.4f} (95% interval {stats['pass_at_1_ci95'][0]:.4f}-"
        f"{stats['pass_at_1_ci95'][1]:.4f}); pass rate by repeat "
        + ", ".join(_pct_text(r) for r in stats["pass_rate_pct_by_repeat"])
        + f" (spread {stats['spread_pp_over_repeats']:.2f} pp).",
        "",
        "| k | pass^k | pass@k |",
        "|---:|---:|---:|",
        *(f"| {r['k']} | {r['pass_hat_k']:.4f} | {r['pass_at_k']:.4f} |" for r in stats["by_k"]),
        "",
        (
            f"Tasks: {stats['classes']['stable_pass']} stable-pass,"
            f" {stats['classes']['stable_fail']} stable-fail, {stats['classes']['flaky']} flaky"
            f" (flaky by category: {_list(stats['flaky_by_category'], CATEGORIES)})."
        ),
        "",
    ]
    return "\n".join(lines)


def dumps(data: JSON) -> str:
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=True) + "\n"


# --------------------------------------------------------------------------- main


@contextlib.contextmanager
def _at_root() -> Iterator[None]:
    before = os.getcwd()
    os.chdir(ROOT)
    try:
        yield
    finally:
        os.chdir(before)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="write docs/experiments.md and .json")
    mode.add_argument("--check", action="store_true", help="exit 1 if the files differ")
    parser.add_argument("--quick", action="store_true", help="with --check: the reduced check")
    parser.add_argument("--jobs", type=int, default=1, help="--jobs of every arh run")
    args = parser.parse_args(argv)
    if args.quick and not args.check:
        parser.error("--quick goes with --check")
    with tempfile.TemporaryDirectory(prefix="arh-experiments-") as scratch, _at_root():
        runner = Runner(Path(scratch), args.jobs)
        if args.quick:
            committed = json.loads(DATA.read_text(encoding="utf-8"))
            problems = quick(runner, committed)
            if DOC.read_text(encoding="utf-8") != render(committed):
                problems.append("docs/experiments.md is not what docs/experiments.json renders to")
            for problem in problems:
                print(f"experiments: {problem}", file=sys.stderr)
            return 1 if problems else 0
        data = experiment(runner)
    page, text = render(data), dumps(data)
    if args.check:
        stale = [
            path.relative_to(ROOT).as_posix()
            for path, new in ((DOC, page), (DATA, text))
            if not path.exists() or path.read_text(encoding="utf-8") != new
        ]
        for name in stale:
            print(f"experiments: {name} differs from what the experiment gives", file=sys.stderr)
        return 1 if stale else 0
    sys.stdout.write(page)
    if args.write:
        for path, new in ((DOC, page), (DATA, text)):
            path.write_text(new, encoding="utf-8", newline="\n")
            print(f"wrote {path.relative_to(ROOT).as_posix()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
