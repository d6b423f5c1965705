#!/usr/bin/env python3
"""What ``--jobs auto`` (the default of ``arh validate``) is based on, measured.

Two sections, on the realistic corpus of ``benchmarks/perf/perf.py`` (same generator, seed and
policy; ``--scale``, default 10000x20):

* ``threshold``: the first N traces of the corpus (``--sizes``), as one JSON Lines file and as a
  directory of one file per trace, each validated with ``--jobs 1``, ``--jobs 2`` (workers
  whatever the size) and the default (no ``--jobs``). For each size it prints the median wall
  times and the speed-up of two processes over one. The *break-even* is the smallest size
  from which on two processes are faster than one at every larger size measured, in both forms;
  arh starts workers by default from ``runner.AUTO_JOBS_MIN_BYTES`` on, which should be at or a
  little above it (the script prints both).
* ``speedup``: the whole corpus, JSON Lines and directory, the default against ``--jobs 1``: the
  median and best wall times and their ratio (the target of issue 28 is >= 1.7 on a 2-CPU
  machine).

Every command runs in a fresh process (``perf.run_child``: wall time from spawn to exit); the
variants of one size run in turns, one run of each per round, ``--repeat`` rounds, so that they
all see the machine in the same states. The machine's load average is printed at the start and
the end: on a machine shared with other work the numbers move by tens of percent, and the
medians are what to read. Nothing is asserted: the script measures and prints.

Run it as ``python benchmarks/perf/jobs_auto.py`` (``--workdir DIR`` keeps the corpus between
runs; ``--write`` puts what it printed into docs/large-runs.md).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from perf import (
    DEFAULT_SEED,
    MB,
    ROOT,
    Corpus,
    _pool,
    child_env,
    find_arh,
    generate_corpus,
    machine,
    render_text,
    run_child,
    write_policies,
)

DEFAULT_SIZES = (10, 25, 50, 100, 200, 400, 800)
DOC = ROOT / "docs" / "large-runs.md"
START_MARK = "<!-- jobs-auto:start -->"
END_MARK = "<!-- jobs-auto:end -->"
printed: list[str] = []  # what the sections print, for --write


def say(text: str = "") -> None:
    print(text, flush=True)
    printed.append(text)


VARIANTS = {"--jobs 1": ["--jobs", "1"], "--jobs 2": ["--jobs", "2"], "default": []}


@dataclass
class Case:
    """One input (a form of a prefix of the corpus) and the wall times of each variant."""

    form: str
    traces: int
    path: Path
    size: int
    walls: dict[str, list[float]] = field(default_factory=dict)

    def median(self, variant: str) -> float:
        return statistics.median(self.walls[variant])

    def best(self, variant: str) -> float:
        return min(self.walls[variant])


def prefix_inputs(corpus: Corpus, traces: int, folder: Path) -> list[Case]:
    """The first ``traces`` traces of the corpus as a JSON Lines file and as a directory."""
    assert corpus.directory is not None
    folder.mkdir(parents=True, exist_ok=True)
    jsonl = folder / f"first-{traces}.jsonl"
    directory = folder / f"first-{traces}"
    if not jsonl.exists():
        with corpus.jsonl.open("rb") as source, jsonl.open("wb") as target:
            for _, line in zip(range(traces), source, strict=False):
                target.write(line)
    if not directory.exists():
        files = sorted(corpus.directory.rglob("*.json"))[:traces]
        part = directory.with_suffix(".part")
        shutil.rmtree(part, ignore_errors=True)
        part.mkdir()
        for file in files:
            shutil.copyfile(file, part / file.name)
        part.rename(directory)
    size = jsonl.stat().st_size
    return [Case("jsonl", traces, jsonl, size), Case("dir", traces, directory, size)]


def measure(
    arh: list[str],
    policy: Path,
    cases: Sequence[Case],
    *,
    repeat: int,
    env: dict[str, str],
    out: Path,
) -> None:
    """Run every variant of every case, in turns, ``repeat`` rounds."""
    for _ in range(repeat):
        for case in cases:
            for variant, extra in VARIANTS.items():
                argv = [*arh, "validate", "--policy", str(policy), str(case.path)]
                argv += ["--json-out", str(out), "--quiet", *extra]
                run = run_child(argv, env)
                if run.status not in (0, 1) or run.err:
                    raise SystemExit(f"{' '.join(argv)}: exit {run.status}: {run.err.strip()}")
                case.walls.setdefault(variant, []).append(run.wall)


def break_even(cases: Sequence[Case]) -> int | None:
    """The smallest size from which on ``--jobs 2`` is faster than ``--jobs 1`` (medians) at
    every size measured, in every form; None when it is not faster at the largest."""
    sizes = sorted({case.size for case in cases})
    slower = [case.size for case in cases if case.median("--jobs 2") >= case.median("--jobs 1")]
    above = [size for size in sizes if size > max(slower, default=-1)]
    return above[0] if above else None


def threshold_section(
    arh: list[str], corpus: Corpus, sizes: Sequence[int], workdir: Path, repeat: int
) -> None:
    from agent_reliability_harness.runner import AUTO_JOBS_MIN_BYTES, usable_cpus

    env = child_env(workdir)
    out = workdir / "out" / "jobs-auto.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    cases = [c for n in sizes for c in prefix_inputs(corpus, n, workdir / "prefixes")]
    measure(arh, corpus.policy, cases, repeat=repeat, env=env, out=out)
    header = (
        "form",
        "traces",
        "MB",
        "--jobs 1 s",
        "--jobs 2 s",
        "default s",
        "2 / 1",
        "default / 1",
        "2 / 1 best",
    )
    rows = [
        [
            case.form,
            f"{case.traces:,}",
            f"{case.size / MB:.1f}",
            f"{case.median('--jobs 1'):.3f}",
            f"{case.median('--jobs 2'):.3f}",
            f"{case.median('default'):.3f}",
            f"{case.median('--jobs 1') / case.median('--jobs 2'):.2f}",
            f"{case.median('--jobs 1') / case.median('default'):.2f}",
            f"{case.best('--jobs 1') / case.best('--jobs 2'):.2f}",
        ]
        for case in sorted(cases, key=lambda c: (c.form, c.size))
    ]
    say(
        f"threshold: medians of {repeat} runs each, in turns; 'a / b' = speed-up of b over a "
        "(of the medians; 'best': of the shortest runs)"
    )
    say(render_text(header, rows, left=1))
    even = break_even(cases)
    found = "not reached" if even is None else f"{even / MB:.1f} MB ({even:,} bytes)"
    say(f"break-even (two processes faster at this size and every larger one): {found}")
    say(
        f"arh starts workers by default from {AUTO_JOBS_MIN_BYTES / MB:.1f} MB "
        f"({AUTO_JOBS_MIN_BYTES:,} bytes, runner.AUTO_JOBS_MIN_BYTES) on, with "
        f"{usable_cpus()} usable CPU(s) here"
    )


def speedup_section(arh: list[str], corpus: Corpus, workdir: Path, repeat: int) -> None:
    env = child_env(workdir)
    out = workdir / "out" / "jobs-auto.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    assert corpus.directory is not None
    cases = [
        Case("jsonl", corpus.traces, corpus.jsonl, corpus.bytes_jsonl),
        Case("dir", corpus.traces, corpus.directory, corpus.bytes_dir),
    ]
    for case in cases:  # one form at a time, its variants in turns
        for _ in range(repeat):
            for variant in ("--jobs 1", "default"):
                argv = [*arh, "validate", "--policy", str(corpus.policy), str(case.path)]
                argv += ["--json-out", str(out), "--quiet", *VARIANTS[variant]]
                run = run_child(argv, env)
                if run.status not in (0, 1) or run.err:
                    raise SystemExit(f"{' '.join(argv)}: exit {run.status}: {run.err.strip()}")
                case.walls.setdefault(variant, []).append(run.wall)
            print(".", end="", flush=True)
    print(flush=True)
    say()
    header = (
        "form",
        "runs",
        "--jobs 1 median s",
        "default median s",
        "speed-up (medians)",
        "--jobs 1 best s",
        "default best s",
        "speed-up (best)",
        "target >= 1.7",
    )
    rows = []
    for case in cases:
        medians = case.median("--jobs 1") / case.median("default")
        rows.append(
            [
                f"{corpus.name} {case.form}",
                str(len(case.walls["default"])),
                f"{case.median('--jobs 1'):.2f}",
                f"{case.median('default'):.2f}",
                f"{medians:.2f}",
                f"{case.best('--jobs 1'):.2f}",
                f"{case.best('default'):.2f}",
                f"{case.best('--jobs 1') / case.best('default'):.2f}",
                "met" if medians >= 1.7 else "not met",
            ]
        )
    say(f"speed-up of the default over --jobs 1 on {corpus.name}, {repeat} runs each, in turns:")
    say(render_text(header, rows, left=1))


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, help="scratch directory (default: a temp dir)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--scale", default="10000x20", help="the corpus (default 10000x20)")
    parser.add_argument(
        "--sizes",
        default=",".join(map(str, DEFAULT_SIZES)),
        help="traces in the prefixes of the threshold section (default %(default)s)",
    )
    parser.add_argument("--repeat", type=int, default=5, help="rounds (default 5)")
    parser.add_argument(
        "--sections", default="threshold,speedup", help="threshold, speedup (comma-separated)"
    )
    parser.add_argument(
        "--write", action="store_true", help="put what it printed into docs/large-runs.md"
    )
    args = parser.parse_args(argv)
    args.sizes = sorted({int(part) for part in args.sizes.split(",") if part.strip()})
    args.sections = {s.strip() for s in args.sections.split(",") if s.strip()}
    if args.sections - {"threshold", "speedup"}:
        parser.error("--sections takes threshold and speedup")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    temporary = args.workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="arh-jobs-")) if temporary else args.workdir.resolve()
    if workdir == ROOT or ROOT in workdir.parents:
        raise SystemExit(f"--workdir must be outside the repository ({ROOT})")
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        write_policies(workdir)
        corpus = generate_corpus(workdir, args.seed, args.scale, lambda: _pool(args.seed))
        arh = find_arh(sys.executable)
        say(f"machine: {machine()}; load average at start {os.getloadavg()[0]:.2f}")
        command = "python benchmarks/perf/jobs_auto.py " + " ".join(
            sys.argv[1:] if argv is None else argv
        )
        say(f"command: {command.strip()}")
        started = time.perf_counter()
        if "threshold" in args.sections:
            threshold_section(arh, corpus, args.sizes, workdir, args.repeat)
        if "speedup" in args.sections:
            speedup_section(arh, corpus, workdir, args.repeat)
        say(
            f"load average at the end {os.getloadavg()[0]:.2f} "
            f"(total {time.perf_counter() - started:.0f} s)"
        )
        if args.write:
            text = DOC.read_text(encoding="utf-8")
            head, rest = text.split(START_MARK)
            _, tail = rest.split(END_MARK)
            block = "\n".join(printed).strip()
            DOC.write_text(
                f"{head}{START_MARK}\n```text\n{block}\n```\n{END_MARK}{tail}", encoding="utf-8"
            )
            print(f"wrote {DOC}")
        return 0
    finally:
        if temporary:
            with contextlib.suppress(OSError):
                shutil.rmtree(workdir)


if __name__ == "__main__":
    sys.exit(main())
