"""The dashboard's HTML pages, built with the HTML report's pieces (``render.html``): the same
style sheet under the same Content Security Policy, the same trace timeline and comparison.

Every value from a run, a report or a query goes through ``html_text``/``html_code`` (text) or
``html.escape`` (attribute values, which are only URLs this module builds and form values).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from html import escape
from typing import Any, Final
from urllib.parse import urlencode

from agent_reliability_harness.errors import INFRASTRUCTURE_FAILURE
from agent_reliability_harness.model.trace import Trace
from agent_reliability_harness.regression.compare import compare_reports
from agent_reliability_harness.regression.gate import evaluate_gate
from agent_reliability_harness.render.html import (
    EXPANDED_CHANGED,
    html_code,
    html_compare_sections,
    html_document,
    html_start,
    html_text,
    html_trace_section,
)
from agent_reliability_harness.serve.index import FAILURE_KINDS, Index, LoadedRun
from agent_reliability_harness.serve.views import (
    PAGE_ROWS,
    VERDICTS,
    Filters,
    age_seconds,
    compare_url,
    latest,
    rule_ids,
    run_api_url,
    run_url,
    trace_url,
)

__all__ = ["compare_page", "error_page", "overview_page", "run_page", "trace_page"]

_DOT: Final = " \u00b7 "
_KIND_LABELS: Final = {
    "agent_failure": "agent failures",
    "evaluation_error": "evaluation errors",
    "infrastructure_failure": "infrastructure failures",
}


def _a(url: str, text_html: str) -> str:
    return f'<a href="{escape(url, quote=True)}">{text_html}</a>'


def _header(crumbs: Sequence[tuple[str, str]], extra: str = "") -> str:
    """Breadcrumbs (url, label HTML), the last one the current page (no link)."""
    items = [_a(url, label) if url else label for url, label in crumbs]
    return (
        '<nav aria-label="Breadcrumbs"><ul><li>'
        + "</li><li>".join(items)
        + "</li></ul></nav>\n"
        + extra
    )


def _page(title: str, crumbs: Sequence[tuple[str, str]], parts: Iterable[str]) -> str:
    head = html_start(f"arh dashboard: {title}", title, _header(crumbs), forms=True)
    return "".join(html_document(head, parts))


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def _age(run: LoadedRun, now: datetime) -> str:
    seconds = age_seconds(run, now)
    if seconds is None or run.finished_at is None:
        return '<span class="muted">not recorded</span>'
    if seconds < 60:
        ago = "under a minute"
    elif seconds < 3600:
        ago = f"{seconds // 60} min"
    elif seconds < 172_800:
        ago = f"{seconds // 3600} h"
    else:
        ago = f"{seconds // 86_400} days"
    return f'{html_text(ago)} ago <span class="muted">({html_code(run.finished_at)})</span>'


def _count(n: int, one: str, many: str) -> str:
    return f"{n:,} {one if n == 1 else many}"


def _options(values: Iterable[str], selected: str, empty: str | None = None) -> str:
    out = []
    if empty is not None:
        out.append(f'<option value="">{html_text(empty)}</option>')
    for value in values:
        mark = " selected" if value == selected else ""
        out.append(f'<option value="{escape(value, quote=True)}"{mark}>{html_text(value)}</option>')
    return "".join(out)


def _compare_form(index: Index, base: str = "", head: str = "") -> str:
    """The compare form; without a choice, the latest run of the first benchmark against its
    baseline (or the run before it)."""
    ids = list(index.runs)
    if not base and not head:
        for benchmark, runs in latest(index).items():
            newest = [run for run in runs if run.kind != "baseline"]
            if newest:
                head = newest[0].id
                baseline = index.baseline(benchmark)
                before = baseline.id if baseline is not None else None
                base = before or (newest[1].id if len(newest) > 1 else "")
                break
    return (
        '<form method="get" action="/compare" class="filters">'
        '<label>Baseline <select name="base">' + _options(ids, base) + "</select></label> "
        '<label>Candidate <select name="head">' + _options(ids, head) + "</select></label> "
        '<button type="submit">Compare</button></form>\n'
    )


def _failures(run: LoadedRun) -> str:
    counts = run.failures
    return "".join(f'<td class="n">{counts[kind]:,}</td>' for kind in FAILURE_KINDS)


def _run_row(run: LoadedRun, now: datetime) -> str:
    problems = (
        f'<span class="fail">{len(run.problems):,} problem(s)</span>' if run.problems else "-"
    )
    return (
        f'<tr><th scope="row">{_a(run_url(run.id), html_code(run.id))}</th>'
        f'<td>{html_text(run.kind)}</td><td class="n">{run.traces:,}</td>'
        f'<td class="n">{_rate(run.pass_rate)}</td>{_failures(run)}'
        f"<td>{_age(run, now)}</td><td>{problems}</td></tr>\n"
    )


_RUN_COLUMNS: Final = (
    '<thead><tr><th scope="col">Run</th><th scope="col">Kind</th>'
    '<th scope="col" class="n">Traces</th><th scope="col" class="n">Pass rate</th>'
    '<th scope="col" class="n">Agent failures</th><th scope="col" class="n">Evaluation errors</th>'
    '<th scope="col" class="n">Infrastructure failures</th><th scope="col">Finished</th>'
    '<th scope="col">Problems</th></tr></thead>\n'
)


def overview_page(index: Index, now: datetime, q: str = "") -> str:
    """The status overview: each benchmark's runs, latest first, with its baseline."""
    needle = q.casefold()
    groups = latest(index)
    parts = [
        f"<p>{_count(len(index.runs), 'run and report', 'runs and reports')} in "
        f"{_count(len(groups), 'benchmark', 'benchmarks')}. "
        + _a("/?reload=1", "Scan the directory again")
        + _DOT
        + _a("/api/status", "JSON")
        + "</p>\n",
        (
            '<form method="get" action="/" class="filters"><label>Search runs '
            f'<input type="search" name="q" value="{escape(q, quote=True)}"></label> '
            '<button type="submit">Search</button></form>\n'
        ),
        "<h2>Compare two runs</h2>\n",
        _compare_form(index),
    ]
    shown = 0
    for benchmark, runs in groups.items():
        picked = [
            r
            for r in runs
            if not needle or needle in r.id.casefold() or needle in benchmark.casefold()
        ]
        if not picked:
            continue
        shown += 1
        parts.append(f"<h2>{html_code(benchmark)}</h2>\n")
        baseline = index.baseline(benchmark)
        if baseline is not None and picked:
            parts.append(
                "<p>Baseline "
                + _a(run_url(baseline.id), html_code(baseline.id))
                + f" ({_rate(baseline.pass_rate)}): "
                + _a(compare_url(baseline.id, picked[0].id), "compare the latest run with it")
                + "</p>\n"
            )
        rows = "".join(_run_row(r, now) for r in picked)
        parts.append(f"<table>\n{_RUN_COLUMNS}<tbody>\n{rows}</tbody>\n</table>\n")
    if not shown:
        parts.append("<p>No run matches.</p>\n" if needle else "<p>No runs found.</p>\n")
    if index.errors:
        items = "".join(f"<li>{html_text(e)}</li>" for e in index.errors)
        parts.append(
            f"<h2>Files that could not be used ({len(index.errors):,})</h2>\n"
            f'<ul class="problems">{items}</ul>\n'
        )
    return _page("arh runs", [("", "Overview")], parts)


def _facts(items: Sequence[tuple[str, str]]) -> str:
    rows = "".join(f"<dt>{html_text(k)}</dt><dd>{v}</dd>" for k, v in items)
    return f'<dl class="facts">{rows}</dl>\n'


def _record_facts(record: Mapping[str, Any]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    agent = record.get("agent")
    if isinstance(agent, dict) and isinstance(agent.get("id"), str):
        out.append(("Agent", html_code(agent["id"])))
    dataset = record.get("dataset")
    if isinstance(dataset, dict):
        shown = " ".join(
            f"{key} {html_code(str(dataset[key]))}"
            for key in ("name", "version", "cases", "sha256")
            if key in dataset
        )
        out.append(("Dataset", shown))
    out.extend(
        (key.replace("_", " ").capitalize(), html_code(str(record[key])))
        for key in ("run_id", "seed", "repeats")
        if key in record
    )
    cost = record.get("cost")
    if isinstance(cost, dict) and "estimated_usd" in cost:
        out.append(("Estimated cost (USD)", html_code(str(cost["estimated_usd"]))))
    return out


def run_page(index: Index, run: LoadedRun, filters: Filters, page: int, now: datetime) -> str:
    """One run: its facts, the trace filters, and its traces (PAGE_ROWS a page)."""
    facts = [
        ("Kind", html_text(run.kind)),
        ("Benchmark", html_code(run.benchmark)),
        ("Pass rate", f"{_rate(run.pass_rate)} ({run.passed:,} of {run.traces:,} traces)"),
    ]
    counts = run.failures
    facts += [(label.capitalize(), f"{counts[k]:,}") for k, label in _KIND_LABELS.items()]
    if run.record is not None:
        facts += _record_facts(run.record)
    facts.append(("Finished", _age(run, now)))
    facts.append(("API", _a(run_api_url(run.id), "JSON")))
    parts = [_facts(facts)]
    if run.problems:
        items = "".join(f"<li>{html_text(p)}</li>" for p in run.problems)
        parts.append(f'<h2>Problems</h2>\n<ul class="fail">{items}</ul>\n')
    parts.append(
        f'<form method="get" action="{escape(run_url(run.id), quote=True)}" class="filters">'
        '<label>Verdict <select name="verdict">'
        + _options(VERDICTS, filters.verdict, "any")
        + '</select></label> <label>Rule <select name="rule">'
        + _options(rule_ids(run), filters.rule, "any")
        + "</select></label> "
        f'<label>Text <input type="search" name="q" value="{escape(filters.q, quote=True)}">'
        '</label> <button type="submit">Filter</button></form>\n'
    )
    picked = filters.apply(run)
    pages = max(1, -(-len(picked) // PAGE_ROWS))
    page = min(max(page, 1), pages)
    rows = []
    for report in picked[(page - 1) * PAGE_ROWS : page * PAGE_ROWS]:
        outcome = run.outcome(report.trace_id, report.passed)
        errors = sum(1 for f in report.findings if f.severity == "error")
        rules = sorted({f.rule_id for f in report.findings if f.rule_id})
        link = _a(trace_url(run.id, report.trace_id), html_code(report.trace_id))
        rows.append(
            f'<tr><th scope="row">{link}'
            f'</th><td class="{"pass" if report.passed else "fail"}">{html_text(outcome)}</td>'
            f'<td class="n">{report.score:.2f}</td><td class="n">{errors:,}</td>'
            f"<td>{' '.join(html_code(r) for r in rules) or '-'}</td></tr>\n"
        )
    parts.append(
        f"<h2>Traces ({len(picked):,} of {run.traces:,})</h2>\n"
        '<table>\n<thead><tr><th scope="col">Trace</th><th scope="col">Outcome</th>'
        '<th scope="col" class="n">Score</th><th scope="col" class="n">Errors</th>'
        f'<th scope="col">Rules</th></tr></thead>\n<tbody>\n{"".join(rows)}</tbody>\n</table>\n'
    )
    if pages > 1:
        parts.append(_pager(run, filters, page, pages))
    others = [r for r in index.runs if r != run.id]
    if others:
        parts.append("<h2>Compare</h2>\n" + _compare_form(index, others[0], run.id))
    return _page(f"Run {run.id}", [("/", "Overview"), ("", html_code(run.id))], parts)


def _pager(run: LoadedRun, filters: Filters, page: int, pages: int) -> str:
    def link(number: int, label: str) -> str:
        query = urlencode({**filters.query(), "page": str(number)})
        return _a(f"{run_url(run.id)}?{query}", label)

    items = [f"Page {page:,} of {pages:,}"]
    if page > 1:
        items.append(link(page - 1, "previous"))
    if page < pages:
        items.append(link(page + 1, "next"))
    return '<p class="pager">' + _DOT.join(items) + "</p>\n"


def trace_page(index: Index, run: LoadedRun, trace_id: str) -> str:
    """One trace: the HTML report's section for it, with its step-by-step timeline."""
    assert run.report is not None
    report = next(r for r in run.report.reports if r.trace_id == trace_id)
    loaded = index.load_trace(run, trace_id)
    parts = []
    if isinstance(loaded, str):
        parts.append(f'<p class="note fail">The trace could not be read: {html_text(loaded)}</p>\n')
    trace = loaded if isinstance(loaded, Trace) else None
    parts.append(html_trace_section(report, trace, anchor="t1"))
    crumbs = [("/", "Overview"), (run_url(run.id), html_code(run.id)), ("", html_code(trace_id))]
    return _page(f"Trace {trace_id}", crumbs, parts)


def compare_page(index: Index, base: LoadedRun, head: LoadedRun) -> str:
    """Two runs side by side: the comparison page of ``arh compare --html-out``, with the
    candidate's timelines of the changed traces that have a trace file."""
    assert base.report is not None
    assert head.report is not None
    result = compare_reports(base.report, head.report)
    gate = evaluate_gate(result)
    traces: dict[str, Trace] = {}
    for delta in result.traces:
        if len(traces) >= EXPANDED_CHANGED:
            break
        if delta.notable and delta.candidate is not None:
            loaded = index.load_trace(head, delta.trace_id)
            if isinstance(loaded, Trace):
                traces[delta.trace_id] = loaded
    verdict = "passed" if gate.passed else "failed"
    intro = (
        "<p>Baseline "
        + _a(run_url(base.id), html_code(base.id))
        + ", candidate "
        + _a(run_url(head.id), html_code(head.id))
        + f': the regression gate <strong class="{verdict[:4]}">{verdict}</strong> '
        "(fail on regressions, as <code>arh compare</code> by default). "
        + _a("/api" + compare_url(base.id, head.id), "JSON")
        + "</p>\n"
    )
    parts = [
        intro,
        _compare_form(index, base.id, head.id),
        *html_compare_sections(
            result,
            gate,
            traces,
            len(head.report.input_errors),
            infrastructure=result.candidate.failures[INFRASTRUCTURE_FAILURE],
        ),
    ]
    crumbs = [("/", "Overview"), ("", "Compare")]
    return _page(f"Compare {base.id} with {head.id}", crumbs, parts)


def error_page(status: int, message: str, index: Index | None = None) -> str:
    """A page for a request that names no known run or trace, or a bad query."""
    parts = [f"<p>{html_text(message)}</p>\n"]
    if index is not None and status == 400:
        parts.append(_compare_form(index))
    return _page(f"{status}: {message}", [("/", "Overview"), ("", str(status))], parts)
