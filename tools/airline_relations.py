"""The tau-bench airline rules that need counts, arithmetic and reservation state, written from
the domain's wiki.md (not tuned on the runs), and how often each fires in failed and successful
runs of the shared gpt-4o airline trajectories.

    python tools/airline_relations.py             # the table of lifts
    python tools/airline_relations.py --fragment  # the policy fragment, as JSON

The rules, from wiki.md:

* "Basic economy flights cannot be modified" (a cabin change keeps the flights, and is allowed):
  when the reservation, as last read back, is in basic economy, every flight number and every
  date of ``update_reservation_flights`` must be one the reservation already has.
* "The user can modify passengers but cannot modify the number of passengers": the passengers
  of ``update_reservation_passengers`` are as many as the reservation's.
* "a certificate ... with the amount being $100 times the number of passengers" (cancelled
  flights) or "$50 times the number of passengers" (delayed flights): the ``amount`` of
  ``send_certificate`` is 50 or 100 times the number of passengers of the reservation read last.

The reservation "as last read back" is the latest successful call, with the same
``reservation_id``, of any tool whose output is the reservation: the lookup, and the updates and
the cancellation, which return it changed (a cabin upgrade out of basic economy is then seen by
the flight change that follows it).

The lift of a rule is the share of failed runs (reward 0) in which it fires, divided by the share
of successful runs (reward 1) in which it fires; "-" when it never fires in a successful run
(or never at all). ``lift_rows`` is what tools/real_data_report.py can put in its tables.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Final

from agent_reliability_harness.engine import Validator
from agent_reliability_harness.model.policy import Policy

sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_data_report import tau_traces  # a sibling script, not a package

SAMPLE: Final = Path(__file__).resolve().parent.parent / "samples" / "policies" / "tau-airline.json"

# the tools whose output is the reservation: the lookup, and the writes that return it changed
RESERVATION: Final = [
    "get_reservation_details",
    "update_reservation_flights",
    "update_reservation_passengers",
    "update_reservation_baggages",
    "cancel_reservation",
]
SAME_RESERVATION: Final = {"reservation_id": "reservation_id"}

RELATIONS: Final[list[dict[str, Any]]] = [
    {
        "name": "basic-economy-flights-kept",
        "tool": "update_reservation_flights",
        "argument": "/flights/*/flight_number",
        "op": "in",
        "source": {
            "tool": RESERVATION,
            "output": "/flights/*/flight_number",
            "match": SAME_RESERVATION,
            "when": {"/cabin": {"equals": "basic_economy"}},
        },
        "if_missing": "skip",
        "description": "wiki.md: basic economy flights cannot be modified; a cabin change keeps "
        "the flights",
    },
    {
        "name": "basic-economy-dates-kept",
        "tool": "update_reservation_flights",
        "argument": "/flights/*/date",
        "op": "in",
        "source": {
            "tool": RESERVATION,
            "output": "/flights/*/date",
            "match": SAME_RESERVATION,
            "when": {"/cabin": {"equals": "basic_economy"}},
        },
        "if_missing": "skip",
        "description": "wiki.md: basic economy flights cannot be modified (nor moved to "
        "another day)",
    },
    {
        "name": "passenger-count-kept",
        "tool": "update_reservation_passengers",
        "argument": {"count": "/passengers/*"},
        "op": "==",
        "source": {
            "tool": RESERVATION,
            "output": {"count": "/passengers/*"},
            "match": SAME_RESERVATION,
        },
        "if_missing": "skip",
        "description": "wiki.md: the user cannot modify the number of passengers",
    },
    {
        "name": "certificate-per-passenger",
        "tool": "send_certificate",
        "argument": "amount",
        "op": "in",
        "source": {
            "tool": RESERVATION,
            "output": {"count": "/passengers/*"},
            "times": [50, 100],
        },
        "description": "wiki.md: $100 (cancelled flight) or $50 (delayed flight) times the "
        "number of passengers of the reservation, after confirming the facts",
    },
]


def policy() -> Policy:
    """The relations above, with the failure test of samples/policies/tau-airline.json (a tool
    result starting with 'Error:' is a failed call, which holds no reservation)."""
    return Policy.from_dict(
        {
            "schema_version": "1.1",
            "policy_id": "tau-airline-relations",
            "allow_unlisted_tools": True,
            "tool_failures": {"default": [{"pattern": "^Error:"}]},
            "relations": RELATIONS,
        }
    )


def lift(failed: int, failed_runs: int, succeeded: int, succeeded_runs: int) -> str:
    if not succeeded or not failed_runs or not succeeded_runs:
        return "-"
    return f"{(failed / failed_runs) / (succeeded / succeeded_runs):.1f}"


def lift_rows() -> list[tuple[str, str, int, int, int, int, str]]:
    """(rule ID, relation, failed runs with a finding, failed runs, successful runs with one,
    successful runs, lift) per rule row, then the row "(any)" of the fragment as a whole."""
    validator = Validator(policy())
    runs: Counter[bool] = Counter()
    fired: dict[tuple[str, str], Counter[bool]] = {}
    for relation in RELATIONS:
        fired["ARH-CND-003", relation["name"]] = Counter()
        if relation.get("if_missing", "fail") == "fail":
            fired["ARH-CND-004", relation["name"]] = Counter()
    anywhere: Counter[bool] = Counter()
    for trace, record in tau_traces():
        success = record["reward"] == 1.0
        runs[success] += 1
        seen = {(f.rule_id, f.subject.split(" ")[0]) for f in validator.validate(trace).findings}
        for row in seen:
            fired[row][success] += 1
        anywhere[success] += bool(seen)
    rows = [
        (rule, name, n[False], runs[False], n[True], runs[True], _lift(n, runs))
        for (rule, name), n in fired.items()
    ]
    rows.append(("", "(any)", anywhere[False], runs[False], anywhere[True], runs[True], ""))
    rows[-1] = (*rows[-1][:6], _lift(anywhere, runs))
    return rows


def _lift(tally: Counter[bool], runs: Counter[bool]) -> str:
    return lift(tally[False], runs[False], tally[True], runs[True])


def verdict_lift(document: dict[str, Any]) -> tuple[int, int, int, int, str]:
    """(failed runs that fail the policy, failed runs, successful runs that fail it, successful
    runs, lift) of a whole policy document."""
    validator = Validator(Policy.from_dict(document))
    runs: Counter[bool] = Counter()
    flagged: Counter[bool] = Counter()
    for trace, record in tau_traces():
        success = record["reward"] == 1.0
        runs[success] += 1
        flagged[success] += not validator.validate(trace).passed
    return flagged[False], runs[False], flagged[True], runs[True], _lift(flagged, runs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fragment", action="store_true", help="print the policy fragment")
    if parser.parse_args().fragment:
        print(json.dumps({"relations": RELATIONS}, indent=2))
        return 0
    print("| Rule | Relation | Failed runs with a finding | Successful runs with one | Lift |")
    print("|---|---|---:|---:|---:|")
    for rule, name, failed, failed_runs, good, good_runs, shown in lift_rows():
        print(
            f"| {rule or '-'} | {name} | {failed} of {failed_runs} | {good} of {good_runs} | "
            f"{shown} |"
        )
    sample = json.loads(SAMPLE.read_text(encoding="utf-8"))
    extended = {**sample, "relations": [*sample.get("relations", []), *RELATIONS]}
    print()
    print("| Policy | Failed runs it fails | Successful runs it fails | Lift |")
    print("|---|---:|---:|---:|")
    for label, document in (("tau-airline.json", sample), ("with the relations above", extended)):
        failed, failed_runs, good, good_runs, shown = verdict_lift(document)
        print(f"| {label} | {failed} of {failed_runs} | {good} of {good_runs} | {shown} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
