"""Smoke test of benchmarks/perf/perf.py: it runs, prints the table, and generates the same corpora.

Nothing here asserts a time or a memory figure; the script only has to measure and print.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from conftest import ROOT, load_script

SCRIPT = ROOT / "benchmarks" / "perf" / "perf.py"
EXPECTED_COLUMNS = [
    "corpus",
    "form",
    "traces",
    "steps",
    "MB",
    "wall s",
    "us/step",
    "MB/s",
    "peak RSS MB",
    "floor s",
    "ratio",
]


def _perf(*args: str | Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _load_module() -> ModuleType:
    return load_script("arh_perf_script", SCRIPT)


def _split_row(line: str) -> list[str]:
    # the table separates cells by two or more spaces; column names contain single spaces
    return re.split(r"\s{2,}", line.strip())


def test_quick_run_prints_every_section(tmp_path: Path) -> None:
    run = _perf(
        "--quick",
        "--scales",
        "3x5",
        "--repeat",
        "1",
        "--cold-repeat",
        "1",
        "--workdir",
        tmp_path / "work",
    )
    # exit 0 also means arh reported no input error on any generated trace
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    header_at = next(i for i, line in enumerate(lines) if line.startswith("corpus "))
    header = _split_row(lines[header_at])
    assert header == EXPECTED_COLUMNS
    assert set(lines[header_at + 1]) == {"-", " "}
    rows = [_split_row(line) for line in lines[header_at + 2 : header_at + 4]]
    assert [r[:4] for r in rows] == [["3x5", "dir", "3", "15"], ["3x5", "jsonl", "3", "15"]]
    for row in rows:
        assert len(row) == len(EXPECTED_COLUMNS)
        wall, floor, ratio = float(row[5]), float(row[9]), float(row[10])
        assert wall > 0
        assert floor > 0
        # the ratio column is wall / floor before rounding: it lies within what the printed
        # values (rounded to 0.01) allow, and is itself rounded to 0.01
        half = 0.005
        low = (wall - half) / (floor + half)
        high = (wall + half) / (floor - half) if floor > half else float("inf")
        assert low - half <= ratio <= high + half, (wall, floor, ratio)
    assert "where the time goes" in lines
    assert any(line.startswith("phases of validation, in this process, over the first 3 traces")
               for line in lines)  # fmt: skip
    assert any(line.startswith("pattern tests ") for line in lines)
    assert "cold start" in lines
    assert any(line.startswith("arh --version ") for line in lines)
    assert "scaling" in lines
    assert "targets" in lines
    target_rows = [line for line in lines if line.startswith("single process, every row: ratio /")]
    assert len(target_rows) == 2  # the stdlib lower bound and the committed run
    assert target_rows[0].rstrip().endswith((" met", " not met"))  # measured here, so judged
    # each single-process row against its bound, beside the bound's definition
    single_at = lines.index("single process: the stdlib lower bound and the committed run")
    single = [_split_row(line) for line in lines[single_at + 4 : single_at + 7]]
    assert [row[:2] for row in single] == [
        ["3x5", "dir"],
        ["3x5", "jsonl"],
        ["3x5", "jsonl (no_unsafe)"],
    ]
    for row in single:
        ratio, bound, over = float(row[2]), float(row[3]), float(row[4])
        assert abs(ratio / bound - over) <= 0.01 + 0.005 * over / bound, row
        assert row[5] == ("met" if over <= 2 else "not met")
    assert any(line.startswith("stdlib lower bound = strict parse") for line in lines)
    assert any("only on the machine that run was measured on" in line for line in lines)
    assert any(line.startswith("peak RSS") and "not measured" in line for line in lines)
    for shape in ("long-trace", "failed-distinct", "identical-calls", "long-text", "deep-nesting"):
        assert any(line.startswith(f"{shape} ") and " whole " in line for line in lines), shape
    # the corpora were written to the scratch directory, not into the repository
    assert (tmp_path / "work" / "corpora" / "3x5" / "traces.jsonl").is_file()


def test_corpora_are_deterministic(tmp_path: Path) -> None:
    common = ["--generate-only", "--quick", "--scales", "4x6,1x30"]
    for name, seed in (("a", "7"), ("b", "7"), ("c", "8")):
        run = _perf(*common, "--seed", seed, "--workdir", tmp_path / name)
        assert run.returncode == 0, run.stderr
    first, second, other = (_tree(tmp_path / name) for name in "abc")
    assert "corpora/4x6/traces.jsonl" in first
    assert "shapes/long-text-whole.jsonl" in first
    assert first == second  # same seed, same bytes, file for file
    assert other["corpora/4x6/traces.jsonl"] != first["corpora/4x6/traces.jsonl"]
    # the directory form holds the same traces as the JSON Lines form, one per file
    lines = first["corpora/4x6/traces.jsonl"].splitlines(keepends=True)
    files = [v for k, v in sorted(first.items()) if k.startswith("corpora/4x6/dir/")]
    assert files == lines
    assert [len(json.loads(line)["steps"]) for line in lines] == [6, 6, 6, 6]


def test_generated_policy_uses_every_section(tmp_path: Path) -> None:
    run = _perf("--generate-only", "--quick", "--scales", "2x4", "--workdir", tmp_path)
    assert run.returncode == 0, run.stderr
    policy = json.loads((tmp_path / "policy.json").read_text(encoding="utf-8"))
    for section in (
        "allowed_tools",
        "allow_unlisted_tools",
        "budgets",
        "unsafe_patterns",
        "grounding",
        "sequence",
        "error_handling",
        "completion",
    ):
        assert policy.get(section) not in (None, {}, []), section
    assert len(policy["unsafe_patterns"]) == 10
    assert len(policy["sequence"]["call_order"]) == 5
    assert any("|" in p for p in policy["unsafe_patterns"])
    assert any(r"\b" in p for p in policy["unsafe_patterns"])
    for section in ("budgets", "grounding", "sequence", "error_handling", "completion"):
        assert len(policy[section]) >= 2, section  # more than one key of each section set


def test_write_replaces_only_the_marked_section(tmp_path: Path) -> None:
    perf = _load_module()
    report = perf.Report(
        "2026-01-01", "2 CPUs", "python benchmarks/perf/perf.py --quick", [], [], [], [], []
    )
    report.cold = [["python -c pass", "10.0", ""]]

    # without BENCHMARK-RESULTS.md the section goes to PERFORMANCE.md
    target = perf.write_results(report, tmp_path)
    assert target == tmp_path / "PERFORMANCE.md"
    assert not (tmp_path / "BENCHMARK-RESULTS.md").exists()
    text = target.read_text(encoding="utf-8")
    assert text.count(perf.START_MARK) == 1
    assert "- Machine: 2 CPUs" in text
    assert "- Command: `python benchmarks/perf/perf.py --quick`" in text

    results = tmp_path / "BENCHMARK-RESULTS.md"
    before = "# Results\n\nintro\n\n"
    after = "\n\n## Other section\n\nkept as is\n"
    results.write_text(f"{before}{perf.START_MARK}\nold numbers\n{perf.END_MARK}{after}")
    assert perf.write_results(report, tmp_path) == results
    text = results.read_text(encoding="utf-8")
    assert text.startswith(before + perf.START_MARK)
    assert text.endswith(perf.END_MARK + after)
    assert "old numbers" not in text
    assert "| python -c pass | 10.0 |" in text

    # a file without the markers gets the section appended, its text untouched
    results.write_text("# Results\n\nonly this\n")
    perf.write_results(report, tmp_path)
    text = results.read_text(encoding="utf-8")
    assert text.startswith("# Results\n\nonly this\n\n" + perf.START_MARK)
    assert text.rstrip().endswith(perf.END_MARK)


def test_phases_lists_every_category_and_adds_up(tmp_path: Path) -> None:
    run = _perf("--phases", "4x6", "--phases-traces", "3", "--workdir", tmp_path / "work")
    assert run.returncode == 0, run.stdout + run.stderr
    phases, _, parts_table = run.stdout.partition("the safety scan alone, again, in parts")
    phases, _, parse_table = phases.partition("the strict parse alone, again")
    lines = phases.splitlines()
    assert any("over the first 3 traces of 4x6 (18 steps" in line for line in lines)
    rows = {row[0]: row[1:] for row in map(_split_row, lines) if len(row) == 4 and row[0][0] != "-"}
    assert rows.pop("phase") == ["s", "us/step", "x floor"]
    expected = ["floor: json.loads", "decode UTF-8", "strict parse", "trace model", "facts"]
    # the corpus policy is a policy 1.0: its seven categories, in report order
    expected += ["schema", "budget", "safety", "grounding", "sequence", "flow", "completion"]
    expected += ["lint", "JSON report", "all but the floor"]
    assert list(rows) == expected
    # microseconds per step: on so few steps the seconds column rounds most phases to 0.000
    per_step = {name: float(cells[1]) for name, cells in rows.items()}
    assert all(value >= 0 for value in per_step.values())
    total = per_step.pop("all but the floor")
    parts = sum(v for k, v in per_step.items() if k != "floor: json.loads")
    assert total > 0
    # each printed value is rounded to 0.1 us
    assert abs(parts - total) <= 0.05 * (len(per_step) + 1)
    # the strict parse again, its checks added one by one; the note adds decoding to the
    # second, the least a strict parse costs
    parse_rows = {
        row[0]: row[1:]
        for row in map(_split_row, parse_table.splitlines())
        if len(row) == 4 and row[0][0] != "-"
    }
    assert list(parse_rows) == [
        "part", "json.loads of the decoded text", "and the duplicate-key check",
        "and finite numbers (arh)",
    ]  # fmt: skip
    assert parse_rows["and finite numbers (arh)"] == rows["strict parse"]
    least = re.search(r"take (\d+\.\d\d) x the floor", parse_table)
    assert least is not None, parse_table
    # each x-floor value is rounded to 0.01: the two added may be off by one in the last digit
    expected_least = float(rows["decode UTF-8"][2]) + float(
        parse_rows["and the duplicate-key check"][2]
    )
    assert abs(float(least[1]) - expected_least) <= 0.011
    # the corpus policy has unsafe patterns: the scan is timed again in its parts
    parts_rows = [row for row in map(_split_row, parts_table.splitlines()) if len(row) == 4]
    names = [row[0] for row in parts_rows if row[0][0] != "-"]
    assert names == [
        "part", "collect strings", "join and fold", "pattern tests", "search and findings",
        "bound: a count per literal",
    ]  # fmt: skip
    # the bound is the floor plus one count per alternative: 17 alternatives in the 10 patterns
    bound = float(parts_rows[-1][3])
    note = re.search(r"\((\d+) for these patterns\).* at (\d+\.\d\d) x the floor", parts_table)
    assert note is not None, parts_table
    assert note[1] == "17"
    assert abs(float(note[2]) - (1 + bound)) <= 0.011
    # the stdlib lower bound: the parse, the model, the facts, every rule but the scan, and the
    # count per literal in place of the scan (each term rounded to 0.01 x the floor)
    stated = re.search(r"of this corpus and policy: (\d+\.\d\d) x the floor", run.stdout)
    assert stated is not None, run.stdout
    terms = ["decode UTF-8", "strict parse", "trace model", "facts", "schema", "budget"]
    terms += ["grounding", "sequence", "flow", "completion", "lint"]
    expected_bound = sum(float(rows[name][2]) for name in terms) + bound
    assert abs(float(stated[1]) - expected_bound) <= 0.005 * (len(terms) + 2)


def test_taint_search_script_compares_both_strategies() -> None:
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "perf" / "taint_search.py"), "--sizes", "3000",
         "--counts", "4", "40", "--repeat", "1"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    rows = [_split_row(line) for line in run.stdout.splitlines()]
    assert ["n", "k", "str.find", "automaton", "automaton/find"] in rows
    assert [row[1] for row in rows if len(row) == 5 and row[1][0].isdigit()] == ["4", "40"]
    assert re.search(r"^FIND_LIMIT in rules/_taint\.py: \d+$", run.stdout, re.MULTILINE)


def test_markdown_perf_script_times_each_report() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}  # the arh of this checkout
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "perf" / "markdown_perf.py"), "--findings", "10",
         "2000", "--repeat", "1"],
        capture_output=True, text=True, timeout=120, check=False, env=env,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"arh from {ROOT / 'src' / 'agent_reliability_harness'}\n" in run.stdout
    rows = [_split_row(line) for line in run.stdout.splitlines()]
    assert ["findings", "writer", "render", "compare", "json"] in rows
    assert [row[0] for row in rows if len(row) == 5 and row[0][0].isdigit()] == ["10", "2,000"]


def _measurement(perf: ModuleType, name: str) -> object:
    corpus = perf.Corpus(name, Path("p.json"), 1, 1, Path(f"{name}.jsonl"), None)
    return perf.Measurement(corpus, "jsonl", [name], [f"floor {name}"])


def test_the_stdin_form_pipes_the_json_lines_file_and_counts_for_memory(tmp_path: Path) -> None:
    perf = _load_module()
    bench = object.__new__(perf.Bench)  # without __init__, which starts real processes
    bench.arh, bench.python, bench.out = ["arh"], "python", tmp_path / "report.json"
    corpus = perf.Corpus("10000x20", Path("p.json"), 10_000, 200_000, Path("t.jsonl"), None)
    planned = bench.plan(corpus, "jsonl stdin")
    assert planned.form == "jsonl stdin"
    assert planned.stdin == Path("t.jsonl")
    assert planned.argv[:5] == ["arh", "validate", "--policy", "p.json", "-"]
    assert planned.floor_argv[-1] == "t.jsonl"  # the same bytes, read from the file
    file = bench.plan(corpus, "jsonl")
    assert (file.stdin, file.argv[4]) == (None, "t.jsonl")
    file.wall = file.floor = planned.wall = planned.floor = 1.0
    file.rss, planned.rss = 30 * perf.MB, 60 * perf.MB
    file_j2, stdin_j2 = bench.plan(corpus, "jsonl", 2), bench.plan(corpus, "jsonl stdin", 2)
    assert stdin_j2.form == "jsonl stdin -j2"
    file_j2.wall, stdin_j2.wall = 0.5, 0.625  # 2.0 and 1.6 times one process
    measured = [file, planned, file_j2, stdin_j2]
    report = perf.Report("now", "machine", "command", measured, [], [], [], [])
    rows = {row[0]: row[2:] for row in perf.targets(report)}
    assert rows["peak RSS, 10,000-trace JSON Lines (file, stdin), MB"] == ["60.0", "not met"]
    assert "--jobs 2 on 10000x20 jsonl stdin: 1.60 x one process" in perf.jobs_notes(measured)


def test_targets_read_the_right_ratios() -> None:
    perf = _load_module()
    report = perf.Report("now", "machine", "command", [], [], [], [], [])
    report.long_over_short = 1.6
    report.whole_over_pieces = {"deep-nesting": 1.2, "long-text": 0.9}
    report.cold_over_flake8 = {"arh --version": 0.3, "arh validate": 0.55}
    rows = {row[0]: row[2:] for row in perf.targets(report)}
    assert rows["time per step, long-trace whole / pieces"] == ["1.60", "not met"]
    assert rows["adversarial shapes, whole / pieces"] == ["1.20", "met"]  # the worst of them
    # the slower of the two start-ups, beside flake8's
    assert rows["arh --version, arh validate (one trace) / flake8 --version"] == ["0.55", "not met"]
    assert rows[DEFAULT_SPEEDUP] == ["not measured", ""]
    assert rows[OVER_BOUND] == ["not measured", ""]
    assert rows[OVER_COMMITTED] == ["not measured", ""]


OVER_BOUND = "single process, every row: ratio / stdlib lower bound (issue 28)"
OVER_COMMITTED = "single process, every row: ratio / committed ratio (issue 28, same machine)"
DEFAULT_SPEEDUP = (
    "default (--jobs auto) speed-up over one process, 10,000 traces, dir and jsonl, medians "
    "(issue 28)"
)


def test_single_process_runs_ask_for_one_job_and_the_default_for_none(tmp_path: Path) -> None:
    perf = _load_module()
    bench = object.__new__(perf.Bench)  # without __init__, which starts real processes
    bench.arh, bench.python, bench.out = ["arh"], "python", tmp_path / "report.json"
    corpus = perf.Corpus("10000x20", Path("p.json"), 10_000, 200_000, Path("t.jsonl"), None)
    one, default = bench.plan(corpus, "jsonl", 1), bench.plan(corpus, "jsonl", perf.DEFAULT)
    assert (one.form, one.argv[-2:], one.single) == ("jsonl", ["--jobs", "1"], True)
    assert (default.form, default.single) == ("jsonl default", False)
    assert "--jobs" not in default.argv
    old = bench.plan(corpus, "jsonl")  # an arh without --jobs: one process, nothing asked
    assert (old.form, old.single, "--jobs" in old.argv) == ("jsonl", True, False)
    # the default's speed-up is that of the medians of the runs made in turns
    one.walls, default.walls = [9.0, 10.0, 30.0], [5.0, 6.0, 5.5]
    one.wall, default.wall = 9.0, 5.0
    dir_one, dir_default = bench.plan(corpus, "jsonl stdin", 1), bench.plan(corpus, "jsonl", 2)
    report = perf.Report("now", "m", "c", [one, default, dir_one, dir_default], [], [], [], [])
    rows = {row[0]: row[2:] for row in perf.targets(report)}
    assert rows[DEFAULT_SPEEDUP] == ["1.82", "met"]  # 10.0 / 5.5
    notes = perf.jobs_notes(report.main)
    assert (
        "the default (--jobs auto) on 10000x20 jsonl: 1.82 x one process (medians of 3 and 3 "
        "runs; best 1.80 x)"
    ) in notes


COMMITTED = """intro
<!-- perf:start -->
## Performance

- Measured: 2026-12-07 15:22 UTC
- Machine: 2 CPUs (x86_64), Linux 6; arh 0.3.0; seed 1

| corpus | form | traces | ratio |
| --- | --- | ---: | ---: |
| 10000x20 | dir | 10,000 | 8.83 |
| 10000x20 | jsonl (no_unsafe) | 10,000 | 2.89 |

| shape | variant | ratio |
| --- | --- | ---: |
| long-trace | pieces | 8.60 |
<!-- perf:end -->
"""


def test_the_committed_run_is_read_and_compared_row_by_row() -> None:
    perf = _load_module()
    committed = perf.parse_committed(COMMITTED, "the file")
    assert committed is not None
    assert committed.ratios == {("10000x20", "dir"): 8.83, ("10000x20", "jsonl (no_unsafe)"): 2.89}
    assert committed.measured == "2026-12-07 15:22 UTC"
    assert committed.machine.startswith("2 CPUs (x86_64), Linux 6;")
    assert perf.parse_committed("no section", "x") is None
    corpus = perf.Corpus("10000x20", Path("p.json"), 10_000, 200_000, Path("t.jsonl"), None)
    plain = perf.Measurement(corpus, "dir", [], [], jobs=1, wall=9.2, floor=1.0, bound=4.0)
    no_unsafe = perf.Measurement(
        corpus, "jsonl (no_unsafe)", [], [], jobs=1, wall=3.0, floor=1.0, bound=1.4
    )
    two = perf.Measurement(corpus, "dir -j2", [], [], jobs=2, wall=5.0, floor=1.0, bound=4.0)
    report = perf.Report("now", "m", "c", [plain, no_unsafe, two], [], [], [], [])
    report.committed = committed
    rows = perf.single_rows(report)  # the -j2 row is not a single process: not in it
    assert rows == [
        # 9.2 / 4.0 = 2.30 > 2; 9.2 / 8.83 = +4.2%
        ["10000x20", "dir", "9.20", "4.00", "2.30", "not met", "8.83", "+4.2%", "met"],
        # 3.0 / 1.4 = 2.14 > 2; 3.0 / 2.89 = +3.8%
        [
            "10000x20",
            "jsonl (no_unsafe)",
            "3.00",
            "1.40",
            "2.14",
            "not met",
            "2.89",
            "+3.8%",
            "met",
        ],
    ]
    targets = {row[0]: row[2:] for row in perf.targets(report)}
    assert targets[OVER_BOUND] == ["2.30", "not met"]
    assert targets[OVER_COMMITTED] == ["1.04", "met"]
    plain.wall = 9.4  # +6.5%
    assert perf.single_rows(report)[0][-2:] == ["+6.5%", "not met"]
    assert {row[0]: row[2:] for row in perf.targets(report)}[OVER_COMMITTED] == ["1.06", "not met"]
    report.committed = None
    assert "not measured" in perf.committed_note(report)


def test_the_committed_results_file_has_a_run_to_compare_with() -> None:
    perf = _load_module()
    committed = perf.committed_run(ROOT)
    assert committed is not None
    assert ("10000x20", "jsonl") in committed.ratios
    assert ("1x20000", "jsonl (no_unsafe)") in committed.ratios


def test_measurements_run_in_turns_within_the_budget() -> None:
    perf = _load_module()
    bench = object.__new__(perf.Bench)  # without __init__, which starts real processes
    bench.repeat, bench.budget = 3, 10.0
    ran: list[str] = []

    def run(argv: list[str], stdin: Path | None = None) -> object:
        ran.append(argv[0])
        wall = 6.0 if argv[0] == "slow" else 1.0
        return perf.Run(wall, 0, 0, "1", "")  # a floor prints the number of traces: 1

    bench.run = run
    fast, slow = _measurement(perf, "fast"), _measurement(perf, "slow")
    bench.measure(fast, slow)
    # one arh run of each per round, each followed by its floor; the slow one stops once a
    # further run would take it past the budget (6 + 6 > 10), its floors still run in full
    assert ran == [
        "fast", "floor fast", "slow", "floor slow",
        "fast", "floor fast",
        "fast", "floor fast",
        "floor slow", "floor slow",
    ]  # fmt: skip
    assert (fast.runs, slow.runs, fast.floor_runs, slow.floor_runs) == (3, 1, 3, 3)
    assert (fast.wall, slow.wall, fast.problems, slow.problems) == (1.0, 6.0, [], [])


def test_jobs_auto_script_measures_the_threshold_and_the_speed_up(tmp_path: Path) -> None:
    script = ROOT / "benchmarks" / "perf" / "jobs_auto.py"
    run = subprocess.run(
        [sys.executable, str(script), "--scale", "12x4", "--sizes", "3,6", "--repeat", "1",
         "--workdir", str(tmp_path)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    rows = [_split_row(line) for line in run.stdout.splitlines()]
    forms = [row[:2] for row in rows if len(row) == 9 and row[1] in ("3", "6")]
    assert forms == [["dir", "3"], ["dir", "6"], ["jsonl", "3"], ["jsonl", "6"]]
    assert "break-even (two processes faster at this size and every larger one):" in run.stdout
    assert re.search(r"from \d+\.\d MB \([\d,]+ bytes, runner.AUTO_JOBS_MIN_BYTES\)", run.stdout)
    speedups = [row for row in rows if row[0] in ("12x4 jsonl", "12x4 dir")]
    assert len(speedups) == 2
    assert all(row[-1] in ("met", "not met") for row in speedups)


def test_jobs_auto_break_even_is_where_two_processes_stay_faster(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks" / "perf"))  # it imports perf.py
    jobs_auto = load_script("arh_jobs_auto_script", ROOT / "benchmarks" / "perf" / "jobs_auto.py")

    def case(size: int, one: float, two: float) -> object:
        made = jobs_auto.Case("jsonl", size, Path("x"), size)
        made.walls = {"--jobs 1": [one], "--jobs 2": [two]}
        return made

    # faster at 2, slower again at 3: only from 4 on is it faster at every larger size
    cases = [case(1, 1.0, 1.2), case(2, 1.0, 0.9), case(3, 1.0, 1.1), case(4, 2.0, 1.2)]
    assert jobs_auto.break_even(cases) == 4
    assert jobs_auto.break_even([case(1, 1.0, 0.5)]) == 1
    assert jobs_auto.break_even([case(1, 1.0, 0.5), case(2, 1.0, 1.0)]) is None
