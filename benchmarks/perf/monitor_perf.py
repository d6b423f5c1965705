#!/usr/bin/env python3
"""Cost of the runtime guard: microseconds per ``Monitor.check`` and ``Monitor.observe``.

    python benchmarks/perf/monitor_perf.py  # 1.0: 1,000 to 100,000 steps; 1.1: 1,000 and 10,000
    python benchmarks/perf/monitor_perf.py --steps 500 5000 --steps-11 500 5000 --repeat 3

Each run is generated from a fixed seed: tool calls of a support agent (lookups, searches, the
odd refund with a side effect, retried errors), model responses with citations, user turns, and
metrics on every step, checked against a policy that turns on every rule the guard decides early
(argument contracts, forbidden tools, call order, max_calls, retry storms, duplicate side
effects, total budgets, max_steps, unsafe patterns, grounding). Each step is checked the way an
agent loop would check it (name and arguments only) and then observed with its outcome.

The early rules cost amortised O(1) per step, so the time per check must stay flat as runs get
longer; the offline validation of the whole run is printed beside it for scale. A second table
does the same for a policy of language 1.1 that adds every section of that language:
provenance (sink values from fetched documents, looked up in the text recorded so far),
conditions and relations (refunds over 300 need an earlier lookup of the account; a refund at
most the looked-up balance), confirmation before every side effect, and loops (identical calls
within a window, cycles). These are decided from per-run state too, so their time per check
should also stay flat; provenance costs a search of the text added since a value was last
looked up (all of it, for a value never seen before), at C speed. Nothing is asserted; the
script only prints.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from agent_reliability_harness.engine import Validator  # noqa: E402
from agent_reliability_harness.model.policy import Policy  # noqa: E402
from agent_reliability_harness.model.trace import Step, Trace  # noqa: E402
from agent_reliability_harness.monitor import Monitor  # noqa: E402

SEED = 20260613
DEFAULT_STEPS = (1_000, 10_000, 100_000)
DEFAULT_STEPS_11 = (1_000, 10_000)
TOOLS = ("lookup_account", "search_kb", "fetch_document", "create_ticket", "issue_refund")

POLICY = {
    "schema_version": "1",
    "policy_id": "monitor-perf",
    "allowed_tools": {
        "lookup_account": {
            "required_arguments": {"account": {"type": "str", "pattern": "AC-\\d+"}}
        },
        "search_kb": {
            "required_arguments": {"query": "str"},
            "optional_arguments": {"limit": {"type": "int", "min": 1, "max": 20}},
        },
        "fetch_document": {"required_arguments": {"doc_id": "str"}},
        "create_ticket": {
            "required_arguments": {"account": "str", "priority": {"enum": ["low", "high"]}},
            "side_effect": True,
        },
        "issue_refund": {
            "required_arguments": {"account": "str", "amount": {"type": "float", "max": 500}},
            "side_effect": True,
            "max_calls": 1_000_000,
        },
    },
    "sequence": {
        "forbidden_tools": ["delete_account"],
        "call_order": ["lookup_account", "create_ticket", "issue_refund"],
    },
    "error_handling": {"max_attempts": 3},
    "budgets": {
        "max_step_latency_ms": 30_000,
        "max_total_latency_ms": 1e12,
        "max_total_cost_usd": 1e9,
        "max_total_tokens": 10**12,
    },
    "unsafe_patterns": [
        "ignore (all|any|the) (previous|prior) instructions",
        "\\bpassword\\s*[:=]",
        "\\b\\d{3}-\\d{2}-\\d{4}\\b",
    ],
    "grounding": {"require_citations": True, "require_valid_citation_urls": True},
    "completion": {"max_steps": 10_000_000},
}
POLICY_11 = {
    **POLICY,
    "schema_version": "1.1",
    "policy_id": "monitor-perf-11",
    "provenance": {
        "untrusted": {"tools": ["fetch_document"]},
        "trusted_tools": ["lookup_account"],
        "sinks": [{"tool": "create_ticket", "argument": "account"}],
    },
    "conditions": [
        {
            "name": "big-refund-needs-lookup",
            "tool": "issue_refund",
            "when": {"amount": {"exclusive_min": 300}},
            "require_prior": [{"tool": "lookup_account", "match": {"account": "account"}}],
        },
        {
            "name": "no-tickets-for-the-test-account",
            "tool": "create_ticket",
            "when": {"account": {"enum": ["AC-100000"]}},
            "forbid": True,
        },
    ],
    "relations": [
        {
            "name": "refund-within-balance",
            "tool": "issue_refund",
            "argument": "amount",
            "op": "<=",
            "source": {
                "tool": "lookup_account",
                "output": "/balance",
                "match": {"account": "account"},
            },
            "if_missing": "skip",
        }
    ],
    "confirmation": {},
    "loops": {"max_identical_calls": 20, "window": 100, "max_cycle_repeats": 20},
}
WORDS = ("refund", "order", "account", "delayed", "shipment", "invoice", "reset", "login", "plan")


def _words(rng: random.Random, count: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(count))


def generate(steps: int, seed: int) -> list[dict[str, Any]]:
    """A run of ``steps`` steps, mostly well-behaved, with metrics on every agent step.

    Now and then the agent gets stuck for 50 tool calls, alternating between one search and
    one document (identical calls and a cycle, for the loop rules)."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    stuck = 0
    loop: list[tuple[str, dict[str, Any]]] = []
    for index in range(steps):
        step: dict[str, Any] = {"step_id": f"s{index}"}
        roll = rng.random()
        if roll < 0.05:
            yes = rng.random() < 0.5
            step.update(type="user_message", text=("yes, " if yes else "") + _words(rng, 8))
            out.append(step)
            continue
        if roll < 0.2:
            step.update(
                type="model_response",
                text=_words(rng, 30),
                requires_grounding=True,
                citations=[{"url": f"https://kb.example/{rng.randrange(500)}"}],
            )
        else:
            tool = rng.choice(TOOLS)
            account = f"AC-{100_000 + rng.randrange(1_000)}"
            arguments: dict[str, Any] = {
                "lookup_account": {"account": account},
                "search_kb": {"query": _words(rng, 4), "limit": rng.randint(1, 20)},
                "fetch_document": {"doc_id": f"D{rng.randrange(2_000)}"},
                "create_ticket": {"account": account, "priority": rng.choice(["low", "high"])},
                "issue_refund": {"account": account, "amount": round(rng.uniform(1, 400), 2)},
            }[tool]
            if not stuck and rng.random() < 0.002:
                stuck = 50
                loop = [
                    ("search_kb", {"query": _words(rng, 4), "limit": 5}),
                    ("fetch_document", {"doc_id": f"D{rng.randrange(2_000)}"}),
                ]
            if stuck:
                stuck -= 1
                tool, arguments = loop[stuck % 2]
            failed = rng.random() < 0.05
            step.update(
                type="tool_call",
                tool_name=tool,
                arguments=arguments,
                status="error" if failed else "ok",
                output=None if failed else {"result": _words(rng, 12), "account": account},
            )
            if tool == "lookup_account" and not failed:
                step["output"]["balance"] = round(rng.uniform(0, 500), 2)
            if failed:
                step["error"] = "timeout"
        step.update(
            latency_ms=round(rng.uniform(5, 900), 3),
            cost_usd=round(rng.uniform(0, 0.002), 6),
            input_tokens=rng.randrange(50, 900),
            output_tokens=rng.randrange(5, 200),
        )
        out.append(step)
    return out


def _intent(step: Step) -> Step:
    if step.type != "tool_call":
        return step
    return Step(step.step_id, step.type, step.tool_name, step.arguments)


def measure(policy: Policy, raw: list[dict[str, Any]]) -> tuple[float, float, float, int]:
    """(µs per check, µs per observe, µs per step of offline validation, findings raised)."""
    steps = [Step.from_dict(s, pointer=f"/steps/{i}") for i, s in enumerate(raw)]
    intents = [_intent(step) for step in steps]
    monitor = Monitor(policy)
    check_s = observe_s = 0.0
    raised = 0
    clock = time.perf_counter
    for intent, step in zip(intents, steps, strict=True):
        start = clock()
        found = monitor.check(intent)
        middle = clock()
        found += monitor.observe(step)
        end = clock()
        check_s += middle - start
        observe_s += end - middle
        raised += len(found)
    trace = Trace("perf", "", "", tuple(steps))
    start = clock()
    Validator(policy).validate(trace)
    offline_s = clock() - start
    per = 1e6 / max(1, len(steps))
    return check_s * per, observe_s * per, offline_s * per, raised


def table(title: str, policy: Policy, sizes: list[int], repeat: int, seed: int) -> None:
    print(f"\n{title}")
    header = ("steps", "check us", "observe us", "offline us/step", "early findings")
    print("  ".join(f"{h:>15}" for h in header))
    for size in sizes:
        raw = generate(size, seed)
        best = min((measure(policy, raw) for _ in range(repeat)), key=lambda r: r[0] + r[1])
        check_us, observe_us, offline_us, raised = best
        cells = (f"{size:,}", f"{check_us:.1f}", f"{observe_us:.1f}", f"{offline_us:.1f}")
        print("  ".join(f"{c:>15}" for c in (*cells, f"{raised:,}")))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, nargs="+", default=list(DEFAULT_STEPS))
    parser.add_argument("--steps-11", type=int, nargs="*", default=list(DEFAULT_STEPS_11))
    parser.add_argument("--repeat", type=int, default=1, help="best of this many runs")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    print(f"Python {sys.version.split()[0]}; best of {args.repeat}; seed {args.seed}")
    table(
        "policy 1.0 (every early rule)",
        Policy.from_dict(POLICY),
        args.steps,
        args.repeat,
        args.seed,
    )
    if args.steps_11:
        table(
            "policy 1.1 (also provenance, conditions, relations, confirmation, loops)",
            Policy.from_dict(POLICY_11),
            args.steps_11,
            args.repeat,
            args.seed,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
