"""Renderers of a comparison and its gate: console, JSON and Markdown."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from agent_reliability_harness._json import dumps_indented
from agent_reliability_harness._version import __version__
from agent_reliability_harness.model.report import Finding, TraceReport
from agent_reliability_harness.regression.compare import CompareResult, TraceDelta
from agent_reliability_harness.regression.gate import GateResult
from agent_reliability_harness.regression.judged import judge_comparison, judge_flips, side_rates
from agent_reliability_harness.render._answers import flip_lines, flip_rows
from agent_reliability_harness.render._markdown import (
    MAX_CHARS,
    MESSAGE_CHARS,
    MdSection,
    md_code,
    md_fit,
    md_row,
    md_size,
    md_text,
)
from agent_reliability_harness.render._text import (
    exit_status_note,
    gate_verdict,
    kinds_text,
    plural,
    terminal_safe,
    uncovered_text,
    undecided,
)
from agent_reliability_harness.render.console import (
    concise_line,
    github_annotation,
    trace_location,
)
from agent_reliability_harness.render.github import annotation
from agent_reliability_harness.render.stats import judge_rate_text

__all__ = [
    "COMPARE_RENDERERS",
    "render_compare_console",
    "render_compare_json",
    "render_compare_markdown",
    "ungated_regressions",
]

_WIDTH: Final = 100
_MD_REASON_CHARS: Final = 1_000
_LABELS: Final = {
    "pass->fail": "PASS->FAIL",
    "fail->pass": "FAIL->PASS",
    "added": "ADDED",
    "removed": "REMOVED",
    "unchanged": "CHANGED",
}
_ARROWS: Final = {
    "pass->fail": "pass \u2192 fail",
    "fail->pass": "fail \u2192 pass",
    "added": "added",
    "removed": "removed",
}


def render_compare_json(
    result: CompareResult, gate: GateResult, *, statistics: Mapping[str, Any] | None = None
) -> str:
    """The comparison as JSON: the 0.2.x keys, then the additions of this version, and
    ``statistics`` when statistical options were given (docs/statistics.md)."""
    data = {
        "schema_version": "1",
        "baseline_policy_id": result.baseline.policy_id,
        "candidate_policy_id": result.candidate.policy_id,
        "summary": result.summary(),
        "gate": gate.to_dict(),
        "traces": [t.to_dict() for t in result.traces],
        "warnings": list(result.warnings),
        "baseline": result.baseline.to_dict(),
        "candidate": result.candidate.to_dict(),
        "harness": {"name": "agent-reliability-harness", "version": __version__},
    }
    if result.answers is not None:  # only with answer checks: other outputs stay as they were
        data["answers"] = result.answers.to_dict()
    if statistics is not None:
        data["statistics"] = statistics
    judged = judge_comparison(result)
    if judged is not None:  # only then: comparisons of runs without a judge stay as they were
        data["judge"] = judged
    return dumps_indented(data) + "\n"


def _score(delta: TraceDelta, arrow: str = "->") -> str:
    base, cand, change = delta.baseline, delta.candidate, delta.score_delta
    if base is not None and cand is not None and change is not None:
        return f"{base.score:.2f} {arrow} {cand.score:.2f} ({change:+.2f})"
    report = cand or base
    assert report is not None
    return f"{report.score:.2f}"


def _finding_line(sign: str, finding: Finding) -> list[str]:
    step = "-" if finding.step_id is None else terminal_safe(finding.step_id)
    rule = terminal_safe(finding.rule_id or finding.category)  # read from a report file
    head = f"      {sign} {finding.severity:<8}{rule}  {step}  "
    return textwrap.wrap(
        terminal_safe(finding.message),
        width=_WIDTH,
        initial_indent=head,
        subsequent_indent=" " * 16,
        break_long_words=True,
        break_on_hyphens=False,
    ) or [head.rstrip()]


def ungated_regressions(result: CompareResult) -> str | None:
    """What ``--fail-on regressions`` would fail on, said in a sentence, or None when nothing.
    ``arh compare`` with statistical gates, whose ``--fail-on`` defaults to never, says it, so
    that the trace-by-trace gate is never switched off without a word."""
    s = result.summary()
    added = sum(
        1
        for t in result.traces
        if t.status_change == "added" and t.candidate is not None and not t.candidate.passed
    )
    parts = []
    if s["new_error_findings"]:
        parts.append(plural(s["new_error_findings"], "new error finding"))
    if s["pass_to_fail"]:
        parts.append(f"{plural(s['pass_to_fail'], 'trace')} from pass to fail")
    if added:
        parts.append(f"{plural(added, 'added trace')} failing")
    if not parts:
        return None
    return (
        f"not gated, as --fail-on defaults to never with --gate or --gates: {', '.join(parts)} "
        "(--fail-on regressions gates them too)"
    )


def _listed(delta: TraceDelta, show_passing: bool) -> bool:
    """Whether the console lists a trace: it changed (or its score moved), and, unless
    ``show_passing``, it fails in the candidate or is gone from it."""
    if not delta.notable:
        return False
    return show_passing or delta.candidate is None or not delta.candidate.passed


def _delta_lines(delta: TraceDelta) -> list[str]:
    label = _LABELS[delta.status_change] if delta.changed else "SCORE"
    verdict = "" if delta.candidate is None else ("PASS  " if delta.candidate.passed else "FAIL  ")
    lines = ["", f"{label:<11} {terminal_safe(delta.trace_id)}  {verdict}score {_score(delta)}"]
    for finding in delta.new_findings:
        lines += _finding_line("+", finding)
    for finding in delta.resolved_findings:
        lines += _finding_line("-", finding)
    return lines


def _concise_lines(delta: TraceDelta) -> list[str]:
    """A line for a change of verdict, and one per new finding, as ``--output-format concise``
    of arh validate prints findings (resolved findings are counted in the summary)."""
    report = delta.candidate or delta.baseline
    assert report is not None
    where = trace_location(report)
    lines = []
    if delta.status_change != "unchanged":
        candidate = delta.candidate  # an added trace's verdict (the other labels say theirs)
        verdict = ""
        if delta.status_change == "added" and candidate is not None:
            verdict = "PASS " if candidate.passed else "FAIL "
        label = _LABELS[delta.status_change]
        lines.append(terminal_safe(f"{where}: {label} {verdict}score {_score(delta)}"))
    return lines + [concise_line(where, finding) for finding in delta.new_findings]


def _github_lines(
    delta: TraceDelta, step_lines: Callable[[TraceReport], Sequence[int] | None] | None
) -> list[str]:
    """An annotation per new finding, at the candidate trace's file and step."""
    report = delta.candidate
    if report is None or not delta.new_findings:
        return []
    steps = None if step_lines is None else step_lines(report)
    return [github_annotation(report, f, steps, change="new in ") for f in delta.new_findings]


def render_compare_console(
    result: CompareResult,
    gate: GateResult,
    *,
    extra: Sequence[str] = (),
    show_passing: bool = True,
    output_format: str = "full",
    step_lines: Callable[[TraceReport], Sequence[int] | None] | None = None,
) -> str:
    """The comparison for a terminal: summary, the traces that changed, ``extra`` lines (the
    statistics), then the gate.

    Without ``show_passing``, the changed traces that pass in the candidate are left out (one
    line counts them), so that regressions stand out in a large run. ``output_format`` says how
    each trace is shown: ``full`` (a block with its new and resolved findings), ``concise`` (a
    line for a change of verdict and one per new finding) or ``github`` (a GitHub Actions
    annotation per new finding, at the line of its step where ``step_lines`` knows it, and per
    reason of a failed gate)."""
    s = result.summary()
    dot = " \u00b7 "
    lines = [
        dot.join(
            [
                f"compared {plural(s['traces_compared'], 'trace')}",
                f"{s['traces_added']} added",
                f"{s['traces_removed']} removed",
            ]
        ),
        dot.join(
            [
                f"pass->fail {s['pass_to_fail']}",
                f"fail->pass {s['fail_to_pass']}",
                f"new findings {s['new_findings']} ({plural(s['new_error_findings'], 'error')})",
                f"resolved {s['resolved_findings']}",
            ]
        ),
        dot.join(
            [
                f"average score delta {s['average_score_delta']:+.2f}",
                f"largest score drop {s['max_score_drop']:.2f}",
            ]
        ),
    ]
    lines += _failure_lines(result)
    unlisted = fixed = 0
    shown: list[str] = []
    for delta in result.traces:
        if not _listed(delta, show_passing):
            if delta.notable:
                unlisted += 1
                fixed += delta.status_change == "fail->pass"
            continue
        if output_format == "concise":
            shown += _concise_lines(delta)
        elif output_format == "github":
            shown += _github_lines(delta, step_lines)
        else:
            lines += _delta_lines(delta)
    if shown:
        lines += ["", *shown]
    if unlisted:
        note = f" ({fixed:,} of them from fail to pass)" if fixed else ""
        them = "it" if unlisted == 1 else "them"
        passing = plural(unlisted, "passing trace", grouped=True)
        lines += ["", f"{passing} with changes not listed{note}; --show-passing lists {them}"]
    lines += flip_lines(result.answers)
    lines += _judge_lines(result)
    if result.warnings:
        lines.append("")
        lines += [f"warning: {terminal_safe(w)}" for w in result.warnings]
    lines += extra
    lines += ["", f"GATE: {'PASS' if gate.passed else 'FAIL'} (fail-on {gate.fail_on})"]
    if output_format == "github":
        lines += [annotation("error", reason, title="arh compare gate") for reason in gate.reasons]
    else:
        lines += [f"  - {terminal_safe(reason)}" for reason in gate.reasons]
    return "\n".join(lines) + "\n"


def not_covered(result: CompareResult) -> str | None:
    """What the gate's verdict does not cover (see :func:`uncovered_text`), or None."""
    return uncovered_text(result.candidate.failures)


def _failure_lines(result: CompareResult) -> list[str]:
    """The console's block of the three kinds of failure of each side, shown (as ``arh
    validate``'s ``failures:`` line is) when either side had an evaluation error or an
    infrastructure failure: failing traces alone are what the rest of the report is about."""
    if not (undecided(result.baseline.failures) or undecided(result.candidate.failures)):
        return []
    lines = [
        "",
        f"FAILURES  baseline  {kinds_text(result.baseline.failures)}",
        f"          candidate {kinds_text(result.candidate.failures)}",
    ]
    note = not_covered(result)
    if note is not None:
        lines.append(f"  {note}")
    return lines


_SHOWN_FLIPS: Final = 10  # trace ids listed per kind of judge flip, as for answers


def _judge_lines(result: CompareResult) -> list[str]:
    """The judge block of ``arh compare``: each side's judge outcomes and the traces whose
    verdict flipped (none without judge outcomes)."""
    if judge_comparison(result) is None:
        return []
    lines = [""]
    for side in ("baseline", "candidate"):
        head = "JUDGE  baseline" if side == "baseline" else "       candidate"
        rates = side_rates(result, side)
        lines += [f"{head} {judge_rate_text(rate)}" for rate in rates] or [f"{head} none"]
    flips = judge_flips(result)
    for change in ("pass->fail", "fail->pass"):
        ids = [terminal_safe(f.trace_id) for f in flips if f.change == change]
        shown = ", ".join(ids[:_SHOWN_FLIPS])
        more = f", and {len(ids) - _SHOWN_FLIPS:,} more" if len(ids) > _SHOWN_FLIPS else ""
        lines.append(f"  judge {change} {len(ids):,}" + (f": {shown}{more}" if ids else ""))
    return lines


def _md_failure_rows(result: CompareResult) -> list[str]:
    """The rows of each side's three kinds of failure, when either side had any (as the
    validation report's ``Failures:`` line)."""
    sides = (("Baseline", result.baseline), ("Candidate", result.candidate))
    if not any(any(side.failures.values()) for _, side in sides):
        return []
    return [f"| {label} failures | {kinds_text(side.failures)} |" for label, side in sides]


def _md_change(delta: TraceDelta) -> str:
    """What the table of changed traces says changed: the verdict (``pass → fail``, ``added``),
    else the findings (the same verdict, with findings new or resolved), else the score alone.
    Never ``unchanged``: every trace the table lists changed in one of these ways."""
    if delta.status_change != "unchanged":
        return _ARROWS[delta.status_change]
    return "findings changed" if delta.changed else "score only"


def _md_row(delta: TraceDelta) -> str:
    return md_row(
        [
            md_code(delta.trace_id),
            _md_change(delta),
            _score(delta, "\u2192"),  # numbers only: nothing to escape
            str(len(delta.new_findings)),
            str(len(delta.resolved_findings)),
        ]
    )


def _md_section(delta: TraceDelta) -> MdSection:
    """The trace's heading and table of new, then resolved findings, whose rows are made as
    they are shown."""
    head = [
        "",
        f"#### {md_text(delta.trace_id)}",
        "",
        "| Change | Severity | Rule | Step | Message |",
        "|---|---|---|---|---|",
    ]
    new = len(delta.new_findings)
    findings = delta.new_findings + delta.resolved_findings

    def row(index: int) -> str:
        f = findings[index]
        return md_row(
            [
                "new" if index < new else "resolved",
                md_text(f.severity),
                md_code(f.rule_id or f.category),
                "-" if f.step_id is None else md_code(f.step_id),
                md_text(f.message, limit=MESSAGE_CHARS),
            ]
        )

    return MdSection(head, len(findings), row)


def render_compare_markdown(
    result: CompareResult,
    gate: GateResult,
    *,
    extra: Sequence[str] = (),
    input_errors: int = 0,
    infrastructure: int = 0,
) -> str:
    """The comparison for a pull-request comment or a CI step summary; ``extra`` lines (the
    statistics) follow the summary table. ``input_errors`` counts the candidate inputs that
    could not be read (when it was validated now), ``infrastructure`` those of them that were
    infrastructure failures; they set the exit status whatever the gate says.

    Like the validation report it keeps within ``MAX_CHARS``: the gate's reasons and the
    warnings may fill an eighth of it each, the statistics a quarter, the table of changed
    traces up to half in all (at least an eighth), the findings the rest; what does not fit is
    left out, and a line says how much."""
    s = result.summary()
    verdict = gate_verdict(gate.passed, input_errors, infrastructure)
    out = [f"## arh regression gate: {verdict}", ""]
    out.append(
        f"Gate mode `{gate.fail_on}`"
        + (
            f", score drop limit {gate.max_score_drop:.2f}"
            if gate.max_score_drop is not None
            else ""
        )
        + "."
    )
    note = exit_status_note(input_errors, infrastructure)
    if note is not None:
        out += ["", f"**{note[0].upper()}{note[1:]}** (listed in the run's log)."]
    uncovered = not_covered(result)
    if uncovered is not None:
        out += ["", f"**{uncovered[0].upper()}{uncovered[1:]}.**"]
    # The lines, rows and sections of the report are made only while they fit.
    if gate.reasons:
        reasons = ([f"- {md_text(r, limit=_MD_REASON_CHARS)}"] for r in gate.reasons)
        out.append("")
        md_fit(out, reasons, md_size(out) + MAX_CHARS // 8, "gate reason", count=len(gate.reasons))
    if result.warnings:
        warnings = result.warnings
        lines = ([f"> **Warning:** {md_text(w, limit=_MD_REASON_CHARS)}"] for w in warnings)
        out.append("")
        md_fit(out, lines, md_size(out) + MAX_CHARS // 8, "warning", count=len(warnings))
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
        *_md_failure_rows(result),
        *flip_rows(result.answers),
    ]
    judged = judge_comparison(result)
    if judged is not None:  # only then: comparisons without a judge stay as they were
        out.append(
            f"| Judge verdict flips (pass to fail / fail to pass) | {judged['pass_to_fail']} / "
            f"{judged['fail_to_pass']} |"
        )
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
        rows = ([_md_row(d)] for d in notable)
        budget = max(MAX_CHARS // 2, md_size(out) + MAX_CHARS // 8)
        md_fit(out, rows, budget, "changed trace", count=len(notable))
        with_findings = [d for d in notable if d.new_findings or d.resolved_findings]
        sections = (_md_section(d) for d in with_findings)
        md_fit(out, sections, MAX_CHARS - 200, "changed trace", count=len(with_findings),
               verb="detailed", rows="finding")  # fmt: skip
    return "\n".join(out) + "\n"


COMPARE_RENDERERS: Final[Mapping[str, Callable[[CompareResult, GateResult], str]]] = {
    "console": render_compare_console,
    "json": render_compare_json,
    "markdown": render_compare_markdown,
}
