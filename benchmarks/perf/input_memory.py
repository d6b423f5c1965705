#!/usr/bin/env python3
"""Peak memory of ``arh validate`` on one big input, against the size of that input.

How much memory a run needs is set by its largest single input (a document read whole, or a
line of JSON Lines): that is what ``--max-input-size`` caps. This script generates, from fixed
contents, the shapes that cost the most per byte:

* ``big text``: one trace whose answer is one long ASCII string (``--text-mb``, default 50);
* ``big arguments``: the same string as a tool call's argument (arguments are also encoded
  to be compared between calls);
* ``many steps``: one trace of ``--steps`` small tool calls (default 200,000, about 30 MB),
  where each step's objects weigh many times its bytes;
* ``many steps, jsonl``: the same trace as one line of a JSON Lines file;

and runs ``arh validate --policy P INPUT --json-out OUT --quiet`` on each in a fresh process,
under two policies: ``permissive`` (every tool allowed, nothing else) and ``realistic`` (the
policy of benchmarks/perf/perf.py, which uses every section, unsafe patterns included). It prints
each run's peak RSS (``ru_maxrss`` from ``wait4``, as perf.py measures it), the peak of the
same command on a one-step trace (the interpreter and arh itself), and ``x size``: the
difference divided by the input's size, the memory one more byte of input costs.

Reports are inputs too (baselines, ``arh stats``): the script also validates ``--traces``
realistic traces of 20 steps (the generator of benchmarks/perf/perf.py, its seed) and prints how
many bytes the JSON report takes per trace, and the peak RSS of ``arh stats`` on that report
against its size.

Run it as ``python benchmarks/perf/input_memory.py``; ``--src DIR`` runs the arh whose package is in
``DIR`` instead of this checkout's (to compare with an older version). Nothing is asserted: the
script measures and prints.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from perf import DEFAULT_SEED, MB, TraceGenerator, build_pool, realistic_policy, run_child

ROOT = Path(__file__).resolve().parents[2]
WORDS = "the agent looked up the booking and found a later flight with two free seats "


def _trace(trace_id: str, steps: list[dict[str, Any]]) -> dict[str, Any]:
    return {"trace_id": trace_id, "agent_name": "agent", "workflow": "memory", "steps": steps}


def _answer(text: str) -> dict[str, Any]:
    return {"step_id": "answer", "type": "model_response", "text": text}


def write_inputs(folder: Path, text_mb: float, steps: int) -> list[tuple[str, Path]]:
    """The inputs, as (name, path)."""
    text = (WORDS * (int(text_mb * MB) // len(WORDS) + 1))[: int(text_mb * MB)]
    call = {"step_id": "call", "type": "tool_call", "tool_name": "search_kb"}
    shapes = {
        "big text": _trace("big-text", [_answer(text)]),
        "big arguments": _trace(
            "big-arguments", [{**call, "arguments": {"query": text}}, _answer("done")]
        ),
    }
    del text
    many = [
        {
            **call,
            "step_id": f"s{n}",
            "arguments": {"query": f"flight {n}"},
            "output": "ok",
            "latency_ms": 12,
        }
        for n in range(steps)
    ]
    shapes["many steps"] = _trace("many-steps", [*many, _answer("done")])
    inputs = []
    for name, document in shapes.items():
        path = folder / (name.replace(" ", "-") + ".json")
        path.write_text(json.dumps(document), encoding="utf-8")
        inputs.append((name, path))
    jsonl = folder / "many-steps.jsonl"
    jsonl.write_text(json.dumps(shapes["many steps"]) + "\n", encoding="utf-8")
    inputs.append(("many steps, jsonl", jsonl))
    return inputs


def policies(folder: Path) -> list[tuple[str, Path]]:
    permissive = {"schema_version": "1", "policy_id": "memory", "allow_unlisted_tools": True}
    found = []
    for name, policy in (("permissive", permissive), ("realistic", realistic_policy())):
        path = folder / f"policy-{name}.json"
        path.write_text(json.dumps(policy), encoding="utf-8")
        found.append((name, path))
    return found


def peak(policy: Path, trace: Path, out: Path, src: Path) -> int:
    """The peak RSS of one ``arh validate`` in bytes (exit status 0 or 1: a verdict)."""
    return arh_peak(["validate", "--policy", str(policy), str(trace), "--json-out", str(out),
                     "--quiet"], src)  # fmt: skip


def arh_peak(args: list[str], src: Path) -> int:
    env = {**os.environ, "PYTHONPATH": str(src)}
    run = run_child([sys.executable, "-m", "agent_reliability_harness", *args], env=env)
    if run.status not in (0, 1) or run.err:
        raise SystemExit(f"arh {' '.join(args)} failed (status {run.status}): {run.err.strip()}")
    return run.rss


def realistic_report(folder: Path, count: int, src: Path) -> Path:
    """The JSON report of ``count`` realistic traces."""
    generator = TraceGenerator(
        random.Random(f"{DEFAULT_SEED}:memory"),
        build_pool(random.Random(f"{DEFAULT_SEED}:pool"), 300_000),
    )
    traces = folder / "realistic.jsonl"
    with traces.open("w", encoding="utf-8") as stream:
        for n in range(count):
            stream.write(json.dumps(generator.trace(f"r-{n:06d}", 20)) + "\n")
    report = folder / "realistic-report.json"
    peak(folder / "policy-realistic.json", traces, report, src)
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--text-mb", type=float, default=50.0, help="MB of the long string")
    parser.add_argument("--steps", type=int, default=200_000, help="steps of the long trace")
    parser.add_argument("--traces", type=int, default=10_000, help="traces for the report size")
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="where arh's package is")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="arh-memory-") as scratch:
        folder = Path(scratch)
        inputs = write_inputs(folder, args.text_mb, args.steps)
        tiny = folder / "tiny.json"
        tiny.write_text(json.dumps(_trace("tiny", [_answer("done")])), encoding="utf-8")
        out = folder / "report.json"
        print(f"arh from {args.src}, Python {sys.version.split()[0]}; MB are 10^6 bytes")
        print()
        print("| input | policy | input MB | peak RSS MB | one-step trace MB | x size |")
        print("| --- | --- | ---: | ---: | ---: | ---: |")
        for policy_name, policy in policies(folder):
            base = peak(policy, tiny, out, args.src)
            for name, path in inputs:
                size = path.stat().st_size
                rss = peak(policy, path, out, args.src)
                print(
                    f"| {name} | {policy_name} | {size / MB:.1f} | {rss / MB:.1f} | "
                    f"{base / MB:.1f} | {(rss - base) / size:.1f} |",
                    flush=True,
                )
        print()
        report = realistic_report(folder, args.traces, args.src)
        size = report.stat().st_size
        print(f"JSON report of {args.traces:,} realistic traces of 20 steps: {size / MB:.1f} MB, "
              f"{size / args.traces:,.0f} bytes per trace")  # fmt: skip
        tiny_report = folder / "tiny-report.json"
        peak(folder / "policy-realistic.json", tiny, tiny_report, args.src)
        base = arh_peak(["stats", str(tiny_report), "--quiet"], args.src)
        rss = arh_peak(["stats", str(report), "--quiet"], args.src)
        print(f"arh stats on it: peak RSS {rss / MB:.1f} MB, {base / MB:.1f} MB on the report of "
              f"one trace: x size {(rss - base) / size:.1f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
