"""The ``arh`` command line. ``main(argv) -> int`` is the only entry point; it never exits itself.

Exit status (docs/exit-codes.md): 0 when every trace passed, 1 when a trace or a gate failed,
2 for a usage or configuration error, 3 for an input error. What the commands need is imported
when they run: ``arh --version`` needs none of it (eager, ``app.validate`` alone measured +97 ms
of ``arh --version``; ``app.formats``, ``io``, ``render`` and ``regression.stat_gates`` +11 to
+52 ms each).
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import itertools
import math
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import IO, Any, Final, Literal, NoReturn

from agent_reliability_harness._formats import FORMAT_NAMES, SPAN_FORMAT_NAMES
from agent_reliability_harness._version import __version__
from agent_reliability_harness.app import Status, TerminatedError, error, say, worst
from agent_reliability_harness.errors import InputError, UsageError, excerpt, parse_pointer

_Report = Literal["validate", "compare", "stats"]  # the commands that write report files

__all__ = ["EXIT_CONFIG", "EXIT_FAILED", "EXIT_INPUT", "EXIT_OK", "EXIT_USAGE", "main"]

# the exit statuses, as app.Status defines them (docs/exit-codes.md)
EXIT_OK: Final = int(Status.OK)
EXIT_FAILED: Final = int(Status.FAILED)
EXIT_USAGE: Final = int(Status.USAGE)  # also a policy or gate file that cannot be used
EXIT_CONFIG: Final = int(Status.USAGE)  # a configuration file that cannot be used (as ruff)
EXIT_INPUT: Final = int(Status.INPUT)
FORMAT_CHOICES: Final = ("auto", *FORMAT_NAMES)


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
        message += _did_you_mean(self, message)
        raise _ExitRequestError(EXIT_USAGE, f"{self.format_usage()}{self.prog}: error: {message}\n")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)


_CHOICE = re.compile(r"invalid choice: '(.*)' \(choose from (.*)\)$", re.DOTALL)


def _did_you_mean(parser: argparse.ArgumentParser, message: str) -> str:
    """`` (did you mean 'validate'?)`` for a command or option value that is not one of its
    choices, or for an option that is not one of the command's, as ruff and git suggest; else
    nothing."""
    choice = _CHOICE.search(message)
    if choice is not None:
        given = choice.group(1)
        known = [c.strip().strip("'") for c in choice.group(2).split(",")]
    elif message.startswith("unrecognized arguments: "):
        given = message.removeprefix("unrecognized arguments: ").split(" ")[0]
        known = sorted(_option_strings(parser)) if given.startswith("--") else []
        given = given.partition("=")[0]
    else:
        return ""
    close = difflib.get_close_matches(given, known, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _option_strings(parser: argparse.ArgumentParser) -> set[str]:
    """The long options of ``parser`` and of the subcommand parsers it has built."""
    found: set[str] = set()
    for action in parser._actions:  # argparse keeps no public list of them
        found.update(o for o in action.option_strings if o.startswith("--"))
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= _option_strings(sub)
    return found


class _Formatter(argparse.HelpFormatter):
    """argparse's formatter with the terminal's width asked once and without shutil: argparse
    makes a formatter for every option it adds, and each imports shutil (+2.3 ms of every start,
    measured) to ask the terminal for its size."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
        **kwargs: Any,
    ) -> None:
        width = _help_width() if width is None else width
        super().__init__(prog, indent_increment, max_help_position, width, **kwargs)


_WIDTH: list[int] = []


def _help_width() -> int:
    """The width argparse would choose: the terminal's columns less two, found as
    ``shutil.get_terminal_size`` finds them (see :class:`_Formatter`)."""
    if not _WIDTH:
        try:
            columns = int(os.environ["COLUMNS"])
        except (KeyError, ValueError):
            columns = 0
        if columns <= 0:
            try:
                columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
            except (AttributeError, ValueError, OSError):
                columns = 0
        _WIDTH.append((columns if columns > 0 else 80) - 2)
    return _WIDTH[0]


def _fail_under(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {excerpt(text)}") from None
    if not (math.isfinite(value) and 0 <= value <= 100):
        raise argparse.ArgumentTypeError(f"must be a number from 0 to 100, got {excerpt(text)}")
    return value


_INT_DIGITS: Final = 4300  # the longest integer an input may hold (Python's default limit)


def _out_path(text: str) -> str:
    if not text:  # an empty path would otherwise mean "no such report", silently
        raise argparse.ArgumentTypeError("the path is empty")
    return text


def _output(parser: argparse.ArgumentParser, *flags: str, help: str) -> None:
    """An option naming a file to write."""
    parser.add_argument(*flags, metavar="PATH", type=_out_path, help=help)


def _report_options(parser: argparse.ArgumentParser, command: _Report) -> None:
    """The ``--<format>-out`` options of ``command``: one for each format that writes its
    report, as the format declares it."""
    from agent_reliability_harness.app.formats import output_formats

    for fmt in output_formats(command):
        output = getattr(fmt, command)
        _output(parser, fmt.flag, help=f"{output.help} (- for standard output)")


def _report_paths(args: argparse.Namespace, command: _Report) -> list[tuple[str, str | None]]:
    """Each ``--<format>-out`` option of ``command`` with its path (None: not given)."""
    from agent_reliability_harness.app.formats import output_formats

    return [(fmt.flag, getattr(args, fmt.attribute)) for fmt in output_formats(command)]


_SIZE_UNITS: Final = {"": 0, "K": 10, "M": 20, "G": 30}


def _size(text: str) -> int:
    """``--max-input-size``: bytes, or a number with K, M or G (powers of 1024)."""
    unit = text[-1:].upper() if text[-1:].isalpha() else ""
    digits = text[: len(text) - len(unit)]
    if unit not in _SIZE_UNITS or not (digits.isascii() and digits.isdigit()):
        raise argparse.ArgumentTypeError(f"not a size such as 512M or 2G: {text!r}")
    value = int(digits) << _SIZE_UNITS[unit]
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 byte, got {text!r}")
    return value


def _max_input_option(parser: argparse.ArgumentParser) -> None:
    """The option that caps what one input may make arh hold in memory."""
    from agent_reliability_harness.io import DEFAULT_MAX_INPUT, size_text

    parser.add_argument(
        "--max-input-size",
        type=_size,
        default=DEFAULT_MAX_INPUT,
        metavar="SIZE",
        help="the most one input may hold: a file or standard input read whole, or one line of "
        "a JSON Lines file; bytes, or with K, M or G, such as 64M (default "
        f"{size_text(DEFAULT_MAX_INPUT)}); a larger one is an input error",
    )


def _rule_code(text: str) -> str:
    """A rule ID or a prefix of IDs (``ARH-FLW``) naming at least one registered rule, in upper
    case, or the argparse error with the closest one."""
    from agent_reliability_harness.rules.selection import rules_named, unknown_rule

    if not rules_named(text):
        raise argparse.ArgumentTypeError(unknown_rule(text.strip()))
    return text.strip().upper()


def _rule_codes(text: str) -> list[str]:
    return [_rule_code(part) for part in text.split(",")]


def _rule_severity(text: str) -> tuple[str, str]:
    from agent_reliability_harness.model.report import SEVERITIES

    code, equals, level = text.partition("=")
    if not equals or level.strip() not in SEVERITIES:
        raise argparse.ArgumentTypeError(
            f"expected RULE=LEVEL with a level of error, warning or info, got {excerpt(text)}"
        )
    return _rule_code(code), level.strip()


def _selection_options(parser: _Parser) -> None:
    parser.add_argument(
        "--select",
        type=_rule_codes,
        action="append",
        metavar="RULE[,RULE...]",
        help="run only these rules: rule IDs or prefixes of them (ARH-FLW is a category, ARH "
        "every rule); the others are switched off (repeatable)",
    )
    parser.add_argument(
        "--ignore",
        type=_rule_codes,
        action="append",
        metavar="RULE[,RULE...]",
        help="switch rules off for this run, by ID or prefix: their findings are not reported "
        "and the checks only they failed pass; the longer of a selected and an ignored code "
        "wins (repeatable; adds to the policy's rules section)",
    )
    parser.add_argument(
        "--severity",
        type=_rule_severity,
        action="append",
        metavar="RULE=LEVEL",
        help="give the findings of a rule (an ID or a prefix) another severity (error, warning "
        "or info) for this run (repeatable; wins over the policy's rules section)",
    )


# runner.AUTO_JOBS_MIN_BYTES in MiB, for --help without importing the runner (a test checks them)
_AUTO_JOBS_MIB: Final = 8


def _jobs(text: str) -> int | Literal["auto"]:
    if text == "auto":
        return "auto"
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number or 'auto': {excerpt(text)}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {excerpt(text)}")
    return value


def _pointer(text: str) -> str:
    """A JSON pointer option's value, checked by the parser of every pointer (argparse names the
    option in the error)."""
    try:
        parse_pointer(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _record_options(parser: argparse.ArgumentParser) -> None:
    """The options that say how to read wrapped transcript logs, and what to name the run."""
    parser.add_argument(
        "--messages-at",
        type=_pointer,
        metavar="POINTER",
        help="JSON pointer to the message list inside each input record, read as the record is "
        "(default: the record itself if it is an array, else its messages, traj or history "
        "member)",
    )
    parser.add_argument(
        "--trace-id-at",
        type=_pointer,
        action="append",
        default=[],
        metavar="POINTER",
        help="JSON pointer to the trace id inside each input record, read as the record is; "
        "repeat it to join several parts with '-' (default: the record's trace_id, else the "
        "file's relative path)",
    )
    parser.add_argument(
        "--agent-name",
        metavar="NAME",
        help="the agent_name of every trace, in place of its own (default: the trace's, else "
        "a transcript record's agent_name or model, else the format's)",
    )
    parser.add_argument(
        "--workflow",
        metavar="NAME",
        help="the workflow of every trace, in place of its own (arh stats groups runs by it; "
        "default: the trace's, else a transcript record's, else the format's)",
    )


def _record_usage(args: argparse.Namespace) -> str | None:
    if args.format in ("arh", *SPAN_FORMAT_NAMES) and (
        args.messages_at is not None or args.trace_id_at
    ):
        return (
            f"--messages-at and --trace-id-at apply to transcripts, not to --format {args.format}"
        )
    return None


def _score_drop(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {excerpt(text)}") from None
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {excerpt(text)}")
    return value


_RISKY_HELP: Final = (
    "accept policy regexes that can backtrack exponentially (a warning instead of an error)"
)


def _build_parser(command: str | None) -> _Parser:
    """The parser. Only ``command``'s subparser is built with its options, because argparse is
    slow to build them all; the others are listed (for help and errors) only when ``command`` is
    not a known command."""
    parser = _Parser(
        prog="arh",
        description="Check what tool-using AI agents did: validate recorded traces against a "
        "policy, score them, and gate CI on regressions.",
        allow_abbrev=False,
    )
    parser.add_argument("-V", "--version", action="version", version=f"arh {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    known = command in _COMMANDS
    for name, spec in _COMMANDS.items():
        if command == name or not known:
            sub = commands.add_parser(
                name,
                help=spec.help,
                allow_abbrev=False,
                description=spec.description,
                epilog=spec.epilog,
            )
            if command == name:
                spec.add_arguments(sub)
                if name in _CONFIGURED:
                    _config_options(sub)
    return parser


_OUTPUT_FORMATS: Final = ("full", "concise", "github")  # render.console.OUTPUT_FORMATS


def _console_options(parser: argparse.ArgumentParser, listed: str) -> None:
    """How the console report shows the run: its format, and whether it lists what passed."""
    parser.add_argument(
        "--output-format",
        choices=_OUTPUT_FORMATS,
        default="full",
        help="console report format: full (default), concise (one line per finding, as "
        "linters print them) or github (GitHub Actions annotations)",
    )
    parser.add_argument(
        "--show-passing",
        action="store_true",
        help=f"list {listed} too (by default one line counts them)",
    )


def _validate_arguments(validate: _Parser) -> None:
    validate.add_argument(
        "traces",
        nargs="+",
        metavar="TRACE",
        help="trace files, directories (searched recursively for .json/.jsonl/.ndjson), "
        "JSON Lines files (one trace per line), or - for standard input",
    )
    validate.add_argument(
        "--policy",
        required=True,
        metavar="POLICY",
        help="policy JSON file (required unless the configuration file names one)",
    )
    validate.add_argument(
        "--format",
        default="auto",
        choices=FORMAT_CHOICES,
        help="input format (default: auto)",
    )
    _record_options(validate)
    _label_options(validate)
    validate.set_defaults(usage=validate.format_usage())
    validate.add_argument(
        "--fail-under",
        type=_fail_under,
        default=70.0,
        metavar="SCORE",
        help="a trace fails when its score is below this (0-100, default 70)",
    )
    _report_options(validate, "validate")
    validate.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour the console report (default: auto, on a terminal unless NO_COLOR is set "
        "or TERM is dumb, and anywhere when FORCE_COLOR is set)",
    )
    validate.add_argument(
        "-q", "--quiet", action="store_true", help="do not print the console report"
    )
    _console_options(validate, "the passing traces")
    validate.add_argument("--allow-risky-patterns", action="store_true", help=_RISKY_HELP)
    _selection_options(validate)
    validate.add_argument(
        "--jobs",
        type=_jobs,
        default="auto",
        metavar="N",
        help="check traces in N processes (default auto: one per CPU when the input holds at "
        f"least {_AUTO_JOBS_MIB} MiB, else one); the reports are the same as with one",
    )
    _max_input_option(validate)
    _executor_options(validate)
    _judge_options(validate)


def _judge_options(parser: _Parser) -> None:
    """The judge of the final answers (docs/answers-and-judge.md, "The judge")."""
    group = parser.add_argument_group("judge (docs/answers-and-judge.md)")
    group.add_argument(
        "--rubric", metavar="FILE", help="judge each trace's final answer under this rubric"
    )
    group.add_argument(
        "--judge",
        choices=("replay", "live"),
        default="replay",
        help="replay (default): take judgments from --judgments and never call a model; live: "
        "call the model judge for inputs the file has no judgment for, and append them",
    )
    group.add_argument(
        "--judgments", metavar="FILE", help="the judgment file (JSON Lines) to replay or append to"
    )
    group.add_argument(
        "--judge-model",
        metavar="NAME",
        help="the model that judges: 'deterministic' (the rubric engine, no model) or a model "
        "name (default: the rubric's model, else deterministic)",
    )
    group.add_argument(
        "--calibration",
        action="append",
        default=[],
        metavar="FILE",
        help="a calibration record (repeatable); judge findings are errors only for a rubric "
        "version and model calibrated at kappa >= 0.6",
    )
    group.add_argument(
        "--judge-base-url",
        metavar="URL",
        help="the OpenAI-compatible API of --judge live (default https://api.openai.com/v1)",
    )
    group.add_argument(
        "--judge-api-key-env",
        metavar="NAME",
        help="the environment variable holding the API key of --judge live (default: the "
        "rubric's api_key_env, else OPENAI_API_KEY)",
    )
    group.add_argument(
        "--judge-timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="the timeout of each request of --judge live (default 60)",
    )
    group.add_argument(
        "--judge-retries",
        type=int,
        default=3,
        metavar="N",
        help="retries of a failed request of --judge live (default 3, with exponential backoff)",
    )


def _compare_arguments(compare: _Parser) -> None:
    compare.add_argument(
        "traces", nargs="*", metavar="TRACE", help="candidate trace inputs (with --policy)"
    )
    compare.add_argument(
        "--baseline",
        required=True,
        nargs="+",
        action="extend",
        metavar="REPORT",
        help="baseline JSON report; several (one per run) for the statistics",
    )
    compare.add_argument(
        "--candidate",
        nargs="+",
        action="extend",
        metavar="REPORT",
        help="candidate JSON report; several (one per run) for the statistics",
    )
    compare.add_argument("--policy", metavar="POLICY", help="policy to validate the traces with")
    compare.add_argument(
        "--format",
        choices=FORMAT_CHOICES,
        default=None,
        help="input format of the traces (default: auto)",
    )
    _record_options(compare)
    _label_options(compare)
    compare.add_argument(
        "--fail-under",
        type=_fail_under,
        default=None,
        metavar="SCORE",
        help="pass threshold for the validated traces (0-100, default 70)",
    )
    compare.add_argument(
        "--fail-on",
        choices=("regressions", "failures", "never"),
        default=None,
        help="regressions: new error findings, pass->fail, added failing traces (default); "
        "failures: any failing candidate trace; never: report only (the default with --gate "
        "or --gates)",
    )
    compare.add_argument(
        "--max-score-drop",
        type=_score_drop,
        default=None,
        metavar="POINTS",
        help="with --fail-on regressions, also fail when a trace's score drops by more than this",
    )
    compare.add_argument(
        "--fail-on-drift",
        action="store_true",
        help="fail when baseline and candidate used different policies or harness versions",
    )
    compare.add_argument(
        "--any-step",
        action="store_true",
        help="also match findings whatever their steps, by rule and subject (for baselines "
        "without step references, and runs whose steps move; transcripts recorded again are "
        "matched by step reference without it)",
    )
    _report_options(compare, "compare")
    _output(
        compare,
        "--candidate-json-out",
        help="save the candidate's validation report (with --policy)",
    )
    compare.add_argument(
        "-q", "--quiet", action="store_true", help="do not print the console report"
    )
    _console_options(compare, "the changed traces that pass in the candidate")
    compare.add_argument("--allow-risky-patterns", action="store_true", help=_RISKY_HELP)
    _selection_options(compare)
    _max_input_option(compare)
    _executor_options(compare)
    _stat_options(compare)
    compare.set_defaults(usage=compare.format_usage())


def _positive_k(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {excerpt(text)}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {excerpt(text)}")
    return value


def _executor_options(parser: argparse.ArgumentParser) -> None:
    """Where the traces are checked: in this process (and its --jobs workers) or on Dask."""
    parser.add_argument(
        "--executor",
        choices=("local", "dask"),
        default="local",
        help="check the traces in this process and its --jobs workers (local, the default), or "
        "on a Dask cluster (dask: needs pip install 'agent-reliability-harness[dask]'; inputs "
        "may then be fsspec URLs such as s3://bucket/runs/*.jsonl; docs/large-runs.md)",
    )
    parser.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="with --executor dask, the scheduler to use (tcp://HOST:8786; default: a local "
        "cluster of one worker process per CPU, started for the run)",
    )
    parser.add_argument(
        "--dask-workers",
        type=_positive_k,
        metavar="N",
        help="with --executor dask and no --scheduler, the local cluster's worker processes",
    )


# The modules --executor dask needs (the dask extra); looked for, not imported, before the run.
_DASK_MODULES: Final = ("dask", "distributed", "fsspec")


def _executor_usage(args: argparse.Namespace) -> str | None:
    if args.executor != "dask":
        for option, value in (
            ("--scheduler", args.scheduler),
            ("--dask-workers", args.dask_workers),
        ):
            if value is not None:
                return f"{option} applies only with --executor dask"
        return None
    if args.scheduler is not None and args.dask_workers is not None:
        return "--dask-workers sizes the local cluster: it does not apply with --scheduler"
    if getattr(args, "candidate", None) is not None:
        return "--executor applies only when validating traces with --policy"
    import importlib.util  # only --executor dask needs it

    if any(importlib.util.find_spec(name) is None for name in _DASK_MODULES):
        return (
            "--executor dask needs the dask extra, which is not installed: "
            "pip install 'agent-reliability-harness[dask]'"
        )
    return None


def _label_options(parser: argparse.ArgumentParser) -> None:
    """The options that record a trace's task and success label in its report."""
    parser.add_argument(
        "--task-key",
        type=_pointer,
        metavar="POINTER",
        help="JSON pointer to the task id inside each canonical trace (as arh convert prints "
        "it: a transcript record's scalar fields are under /metadata/record), recorded in "
        "its report to group runs of the same task (default: the trace id without a run suffix)",
    )
    parser.add_argument(
        "--outcome-at",
        type=_pointer,
        metavar="POINTER",
        help="JSON pointer to a success label inside each canonical trace, as --task-key "
        "(true/false or a number, 1 meaning success), recorded in its report for --outcome "
        "label or both",
    )
    parser.add_argument(
        "--expect",
        metavar="FILE",
        help="expectations file: the expected outcome of each trace's task, by trace_id or "
        "workflow, for the policy's answer checks (a trace's own expected field wins)",
    )


def _stat_options(parser: argparse.ArgumentParser) -> None:
    """The options of the statistics (arh stats, and arh compare's statistical gates)."""
    parser.add_argument(
        "--outcome",
        choices=("verdict", "label", "both"),
        default=None,
        help="what counts as a success: the policy verdict (default), the recorded label, or "
        "both together",
    )
    parser.add_argument(
        "--k",
        type=_positive_k,
        default=None,
        metavar="K",
        help="runs per task for pass@k and pass^k (default: the fewest runs of any task)",
    )
    parser.add_argument(
        "--gate",
        action="append",
        default=[],
        metavar="EXPR",
        help="a statistical gate, such as 'pass^k drop significant at 0.05' or "
        "'pass rate >= 0.9' (repeatable)",
    )
    parser.add_argument(
        "--gates", metavar="FILE", help="gate file (arh.toml) with per-workflow thresholds"
    )
    parser.add_argument(
        "--allow-insufficient-data",
        action="store_true",
        help="do not fail a gate that the data cannot decide (it fails by default)",
    )


def _stats_arguments(stats: _Parser) -> None:
    stats.add_argument(
        "reports",
        nargs="+",
        metavar="REPORT",
        help="JSON reports of arh validate: one per run, or one holding every run",
    )
    _stat_options(stats)
    _report_options(stats, "stats")
    stats.add_argument("-q", "--quiet", action="store_true", help="do not print the console report")
    _max_input_option(stats)
    stats.set_defaults(usage=stats.format_usage())


def _convert_arguments(convert: _Parser) -> None:
    convert.add_argument(
        "traces",
        nargs="+",
        metavar="INPUT",
        help="transcript or trace files, directories, JSON Lines files, or - for standard input",
    )
    convert.add_argument(
        "--format", default="auto", choices=FORMAT_CHOICES, help="input format (default: auto)"
    )
    _record_options(convert)
    _output(convert, "-o", "--output", help="write here instead of standard output")
    _max_input_option(convert)
    convert.set_defaults(usage=convert.format_usage())


def _rules_arguments(rules: _Parser) -> None:
    rules.add_argument(
        "--format",
        default="text",
        choices=("text", "markdown", "json"),
        help="output format (default: text; markdown is docs/rules.md)",
    )


def _serve_arguments(serve: _Parser) -> None:
    serve.add_argument(
        "runs_dir", metavar="RUNS_DIR", help="the directory of runs (arh run -o) and reports"
    )
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on (default: 127.0.0.1; any other than a loopback address "
        "is warned about: the dashboard has no authentication)",
    )
    serve.add_argument(
        "--port", type=_port, default=8765, help="the port (default: 8765; 0: any free port)"
    )
    serve.add_argument("--quiet", action="store_true", help="do not log each request")


def _port(value: str) -> int:
    if not value.isdigit() or int(value) > 65_535:
        raise argparse.ArgumentTypeError(f"not a port number (0 to 65535): {value!r}")
    return int(value)


def _explain_arguments(explain: _Parser) -> None:
    explain.add_argument("rule_id", metavar="RULE_ID", help="for example ARH-FLW-003")


def _judge_arguments(judge: _Parser) -> None:
    """``arh judge calibrate`` (the one subcommand of ``arh judge`` so far)."""
    commands = judge.add_subparsers(
        dest="judge_command", metavar="SUBCOMMAND", parser_class=_Parser, required=True
    )
    calibrate = commands.add_parser(
        "calibrate",
        help="agreement of a judge with hand labels (Cohen's kappa), and its calibration record",
        description=_CALIBRATE_HELP,
        epilog=_CALIBRATE_EXITS,
        allow_abbrev=False,
    )
    calibrate.add_argument(
        "--labels", required=True, metavar="FILE", help="the hand-labels file (JSON Lines)"
    )
    calibrate.add_argument("--rubric", required=True, metavar="FILE", help="the rubric file")
    source = calibrate.add_mutually_exclusive_group()
    source.add_argument(
        "--judgments",
        metavar="FILE",
        help="take the judge's verdicts from this judgment file (JSON Lines)",
    )
    source.add_argument(
        "--engine",
        choices=("deterministic",),
        default="deterministic",
        help="run the deterministic rubric engine on the labelled answers (the default)",
    )
    calibrate.add_argument(
        "--model",
        metavar="NAME",
        help="with --judgments, the model whose judgments to take (needed when the file holds "
        "judgments of the rubric by several models)",
    )
    _output(calibrate, "-o", "--output", help="write the calibration record (JSON) here")
    calibrate.add_argument(
        "-q", "--quiet", action="store_true", help="do not print the console report"
    )
    _max_input_option(calibrate)
    calibrate.set_defaults(usage=calibrate.format_usage())


_CALIBRATE_HELP: Final = (
    "Compare a judge's verdicts with hand labels: Cohen's kappa with its 95% interval, the "
    "confusion matrix, false positives and negatives per criterion; write the calibration "
    "record that lets judge findings of this rubric version and model fail a build when kappa "
    ">= 0.6 (docs/answers-and-judge.md)."
)
_CALIBRATE_EXITS: Final = (
    "Exit status: 0 kappa >= 0.6 (judge findings may gate), 1 kappa < 0.6 (they stay "
    "warnings), 2 usage error or a rubric that cannot be used, 3 input error (a labels or "
    "judgment line or file that cannot be used, no kappa to give, or a record that could not "
    "be written; the other lines are still used). 2 wins over 3, and 3 over 1 "
    "(docs/exit-codes.md)."
)


def _calibrate_usage(args: argparse.Namespace) -> str | None:
    if args.model is not None and args.judgments is None:
        return "--model applies only with --judgments"
    return _overwrite_usage(
        [("-o/--output", args.output)],
        [("--labels", args.labels), ("--rubric", args.rubric), ("--judgments", args.judgments)],
    )


# -- arh run and arh datasets (docs/running-agents.md) -----------------------------------------

_RUN_EXITS: Final = (
    "Exit status: 0 every run passed, 1 an agent failure (findings, an exception, a cap), "
    "2 usage error (nothing was run), 3 input or evaluation error (a task line that cannot be "
    "used, a trace that could not be validated, a runs directory that could not be written), "
    "4 infrastructure failure (a task timed out or a worker crashed). 2 wins over 4, 4 over 3, "
    "and 3 over 1 (docs/exit-codes.md)."
)


def _nonneg_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {excerpt(text)}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {excerpt(text)}")
    return value


def _run_arguments(run: _Parser) -> None:
    run.add_argument(
        "--dataset",
        required=True,
        metavar="D",
        help="a dataset name (under --root), a dataset directory or a .jsonl task file",
    )
    run.add_argument(
        "--agent",
        required=True,
        metavar="MODULE:CALLABLE",
        help="the agent, e.g. agent_reliability_harness.harness.agents:auto",
    )
    run.add_argument("-o", "--output", required=True, metavar="OUT", help="the runs directory")
    run.add_argument(
        "--repeats", type=_positive_k, default=1, metavar="K", help="runs per task (default 1)"
    )
    run.add_argument(
        "--seed", type=_nonneg_int, default=0, metavar="S", help="passed to the agent (default 0)"
    )
    run.add_argument(
        "--jobs",
        type=_positive_k,
        default=1,
        metavar="N",
        help="run tasks in N processes (default 1); the outputs are the same as with one",
    )
    run.add_argument(
        "--ablate",
        metavar="FEATURES",
        help="turn gateway features off: a comma-separated list of retry, verify, "
        "validate_arguments",
    )
    run.add_argument(
        "--prices", metavar="FILE", help="the price table of model tokens (default: the package's)"
    )
    run.add_argument(
        "--root", default="datasets", metavar="DIR", help="where datasets are (default datasets)"
    )
    run.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")


def _datasets_arguments(datasets: _Parser) -> None:
    commands = datasets.add_subparsers(
        dest="datasets_command", metavar="SUBCOMMAND", parser_class=_Parser, required=True
    )
    listing = commands.add_parser(
        "list",
        help="each dataset: name, version, cases, sha256",
        description="List the datasets under --root with their case count and sha256.",
        allow_abbrev=False,
    )
    verify = commands.add_parser(
        "verify",
        help="check datasets against their manifests",
        description=(
            "Check each dataset: every file's sha256 (CRLF read as LF) and case count against "
            "dataset.json, and that every task parses. Exit status: 0 ok, 3 a problem (one line "
            "each), 2 usage error."
        ),
        allow_abbrev=False,
    )
    verify.add_argument(
        "datasets", nargs="*", metavar="NAME|PATH", help="default: every dataset under --root"
    )
    for parser in (listing, verify):
        parser.add_argument(
            "--root",
            default="datasets",
            metavar="DIR",
            help="where datasets are (default datasets)",
        )
        parser.add_argument("--json", action="store_true", help="write JSON to standard output")


def _run_cmd(args: argparse.Namespace) -> Status:
    from agent_reliability_harness.app.run import run_command

    return run_command(args)


def _datasets(args: argparse.Namespace) -> Status:
    from agent_reliability_harness.app.datasets import datasets_command

    return datasets_command(args)


# -- the configuration file (docs/configuration.md; app/config.py reads it) --------------------


def _max_age(text: str) -> int:
    """``--max-age``: a whole number and a unit (``7d``) as seconds."""
    from agent_reliability_harness.app.status import parse_age  # only arh status needs it

    try:
        return parse_age(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _now(text: str) -> Any:
    """``--now``: an RFC 3339 date and time with its offset."""
    from agent_reliability_harness.app.runs import parse_rfc3339  # only arh status needs it

    try:
        return parse_rfc3339(text, "")
    except InputError:
        raise argparse.ArgumentTypeError(
            f"not an RFC 3339 date and time with an offset (such as 2026-12-07T19:00:00Z): {text!r}"
        ) from None


def _status_arguments(status: _Parser) -> None:
    status.add_argument(
        "runs_dir",
        metavar="RUNS_DIR",
        help="a directory of saved runs: run directories of arh run, and validation reports",
    )
    status.add_argument(
        "--baselines",
        metavar="DIR",
        help="where the committed baselines are, one <benchmark>.json report each "
        "(default: RUNS_DIR/baselines)",
    )
    status.add_argument(
        "--datasets",
        metavar="DIR",
        default="datasets",
        help="where the datasets are, one directory each, to check their SHA-256 against the "
        "run records (default: datasets)",
    )
    status.add_argument(
        "--max-age",
        type=_max_age,
        metavar="AGE",
        help="a latest run older than this fails (exit 1): a number and s, m, h, d or w, such "
        "as 7d (default: no limit)",
    )
    status.add_argument(
        "--now",
        type=_now,
        metavar="TIME",
        help="measure ages from this RFC 3339 time instead of the clock (for reproducible output)",
    )
    status.add_argument("--json", action="store_true", help="print the status as JSON")


_CONFIGURED: Final = ("validate", "compare", "stats", "convert", "status")  # with settings


def _config_options(parser: argparse.ArgumentParser) -> None:
    """The options that choose the configuration file."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--config",
        metavar="PATH",
        help="read the settings from this file (an arh.toml, or a pyproject.toml's [tool.arh]) "
        "instead of the one found from the current directory upwards",
    )
    group.add_argument(
        "--isolated",
        action="store_true",
        help="ignore every configuration file: only the command line and the defaults",
    )


def _config_arguments(config: _Parser) -> None:
    config.add_argument(
        "target",
        nargs="?",
        choices=_CONFIGURED,
        metavar="COMMAND",
        help=f"show this command's settings (default: those of {', '.join(_CONFIGURED)})",
    )
    config.add_argument(
        "arguments",
        nargs=argparse.REMAINDER,
        metavar="ARGUMENT",
        help="the command's options, to show what they change (the command does not run)",
    )
    config.add_argument("--json", action="store_true", help="print the settings as JSON")
    _config_options(config)
    config.set_defaults(usage=config.format_usage())


def _config_choice(arguments: Sequence[str]) -> tuple[str | None, bool]:
    """``--config PATH`` (the last one) and whether ``--isolated`` is among the arguments (up
    to ``--``). The parser checks them again; this look comes first because the file decides
    which options are required."""
    path: str | None = None
    isolated = False
    for at, argument in enumerate(arguments):
        if argument == "--":
            break
        if argument == "--isolated":
            isolated = True
        elif argument == "--config" and at + 1 < len(arguments):
            path = arguments[at + 1]
        elif argument.startswith("--config="):
            path = argument.removeprefix("--config=")
    return path, isolated


def _subparser(parser: _Parser, name: str) -> _Parser:
    """The parser of the command ``name`` in ``parser``."""
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    sub: _Parser = commands.choices[name]
    return sub


def _options(sub: _Parser) -> dict[str, argparse.Action]:
    """A command's long options, each with its action, in the order they were added."""
    return {o: a for a in sub._actions for o in a.option_strings if o.startswith("--")}


def _options_of(name: str) -> dict[str, argparse.Action]:
    return _options(_subparser(_build_parser(name), name))


def _given(sub: _Parser, arguments: Sequence[str]) -> set[str]:
    """The dests that the command's ``arguments`` set: parsed again with every default
    suppressed and nothing required, only what they give is there."""
    saved = [(action, action.default, action.required) for action in sub._actions]
    defaults, sub._defaults = sub._defaults, {}
    for action, _, _ in saved:
        action.default, action.required = argparse.SUPPRESS, False
    try:
        return set(vars(sub.parse_args(arguments)))
    except _ExitRequestError:  # not after they parsed with the defaults: let them all win
        return {action.dest for action, _, _ in saved}
    finally:
        sub._defaults = defaults
        for action, default, required in saved:
            action.default, action.required = default, required


def _configured(
    parser: _Parser, command: str, arguments: list[str], *, lenient: bool = False
) -> tuple[argparse.Namespace, Any]:
    """Parse ``command``'s ``arguments`` over the settings of the configuration file (the
    command line wins): the arguments, and the settings as ``arh config`` shows them. Nothing
    is required when ``lenient`` (``arh config COMMAND ARGUMENT...``, which runs nothing).
    InputError when the file cannot be used."""
    path, isolated = _config_choice(arguments)
    candidates = None
    if path is None and not isolated and not lenient:
        from agent_reliability_harness.io.load import config_candidates

        with contextlib.suppress(OSError):  # no current directory: nothing to search above it
            candidates = config_candidates(os.getcwd())
            first = next(candidates, None)
            if first is None:
                return parser.parse_args(arguments), None
            candidates = itertools.chain([first], candidates)
    # imported once there may be a configuration file (+11 ms of every start, measured: its
    # reader's dataclasses and tomllib)
    from agent_reliability_harness.app import config

    sub = _subparser(parser, command)
    options = _options(sub)
    found = config.read(path, isolated, _options_of, candidates)
    chosen = config.settings(found, command, options)
    for action in sub._actions:
        if lenient or action.dest in chosen:  # what the file gives is not required here
            action.required = False
    rest = arguments[arguments.index(command) + 1 :]
    args = sub.parse_args(rest) if lenient else parser.parse_args(arguments)
    given = _given(sub, rest)
    origins = config.apply(chosen, args, given, command)
    return args, (
        found,
        config.describe(
            found, command, args, options=options, chosen=chosen, origins=origins, given=given
        ),
    )


def _parse(parser: _Parser, command: str | None, arguments: list[str]) -> argparse.Namespace:
    """The parsed arguments, with the configuration file's settings for a command that has
    settings; InputError when the file cannot be used (unless the arguments ask for help)."""
    if command == "config":
        args = parser.parse_args(arguments)
        targets = [args.target] if args.target else list(_CONFIGURED)
        # the file named to `arh config` itself, unless the command's arguments name one
        own = (["--isolated"] if args.isolated else []) + (
            ["--config", args.config] if args.config is not None else []
        )
        shown = []
        for name in targets:
            given = args.arguments if name == args.target else []
            _, (found, block) = _configured(
                _build_parser(name), name, [name, *own, *given], lenient=True
            )
            shown.append(block)
        args.shown = (found, shown)
        return args
    if command not in _CONFIGURED:
        return parser.parse_args(arguments)
    assert command is not None
    try:
        args, _ = _configured(parser, command, arguments)
    except InputError:
        try:  # --help still shows the help (it exits); anything else is the file's error
            parser.parse_args(arguments)
        except _ExitRequestError as exc:
            if exc.status == EXIT_OK:
                raise
        raise
    return args


def _config(args: argparse.Namespace) -> Status:
    from agent_reliability_harness.app import config

    found, shown = args.shown
    render = config.render_json if args.json else config.render_text
    say(render(found, shown), sys.stdout)
    return Status.OK


def _safe_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):
                reconfigure(errors="backslashreplace")


class _Guarded:
    """A standard stream that cannot end a command: once writing to it fails (a reader that
    stopped reading, a full disk, a stream the process was started without) it takes no more
    text, so the report files are still written; ``problem`` says what went wrong, unless the
    reader just stopped early (a broken pipe), which is the reader's choice."""

    def __init__(self, stream: IO[str] | None) -> None:
        self.stream = stream
        self.problem: str | None = None
        self.done = stream is None

    def write(self, text: str) -> int:
        if not self.done:
            self._guard(lambda stream: stream.write(text))
        elif self.stream is None and text and self.problem is None:
            self.problem = "it is closed"
        return len(text)

    def flush(self) -> None:
        if not self.done:
            self._guard(lambda stream: stream.flush())

    def _guard(self, action: Callable[[IO[str]], object]) -> None:
        assert self.stream is not None
        try:
            action(self.stream)
        except BrokenPipeError:
            self.done = True
            with contextlib.suppress(OSError, ValueError):  # what is still buffered goes nowhere
                sink = os.open(os.devnull, os.O_WRONLY)
                os.dup2(sink, self.stream.fileno())
                os.close(sink)
        except OSError as exc:
            self.done = True
            self.problem = exc.strerror or str(exc)

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding, ...
        return getattr(self.stream, name)


def _overwrite_usage(
    outputs: Sequence[tuple[str, str | None]], inputs: Sequence[tuple[str, str | None]]
) -> str | None:
    """The problem when two of the ``(option, path)`` outputs are one file or both standard
    output (``-``), or an output is one of the inputs (``-`` among them is standard input, not a
    file), else None."""
    from agent_reliability_harness.io.load import file_key
    from agent_reliability_harness.render._text import terminal_safe

    written: dict[tuple[object, ...], tuple[str, str]] = {}  # file -> its option and path
    to_stdout = [option for option, path in outputs if path == "-"]
    if len(to_stdout) > 1:
        return (
            f"{' and '.join(to_stdout)} both name standard output (-): only one report can go "
            "there (name a file such as ./- for a file called -)"
        )
    for option, path in outputs:
        if path is None or path == "-" or (key := file_key(path)) is None:
            continue
        first, _ = written.setdefault(key, (option, path))
        if first != option:
            return (
                f"{first} and {option} name the same file, {terminal_safe(path)}: each report "
                "needs a file of its own"
            )
    if not written:  # no report file: the inputs (thousands, from a glob) need no look
        return None
    for option, path in inputs:
        if path is None or (option != "--gates" and path == "-"):
            continue
        key = file_key(path)
        if key is not None and key in written:
            output, shown = written[key]
            return (
                f"{output} and {option} name the same file, {terminal_safe(shown)}: a report "
                "must not overwrite an input"
            )
    return None


def _compare_usage(args: argparse.Namespace) -> str | None:
    """Check the combination of compare options before any file is read."""
    if (
        len(args.baseline) > 1
        and not args.traces
        and (args.policy is not None or args.candidate is None)
    ):
        # `--baseline REPORT TRACE...`, the form of earlier versions: unless several baselines
        # are compared with --candidate reports, the values after the first are trace inputs
        args.traces, args.baseline = args.baseline[1:], args.baseline[:1]
    gated = bool(args.gate or args.gates)
    defaulted = args.fail_on is None
    if defaulted:
        args.fail_on = "never" if gated else "regressions"
    args.ungated = defaulted and gated  # the trace-by-trace gate is off: say so when it matters
    hint = " (with --gate or --gates it defaults to never)" if defaulted and gated else ""
    validating = args.policy is not None or bool(args.traces)
    if args.candidate is not None and validating:
        return "pass either --candidate REPORT or --policy POLICY with trace files, not both"
    if args.candidate is None and not validating:
        return "nothing to compare: pass --candidate REPORT, or --policy POLICY with trace files"
    if args.candidate is None and args.policy is None:
        return "trace files need --policy (or compare a saved report with --candidate)"
    if args.candidate is None and not args.traces:
        return "--policy needs trace files to validate"
    if args.candidate is not None:
        for option, value in (
            ("--format", args.format),
            ("--fail-under", args.fail_under),
            ("--candidate-json-out", args.candidate_json_out),
            ("--messages-at", args.messages_at),
            ("--trace-id-at", args.trace_id_at or None),
            ("--agent-name", args.agent_name),
            ("--workflow", args.workflow),
            ("--task-key", args.task_key),
            ("--outcome-at", args.outcome_at),
            ("--expect", args.expect),
            ("--allow-risky-patterns", args.allow_risky_patterns or None),
            ("--select", args.select),
            ("--ignore", args.ignore),
            ("--severity", args.severity),
        ):
            if value is not None:
                return f"{option} applies only when validating traces with --policy"
    else:
        problem = _record_usage(args)
        if problem:
            return problem
    if args.max_score_drop is not None and args.fail_on != "regressions":
        return f"--max-score-drop applies only to --fail-on regressions{hint}"
    if args.fail_on_drift and args.fail_on == "never":
        return f"--fail-on-drift does not apply to --fail-on never{hint}"
    return _stat_usage(args)


def _stat_usage(args: argparse.Namespace, *, baseline: bool = True) -> str | None:
    """Check the statistics options; the gates become ``args.plan``. ``baseline`` is False for
    arh stats, which cannot check the gates that compare with a baseline."""
    from agent_reliability_harness.regression.stat_gates import (
        BASELINE_KEYS,
        GatePlan,
        parse_gate_expression,
    )

    if args.allow_insufficient_data and not (args.gate or args.gates):
        return "--allow-insufficient-data applies only with --gate or --gates"
    extra = []
    for text in args.gate:
        try:
            setting = parse_gate_expression(text)
        except UsageError as exc:
            return str(exc)
        if not baseline and setting.key in BASELINE_KEYS:
            return f"--gate {excerpt(text)} compares with a baseline: use it with arh compare"
        extra.append(setting)
    args.plan = GatePlan(None, tuple(extra), args.k, args.allow_insufficient_data)
    return None


def _judge_usage(args: argparse.Namespace) -> str | None:
    if args.rubric is None:
        for flag, value in (
            ("--judgments", args.judgments),
            ("--judge-model", args.judge_model),
            ("--judge-base-url", args.judge_base_url),
            ("--judge-api-key-env", args.judge_api_key_env),
        ):
            if value is not None:
                return f"{flag} needs --rubric"
        if args.calibration:
            return "--calibration needs --rubric"
        if args.judge != "replay":
            return "--judge live needs --rubric"
    if not (args.judge_timeout > 0 and args.judge_timeout < float("inf")):
        return f"--judge-timeout must be a number of seconds > 0, got {args.judge_timeout:g}"
    if args.judge_retries < 0:
        return f"--judge-retries must be an integer >= 0, got {args.judge_retries}"
    return None


def _validate_usage(args: argparse.Namespace) -> str | None:
    return (
        _judge_usage(args)
        or _record_usage(args)
        or _executor_usage(args)
        or _overwrite_usage(
            _report_paths(args, "validate"),
            [("--policy", args.policy), *(("TRACE", path) for path in args.traces)],
        )
    )


def _compare_files_usage(args: argparse.Namespace) -> str | None:
    return (
        _compare_usage(args)
        or _executor_usage(args)
        or _overwrite_usage(
            [*_report_paths(args, "compare"), ("--candidate-json-out", args.candidate_json_out)],
            [
                *(("--baseline", path) for path in args.baseline),
                *(("--candidate", path) for path in args.candidate or ()),
                ("--policy", args.policy),
                *(("TRACE", path) for path in args.traces),
                ("--gates", args.gates),
            ],
        )
    )


def _stats_usage(args: argparse.Namespace) -> str | None:
    return _stat_usage(args, baseline=False) or _overwrite_usage(
        _report_paths(args, "stats"),
        [*(("REPORT", path) for path in args.reports), ("--gates", args.gates)],
    )


def _convert_usage(args: argparse.Namespace) -> str | None:
    return _record_usage(args) or _overwrite_usage(
        [("-o/--output", args.output)], [("INPUT", path) for path in args.traces]
    )


def _no_usage_problem(_args: argparse.Namespace) -> None:
    return None


# What runs each command (imported when it runs: see the module docstring); each returns its
# exit status.


def _validate(args: argparse.Namespace) -> Status:
    from agent_reliability_harness.app.validate import validate

    return validate(args)


def _compare(args: argparse.Namespace) -> Status:
    from agent_reliability_harness.app.compare import compare

    return compare(args)


def _stats(args: argparse.Namespace) -> Status:
    from agent_reliability_harness.app.stats import stats

    return stats(args)


def _convert(args: argparse.Namespace) -> Status:
    from agent_reliability_harness.app.convert import convert

    return convert(args)


def _rules(args: argparse.Namespace) -> Status:
    from agent_reliability_harness.app.rules import rules

    return rules(args)


def _calibrate(args: argparse.Namespace) -> Status:
    from agent_reliability_harness.app.judge import calibrate_command

    return calibrate_command(args)


def _status(args: argparse.Namespace) -> Status:
    from agent_reliability_harness.app.status import status

    if args.baselines is None:
        args.baselines = os.path.join(args.runs_dir, "baselines")
    return status(args)


def _serve(args: argparse.Namespace) -> Status:
    from agent_reliability_harness.app.serve import serve

    return serve(args)


def _explain(args: argparse.Namespace) -> Status:
    from agent_reliability_harness.app.rules import explain

    return explain(args)


@dataclass(frozen=True, slots=True)
class _Command:
    """A command: its help line, its description, what adds its options, what checks their
    combination (the problem, or None), what runs it (its exit status), and what its help
    says of its exit statuses."""

    help: str
    description: str
    add_arguments: Callable[[_Parser], None]
    usage: Callable[[argparse.Namespace], str | None]
    run: Callable[[argparse.Namespace], Status]
    epilog: str = "Exit status: 0 done, 2 usage error (docs/exit-codes.md)."


def _exits(zero: str, one: str | None) -> str:
    """The help's paragraph on a command's exit statuses (docs/exit-codes.md has the table)."""
    failed = f", 1 {one}" if one else ""
    return (
        f"Exit status: 0 {zero}{failed}, 2 usage or configuration error (nothing was checked), "
        "3 input error (an input could not be read or holds no trace, or a report could not be "
        "written; the other inputs are still checked and reported). 2 wins over 3, and 3 over 1 "
        "(docs/exit-codes.md)."
    )


_COMMANDS: Final[dict[str, _Command]] = {
    "validate": _Command(
        "validate traces against a policy",
        "Validate traces against a policy and report findings, scores and verdicts.",
        _validate_arguments,
        _validate_usage,
        _validate,
        _exits("every trace passed", "a trace failed"),
    ),
    "compare": _Command(
        "compare a candidate run with a baseline and gate on regressions",
        (
            "Compare a candidate run with a baseline report. The candidate is a saved report "
            "(--candidate) or is validated now from --policy and trace files."
        ),
        _compare_arguments,
        _compare_files_usage,
        _compare,
        _exits("the gate passed", "the gate failed"),
    ),
    "stats": _Command(
        "pass rates, pass^k and flaky tasks of repeated runs",
        (
            "Summarise repeated runs of the same tasks from validation reports: pass@1 with a "
            "Wilson 95% interval, pass@k and pass^k, stable and flaky tasks, rule hit rates, "
            "latency and cost per run; optionally check gates."
        ),
        _stats_arguments,
        _stats_usage,
        _stats,
        _exits("no gate failed", "a gate failed"),
    ),
    "convert": _Command(
        "convert transcripts to canonical traces",
        (
            "Write the canonical traces the adapters build from the inputs: one trace as JSON, "
            "several (or any number, to an -o file named .jsonl or .ndjson) as JSON Lines."
        ),
        _convert_arguments,
        _convert_usage,
        _convert,
        _exits("every input was converted", None),
    ),
    "rules": _Command(
        "list the rules",
        "List every rule the harness can report.",
        _rules_arguments,
        _no_usage_problem,
        _rules,
    ),
    "config": _Command(
        "show the settings in effect and where each came from",
        (
            "Show the settings a command would use: from the configuration file (an arh.toml, "
            "or [tool.arh] in a pyproject.toml, found from the current directory upwards), the "
            "command line, or the defaults. Exit status: 0 shown, 2 the configuration file "
            "cannot be used or a usage error."
        ),
        _config_arguments,
        _no_usage_problem,
        _config,
    ),
    "judge": _Command(
        "calibrate a judge against hand labels",
        "Work with the answer judge: 'arh judge calibrate' measures its agreement with hand "
        "labels and writes its calibration record.",
        _judge_arguments,
        _calibrate_usage,
        _calibrate,
        _CALIBRATE_EXITS,
    ),
    "status": _Command(
        "the health of every benchmark in a directory of saved runs",
        (
            "Show, for every benchmark in a directory of saved runs, the latest run's pass rate "
            "with its Wilson 95% interval, its drift against the committed baseline, the "
            "integrity of its dataset, the judge's calibration and the age of the run."
        ),
        _status_arguments,
        _no_usage_problem,
        _status,
        "Exit status: 0 all fine, 1 a regression against a baseline, a dataset that does not "
        "match its run record, or a latest run older than --max-age; 2 usage error; 3 an input "
        "that cannot be read, a run with evaluation errors, or no runs; 4 a latest run with "
        "infrastructure failures. 2 wins over 4, 4 over 3, 3 over 1 (docs/status.md).",
    ),
    "run": _Command(
        "run an agent on golden tasks through the tool gateway",
        (
            "Run an agent on every task of a dataset through the tool gateway (permissions, the "
            "policy's monitor, argument validation, simulated tools, retries, verification, "
            "caps) and write the runs directory: run.json, report.json and one trace per task "
            "and repeat (docs/running-agents.md)."
        ),
        _run_arguments,
        _no_usage_problem,
        _run_cmd,
        _RUN_EXITS,
    ),
    "datasets": _Command(
        "list and verify datasets of golden tasks",
        "'arh datasets list' shows each dataset; 'arh datasets verify' checks their integrity.",
        _datasets_arguments,
        _no_usage_problem,
        _datasets,
        "Exit status: 0 done, 2 usage error, 3 a dataset problem (docs/exit-codes.md).",
    ),
    "explain": _Command(
        "explain one rule",
        "Print what a rule checks and how to fix it.",
        _explain_arguments,
        _no_usage_problem,
        _explain,
        "Exit status: 0 done, 2 usage error (an unknown rule; docs/exit-codes.md).",
    ),
    "serve": _Command(
        "a local read-only dashboard and REST API over a directory of runs",
        (
            "Serve a local, read-only dashboard of the runs (arh run -o) and validation reports "
            "(arh validate --json-out) found under RUNS_DIR: the status overview, each run, each "
            "trace's timeline, a comparison of any two runs, and a JSON API (docs/dashboard.md)."
        ),
        _serve_arguments,
        _no_usage_problem,
        _serve,
        "Exit status: 0 stopped (Ctrl-C), 2 usage error or the address cannot be used, 3 "
        "RUNS_DIR cannot be read (docs/exit-codes.md).",
    ),
}


def _run(command: _Command, args: argparse.Namespace) -> int:
    """Check the combination of the options, then run the command: its exit status."""
    problem = command.usage(args)
    if problem:
        say(f"{args.usage}arh {args.command}: error: {problem}\n", sys.stderr)
        return EXIT_USAGE
    return int(command.run(args))


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``arh`` with ``argv`` (default ``sys.argv[1:]``) and return the exit status."""
    _safe_streams()
    arguments = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in arguments if not a.startswith("-")), None)
    parser = _build_parser(command)
    try:
        args = _parse(parser, command, arguments)
    except _ExitRequestError as exc:
        if exc.message:
            say(exc.message, sys.stderr if exc.status else sys.stdout)
        return exc.status
    except InputError as exc:
        error(f"invalid configuration: {exc}")
        return EXIT_CONFIG
    if args.command is None:
        say(parser.format_usage() + "arh: error: a command is required\n", sys.stderr)
        return EXIT_USAGE
    stdout, stderr = sys.stdout, sys.stderr
    guarded = _Guarded(stdout)
    sys.stdout, sys.stderr = guarded, _Guarded(stderr)
    # Python's own default, whatever PYTHONINTMAXSTRDIGITS or -X int_max_str_digits say: which
    # integers an input may hold must not depend on the environment
    digits = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(_INT_DIGITS)
    try:
        status = _run(_COMMANDS[args.command], args)
    except KeyboardInterrupt:
        error("interrupted")
        return 130
    except TerminatedError:
        error("terminated")
        return 143  # 128 + 15, as a shell reports a command that SIGTERM ended
    finally:
        sys.stdout, sys.stderr = stdout, stderr
        sys.set_int_max_str_digits(digits)
    if guarded.problem is not None:  # the console report is incomplete
        error(f"cannot write to standard output: {guarded.problem}")
        return int(worst(Status(status), Status.INPUT))
    return status
