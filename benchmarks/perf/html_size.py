#!/usr/bin/env python3
"""Measure how large ``arh validate --html-out`` pages get for big runs (docs/html-report.md).

Two runs of ``--traces`` traces (10,000 by default) are validated in this process, one trace at a
time, and their HTML pages are rendered exactly as the command line does (the traces the page
expands are kept by ``ValidationTraces``), then the page sizes are printed:

* realistic: the support-assistant traces of benchmarks/perf/perf.py (fixed seed) against its
  policy;
* adversarial: every trace fails, with ids, names and values built to make the HTML as large as
  possible: characters that need long escapes, more steps and findings than a page shows, and
  values longer than it shows.

Run it as ``python benchmarks/perf/html_size.py``; no time is measured. With ``--write`` it also
puts the table of sizes, and the longest table row of the two pages, between the markers
``<!-- html-size:start -->`` and ``<!-- html-size:end -->`` of docs/html-report.md (the test suite
checks that they are what this script measures); nothing else writes those numbers.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

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


class Page(NamedTuple):
    traces: int
    failing: int
    expanded: int
    characters: int
    size: int  # bytes of UTF-8
    longest_row: int  # characters of the longest table row


def measure(policy: Policy, traces: Iterator[dict[str, Any]]) -> Page:
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
    return Page(
        len(run.reports),
        len(run.reports) - run.passed_traces,
        text.count('<section class="trace'),
        len(text),
        len(text.encode("utf-8", "surrogatepass")),
        max((len(row) for row in re.findall(r"<tr>.*?</tr>", text, re.DOTALL)), default=0),
    )


def measure_both(count: int, steps: int, seed: int) -> tuple[Page, Page]:
    """The pages of the realistic and the adversarial run of ``count`` traces."""
    return measure(*realistic(count, steps, seed)), measure(*adversarial(count))


DOC = Path(__file__).resolve().parents[2] / "docs" / "html-report.md"
START, END = "<!-- html-size:start -->", "<!-- html-size:end -->"


def doc_block(realistic_page: Page, adversarial_page: Page, steps: int) -> str:
    """The text between the markers of docs/html-report.md."""
    longest = max(realistic_page.longest_row, adversarial_page.longest_row)
    rows = [
        (
            (
                f"realistic support-assistant traces of {steps} steps "
                "(benchmarks/perf/perf.py's generator)"
            ),
            realistic_page,
        ),
        (
            (
                "adversarial: every trace fails, with 600 steps, values of 15,000 characters that "
                "all need long escapes, names of 1,000 characters"
            ),
            adversarial_page,
        ),
    ]
    lines = [
        (
            f"For {realistic_page.traces:,} traces, measured with "
            "`python benchmarks/perf/html_size.py` (the longest table row of the two pages has "
            f"{longest:,} characters):"
        ),
        "",
        "| Run | Failing | Shown step by step | Page |",
        "|---|---|---|---|",
        *(
            f"| {label} | {page.failing:,} | {page.expanded} | {page.size / 1e6:.1f} MB |"
            for label, page in rows
        ),
    ]
    return "\n".join(lines)


def write_doc(block: str, path: Path = DOC) -> None:
    text = path.read_text(encoding="utf-8")
    start, end = text.index(START) + len(START), text.index(END)
    path.write_text(f"{text[:start]}\n{block}\n{text[end:]}", encoding="utf-8")


def _print(label: str, page: Page) -> None:
    print(
        f"{label:12} {page.traces:>7,} traces {page.failing:>7,} failing  {page.expanded:>3} "
        f"expanded  {page.characters:>12,} characters  {page.size:>12,} bytes "
        f"({page.size / 1e6:.1f} MB), longest row {page.longest_row:,} characters"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=10_000)
    parser.add_argument("--steps", type=int, default=12, help="steps per realistic trace")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument(
        "--write", action="store_true", help="put the table into docs/html-report.md"
    )
    args = parser.parse_args()
    print(
        f"limits: {html.EXPANDED_FAILING} failing + {html.EXPANDED_PASSING} passing traces "
        f"expanded within {html.PAGE_CHARS:,} characters, {html.MAX_ROWS:,} rows per table"
    )
    pages = measure_both(args.traces, args.steps, args.seed)
    _print("realistic", pages[0])
    _print("adversarial", pages[1])
    if args.write:
        write_doc(doc_block(*pages, args.steps))
        print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
