"""``arh validate``: check every trace against the policy, writing the console report and the
report files as the traces are checked."""

from __future__ import annotations

import sys
from argparse import Namespace

from agent_reliability_harness._version import __version__
from agent_reliability_harness.app import Status, worst
from agent_reliability_harness.app.formats import output_formats, report_to_stdout
from agent_reliability_harness.app.inputs import no_traces, reading_options, unmatched
from agent_reliability_harness.app.inputs import policy as read_policy
from agent_reliability_harness.app.output import (
    error,
    report_error,
    say,
    use_color,
    write_report,
)
from agent_reliability_harness.errors import (
    AGENT_FAILURE,
    EVALUATION_ERROR,
    INFRASTRUCTURE_FAILURE,
    InputError,
)
from agent_reliability_harness.io import Spool
from agent_reliability_harness.io.load import StepLines
from agent_reliability_harness.model.report import RunSummary, SummaryBuilder
from agent_reliability_harness.render.console import console_writer
from agent_reliability_harness.render.outputs import ReportWriter, WriterOptions
from agent_reliability_harness.runner import UnmatchedPointerError, iter_reports, sorted_errors

__all__ = ["run_status", "validate"]


def validate(args: Namespace) -> Status:
    """Run ``arh validate`` with checked arguments: OK when every trace passed, every input
    was read and every report written (see :class:`Status` for the others)."""
    policy = read_policy(args)
    if policy is None:
        return Status.USAGE
    stage = None
    judgment_errors: tuple[InputError, ...] = ()
    if args.rubric is not None:
        # only --rubric needs it: the model judge's client loads urllib, http and email, which a
        # plain `arh validate` must not pay for at start-up (tests/test_smoke.py)
        from agent_reliability_harness.app.judge_stage import judge_stage

        judged = judge_stage(args, policy)
        if judged is None:
            return Status.USAGE
        stage, judgment_errors = judged
    quiet = args.quiet or report_to_stdout(args, "validate")
    # Reports are written as the traces are checked: the console report goes out trace by
    # trace, the files' bodies are spooled and their heads (which hold the totals) come last.
    console = None
    if not quiet:  # --quiet silences the console report in every --output-format
        github = args.output_format == "github"  # annotations point at the lines of steps
        console = console_writer(
            args.output_format,
            color=use_color(args.color, sys.stdout),
            fail_under=args.fail_under,
            show_passing=args.show_passing,
            step_lines=StepLines(args.max_input_size) if github else None,
        )
    options = WriterOptions(args.fail_under, StepLines(args.max_input_size))
    outputs: list[tuple[str, ReportWriter, Spool, str]] = [
        (path, output.writer(options), Spool(), output.what)
        for fmt in output_formats("validate")
        if (output := fmt.validate) is not None and (path := getattr(args, fmt.attribute))
    ]
    keepers = [on_trace for _, w, _, _ in outputs if (on_trace := getattr(w, "on_trace", None))]

    def keep(trace: object, report: object) -> None:
        for keeper in keepers:
            keeper(trace, report)

    totals = SummaryBuilder()
    errors: list[InputError] = []
    unwritten = 0  # report files that could not be written (the others are written all the same)

    def fail(exc: InputError) -> None:
        errors.append(exc)
        report_error(exc)

    for problem in judgment_errors:  # bad lines of the judgment file: the others are used
        fail(problem)
    try:
        for report in iter_reports(
            policy,
            args.traces,
            fail_under=args.fail_under,
            on_error=fail,
            on_trace=keep if keepers else None,
            jobs=args.jobs,
            judge=stage,
            **reading_options(args),
        ):
            totals.add(report)
            if console is not None:
                sys.stdout.write(console.add(report))
            for _, writer, spool, _ in outputs:
                spool.write(writer.add(report))
        # the policy's hash is for the report files (hashing costs milliseconds at start-up)
        sha256 = policy.sha256 if outputs else None
        summary = totals.build(
            sorted_errors(errors), policy.policy_id, sha256, __version__, policy.rules.choices()
        )
        if console is not None:  # (a run of no traces has no verdict: "0 of 0 passed")
            tail = console.tail(summary) if summary.total else no_traces(args.traces, len(errors))
            say(tail, sys.stdout)
        for path, writer, spool, what in outputs:
            if spool.problem is not None:
                error(f"cannot write {path}: {spool.problem}")
                unwritten += 1
                continue
            parts: list[str | Spool] = [writer.head(summary), spool, writer.tail(summary)]
            unwritten += write_report(path, parts, what, quiet)
    except UnmatchedPointerError as exc:  # raised when every trace is read: no trace was checked
        unmatched(args, exc)
        return Status.USAGE
    finally:
        for _, _, spool, _ in outputs:
            spool.close()
    return run_status(summary, unwritten=unwritten)


def run_status(summary: RunSummary, *, unwritten: int = 0) -> Status:
    """The exit status of a run of ``summary`` with ``unwritten`` report files that could not be
    written: each kind of failure it had gives its status (docs/exit-codes.md, "Three kinds of
    failure"), and the first of them by precedence is the run's."""
    kinds = summary.failures
    statuses = [Status.OK]
    if kinds[INFRASTRUCTURE_FAILURE]:
        statuses.append(Status.INFRASTRUCTURE)
    if kinds[EVALUATION_ERROR] or unwritten or not summary.total:
        statuses.append(Status.INPUT)
    if kinds[AGENT_FAILURE]:
        statuses.append(Status.FAILED)
    return worst(*statuses)
