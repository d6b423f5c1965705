#!/usr/bin/env python3
"""``arh validate --executor dask`` on a local cluster of two worker processes, against
``--jobs 2`` on the same machine: wall time, the driver's peak memory, and the same bytes.

Run it with ``make perf-dask`` (``make perf`` runs it after the main benchmark). It

1. generates the realistic corpora of ``perf.py`` (the same seed and generator, cached in the
   scratch directory) and uses their JSON Lines form;
2. on the largest scale, runs in turns (one run of each per round; the best and the median of
   ``--repeat`` rounds): ``arh validate --jobs 2``, ``arh validate --executor dask
   --dask-workers 2`` (which starts its own ``LocalCluster``: the time a user sees) and ``arh
   validate --executor dask --scheduler`` of a cluster of two workers this script started (the
   cluster already running, as on a real one, set up as docs/large-runs.md advises: no
   statistical profiler in the workers), with Dask's default client settings and with
   ``DASK_DISTRIBUTED__CLIENT__DIRECT_TO_WORKERS=True`` (outcomes fetched from the workers, not
   through the scheduler), each writing a JSON report, and checks that the reports are the same
   bytes;
3. measures the driver's peak RSS (``wait4`` of the ``arh`` process that talks to the running
   cluster: the workers are other processes) at each scale of ``--memory-scales``, to show that
   it does not grow with the number of traces;
4. with ``--write``, puts the table between ``<!-- dask-perf:start -->`` and
   ``<!-- dask-perf:end -->`` of BENCHMARK-RESULTS.md.

No timing is asserted: the script measures, prints, and says whether the target of issue 28
(dask wall time <= 1.25 x that of --jobs 2 on 10000x20) was met.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import dask
from distributed import LocalCluster

import perf

ROOT = Path(__file__).resolve().parents[2]
START, END = "<!-- dask-perf:start -->", "<!-- dask-perf:end -->"
TARGET = 1.25  # dask wall time / --jobs 2 wall time, 10000x20 (issue 28)
OWN = "--executor dask --dask-workers 2 (starts its cluster)"
RUNNING = "--executor dask --scheduler (2 workers running)"
DIRECT = "--executor dask --scheduler (2 workers running, direct to workers)"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", default="10000x20", help="the corpus timed (default 10000x20)")
    parser.add_argument(
        "--memory-scales",
        type=lambda text: text.split(","),
        default=["2500x20", "5000x20", "10000x20"],
        help="corpora whose driver peak memory is measured (default 2500x20,5000x20,10000x20)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="rounds (best and median)")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--workdir", type=Path, help="scratch directory (default: a temp dir)")
    parser.add_argument("--write", action="store_true", help="rewrite BENCHMARK-RESULTS.md")
    return parser.parse_args(argv)


def measure(args: argparse.Namespace, workdir: Path) -> str:
    python = sys.executable
    arh = perf.find_arh(python)
    perf.write_policies(workdir)
    env = perf.child_env(workdir)

    def pool() -> str:
        return perf._pool(args.seed)

    corpora = {
        spec: perf.generate_corpus(workdir, args.seed, spec, pool)
        for spec in dict.fromkeys([args.scale, *args.memory_scales])
    }
    out = workdir / "out"
    out.mkdir(exist_ok=True)
    lines: list[str] = []
    load_before = os.getloadavg()[1]  # (five minutes: the other work on the machine)
    with (
        dask.config.set({"distributed.worker.profile.enabled": False}),
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        ) as cluster,
    ):
        address = cluster.scheduler_address
        corpus = corpora[args.scale]
        forms = {
            "--jobs 2": ["--jobs", "2"],
            OWN: ["--executor", "dask", "--dask-workers", "2"],
            RUNNING: ["--executor", "dask", "--scheduler", address],
            DIRECT: ["--executor", "dask", "--scheduler", address],
        }  # fmt: skip
        direct = {**env, "DASK_DISTRIBUTED__CLIENT__DIRECT_TO_WORKERS": "True"}
        best: dict[str, perf.Run] = {}
        walls: dict[str, list[float]] = {form: [] for form in forms}
        reports: dict[str, bytes] = {}
        for _ in range(args.repeat):
            for index, (form, extra) in enumerate(forms.items()):
                report = out / f"report-{index}.json"
                argv = [
                    *arh, "validate", "--policy", str(corpus.policy), str(corpus.jsonl),
                    "--json-out", str(report), "--quiet", *extra,
                ]  # fmt: skip
                run = perf.run_child(argv, direct if form == DIRECT else env)
                if run.status not in (0, 1):
                    raise SystemExit(f"{form}: exit {run.status}: {run.stderr.strip()}")
                if form not in best or run.wall < best[form].wall:
                    best[form] = run
                walls[form].append(run.wall)
                reports[form] = report.read_bytes()
                print(f"  {form}: {run.wall:.2f} s", file=sys.stderr)
        base = best["--jobs 2"].wall
        median = {form: statistics.median(times) for form, times in walls.items()}
        same = len(set(reports.values())) == 1
        lines += [
            (
                f"`{corpus.name}` as one JSON Lines file ({corpus.bytes_jsonl / 1e6:.0f} MB), "
                f"the realistic policy, {args.repeat} rounds of runs in turns; {perf.machine()}:"
            ),
            "",
            (
                "| form | best wall s | / --jobs 2 | median wall s | / --jobs 2 "
                "| peak RSS of arh, MB |"
            ),
            "| --- | ---: | ---: | ---: | ---: | ---: |",
        ]
        jobs = median["--jobs 2"]
        for form, run in best.items():
            lines.append(
                f"| {form} | {run.wall:.2f} | {run.wall / base:.2f} | {median[form]:.2f} | "
                f"{median[form] / jobs:.2f} | {run.rss / 1e6:.0f} |"
            )
        lines += ["", f"The JSON reports are the same bytes: {'yes' if same else 'NO'}."]
        lines.append("")
        lines += [
            (
                "Peak RSS of the driver (the `arh` process that talks to the running cluster; "
                "the scheduler and the workers are other processes) by the number of traces:"
            ),
            "",
            "| corpus | traces | MB of input | driver peak RSS, MB |",
            "| --- | ---: | ---: | ---: |",
        ]
        for spec in args.memory_scales:
            each = corpora[spec]
            argv = [
                *arh, "validate", "--policy", str(each.policy), str(each.jsonl),
                "--json-out", str(out / "memory.json"), "--quiet",
                "--executor", "dask", "--scheduler", address,
            ]  # fmt: skip
            run = perf.run_child(argv, env)
            lines.append(
                f"| {each.name} | {each.traces} | {each.bytes_jsonl / 1e6:.0f} | "
                f"{run.rss / 1e6:.0f} |"
            )

    def verdict(form: str) -> str:
        ratio = best[form].wall / base
        middle = median[form] / jobs
        met = "met" if ratio <= TARGET and middle <= TARGET else "not met"
        return f"{ratio:.2f} best, {middle:.2f} median ({met})"

    lines += [
        "",
        (
            f"Target (issue 28): `--executor dask` on a 2-worker LocalCluster <= {TARGET} x the "
            f"wall time of `--jobs 2` on {corpus.name}: {verdict(RUNNING)} with the cluster "
            f"running, {verdict(DIRECT)} with the cluster running and direct-to-workers, "
            f"{verdict(OWN)} counting the start of its own cluster."
        ),
        "",
        (
            f"Load average of the machine (5 min) before the timed runs: {load_before:.1f}, "
            f"after: {os.getloadavg()[1]:.1f}, on {os.cpu_count()} CPUs. The machine is shared "
            "with other work: the walls of one form move by more than the gaps between forms "
            "from one round to the next, hence the medians of the rounds as well as the best."
        ),
    ]
    return "\n".join(lines) + "\n"


def write(text: str) -> None:
    path = ROOT / "BENCHMARK-RESULTS.md"
    body = path.read_text(encoding="utf-8")
    command = "make perf-dask (python benchmarks/perf/dask_perf.py --write)"
    section = f"{START}\n{command}:\n\n{text}{END}"
    if START in body:
        pattern = re.escape(START) + ".*?" + re.escape(END)
        body = re.sub(pattern, lambda _: section, body, flags=re.DOTALL)
    else:
        body = body.rstrip("\n") + "\n\n## --executor dask\n\n" + section + "\n"
    path.write_text(body, encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
        text = measure(args, args.workdir)
    else:
        with tempfile.TemporaryDirectory(prefix="arh-dask-perf-") as scratch:
            text = measure(args, Path(scratch))
    print(text, end="")
    if args.write:
        write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
