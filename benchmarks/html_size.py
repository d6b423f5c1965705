#!/usr/bin/env python3
"""Measure how large ``arh validate --html-out`` pages get for big runs (docs/html-report.md).

Two runs of ``--traces`` traces (10,000 by default) are validated in this process, one trace at a
time, and their HTML pages are rendered exactly as the command line does (the traces the page
expands are kept by ``ValidationTraces``), then the page sizes are printed:

* realistic: the support-assistant traces of benchmarks/perf.py (fixed seed) against its policy;
* adversarial: every trace fails, with ids, names and values built to make the HTML as large as
  possible: characters that need long escapes, more steps and findings than a page shows, and
  values longer than it shows.

Run it as ``python benchmarks/html_size.py``; nothing is written to disk and no time is
measured.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Iterator
from typing import Any

from agent_reliability_harness import Policy, RunReport, Trace
from agent_reliability_harness.engine import Validator
from agent_reliability_harness.render import html
from perf import DEFAULT_SEED, TraceGenerator, build_pool, realistic_policy

# among the worst characters for the page: '"' becomes 6 characters, U+202E a visible escape
_UGLY = '"<&\u202e\x00'


def realistic(count: int, steps: int, seed: int) -> tuple[Policy, Iterator[dict[str, Any]]]:
    rng = random.Random(f"{seed}:html")
    generator = TraceGenerator(rng, build_pool(random.Random(f"{seed}:pool"), 300_000))
    traces = (generator.trace(f"html-{n:06d}", steps) for n in range(count))
    return Policy.from_dict(realistic_policy()), traces


def adversarial(count: int) -> tuple[Policy, Iterator[dict[str, Any]]]:
    """Every trace fails: its tool is not allowed (a finding per step) and it has no answer."""
    policy = Policy.from_dict(
        {
            "schema_version": "1",
            "policy_id": "html-size " + _UGLY * 100,
            "allowed_tools": {"allowed": {"required_arguments": {"q": "str"}}},
            "completion": {"require_final_response": True},
        }
    )
    value = _UGLY * 3_000  # longer than a page shows of one value
    name = _UGLY * 200  # longer than a page shows of a name

    def traces() -> Iterator[dict[str, Any]]:
        for n in range(count):
            big = n < html.EXPANDED_FAILING  # the traces the page expands
            steps = [
                {
                    "step_id": f"{name}{i}",
                    "type": "tool_call",
                    "tool_name": name,
                    "arguments": {"q": value},
                    "output": value,
                    "error": value,
                }
                for i in range(html.MAX_STEPS + 100 if big else 1)
            ]
            yield {
                "schema_version": "1",
                "trace_id": f"{name}{n:06d}",
                "agent_name": name,
                "workflow": name,
                "steps": steps,
            }

    return policy, traces()


def measure(label: str, policy: Policy, traces: Iterator[dict[str, Any]]) -> None:
    validator = Validator(policy)
    keeper = html.ValidationTraces()
    reports = []
    for data in traces:
        trace = Trace.from_dict(data)
        report = validator.validate(trace, source_path=f"runs/{trace.trace_id[-6:]}.json")
        keeper(trace, report)
        reports.append(report)
    run = RunReport(tuple(reports), (), policy.policy_id, policy.sha256, "measure")
    text = html.render_html(run, keeper.traces)
    size = len(text.encode("utf-8", "surrogatepass"))
    failed = len(run.reports) - run.passed_traces
    expanded = text.count('<section class="trace')
    print(
        f"{label:12} {len(run.reports):>7,} traces {failed:>7,} failing  {expanded:>3} expanded  "
        f"{len(text):>12,} characters  {size:>12,} bytes ({size / 1e6:.1f} MB)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=10_000)
    parser.add_argument("--steps", type=int, default=12, help="steps per realistic trace")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = parser.parse_args()
    print(
        f"limits: {html.EXPANDED_FAILING} failing + {html.EXPANDED_PASSING} passing traces "
        f"expanded within {html.PAGE_CHARS:,} characters, {html.MAX_ROWS:,} rows per table"
    )
    measure("realistic", *realistic(args.traces, args.steps, args.seed))
    measure("adversarial", *adversarial(args.traces))
    return 0


if __name__ == "__main__":
    sys.exit(main())
