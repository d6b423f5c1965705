"""Run the prefilter's differential property tests for a long time (offline; not part of make test).

The tests in tests/test_prefilter.py compare the unsafe-pattern prefilter and the whole safety
scan with plain ``re.search(pattern, text, re.IGNORECASE)`` on generated patterns (negated
classes, scoped flags, category escapes, non-ASCII digits and letters with special case folding)
and texts. ``make test`` runs a few thousand examples; this runs rounds of fresh random examples
until the time is up, and stops at the first counterexample.

    python tools/fuzz_prefilter.py --minutes 30     # or: make fuzz FUZZ_MINUTES=30

Prints the examples run per test and the time taken; exits 1 with the counterexample on a failure.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import test_prefilter as tests

ROUND = 2000


def _texts() -> Any:
    return st.lists(st.text(alphabet=tests.ALPHABET, max_size=30), min_size=1, max_size=3)


def _rounds() -> dict[str, Any]:
    per_text = tests.test_prefilter_never_rejects_a_matching_text.hypothesis.inner_test
    scan = tests.test_the_scan_finds_exactly_what_plain_search_finds.hypothesis.inner_test
    options = settings(
        max_examples=ROUND,
        deadline=None,
        database=None,
        phases=[Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
    )
    return {
        "prefilter vs re.search, text by text": options(
            given(tests.patterns(), _texts())(per_text)
        ),
        "safety scan vs re.search, whole traces": options(
            given(
                st.lists(tests.patterns(), min_size=1, max_size=3),
                st.lists(
                    st.tuples(
                        tests.VALUES, tests.VALUES, st.text(alphabet=tests.ALPHABET, max_size=20)
                    ),
                    max_size=4,
                ),
                st.sampled_from([None, 1, 9, 40]),
            )(scan)
        ),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="how long to run (default 10)")
    args = parser.parse_args()
    rounds = _rounds()
    counts = dict.fromkeys(rounds, 0)
    start = time.monotonic()
    deadline = start + args.minutes * 60
    while time.monotonic() < deadline:
        for name, run in rounds.items():
            run()  # raises, with hypothesis's report of the counterexample, on a failure
            counts[name] += ROUND
    elapsed = time.monotonic() - start
    for name, count in counts.items():
        print(f"{name}: {count} examples, no counterexample")
    print(f"{elapsed / 60:.1f} minutes, Python {sys.version.split()[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
