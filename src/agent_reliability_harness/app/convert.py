"""``arh convert``: the canonical traces the adapters build from the inputs."""

from __future__ import annotations

import sys
from argparse import Namespace

from agent_reliability_harness.app import Status
from agent_reliability_harness.app.inputs import unmatched
from agent_reliability_harness.app.output import report_error, say, write_report
from agent_reliability_harness.errors import InputError, excerpt
from agent_reliability_harness.io import is_jsonl_name
from agent_reliability_harness.render._text import terminal_safe
from agent_reliability_harness.render.traces import render_trace
from agent_reliability_harness.runner import UnmatchedPointerError, read_traces, unique_traces

__all__ = ["convert"]


def convert(args: Namespace) -> Status:
    """Run ``arh convert`` with checked arguments: OK when every input was converted and
    written, else a usage error (a pointer option that matches nothing) or an input error."""
    errors = 0

    def fail(exc: InputError) -> None:
        nonlocal errors
        errors += 1
        report_error(exc)

    try:
        reads = read_traces(
            args.traces,
            fail,
            fmt=args.format,
            messages_at=args.messages_at,
            trace_id_at=args.trace_id_at,
            agent_name=args.agent_name,
            workflow=args.workflow,
            max_input_bytes=args.max_input_size,
        )
        converted = list(unique_traces(reads, fail))
    except UnmatchedPointerError as exc:
        unmatched(args, exc)
        return Status.USAGE
    # one trace is indented JSON, unless it goes to a file named to be read as JSON Lines
    lines = len(converted) > 1 or (args.output is not None and is_jsonl_name(args.output))
    texts = []
    for read in converted:
        try:
            texts.append(render_trace(read.trace, indent=not lines))
        except RecursionError:
            fail(
                InputError(
                    f"trace {excerpt(read.trace.trace_id)} holds a value nested too deeply to "
                    "write",
                    pointer=None,
                ).located(read.source, read.line)
            )
    if texts:
        text = "".join(texts)
        if args.output is None:
            say(text, sys.stdout)
        else:
            what = "Canonical trace"
            if lines:
                what = f"{len(texts)} canonical trace{'s' * (len(texts) != 1)} (JSON Lines)"
            if write_report(args.output, text, what, quiet=False):
                return Status.INPUT
    elif args.output is not None:  # a file left as it was must not pass for this run's output
        shown = terminal_safe(args.output)
        say(f"warning: nothing was converted, so {shown} was not written\n", sys.stderr)
    return Status.INPUT if errors or not texts else Status.OK
