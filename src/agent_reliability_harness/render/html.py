"""The HTML report: one self-contained page that shows, step by step, what each agent did and why
it failed, for a validation run or a comparison with a baseline.

The page makes no request of its own: the CSS is inline (allowed by its hash in a strict Content
Security Policy), there is no script, no font, no image file. Collapsing uses ``<details>``, so
everything works with JavaScript off, from the keyboard, and in print.

Everything that comes from a trace or a report is untrusted. All of it goes through :func:`_text`
(``html.escape`` with quotes, and characters that could hide or reorder text, such as bidi
overrides and controls, shown as visible ``\\uXXXX`` escapes); the only attribute that ever holds
such a value is the ``href`` of a citation link, which is written only for an http(s) URL.

The page is built from pieces so that a caller can write it while it runs through traces:
:func:`html_start`, :func:`html_overview` (totals only), one :func:`html_trace_section` per
expanded trace, :func:`html_trace_table` for the traces that are only summarised, then
:data:`HTML_END`. :func:`render_html` and :func:`render_compare_html` compose them. Sizes are
bounded by the constants below (see docs/html-report.md).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from html import escape
from typing import TYPE_CHECKING, Any, Final, TypeVar
from urllib.parse import urlsplit

from agent_reliability_harness._json import dumps_indented
from agent_reliability_harness._version import RULES_DOC_URL, __version__
from agent_reliability_harness.errors import FAILURE_KINDS
from agent_reliability_harness.model.report import (
    Finding,
    ReportLike,
    RunReport,
    TraceReport,
    as_run_report,
)
from agent_reliability_harness.model.step_refs import declared_step_ids, step_refs
from agent_reliability_harness.model.trace import Step, Trace
from agent_reliability_harness.regression.compare import CompareResult, TraceDelta, trace_delta
from agent_reliability_harness.regression.gate import GateResult
from agent_reliability_harness.render._fidelity import ANSWER_NOTE, is_answer_check
from agent_reliability_harness.render._text import (
    FORMAT_CHARS,
    below_threshold,
    escape_char,
    exit_status_note,
    gate_verdict,
    plain_number,
    plural,
    run_headline,
    source_text,
    times_text,
    totals_text,
    uncovered_text,
)
from agent_reliability_harness.render.stats import (
    CHECK_COLUMNS,
    COMPARISON_COLUMNS,
    check_cells,
    checks_by_workflow,
    comparison_cells,
    comparison_intro,
)
from agent_reliability_harness.rules import CATEGORIES, RULES

if TYPE_CHECKING:
    from agent_reliability_harness.regression.stat_report import StatComparison

_T = TypeVar("_T")

Mark = str | None  # "new", "resolved" or None for a finding of a comparison

__all__ = [
    "COLLAPSE_CHARS",
    "COLLAPSE_LINES",
    "EXPANDED_CHANGED",
    "EXPANDED_FAILING",
    "EXPANDED_PASSING",
    "FINDING_CHARS",
    "HTML_END",
    "MAX_CITATIONS",
    "MAX_FINDINGS",
    "MAX_ROWS",
    "MAX_STEPS",
    "MISFITS",
    "NAME_CHARS",
    "PAGE_CHARS",
    "TRACE_CHARS",
    "URL_CHARS",
    "VALUE_CHARS",
    "CompareTraces",
    "NotApplicableCount",
    "RuleCount",
    "RunTotals",
    "ValidationTraces",
    "html_code",
    "html_compare_sections",
    "html_csp",
    "html_document",
    "html_overview",
    "html_start",
    "html_text",
    "html_trace_section",
    "html_trace_table",
    "render_compare_html",
    "render_html",
]

# Size bounds, all counted in characters of the HTML written (escapes included). A validation
# page expands the first EXPANDED_FAILING failing traces (in input order), then the first
# EXPANDED_PASSING passing ones (collapsed), each as long as the expanded sections stay within
# PAGE_CHARS (until MISFITS sections did not fit); every other trace gets a table row, up to
# MAX_ROWS rows per table. An expanded trace shows at most MAX_STEPS steps and MAX_FINDINGS
# findings, each value (arguments, output, text, error, other fields) in at most VALUE_CHARS
# characters, MAX_CITATIONS citations per step, all its values and citations in about TRACE_CHARS.
# Values longer than COLLAPSE_CHARS characters or COLLAPSE_LINES lines start collapsed.
EXPANDED_FAILING: Final = 50
EXPANDED_PASSING: Final = 20
EXPANDED_CHANGED: Final = 50
PAGE_CHARS: Final = 5_000_000
MISFITS: Final = 3  # trace sections too large for the room left before the rest go to tables
MAX_ROWS: Final = 2_000
MAX_STEPS: Final = 500
MAX_FINDINGS: Final = 200
VALUE_CHARS: Final = 8_000
TRACE_CHARS: Final = 200_000
COLLAPSE_CHARS: Final = 600
COLLAPSE_LINES: Final = 10
NAME_CHARS: Final = 300  # a trace id, agent name, step id, tool name, path, citation source or URL
URL_CHARS: Final = 2_000  # a longer citation URL is not a link (the text shows NAME_CHARS of it)
MAX_CITATIONS: Final = 50  # citations shown per step
FINDING_CHARS: Final = 2_000  # each of a finding's message, expected, observed, remediation
_INPUT_ERRORS: Final = 100  # input errors listed in the overview
_RULE_ROWS: Final = 200  # rows of the findings-per-rule table
_STAT_ROWS: Final = 200  # rows of each statistics table of a comparison
_GATE_ITEMS: Final = 200  # reasons, and warnings, of a comparison's gate listed
_NOT_APPLICABLE_ROWS: Final = 20  # checks not applicable listed per trace
_NAMED_TRACES: Final = 3  # trace ids named per check not applicable in the overview
_SHORT_JSON: Final = 100  # JSON values up to this long are written on one line

# Characters shown as visible escapes instead of being written: C0 and C1 controls, DEL, lone
# surrogates (not encodable), the format characters (bidi marks, embeddings, overrides and
# isolates, which can reorder what the reader sees, and invisible ones such as U+200B and the
# byte-order mark) and the noncharacters. Tab and newline are kept in blocks of text and escaped
# in names.
_HIDDEN: Final = (
    f"\x0b-\x1f\x7f-\x9f\ud800-\udfff{FORMAT_CHARS}"
    "\ufdd0-\ufdef\ufffe\uffff"
    + "".join(f"{chr(plane << 16 | 0xFFFE)}{chr(plane << 16 | 0xFFFF)}" for plane in range(1, 17))
)
_BLOCK_UNSAFE: Final = f"[\x00-\x08{_HIDDEN}]"
_INLINE_UNSAFE: Final = f"[\x00-\x0a{_HIDDEN}]"
_NAMED: Final = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_DOT: Final = " \u00b7 "


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    return f'<span class="esc">{_NAMED.get(char) or escape_char(char)}</span>'


def _text(value: str, *, block: bool = False) -> str:
    """``value`` as HTML text: escaped, with hidden and reordering characters made visible."""
    if value.isascii() and value.isprintable():
        return escape(value, quote=True)
    pattern = _BLOCK_UNSAFE if block else _INLINE_UNSAFE
    out: list[str] = []
    start = 0
    for match in re.finditer(pattern, value):
        out.append(escape(value[start : match.start()], quote=True))
        out.append(_visible(match))
        start = match.end()
    out.append(escape(value[start:], quote=True))
    return "".join(out)


def _fit(value: str, limit: int, *, block: bool = False) -> tuple[str, int]:
    """The HTML of the longest start of ``value`` whose HTML has at most ``limit`` characters,
    and how many characters of ``value`` it leaves out."""
    count = min(len(value), limit)  # a character never becomes less than one character of HTML
    out = _text(value[:count], block=block)
    if len(out) <= limit:
        return out, len(value) - count
    fits, too_long = 0, count  # binary search: a longer start never has shorter HTML
    out = ""
    while too_long - fits > 1:
        middle = (fits + too_long) // 2
        candidate = _text(value[:middle], block=block)
        if len(candidate) <= limit:
            fits, out = middle, candidate
        else:
            too_long = middle
    return out, len(value) - fits


def _name(value: str) -> str:
    """A short untrusted name (id, tool, path) as inline HTML, cut at NAME_CHARS."""
    out, left = _fit(value, NAME_CHARS)
    return out + ("\u2026" if left else "")


def _code(value: str) -> str:
    return f"<code>{_name(value)}</code>"


def html_text(value: str) -> str:
    """Untrusted ``value`` as HTML text, as the report writes it (not for an attribute value:
    hidden characters become markup)."""
    return _text(value)


def html_code(value: str) -> str:
    """An untrusted short name (id, tool, path) as ``<code>``, cut as the report cuts names."""
    return _code(value)


def _plural(count: int, word: str) -> str:
    return plural(count, word, grouped=True)  # 1,234 on a page for people


# -- the page around the sections -----------------------------------------------------------------

# Colours (light / dark), each with a contrast of at least 4.5:1 against both --bg and --panel of
# its scheme; docs/html-report.md lists them and a test recomputes the ratios.
_CSS: Final = """\
:root{color-scheme:light dark;--bg:#ffffff;--fg:#1f2328;--muted:#59636e;--panel:#f6f8fa;\
--line:#d1d9e0;--link:#0550ae;--fail:#b42318;--pass:#116329;--warn:#7d4e00;--info:#0550ae;\
--bar:#0969da}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--muted:#9198a1;\
--panel:#161b22;--line:#3d444d;--link:#79c0ff;--fail:#ff9492;--pass:#56d364;--warn:#e3b341;\
--info:#79c0ff;--bar:#4493f8}}
*{box-sizing:border-box}
body{margin:0 auto;max-width:76rem;padding:0 1rem 2rem;background:var(--bg);color:var(--fg);\
font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif}
a{color:var(--link)}
a:focus-visible,summary:focus-visible{outline:3px solid var(--link);outline-offset:2px}
.skip{position:absolute;left:-999rem}
.skip:focus{position:static;display:inline-block;margin:.5rem 0}
h1{font-size:1.6rem;margin:1rem 0 .25rem}
h2{font-size:1.3rem;margin:2rem 0 .5rem;border-bottom:1px solid var(--line)}
h3{font-size:1.1rem;margin:0;display:inline}
h4{font-size:1rem;margin:1rem 0 .25rem}
h5{font-size:.95rem;margin:0;font-weight:600}
code,pre{font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
code{overflow-wrap:anywhere}
pre{margin:.25rem 0;padding:.5rem;background:var(--panel);border:1px solid var(--line);\
border-radius:4px;white-space:pre-wrap;overflow-wrap:anywhere}
table{border-collapse:collapse;margin:.5rem 0;max-width:100%}
th,td{border:1px solid var(--line);padding:.2rem .5rem;text-align:left;vertical-align:top}
thead th{background:var(--panel)}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
caption{text-align:left;font-weight:600;padding:.25rem 0}
.muted,.note{color:var(--muted)}
.note{font-style:italic;margin:.25rem 0}
.esc{color:var(--warn);border:1px dotted var(--warn);border-radius:2px;padding:0 1px}
.fail,.error,.new{color:var(--fail)}
.pass,.resolved{color:var(--pass)}
.warning{color:var(--warn)}
.info{color:var(--info)}
.badge{display:inline-block;font-weight:700;font-size:.8rem;padding:0 .35rem;\
border:1.5px solid currentColor;border-radius:3px;text-transform:uppercase;letter-spacing:.03em}
.verdict{font-size:1.2rem}
.trace{margin:1rem 0;padding:.75rem 1rem;border:1px solid var(--line);border-left:6px solid \
var(--line);border-radius:4px}
.trace.failed{border-left-color:var(--fail)}
.trace.passed{border-left-color:var(--pass)}
.trace>details>summary,.trace>summary{cursor:pointer}
.meta{margin:.25rem 0;color:var(--muted)}
.columns{display:grid;grid-template-columns:minmax(0,1fr) max-content;gap:0 2rem;\
align-items:start}
@media (max-width:60rem){.columns{grid-template-columns:minmax(0,1fr)}}
nav ul{display:flex;flex-wrap:wrap;gap:.25rem 1.5rem;list-style:none;padding:0}
.facts{display:grid;grid-template-columns:max-content 1fr;gap:.1rem 1rem;margin:.5rem 0}
.facts dt{font-weight:600}
.facts dd{margin:0;overflow-wrap:anywhere}
ol.timeline{list-style:none;padding:0;margin:.5rem 0}
.step{border-left:3px solid var(--line);padding:.25rem 0 .5rem .75rem;margin:0 0 .5rem}
.step.flagged{border-left-color:var(--fail)}
.step>dl{display:grid;grid-template-columns:7rem minmax(0,1fr);gap:.1rem .5rem;margin:.25rem 0}
.step>dl>dt{font-weight:600;font-size:.9rem;padding-top:.3rem}
.step>dl>dd{margin:0}
.step>dl>dd>ul{margin:.25rem 0;padding-left:1.2rem}
ul.findings{list-style:none;padding:0;margin:.5rem 0}
.finding{border:1px solid var(--line);border-left:4px solid currentColor;border-radius:4px;\
padding:.35rem .6rem;margin:.35rem 0;background:var(--panel)}
.finding>*{color:var(--fg)}
.finding p{margin:.15rem 0}
.finding dl{display:grid;grid-template-columns:max-content 1fr;gap:0 .75rem;margin:.25rem 0}
.finding dt{font-weight:600}
.finding dd{margin:0;overflow-wrap:anywhere}
.finding .error,.finding .new{color:var(--fail)}
.finding .warning{color:var(--warn)}
.finding .info{color:var(--info)}
.finding .resolved{color:var(--pass)}
.finding.resolved .msg{text-decoration:line-through}
svg.bar{vertical-align:middle}
svg.bar rect{fill:var(--bar)}
@media print{:root{--bg:#fff;--fg:#000;--muted:#333;--panel:#fff;--line:#999;--link:#000;\
--fail:#000;--pass:#000;--warn:#000;--info:#000;--bar:#555}
body{max-width:none;font-size:10pt}
.skip,nav{display:none}
details::details-content{content-visibility:visible;display:block}
.trace,.step,.finding{break-inside:avoid-page}
h2,h3,h4,h5{break-after:avoid}}
"""

HTML_END: Final = "</main>\n</body>\n</html>\n"


def html_csp(*, forms: bool = False) -> str:
    """The page's Content Security Policy: nothing but its own hashed style sheet and ``data:``
    images; ``forms`` lets its forms submit to the same origin (the dashboard's GET filters)."""
    digest = base64.b64encode(hashlib.sha256(_CSS.encode("utf-8")).digest()).decode("ascii")
    action = "'self'" if forms else "'none'"
    return (
        f"default-src 'none'; style-src 'sha256-{digest}'; img-src data:; "
        f"base-uri 'none'; form-action {action}"
    )


def html_start(title: str, heading: str, facts: str = "", *, forms: bool = False) -> str:
    """Everything from the doctype to the opening of ``<main>``: head, skip link and ``<h1>``.
    ``facts`` is HTML put under the heading; ``forms``: see :func:`html_csp`."""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{html_csp(forms=forms)}">\n'
        '<meta name="referrer" content="no-referrer">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="color-scheme" content="light dark">\n'
        f'<meta name="generator" content="arh {escape(__version__)}">\n'
        '<link rel="icon" href="data:,">\n'
        f"<title>{_text(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
        '<a class="skip" href="#main">Skip to the report</a>\n'
        f"<header>\n<h1>{_text(heading)}</h1>\n{facts}</header>\n"
        '<main id="main">\n'
    )


def html_document(head: str, parts: Iterable[str]) -> Iterator[str]:
    """The page as chunks: ``head`` (from :func:`html_start`), the parts, then the end."""
    yield head
    yield from parts
    yield HTML_END


# -- the overview of a validation run -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RuleCount:
    """How often one rule fired in a run, and in how many traces."""

    rule_id: str
    category: str
    severity: str
    findings: int
    traces: int


@dataclass(frozen=True, slots=True)
class NotApplicableCount:
    """A check that was not applicable to some traces of a run: ``rule_id`` would report it,
    ``check`` is the policy setting, ``field`` the missing field; ``traces`` counts the traces and
    ``named`` holds the first few of their ids."""

    rule_id: str
    check: str
    field: str
    traces: int
    named: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RunTotals:
    """What the overview shows: counts only, so that it can be filled while traces stream by."""

    traces: int
    passed: int
    average_score: float
    rules: tuple[RuleCount, ...]
    input_errors: tuple[str, ...] = ()  # the first ones, as `str(InputError)`
    input_error_count: int = 0
    policy_id: str | None = None
    policy_sha256: str | None = None
    harness_version: str | None = None
    categories: tuple[str, ...] = ()  # the categories that applied to at least one trace
    not_applicable: tuple[NotApplicableCount, ...] = ()  # sorted by rule, check and field
    # the run's three kinds of failure and their counts (RunSummary.failures), in that order
    failures: tuple[tuple[str, int], ...] = ()

    @classmethod
    def of(cls, run: RunReport) -> RunTotals:
        findings: Counter[tuple[str, str, str]] = Counter()
        traces: Counter[tuple[str, str, str]] = Counter()
        applied: dict[str, None] = {}
        unchecked: dict[tuple[str, str, str], list[str]] = {}
        for report in run.reports:
            for check in report.not_applicable:
                unchecked.setdefault((check.rule_id, check.check, check.field), []).append(
                    report.trace_id
                )
            keys = [(f.rule_id, f.category, f.severity) for f in report.findings]
            findings.update(keys)
            traces.update(set(keys))
            applied.update((c.category, None) for c in report.categories if c.applicable)
        rules = tuple(
            RuleCount(rule_id, category, severity, count, traces[(rule_id, category, severity)])
            for (rule_id, category, severity), count in sorted(
                findings.items(), key=lambda item: (-item[1], item[0])
            )
        )
        summary = run.summary()
        return cls(
            summary.total,
            summary.passed,
            summary.average_score,
            rules,
            tuple(str(error) for error in run.input_errors[:_INPUT_ERRORS]),
            len(run.input_errors),
            run.policy_id,
            run.policy_sha256,
            run.harness_version,
            tuple(applied),
            tuple(
                NotApplicableCount(*key, len(ids), tuple(ids[:_NAMED_TRACES]))
                for key, ids in sorted(unchecked.items())
            ),
            tuple(summary.failures.items()),
        )


def _bar(value: int, largest: int) -> str:
    width = max(1, round(120 * value / largest)) if value > 0 and largest > 0 else 0
    return (
        '<svg class="bar" width="120" height="10" viewBox="0 0 120 10" aria-hidden="true" '
        f'focusable="false"><rect width="{width}" height="10"/></svg>'
    )


def _rule_link(rule_id: str) -> str:
    """The rule id, linked to its documentation when it is a rule of this version."""
    rule = RULES.get(rule_id)
    if rule is None:
        return _code(rule_id or "-")
    return (
        f'<a href="{escape(RULES_DOC_URL)}#{rule.anchor_id}" rel="noreferrer">'
        f"<code>{rule.rule_id}</code></a>"
    )


def _category_order(names: Iterable[str]) -> list[str]:
    """The categories named, in the registry's order, then any others sorted."""
    wanted = set(names)
    known = [c.name for c in CATEGORIES]
    return [name for name in known if name in wanted] + sorted(wanted - set(known))


def _facts(items: Sequence[tuple[str, str]]) -> str:
    rows = "".join(f"<dt>{label}</dt><dd>{value}</dd>" for label, value in items)
    return f'<dl class="facts">{rows}</dl>\n'


def html_overview(totals: RunTotals) -> str:
    """The overview section: counts, policy, findings per category (with bars) and per rule."""
    failed = totals.traces - totals.passed
    facts = [
        (
            "Traces",
            (
                f'{totals.traces:,}: <strong class="pass">{totals.passed:,} passed</strong>, '
                f'<strong class="fail">{failed:,} failed</strong>'
            ),
        ),
        ("Average score", f"{totals.average_score:.2f}"),
    ]
    if totals.input_error_count:
        facts.append(
            ("Input errors", f'<strong class="fail">{totals.input_error_count:,}</strong>')
        )
    if any(count for _, count in totals.failures):
        kinds = ", ".join(
            f'<strong class="fail">{count:,}</strong> {_code(kind)}'
            if count
            else f"0 {_code(kind)}"
            for kind, count in totals.failures
        )
        facts.append(("Failures", kinds))
    facts += [
        ("Policy", "-" if totals.policy_id is None else _code(totals.policy_id)),
        ("Policy SHA-256", "-" if totals.policy_sha256 is None else _code(totals.policy_sha256)),
        ("arh version", "-" if totals.harness_version is None else _name(totals.harness_version)),
    ]
    head = '<section aria-labelledby="overview">\n<h2 id="overview">Overview</h2>\n'
    out = [head, '<div class="columns">\n', _facts(facts)]
    by_category: dict[str, Counter[str]] = {}
    for count in totals.rules:
        by_category.setdefault(count.category, Counter())[count.severity] += count.findings
    largest = max((sum(c.values()) for c in by_category.values()), default=0)
    out.append(
        '<table class="categories">\n<caption>Findings per category</caption>\n<thead><tr>'
        '<th scope="col">Category</th><th scope="col" class="n">Errors</th>'
        '<th scope="col" class="n">Warnings</th><th scope="col" class="n">Info</th>'
        '<th scope="col" class="n">Total</th><th scope="col">Chart</th></tr></thead>\n<tbody>\n'
    )
    categories = _category_order([*totals.categories, *by_category])
    for name in categories[:_RULE_ROWS]:
        counts = by_category.get(name, Counter())
        total = sum(counts.values())
        out.append(
            f'<tr><th scope="row">{_name(name or "-")}</th>'
            f'<td class="n">{counts["error"]:,}</td><td class="n">{counts["warning"]:,}</td>'
            f'<td class="n">{counts["info"]:,}</td><td class="n">{total:,}</td>'
            f"<td>{_bar(total, largest)}</td></tr>\n"
        )
    out.append(
        f"</tbody>\n</table>\n{_rows_note(len(categories), 'category', 'categories')}</div>\n"
    )
    if totals.rules:
        out.append(
            '<table class="rules">\n<caption>Findings per rule</caption>\n<thead><tr>'
            '<th scope="col">Rule</th><th scope="col">Severity</th><th scope="col">Category</th>'
            '<th scope="col">Title</th><th scope="col" class="n">Findings</th>'
            '<th scope="col" class="n">Traces</th></tr></thead>\n<tbody>\n'
        )
        for count in totals.rules[:_RULE_ROWS]:
            rule = RULES.get(count.rule_id)
            out.append(
                f'<tr><th scope="row">{_rule_link(count.rule_id)}</th>'
                f'<td class="{_severity_class(count.severity)}">{_name(count.severity)}</td>'
                f"<td>{_name(count.category)}</td>"
                f"<td>{'' if rule is None else _text(rule.title)}</td>"
                f'<td class="n">{count.findings:,}</td><td class="n">{count.traces:,}</td></tr>\n'
            )
        out.append(f"</tbody>\n</table>\n{_rows_note(len(totals.rules), 'rule')}")
    else:
        out.append("<p>No findings.</p>\n")
    if totals.not_applicable:
        out.append(_not_applicable_table(totals.not_applicable))
    if totals.input_error_count:
        out.append('<h3 id="input-errors">Input errors</h3>\n<ul>\n')
        out += [f"<li><code>{_clipped(line)}</code></li>\n" for line in totals.input_errors]
        out.append("</ul>\n")
        left = totals.input_error_count - len(totals.input_errors)
        if left > 0:
            out.append(
                f'<p class="note">{_plural(left, "more input error")}: see the JSON report.</p>\n'
            )
    out.append("</section>\n")
    return "".join(out)


def _not_applicable_table(counts: Sequence[NotApplicableCount]) -> str:
    """The overview's table of the checks not applicable, one row per check (as in Markdown)."""
    answers = any(is_answer_check(count.field) for count in counts)
    rows = []
    for count in counts[:_RULE_ROWS]:
        named = ", ".join(_code(trace_id) for trace_id in count.named)
        more = ", \u2026" if count.traces > len(count.named) else ""
        rows.append(
            f'<tr><th scope="row">{_rule_link(count.rule_id)}</th><td>{_code(count.check)}</td>'
            f'<td>{_code(count.field)}</td><td class="n">{count.traces:,}</td>'
            f"<td>{named}{more}</td></tr>\n"
        )
    return (
        '<h3 id="not-applicable">Checks not applicable</h3>\n<p class="note">The sources of '
        "these traces do not provide a field the check needs (listed in the trace's "
        "<code>metadata.adapter.missing</code>), so the check could not fail on them: it did not "
        f"pass either.{_text(ANSWER_NOTE) if answers else ''}</p>\n"
        '<table class="not-applicable">\n<caption>Checks not applicable'
        '</caption>\n<thead><tr><th scope="col">Rule</th><th scope="col">Policy setting</th>'
        '<th scope="col">Missing field</th><th scope="col" class="n">Traces</th>'
        f'<th scope="col">First traces</th></tr></thead>\n<tbody>\n{"".join(rows)}</tbody>\n'
        f"</table>\n{_rows_note(len(counts), 'check')}"
    )


def _rows_note(rows: int, word: str, words: str = "") -> str:
    """The note under an overview table cut at _RULE_ROWS rows."""
    if rows <= _RULE_ROWS:
        return ""
    left = rows - _RULE_ROWS
    more = f"{left:,} more {word if left == 1 else words or word + 's'}"
    return f'<p class="note">{more} not listed: see the JSON report.</p>\n'


# -- one trace -------------------------------------------------------------------------------------


def _severity_class(severity: str) -> str:
    return severity if severity in ("error", "warning", "info") else "info"


class _Budget:
    """The characters of content one trace may still show: its metadata, then its steps' values
    and citations."""

    def __init__(self) -> None:
        self.left = TRACE_CHARS


def _json_text(value: Any) -> str:
    """A value as text: a string as it is, anything else as JSON (on one line when short)."""
    if type(value) is str:
        return value
    try:
        text = json.dumps(value, ensure_ascii=False)
        if len(text) <= _SHORT_JSON:
            return text
        return dumps_indented(value, ensure_ascii=False)
    except (ValueError, TypeError, RecursionError):
        return "(this value cannot be shown: it is nested too deeply or holds a huge number)"


def _value(label: str, text: str, budget: _Budget) -> str:
    """One step field as ``<dt>``/``<dd>``; long values collapsed, clipped to the budgets."""
    if budget.left <= 0:
        return (
            f'<dt>{label}</dt><dd><p class="note">not shown: this trace has used up the '
            f"{TRACE_CHARS:,} characters of step content the report shows per trace</p></dd>"
        )
    shown, left = _fit(text, min(VALUE_CHARS, budget.left), block=True)
    budget.left -= len(shown)
    body = f"<pre>{shown}</pre>"
    if left:
        body += f'<p class="note">{_plural(left, "more character")} not shown</p>'
    if len(text) - left > COLLAPSE_CHARS or text.count("\n", 0, len(text) - left) >= COLLAPSE_LINES:
        lines = text.count("\n") + 1
        size = f"{_plural(lines, 'line')}, {_plural(len(text), 'character')}"
        body = f"<details><summary>show {label} ({size})</summary>{body}</details>"
    return f"<dt>{label}</dt><dd>{body}</dd>"


def _link(url: str) -> str:
    """A citation URL: a link when it is an http(s) URL without odd characters, else text.

    Spaces, controls, non-ASCII characters and backslashes (which browsers read as slashes, but
    ``urlsplit`` does not) all make it text, so the link goes where its text says. A URL longer
    than URL_CHARS is text too: a link must hold the whole URL, and the text is cut at NAME_CHARS.
    """
    if len(url) > URL_CHARS:
        size = _plural(len(url), "character")
        return f'{_code(url)} <span class="muted">(not linked: {size})</span>'
    if url.isascii() and url.isprintable() and " " not in url and "\\" not in url:
        try:
            parts = urlsplit(url)
        except ValueError:
            parts = None
        if parts is not None and parts.scheme.lower() in ("http", "https") and parts.netloc:
            return f'<a href="{escape(url, quote=True)}" rel="noreferrer nofollow">{_name(url)}</a>'
    return f'{_code(url)} <span class="muted">(not a web link)</span>'


def _citations(citations: Sequence[Mapping[str, Any]], budget: _Budget) -> str:
    """The first MAX_CITATIONS citations, each counted in the trace's budget (as long as some of
    it is left): source and URL cut at NAME_CHARS, other fields at FINDING_CHARS."""
    items = []
    for citation in citations[:MAX_CITATIONS]:
        if budget.left <= 0:
            break
        url = citation.get("url")
        source = citation.get("source")
        parts = []
        if type(source) is str:
            parts.append(_name(source))
        if type(url) is str:
            parts.append(_link(url))
        rest = {k: v for k, v in citation.items() if k not in ("url", "source")}
        if rest:
            shown, left = _fit(_json_text(rest), FINDING_CHARS)
            parts.append(f"<code>{shown}</code>" + ("\u2026" if left else ""))
        item = "<li>" + (_DOT.join(parts) or "(empty)") + "</li>"
        budget.left -= len(item)
        items.append(item)
    more = ""
    left = len(citations) - len(items)
    if left and len(items) < min(len(citations), MAX_CITATIONS):
        more = (
            f'<li class="note">{_plural(left, "more citation")} not shown: this trace has used '
            f"up the {TRACE_CHARS:,} characters of step content the report shows per trace</li>"
        )
    elif left:
        more = f'<li class="note">{_plural(left, "more citation")}</li>'
    return f"<dt>citations</dt><dd><ul>{''.join(items)}{more}</ul></dd>"


_KINDS: Final = {
    "tool_call": "tool call",
    "model_response": "model response",
    "user_message": "user message",
}


def _measured(value: float, places: int) -> str:
    """A step's latency or cost with up to ``places`` decimals, trailing zeros dropped, or more
    (up to 12, then Python's shortest form) when a value that is not zero would show as 0."""
    for digits in range(places, 13):
        text = plain_number(value, digits)
        if text != "0" or value == 0:
            return text
    return repr(value)


def _step_metrics(step: Step) -> str:
    parts = []
    if step.timestamp is not None:  # when the step started, as the trace wrote it
        stamp = _text(str(step.timestamp))  # checked by Step.from_dict, not in a Step built in code
        parts.append(f'<time datetime="{stamp}">{stamp}</time>')
    if step.latency_ms is not None:
        parts.append(f"{_measured(step.latency_ms, 3)} ms")
    if step.cost_usd is not None:
        parts.append(f"${_measured(step.cost_usd, 6)}")
    if step.input_tokens is not None or step.output_tokens is not None:
        tokens = []
        if step.input_tokens is not None:
            tokens.append(f"{step.input_tokens:,} in")
        if step.output_tokens is not None:
            tokens.append(f"{step.output_tokens:,} out")
        parts.append(" / ".join(tokens) + " tokens")
    return _DOT.join(parts)


def _step_fields(step: Step, budget: _Budget) -> str:
    fields = []
    if step.arguments is not None:
        fields.append(_value("arguments", _json_text(step.arguments), budget))
    if step.output is not None:
        fields.append(_value("output", _json_text(step.output), budget))
    if step.text is not None:
        fields.append(_value("text", step.text, budget))
    if step.citations:
        fields.append(_citations(step.citations, budget))
    if step.error is not None:
        fields.append(_value("error", step.error, budget))
    other: dict[str, Any] = {}
    if step.metadata:
        other["metadata"] = step.metadata
    other.update(step.extra)
    if other:
        fields.append(_value("other fields", _json_text(other), budget))
    return f"<dl>{''.join(fields)}</dl>" if fields else ""


def _finding(finding: Finding, mark: Mark, where: str = "") -> str:
    """One finding: severity, rule (linked), mark, message, then its subject (what at its step it
    is about: an argument, a tool, a text location), expected, observed and remediation."""
    severity = _severity_class(finding.severity)
    classes = f"finding {severity}" + (f" {mark}" if mark else "")
    head = [
        f'<span class="badge {severity}">{_name(finding.severity)}</span>',
        _rule_link(finding.rule_id),
        f'<span class="muted">{_name(finding.category)}</span>',
    ]
    if mark:
        head.append(f'<span class="badge {mark}">{mark}</span>')
    if where:
        head.append(where)
    details = []
    for label, value in (
        ("Subject", finding.subject),
        ("Expected", finding.expected),
        ("Observed", finding.observed),
        ("Remediation", finding.remediation),
    ):
        if value is not None:
            details.append(f"<dt>{label}</dt><dd>{_clipped(value)}</dd>")
    body = f"<dl>{''.join(details)}</dl>" if details else ""
    return (
        f'<li class="{classes}"><p>{" ".join(head)}</p>'
        f'<p class="msg">{_clipped(finding.message)}</p>{body}</li>\n'
    )


def _clipped(value: str) -> str:
    """Untrusted text of a finding (message, subject, expected, observed, remediation), a reason
    or a warning: at most FINDING_CHARS of HTML."""
    shown, left = _fit(value, FINDING_CHARS)
    return shown + (f" \u2026 ({_plural(left, 'more character')})" if left else "")


def _meta(report: TraceReport, *, score: bool = True) -> str:
    parts = [f"score <strong>{report.score:.2f}</strong>"] if score else []
    parts.append(f"{_name(report.agent_name)} / {_name(report.workflow)}")
    # what `arh validate --task-key` and `--outcome-at` recorded (docs/statistics.md), as the
    # JSON report writes them
    if report.task is not None:
        parts.append(f"task {_code(report.task)}")
    if report.outcome is not None:
        parts.append(f"outcome {_code(json.dumps(report.outcome))}")
    parts += totals_text(report, grouped=True)  # n/a for a measure the trace did not record
    parts += (_text(time) for time in times_text(report))  # only the times the trace records
    if report.citation_coverage is not None:
        parts.append(f"citation coverage {report.citation_coverage:.0%}")
    if report.failure is not None:  # which kind of failure (docs/exit-codes.md)
        parts.append(f"failure {_code(report.failure)}")
    where = source_text(report.source_path, report.source_line)
    if where is not None:
        parts.append(_code(where))
    return f'<p class="meta">{_DOT.join(parts)}</p>\n'


def _score_verdict(report: TraceReport, fail_under: float | None) -> str:
    """Why a failing trace fails when its score does (scoring.passes: a trace passes when it has
    no error finding and its unrounded score is at least ``fail_under``): the score and the
    threshold. ``fail_under`` is None when the threshold is not known (the trace was read from a
    JSON report, which does not record it): a failing trace without an error finding failed on
    its score all the same. Empty when the findings say it all, or the trace passed."""
    if report.passed:
        return ""
    errors = report.errors
    head = '<p class="why"><strong class="fail">Fails on its score'
    if fail_under is not None:
        if report.score >= fail_under:
            return ""
        below = f"{below_threshold(report.score, fail_under)} (<code>--fail-under</code>)"
        if errors:
            return f"{head} and on its {_plural(errors, 'error finding')}</strong>: {below}.</p>\n"
        return f"{head} alone</strong>: {below}; no error finding fails it.</p>\n"
    if errors:
        return ""
    return (
        f"{head} alone</strong>: {report.score:.2f} is below the pass threshold "
        "(<code>--fail-under</code>) of the run that checked it, as no error finding fails it; "
        "its report does not record the threshold.</p>\n"
    )


def _categories(report: TraceReport) -> str:
    """The score's breakdown: one column per category, and a row counting the checks of each
    category that were not applicable (when there are some), so that a score of 100 is not taken
    for a pass of a check that could not fail."""
    if not report.categories:
        return ""
    names = "".join(
        f'<th scope="col" class="n">{_name(c.category)}</th>' for c in report.categories
    )
    scores = "".join(
        f'<td class="n{"" if c.failed == 0 else " fail"}">'
        f"{f'{c.score:.2f}' if c.applicable else 'n/a'}</td>"
        for c in report.categories
    )
    checks = "".join(f'<td class="n">{c.checks:,} / {c.failed:,}</td>' for c in report.categories)
    caption = "Score by category (n/a: does not apply)"
    unchecked = ""
    if report.not_applicable:
        per = Counter(_rule_category(check.rule_id) for check in report.not_applicable)
        caption = (
            "Score by category (n/a: does not apply; the checks not applicable, listed below, "
            "are not in the score)"
        )
        cells = "".join(
            f'<td class="n{" warning" if per[c.category] else ""}">{per[c.category]:,}</td>'
            for c in report.categories
        )
        unchecked = f'<tr><th scope="row">Checks not applicable</th>{cells}</tr>'
    return (
        f'<table class="score">\n<caption>{caption}</caption>\n'
        f"<thead><tr><td></td>{names}</tr></thead>\n<tbody>"
        f'<tr><th scope="row">Score</th>{scores}</tr>'
        f'<tr><th scope="row">Checks / failed</th>{checks}</tr>{unchecked}</tbody>\n</table>\n'
    )


def _rule_category(rule_id: str) -> str | None:
    rule = RULES.get(rule_id)
    return None if rule is None else rule.category


def _why(field: str) -> str:
    return "the trace has no" if is_answer_check(field) else "the trace's source provides no"


def _not_applicable(report: TraceReport) -> str:
    """The checks the trace could not be held to, because its source lacks a field they need."""
    if not report.not_applicable:
        return ""
    rows = "".join(
        f'<tr><th scope="row">{_rule_link(check.rule_id)}</th><td>{_code(check.check)}</td>'
        f"<td>not applicable: {_why(check.field)} {_code(check.field)}</td></tr>\n"
        for check in report.not_applicable[:_NOT_APPLICABLE_ROWS]
    )
    answers = any(is_answer_check(check.field) for check in report.not_applicable)
    left = len(report.not_applicable) - _NOT_APPLICABLE_ROWS
    more = f'<p class="note">{_plural(left, "more check")} not shown.</p>\n' if left > 0 else ""
    return (
        '<h4>Checks not applicable</h4>\n<p class="note">The trace\'s source does not provide a '
        "field these checks need (listed in the trace's <code>metadata.adapter.missing</code>), "
        "so they could not fail on it: they did not pass either."
        f"{_text(ANSWER_NOTE) if answers else ''}</p>\n"
        '<table class="not-applicable">\n<caption>Checks not applicable</caption>\n<thead><tr>'
        '<th scope="col">Rule</th><th scope="col">Policy setting</th><th scope="col">Why</th>'
        f"</tr></thead>\n<tbody>\n{rows}</tbody>\n</table>\n{more}"
    )


def _entries(report: TraceReport | None, delta: TraceDelta | None) -> list[tuple[Finding, Mark]]:
    """The findings to show, each with its comparison mark (None outside a comparison)."""
    if delta is None:
        return [(f, None) for f in (report.findings if report else ())]
    new = Counter(delta.new_findings)
    entries: list[tuple[Finding, Mark]] = []
    for finding in delta.candidate.findings if delta.candidate else ():
        mark = None
        if new[finding] > 0:
            new[finding] -= 1
            mark = "new"
        entries.append((finding, mark))
    entries += [(f, "resolved") for f in delta.resolved_findings]
    return entries


_SEVERITY_RANK: Final = {"error": 0, "warning": 1}
_MARK_RANK: Final = {"new": 0, "resolved": 1}


def _shown_entries(
    entries: list[tuple[Finding, Mark]],
) -> tuple[list[tuple[Finding, Mark]], list[tuple[Finding, Mark]]]:
    """The first MAX_FINDINGS entries to show, in their order, and the ones left out. On a
    comparison page the new findings are kept first, then the resolved ones, then the ones the
    baseline had too (so no unchanged finding crowds out a change), errors first within each."""
    if len(entries) <= MAX_FINDINGS:
        return entries, []
    order = sorted(
        range(len(entries)),
        key=lambda i: (
            _MARK_RANK.get(entries[i][1] or "", 2),
            _SEVERITY_RANK.get(entries[i][0].severity, 2),
            i,
        ),
    )
    kept = set(order[:MAX_FINDINGS])
    return (
        [entry for i, entry in enumerate(entries) if i in kept],
        [entry for i, entry in enumerate(entries) if i not in kept],
    )


def _hidden_note(hidden: Sequence[tuple[Finding, Mark]], delta: TraceDelta | None) -> str:
    """What the page says about the findings it leaves out of a trace, and where they are."""
    count = _plural(len(hidden), "more finding")
    if delta is None:
        return f'<p class="note">{count} not shown: see the JSON report.</p>\n'
    changed = sum(1 for _, mark in hidden if mark is not None)
    return (
        f'<p class="note">{count} not shown ({changed:,} new or resolved, '
        f"{len(hidden) - changed:,} that the baseline had too): the JSON comparison "
        "(<code>--json-out</code>) holds the new and resolved findings, the candidate's JSON "
        "report (given as <code>--candidate</code>, or written by "
        "<code>--candidate-json-out</code>) all of the candidate's findings.</p>\n"
    )


def _step_of(
    finding: Finding, steps: Sequence[Step], first: Mapping[str, int], refs: Mapping[str, int]
) -> int | None:
    """The position of the finding's step in ``steps``: by its position, by its step reference
    in a trace whose step ids change between recordings (a resolved finding of a baseline
    recorded with other ids, at the same step of this recording), else by its step id."""
    index = finding.step_index
    if index is not None and 0 <= index < len(steps) and steps[index].step_id == finding.step_id:
        return index
    if finding.step_ref is not None and finding.step_ref in refs:
        return refs[finding.step_ref]
    return None if finding.step_id is None else first.get(finding.step_id)


def html_trace_section(
    report: TraceReport,
    trace: Trace | None,
    *,
    anchor: str,
    collapsed: bool = False,
    delta: TraceDelta | None = None,
    max_score_drop: float | None = None,
    fail_under: float | None = None,
) -> str:
    """One trace: verdict, score, metadata and categories, then its timeline with each finding at
    its step.

    ``anchor`` is the section's HTML id (made by the caller, never from the trace). Without
    ``trace`` (only a report is known) the findings are listed without a timeline. With ``delta``
    (a comparison), new findings are marked ``new`` and the baseline's resolved findings are shown
    too, marked ``resolved``, and a score drop beyond ``max_score_drop`` (the gate's) is marked
    as failing the gate. ``collapsed`` puts the section's body in a closed ``<details>``.
    ``fail_under`` is the pass threshold the trace was checked with, to say so when it fails on
    its score (None: not known, as for a trace read from a JSON report).
    """
    failed = not report.passed
    verdict = "FAIL" if failed else "PASS"
    title = f'<span class="badge verdict {"fail" if failed else "pass"}">{verdict}</span>'
    if delta is not None:
        title = _change_badge(delta, max_score_drop)
    heading = f'<h3 id="{anchor}-h">{title} {_code(report.trace_id)}</h3>'
    state = "failed" if failed else "passed"
    out = [f'<section class="trace {state}" id="{anchor}" aria-labelledby="{anchor}-h">\n']
    if collapsed:
        out.append(f"<details>\n<summary>{heading}</summary>\n")
    else:
        out.append(heading + "\n")
    if delta is not None:
        out.append(_delta_line(delta, max_score_drop))
    out.append(_meta(report, score=delta is None or delta.score_delta is None))
    out.append(_score_verdict(report, fail_under))
    budget = _Budget()  # the trace's metadata and its steps' values share it
    if trace is not None and trace.metadata:
        metadata = _value("metadata", _json_text(dict(trace.metadata)), budget)
        out.append(f'<dl class="facts">{metadata}</dl>\n')
    out.append(_categories(report))
    out.append(_not_applicable(report))
    entries, hidden = _shown_entries(_entries(report, delta))
    steps = trace.steps if trace is not None else ()
    first: dict[str, int] = {}
    for position, step in enumerate(steps):
        first.setdefault(step.step_id, position)
    refs: dict[str, int] = {}
    if trace is not None and declared_step_ids(trace) is not None:
        refs = {ref: position for position, ref in enumerate(step_refs(steps))}
    shown_steps = min(len(steps), MAX_STEPS)
    at: dict[int, list[tuple[Finding, Mark]]] = {}
    top: list[str] = []
    whole_trace = True  # every finding at the top is about the whole trace
    for finding, mark in entries:
        index = _step_of(finding, steps, first, refs) if trace is not None else None
        if index is not None and index < shown_steps:
            at.setdefault(index, []).append((finding, mark))
            continue
        whole_trace = whole_trace and finding.step_id is None
        where = ""
        if finding.step_id is not None:
            if trace is None:
                where = f"at step {_code(finding.step_id)}"
            elif index is None:
                where = f"at step {_code(finding.step_id)} (no such step in the trace)"
            else:
                where = f"at step {_code(finding.step_id)} (step {index + 1}, beyond the steps "
                where += "shown)"
        top.append(_finding(finding, mark, where))
    if top:
        label = "Findings"
        if trace is not None:
            label = (
                "Findings about the whole trace"
                if whole_trace
                else "Findings not at a step of the timeline"
            )
        out.append(f'<h4>{label}</h4>\n<ul class="findings">\n{"".join(top)}</ul>\n')
    elif not entries:
        out.append("<p>No findings.</p>\n")
    if hidden:
        out.append(_hidden_note(hidden, delta))
    if trace is None and delta is not None and delta.candidate is None:
        out.append(
            '<p class="note">The steps are not shown: the trace is not in the candidate run, '
            "and the baseline is a JSON report, which does not hold the trace.</p>\n"
        )
    elif trace is None:
        out.append(
            '<p class="note">The steps are not shown: this report was made from a JSON report, '
            "which does not hold the trace.</p>\n"
        )
    else:
        out.append(_timeline(trace, anchor, at, shown_steps, budget))
    if collapsed:
        out.append("</details>\n")
    out.append("</section>\n")
    return "".join(out)


def _timeline(
    trace: Trace,
    anchor: str,
    at: Mapping[int, list[tuple[Finding, Mark]]],
    shown: int,
    budget: _Budget,
) -> str:
    out = [f'<h4>Timeline ({_plural(len(trace.steps), "step")})</h4>\n<ol class="timeline">\n']
    for index, step in enumerate(trace.steps[:shown]):
        pinned = at.get(index, [])
        flagged = any(f.severity == "error" and mark != "resolved" for f, mark in pinned)
        kind = _KINDS.get(step.type, step.type)
        head = [f"{index + 1}. {kind}"]
        if step.tool_name is not None:
            head.append(_code(step.tool_name))
        head.append(f'<span class="muted">step</span> {_code(step.step_id)}')
        if step.status == "error":
            head.append('<span class="badge error">error</span>')
        metrics = _step_metrics(step)
        out.append(
            f'<li class="step{" flagged" if flagged else ""}" id="{anchor}-{index + 1}">'
            f"<h5>{' '.join(head)}</h5>"
            + (f'<p class="meta">{metrics}</p>' if metrics else "")
            + _step_fields(step, budget)
        )
        if pinned:
            out.append(
                '<ul class="findings">\n'
                + "".join(_finding(finding, mark) for finding, mark in pinned)
                + "</ul>"
            )
        out.append("</li>\n")
    out.append("</ol>\n")
    if len(trace.steps) > shown:
        left = len(trace.steps) - shown
        out.append(
            f'<p class="note">{_plural(left, "more step")} not shown (the timeline shows the '
            f"first {MAX_STEPS:,}).</p>\n"
        )
    return "".join(out)


# -- tables of traces that are only summarised -----------------------------------------------------


def html_trace_table(
    reports: Sequence[TraceReport], caption: str, anchor: str, *, limit: int = MAX_ROWS
) -> str:
    """A table with one row per trace (verdict, score, error and warning counts, source)."""
    rows = []
    for report in reports[:limit]:
        errors = sum(1 for f in report.findings if f.severity == "error")
        warnings = sum(1 for f in report.findings if f.severity == "warning")
        where = source_text(report.source_path, report.source_line)
        verdict = "PASS" if report.passed else "FAIL"
        rows.append(
            f'<tr><th scope="row">{_code(report.trace_id)}</th>'
            f'<td class="{verdict.lower()}">{verdict}</td><td class="n">{report.score:.2f}</td>'
            f'<td class="n">{errors:,}</td><td class="n">{warnings:,}</td>'
            f"<td>{_name(report.agent_name)} / {_name(report.workflow)}</td>"
            f"<td>{_code(where) if where else '-'}</td></tr>\n"
        )
    more = ""
    if len(reports) > limit:
        more = (
            f'<p class="note">{_plural(len(reports) - limit, "more trace")} not listed: see the '
            "JSON report.</p>\n"
        )
    return (
        f'<table id="{anchor}">\n<caption>{_text(caption)}</caption>\n<thead><tr>'
        '<th scope="col">Trace</th><th scope="col">Verdict</th><th scope="col" class="n">Score</th>'
        '<th scope="col" class="n">Errors</th><th scope="col" class="n">Warnings</th>'
        '<th scope="col">Agent / workflow</th><th scope="col">Source</th></tr></thead>\n'
        f"<tbody>\n{''.join(rows)}</tbody>\n</table>\n{more}"
    )


def _nav(links: Sequence[tuple[str, str]]) -> str:
    items = "".join(f'<li><a href="#{anchor}">{label}</a></li>' for anchor, label in links)
    return f'<nav aria-label="Sections"><ul>{items}</ul></nav>\n'


# -- the validation page --------------------------------------------------------------------------


class ValidationTraces:
    """Keeps, while a run goes on, the traces that :func:`render_html` will expand (the first
    EXPANDED_FAILING failing and EXPANDED_PASSING passing ones), so memory stays bounded.

    Pass it as ``on_trace`` to ``runner.run_validation``; then ``render_html(run, keeper.traces)``.
    """

    def __init__(self) -> None:
        self.traces: dict[str, Trace] = {}
        self._failing = 0
        self._passing = 0

    def __call__(self, trace: Trace, report: TraceReport) -> None:
        if report.passed:
            self._passing += 1
            if self._passing <= EXPANDED_PASSING:
                self.traces[report.trace_id] = trace
        else:
            self._failing += 1
            if self._failing <= EXPANDED_FAILING:
                self.traces[report.trace_id] = trace


class _Sections:
    """Expanded trace sections, numbered in page order, within PAGE_CHARS all together. A section
    that does not fit in the room left goes to a table, and later, smaller ones are still tried,
    until MISFITS sections have not fit (each costs the time to make it); then the rest go to the
    tables too."""

    def __init__(self) -> None:
        self.number = 0
        self.used = 0
        self.misfits = 0

    def add(self, section: Callable[[str], str], shown: list[str]) -> bool:
        """Render one section (given its anchor) into ``shown`` if it fits; False if not."""
        if self.misfits >= MISFITS:
            return False
        self.number += 1
        text = section(f"t{self.number}")
        if self.used + len(text) > PAGE_CHARS:
            self.misfits += 1
            return False
        self.used += len(text)
        shown.append(text)
        return True


def _split(
    items: Sequence[_T], limit: int, sections: _Sections, render: Callable[[_T, str], str]
) -> tuple[list[str], list[_T]]:
    """The sections of the first ``limit`` items that fit, and the items left for a table."""
    shown: list[str] = []
    rest: list[_T] = []
    for index, item in enumerate(items):
        if index >= limit or not sections.add(partial(render, item), shown):
            rest.append(item)
    return shown, rest


def _run_sections(
    run: RunReport, traces: Mapping[str, Trace], fail_under: float | None = None
) -> Iterator[str]:
    failing = [r for r in run.reports if not r.passed]
    passing = [r for r in run.reports if r.passed]
    sections = _Sections()
    failing_shown, failing_rest = _split(
        failing,
        EXPANDED_FAILING,
        sections,
        lambda r, anchor: html_trace_section(
            r, traces.get(r.trace_id), anchor=anchor, fail_under=fail_under
        ),
    )
    passing_shown, passing_rest = _split(
        passing,
        EXPANDED_PASSING,
        sections,
        lambda r, anchor: html_trace_section(
            r, traces.get(r.trace_id), anchor=anchor, collapsed=True
        ),
    )
    links = [("overview", "Overview")]
    if failing:
        links.append(("failing", f"Failing traces ({len(failing):,})"))
    if passing:
        links.append(("passing", f"Passing traces ({len(passing):,})"))
    yield _nav(links)
    yield html_overview(RunTotals.of(run))
    if failing:
        yield f'<h2 id="failing">Failing traces ({len(failing):,})</h2>\n'
        yield from failing_shown
        if failing_rest:
            yield _more_note(len(failing_shown), "failing")
            yield html_trace_table(failing_rest, "More failing traces", "more-failing")
    if passing:
        yield (
            f'<h2 id="passing">Passing traces ({len(passing):,})</h2>\n'
            '<p class="muted">Collapsed: open a trace to see its timeline.</p>\n'
        )
        yield from passing_shown
        if passing_rest:
            yield _more_note(len(passing_shown), "passing")
            yield html_trace_table(passing_rest, "More passing traces", "more-passing")


def _more_note(shown: int, kind: str) -> str:
    return (
        f'<p class="note">The page shows {_plural(shown, f"{kind} trace")} step by step (at '
        f"most {EXPANDED_FAILING} failing and {EXPANDED_PASSING} passing traces, within "
        f"{PAGE_CHARS:,} characters); the others are summarised here.</p>\n"
    )


def _run_title(run: RunReport) -> str:
    total = len(run.reports)
    return run_headline(total, total - run.passed_traces, len(run.input_errors), grouped=True)


def render_html(
    run: ReportLike,
    traces: Mapping[str, Trace] | None = None,
    *,
    fail_under: float | None = None,
) -> str:
    """The validation report as one HTML page. ``traces`` maps trace ids to the traces, for the
    timelines; a trace that is not in it is shown with its findings only. ``fail_under`` is the
    pass threshold the run was checked with, which the page states for a trace that fails on its
    score (the report does not hold it; None: not known)."""
    run = as_run_report(run)
    title = _run_title(run)
    verdict = "pass" if run.passed else "fail"
    facts = (
        f'<p><strong class="verdict {verdict}">{"PASS" if run.passed else "FAIL"}</strong>: '
        f"{_text(title)}.</p>\n"
    )
    head = html_start(f"arh validation: {title}", "arh validation report", facts)
    return "".join(html_document(head, _run_sections(run, traces or {}, fail_under)))


# -- the comparison page --------------------------------------------------------------------------

_CHANGES: Final = {
    "pass->fail": ("pass \u2192 fail", "fail"),
    "fail->pass": ("fail \u2192 pass", "pass"),
    "added": ("added", "info"),
    "removed": ("removed", "info"),
    "unchanged": ("changed", "info"),
}


def _change_label(delta: TraceDelta, max_score_drop: float | None) -> tuple[str, str]:
    """The change of a trace as a word and its colour class."""
    label, colour = _CHANGES[delta.status_change]
    if delta.status_change == "unchanged" and delta.dropped_beyond(max_score_drop):
        return "score dropped", "fail"
    if not delta.changed:
        label, colour = "score changed", "info"
    return label, colour


def _change_badge(delta: TraceDelta, max_score_drop: float | None) -> str:
    label, colour = _change_label(delta, max_score_drop)
    return f'<span class="badge {colour}">{label}</span>'


def _delta_line(delta: TraceDelta, max_score_drop: float | None = None) -> str:
    parts = []
    base, cand, change = delta.baseline, delta.candidate, delta.score_delta
    if base is not None and cand is not None and change is not None:
        parts.append(f"score {base.score:.2f} \u2192 {cand.score:.2f} ({change:+.2f})")
        if delta.dropped_beyond(max_score_drop):
            parts.append(
                f'<strong class="fail">a drop of more than {max_score_drop:.2f}, which fails the '
                "gate</strong>"
            )
    if cand is not None:
        parts.append(f"candidate {'passes' if cand.passed else 'fails'}")
    elif base is not None:
        parts.append("not in the candidate run")
    parts.append(f"{_plural(len(delta.new_findings), 'new finding')}")
    parts.append(f"{_plural(len(delta.resolved_findings), 'resolved finding')}")
    return f'<p class="meta">{_DOT.join(parts)}</p>\n'


def _rank(delta: TraceDelta, max_score_drop: float | None = None) -> int:
    """Where a changed trace goes on a comparison page: 0 for a regression (what fails the
    ``regressions`` gate: pass to fail, a new error finding, an added trace that fails, a score
    drop beyond ``max_score_drop``), 1 for another change for the worse of a trace that keeps
    its verdict (a lower score, new warnings or notes), 2 for the other changes (fail to pass,
    findings resolved, a higher score, an added trace that passes, a removed trace)."""
    if delta.status_change == "pass->fail" or delta.dropped_beyond(max_score_drop):
        return 0
    if any(f.severity == "error" for f in delta.new_findings):
        return 0
    if delta.status_change == "added":
        return 0 if delta.candidate is not None and not delta.candidate.passed else 2
    change = delta.score_delta
    worse = bool(delta.new_findings) or (change is not None and round(change, 2) < 0)
    return 1 if worse and delta.status_change == "unchanged" else 2


class CompareTraces:
    """Keeps, while the candidate is validated, the traces that :func:`render_compare_html` will
    expand: the first EXPANDED_CHANGED changed traces in its order (regressions first, then the
    other changes for the worse, then the rest, by trace id within each). Pass it as
    ``on_trace`` to ``runner.run_validation``, with the gate's ``max_score_drop`` (a larger drop
    is a regression)."""

    def __init__(
        self,
        baseline: RunReport,
        *,
        any_step: bool = False,
        max_score_drop: float | None = None,
    ) -> None:
        self._baseline = {r.trace_id: r for r in baseline.reports}
        self._any_step = any_step
        self._max_score_drop = max_score_drop
        self._keys: dict[str, tuple[int, str]] = {}
        self.traces: dict[str, Trace] = {}

    def __call__(self, trace: Trace, report: TraceReport) -> None:
        baseline = self._baseline.get(report.trace_id)
        delta = trace_delta(report.trace_id, baseline, report, any_step=self._any_step)
        if not delta.notable:
            return
        self._keys[report.trace_id] = (_rank(delta, self._max_score_drop), report.trace_id)
        self.traces[report.trace_id] = trace
        if len(self.traces) > EXPANDED_CHANGED:
            last = max(self._keys, key=self._keys.__getitem__)
            del self._keys[last], self.traces[last]


def _sides_table(result: CompareResult) -> str:
    sides = (result.baseline, result.candidate)
    rows = []
    for label, (base, cand) in (
        ("Policy", [_code(s.policy_id) if s.policy_id else "-" for s in sides]),
        ("Policy SHA-256", [_code(s.policy_sha256) if s.policy_sha256 else "-" for s in sides]),
        ("arh version", [_name(s.harness_version) if s.harness_version else "-" for s in sides]),
        ("Input errors", [f"{s.input_errors:,}" for s in sides]),
        *(
            (f"<code>{kind}</code>", [f"{s.failures[kind]:,}" for s in sides])
            for kind in FAILURE_KINDS
        ),
    ):
        rows.append(f'<tr><th scope="row">{label}</th><td>{base}</td><td>{cand}</td></tr>')
    return (
        "<table>\n<caption>Baseline and candidate</caption>\n<thead><tr><td></td>"
        '<th scope="col">Baseline</th><th scope="col">Candidate</th></tr></thead>\n'
        f"<tbody>{''.join(rows)}</tbody>\n</table>\n"
    )


def _summary_table(summary: Mapping[str, Any]) -> str:
    rows = [
        ("Traces compared", f"{summary['traces_compared']:,}"),
        ("Added / removed", f"{summary['traces_added']:,} / {summary['traces_removed']:,}"),
        ("Pass to fail", f"{summary['pass_to_fail']:,}"),
        ("Fail to pass", f"{summary['fail_to_pass']:,}"),
        (
            "New findings (errors)",
            f"{summary['new_findings']:,} ({summary['new_error_findings']:,})",
        ),
        ("Resolved findings", f"{summary['resolved_findings']:,}"),
        ("Average score delta", f"{summary['average_score_delta']:+.2f}"),
        ("Largest score drop", f"{summary['max_score_drop']:.2f}"),
    ]
    body = "".join(f'<tr><th scope="row">{k}</th><td class="n">{v}</td></tr>' for k, v in rows)
    return (
        '<table>\n<caption>Summary</caption>\n<thead><tr><th scope="col">Metric</th>'
        f'<th scope="col" class="n">Value</th></tr></thead>\n<tbody>{body}</tbody>\n</table>\n'
    )


def _delta_table(
    deltas: Sequence[TraceDelta], caption: str, anchor: str, max_score_drop: float | None = None
) -> str:
    rows = []
    for delta in deltas[:MAX_ROWS]:
        label = _change_label(delta, max_score_drop)[0]
        if not delta.notable:
            label = "unchanged"
        report = delta.candidate or delta.baseline
        assert report is not None
        score = f"{report.score:.2f}"
        if delta.score_delta is not None:
            score += f" ({delta.score_delta:+.2f})"
        rows.append(
            f'<tr><th scope="row">{_code(delta.trace_id)}</th><td>{label}</td>'
            f'<td class="{"pass" if report.passed else "fail"}">'
            f'{"PASS" if report.passed else "FAIL"}</td><td class="n">{score}</td>'
            f'<td class="n">{len(delta.new_findings):,}</td>'
            f'<td class="n">{len(delta.resolved_findings):,}</td></tr>\n'
        )
    more = ""
    if len(deltas) > MAX_ROWS:
        more = (
            f'<p class="note">{_plural(len(deltas) - MAX_ROWS, "more trace")} not listed: see '
            "the JSON comparison.</p>\n"
        )
    return (
        f'<table id="{anchor}">\n<caption>{_text(caption)}</caption>\n<thead><tr>'
        '<th scope="col">Trace</th><th scope="col">Change</th><th scope="col">Verdict</th>'
        '<th scope="col" class="n">Score (delta)</th><th scope="col" class="n">New</th>'
        '<th scope="col" class="n">Resolved</th></tr></thead>\n'
        f"<tbody>\n{''.join(rows)}</tbody>\n</table>\n{more}"
    )


_STATUS_CLASSES: Final = {"fail": "fail", "insufficient": "fail", "pass": "pass"}
_VERDICT_CLASSES: Final = {"FAIL": "fail", "insufficient data": "fail", "PASS": "pass"}


def _rows_left(shown: int, total: int, word: str) -> str:
    """The note under a table or list of a comparison cut to its first ``shown`` items."""
    if total <= shown:
        return ""
    return (
        f'<p class="note">{_plural(total - shown, f"more {word}")} not listed: see the JSON '
        "comparison (<code>--json-out</code>).</p>\n"
    )


def _statistics_section(stats: StatComparison) -> str:
    """The statistical gates of a comparison, as ``arh compare --md-out`` shows them: the
    workflows compared (pass@1 with its interval, pass^k, flaky tasks, flips, p-values and a
    verdict), the warnings, the checks allowed with too little data, then every gate check.
    The reasons of the checks that failed are among the gate's reasons, above."""

    def workflow(name: str) -> str:
        if name:
            return _code(name)
        return "all workflows" if not stats.workflows else "(no workflow)"

    def head(columns: Sequence[str]) -> str:
        return "".join(f'<th scope="col">{_text(column)}</th>' for column in columns)

    out = [
        '<section aria-labelledby="statistics">\n<h2 id="statistics">Statistics</h2>\n',
        f"<p>{_text(comparison_intro(stats))}</p>\n",
    ]
    if stats.workflows:
        by_workflow = checks_by_workflow(stats)
        rows = []
        for comparison in stats.workflows[:_STAT_ROWS]:
            cells = comparison_cells(comparison, by_workflow.get(comparison.workflow, []))
            verdict = cells.pop()
            rows.append(
                f'<tr><th scope="row">{workflow(comparison.workflow)}</th>'
                + "".join(f"<td>{_text(cell)}</td>" for cell in cells)
                + f'<td class="{_VERDICT_CLASSES.get(verdict, "muted")}">{_text(verdict)}</td>'
                "</tr>\n"
            )
        out.append(
            '<table class="stat-workflows">\n<caption>Workflows compared</caption>\n<thead><tr>'
            f"{head(COMPARISON_COLUMNS)}</tr></thead>\n<tbody>\n{''.join(rows)}</tbody>\n"
            f"</table>\n{_rows_left(len(rows), len(stats.workflows), 'workflow')}"
        )
    if stats.warnings:
        out.append('<h3>Warnings</h3>\n<ul class="warnings">\n')
        out += [f'<li class="warning">{_clipped(w)}</li>\n' for w in stats.warnings]
        out.append("</ul>\n")
    checks = stats.gate.checks
    allowed = [c.reason for c in checks if c.status == "allowed" and c.reason]
    if allowed:
        out.append('<h3>Allowed with insufficient data</h3>\n<ul class="allowed">\n')
        out += [f"<li>allowed: {_clipped(reason)}</li>\n" for reason in allowed]
        out.append("</ul>\n")
    if checks:
        rows = []
        for check in checks[:_STAT_ROWS]:
            threshold, origin, observed, status = check_cells(check)
            rows.append(
                f'<tr><th scope="row">{workflow(check.workflow)}</th><td>{_name(threshold)}</td>'
                f"<td>{_code(origin)}</td><td>{_name(observed)}</td>"
                f'<td class="{_STATUS_CLASSES.get(status, "muted")}">{_text(status)}</td></tr>\n'
            )
        out.append(
            '<table class="stat-checks">\n<caption>Gate checks</caption>\n<thead><tr>'
            f"{head(CHECK_COLUMNS)}</tr></thead>\n<tbody>\n{''.join(rows)}</tbody>\n</table>\n"
            f"{_rows_left(len(rows), len(checks), 'gate check')}"
        )
    out.append("</section>\n")
    return "".join(out)


def html_compare_sections(
    result: CompareResult,
    gate: GateResult,
    traces: Mapping[str, Trace],
    input_errors: int,
    *,
    stats: StatComparison | None = None,
    fail_under: float | None = None,
    ungated: str | None = None,
    infrastructure: int = 0,
) -> Iterator[str]:
    """The parts of the comparison page after its head (see :func:`render_compare_html`)."""
    limit = gate.max_score_drop
    notable = sorted(
        (d for d in result.traces if d.notable), key=lambda d: (_rank(d, limit), d.trace_id)
    )
    quiet = [d for d in result.traces if not d.notable]

    def section(delta: TraceDelta, anchor: str) -> str:
        report = delta.candidate or delta.baseline
        assert report is not None
        trace = traces.get(delta.trace_id) if delta.candidate is not None else None
        return html_trace_section(
            report,
            trace,
            anchor=anchor,
            delta=delta,
            max_score_drop=limit,
            # a removed trace is the baseline's, checked with a threshold its report does not hold
            fail_under=fail_under if delta.candidate is not None else None,
        )

    shown, rest = _split(notable, EXPANDED_CHANGED, _Sections(), section)
    links = [("gate", "Gate")]
    if stats is not None:
        links.append(("statistics", "Statistics"))
    if notable:
        links.append(("changed", f"Changed traces ({len(notable):,})"))
    if quiet:
        links.append(("unchanged", f"Unchanged traces ({len(quiet):,})"))
    yield _nav(links)
    verdict = "PASS" if gate.passed else "FAIL"
    mode = f"fail-on <code>{_text(gate.fail_on)}</code>"
    if gate.max_score_drop is not None:
        mode += f", largest allowed score drop {gate.max_score_drop:.2f}"
    if gate.fail_on_drift:
        mode += ", fail on drift"
    out = [
        '<section aria-labelledby="gate">\n<h2 id="gate">Gate</h2>\n',
        f'<p><strong class="verdict {verdict.lower()}">{verdict}</strong> ({mode})</p>\n',
    ]
    note = exit_status_note(input_errors, infrastructure)
    if note is not None:
        out.append(f'<p class="note"><strong>{_text(note[0].upper() + note[1:])}</strong> '
                   "(listed in the run's log).</p>\n")  # fmt: skip
    uncovered = uncovered_text(result.candidate.failures)
    if uncovered is not None:
        out.append(f'<p class="note"><strong>{_text(uncovered[0].upper() + uncovered[1:])}'
                   "</strong>.</p>\n")  # fmt: skip
    if ungated is not None:
        out.append(f'<p class="note">Note: {_text(ungated)}.</p>\n')
    if gate.reasons:
        out.append('<h3>Reasons</h3>\n<ul class="reasons">\n')
        reasons = gate.reasons[:_GATE_ITEMS]  # one per regressed trace: there may be thousands
        out += [f"<li>{_clipped(reason)}</li>\n" for reason in reasons]
        out.append("</ul>\n" + _rows_left(len(reasons), len(gate.reasons), "reason"))
    if result.warnings:
        out.append('<h3>Warnings</h3>\n<ul class="warnings">\n')
        warnings = result.warnings[:_GATE_ITEMS]
        out += [f'<li class="warning">{_clipped(w)}</li>\n' for w in warnings]
        out.append("</ul>\n" + _rows_left(len(warnings), len(result.warnings), "warning"))
    out += [_summary_table(result.summary()), _sides_table(result), "</section>\n"]
    yield "".join(out)
    if stats is not None:
        yield _statistics_section(stats)
    if notable:
        yield (
            f'<h2 id="changed">Changed traces ({len(notable):,})</h2>\n<p class="muted">'
            "Regressions first (what fails the <code>regressions</code> gate), then the other "
            "changes for the worse (a lower score, new warnings), then the rest; by trace id "
            "within each. In each timeline, findings the baseline did not have are marked "
            "<em>new</em>; the baseline's findings that are gone are shown at their step, "
            "marked <em>resolved</em>.</p>\n"
        )
        yield from shown
        if rest:
            yield (
                f'<p class="note">The page shows {_plural(len(shown), "changed trace")} step by '
                f"step (at most {EXPANDED_CHANGED}, within {PAGE_CHARS:,} characters); the "
                "others are summarised here.</p>\n"
            )
            yield _delta_table(rest, "More changed traces", "more-changed", limit)
    if quiet:
        yield f'<h2 id="unchanged">Unchanged traces ({len(quiet):,})</h2>\n'
        yield _delta_table(quiet, "Traces with the same verdict, score and findings", "same")


def render_compare_html(
    result: CompareResult,
    gate: GateResult,
    traces: Mapping[str, Trace] | None = None,
    *,
    input_errors: int = 0,
    infrastructure: int = 0,
    statistics: StatComparison | None = None,
    fail_under: float | None = None,
    ungated: str | None = None,
) -> str:
    """The comparison as one HTML page: the gate and its reasons, the statistics of the
    statistical gates (``statistics``, when they were given), then the changed traces, with
    new and resolved findings marked in their timelines (when ``traces`` has the trace).
    ``input_errors`` counts the candidate inputs that could not be read (``infrastructure`` of
    them infrastructure failures), which set the exit status whatever the gate says.
    ``fail_under`` is the pass threshold the candidate was checked with, when it was validated
    now (see :func:`render_html`). ``ungated`` says what the trace-by-trace gate let through
    when statistical gates turned it off (``ungated_regressions``)."""
    title = f"arh regression gate: {gate_verdict(gate.passed, input_errors, infrastructure)}"
    head = html_start(title, title)
    sections = html_compare_sections(
        result,
        gate,
        traces or {},
        input_errors,
        stats=statistics,
        fail_under=fail_under,
        ungated=ungated,
        infrastructure=infrastructure,
    )
    return "".join(html_document(head, sections))
