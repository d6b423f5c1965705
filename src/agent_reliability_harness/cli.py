"""The ``arh`` command line. ``main(argv) -> int`` is the only entry point; it never exits itself.

Exit status: 0 when every trace passed, 1 when a trace failed or an input could not be read,
2 for a usage error. Modules are imported inside the commands so that ``arh --version`` starts
quickly.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
from collections.abc import Sequence
from typing import IO, Any, Final, NoReturn

from agent_reliability_harness._version import __version__

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "main"]

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
EXIT_USAGE: Final = 2


class _ExitRequestError(Exception):
    def __init__(self, status: int, message: str | None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that reports instead of calling ``sys.exit``."""

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        raise _ExitRequestError(status, message)

    def error(self, message: str) -> NoReturn:
        raise _ExitRequestError(EXIT_USAGE, f"{self.format_usage()}{self.prog}: error: {message}\n")


def _fail_under(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (math.isfinite(value) and 0 <= value <= 100):
        raise argparse.ArgumentTypeError(f"must be a number from 0 to 100, got {text!r}")
    return value


def _build_parser() -> _Parser:
    parser = _Parser(
        prog="arh",
        description="Check what tool-using AI agents did: validate recorded traces against a "
        "policy, score them, and gate CI on regressions.",
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"arh {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    validate = commands.add_parser(
        "validate",
        help="validate traces against a policy",
        allow_abbrev=False,
        description="Validate traces against a policy and report findings, scores and verdicts. "
        "Exit status: 0 all passed, 1 a trace failed or an input was bad, 2 usage error.",
    )
    validate.add_argument(
        "traces",
        nargs="+",
        metavar="TRACE",
        help="trace files, directories (searched recursively for .json/.jsonl/.ndjson), "
        "JSON Lines files (one trace per line), or - for standard input",
    )
    validate.add_argument("--policy", required=True, metavar="POLICY", help="policy JSON file")
    validate.add_argument(
        "--format",
        default="auto",
        choices=("auto", "arh"),
        help="input format (default: auto)",
    )
    validate.add_argument(
        "--fail-under",
        type=_fail_under,
        default=70.0,
        metavar="SCORE",
        help="a trace fails when its score is below this (0-100, default 70)",
    )
    validate.add_argument("--json-out", metavar="PATH", help="write the JSON report here")
    validate.add_argument("--quiet", action="store_true", help="do not print the console report")

    rules = commands.add_parser(
        "rules",
        help="list the rules",
        allow_abbrev=False,
        description="List every rule the harness can report.",
    )
    rules.add_argument(
        "--format",
        default="text",
        choices=("text", "markdown", "json"),
        help="output format (default: text; markdown is docs/rules.md)",
    )

    explain = commands.add_parser(
        "explain",
        help="explain one rule",
        allow_abbrev=False,
        description="Print what a rule checks and how to fix it.",
    )
    explain.add_argument("rule_id", metavar="RULE_ID", help="for example ARH-FLW-003")
    return parser


def _safe_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):
                reconfigure(errors="backslashreplace")


def _print(text: str, stream: IO[str]) -> None:
    stream.write(text)
    stream.flush()


def _error(message: str) -> None:
    from agent_reliability_harness.render._text import terminal_safe

    _print(f"error: {terminal_safe(message)}\n", sys.stderr)


def _cmd_validate(args: argparse.Namespace) -> int:
    from agent_reliability_harness.adapters import to_trace
    from agent_reliability_harness.engine import Validator
    from agent_reliability_harness.errors import InputError
    from agent_reliability_harness.io import expand_inputs, read_documents, read_json_file
    from agent_reliability_harness.model.policy import Policy
    from agent_reliability_harness.model.report import RunReport, TraceReport
    from agent_reliability_harness.render import render_console, render_json

    try:
        policy = Policy.from_dict(read_json_file(args.policy))
    except InputError as exc:
        located = exc if exc.source else exc.located(args.policy)
        _error(f"invalid policy: {located}")
        return EXIT_FAILED
    validator = Validator(policy, args.fail_under)
    sources, errors = expand_inputs(args.traces)
    for error in errors:
        _error(str(error))
    reports: dict[str, TraceReport] = {}
    first_seen: dict[str, str] = {}
    for source in sources:
        for item in read_documents(source):
            if isinstance(item, InputError):
                errors.append(item)
                _error(str(item))
                continue
            where = item.source if item.line is None else f"{item.source}:{item.line}"
            try:
                trace = to_trace(item.value, args.format)
                if trace.trace_id in reports:
                    raise InputError(
                        f"duplicate trace_id {trace.trace_id!r}: already read from "
                        f"{first_seen[trace.trace_id]}",
                        pointer="/trace_id",
                    )
                report = validator.validate(
                    trace,
                    source_path=item.source if item.source != "<stdin>" else None,
                    source_line=item.line,
                )
            except InputError as exc:
                located = exc.located(item.source, item.line)
                errors.append(located)
                _error(str(located))
                continue
            reports[trace.trace_id] = report
            first_seen[trace.trace_id] = where
    run = RunReport(
        tuple(reports.values()),  # in source order: sorted paths, then JSON Lines order
        tuple(sorted(errors, key=lambda e: (e.source or "", e.line or 0))),
        policy.policy_id,
        policy.sha256,
        __version__,
    )
    if not args.quiet:
        _print(render_console(run), sys.stdout)
    if args.json_out:
        status = _write(args.json_out, render_json(run), "JSON report", args.quiet)
        if status:
            return status
    return EXIT_OK if run.passed else EXIT_FAILED


def _write(path: str, text: str, what: str, quiet: bool) -> int:
    from agent_reliability_harness.io import write_atomic

    try:
        write_atomic(path, text)
    except OSError as exc:
        _error(f"cannot write {path}: {exc.strerror or exc}")
        return EXIT_FAILED
    if not quiet:
        _print(f"{what} written to {path}\n", sys.stdout)
    return 0


def _cmd_rules(args: argparse.Namespace) -> int:
    from agent_reliability_harness.render import rules_doc

    render = {
        "text": rules_doc.rules_table,
        "markdown": rules_doc.rules_markdown,
        "json": rules_doc.rules_json,
    }[args.format]
    _print(render(), sys.stdout)
    return EXIT_OK


def _cmd_explain(args: argparse.Namespace) -> int:
    from agent_reliability_harness.render.rules_doc import explain_text
    from agent_reliability_harness.rules import RULES

    rule = RULES.get(args.rule_id.strip().upper())
    if rule is None:
        import difflib

        close = difflib.get_close_matches(args.rule_id.upper(), list(RULES), n=1)
        hint = f" (did you mean {close[0]}?)" if close else "; `arh rules` lists them"
        _error(f"unknown rule {args.rule_id!r}{hint}")
        return EXIT_USAGE
    _print(explain_text(rule), sys.stdout)
    return EXIT_OK


_COMMANDS: Final[dict[str, Any]] = {
    "validate": _cmd_validate,
    "rules": _cmd_rules,
    "explain": _cmd_explain,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``arh`` with ``argv`` (default ``sys.argv[1:]``) and return the exit status."""
    _safe_streams()
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
    except _ExitRequestError as exc:
        if exc.message:
            _print(exc.message, sys.stderr if exc.status else sys.stdout)
        return exc.status
    if args.command is None:
        _print(parser.format_usage() + "arh: error: a command is required\n", sys.stderr)
        return EXIT_USAGE
    try:
        status: int = _COMMANDS[args.command](args)
    except KeyboardInterrupt:
        _error("interrupted")
        return 130
    except BrokenPipeError:
        return EXIT_FAILED
    return status
