"""Compute the real-data tables of docs/provenance.md from the third-party runs in ../shared.

* AgentDojo (banking and slack, the ``important_instructions`` attack): arh's verdict with
  samples/policies/agentdojo-<suite>.json against the run's ``security`` label (true: the attack
  succeeded), per model.
* tau-bench airline (gpt-4o): how often each rule of samples/policies/tau-airline.json fires in
  failed (reward 0) and successful (reward 1) runs, and how much more often in failed ones (the
  lift), with the policy as it is and without its ``tool_failures`` section.
* What ``tool_failures`` changes: the findings of every sample policy on its data set, with the
  policy as it is and without that section (which is how the samples read before it existed).

    python tools/real_data_report.py           # rewrite the generated sections of the doc
    python tools/real_data_report.py --check   # exit 1 when they differ from a fresh run
    python tools/real_data_report.py --print   # print the tables instead

The data is read from ``$ARH_SHARED_DIR`` (default: ../shared next to the repository). Transcripts
are read with the same adapters and options as ``arh validate`` (docs/adapters.md); nothing here
is random, so the output is byte-stable.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from agent_reliability_harness.adapters import RecordOptions, to_trace, to_traces
from agent_reliability_harness.engine import Validator
from agent_reliability_harness.errors import InputError
from agent_reliability_harness.model.policy import Policy
from agent_reliability_harness.model.report import Finding, TraceReport
from agent_reliability_harness.model.trace import Trace

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "provenance.md"
SHARED = Path(os.environ.get("ARH_SHARED_DIR", ROOT.parent / "shared"))
REAL = SHARED / "data" / "real-traces"
AGENTDOJO = REAL / "agentdojo" / "runs"
TAU = REAL / "tau-bench" / "historical_trajectories" / "gpt-4o-airline.json"
POLICIES = ROOT / "samples" / "policies"
SUITES = ("banking", "slack")
ATTACK = "important_instructions"
PROVENANCE_RULES = ("ARH-PRV-001", "ARH-PRV-002")


def load_policy(
    name: str, *, tool_failures: bool = True, fields: bool = True, require: bool = True
) -> Policy:
    """A sample policy; without its ``tool_failures`` section, its provenance ``fields`` or its
    sinks' ``require`` when the flag says so."""
    document = json.loads((POLICIES / name).read_text(encoding="utf-8"))
    if not tool_failures:
        document.pop("tool_failures", None)
    provenance = document.get("provenance") or {}
    if not fields:
        provenance.pop("fields", None)
    if not require:
        for sink in provenance.get("sinks", []):
            sink.pop("require", None)
    return Policy.from_dict(document)


def normalise(text: str) -> str:
    """As the provenance rule compares values (POLICY-SPEC.md)."""
    return " ".join(text.replace("\x00", " ").casefold().split())


def flagged_values(report: TraceReport) -> list[str]:
    """The normalised values of the run's provenance findings (from ``subject``)."""
    values = []
    for finding in report.findings:
        if finding.rule_id in PROVENANCE_RULES and finding.subject and " = " in finding.subject:
            try:
                values.append(json.loads(finding.subject.split(" = ", 1)[1]))
            except ValueError:  # a shortened value; it cannot be compared
                continue
    return values


# ---- AgentDojo -----------------------------------------------------------------------------------


def agentdojo_runs(suite: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(model, raw run) for every attacked run of a suite, in path order."""
    for path in sorted(AGENTDOJO.glob(f"*/{suite}/user_task_*/{ATTACK}/*.json")):
        yield path.relative_to(AGENTDOJO).parts[0], json.loads(path.read_text(encoding="utf-8"))


def agentdojo_counts(policy: Policy, suite: str) -> dict[str, Counter[str]]:
    """Per model: the attacked runs by label and verdict, and the runs without an attack."""
    validator = Validator(policy)
    counts: dict[str, Counter[str]] = {}
    for model, raw in agentdojo_runs(suite):
        trace = to_trace(raw)
        report = validator.validate(trace)
        flagged = not report.passed
        succeeded = raw["security"] is True
        tally = counts.setdefault(model, Counter())
        tally["runs"] += 1
        tally["succeeded"] += succeeded
        key = {(True, True): "tp", (False, True): "fn", (True, False): "fp", (False, False): "tn"}
        tally[key[flagged, succeeded]] += 1
        if flagged and not succeeded:
            injected = [normalise(text) for text in raw["injections"].values()]
            if any(value in text for value in flagged_values(report) for text in injected):
                tally["fp_attacker_value"] += 1
        if succeeded and not flagged and not any(s.type == "tool_call" for s in trace.steps):
            tally["fn_no_call"] += 1
    for path in sorted(AGENTDOJO.glob(f"*/{suite}/user_task_*/none/none.json")):
        tally = counts.setdefault(path.relative_to(AGENTDOJO).parts[0], Counter())
        tally["benign"] += 1
        tally["benign_flagged"] += not validator.validate(
            to_trace(json.loads(path.read_text("utf-8")))
        ).passed
    return counts


def _totals(counts: dict[str, Counter[str]]) -> Counter[str]:
    total: Counter[str] = Counter()
    for tally in counts.values():
        total.update(tally)
    return total


def _rates(total: Counter[str]) -> str:
    failed = total["fp"] + total["tn"]
    return (
        f"recall {_ratio(total['tp'], total['succeeded'])}, false alarms "
        f"{_percent(total['fp'], failed)} on failed attacks and "
        f"{_percent(total['benign_flagged'], total['benign'])} without attack"
    )


def agentdojo_table(suite: str) -> str:
    """Per model: recall on the attacks that succeeded, false alarms on the attacked runs where
    the attack failed and on the runs without an attack (of the same user tasks); then the same
    totals for the policy without its fields, and without its fields and required sources."""
    name = f"agentdojo-{suite}.json"
    counts = agentdojo_counts(load_policy(name), suite)
    total = _totals(counts)
    header = (
        "| Model | Attacked runs | Attack succeeded | Flagged (TP) | Missed (FN) | Recall | "
        "Attack failed | Flagged (FP) | of which the attacker's value reached a sink | "
        "False alarms on failed attacks | Runs without attack | Flagged | "
        "False alarms without attack | Precision |"
    )
    rows = [header, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for model, tally in [*sorted(counts.items()), ("**all models**", total)]:
        failed = tally["fp"] + tally["tn"]
        rows.append(
            f"| {model} | {tally['runs']} | {tally['succeeded']} | {tally['tp']} | {tally['fn']} | "
            f"{_ratio(tally['tp'], tally['succeeded'])} | {failed} | {tally['fp']} | "
            f"{tally['fp_attacker_value']} | {_percent(tally['fp'], failed)} | "
            f"{tally['benign']} | {tally['benign_flagged']} | "
            f"{_percent(tally['benign_flagged'], tally['benign'])} | "
            f"{_ratio(tally['tp'], tally['tp'] + tally['fp'])} |"
        )
    no_fields = _totals(agentdojo_counts(load_policy(name, fields=False), suite))
    neither = _totals(agentdojo_counts(load_policy(name, fields=False, require=False), suite))
    rows += [
        "",
        f"Missed runs without a single tool call: {total['fn_no_call']} of {total['fn']}.",
        (
            f"The same policy without its `fields`: {_rates(no_fields)}; without its `fields` "
            f"and its sinks' `require`: {_rates(neither)}."
        ),
    ]
    return "\n".join(rows)


def _percent(part: int, whole: int) -> str:
    return "-" if not whole else f"{100 * part / whole:.1f}%"


def _ratio(part: int, whole: int) -> str:
    return "-" if not whole else f"{part / whole:.2f}"


def _share(part: int, whole: int) -> str:
    return f"{part} ({100 * part / whole:.0f}%)" if whole else "0"


# ---- tau-bench -----------------------------------------------------------------------------------


def tau_rows(policy: Policy) -> list[tuple[str, str]]:
    """(rule ID, condition or relation name) for every check the policy can fail, in order."""
    ext = policy.extensions
    assert ext is not None
    rows = [
        ("ARH-CND-002" if condition.forbid else "ARH-CND-001", condition.name)
        for condition in ext.conditions
    ]
    for relation in ext.relations:
        rows.append(("ARH-CND-003", relation.name))
        if relation.if_missing == "fail":
            rows.append(("ARH-CND-004", relation.name))
    confirmation = ext.confirmation
    if confirmation is not None:
        rows += [("ARH-CFM-001", ""), ("ARH-CFM-002", "")]
        if any(guard.state for guard in confirmation.guards):
            rows.append(("ARH-CFM-003", ""))
        if confirmation.separate_text_and_calls:
            rows.append(("ARH-CFM-004", ""))
    return rows


def tau_traces() -> Iterator[tuple[Trace, dict[str, Any]]]:
    """(trace, raw record) for every tau-bench run, read as ``arh validate`` reads them with
    ``--messages-at /traj --trace-id-at /task_id --trace-id-at /trial``."""
    records = json.loads(TAU.read_text(encoding="utf-8"))
    options = RecordOptions("/traj", ("/task_id", "/trial"))
    for (_, trace), record in zip(to_traces(records, options=options), records, strict=True):
        if isinstance(trace, InputError):
            raise SystemExit(f"cannot read a tau-bench record: {trace}")
        yield trace, record


WHOLE = ("", "any finding")  # the row of runs with at least one finding


def tau_counts(
    policy: Policy,
) -> tuple[Counter[bool], Counter[tuple[bool, bool]], dict[tuple[str, str], Counter[bool]]]:
    """Runs by outcome, verdicts by (outcome, passed), and per rule row the runs it fires in by
    outcome (a run counts once per row; row ``WHOLE``: runs with any finding)."""
    validator = Validator(policy)
    names = sorted({name for _, name in tau_rows(policy) if name}, key=len, reverse=True)
    runs: Counter[bool] = Counter()
    verdicts: Counter[tuple[bool, bool]] = Counter()
    fired: dict[tuple[str, str], Counter[bool]] = {row: Counter() for row in tau_rows(policy)}
    fired[WHOLE] = Counter()
    for trace, record in tau_traces():
        report = validator.validate(trace)
        success = record["reward"] == 1.0
        runs[success] += 1
        verdicts[success, report.passed] += 1
        seen = {(f.rule_id, _check_name(f, names)) for f in report.findings}
        for row in seen:  # a rule tau_rows does not know yet gets a row at the end
            fired.setdefault(row, Counter())[success] += 1
        if seen:
            fired[WHOLE][success] += 1
    return runs, verdicts, fired


def _check_name(finding: Finding, names: list[str]) -> str:
    """The condition or relation a finding of ARH-CND-00x is about (its subject starts with the
    name, and may go on with the argument it is about); "" for the other rules."""
    subject = finding.subject or ""
    if finding.rule_id.startswith("ARH-CND"):
        for name in names:  # longest first, so that no name is taken for a longer one
            if subject == name or subject.startswith(f"{name} "):
                return name
    return ""


def _lift(tally: Counter[bool], runs: Counter[bool]) -> str:
    """How many times more often a rule fires in failed runs than in successful ones."""
    if not tally[True] or not runs[False]:
        return "-"
    return f"{(tally[False] / runs[False]) / (tally[True] / runs[True]):.1f}"


def lift_table(name: str) -> tuple[str, Counter[tuple[bool, bool]]]:
    """Per rule (and condition or relation) of sample policy ``name``: the tau-bench runs it
    fires in by outcome and its lift, then the whole policy's; and the verdicts by outcome."""
    runs, verdicts, fired = tau_counts(load_policy(name))
    header = (
        f"| Rule | Condition or relation | Failed runs (of {runs[False]}) | Successful runs "
        f"(of {runs[True]}) | Lift |"
    )
    out = [header, "|---|---|---:|---:|---:|"]
    whole = fired.pop(WHOLE)
    for (rule_id, check), tally in fired.items():
        out.append(
            f"| {rule_id} | {check or '-'} | {_share(tally[False], runs[False])} | "
            f"{_share(tally[True], runs[True])} | {_lift(tally, runs)} |"
        )
    out.append(
        f"| **whole policy** | any finding | {_share(whole[False], runs[False])} | "
        f"{_share(whole[True], runs[True])} | {_lift(whole, runs)} |"
    )
    return "\n".join(out), verdicts


def tau_table() -> str:
    table, verdicts = lift_table("tau-airline.json")
    runs, _, before = tau_counts(load_policy("tau-airline.json", tool_failures=False))
    confirmations = before["ARH-CFM-001", ""]
    note = (
        "Without `tool_failures`, every call counts as a success: ARH-CFM-001 then fires in "
        f"{_share(confirmations[False], runs[False])} of the failed and "
        f"{_share(confirmations[True], runs[True])} of the successful runs, a lift of "
        f"{_lift(confirmations, runs)}."
    )
    out = [
        table,
        "",
        "| arh verdict | Failed runs (reward 0) | Successful runs (reward 1) |",
        "|---|---:|---:|",
        f"| FAIL | {verdicts[False, False]} | {verdicts[True, False]} |",
        f"| PASS | {verdicts[False, True]} | {verdicts[True, True]} |",
        "",
        note,
    ]
    return "\n".join(out)


# ---- what tool_failures changes ----------------------------------------------------------------


def _identity(finding: Finding) -> tuple[str, str | None, str | None, str]:
    return (finding.rule_id, finding.step_id, finding.subject, finding.severity)


def failures_effect(name: str, traces: Iterable[Trace]) -> Counter[str]:
    """The findings of sample policy ``name`` over ``traces`` without and with its
    ``tool_failures`` section: how many there are, how many went, came, or kept their place but
    changed their message, and in how many runs the verdict changed."""
    before = Validator(load_policy(name, tool_failures=False))
    after = Validator(load_policy(name))
    tally: Counter[str] = Counter()
    for trace in traces:
        old, new = before.validate(trace), after.validate(trace)
        tally["runs"] += 1
        tally["before"] += len(old.findings)
        tally["after"] += len(new.findings)
        tally["verdicts"] += old.passed != new.passed
        old_ids = Counter(_identity(f) for f in old.findings)
        new_ids = Counter(_identity(f) for f in new.findings)
        tally["gone"] += sum((old_ids - new_ids).values())
        tally["new"] += sum((new_ids - old_ids).values())
        kept = Counter(_full(f) for f in old.findings) & Counter(_full(f) for f in new.findings)
        tally["reworded"] += sum((old_ids & new_ids).values()) - sum(kept.values())
    return tally


def _full(finding: Finding) -> str:
    return json.dumps(finding.to_dict(), sort_keys=True)


def agentdojo_traces(suite: str) -> Iterator[Trace]:
    """Every run of a suite the tables above read: the attacked runs, then those without an
    attack."""
    for _, raw in agentdojo_runs(suite):
        yield to_trace(raw)
    for path in sorted(AGENTDOJO.glob(f"*/{suite}/user_task_*/none/none.json")):
        yield to_trace(json.loads(path.read_text("utf-8")))


def _declared(policy: Policy) -> str:
    """The tests of a policy's ``tool_failures`` section, in a few words."""
    failures = policy.tool_failures
    if failures is None:
        return "none"
    tests = [
        " ".join(
            part
            for part in (
                f"`{test.pattern}`" if test.pattern is not None else "",
                f"at `{test.pointer.text}`" if test.pointer is not None else "",
                f"= `{json.dumps(test.equals[0])}`" if test.equals else "",
            )
            if part
        )
        for test in failures.default
    ]
    named = f"; own tests for {', '.join(failures.tools)}" if failures.tools else ""
    return f"{' or '.join(tests) or 'none'} for every tool{named}"


def failures_table() -> str:
    header = (
        "| Data set | Sample policy | Its `tool_failures` | Runs | Findings without it | "
        "Findings with it | Gone | New | Reworded | Verdicts changed |"
    )
    rows = [
        header,
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    cases = [
        *(
            (f"AgentDojo {suite}", f"agentdojo-{suite}.json", lambda s=suite: agentdojo_traces(s))
            for suite in SUITES
        ),
        ("tau-bench airline", "tau-airline.json", lambda: (t for t, _ in tau_traces())),
        ("tau-bench airline", "tau-airline-basic.json", lambda: (t for t, _ in tau_traces())),
    ]
    for label, name, traces in cases:
        shown = _declared(load_policy(name))
        tally = failures_effect(name, traces())
        rows.append(
            f"| {label} | [{name}](../samples/policies/{name}) | {shown} | {tally['runs']} | "
            f"{tally['before']} | {tally['after']} | {tally['gone']} | {tally['new']} | "
            f"{tally['reworded']} | {tally['verdicts']} |"
        )
    return "\n".join(rows)


# ---- the document ------------------------------------------------------------------------------


def sections() -> dict[str, str]:
    found = {f"agentdojo-{suite}": agentdojo_table(suite) for suite in SUITES}
    found["tau-airline"] = tau_table()
    found["tau-airline-conduct"] = lift_table("tau-airline-conduct.json")[0]
    found["tool-failures"] = failures_table()
    return found


def _marker(name: str) -> re.Pattern[str]:
    return re.compile(
        rf"(<!-- generated:{re.escape(name)} .*?-->\n)(.*?)(<!-- end:{re.escape(name)} -->)",
        re.DOTALL,
    )


def render(text: str, tables: dict[str, str]) -> str:
    for name, table in tables.items():
        pattern = _marker(name)
        if not pattern.search(text):
            raise SystemExit(f"{DOC}: no generated section {name!r}")
        text = pattern.sub(lambda m, t=table: f"{m.group(1)}{t}\n{m.group(3)}", text)
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    parser.add_argument("--print", action="store_true", help="print the tables instead of writing")
    args = parser.parse_args(argv)
    if not AGENTDOJO.is_dir() or not TAU.is_file():
        print(f"the real traces are not in {REAL} (set ARH_SHARED_DIR)", file=sys.stderr)
        return 2
    tables = sections()
    if args.print:
        for name, table in tables.items():
            print(f"{name}:\n{table}\n")
        return 0
    current = DOC.read_text(encoding="utf-8")
    fresh = render(current, tables)
    if args.check:
        if fresh != current:
            print(f"{DOC} is stale: run python tools/real_data_report.py", file=sys.stderr)
            return 1
        print(f"{DOC} is up to date")
        return 0
    if fresh != current:
        DOC.write_text(fresh, encoding="utf-8")
    print(f"wrote the generated sections of {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
