"""How long Python's re takes to search a text that the pattern does not match, for shapes the
policy loader's regex guard refuses or accepts (SECURITY.md, "Regular expressions").

Each search runs in its own process, stopped after --timeout seconds (shown as "> N s"). The
text is a run of n word characters, which none of the patterns can match.

    python benchmarks/perf/regex_shapes.py
    python benchmarks/perf/regex_shapes.py --timeout 60

It writes nothing and asserts no time.
"""

from __future__ import annotations

import argparse
import multiprocessing
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from agent_reliability_harness.model._regex import risky_repetition

# (pattern, lengths of the text): nested counted repetitions, shapes with a separator, atomic
# groups
CASES = [
    (r"(?:(?:\w+){2}){2}@evil", (50, 100, 150)),
    (r"(?:(?:(?:\w+){2}){2}){2}@evil", (20, 30, 40)),
    (r"(?:\w+\w+){2}@evil", (50, 100, 150)),
    (r"(?:\w+){4}@evil", (50, 100, 150)),
    (r"(?:\w+){3}@evil", (50, 100, 150)),
    (r"(?:(?:\w+){2}@){2}evil", (50, 100, 150)),
    # inside an atomic group, which backtracks until its body matches, and its safe counterpart
    (r"(?>(a+)+b)", (18, 22, 26)),
    (r"(?>a+)+b", (18, 22, 26)),
]


def _search(pattern: str, length: int) -> None:
    re.search(pattern, "a" * length)


def _timed(pattern: str, length: int, timeout: float) -> float | None:
    """Seconds one search took, or None when it was stopped after ``timeout``."""
    worker = multiprocessing.Process(target=_search, args=(pattern, length))
    start = time.perf_counter()
    worker.start()
    worker.join(timeout)
    elapsed = time.perf_counter() - start
    if worker.is_alive():
        worker.terminate()
        worker.join()
        return None
    return elapsed


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--timeout", type=float, default=10.0, help="seconds per search")
    args = options.parse_args()
    print(f"Python {sys.version.split()[0]}; text: n times 'a'; each search in its own process")
    print(f"{'pattern':<34} {'guard':<8} {'n':>4}  seconds")
    for pattern, lengths in CASES:
        verdict = "refused" if risky_repetition(pattern) else "accepted"
        for length in lengths:
            took = _timed(pattern, length, args.timeout)
            shown = f"> {args.timeout:g}" if took is None else f"{took:.2f}"
            print(f"{pattern:<34} {verdict:<8} {length:>4}  {shown}")


if __name__ == "__main__":
    main()
