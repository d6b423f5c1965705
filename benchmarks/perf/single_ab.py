#!/usr/bin/env python3
"""An A/B of one-process ``arh validate`` between two trees of arh: the check of issue 28's "no
regression" target ("re-measured in one session"), for a machine whose absolute numbers move by
more than 5 % from one ``make perf`` to the next.

On one JSON Lines corpus of ``perf.py`` (``--scale``, default 2000x20) and the realistic policy,
it runs ``arh validate --jobs 1`` with the tree of ``--old`` (a git revision, extracted into the
scratch directory and put on ``PYTHONPATH``) and with this tree in turns, round after round, and
prints each tree's walls, their medians and the change. Nothing is asserted or written.

    python benchmarks/perf/single_ab.py --old 13f95de --scale 1x20000 --rounds 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import perf
from dask_ab import extract


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", required=True, help="the git revision to compare with")
    parser.add_argument("--scale", default="2000x20", help="the corpus (default 2000x20)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of runs (default 5)")
    parser.add_argument("--seed", type=int, default=perf.DEFAULT_SEED)
    return parser.parse_args(argv)


def measure(args: argparse.Namespace, workdir: Path) -> str:
    arh = perf.find_arh(sys.executable)
    perf.write_policies(workdir)
    env = perf.child_env(workdir)
    trees = {
        args.old: {**env, "PYTHONPATH": str(extract(args.old, workdir / "old"))},
        "this tree": env,
    }
    corpus = perf.generate_corpus(workdir, args.seed, args.scale, lambda: perf._pool(args.seed))
    argv = [*arh, "validate", "--policy", str(corpus.policy), str(corpus.jsonl)]
    argv += ["--jobs", "1", "--quiet"]
    walls: dict[str, list[float]] = {tree: [] for tree in trees}
    load = os.getloadavg()[1]
    for _ in range(args.rounds):
        for tree, environment in trees.items():
            run = perf.run_child(argv, environment)
            if run.status not in (0, 1):
                raise SystemExit(f"{tree}: exit {run.status}: {run.stderr.strip()}")
            walls[tree].append(run.wall)
            print(f"  {tree}: {run.wall:.2f} s", file=sys.stderr)
    old, new = (statistics.median(walls[tree]) for tree in trees)
    lines = [
        (
            f"`{corpus.name}` as one JSON Lines file ({corpus.bytes_jsonl / 1e6:.0f} MB), the "
            f"realistic policy, --jobs 1, {args.rounds} rounds of runs in turns; "
            f"{perf.machine()}; load average (5 min) {load:.1f} before, "
            f"{os.getloadavg()[1]:.1f} after:"
        ),
        "",
        "| tree | walls s | median s |",
        "| --- | --- | ---: |",
    ]
    for tree, times in walls.items():
        shown = ", ".join(f"{t:.2f}" for t in times)
        lines.append(f"| {tree} | {shown} | {statistics.median(times):.2f} |")
    lines += ["", f"This tree against {args.old}: {100 * (new / old - 1):+.1f} % (medians)."]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="arh-single-ab-") as scratch:
        text = measure(args, Path(scratch))
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
