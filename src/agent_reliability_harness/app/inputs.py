"""Reading what the commands need besides traces: the policy, saved reports and the gate file,
each problem printed as it is found."""

from __future__ import annotations

import dataclasses
import sys
from argparse import Namespace
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from agent_reliability_harness.app.output import error, say
from agent_reliability_harness.errors import InputError
from agent_reliability_harness.io import expand_inputs, utf8_name
from agent_reliability_harness.io.load import (
    load_expectations,
    load_gate_file,
    load_policy,
    load_report,
    real_path,
)
from agent_reliability_harness.model.policy import RuleSelection
from agent_reliability_harness.render._text import terminal_safe
from agent_reliability_harness.rules.selection import check_known, choose

if TYPE_CHECKING:
    from agent_reliability_harness.model.policy import Policy
    from agent_reliability_harness.model.report import RunReport
    from agent_reliability_harness.regression.stat_gates import GatePlan
    from agent_reliability_harness.runner import Executor, UnmatchedPointerError

__all__ = [
    "command_line_selection",
    "executor",
    "gate_plan",
    "no_traces",
    "policy",
    "read_reports",
    "reading_options",
    "unmatched",
]

_SHOWN_INPUTS = 3  # the most input paths an error names (a glob can give thousands)


def policy(args: Namespace) -> Policy | None:
    """Load the policy, printing its error (then None) or its accepted warnings, with the rule
    selection of the command line (``--select``, ``--ignore``, ``--severity``) on top of its
    own."""
    path = args.policy
    try:
        loaded = load_policy(
            path,
            allow_risky_patterns=args.allow_risky_patterns,
            max_input_bytes=args.max_input_size,
        )
        check_known(loaded.rules, in_policy=True)
    except InputError as exc:
        error(f"invalid policy: {exc if exc.source else exc.located(path)}")
        return None
    for warning in loaded.warnings:
        say(f"warning: {terminal_safe(path)}: {terminal_safe(warning)}\n", sys.stderr)
    chosen = command_line_selection(args)
    if chosen:
        loaded = dataclasses.replace(loaded, rules=loaded.rules.merged(chosen))
    expect = getattr(args, "expect", None)
    args.expectations = None  # what reading_options passes on: the loaded --expect file
    if expect is not None:
        try:
            args.expectations = load_expectations(expect, args.max_input_size)
        except InputError as exc:
            error(f"invalid expectations file: {exc if exc.source else exc.located(expect)}")
            return None
        if loaded.answers is None:
            say(
                f"warning: {terminal_safe(expect)}: the policy has no answers section "
                "(policy language 1.2), so no expected outcome is checked\n",
                sys.stderr,
            )
    return loaded


def reading_options(args: Namespace) -> dict[str, Any]:
    """The options of ``arh validate`` and ``arh compare --policy`` that say how the traces are
    read, as ``runner.iter_reports`` and ``runner.run_validation`` take them."""
    return {
        "fmt": args.format or "auto",
        "messages_at": args.messages_at,
        "trace_id_at": args.trace_id_at,
        "agent_name": args.agent_name,
        "workflow": args.workflow,
        "task_key": args.task_key,
        "outcome_at": args.outcome_at,
        "max_input_bytes": args.max_input_size,
        "executor": executor(args),
        "expectations": getattr(args, "expectations", None),
    }


def executor(args: Namespace) -> Executor | None:
    """The executor of ``--executor dask`` (it starts its cluster, or connects to
    ``--scheduler``, when the traces are checked), or None: this process checks them."""
    if getattr(args, "executor", "local") != "dask":
        return None
    # imported only here: it imports dask, which nothing else in arh does
    from agent_reliability_harness.dask import DaskExecutor

    return DaskExecutor(args.scheduler, args.dask_workers)


def command_line_selection(args: Namespace) -> RuleSelection:
    """The rule selection of ``--select``, ``--ignore`` and ``--severity`` (codes the parser
    checked: each names a registered rule)."""
    select = getattr(args, "select", None)
    return choose(
        None if select is None else [code for group in select for code in group],
        [code for group in getattr(args, "ignore", None) or () for code in group],
        getattr(args, "severity", None) or (),
    )


def read_reports(
    paths: Sequence[str], label: str, max_input_bytes: int
) -> list[tuple[str, RunReport]] | None:
    """Each report with its path, or None after printing why each one that cannot be read
    cannot (every report is read: one bad report does not hide the others' problems)."""
    runs = []
    bad = False
    seen: set[str] = set()
    for path in paths:
        # one file named twice (a glob and a name, ./a and a) would count its runs twice
        same = real_path(path) if path != "-" else path
        if same in seen:
            say(
                f"warning: {terminal_safe(path)}: this {label} is named more than once; it is "
                "read once\n",
                sys.stderr,
            )
            continue
        seen.add(same)
        try:
            report = load_report(path, max_input_bytes)
            runs.append((utf8_name(path), report))  # the path, as reports show it
        except InputError as exc:
            error(f"invalid {label}: {exc}")
            bad = True
    return None if bad else runs


def gate_plan(args: Namespace) -> tuple[GatePlan, str] | None:
    """The gate plan with the gate file read into it, and the outcome mode; or None after
    printing why the gate file cannot be used."""
    plan = args.plan
    file = None
    if args.gates:
        try:
            file = load_gate_file(args.gates, args.max_input_size)
        except InputError as exc:
            error(f"invalid gate file: {exc}")
            return None
        plan = replace(plan, file=file)
    outcome = args.outcome or (file.outcome if file is not None else None) or "verdict"
    return plan, outcome


def no_traces(paths: Sequence[str], errors: int) -> str:
    """The console's last line for a run whose inputs ``paths`` held no trace, in place of a
    verdict (a run of no traces is an input error): what was searched, and the input errors."""
    sources, _ = expand_inputs(paths)  # again: cheap, and only when nothing was found
    files = sum(source.path is not None for source in sources)
    named = [terminal_safe(utf8_name(path)) for path in paths if path != "-"]
    shown = ", ".join(named[:_SHOWN_INPUTS])
    if len(named) > _SHOWN_INPUTS:
        shown += f" and {len(named) - _SHOWN_INPUTS} more"
    if sources:
        read = [f"{files} file{'s' * (files != 1)} from {shown}"] if files else []
        if files < len(sources):
            read.append("standard input")
        searched = f"read {' and '.join(read)}, and found no usable trace"
    else:
        searched = (
            f"nothing to read in {shown} (directories are searched for .json, .jsonl and "
            ".ndjson files)"
        )
    return f"no traces checked: {searched} \u00b7 {errors} input error{'s' * (errors != 1)}\n"


def unmatched(args: Namespace, exc: UnmatchedPointerError) -> None:
    """Report a pointer option that matched nothing in any record: a usage error."""
    say(f"arh {args.command}: error: {terminal_safe(str(exc))}\n", sys.stderr)
