"""The Markdown writers give, byte for byte, the reports of the writers they replaced.

The Markdown reports (``arh validate --md-out`` and the Markdown of ``arh compare``) cut a trace
with too many findings to keep within GitHub's size limit. They used to escape every finding of
a failing trace before cutting it; now they make only the rows they may show. The REFERENCE
below is the old algorithm, copied verbatim from commit 9412055 (the escaping of _markdown.py,
its ``md_fit``, and the Markdown writers of markdown.py and compare.py), and the tests render
many runs and comparisons with both: random numbers of traces and findings, short and long
values, characters the writers escape, and findings enough to force every kind of cut. Any
difference in a cut point, a count line or an escape fails them.

The reference is frozen: if the Markdown report is changed on purpose, change the reference the
same way (or retire this module, once the new writers have had their own tests for a while).
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Final

from hypothesis import event, given, settings
from hypothesis import strategies as st

from agent_reliability_harness.errors import InputError
from agent_reliability_harness.model.fidelity import NotApplicable
from agent_reliability_harness.model.report import Finding, RunReport, RunSummary, TraceReport
from agent_reliability_harness.regression.compare import CompareResult, TraceDelta, compare_reports
from agent_reliability_harness.regression.gate import GateResult, evaluate_gate
from agent_reliability_harness.render import _markdown, compare, markdown
from agent_reliability_harness.render._fidelity import NotApplicableTally
from agent_reliability_harness.render._text import (
    exit_status_note,
    gate_verdict,
    plural,
    run_headline,
    visible,
)

# ================================================================================================
# REFERENCE: the old algorithm, copied verbatim from commit 9412055. Do not "fix" it.
# ================================================================================================

# -- from src/agent_reliability_harness/render/_markdown.py --------------------------------------

MAX_CHARS: Final = 60_000  # GitHub refuses comments longer than 65,536 characters
VALUE_CHARS: Final = 300  # a longer quoted value is cut to this many characters, with an ellipsis
MESSAGE_CHARS: Final = 600  # the same for a finding's message, expected and observed values

_ZWSP: Final = "&#8203;"  # a zero-width space: invisible, but it breaks mentions and autolinks
_MARK: Final = "\x00"  # stands for _ZWSP while escaping; _flatten has escaped real NULs first
# "$" too: GitHub renders $...$ and $$...$$ as math.
_PUNCTUATION: Final = re.compile(r"([\\`*_\[\]|~$])")
_MENTION: Final = re.compile(r"([@#])(?=\w)|\b((?i:gh)-)(?=[0-9])")  # GH-26 is #26 too
# Block syntax a line (or a list item) could start with: an ATX heading, a bullet, an ordered list
# marker, a setext underline or thematic break; ``>`` and ``|`` are escaped everywhere already.
_BLOCK_START: Final = re.compile(
    r"\A(?:#{1,6}(?= |\Z)|[-+](?= |\Z)|-+ *\Z|=+ *\Z|[0-9]{1,9}(?=[.)](?: |\Z)))"
)
_AUTOLINK: Final = re.compile(r"(?i)(www)(?=\.)|(?<=:)(?=//)")
# A closing sequence of an ATX heading: "#"s after a space at the end, which a heading drops.
_CLOSING: Final = re.compile(r"(?<= )#+ *\Z")


def _flatten(text: str) -> str:
    """One line, as the console shows it: line breaks and tabs as ``\\n``, ``\\r``, ``\\t``,
    other control, surrogate and format characters (U+200B, bidi controls) as escapes."""
    return visible(text)


def _reference(char: str) -> str:
    return f"&#{ord(char)};"


def _clip(text: str, limit: int | None) -> str:
    if limit is not None and len(text) > limit:
        return text[: limit - 1] + "\u2026"
    return text


def _block_start(match: re.Match[str]) -> str:
    found = match.group()
    if found[0] in "0123456789":  # "1." or "1)": escape the delimiter after the number
        return found + "\\"
    return "\\" + found


def md_text(text: str, *, limit: int | None = VALUE_CHARS) -> str:
    """Escape text so it renders literally, on one line, inside a table cell, a heading or a list
    item (anywhere on a line, also at its start); text longer than ``limit`` is shortened."""
    text = _flatten(_clip(text, limit))
    text = _AUTOLINK.sub(lambda m: (m.group(1) or "") + _MARK, text)
    text = _MENTION.sub(lambda m: (m.group(1) or m.group(2)) + _MARK, text)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _PUNCTUATION.sub(r"\\\1", text)
    text = _CLOSING.sub(lambda m: "\\" + m.group(), text)  # "x #" is not the heading "x"
    if text[-1:].isspace():  # a heading or a table cell would drop it
        text = text[:-1] + _reference(text[-1])
    if text[:1].isspace():  # leading spaces would let block syntax follow (or indent code)
        text = _reference(text[0]) + text[1:]
    else:
        text = _BLOCK_START.sub(_block_start, text, count=1)
    return text.replace(_MARK, _ZWSP)


def md_code(text: str, *, in_table: bool = True, limit: int | None = VALUE_CHARS) -> str:
    """Show text as inline code; empty text becomes an empty code span, and text longer than
    ``limit`` is shortened.

    In a table cell a ``|`` must be escaped even inside code (GitHub then shows it plainly);
    elsewhere the backslash would show, so ``in_table=False`` leaves it alone.
    """
    text = _flatten(_clip(text, limit))
    if in_table:
        text = text.replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}" if text else "` `"


def md_row(cells: list[str]) -> str:
    """One table row from already-escaped cells."""
    return "| " + " | ".join(cells) + " |"


def md_left_out(count: int, noun: str, verb: str = "listed") -> str:
    """The line that says ``count`` items (``noun`` in the singular) were left out for size."""
    what = f"{count} more {noun}" + ("" if count == 1 else "s")
    return (
        f"{what} {'is' if count == 1 else 'are'} not {verb} here to keep this report within "
        "GitHub's size limit; see the JSON report."
    )


def md_size(lines: Sequence[str]) -> int:
    """Characters of ``lines`` joined with line breaks (and one after the last)."""
    return sum(len(line) + 1 for line in lines)


def _cut(section: list[str], room: int, rows: str, verb: str) -> list[str] | None:
    """``section`` (lines up to a table's ``|---`` delimiter, then its rows) cut to its first
    rows that fit in ``room`` characters with a line saying how many ``rows`` were left out, or
    None when not even one row fits."""
    start = next((i for i, line in enumerate(section) if line.startswith("|---")), None)
    if start is None:
        return None
    kept = section[: start + 1]
    body = section[start + 1 :]
    size = md_size(kept)
    for index, row in enumerate(body):
        left_out = ["", md_left_out(len(body) - index - 1, rows, verb)]
        if size + len(row) + 1 + md_size(left_out) > room:
            break
        kept.append(row)
        size += len(row) + 1
    shown = len(kept) - start - 1
    if not shown:
        return None
    return [*kept, "", md_left_out(len(body) - shown, rows, verb)] if shown < len(body) else kept


def md_fit(
    lines: list[str],
    items: Sequence[str] | Iterable[list[str]],
    budget: int,
    noun: str,
    *,
    count: int | None = None,
    verb: str = "listed",
    used: int = 0,
    rows: str | None = None,
) -> None:
    """Append ``items`` (lines, or sections of lines) to ``lines`` while ``used`` characters
    plus ``lines`` stay within ``budget``; a line says how many of them were left out. Sections
    may come from a generator, made only while they fit: ``count`` says how many there are.

    With ``rows`` (what a section's table rows are, such as ``"finding"``), a section too big for
    the room left is cut to its first rows, with a line saying how many more rows it has: it
    leaves the sections after it the room they need whole, up to half the room (all of it if
    not one row fits otherwise), and they still get what is left."""
    total = len(items) if count is None else count  # type: ignore[arg-type]
    size = used + md_size(lines)
    pending: Iterator[str | list[str]] = iter(items)
    ahead: list[str | list[str]] = []  # sections made early, to know the room they need
    shown = 0
    while (item := ahead.pop(0) if ahead else next(pending, None)) is not None:
        section: list[str] = [item] if isinstance(item, str) else item
        item_size = md_size(section)
        if size + item_size > budget:
            room = budget - size
            cut = None
            if rows is not None and not isinstance(item, str):
                need = sum(md_size([x] if isinstance(x, str) else x) for x in ahead)
                while need <= room // 2 and shown + 1 + len(ahead) < total:
                    following = next(pending, None)
                    if following is None:
                        break
                    ahead.append(following)
                    need += md_size([following] if isinstance(following, str) else following)
                cut = _cut(section, room - min(need, room // 2), rows, verb)
                cut = cut or _cut(section, room, rows, verb)
            if cut is None:
                lines += ["", md_left_out(total - shown, noun, verb)]
                return
            section, item_size = cut, md_size(cut)
        lines += section
        size += item_size
        shown += 1


# -- from src/agent_reliability_harness/render/markdown.py ---------------------------------------

_TAIL_CHARS: Final = MAX_CHARS // 4  # for the checks not applicable and the input errors
_ALL_ROWS: Final = 50  # larger runs list only their failing traces in the summary table


def _verdict(report: TraceReport) -> str:
    if report.failure == "evaluation_error":  # passed, but a gating judge gave no verdict
        return "PASS, *evaluation_error*"
    return "PASS" if report.passed else "**FAIL**"


def _count(findings: tuple[Finding, ...], severity: str) -> int:
    return sum(1 for f in findings if f.severity == severity)


def _message(finding: Finding) -> str:
    return md_text(finding.message, limit=MESSAGE_CHARS)


def _trace_section(report: TraceReport) -> list[str]:
    lines = [
        "",
        f"### {md_text(report.trace_id)}",
        "",
        f"Score {report.score:.2f} \u00b7 {md_text(report.agent_name)} / "
        f"{md_text(report.workflow)}"
        + (
            ""
            if report.source_path is None
            else f" \u00b7 {md_code(report.source_path, in_table=False)}"
        )
        + (f" \u00b7 started {md_text(report.started_at)}" if report.started_at else "")
        + (f" \u00b7 ended {md_text(report.ended_at)}" if report.ended_at else ""),
        "",
        "| Severity | Rule | Step | Finding | Expected | Observed |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        md_row(
            [
                f.severity,
                md_code(f.rule_id or f.category),
                "-" if f.step_id is None else md_code(f.step_id),
                _message(f),
                "" if f.expected is None else md_text(f.expected, limit=MESSAGE_CHARS),
                "" if f.observed is None else md_text(f.observed, limit=MESSAGE_CHARS),
            ]
        )
        for f in report.findings
    ]
    return lines


def _row(r: TraceReport) -> str:
    return md_row(
        [
            md_code(r.trace_id),
            _verdict(r),
            f"{r.score:.2f}",
            str(_count(r.findings, "error")),
            str(_count(r.findings, "warning")),
            f"{md_text(r.agent_name)} / {md_text(r.workflow)}",
        ]
    )


def _not_applicable(section: Sequence[str], budget: int) -> list[str]:
    """The section of NotApplicableTally (_fidelity.py), its table cut to ``budget``."""
    if not section:
        return []
    start = next(i for i, line in enumerate(section) if line.startswith("|---")) + 1
    lines = list(section[:start])
    md_fit(lines, section[start:], budget, "check")
    return lines


def _input_errors(summary: RunSummary, budget: int) -> list[str]:
    if not summary.input_errors:
        return []
    lines = ["", "### Input errors", ""]
    items = [f"- {md_text(str(error), limit=MESSAGE_CHARS)}" for error in summary.input_errors]
    md_fit(lines, items, budget, "input error")
    return lines


def _document(
    summary: RunSummary,
    first: Sequence[TraceReport],
    failing: Sequence[TraceReport],
    failing_count: int,
    not_applicable: Sequence[str] = (),
) -> str:
    """The report from the run's summary, its first ``_ALL_ROWS`` reports (all of them when the
    run is no larger) and its first failing reports (all that can fit).

    Each part has a share of ``MAX_CHARS``: the summary table half, the checks not applicable and
    the input errors a quarter together (all that is left when no trace failed), the findings
    the rest; what does not fit is left out, and a line says how much."""
    total = summary.total
    headline = run_headline(total, failing_count, len(summary.input_errors))
    head = [f"## arh validation: {headline}", ""]
    facts = [f"average score {summary.average_score:.2f}"]
    if summary.policy_id is not None:
        facts.insert(0, f"policy {md_code(summary.policy_id, in_table=False)}")
    if summary.harness_version is not None:
        facts.append(f"arh {md_text(summary.harness_version)}")
    if summary.input_errors:
        count = len(summary.input_errors)
        facts.append(f"**{plural(count, 'input error')}**")
    head.append(" \u00b7 ".join(facts) + ".")
    kinds = summary.failures  # the three kinds of failure, in a line of their own when any
    if any(kinds.values()):
        head += ["", "Failures: " + " \u00b7 ".join(f"{n:,} {k}" for k, n in kinds.items()) + "."]
    listed, listed_count = (first, total) if total <= _ALL_ROWS else (failing, failing_count)
    if listed_count:
        head += [
            "",
            "| Trace | Verdict | Score | Errors | Warnings | Agent / workflow |",
            "|---|---|---|---|---|---|",
        ]
        rows = ([_row(r)] for r in listed)  # made only while they fit
        md_fit(head, rows, MAX_CHARS // 2 + 1, "trace", count=listed_count)
    if listed_count < total:
        passing = total - failing_count
        head += ["", f"{passing} passing trace{'s are' if passing != 1 else ' is'} not listed."]
    # Without findings to show, the checks and input errors may have all the room that is left.
    room = _TAIL_CHARS if failing_count else MAX_CHARS - 300 - md_size(head)
    tail = _not_applicable(not_applicable, room)
    tail += _input_errors(summary, room - md_size(tail))
    body: list[str] = []
    if failing_count:
        body += ["", "## Findings of the failing traces"]
    sections = (_trace_section(report) for report in failing)
    md_fit(body, sections, MAX_CHARS - 200, "failing trace", count=failing_count, verb="shown",
           used=md_size(head + tail), rows="finding")  # fmt: skip
    return "\n".join(head + body + tail) + "\n"


class MarkdownWriter:
    """Collects what the report can show while traces are checked one at a time, in memory
    bounded by the report's size limit; :meth:`head` is then the whole report (the text of
    :func:`render_markdown`) and :meth:`add` and :meth:`tail` return nothing."""

    def __init__(self) -> None:
        self._first: list[TraceReport] = []
        self._failing: list[TraceReport] = []
        self._failing_count = 0
        self._rows = 0  # characters of the failing traces kept so far, as rows and as sections
        self._sections = 0
        self._not_applicable = NotApplicableTally()

    def add(self, report: TraceReport) -> str:
        self._not_applicable.add(report)
        if len(self._first) < _ALL_ROWS:
            self._first.append(report)
        if not report.passed:
            self._failing_count += 1
            # Keep failing traces until neither the table nor the sections could show another.
            if self._rows <= MAX_CHARS // 2 or self._sections <= MAX_CHARS:
                self._failing.append(report)
                self._rows += len(_row(report)) + 1
                self._sections += sum(len(line) + 1 for line in _trace_section(report))
        return ""

    def head(self, summary: RunSummary) -> str:
        return _document(
            summary,
            self._first,
            self._failing,
            self._failing_count,
            self._not_applicable.markdown(),
        )

    def tail(self, _summary: RunSummary) -> str:
        return ""


def render_markdown(run: RunReport) -> str:
    """The report as GitHub-flavoured Markdown, ending with a newline."""
    failing = [r for r in run.reports if not r.passed]
    tally = NotApplicableTally()
    for report in run.reports:
        tally.add(report)
    return _document(
        run.summary(), run.reports[:_ALL_ROWS], failing, len(failing), tally.markdown()
    )


# -- from src/agent_reliability_harness/render/compare.py ----------------------------------------

_MD_REASON_CHARS: Final = 1_000
_ARROWS: Final = {
    "pass->fail": "pass \u2192 fail",
    "fail->pass": "fail \u2192 pass",
    "added": "added",
    "removed": "removed",
    # changed on purpose since 9412055: a trace listed with the same verdict (its findings
    # changed) said "unchanged" in the table of changed traces
    "unchanged": "findings changed",
}


def _score(delta: TraceDelta) -> str:
    base, cand, change = delta.baseline, delta.candidate, delta.score_delta
    if base is not None and cand is not None and change is not None:
        # changed on purpose since 9412055: an arrow, where "->" was escaped as "-&gt;"
        return f"{base.score:.2f} \u2192 {cand.score:.2f} ({change:+.2f})"
    report = cand or base
    assert report is not None
    return f"{report.score:.2f}"


def _md_findings(delta: TraceDelta) -> list[str]:
    rows = [
        "| Change | Severity | Rule | Step | Message |",
        "|---|---|---|---|---|",
    ]
    for change, findings in (("new", delta.new_findings), ("resolved", delta.resolved_findings)):
        rows += [
            md_row(
                [
                    change,
                    md_text(f.severity),
                    md_code(f.rule_id or f.category),
                    "-" if f.step_id is None else md_code(f.step_id),
                    md_text(f.message, limit=MESSAGE_CHARS),
                ]
            )
            for f in findings
        ]
    return rows


def render_compare_markdown(
    result: CompareResult,
    gate: GateResult,
    *,
    extra: Sequence[str] = (),
    input_errors: int = 0,
) -> str:
    """The comparison for a pull-request comment or a CI step summary; ``extra`` lines (the
    statistics) follow the summary table. ``input_errors`` counts the candidate inputs that
    could not be read (when it was validated now), which fail the command whatever the gate.

    Like the validation report it keeps within ``MAX_CHARS``: the gate's reasons and the
    warnings may fill an eighth of it each, the statistics a quarter, the table of changed
    traces up to half in all (at least an eighth), the findings the rest; what does not fit is
    left out, and a line says how much."""
    s = result.summary()
    out = [f"## arh regression gate: {gate_verdict(gate.passed, input_errors)}", ""]
    out.append(
        f"Gate mode `{gate.fail_on}`"
        + (
            f", score drop limit {gate.max_score_drop:.2f}"
            if gate.max_score_drop is not None
            else ""
        )
        + "."
    )
    note = exit_status_note(input_errors)
    if note is not None:
        out += ["", f"**{note[0].upper()}{note[1:]}** (listed in the run's log)."]
    cand = result.candidate
    not_agent = [("evaluation_error", cand.failures["evaluation_error"]),
                 ("infrastructure_failure", cand.failures["infrastructure_failure"])]  # fmt: skip
    if any(n for _, n in not_agent):
        what = " and ".join(f"{n} {kind}" for kind, n in not_agent if n)
        out += ["", f"**The gate's verdict does not cover the candidate's {what}.**"]
    if gate.reasons:
        reasons = [f"- {md_text(r, limit=_MD_REASON_CHARS)}" for r in gate.reasons]
        out.append("")
        md_fit(out, reasons, md_size(out) + MAX_CHARS // 8, "gate reason")
    if result.warnings:
        warnings = [f"> **Warning:** {md_text(w, limit=_MD_REASON_CHARS)}" for w in result.warnings]
        out.append("")
        md_fit(out, warnings, md_size(out) + MAX_CHARS // 8, "warning")
    out += [
        "",
        "| Metric | Value |",
        "|---|---|",
        f"| Traces compared | {s['traces_compared']} |",
        f"| Added / removed | {s['traces_added']} / {s['traces_removed']} |",
        f"| Pass to fail | {s['pass_to_fail']} |",
        f"| Fail to pass | {s['fail_to_pass']} |",
        f"| New findings (errors) | {s['new_findings']} ({s['new_error_findings']}) |",
        f"| Resolved findings | {s['resolved_findings']} |",
        f"| Average score delta | {s['average_score_delta']:+.2f} |",
        f"| Largest score drop | {s['max_score_drop']:.2f} |",
    ]
    sides = [("Baseline", result.baseline), ("Candidate", result.candidate)]
    kinds = ("agent_failure", "evaluation_error", "infrastructure_failure")
    counts = [(label, tuple(x.failures[k] for k in kinds)) for label, x in sides]
    if any(any(c) for _, c in counts):
        out += [
            f"| {label} failures | {a} agent_failure \u00b7 {e} evaluation_error \u00b7 {i} "
            "infrastructure_failure |"
            for label, (a, e, i) in counts
        ]
    md_fit(out, list(extra), md_size(out) + MAX_CHARS // 4, "line of statistics")
    notable = [d for d in result.traces if d.notable]
    if notable:
        out += [
            "",
            "### Changed traces",
            "",
            "| Trace | Change | Score | New findings | Resolved |",
            "|---|---|---|---|---|",
        ]
        rows = [
            md_row(
                [
                    md_code(d.trace_id),
                    _ARROWS[d.status_change] if d.changed else "score only",
                    md_text(_score(d)),
                    str(len(d.new_findings)),
                    str(len(d.resolved_findings)),
                ]
            )
            for d in notable
        ]
        budget = max(MAX_CHARS // 2, md_size(out) + MAX_CHARS // 8)
        md_fit(out, rows, budget, "changed trace")
        with_findings = [d for d in notable if d.new_findings or d.resolved_findings]
        sections = (
            ["", f"#### {md_text(d.trace_id)}", "", *_md_findings(d)] for d in with_findings
        )
        md_fit(out, sections, MAX_CHARS - 200, "changed trace", count=len(with_findings),
               verb="detailed", rows="finding")  # fmt: skip
    return "\n".join(out) + "\n"


# ================================================================================================
# End of the reference.
# ================================================================================================


# -- Inputs --------------------------------------------------------------------------------------

# Words, and characters and sequences the writers escape or that could start a block
_PLAIN: Final = ("tool", "refund", "lookup_account", "the", "agent", "caf\u00e9", "\u65e5\u672c")
_ESCAPED: Final = (
    "\U0001f642", "|", "*", "_", "`", "``", "[x](y)", "<b>", "&", ">", "~", "$", "\\", "@user",
    "#12", "GH-3", "www.example.com", "http://x.y", "\n", "\r\n", "\t", "\x1b[31m", "\u202e",
    "\u200b", "\x00", "\ud800", "\u2028", "##[error]", "::warning", "a:::b",
)  # fmt: skip
_STARTS: Final = ("", "", "", "# ", "- ", "+ ", "1. ", "2) ", "---", "===", " ", "#")
_ENDS: Final = ("", "", "", " ", " #", " ##", "\t")
_SIZES: Final = ("short",) * 10 + ("medium",) * 6 + ("long",) * 3 + ("edge",)


def _text(rng: random.Random, size: str | None = None) -> str:
    """A value: a few words, a few dozen, a few hundred, or just around the lengths at which
    the writers shorten values (300 characters, 600 for messages). Long ones have fewer
    characters to escape, which are slow to escape (in both writers alike)."""
    size = size or rng.choice(_SIZES)
    if size == "edge":
        return rng.choice("a#|&") * rng.choice((299, 300, 301, 599, 600, 601))
    count = {"short": (1, 3), "medium": (5, 30), "long": (120, 250)}[size]
    escaped = 0.1 if size == "long" else 0.5
    words = [
        rng.choice(_ESCAPED if rng.random() < escaped else _PLAIN)
        for _ in range(rng.randint(*count))
    ]
    return rng.choice(_STARTS) + " ".join(words) + rng.choice(_ENDS)


def _finding(rng: random.Random, index: int, size: str | None) -> Finding:
    def value() -> str | None:
        return None if rng.random() < 0.3 else _text(rng, size)

    step = rng.random()
    return Finding(
        rng.choice(("ARH-SCH-001", "ARH-FLW-003", "", "R|`x`")),
        rng.choice(("error", "warning", "info")),
        rng.choice(("schema", "flow")),
        _text(rng, size),
        None if step < 0.2 else f"s{index}" if step < 0.8 else _text(rng),
        expected=value(),
        observed=value(),
        subject=f"/arguments/a{index}",
    )


def _findings(rng: random.Random, count: int) -> tuple[Finding, ...]:
    """``count`` findings, all short, all long, or mixed."""
    size = rng.choice((None, None, "short", "long"))
    return tuple(_finding(rng, i, size) for i in range(count))


def _counts(rng: random.Random, traces: int) -> list[int]:
    """Numbers of findings for ``traces`` traces, now and then enough to be cut, but not so
    many in all that the reference (which escapes every finding) takes long."""
    choices = (0, 0, 1, 1, 2, 3, 5, 10, 40, 150, 400) if traces <= 60 else (0, 1, 2)
    counts = [rng.choice(choices) for _ in range(traces)]
    while sum(counts) > 600:
        counts[counts.index(max(counts))] //= 2
    return counts


def _report(
    rng: random.Random,
    trace_id: str,
    findings: tuple[Finding, ...],
    checks: Sequence[NotApplicable] = (),
    *,
    passed: bool | None = None,
) -> TraceReport:
    if passed is None:
        passed = not findings if rng.random() < 0.7 else rng.random() < 0.5
    score = rng.choice((0.0, 100.0, rng.uniform(0, 100)))
    source = rng.choice((None, "runs/t.json", _text(rng)))
    not_applicable = tuple(rng.sample(checks, rng.randint(0, len(checks)))) if checks else ()
    return TraceReport(
        trace_id, _text(rng), _text(rng), "p", score, passed, 1.0, 0.0, None, findings,
        source_path=source, not_applicable=not_applicable,
    )  # fmt: skip


def _trace_ids(
    rng: random.Random, count: int, *, unique: bool, size: str | None = None
) -> list[str]:
    ids = [_text(rng, size) for _ in range(count)]
    if unique:
        ids = [trace_id if trace_id not in ids[:i] else f"{trace_id}{i}" for i, trace_id in
               enumerate(ids)]  # fmt: skip
    return ids


def _run(rng: random.Random) -> RunReport:
    """A run of 0 to 300 traces (50 is where the summary table lists only the failing ones),
    with checks not applicable and input errors, sometimes enough of them to be cut too; now
    and then every trace fails, with a long id and no findings, so that the summary table's
    rows of the failing traces are nearly as long as their sections (the Markdown writer keeps
    failing traces until both would fill the report)."""
    traces = rng.choice((0, 1, 2, 3, 5, 10, 49, 50, 51, 60, 300))
    failing = rng.random() < 0.15
    checks = [
        NotApplicable(rng.choice(("ARH-BUD-001", "R|`x`")), _text(rng), _text(rng))
        for _ in range(rng.choice((0, 3, 120)))
    ]
    ids = _trace_ids(rng, traces, unique=rng.random() < 0.8, size="long" if failing else None)
    counts = [0] * traces if failing else _counts(rng, traces)
    reports = tuple(
        _report(rng, trace_id, _findings(rng, count), checks, passed=False if failing else None)
        for trace_id, count in zip(ids, counts, strict=True)
    )
    errors = tuple(
        InputError(
            _text(rng),
            pointer=rng.choice(("", "/steps/0", None)),
            source=rng.choice((None, "runs/a.jsonl", _text(rng))),
            line=rng.choice((None, 3)),
        )
        for _ in range(rng.choice((0, 0, 1, 4, 150)))
    )
    policy_id = rng.choice((None, "policy-1", _text(rng)))
    version = rng.choice((None, "0.3.0", _text(rng)))
    return RunReport(reports, errors, policy_id, "0" * 64, version)


def _comparison(rng: random.Random) -> tuple[CompareResult, GateResult]:
    """Two runs sharing some traces and some findings, so that traces are added, removed and
    changed, with new and resolved findings, compared and gated in any mode."""
    traces = rng.choice((1, 2, 3, 5, 20, 60, 300))
    ids = _trace_ids(rng, traces, unique=True)
    counts = _counts(rng, traces)
    base: list[TraceReport] = []
    cand: list[TraceReport] = []
    for trace_id, count in zip(ids, counts, strict=True):
        findings = _findings(rng, count)
        kept = rng.randint(0, count)  # the baseline's first findings, then new ones
        side = rng.random()
        if side < 0.9:
            base.append(_report(rng, trace_id, findings[:kept]))
        if side > 0.1:
            cand.append(_report(rng, trace_id, findings[rng.randint(0, kept) :]))
    result = compare_reports(
        RunReport(tuple(base), (), rng.choice(("p", _text(rng))), None, "0.3.0"),
        RunReport(tuple(cand), (), rng.choice(("p", _text(rng))), None, rng.choice(("0.3.0", "x"))),
        any_step=rng.random() < 0.2,
    )
    mode = rng.choice(("regressions", "failures", "never"))
    drop = rng.choice((None, 0.5, 5.0)) if mode == "regressions" else None
    gate = evaluate_gate(result, mode, drop, fail_on_drift=mode != "never" and rng.random() < 0.2)
    return result, gate


def _validation_markdown(run: RunReport) -> tuple[str, str]:
    """The report of ``run`` by the Markdown writer of ``arh validate --md-out``, and by the
    reference's."""
    writer, reference = markdown.MarkdownWriter(), MarkdownWriter()
    for report in run.reports:
        assert writer.add(report) == reference.add(report) == ""
    summary = run.summary()
    assert len(writer._failing) == len(reference._failing)  # it keeps as many failing traces
    return (
        writer.head(summary) + writer.tail(summary),
        reference.head(summary) + reference.tail(summary),
    )


def _events(text: str) -> None:
    """Count, for hypothesis' statistics, what the report had to cut."""
    for what in ("findings are not", "failing traces are not", "changed traces are not",
                 "traces are not listed", "input errors are not", "checks are not",
                 "gate reasons are not", "warnings are not"):  # fmt: skip
        if what in text:
            event(f"cut: {what}")


# -- Tests ---------------------------------------------------------------------------------------


# A seed rather than hypothesis' own data: the runs are too big for its buffer.
SEEDS: Final = st.integers(0, 2**64)


@settings(max_examples=100, deadline=None)
@given(SEEDS)
def test_validation_markdown_is_the_reference_s(seed: int) -> None:
    run = _run(random.Random(seed))  # noqa: S311 - reproducible test data
    expected = render_markdown(run)
    _events(expected)
    assert markdown.render_markdown(run) == expected
    streamed, reference = _validation_markdown(run)
    assert streamed == reference


@settings(max_examples=100, deadline=None)
@given(SEEDS)
def test_comparison_markdown_is_the_reference_s(seed: int) -> None:
    rng = random.Random(seed)  # noqa: S311 - reproducible test data
    result, gate = _comparison(rng)
    extra = [f"| statistic {i} | {'x' * rng.randint(0, 200)} |" for i in
             range(rng.choice((0, 0, 3, 400)))]  # fmt: skip
    errors = rng.choice((0, 0, 1, 3))
    expected = render_compare_markdown(result, gate, extra=extra, input_errors=errors)
    _events(expected)
    assert compare.render_compare_markdown(result, gate, extra=extra, input_errors=errors) == (
        expected
    )


def _failing(trace_id: str, lengths: Iterable[int]) -> TraceReport:
    """A failing trace with a finding for each message length."""
    findings = tuple(
        Finding("ARH-SCH-001", "error", "schema", "m" * length, "s1") for length in lengths
    )
    return TraceReport(trace_id, "a", "w", "p", 0.0, False, 0.0, 0.0, None, findings)


def test_every_cut_point_and_room_left_is_the_reference_s() -> None:
    """The room for the findings shrinks one character at a time (the policy id grows), so the
    cut of a big trace passes through every point where a row just fits and then does not; and
    the two traces after it need, together, first less than half the room left to them, then
    just half, then more: the big trace leaves them all they need, then half the room."""
    rng = random.Random(1)  # noqa: S311 - reproducible test data
    big = _failing("big", (rng.randint(60, 150) for _ in range(500)))
    last = _failing("last", [10])

    def after(count: int, length: int) -> TraceReport:
        """The trace after the big one: ``count`` findings, the last message ``length`` long."""
        return _failing("next", [500] * (count - 1) + [length])

    def room(policy: str) -> int:
        """The room for the big trace's findings (the whole report is its reference's)."""
        text = render_markdown(RunReport((big, after(50, 0), last), (), policy))
        head = len(text[: text.index("\n\n## Findings of the failing traces\n")]) + 1
        return MAX_CHARS - 200 - head - md_size(["", "## Findings of the failing traces"])

    def size(report: TraceReport) -> int:
        return md_size(_trace_section(report))

    # With a policy id of 150 characters, the two need half the room exactly.
    row = size(after(2, 500)) - size(after(1, 500))
    want = room("p" * 150) // 2 - size(last) - size(after(1, 0))
    count, length = want // row + 1, want % row
    assert 10 <= count < 100  # the summary table's "Errors" cell keeps its width
    assert size(after(count, length)) + size(last) == room("p" * 150) // 2
    reports = (big, after(count, length), last)
    for policy in range(301):
        run = RunReport(reports, (), "p" * policy)
        assert markdown.render_markdown(run) == render_markdown(run), policy


def test_traces_with_thousands_of_findings_are_the_reference_s() -> None:
    rng = random.Random(3)  # noqa: S311 - reproducible test data
    big = _failing("big", (rng.randint(0, 80) for _ in range(5_000)))
    bigger = _report(rng, "bigger", _findings(rng, 2_000))
    run = RunReport((big, _failing("small", [10]), bigger, _failing("last", [20])))
    expected = render_markdown(run)
    assert re.search(r"\n4\d{3} more findings are not shown here", expected)
    assert markdown.render_markdown(run) == expected
    assert _validation_markdown(run) == (expected, expected)
    # a comparison in which a trace gains 3,000 findings and loses 500
    findings = _findings(rng, 3_500)
    base = RunReport((_report(rng, "big", findings[:500]), _failing("small", [])))
    cand = RunReport((_report(rng, "big", findings[500:]), _failing("small", [10, 20])))
    result = compare_reports(base, cand)
    gate = evaluate_gate(result)
    expected = render_compare_markdown(result, gate)
    assert re.search(r"\n\d+ more findings are not detailed here", expected)
    assert compare.render_compare_markdown(result, gate) == expected


def _sections(rng: random.Random) -> list[tuple[list[str], list[str]]]:
    """Sections as (head, rows): most end with a table (of rows up to 5, 60 or 250 characters
    long), some have no table; they are small, so that a sweep of budgets is quick."""
    sections = []
    for index in range(rng.randint(1, 6)):
        head = ["", f"### {'x' * rng.randint(0, 30)}{index}"]
        rows: list[str] = []
        if rng.random() < 0.85:
            head += ["", "| Row |", "|---|"]
            count = rng.choice((0, 1, 2, 5, 20, 60))
            longest = rng.choice((5, 60, 250))
            rows = [f"| {'r' * rng.randint(0, longest)} |" for _ in range(count)]
        sections.append((head, rows))
    return sections


def _assert_md_fit_is_the_reference_s(
    sections: list[tuple[list[str], list[str]]],
    budgets: Iterable[int],
    lines: Sequence[str] = (),
    used: int = 0,
    rows: str | None = "finding",
) -> None:
    """``md_fit`` of ``sections`` made lazily appends what the reference's ``md_fit`` appends
    for them made whole, for every budget of ``budgets``."""
    for budget in budgets:
        expected = list(lines)
        md_fit(expected, [head + table for head, table in sections], budget, "trace",
               verb="shown", used=used, rows=rows)  # fmt: skip
        lazy = (_markdown.MdSection(head, len(table), table.__getitem__) for head, table in
                sections)  # fmt: skip
        got = list(lines)
        _markdown.md_fit(got, lazy, budget, "trace", count=len(sections), verb="shown",
                         used=used, rows=rows)  # fmt: skip
        assert got == expected, budget


@settings(max_examples=15, deadline=None)
@given(SEEDS)
def test_md_fit_is_the_reference_s_for_every_budget(seed: int) -> None:
    """Whatever the budget (it grows one character at a time), the characters used already,
    and whether the sections are cut."""
    rng = random.Random(seed)  # noqa: S311 - reproducible test data
    sections = _sections(rng)
    lines = ["## Report", "", "x" * rng.randint(0, 200)]
    used = rng.choice((0, 0, 50, 500))
    whole = sum(md_size(head + table) for head, table in sections) + md_size(lines) + used
    rows = rng.choice((None, "finding"))
    _assert_md_fit_is_the_reference_s(sections, range(whole + 300), lines, used, rows)


def test_md_fit_is_the_reference_s_when_a_cut_takes_all_the_room() -> None:
    """When not one row of a big section fits beside the room the next sections need, it takes
    all the room it can, and the next section, cut in its turn, still leaves the room the one
    after it needs."""
    big = (["", "### big", "", "| Row |", "|---|"], ["| " + "r" * 200 + " |"] * 3)
    last: tuple[list[str], list[str]] = (["", "### last", "", "| Row |", "|---|"], [])
    for count in range(10, 30):
        after = (["", "### after", "", "| Row |", "|---|"], ["| rrrrr |"] * count)
        _assert_md_fit_is_the_reference_s([big, after, last], range(200, 1_000))
