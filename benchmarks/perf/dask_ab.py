#!/usr/bin/env python3
"""An A/B of ``--executor dask`` between two trees of arh, for a machine too busy for
``dask_perf.py``'s absolute numbers: the runs are made in turns, round after round, and the
medians compared.

It extracts the tree of ``--old`` (a git revision of this repository) into the scratch directory
and, on one JSON Lines corpus of ``perf.py`` (``--scale``, default 2500x20), runs in turns
``arh validate --jobs 2`` (this tree), ``arh validate --executor dask --dask-workers 2`` with the
old tree (``PYTHONPATH`` points the driver and the workers it starts at it) and the same with this
tree, each writing a JSON report; it checks that the reports are the same bytes and prints each
form's walls, median, and median over that of ``--jobs 2``. Nothing is asserted or written.

    python benchmarks/perf/dask_ab.py --old 13f95de --rounds 5
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path

import perf

ROOT = Path(__file__).resolve().parents[2]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", required=True, help="the git revision to compare with")
    parser.add_argument("--scale", default="2500x20", help="the corpus (default 2500x20)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of runs (default 5)")
    parser.add_argument("--seed", type=int, default=perf.DEFAULT_SEED)
    parser.add_argument("--workdir", type=Path, help="scratch directory (default: a temp dir)")
    return parser.parse_args(argv)


def extract(revision: str, into: Path) -> Path:
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", revision, "src"],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def measure(args: argparse.Namespace, workdir: Path) -> str:
    arh = perf.find_arh(sys.executable)
    perf.write_policies(workdir)
    env = perf.child_env(workdir)
    old_env = {**env, "PYTHONPATH": str(extract(args.old, workdir / "old"))}
    corpus = perf.generate_corpus(workdir, args.seed, args.scale, lambda: perf._pool(args.seed))
    out = workdir / "out"
    out.mkdir(exist_ok=True)
    dask = ["--executor", "dask", "--dask-workers", "2"]
    forms = {
        "--jobs 2": (["--jobs", "2"], env),
        f"--executor dask --dask-workers 2, {args.old}": (dask, old_env),
        "--executor dask --dask-workers 2, this tree": (dask, env),
    }
    walls: dict[str, list[float]] = {form: [] for form in forms}
    reports: dict[str, bytes] = {}
    load = os.getloadavg()[1]
    for _ in range(args.rounds):
        for index, (form, (extra, environment)) in enumerate(forms.items()):
            report = out / f"ab-{index}.json"
            argv = [
                *arh, "validate", "--policy", str(corpus.policy), str(corpus.jsonl),
                "--json-out", str(report), "--quiet", *extra,
            ]  # fmt: skip
            run = perf.run_child(argv, environment)
            if run.status not in (0, 1):
                raise SystemExit(f"{form}: exit {run.status}: {run.stderr.strip()}")
            walls[form].append(run.wall)
            reports[form] = report.read_bytes()
            print(f"  {form}: {run.wall:.2f} s", file=sys.stderr)
    base = statistics.median(walls["--jobs 2"])
    lines = [
        (
            f"`{corpus.name}` as one JSON Lines file ({corpus.bytes_jsonl / 1e6:.0f} MB), the "
            f"realistic policy, {args.rounds} rounds of runs in turns; {perf.machine()}; load "
            f"average (5 min) {load:.1f} before, {os.getloadavg()[1]:.1f} after:"
        ),
        "",
        "| form | walls s | median s | median / --jobs 2 |",
        "| --- | --- | ---: | ---: |",
    ]
    for form, times in walls.items():
        median = statistics.median(times)
        shown = ", ".join(f"{t:.2f}" for t in times)
        lines.append(f"| {form} | {shown} | {median:.2f} | {median / base:.2f} |")
    same = len(set(reports.values())) == 1
    lines += ["", f"The JSON reports are the same bytes: {'yes' if same else 'NO'}."]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
        text = measure(args, args.workdir.resolve())
    else:
        with tempfile.TemporaryDirectory(prefix="arh-dask-ab-") as scratch:
            text = measure(args, Path(scratch))
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
