"""Renderers of the statistics: ``arh stats`` (console, JSON, Markdown) and the statistics
section that ``arh compare`` adds when statistical gates are given."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from fractions import Fraction
from typing import Final

from agent_reliability_harness._json import dumps_indented
from agent_reliability_harness.regression.judged import JudgeRate
from agent_reliability_harness.regression.stat_gates import (
    GateCheck,
    change_text,
    p_text,
    rate_text,
)
from agent_reliability_harness.regression.stat_report import (
    StatComparison,
    StatsResult,
)
from agent_reliability_harness.regression.trials import (
    CURVE_MAX_K,
    PairedTest,
    Summary,
    WorkflowComparison,
)
from agent_reliability_harness.render._answers import rate_lines, rate_markdown
from agent_reliability_harness.render._markdown import md_code, md_row, md_text
from agent_reliability_harness.render._text import (
    NOT_AVAILABLE,
    cost_text,
    kinds_text,
    latency_text,
    plural,
    terminal_safe,
    tokens_text,
    undecided,
)

__all__ = [
    "CHECK_COLUMNS",
    "COMPARISON_COLUMNS",
    "check_cells",
    "checks_by_workflow",
    "comparison_cells",
    "comparison_console_lines",
    "comparison_intro",
    "comparison_markdown_lines",
    "judge_rate_lines",
    "judge_rate_text",
    "render_stats_console",
    "render_stats_json",
    "render_stats_markdown",
]

_WIDTH: Final = 100
_LISTED: Final = 10  # task names listed before "and N more"
_DOT: Final = " \u00b7 "


def _listing(names: Sequence[str], limit: int = _LISTED) -> str:
    shown = ", ".join(terminal_safe(n) for n in names[:limit])
    return shown + (f", and {len(names) - limit} more" if len(names) > limit else "")


def _interval(summary: Summary) -> str:
    low, high = summary.interval
    return f"{low:.3f}-{high:.3f}"


def _runs_per_task(summary: Summary) -> str:
    low, high = summary.min_runs, summary.max_runs
    if low == high:
        return f"{plural(low, 'run')} per task"
    return f"{low}-{high} runs per task"


def _workflow(name: str | None) -> str:
    if name is None:
        return "all workflows"
    return terminal_safe(name) if name else "(no workflow)"


def _title(summary: Summary) -> str:
    name = _workflow(summary.workflow)
    return _DOT.join(
        [
            name,
            plural(len(summary.tasks), "task"),
            _runs_per_task(summary),
            f"k = {summary.k}",
        ]
    )


def _wrap(label: str, parts: Sequence[str]) -> list[str]:
    head = f"  {label:<9} "
    return textwrap.wrap(
        _DOT.join(parts),
        width=_WIDTH,
        initial_indent=head,
        subsequent_indent=" " * len(head),
        break_long_words=False,
        break_on_hyphens=False,
    ) or [head.rstrip()]


def _curve(summary: Summary, hat: bool) -> list[str]:
    parts = []
    for k, pass_hat, pass_at, evaluable in summary.curve():
        value = pass_hat if hat else pass_at
        part = f"k={k} {rate_text(value)}"
        if evaluable < len(summary.tasks):
            part += f" ({evaluable} of {len(summary.tasks)} tasks)"
        parts.append(part)
    return parts


def _run_line(summary: Summary) -> list[str]:
    lines = []
    for run in summary.per_run:
        parts = [plural(run.traces, "trace"), f"{run.successes} succeeded"]
        # n/a for what no trace of the run recorded
        if run.latency_p50_ms is not None and run.latency_p95_ms is not None:
            parts.append(
                f"latency p50 {latency_text(run.latency_p50_ms)} "
                f"p95 {latency_text(run.latency_p95_ms)}"
            )
        else:
            parts.append(f"latency {NOT_AVAILABLE}")
        parts += [f"cost {cost_text(run.cost_usd)}", f"tokens {tokens_text(run.tokens)}"]
        lines += _wrap(f"run {run.run}", parts)
    return lines


def _summary_lines(summary: Summary) -> list[str]:
    lines = [_title(summary)]
    if not summary.runs:
        return [*lines, "  no runs"]
    lines.append(
        f"  {'pass@1':<9} {rate_text(summary.pass_rate)}  95% CI {_interval(summary)}  "
        f"({summary.successes} of {plural(summary.runs, 'run')})"
    )
    lines += _wrap("pass^k", _curve(summary, hat=True))
    lines += _wrap("pass@k", _curve(summary, hat=False))
    missing = [t.task for t in summary.tasks if t.runs < summary.k]
    if missing:
        lines += _wrap(
            "k",
            [
                (
                    f"{plural(len(missing), 'task')} with fewer than {summary.k} runs not "
                    f"evaluable: {_listing(missing)}"
                )
            ],
        )
    classes = summary.classes()
    tasks = [f"{n} {name}" for name, n in classes.items()]
    flaky = [t.task for t in summary.flaky]
    if flaky:
        tasks[-1] += f": {_listing(flaky)}"
    lines += _wrap("tasks", tasks)
    if summary.rule_hits:
        hits = [
            f"{terminal_safe(rule)} in {n} of {summary.runs} runs ({n / summary.runs:.1%})"
            for rule, n in summary.rule_hits[:_LISTED]
        ]
        hidden = len(summary.rule_hits) - _LISTED
        if hidden > 0:
            hits.append(f"and {hidden} more")
        lines += _wrap("rules", hits)
    lines += _run_line(summary)
    return lines


def _gate_lines(checks: Sequence[GateCheck], passed: bool) -> list[str]:
    failed = sum(1 for c in checks if c.failed)
    counted = [c for c in checks if c.status != "skipped"]
    lines = [
        f"GATE: {'PASS' if passed else 'FAIL'} ({plural(len(counted), 'check')}, {failed} failed)"
    ]
    lines += [f"  - {terminal_safe(c.reason)}" for c in checks if c.failed and c.reason]
    lines += [
        f"  note: {terminal_safe(c.reason)}" for c in checks if c.status == "allowed" and c.reason
    ]
    skipped = [c for c in checks if c.status == "skipped"]
    if skipped:
        names = sorted({f"{c.key} [{c.origin}]" for c in skipped})
        lines.append(f"  not checked without a baseline: {terminal_safe(', '.join(names))}")
    return lines


def excluded_text(result: StatsResult) -> str | None:
    """``left out of the pass rates: 2 runs that could not be checked (1 evaluation_error, 1
    infrastructure_failure)``, or None when every run has a trace report."""
    excluded = result.excluded
    if not excluded["runs"]:
        return None
    kinds = ", ".join(f"{count:,} {kind}" for kind, count in list(excluded.items())[1:] if count)
    runs = plural(excluded["runs"], "run", grouped=True)
    return f"left out of the pass rates: {runs} that could not be checked ({kinds})"


def _failure_lines(result: StatsResult) -> list[str]:
    """Each report's three kinds of failure, when one had an evaluation error or an
    infrastructure failure (failing traces alone are what the pass rates count), and the runs
    the pass rates leave out."""
    if not any(undecided(info.failures) for info in result.reports):
        return []
    shown = result.reports[:_LISTED]
    width = max(len(terminal_safe(info.path)) for info in shown)
    lines = [""]
    for n, info in enumerate(shown):
        head = "FAILURES  " if n == 0 else " " * 10
        lines.append(f"{head}{terminal_safe(info.path):<{width}}  {kinds_text(info.failures)}")
    if len(result.reports) > len(shown):
        more = len(result.reports) - len(shown)
        lines.append(f"{' ' * 10}and {plural(more, 'more report', grouped=True)} (--json-out "
                     "lists each)")  # fmt: skip
    excluded = excluded_text(result)
    if excluded is not None:
        lines.append(f"  {excluded}")
    return lines


def render_stats_console(result: StatsResult) -> str:
    """``arh stats`` for a terminal."""
    overall = result.overall
    workflows = len(result.workflows)
    lines = [
        _DOT.join(
            [
                plural(len(result.reports), "report"),
                f"outcome {result.outcome}",
                (
                    f"{plural(overall.runs, 'run')} of {plural(len(overall.tasks), 'task')} in "
                    f"{plural(workflows, 'workflow')}"
                ),
            ]
        )
    ]
    lines += _failure_lines(result)
    blocks = ([overall] if workflows > 1 else []) + list(result.workflows)
    for summary in blocks:
        lines += ["", *_summary_lines(summary)]
    lines += rate_lines(result.answers)
    lines += judge_rate_lines(result.judge)
    if result.warnings:
        lines.append("")
        lines += [f"warning: {terminal_safe(w)}" for w in result.warnings]
    if result.gate is not None:
        lines += ["", *_gate_lines(result.gate.checks, result.gate.passed)]
    return "\n".join(lines) + "\n"


def judge_rate_text(rate: JudgeRate) -> str:
    """One rubric version and model's judge outcomes, as the answers block words its rates:
    the pass rate of the judged traces with its 95% Wilson interval, then the traces not judged
    or without a judgment (never in the rate), and whether its findings gate."""
    which = f"{rate.rubric} v{rate.rubric_version} by {rate.model}"
    if rate.pass_rate is None:
        text = f"{which}: none judged"
    else:
        low, high = rate.interval
        text = (
            f"{which}: {rate.passed:,} of {rate.judged:,} passed {rate.pass_rate:.3f} "
            f"(95% CI {low:.3f}\u2013{high:.3f})"
        )
    if rate.not_judged:
        text += f", {rate.not_judged:,} not judged (no judgment in the file)"
    if rate.errors:
        text += f", {plural(rate.errors, 'judgment error')}"
    gate = "gating (calibrated)" if rate.gating else "warnings only (not calibrated)"
    return terminal_safe(f"{text}; {gate}")


def judge_rate_lines(rates: Sequence[JudgeRate]) -> list[str]:
    """The judge block of ``arh stats`` (none without judge outcomes)."""
    if not rates:
        return []
    return ["", *(f"JUDGE  {judge_rate_text(rate)}" for rate in rates)]


def render_stats_json(result: StatsResult) -> str:
    """``arh stats --json-out``: ASCII JSON, indented, with a trailing newline."""
    return dumps_indented(result.to_dict()) + "\n"


def _rate_and_ci(summary: Summary) -> str:
    if not summary.runs:
        return "-"
    low, high = summary.interval
    return f"{rate_text(summary.pass_rate)} ({low:.3f}\u2013{high:.3f})"


def _md_gate(checks: Sequence[GateCheck], passed: bool) -> list[str]:
    out = ["", f"### Gate: {'PASS' if passed else 'FAIL'}"]
    reasons = [c.reason for c in checks if c.failed and c.reason]
    if reasons:
        out += [""] + [f"- {md_text(r)}" for r in reasons]
    allowed = [c.reason for c in checks if c.status == "allowed" and c.reason]
    if allowed:
        out += [""] + [f"- allowed: {md_text(r)}" for r in allowed]
    out += _md_checks(checks)
    return out


# The table of gate checks, in Markdown (arh stats and arh compare) and on the HTML page of arh
# compare: the workflow, then the cells of check_cells.
CHECK_COLUMNS: Final = ("Workflow", "Threshold", "Set at", "Observed", "Status")


def check_cells(check: GateCheck) -> tuple[str, str, str, str]:
    """A gate check's threshold, where it was set, what was observed and its status, as plain
    text for the writer to escape: the cells after the workflow in CHECK_COLUMNS."""
    return f"{check.key} {check.threshold}", check.origin, check.observed or "-", check.status


def _md_checks(checks: Sequence[GateCheck]) -> list[str]:
    """The gate checks as a Markdown table, after a blank line."""
    rows = []
    for c in checks:
        threshold, origin, observed, status = check_cells(c)
        cells = [md_code(c.workflow), md_text(threshold), md_code(origin), md_text(observed)]
        rows.append(md_row([*cells, status]))
    return ["", md_row(list(CHECK_COLUMNS)), "|---" * len(CHECK_COLUMNS) + "|", *rows]


_MD_REPORTS: Final = 50  # reports in the table of failures before "and N more"


def _md_failures(result: StatsResult) -> list[str]:
    """The table of each report's three kinds of failure, when one had any (as the validation
    report's ``Failures:`` line), and the runs the pass rates leave out."""
    if not any(any(info.failures.values()) for info in result.reports):
        return []
    out = [
        "",
        "| Report | agent_failure | evaluation_error | infrastructure_failure |",
        "|---|---|---|---|",
    ]
    shown = result.reports[:_MD_REPORTS]
    out += [
        md_row([md_code(info.path), *(f"{n:,}" for n in info.failures.values())]) for info in shown
    ]
    if len(result.reports) > len(shown):
        more = len(result.reports) - len(shown)
        out += ["", f"And {plural(more, 'more report', grouped=True)} (the JSON lists each)."]
    excluded = excluded_text(result)
    if excluded is not None:
        out += ["", f"{excluded[0].upper()}{excluded[1:]}."]
    return out


def render_stats_markdown(result: StatsResult) -> str:
    """``arh stats --md-out``: tables for a pull-request comment or a CI step summary."""
    overall = result.overall
    out = [
        "## arh statistics",
        "",
        (
            f"Outcome: {result.outcome}. {plural(len(result.reports), 'report')}, "
            f"{plural(overall.runs, 'run')} of {plural(len(overall.tasks), 'task')}."
        ),
    ]
    if result.warnings:
        out += [""] + [f"> Warning: {md_text(w)}" for w in result.warnings]
    out += _md_failures(result)
    blocks = ([overall] if len(result.workflows) > 1 else []) + list(result.workflows)
    out += [
        "",
        "| Workflow | Tasks | Runs | pass@1 (95% CI) | k | pass^k | pass@k | Flaky tasks |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in blocks:
        name = "all workflows" if s.workflow is None else md_code(s.workflow)
        out.append(
            md_row(
                [
                    name,
                    str(len(s.tasks)),
                    str(s.runs),
                    _rate_and_ci(s),
                    str(s.k),
                    rate_text(s.pass_hat()),
                    rate_text(s.pass_at()),
                    str(len(s.flaky)),
                ]
            )
        )
    most = min(max((s.max_runs for s in blocks), default=0), CURVE_MAX_K)
    for title, hat in (("pass^k", True), ("pass@k", False)) if most > 1 else ():
        out += [
            "",
            f"### {title} by k",
            "",
            "| Workflow | " + " | ".join(f"k={k}" for k in range(1, most + 1)) + " |",
            "|---|" + "---|" * most,
        ]
        for s in blocks:
            values = {k: hat_k if hat else at_k for k, hat_k, at_k, _ in s.curve()}
            name = "all workflows" if s.workflow is None else md_code(s.workflow)
            out.append(md_row([name] + [rate_text(values.get(k)) for k in range(1, most + 1)]))
    out += rate_markdown(result.answers)
    if result.judge:
        out += [
            "",
            "### Judge",
            "",
            (
                "| Rubric | Version | Model | Pass rate (95% CI) | Judged | Not judged | Errors "
                "| Gating |"
            ),
            "|---|---|---|---|---|---|---|---|",
        ]
        for rate in result.judge:
            low, high = rate.interval
            shown = (
                "-"
                if rate.pass_rate is None
                else (f"{rate_text(rate.pass_rate)} ({low:.3f}\u2013{high:.3f})")
            )
            cells = [md_code(rate.rubric), md_code(rate.rubric_version), md_code(rate.model)]
            cells += [shown, str(rate.judged), str(rate.not_judged), str(rate.errors)]
            out.append(md_row([*cells, "yes" if rate.gating else "no (warnings only)"]))
    flaky = [(s, s.flaky) for s in result.workflows if s.flaky]
    if flaky:
        out += ["", "### Flaky tasks", ""]
        for s, tasks in flaky:
            names = ", ".join(md_code(t.task, in_table=False) for t in tasks[:_LISTED])
            more = f", and {len(tasks) - _LISTED} more" if len(tasks) > _LISTED else ""
            out.append(
                f"- {md_code(s.workflow or '', in_table=False)} ({len(tasks)}): {names}{more}"
            )
    if result.gate is not None:
        out += _md_gate(result.gate.checks, result.gate.passed)
    return "\n".join(out) + "\n"


# -- the statistics section of arh compare ---------------------------------------------------


def _change(before: Fraction | None, after: Fraction | None) -> str:
    text = f"{rate_text(before)} -> {rate_text(after)}"
    if before is not None and after is not None:
        text += f" ({change_text(before, after)})"
    return text


def _test_text(test: PairedTest) -> str:
    label = "pass rate" if test.metric == "pass rate" else f"pass^{test.k}"
    return f"{label} p = {p_text(test.p_value)} ({test.method}, {test.pairs} paired)"


def _comparison_lines(comparison: WorkflowComparison, checks: Sequence[GateCheck]) -> list[str]:
    base, cand = comparison.baseline, comparison.candidate
    rate = comparison.rate_test
    runs = _runs_per_task(base)
    if _runs_per_task(cand) != runs:
        runs = f"baseline {runs}, candidate {_runs_per_task(cand)}"
    lines = [
        _DOT.join(
            [
                _workflow(comparison.workflow),
                f"{plural(rate.pairs, 'task')} on both sides",
                runs,
                f"k = {comparison.k}",
            ]
        )
    ]
    rates = [_change(base.pass_rate, cand.pass_rate)]
    if base.runs and cand.runs:
        rates.append(f"95% CI {_interval(base)} -> {_interval(cand)}")
    lines += _wrap("pass@1", rates)
    lines += _wrap(f"pass^{comparison.k}", [_change(base.pass_hat(), cand.pass_hat())])
    lines += _wrap("flaky", [f"{len(base.flaky)} -> {len(cand.flaky)}"])
    flips = [f"{len(rate.down)} down", f"{len(rate.up)} up"]
    if rate.down:
        flips[0] += f": {_listing(rate.down)}"
    lines += _wrap("flips", flips)
    lines += _wrap("tests", [_test_text(rate), _test_text(comparison.hat_test)])
    if checks:
        lines += _wrap(
            "gates",
            [
                terminal_safe(f"{c.key} {c.threshold} {c.status.upper()} [{c.origin}]")
                for c in checks
            ],
        )
    return lines


def comparison_console_lines(stats: StatComparison) -> list[str]:
    """The lines ``arh compare`` prints before its gate line."""
    lines = ["", f"STATISTICS{_DOT}outcome {stats.outcome}"]
    by_workflow = checks_by_workflow(stats)
    for comparison in stats.workflows:
        lines += ["", *_comparison_lines(comparison, by_workflow.get(comparison.workflow, []))]
    if not stats.workflows:
        lines += ["", "no runs on either side"]
    for warning in stats.warnings:
        lines.append(f"warning: {terminal_safe(warning)}")
    lines += [  # as arh stats says why a check with too little data was let through
        f"note: {terminal_safe(c.reason)}"
        for c in stats.gate.checks
        if c.status == "allowed" and c.reason
    ]
    return lines


def _verdict(checks: Sequence[GateCheck]) -> str:
    if not checks:
        return "not gated"
    if any(c.status == "fail" for c in checks):
        return "FAIL"
    if any(c.status == "insufficient" for c in checks):
        return "insufficient data"
    return "PASS"


def comparison_intro(stats: StatComparison) -> str:
    """The sentence that opens the statistics of ``arh compare`` in Markdown and HTML."""
    if not stats.workflows:
        return f"Outcome: {stats.outcome}. No runs on either side."
    return (
        f"Outcome: {stats.outcome}. Baseline \u2192 candidate; p-values of exact two-sided "
        "paired tests over the tasks both sides ran."
    )


def checks_by_workflow(stats: StatComparison) -> dict[str, list[GateCheck]]:
    """The gate checks of ``stats``, per workflow, in their order."""
    by_workflow: dict[str, list[GateCheck]] = {}
    for check in stats.gate.checks:
        by_workflow.setdefault(check.workflow, []).append(check)
    return by_workflow


def comparison_markdown_lines(stats: StatComparison) -> list[str]:
    """The statistics section of ``arh compare --md-out``."""
    by_workflow = checks_by_workflow(stats)
    out = ["", "### Statistics", "", comparison_intro(stats)]
    if stats.workflows:
        out += _md_comparison_table(stats, by_workflow)
    for warning in stats.warnings:
        out += ["", f"> Warning: {md_text(warning)}"]
    checks = stats.gate.checks
    allowed = [c.reason for c in checks if c.status == "allowed" and c.reason]
    if allowed:
        out += [""] + [f"- allowed: {md_text(r)}" for r in allowed]
    if checks:
        out += _md_checks(checks)
    return out


# The table of the workflows compared, in Markdown and on the HTML page of arh compare: the
# workflow, then the cells of comparison_cells.
COMPARISON_COLUMNS: Final = (
    "Workflow",
    "Tasks",
    "k",
    "pass@1 (95% CI)",
    "pass^k",
    "Flaky tasks",
    "Flips down / up",
    "p-value (pass rate / pass^k)",
    "Verdict",
)


def comparison_cells(comparison: WorkflowComparison, checks: Sequence[GateCheck]) -> list[str]:
    """The cells after the workflow in COMPARISON_COLUMNS of one workflow compared, with
    ``checks`` its gate checks: numbers, arrows and words only, the same in every format."""
    base, cand = comparison.baseline, comparison.candidate
    return [
        str(comparison.rate_test.pairs),
        str(comparison.k),
        f"{_rate_and_ci(base)} \u2192 {_rate_and_ci(cand)}",
        f"{rate_text(base.pass_hat())} \u2192 {rate_text(cand.pass_hat())}",
        f"{len(base.flaky)} \u2192 {len(cand.flaky)}",
        f"{len(comparison.rate_test.down)} / {len(comparison.rate_test.up)}",
        f"{p_text(comparison.rate_test.p_value)} / {p_text(comparison.hat_test.p_value)}",
        _verdict(checks),
    ]


def _md_comparison_table(
    stats: StatComparison, by_workflow: dict[str, list[GateCheck]]
) -> list[str]:
    """The table of the workflows compared, after a blank line."""
    out = ["", md_row(list(COMPARISON_COLUMNS)), "|---" * len(COMPARISON_COLUMNS) + "|"]
    for c in stats.workflows:
        cells = comparison_cells(c, by_workflow.get(c.workflow, []))
        out.append(md_row([md_code(c.workflow), *cells]))
    return out
