#!/usr/bin/env python3
"""Time the Markdown reports of one failing trace with many findings (docs/ci.md#markdown).

    PYTHONPATH=src python benchmarks/perf/markdown_perf.py
    PYTHONPATH=src python benchmarks/perf/markdown_perf.py --findings 1000 40000 --repeat 5

The report keeps within GitHub's size limit by cutting such a trace to its first findings, so its
cost should follow what it shows, not the number of findings. For each count the script prints
the best of ``--repeat`` times, in milliseconds, of:

* ``writer``: the Markdown writer of ``arh validate --md-out`` (``MarkdownWriter``: ``add``, then
  ``head`` and ``tail``), given the trace's report;
* ``render``: ``render_markdown`` of a run of that one trace;
* ``compare``: ``render_compare_markdown`` of a comparison in which the trace gains every finding
  (the comparison itself is made once, outside the timing);
* ``json``: the JSON writer (``--json-out``) of the same report, for scale: it writes every
  finding.

The findings are made from a fixed seed, with messages of a few words to a few hundred
characters, some with characters the report escapes. The arh measured is the one Python imports
(its path is printed), so ``PYTHONPATH`` chooses the checkout. Nothing is asserted; the script
only prints.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable

import agent_reliability_harness
from agent_reliability_harness.model.report import Finding, RunReport, TraceReport
from agent_reliability_harness.regression.compare import compare_reports
from agent_reliability_harness.regression.gate import evaluate_gate
from agent_reliability_harness.render.compare import render_compare_markdown
from agent_reliability_harness.render.json_report import JsonWriter
from agent_reliability_harness.render.markdown import MarkdownWriter, render_markdown

SEED = 20260614
DEFAULT_FINDINGS = (1_000, 10_000, 40_000)
_WORDS = ("tool", "refund", "account", "`code`", "a|b", "<b>", "@user", "#12", "$x$", "caf\u00e9")


def findings(count: int) -> tuple[Finding, ...]:
    rng = random.Random(f"{SEED}:{count}")
    made = []
    for i in range(count):
        message = " ".join(rng.choice(_WORDS) for _ in range(rng.choice((3, 12, 60))))
        made.append(
            Finding(
                "ARH-SCH-003",
                rng.choice(("error", "warning")),
                "schema",
                message,
                f"s{i}",
                expected="a string of at most 64 characters",
                observed=f"{rng.randrange(10**6)} characters",
                subject=f"/arguments/a{i}",
            )
        )
    return tuple(made)


def report(trace_findings: tuple[Finding, ...]) -> TraceReport:
    return TraceReport(
        "big-trace", "agent", "workflow", "policy", 0.0, not trace_findings, 10.0, 0.01, None,
        trace_findings, source_path="runs/big-trace.json",
    )  # fmt: skip


def best(repeat: int, work: Callable[[], object]) -> float:
    """The shortest of ``repeat`` runs of ``work``, in milliseconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times) * 1000


def measure(count: int, repeat: int) -> list[float]:
    trace = report(findings(count))
    run = RunReport((trace,), (), "policy", "0" * 64, "0.3.0")
    summary = run.summary()
    result = compare_reports(RunReport((report(()),)), run)
    gate = evaluate_gate(result, "regressions")

    def stream(writer: MarkdownWriter | JsonWriter) -> str:
        body = writer.add(trace)  # the totals are known after the last trace
        return writer.head(summary) + body + writer.tail(summary)

    return [
        best(repeat, lambda: stream(MarkdownWriter())),
        best(repeat, lambda: render_markdown(run)),
        best(repeat, lambda: render_compare_markdown(result, gate)),
        best(repeat, lambda: stream(JsonWriter())),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--findings", type=int, nargs="+", default=DEFAULT_FINDINGS)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"arh from {agent_reliability_harness.__path__[0]}")
    print(f"best of {args.repeat}, in ms")
    print(f"{'findings':>9} {'writer':>9} {'render':>9} {'compare':>9} {'json':>9}")
    for count in args.findings:
        times = measure(count, args.repeat)
        print(f"{count:>9,} " + " ".join(f"{t:>9.1f}" for t in times))


if __name__ == "__main__":
    main()
