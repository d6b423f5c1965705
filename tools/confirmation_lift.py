"""How well the confirmation rules separate failed from successful tau-bench airline runs.

The runs are the gpt-4o airline trajectories in ../shared (read as ``arh validate`` reads them
with ``--messages-at /traj --trace-id-at /task_id --trace-id-at /trial``; reward 1 = solved). The
policy is samples/policies/tau-airline.json with its ``confirmation`` section replaced by
:data:`CONFIRMATION`, written from the domain's rules (tau-bench ``wiki.md``), not from the runs:

* "before taking any actions that update the booking database [...] you must list the action
  details and obtain explicit user confirmation (yes) to proceed": every write is guarded and
  its ``state`` names the details the agent lists in words that a user can check (reservation,
  flights, cabin, passengers, bag count, certificate amount; payment ids and dates are left out,
  since agents write them in other forms, "card ending in 1234", "May 20");
* "if you make a tool call, you should not respond to the user simultaneously":
  ``separate_text_and_calls``.

For each confirmation rule: the runs with at least one finding of it, among the failed and the
successful runs, and the lift (share of failed runs with one / share of successful runs with one).

    python tools/confirmation_lift.py

Other scripts can call :func:`confirmation_table` with another policy.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from typing import Any, Final

from agent_reliability_harness.engine import Validator
from agent_reliability_harness.model.policy import Policy
from real_data_report import POLICIES, TAU, _lift, _share, tau_traces

RULE_IDS: Final = ("ARH-CFM-001", "ARH-CFM-002", "ARH-CFM-003", "ARH-CFM-004")

CONFIRMATION: Final[dict[str, Any]] = {
    "tools": [
        {
            "tool": "book_reservation",
            "state": [
                "/flights/*/flight_number",
                "cabin",
                "/passengers/*/first_name",
                "/passengers/*/last_name",
            ],
        },
        {"tool": "cancel_reservation", "state": ["reservation_id"]},
        {
            "tool": "update_reservation_flights",
            "state": ["reservation_id", "/flights/*/flight_number", "cabin"],
        },
        {"tool": "update_reservation_baggages", "state": ["reservation_id", "total_baggages"]},
        {
            "tool": "update_reservation_passengers",
            "state": ["reservation_id", "/passengers/*/first_name", "/passengers/*/last_name"],
        },
        {"tool": "send_certificate", "state": ["amount"]},
    ],
    "separate_text_and_calls": True,
}


def airline_policy(confirmation: dict[str, Any] | None = None) -> Policy:
    """samples/policies/tau-airline.json with ``confirmation`` (default :data:`CONFIRMATION`)."""
    document = json.loads((POLICIES / "tau-airline.json").read_text(encoding="utf-8"))
    document["confirmation"] = CONFIRMATION if confirmation is None else confirmation
    return Policy.from_dict(document)


def confirmation_counts(policy: Policy) -> tuple[Counter[bool], dict[str, Counter[bool]]]:
    """Runs by outcome (True: solved), and per confirmation rule the runs it fires in."""
    validator = Validator(policy)
    runs: Counter[bool] = Counter()
    fired: dict[str, Counter[bool]] = {rule_id: Counter() for rule_id in (*RULE_IDS, "any")}
    for trace, record in tau_traces():
        success = record["reward"] == 1.0
        runs[success] += 1
        seen = {f.rule_id for f in validator.validate(trace).findings} & set(RULE_IDS)
        for rule_id in seen:
            fired[rule_id][success] += 1
        if seen:
            fired["any"][success] += 1
    return runs, fired


def confirmation_table(policy: Policy) -> str:
    """A Markdown table of :func:`confirmation_counts`."""
    runs, fired = confirmation_counts(policy)
    rows = [
        f"| Rule | Failed runs (of {runs[False]}) | Successful runs (of {runs[True]}) | Lift |",
        "|---|---:|---:|---:|",
    ]
    for rule_id, tally in fired.items():
        label = "any confirmation rule" if rule_id == "any" else rule_id
        rows.append(
            f"| {label} | {_share(tally[False], runs[False])} | "
            f"{_share(tally[True], runs[True])} | {_lift(tally, runs)} |"
        )
    return "\n".join(rows)


def main() -> int:
    if not TAU.is_file():
        print(f"the tau-bench runs are not in {TAU} (set ARH_SHARED_DIR)", file=sys.stderr)
        return 2
    print("confirmation:", json.dumps(CONFIRMATION, indent=2))
    print()
    print(confirmation_table(airline_policy()))
    print()
    print("the same, with the sample's confirmation section as it is (one list, one pattern):")
    print()
    sample = json.loads((POLICIES / "tau-airline.json").read_text(encoding="utf-8"))
    print(confirmation_table(airline_policy(sample["confirmation"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
