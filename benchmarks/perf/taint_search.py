#!/usr/bin/env python3
"""Where the provenance rule should switch from ``str.find`` to its Aho-Corasick automaton.

The rule finds the first occurrence of each of ``k`` distinct values in a corpus of ``n``
characters (``rules/_taint.py``). ``str.find`` costs one pass over the corpus per value, at C
speed; the automaton one pass for all values, in Python. This script times both on generated
text (words of random letters, normalised as the rule normalises; half of the values occur in
it, half do not, so the automaton cannot stop early), checks that they give the same offsets,
and prints, for each corpus size, the times and the smallest ``k`` at which the automaton wins.
``FIND_LIMIT`` in ``_taint.py`` is chosen below that.

Run it as ``python benchmarks/perf/taint_search.py``; it writes nothing, and asserts no time.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from agent_reliability_harness.rules._taint import (  # noqa: E402
    FIND_LIMIT,
    _automaton_first,
    normalise,
)
from perf import render_text  # noqa: E402


def _finds(text: str, needles: list[str]) -> list[int]:
    return [text.find(needle) for needle in needles]


def _best(
    repeat: int, search: Callable[[str, list[str]], list[int]], text: str, needles: list[str]
) -> tuple[float, list[int]]:
    times, result = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        result = search(text, needles)
        times.append(time.perf_counter() - start)
    return min(times), result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 1_000_000])
    parser.add_argument("--counts", type=int, nargs="+", default=[32, 64, 128, 256, 512, 1024])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=20261130)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = ["".join(rng.choices(letters, k=rng.randint(2, 9))) for _ in range(5000)]
    rows = []
    crossover: dict[int, int | None] = {}
    for size in args.sizes:
        text = normalise(" ".join(rng.choices(words, k=max(size // 6, 2))))
        crossover[len(text)] = None
        for count in args.counts:
            absent = [" ".join(rng.choices(words, k=2)) + "q" for _ in range(count // 2)]
            present = [text[i : i + 12] for i in rng.sample(range(len(text) - 12), count // 2)]
            needles = [n for n in dict.fromkeys(absent + present) if n.strip()]
            found, by_find = _best(args.repeat, _finds, text, needles)
            built, by_automaton = _best(args.repeat, _automaton_first, text, needles)
            if by_find != by_automaton:
                print(f"results differ at n={len(text)} k={len(needles)}", file=sys.stderr)
                return 1
            if built < found and crossover[len(text)] is None:
                crossover[len(text)] = len(needles)
            rows.append([
                f"{len(text):,}", f"{len(needles):,}", f"{found * 1e3:.2f}",
                f"{built * 1e3:.2f}", f"{built / found:.1f}",
            ])  # fmt: skip
    print(f"first occurrences of k values in n characters, best of {args.repeat} (ms):")
    print(render_text(("n", "k", "str.find", "automaton", "automaton/find"), rows, left=0))
    for size, count in crossover.items():
        where = f"from k = {count:,}" if count else "at none of these k"
        print(f"n = {size:,}: the automaton is faster {where}")
    print(f"FIND_LIMIT in rules/_taint.py: {FIND_LIMIT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
