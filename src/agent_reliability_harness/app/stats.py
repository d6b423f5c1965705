"""``arh stats``: pass rates, pass^k and flaky tasks of repeated runs, and their gates."""

from __future__ import annotations

import sys
from argparse import Namespace

from agent_reliability_harness.app import Status, worst
from agent_reliability_harness.app.formats import output_formats, report_to_stdout
from agent_reliability_harness.app.inputs import gate_plan, read_reports
from agent_reliability_harness.app.output import error, say, write_report
from agent_reliability_harness.errors import InputError
from agent_reliability_harness.regression.stat_report import stats_of
from agent_reliability_harness.render.stats import render_stats_console

__all__ = ["stats"]


def stats(args: Namespace) -> Status:
    """Run ``arh stats`` with checked arguments: OK when no gate failed, every report was read
    and every report file written (see :class:`Status` for the others)."""
    planned = gate_plan(args)
    runs = read_reports(args.reports, "report", args.max_input_size)  # even if the gates are bad
    if planned is None or runs is None:
        return worst(
            Status.USAGE if planned is None else Status.OK,
            Status.INPUT if runs is None else Status.OK,
        )
    plan, outcome = planned
    if not any(run.reports for _, run in runs):
        error(f"no trace reports in {', '.join(args.reports)}: nothing to summarise")
        return Status.INPUT
    try:
        result = stats_of(runs, outcome, plan)
    except InputError as exc:
        error(str(exc))
        return Status.INPUT
    quiet = args.quiet or report_to_stdout(args, "stats")
    if not quiet:
        say(render_stats_console(result), sys.stdout)
    unwritten = 0  # report files that could not be written (the others are written all the same)
    for fmt in output_formats("stats"):
        path = getattr(args, fmt.attribute)
        if path and fmt.stats is not None:
            unwritten += write_report(path, fmt.stats.render(result), fmt.stats.what, quiet)
    if unwritten:
        return Status.INPUT
    return Status.OK if result.passed else Status.FAILED
