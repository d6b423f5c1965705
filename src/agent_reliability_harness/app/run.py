"""``arh run``: run an agent on a dataset of golden tasks and write the runs directory::

    OUT/run.json                      the run record
    OUT/report.json                   the validation report of every trace (arh validate --json-out)
    OUT/traces/<task-id>.run<k>.json  one canonical trace per task and repeat

Everything but ``run.json``'s ``timings`` is byte-identical between two runs of the same inputs,
whatever ``--jobs``.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from argparse import Namespace
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib import resources
from typing import Any, Final

from agent_reliability_harness._json import decode_bytes, loads
from agent_reliability_harness._version import __version__
from agent_reliability_harness.app import Status, error, say, worst
from agent_reliability_harness.app.output import report_error
from agent_reliability_harness.errors import InputError, UsageError
from agent_reliability_harness.harness.datasets import Dataset, open_dataset
from agent_reliability_harness.harness.execute import (
    AGENT_FAILURE,
    EVALUATION_ERROR,
    INFRASTRUCTURE_FAILURE,
    OUTCOMES,
    PASSED,
    TaskResult,
    load_agent,
    run_tasks,
)
from agent_reliability_harness.harness.gateway import ABLATIONS, GatewayOptions, Prices
from agent_reliability_harness.io import write_atomic
from agent_reliability_harness.io.read import read_json_file
from agent_reliability_harness.model.report import SummaryBuilder
from agent_reliability_harness.render.json_report import JsonWriter

__all__ = ["PER_TASK_POLICY", "load_prices", "parse_ablations", "run_command", "run_record"]

# the report's policy_id when the tasks of a run have different policies
PER_TASK_POLICY: Final = "per-task"
_PRICE_KEYS: Final = ("name", "description", "input_usd_per_mtok", "output_usd_per_mtok")


def parse_ablations(text: str | None) -> tuple[str, ...]:
    """``retry,verify`` -> ``("retry", "verify")`` in the canonical order; UsageError on an
    unknown name."""
    if not text:
        return ()
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in ABLATIONS]
    if unknown:
        raise UsageError(
            f"--ablate: unknown feature {unknown[0]!r} (choose from {', '.join(ABLATIONS)})"
        )
    return tuple(name for name in ABLATIONS if name in names)


def _prices(data: Any, source: str) -> Prices:
    if type(data) is not dict:
        raise InputError("a price table must be a JSON object", source=source)
    for key in data:
        if key not in _PRICE_KEYS:
            raise InputError(f"unknown key {key!r}", pointer=f"/{key}", source=source)
    name = data.get("name")
    if type(name) is not str or not name:
        raise InputError("must be a non-empty string", pointer="/name", source=source)
    values: list[float] = []
    for key in ("input_usd_per_mtok", "output_usd_per_mtok"):
        value = data.get(key)
        if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
            raise InputError("must be a number >= 0", pointer=f"/{key}", source=source)
        values.append(float(value))
    return Prices(name, values[0], values[1])


def load_prices(path: str | None) -> Prices:
    """The price table: ``path``, or the one in the package."""
    if path is not None:
        return _prices(read_json_file(path), path)
    text = resources.files("agent_reliability_harness.harness").joinpath("prices.json")
    return _prices(loads(decode_bytes(text.read_bytes())), "prices.json")


def _policy_of_report(dataset: Dataset) -> tuple[str | None, str | None, list[tuple[str, str]]]:
    """The report's policy: the tasks' one policy, or ``per-task`` with the sha256 of the list
    of each task's policy sha256 (one line ``<sha256>  <task id>`` per task, in task order)."""
    policies = {task.policy.sha256: task.policy for task in dataset.tasks}
    if len(policies) == 1:
        policy = next(iter(policies.values()))
        return policy.policy_id, policy.sha256, list(policy.rules.choices())
    if not policies:
        return None, None, []
    text = "".join(f"{task.policy.sha256}  {task.id}\n" for task in dataset.tasks)
    return PER_TASK_POLICY, hashlib.sha256(text.encode("utf-8")).hexdigest(), []


def render_report(dataset: Dataset, results: Sequence[TaskResult]) -> str:
    """``report.json``: the validation report of every trace that could be validated and ran
    to its end; the others (an evaluation error, a crashed worker, a task over its wall-time
    cap) are its input errors, so that `arh stats` and `arh compare` never count the machine's
    failure as the agent's."""
    writer = JsonWriter()
    totals = SummaryBuilder()
    body: list[str] = []
    unchecked: list[InputError] = []  # traces that could not be validated, or not recorded
    for result in results:
        if result.report is not None and result.outcome != INFRASTRUCTURE_FAILURE:
            totals.add(result.report)
            body.append(writer.add(result.report))
        else:
            where = f"traces/{result.task_id}.run{result.repeat}.json"
            # a crashed worker is the machine's failure, not the evaluation's (docs/exit-codes.md)
            kind = (
                INFRASTRUCTURE_FAILURE
                if result.outcome == INFRASTRUCTURE_FAILURE
                else EVALUATION_ERROR
            )
            unchecked.append(
                InputError(result.detail or "not validated", pointer=None, source=where, kind=kind)
            )
    policy_id, sha256, rules = _policy_of_report(dataset)
    summary = totals.build(unchecked, policy_id, sha256, __version__, rules)
    return writer.head(summary) + "".join(body) + writer.tail(summary)


def _agent_name(agent_id: str) -> str:
    return agent_id.rpartition(":")[2].rpartition(".")[2] or agent_id


def run_record(
    args: Namespace,
    dataset: Dataset,
    results: Sequence[TaskResult],
    *,
    prices: Prices,
    ablations: tuple[str, ...],
    timings: dict[str, Any],
) -> dict[str, Any]:
    """The run record (``run.json``) as a JSON object."""
    counts = Counter(result.outcome for result in results)
    runs = len(results)
    languages = sorted({task.policy.schema_version for task in dataset.tasks})
    run_id = f"{dataset.name}.{_agent_name(args.agent)}.seed{args.seed}"
    if ablations:
        run_id += ".no-" + "-".join(ablations)
    summary: dict[str, Any] = {"runs": runs, "passed": counts[PASSED]}
    for outcome in OUTCOMES[1:]:
        summary[outcome] = counts[outcome]
    summary["pass_rate"] = round(counts[PASSED] / runs, 6) if runs else 0.0
    return {
        "kind": "arh-run",
        "schema_version": "1",
        "run_id": run_id,
        "agent": {"id": args.agent},
        "dataset": {
            "name": dataset.name,
            "version": dataset.version,
            "sha256": dataset.sha256,
            "cases": len(dataset.tasks),
            "path": dataset.path.replace(os.sep, "/"),
        },
        "harness": {
            "name": "agent-reliability-harness",
            "version": __version__,
            "policy_language": ",".join(languages) if languages else None,
            "rubric": None,
        },
        "seed": args.seed,
        "repeats": args.repeats,
        "ablations": list(ablations),
        "summary": summary,
        "cost": {
            "estimated_usd": round(sum(r.estimated_cost_usd for r in results), 9),
            "actual_usd": 0.0,
            "price_table": prices.name,
        },
        "tasks": [
            {
                "task_id": r.task_id,
                "repeat": r.repeat,
                "trace_id": r.trace_id,
                "trace": f"traces/{r.task_id}.run{r.repeat}.json",
                "outcome": r.outcome,
                "detail": r.detail,
                "steps": r.steps,
                "input_tokens": r.input_tokens,
                "output_tokens": r.output_tokens,
                "estimated_cost_usd": r.estimated_cost_usd,
            }
            for r in results
        ],
        "timings": timings,
    }


def _clear_traces(out: str) -> None:
    """Remove the traces of an earlier run in ``out`` (only files named as this command names
    them, and only where a run record shows that ``out`` is a runs directory)."""
    traces = os.path.join(out, "traces")
    if not (os.path.isfile(os.path.join(out, "run.json")) and os.path.isdir(traces)):
        return
    for name in os.listdir(traces):
        if ".run" in name and name.endswith(".json"):
            os.remove(os.path.join(traces, name))


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _dumps(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=True) + "\n"


def _status(results: Sequence[TaskResult], input_errors: int) -> Status:
    outcomes = {result.outcome for result in results}
    statuses = [Status.OK]
    if AGENT_FAILURE in outcomes:
        statuses.append(Status.FAILED)
    if EVALUATION_ERROR in outcomes or input_errors or not results:
        statuses.append(Status.INPUT)
    if INFRASTRUCTURE_FAILURE in outcomes:
        statuses.append(Status.INFRASTRUCTURE)
    return worst(*statuses)


def run_command(args: Namespace) -> Status:
    """Run ``arh run`` with checked arguments (see docs/running-agents.md for the statuses)."""
    try:
        ablations = parse_ablations(args.ablate)
        load_agent(args.agent)
        dataset = open_dataset(args.dataset, args.root)
        prices = load_prices(args.prices)
    except UsageError as exc:
        error(str(exc))
        return Status.USAGE
    except InputError as exc:
        report_error(exc)
        return Status.INPUT
    for problem in dataset.errors:  # bad task lines: the other tasks still run
        report_error(problem)
    started = datetime.now(UTC)
    clock = time.monotonic()
    options = GatewayOptions.ablated(ablations, prices)
    results = list(
        run_tasks(
            dataset.tasks,
            args.agent,
            workflow=dataset.name,
            seed=args.seed,
            repeats=args.repeats,
            options=options,
            jobs=args.jobs,
        )
    )
    wall = round(time.monotonic() - clock, 3)
    timings = {
        "started_at": _iso(started),
        "finished_at": _iso(datetime.now(UTC)),
        "wall_seconds": wall,
    }
    out = args.output
    try:
        os.makedirs(os.path.join(out, "traces"), exist_ok=True)
        _clear_traces(out)
        for result in results:
            path = os.path.join(out, "traces", f"{result.task_id}.run{result.repeat}.json")
            write_atomic(path, result.trace_text)
        write_atomic(os.path.join(out, "report.json"), render_report(dataset, results))
        record = run_record(
            args, dataset, results, prices=prices, ablations=ablations, timings=timings
        )
        write_atomic(os.path.join(out, "run.json"), _dumps(record))
    except OSError as exc:
        error(f"cannot write the runs directory {out}: {exc.strerror or exc}")
        return Status.INPUT
    if not args.quiet:
        _console(record, results, out)
    return _status(results, len(dataset.errors))


def _console(record: dict[str, Any], results: Sequence[TaskResult], out: str) -> None:
    lines = [
        f"{result.outcome.upper().replace('_', ' ')} {result.trace_id}: {result.detail}\n"
        for result in results
        if result.outcome != PASSED
    ]
    summary = record["summary"]
    counts = ", ".join(f"{summary[o]} {o}" for o in OUTCOMES[1:])
    lines.append(
        f"{record['run_id']}: {summary['passed']} of {summary['runs']} runs passed "
        f"({counts}); estimated cost {record['cost']['estimated_usd']:.6f} USD\n"
    )
    lines.append(f"wrote {out}/run.json, {out}/report.json and {len(results)} traces\n")
    say("".join(lines), sys.stdout)
