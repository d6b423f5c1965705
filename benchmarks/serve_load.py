"""A bounded local load test of ``arh serve`` (``make serve-load``).

1. builds, in a temporary directory, a runs directory of 10,000 traces: two runs of 5,000 (the
   contract's layout: run.json, report.json, traces/), from the sample traces validated once and
   copied under new trace ids (the second run with every tenth trace failing differently);
2. starts ``arh serve`` on 127.0.0.1 (a free port) in another process, and times its start;
3. sends N requests to each main endpoint over K threads, one endpoint after the other, and
   prints requests per second and p50/p95 latency per endpoint;
4. with ``--write``, puts the table between ``<!-- serve-load:start -->`` and
   ``<!-- serve-load:end -->`` of BENCHMARK-RESULTS.md.

Example: ``python benchmarks/serve_load.py --requests 200 --threads 4 --write``.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
START, END = "<!-- serve-load:start -->", "<!-- serve-load:end -->"
RUN_TRACES = 5_000


def _samples() -> list[dict[str, Any]]:
    files = sorted((SAMPLES / "traces").glob("*.json"))
    traces = [json.loads(p.read_text("utf-8")) for p in files]
    lines = (SAMPLES / "traces" / "more_runs.jsonl").read_text("utf-8").splitlines()
    return traces + [json.loads(line) for line in lines if line.strip()]


def _sample_report(work: Path) -> dict[str, Any]:
    out = work / "samples-report.json"
    subprocess.run(
        [sys.executable, "-m", "agent_reliability_harness", "validate", "--policy",
         str(SAMPLES / "policy_trajectory.json"), str(SAMPLES / "traces"), "--json-out",
         str(out), "--quiet"],
        check=False,
    )  # fmt: skip
    return json.loads(out.read_text("utf-8"))  # type: ignore[no-any-return]


def build(runs: Path, work: Path) -> None:
    samples = _samples()
    report = _sample_report(work)
    by_id = {r["trace_id"]: r for r in report["reports"]}
    passing = [t for t in samples if by_id[t["trace_id"]]["passed"]]
    failing = [t for t in samples if not by_id[t["trace_id"]]["passed"]]
    for number, name in enumerate(("run1", "run2")):
        folder = runs / "bench" / name
        (folder / "traces").mkdir(parents=True)
        reports, tasks = [], []
        for index in range(RUN_TRACES):
            pool = failing if (index % 10 == 0 and number == 1) or index % 3 == 0 else passing
            source = pool[index % len(pool)]
            trace_id = f"t{index:05d}"
            entry = {**by_id[source["trace_id"]], "trace_id": trace_id, "source_path": None}
            reports.append(entry)
            file = f"traces/{trace_id}.run1.json"
            (folder / file).write_text(json.dumps({**source, "trace_id": trace_id}), "utf-8")
            outcome = "passed" if entry["passed"] else "agent_failure"
            tasks.append({"task_id": trace_id, "repeat": 1, "trace_id": f"{trace_id}",
                          "trace": file, "outcome": outcome})  # fmt: skip
        data = {**report, "reports": reports}
        data["summary"] = {**report["summary"], "total_traces": len(reports)}
        (folder / "report.json").write_text(json.dumps(data), "utf-8")
        passed = sum(1 for t in tasks if t["outcome"] == "passed")
        record = {
            "kind": "arh-run", "schema_version": "1", "run_id": f"bench.{name}",
            "agent": {"id": "agent_reliability_harness.harness.agents:react"},
            "dataset": {"name": "bench", "version": "1", "sha256": "0" * 64,
                        "cases": RUN_TRACES, "path": "datasets/bench"},
            "summary": {"runs": len(tasks), "passed": passed,
                        "agent_failure": len(tasks) - passed, "evaluation_error": 0,
                        "infrastructure_failure": 0, "pass_rate": passed / len(tasks)},
            "tasks": tasks,
            "timings": {"finished_at": f"2026-12-0{number + 1}T00:00:00Z"},
        }  # fmt: skip
        (folder / "run.json").write_text(json.dumps(record), "utf-8")


ENDPOINTS = {
    "overview": "/",
    "/api/status": "/api/status",
    "/api/runs": "/api/runs",
    "run page (5,000 traces, first 200)": "/runs/bench%2Frun1",
    "run page, filtered (rule + text)": "/runs/bench%2Frun1?rule=ARH-FLW-003&q=t001",
    "/api/runs/{id} (5,000 traces)": "/api/runs/bench%2Frun1",
    "trace page": "/trace?run=bench%2Frun1&trace=t00003",
    "compare page (5,000 + 5,000)": "/compare?base=bench%2Frun1&head=bench%2Frun2",
    "/api/compare": "/api/compare?base=bench%2Frun1&head=bench%2Frun2",
}


def _load(port: int, target: str, requests: int, threads: int) -> tuple[float, list[float]]:
    latencies: list[float] = []
    lock = threading.Lock()
    left = [requests]
    failures: list[str] = []

    def worker() -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        while True:
            with lock:
                if left[0] == 0:
                    break
                left[0] -= 1
            start = time.perf_counter()
            connection.request("GET", target)
            response = connection.getresponse()
            response.read()
            took = time.perf_counter() - start
            with lock:
                latencies.append(took)
                if response.status != 200:
                    failures.append(f"{target}: {response.status}")
        connection.close()

    started = time.perf_counter()
    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    wall = time.perf_counter() - started
    if failures:
        raise SystemExit(f"requests failed: {failures[:3]}")
    return wall, latencies


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=100, help="requests per endpoint")
    parser.add_argument("--threads", type=int, default=4, help="client threads")
    parser.add_argument("--write", action="store_true", help="rewrite BENCHMARK-RESULTS.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="arh-serve-load-") as temp:
        work = Path(temp)
        runs = work / "runs"
        build(runs, work)
        started = time.perf_counter()
        server = subprocess.Popen(
            [sys.executable, "-m", "agent_reliability_harness", "serve", str(runs), "--port",
             "0", "--quiet"],
            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
        try:
            assert server.stderr is not None
            line = server.stderr.readline()
            found = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
            if found is None:
                raise SystemExit(f"arh serve did not start: {line}")
            ready = time.perf_counter() - started
            port = int(found.group(1))
            rows = []
            for label, target in ENDPOINTS.items():
                _load(port, target, min(args.threads, args.requests), args.threads)  # warm-up
                wall, latencies = _load(port, target, args.requests, args.threads)
                rows.append(
                    f"| {label} | {args.requests / wall:,.1f} | "
                    f"{statistics.median(latencies) * 1000:,.1f} | "
                    f"{_percentile(latencies, 0.95) * 1000:,.1f} |"
                )
        finally:
            server.terminate()
            server.wait(30)
    cpus = os.cpu_count() or 1
    text = "\n".join(
        [
            (
                f"make serve-load (python benchmarks/serve_load.py --requests {args.requests} "
                f"--threads {args.threads} --write):"
            ),
            "",
            (
                f"A runs directory of 10,000 traces (two runs of {RUN_TRACES:,}); `arh serve` in "
                f"its own process, {args.requests} requests per endpoint over {args.threads} "
                f"client threads on the same machine ({cpus} CPUs, {platform.machine()}, "
                f"{platform.system()} {platform.release()}, Python "
                f"{platform.python_version()}). The server scanned the directory and answered "
                f"in {ready:.2f} s."
            ),
            "",
            "| endpoint | requests/s | p50 ms | p95 ms |",
            "| --- | ---: | ---: | ---: |",
            *rows,
        ]
    )
    print(text)
    if args.write:
        write(text)


def write(text: str) -> None:
    path = ROOT / "BENCHMARK-RESULTS.md"
    old = path.read_text("utf-8")
    block = f"{START}\n{text}\n{END}"
    if START in old:
        new = re.sub(
            re.escape(START) + ".*?" + re.escape(END), lambda _: block, old, flags=re.DOTALL
        )
    else:
        new = old.rstrip("\n") + "\n\n## arh serve under load\n\n" + block + "\n"
    path.write_text(new, "utf-8")


if __name__ == "__main__":
    main()
