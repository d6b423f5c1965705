"""Making untrusted text safe to print on a terminal, and the plain number and count texts the
reports share."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from agent_reliability_harness.errors import AGENT_FAILURE, INFRASTRUCTURE_FAILURE

if TYPE_CHECKING:
    from agent_reliability_harness.model.report import RunSummary, TraceReport


__all__ = [
    "FORMAT_CHARS",
    "NOT_AVAILABLE",
    "below_threshold",
    "cost_text",
    "escape_char",
    "exit_status_note",
    "gate_verdict",
    "kinds_text",
    "latency_text",
    "plain_number",
    "plural",
    "run_headline",
    "score_alone",
    "score_below",
    "source_text",
    "terminal_safe",
    "threshold_text",
    "times_text",
    "tokens_text",
    "totals_text",
    "uncovered_text",
    "undecided",
    "visible",
]

# The format characters (Unicode category Cf, as of Unicode 15.1), as a regex character-class
# part; every writer shows them as escapes. Among them are the bidirectional marks, embeddings,
# overrides and isolates, which can make a viewer show text in a different order than it is
# stored ("Trojan Source"), and invisible characters such as U+200B ZERO WIDTH SPACE, U+00AD
# SOFT HYPHEN, U+2060 WORD JOINER, U+FEFF and the tag characters, which make two different ids
# look the same.
FORMAT_CHARS: Final = (
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f"
    "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
    "\U000e0020-\U000e007f"
)
# C0 and C1 controls, DEL, lone surrogates, noncharacters, the line and paragraph separators
# (line breaks to some terminals and log viewers), and the format characters.
_UNSAFE: Final = (  # compiled on first use, by the re module's cache
    f"[\x00-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029{FORMAT_CHARS}\ufffe\uffff]"
)
_NAMED: Final = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def escape_char(char: str) -> str:
    """A character as a visible escape: ``\\x1b``, ``\\u202e``, ``\\U000e0041``."""
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return _NAMED.get(char) or escape_char(char)


def visible(text: str) -> str:
    """Text with control, surrogate, line-separator and format characters as visible escapes
    (``\\n``, ``\\x1b``, ``\\u202e``), so that it shows as one line, as stored."""
    if text.isascii() and text.isprintable():
        return text
    return re.sub(_UNSAFE, _escape, text)


# What a CI runner reads as a workflow command in a log line: "##[" anywhere, "::" at the start
# of a line after blanks. A wrapped line can start anywhere (the wrapper also splits long words),
# so the first "#" of every "##[" and every ":" followed by another are escaped: no two raw
# colons are ever adjacent, and a trace cannot issue a command (::error, ::add-mask, ##[group])
# from arh's output however the text is wrapped.
_COMMAND: Final = r"##\[|:(?=:)"


def _command(match: re.Match[str]) -> str:
    return "\\x23#[" if match.group()[0] == "#" else "\\x3a"


def terminal_safe(text: str) -> str:
    """Escape control, surrogate, bidi and other format characters so text prints as one line
    (:func:`visible`), and anything a CI runner would take for a workflow command."""
    text = visible(text)
    if "::" in text or "##[" in text:
        text = re.sub(_COMMAND, _command, text)
    return text


def plain_number(value: float, places: int = 3) -> str:
    """A measured amount without float noise or exponents, with up to ``places`` decimals:
    ``8160``, ``12.5``, ``1234567``."""
    text = f"{value:.{places}f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


NOT_AVAILABLE: Final = "n/a"  # a measure the trace did not record, never shown as a zero


def latency_text(value: float | None) -> str:
    """A total latency, ``8160 ms`` or ``12.5 ms``, or ``n/a`` when it was not recorded."""
    return NOT_AVAILABLE if value is None else f"{plain_number(value)} ms"


def cost_text(value: float | None) -> str:
    """A total cost in USD with 4 decimals, ``$0.0136``, or ``n/a`` when it was not recorded."""
    return NOT_AVAILABLE if value is None else f"${value:.4f}"


def tokens_text(value: int | None, *, grouped: bool = False) -> str:
    """A token count (``1,234`` with ``grouped``), or ``n/a`` when it was not recorded."""
    return NOT_AVAILABLE if value is None else f"{value:{',' if grouped else ''}}"


def totals_text(report: TraceReport, *, grouped: bool = False) -> list[str]:
    """What a trace measured, as the console and HTML reports show it: ``latency 8160 ms``,
    ``cost $0.0136``, ``tokens 8156``, each ``n/a`` when no step recorded it."""
    return [
        f"latency {latency_text(report.recorded_latency_ms)}",
        f"cost {cost_text(report.recorded_cost_usd)}",
        f"tokens {tokens_text(report.total_tokens, grouped=grouped)}",
    ]


def times_text(report: TraceReport) -> list[str]:
    """When the run happened, as the trace wrote it: ``started 2026-01-31T09:30:00Z``, ``ended
    ...``; nothing for a time the trace does not have (a report never invents one)."""
    out = []
    if report.started_at is not None:
        out.append(f"started {report.started_at}")
    if report.ended_at is not None:
        out.append(f"ended {report.ended_at}")
    return out


def threshold_text(value: float) -> str:
    """A pass threshold as it would be written: ``70``, ``66.67``."""
    return repr(float(value)).removesuffix(".0")


def score_below(score: float, threshold: float) -> str:
    """A score with 2 decimals, or with as many more as it takes to show that it is below
    ``threshold`` (the verdict compares the unrounded score: 66.666... fails 66.67)."""
    for places in range(2, 13):
        text = f"{score:.{places}f}"
        if float(text) < threshold:
            return text
    return repr(score)


def score_alone(report: TraceReport, fail_under: float | None) -> str | None:
    """For a failing trace that no error finding fails, why it fails: ``66.67 is below the pass
    threshold of 70``; None otherwise, or when the threshold is not known (``fail_under`` None,
    as for a report read back from JSON, which does not record it)."""
    if report.passed or report.errors or fail_under is None or report.score >= fail_under:
        return None
    return below_threshold(report.score, fail_under)


def below_threshold(score: float, fail_under: float) -> str:
    """``66.67 is below the pass threshold of 70``, for a score below ``fail_under``."""
    below = score_below(score, fail_under)
    return f"{below} is below the pass threshold of {threshold_text(fail_under)}"


def source_text(path: str | None, line: int | None) -> str | None:
    """Where a trace came from, as the console and HTML reports show it: ``path``, ``path:line``
    for JSON Lines, ``<stdin>:line`` for JSON Lines on standard input (named as its errors name
    it), None for one document on standard input. Not yet made safe to show."""
    if path is None:
        return None if line is None else f"<stdin>:{line}"
    return path if line is None else f"{path}:{line}"


def run_headline(total: int, failed: int, errors: int, *, grouped: bool = False) -> str:
    """What a run came to, in a few words: ``3 of 5 traces failed``, ``all 5 traces passed, 2
    inputs could not be read``, ``the 1 trace passed``, ``0 traces checked, 3 input errors``;
    with ``grouped``, numbers
    have thousands separators (``1,234``)."""
    if errors and not total:
        return f"{plural(0, 'trace')} checked, {plural(errors, 'input error', grouped=grouped)}"
    if failed:
        title = f"{failed:{',' if grouped else ''}} of "
        title += f"{plural(total, 'trace', grouped=grouped)} failed"
    elif total == 1:
        title = "the 1 trace passed"  # not "all 1 trace"
    else:
        title = f"all {plural(total, 'trace', grouped=grouped)} passed"
    if errors:
        title += f", {plural(errors, 'input', grouped=grouped)} could not be read"
    return title


def _candidate_errors(input_errors: int, infrastructure: int) -> str:
    """``1 candidate infrastructure_failure, 2 candidate input errors``: the candidate inputs
    that could not be checked, the machine's first."""
    parts = []
    if infrastructure:
        parts.append(f"{infrastructure:,} candidate {INFRASTRUCTURE_FAILURE}")
    if input_errors > infrastructure:
        parts.append(plural(input_errors - infrastructure, "candidate input error"))
    return ", ".join(parts)


def gate_verdict(passed: bool, input_errors: int, infrastructure: int = 0) -> str:
    """The verdict of arh compare's gate, ``PASS`` or ``FAIL``, with the candidate inputs that
    could not be checked (``input_errors``, of which ``infrastructure`` were infrastructure
    failures), which set the exit status (4 or 3) whatever the gate says."""
    verdict = "PASS" if passed else "FAIL"
    if input_errors:
        verdict += f", {_candidate_errors(input_errors, infrastructure)}"
    return verdict


def exit_status_note(input_errors: int, infrastructure: int = 0) -> str | None:
    """What arh compare's reports add when candidate inputs could not be checked: the exit
    status is 4 (an infrastructure failure) or 3 (an input error: an evaluation error) whatever
    the gate says, 4 before 3 (docs/exit-codes.md), else None."""
    if not input_errors:
        return None
    status = 4 if infrastructure else 3
    return (
        f"exit status {status} whatever the gate says: "
        f"{_candidate_errors(input_errors, infrastructure)}"
    )


def kinds_text(kinds: Mapping[str, int]) -> str:
    """``2 agent_failure · 0 evaluation_error · 1 infrastructure_failure``."""
    return " \u00b7 ".join(f"{count:,} {kind}" for kind, count in kinds.items())


def undecided(kinds: Mapping[str, int]) -> bool:
    """Whether a run's three kinds of failure (its ``kinds``) hold any that is not the agent's:
    an evaluation error or an infrastructure failure."""
    return any(count for kind, count in kinds.items() if kind != AGENT_FAILURE)


def uncovered_text(kinds: Mapping[str, int]) -> str | None:
    """What arh compare's gate does not cover in the candidate's three kinds of failure (its
    ``kinds``): its evaluation errors and infrastructure failures, traces nobody could decide
    and inputs nobody could check; None when it had neither."""
    parts = [
        f"{count:,} {kind}" for kind, count in kinds.items() if kind != AGENT_FAILURE and count
    ]
    if not parts:
        return None
    return f"the gate's verdict does not cover the candidate's {' and '.join(parts)}"


def failures_text(summary: RunSummary) -> str | None:
    """``failures: 2 agent_failure · 0 evaluation_error · 1 infrastructure_failure``, the run's
    three kinds of failure (docs/exit-codes.md), or None for a run that had none."""
    kinds = summary.failures
    if not any(kinds.values()):
        return None
    return "failures: " + kinds_text(kinds)


def plural(count: int, word: str, *, grouped: bool = False) -> str:
    """``1 trace``, ``2 traces``; with ``grouped``, ``1,234 traces``."""
    return f"{count:{',' if grouped else ''}} {word}" + ("" if count == 1 else "s")
