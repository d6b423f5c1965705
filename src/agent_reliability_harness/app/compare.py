"""``arh compare``: compare a candidate run (a saved report, or traces validated now) with a
baseline, gate on the findings and, when asked, on the statistics of repeated runs, and write
the reports."""

from __future__ import annotations

import dataclasses
import sys
from argparse import Namespace
from dataclasses import replace

from agent_reliability_harness.app import Status, worst
from agent_reliability_harness.app.formats import output_formats, report_to_stdout
from agent_reliability_harness.app.inputs import (
    gate_plan,
    no_traces,
    read_reports,
    reading_options,
    unmatched,
)
from agent_reliability_harness.app.inputs import policy as read_policy
from agent_reliability_harness.app.output import error, report_error, say, write_report
from agent_reliability_harness.errors import INFRASTRUCTURE_FAILURE, InputError
from agent_reliability_harness.io import utf8_name
from agent_reliability_harness.io.load import StepLines
from agent_reliability_harness.model.report import TraceReport
from agent_reliability_harness.model.trace import Trace
from agent_reliability_harness.regression import compare_reports, evaluate_gate
from agent_reliability_harness.regression.gate import GateResult
from agent_reliability_harness.regression.stat_report import (
    StatComparison,
    compare_stats,
    merge_runs,
)
from agent_reliability_harness.render._text import exit_status_note
from agent_reliability_harness.render.compare import render_compare_console, ungated_regressions
from agent_reliability_harness.render.json_report import render_json
from agent_reliability_harness.render.outputs import Comparison, TraceKeeper
from agent_reliability_harness.render.stats import comparison_console_lines
from agent_reliability_harness.runner import UnmatchedPointerError, run_validation

__all__ = ["compare", "gates"]


def gates(gate: GateResult, statistics: StatComparison | None) -> GateResult:
    """The gate of the findings with the statistical gates merged in: it passes when both do,
    and gives the reasons of both."""
    if statistics is None:
        return gate
    return replace(
        gate,
        passed=gate.passed and statistics.gate.passed,
        reasons=(*gate.reasons, *statistics.gate.reasons),
    )


def compare(args: Namespace) -> Status:
    """Run ``arh compare`` with checked arguments: OK when the gate passed, every input was
    read and every report written (see :class:`Status` for the others)."""
    statistics = bool(args.gate or args.gates or args.outcome or args.k)
    planned = gate_plan(args) if statistics else None
    # every report is read even when the gate file or another report is bad: all are reported
    limit = args.max_input_size
    baselines = read_reports(args.baseline, "baseline", limit)
    candidates = (
        None if args.candidate is None else read_reports(args.candidate, "candidate", limit)
    )
    policy = None if args.candidate is not None else read_policy(args)
    unusable = worst(
        Status.USAGE if statistics and planned is None else Status.OK,
        Status.USAGE if args.candidate is None and policy is None else Status.OK,
        Status.INPUT if baselines is None else Status.OK,
        Status.INPUT if args.candidate is not None and candidates is None else Status.OK,
    )
    if unusable is not Status.OK:
        return unusable
    assert baselines is not None
    baseline, notes = merge_runs(baselines, "baseline")
    quiet = args.quiet or report_to_stdout(args, "compare")
    input_errors = 0
    infrastructure = 0  # how many of the input errors were infrastructure failures
    unwritten = 0  # report files that could not be written (the others are written all the same)
    outputs = [
        (path, fmt.compare)
        for fmt in output_formats("compare")
        if fmt.compare is not None and (path := getattr(args, fmt.attribute))
    ]
    keepers: dict[str, TraceKeeper] = {}  # by the path of the report that shows the traces
    fail_under = None  # the candidate's pass threshold, when it is validated now
    if candidates is not None:
        if not any(run.reports for _, run in candidates):  # 0 of 0 traces: no result
            error(f"no trace reports in {', '.join(args.candidate)}: no candidate to compare")
            return Status.INPUT
        candidate, more = merge_runs(candidates, "candidate")
        notes += more
    else:
        assert policy is not None
        fail_under = 70.0 if args.fail_under is None else args.fail_under
        for path, output in outputs:
            if output.keeper is not None:  # for the timelines
                keepers[path] = output.keeper(baseline, args.any_step, args.max_score_drop)

        def keep(trace: Trace, report: TraceReport) -> None:
            for keeper in keepers.values():
                keeper(trace, report)

        try:
            candidate = run_validation(
                policy,
                args.traces,
                fail_under=fail_under,
                on_error=report_error,
                on_trace=keep if keepers else None,
                **reading_options(args),
            )
        except UnmatchedPointerError as exc:
            unmatched(args, exc)
            return Status.USAGE
        candidates = [(utf8_name(args.candidate_json_out or "(validated now)"), candidate)]
        input_errors = len(candidate.input_errors)
        infrastructure = sum(e.kind == INFRASTRUCTURE_FAILURE for e in candidate.input_errors)
        if args.candidate_json_out:  # (written as arh validate writes it, input errors and all)
            unwritten += write_report(
                args.candidate_json_out, render_json(candidate), "Candidate report", quiet
            )
        if not candidate.reports:  # nothing to compare: no result, and no comparison written
            if not args.quiet:
                say(no_traces(args.traces, input_errors), sys.stdout)
            return Status.INPUT
    result = compare_reports(baseline, candidate, any_step=args.any_step)
    if notes:
        result = replace(result, warnings=(*result.warnings, *notes))
    gate = evaluate_gate(
        result, args.fail_on, args.max_score_drop, fail_on_drift=args.fail_on_drift
    )
    stats = None
    if planned is not None:
        try:
            stats = compare_stats(baselines, candidates, planned[1], planned[0])
        except InputError as exc:
            error(str(exc))
            return Status.INPUT
        gate = gates(gate, stats)
    comparison = Comparison(
        result,
        gate,
        stats,
        input_errors,
        ungated_regressions(result) if args.ungated else None,
        fail_under,
        # the lines of the steps, for the SARIF comparison: a saved report does not say at which
        # step (by position) a finding is, so only traces validated now have them
        step_lines=StepLines(limit) if args.candidate is None else None,
        infrastructure=infrastructure,
    )
    if not quiet:  # --quiet silences the console report in every --output-format
        github = args.output_format == "github"  # annotations point at the lines of steps
        text = render_compare_console(
            result,
            gate,
            extra=_console_extra(comparison),
            show_passing=args.show_passing,
            output_format=args.output_format,
            step_lines=StepLines(args.max_input_size) if github else None,
        )
        say(text, sys.stdout)
        note = exit_status_note(input_errors, infrastructure)
        if note is not None:
            say(f"{note} (on standard error)\n", sys.stdout)
    for path, output in outputs:
        keeper = keepers.get(path)
        traces = keeper.traces if keeper else None
        text = output.render(dataclasses.replace(comparison, traces=traces))
        unwritten += write_report(path, text, output.what, quiet)
    return worst(
        Status.INFRASTRUCTURE if infrastructure else Status.OK,
        Status.INPUT if input_errors > infrastructure or unwritten else Status.OK,
        Status.OK if gate.passed else Status.FAILED,
    )


def _console_extra(comparison: Comparison) -> list[str]:
    """The console report's lines after its summary: the statistics, and what the
    trace-by-trace gate let through when statistical gates turned it off."""
    extra: list[str] = []
    if comparison.statistics is not None:
        extra = comparison_console_lines(comparison.statistics)
    if comparison.ungated is not None:
        extra += ["", f"note: {comparison.ungated}"]
    return extra
