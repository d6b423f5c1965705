#!/usr/bin/env python3
"""How the safety rule's time grows with many unsafe patterns, on ordinary and adversarial text.

A policy of ``--patterns`` generated unsafe patterns (default 1,000; each names two random words,
as ``\\bWORD[_-]?WORD\\s*[:=]\\s*\\S+``, in five shapes) is checked against one trace of
model-response steps of about a kilobyte each, in two kinds of text:

* *ordinary*: words from another vocabulary, so that the prefilter rules every pattern out with a
  few passes over the text;
* *adversarial*: near misses of every pattern in every step: the pattern's words with a letter
  glued in front, so that every test short of the real search passes (the prefilter drops
  ``\\b``) and each pattern is searched, in vain, in every step's text (each step then holds
  all of them, about 15 characters a pattern).

For each kind and each size (``--sizes``, in MB) it prints the time ``Validator.validate`` takes
(best of ``--repeat``), in seconds per MB, and the time of searching every pattern in every string
with ``re.search`` alone (what the rule would cost without its prefilter). Equal seconds per MB
at each size mean the time is linear in the text. Nothing is asserted.

    python benchmarks/perf/many_patterns.py            # print the table
    python benchmarks/perf/many_patterns.py --write    # and put it into docs/large-runs.md
"""

from __future__ import annotations

import argparse
import platform
import random
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from agent_reliability_harness import Policy, Trace  # noqa: E402
from agent_reliability_harness.engine import Validator  # noqa: E402
from perf import render_markdown, render_text  # noqa: E402

START_MARK = "<!-- many-patterns:start -->"
END_MARK = "<!-- many-patterns:end -->"
STEP_CHARS = 1000
# Each shape: the pattern, and a near miss that only the word boundary keeps from matching.
SHAPES = (
    (r"\b{a}[_-]?{b}\s*[:=]\s*\S+", "x{a}_{b}: v"),
    (r"\b{a} (?:the )?{b}\b", "x{a} the {b}"),
    (r"\b{a}{b}\d{{4,}}\b", "x{a}{b}12345"),
    (r"\b(?:{a}|{b})-\d{{2}}-\d{{4}}\b", "x{a}-12-3456"),
    (r"\b{a}\W+{b}\b", "x{a}, {b}"),
)


def _words(rng: random.Random, count: int, letters: str) -> list[str]:
    found: set[str] = set()
    while len(found) < count:
        found.add("".join(rng.choices(letters, k=rng.randint(5, 9))))
    return sorted(found)


def _policy_and_misses(count: int, rng: random.Random) -> tuple[list[str], list[str]]:
    words = _words(rng, 2 * count, "abcdefghijklm")  # pattern words: the first half of a-z
    rng.shuffle(words)
    patterns, misses = [], []
    for index in range(count):
        pattern, miss = SHAPES[index % len(SHAPES)]
        a, b = words[2 * index], words[2 * index + 1]
        patterns.append(pattern.format(a=a, b=b))
        misses.append(miss.format(a=a, b=b))
    return patterns, misses


def _ordinary(words: list[str], megabytes: float, rng: random.Random) -> list[str]:
    """Step texts of about STEP_CHARS characters of random words, ``megabytes`` in all."""
    texts: list[str] = []
    while sum(map(len, texts)) < megabytes * 1_000_000:
        step: list[str] = []
        while sum(map(len, step)) + len(step) < STEP_CHARS:
            step.append(rng.choice(words))
        texts.append(" ".join(step))
    return texts


def _adversarial(misses: list[str], megabytes: float, rng: random.Random) -> list[str]:
    """Step texts that each hold every near miss, in a random order, ``megabytes`` in all."""
    texts: list[str] = []
    while sum(map(len, texts)) < megabytes * 1_000_000:
        texts.append(" ".join(rng.sample(misses, len(misses))))
    return texts


def _trace(texts: list[str]) -> Trace:
    return Trace.from_dict(
        {
            "trace_id": "t",
            "agent_name": "a",
            "workflow": "w",
            "steps": [
                {"step_id": f"s{i}", "type": "model_response", "text": text}
                for i, text in enumerate(texts)
            ],
        }
    )


def _best(repeat: int, run: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--patterns", type=int, default=1000)
    parser.add_argument("--sizes", type=float, nargs="+", default=[0.25, 1.0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--seed", type=int, default=20261207)
    parser.add_argument("--write", action="store_true", help="put the table into the docs")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    patterns, misses = _policy_and_misses(args.patterns, rng)
    ordinary_words = _words(rng, 5000, "nopqrstuvwxyz")  # never a pattern word
    policy = Policy.from_dict({"policy_id": "many", "unsafe_patterns": patterns})
    validator = Validator(policy)
    compiled = [re.compile(p, re.IGNORECASE) for p in patterns]
    rows = []
    for kind, make, pieces in (
        ("ordinary", _ordinary, ordinary_words),
        ("adversarial", _adversarial, misses),
    ):
        for size in args.sizes:
            texts = make(pieces, size, rng)
            megabytes = sum(map(len, texts)) / 1_000_000
            trace = _trace(texts)
            report = validator.validate(trace)
            assert not report.findings, "a near miss matched: the benchmark is wrong"
            arh = _best(args.repeat, lambda trace=trace: validator.validate(trace))
            plain = _best(1, lambda texts=texts: [r.search(t) for t in texts for r in compiled])
            rows.append(
                [kind, f"{megabytes:.2f}", f"{arh:.2f}", f"{arh / megabytes:.2f}",
                 f"{plain / megabytes:.2f}"]
            )  # fmt: skip
            print(f"{kind} {megabytes:.2f} MB: {arh:.2f} s", file=sys.stderr)
    header = ["text", "MB", "arh s", "arh s/MB", "re.search alone s/MB"]
    print(render_text(header, rows))
    if args.write:
        doc = ROOT / "docs" / "large-runs.md"
        text = doc.read_text(encoding="utf-8")
        head, rest = text.split(START_MARK)
        _, tail = rest.split(END_MARK)
        machine = f"Python {platform.python_version()} on {platform.machine()}"
        table = render_markdown(header, rows)
        command = "python benchmarks/perf/many_patterns.py --write"
        section = (
            f"{START_MARK}\n{args.patterns} unsafe patterns, {machine} (`{command}`):\n\n"
            f"{table}\n{END_MARK}"
        )
        doc.write_text(head + section + tail, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
