"""The SARIF 2.1.0 report, for GitHub code scanning and other SARIF viewers.

Rules come from the registry (all of them, in ID order, so a rule's index never changes). Each
finding is one result with a physical location (the trace file, relative to the repository root,
and the line of the step when it is known; none for a trace read from standard input) and a
logical one (trace / step). Results are identified across runs by ``partialFingerprints``: a hash
of the finding's fingerprint (trace, rule, category, step, subject) plus an occurrence number, so
they are unique within a run and stable between runs (the step is the finding's stable step
reference in a trace whose step ids an adapter made, which change from one recording to the
next). GitHub's upload limits are respected: at most 25,000 results per run. Text from inputs
is shown with visible escapes (``\\x1b``), and cannot form an embedded link in a message;
fingerprints hash the values as they are.

The comparison (:func:`render_compare_sarif`) is the same run of results, each with its
``baselineState``: the candidate's findings ``new`` or ``unchanged``, and the baseline's resolved
findings ``absent``, with the fingerprints the validation report gives them.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote

from agent_reliability_harness._json import dumps_indented
from agent_reliability_harness._version import RULES_DOC_URL, __version__
from agent_reliability_harness.model.report import (
    Finding,
    ReportLike,
    RunSummary,
    TraceReport,
    as_run_report,
)
from agent_reliability_harness.render._text import plural, visible
from agent_reliability_harness.rules import RULES, Rule

if TYPE_CHECKING:
    from agent_reliability_harness.regression.compare import CompareResult, TraceDelta
    from agent_reliability_harness.regression.gate import GateResult

__all__ = [
    "MAX_RESULTS",
    "SARIF_SCHEMA_URI",
    "SarifWriter",
    "render_compare_sarif",
    "render_sarif",
]

SARIF_SCHEMA_URI: Final = "https://json.schemastore.org/sarif-2.1.0.json"
MAX_RESULTS: Final = 25_000  # GitHub rejects runs with more results
ROOT_BASE: Final = "%SRCROOT%"
_LEVELS: Final = {"error": "error", "warning": "warning", "info": "note"}
_FINGERPRINT_KEY: Final = "arhFinding/v1"


def _level(severity: str) -> str:
    return _LEVELS.get(severity, "warning")


def _rule_name(rule: Rule) -> str:
    return "".join(word.capitalize() for word in re.findall(r"[A-Za-z0-9]+", rule.title))


def _rules() -> list[Rule]:
    """Every rule of the registry, in ID order, so that a rule's index never changes."""
    return sorted(RULES.values(), key=lambda r: r.rule_id)


def _rule_index() -> dict[str, int]:
    return {rule.rule_id: i for i, rule in enumerate(_rules())}


def _rule(rule: Rule) -> dict[str, Any]:
    help_text = f"Fires when: {rule.trigger}\nFix: {rule.remediation}"
    help_markdown = f"**Fires when:** {rule.trigger}\n\n**Fix:** {rule.remediation}"
    if rule.severity_note:
        help_text += f"\nSeverity: {rule.severity_note}"
        help_markdown += f"\n\n**Severity:** {rule.severity_note}"
    return {
        "id": rule.rule_id,
        "name": _rule_name(rule),
        "shortDescription": {"text": rule.title},
        "fullDescription": {"text": rule.trigger},
        "help": {"text": help_text, "markdown": help_markdown},
        "helpUri": f"{RULES_DOC_URL}#{rule.anchor_id}",
        "defaultConfiguration": {"level": _level(rule.severity), "enabled": rule.emitted},
        "properties": {
            "category": rule.category,
            "tags": ["agent-reliability", rule.category],
            "precision": "very-high",
        },
    }


def _quote(path: str) -> str:
    """Percent-encode a path's bytes. A name that is not valid UTF-8 comes from the file system
    with its bytes as lone surrogates (U+DC80..U+DCFF), which stand for those bytes here."""
    try:
        data = path.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # another lone surrogate: keep it, as UTF-8 would spell it
        data = path.encode("utf-8", "surrogatepass")
    return quote(data)


def _uri(path: str) -> tuple[str, str | None]:
    """A percent-encoded URI: relative to the repository root, or file: for absolute paths."""
    if path.startswith("/") or re.match(r"^[A-Za-z]:[/\\]", path):
        return "file://" + ("" if path.startswith("/") else "/") + _quote(
            path.replace("\\", "/")
        ), None
    return _quote(path.replace("\\", "/")), ROOT_BASE


_LINK_CHARS: Final = re.compile(r"([\\\[\]])")


def _message(text: str) -> str:
    """A plain text message (SARIF 2.1.0 §3.11.3): text from inputs cannot form an embedded
    link (``[text](uri)``, §3.11.6), since in a text with a ``](`` every ``\\``, ``[`` and ``]``
    gets the backslash that escapes it in link text; then :func:`visible` escapes."""
    if "](" in text:
        text = _LINK_CHARS.sub(r"\\\1", text)
    return visible(text)


def _location(
    report: TraceReport, finding: Finding, step_lines: Sequence[int] | None
) -> dict[str, Any]:
    trace_id = visible(report.trace_id)
    if finding.step_id is None:
        logical = {"name": trace_id, "fullyQualifiedName": trace_id, "kind": "module"}
    else:
        step_id = visible(finding.step_id)
        logical = {
            "name": step_id,
            "fullyQualifiedName": f"{trace_id}/{step_id}",
            "kind": "member",
        }
    if report.source_path is None:
        # standard input has no file; GitHub code scanning refuses a whole upload in which a
        # result has no artifact location, so the results name "stdin"
        artifact: dict[str, Any] = {"uri": "stdin"}
    else:
        uri, base = _uri(report.source_path)
        artifact = {"uri": uri} if base is None else {"uri": uri, "uriBaseId": base}
    physical: dict[str, Any] = {"artifactLocation": artifact}
    line = report.source_line
    index = finding.step_index
    if line is None and step_lines is not None and index is not None and index < len(step_lines):
        line = step_lines[index]
    if line is not None:
        physical["region"] = {"startLine": line}
    return {"physicalLocation": physical, "logicalLocations": [logical]}


def _fingerprint(report: TraceReport, finding: Finding, seen: dict[str, int]) -> str:
    key = "\x1f".join(
        (
            report.trace_id,
            finding.rule_id,
            finding.category,
            finding.step_ref or finding.step_id or "",
            finding.subject or "",
        )
    )
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    seen[digest] = seen.get(digest, 0) + 1
    return f"{digest}:{seen[digest]}"


def _result(
    report: TraceReport,
    finding: Finding,
    lines: Sequence[int] | None,
    index: Mapping[str, int],
    seen: dict[str, int],
) -> dict[str, Any]:
    where = f"trace '{report.trace_id}'"
    if finding.step_id is not None:
        where += f", step '{finding.step_id}'"
    # findings of 0.1.x reports (a comparison's baseline) have no rule ID: their category
    result: dict[str, Any] = {"ruleId": finding.rule_id or finding.category}
    if finding.rule_id in index:
        result["ruleIndex"] = index[finding.rule_id]
    result |= {
        "level": _level(finding.severity),
        "message": {"text": _message(f"{finding.message} ({where})")},
        "locations": [_location(report, finding, lines)],
        "partialFingerprints": {_FINGERPRINT_KEY: _fingerprint(report, finding, seen)},
        "properties": {"trace_id": visible(report.trace_id), "category": finding.category},
    }
    if finding.subject is not None:
        result["properties"]["subject"] = visible(finding.subject)
    return result


_RESULTS: Final = '\n      "results": []'  # where the results go in the document
_RESULT_LEVEL: Final = 4  # results sit in runs[0].results
_RESULT_INDENT: Final = "\n" + "  " * _RESULT_LEVEL


class SarifWriter:
    """The report in pieces, so that it can be written one trace at a time: :meth:`head`, what
    :meth:`add` returned for each trace, then :meth:`tail` is :func:`render_sarif`'s text.

    ``step_lines`` gives, for a trace report, the line of each of its steps in its source file
    (or None); results then point at the line of their step.
    """

    def __init__(
        self, step_lines: Callable[[TraceReport], Sequence[int] | None] | None = None
    ) -> None:
        self._step_lines = step_lines
        self._index = _rule_index()
        self._seen: dict[str, int] = {}
        self._results = 0
        self._findings = 0

    def add(self, report: TraceReport) -> str:
        self._findings += len(report.findings)
        room = MAX_RESULTS - self._results
        if room <= 0 or not report.findings:
            return ""
        lines = None if self._step_lines is None else self._step_lines(report)
        pieces = []
        for finding in report.findings[:room]:
            result = _result(report, finding, lines, self._index, self._seen)
            pieces.append(("," if self._results else "") + _RESULT_INDENT)
            pieces.append(dumps_indented(_unicode_safe(result), level=_RESULT_LEVEL))
            self._results += 1
        return "".join(pieces)

    def _split(self, summary: RunSummary) -> tuple[str, str]:
        notifications: list[dict[str, Any]] = [
            {"level": "error", "message": {"text": _message(f"input error: {error}")}}
            for error in summary.input_errors
        ]
        total = self._findings
        if total > self._results:
            notifications.append(
                {
                    "level": "warning",
                    "message": {
                        "text": f"{total - self._results} of {total} findings were left out: "
                        f"code scanning accepts at most {MAX_RESULTS} results per run"
                    },
                }
            )
        properties = None
        if summary.policy_id is not None:
            properties = {
                "policy_id": visible(summary.policy_id),
                "policy_sha256": summary.policy_sha256,
            }
        document = _document(
            f"arh/{visible(summary.policy_id or 'policy')}/",
            not summary.input_errors,
            notifications,
            [],
            properties,
        )
        text = dumps_indented(_unicode_safe(document))
        at = text.index(_RESULTS) + len(_RESULTS) - 1  # strings are escaped: the one real key
        return text[:at], text[at:]

    def head(self, summary: RunSummary) -> str:
        return self._split(summary)[0]

    def tail(self, summary: RunSummary) -> str:
        return ("\n      " if self._results else "") + self._split(summary)[1] + "\n"


def _document(
    automation_id: str,
    successful: bool,
    notifications: list[dict[str, Any]],
    results: list[dict[str, Any]],
    properties: dict[str, Any] | None,
) -> dict[str, Any]:
    """The SARIF log of one run: the driver with every rule, then the run's facts."""
    driver = {
        "name": "arh",
        "fullName": "agent-reliability-harness",
        "version": __version__,
        "semanticVersion": __version__,
        "informationUri": RULES_DOC_URL.rsplit("/blob/", 1)[0],
        "rules": [_rule(rule) for rule in _rules()],
    }
    sarif_run: dict[str, Any] = {
        "tool": {"driver": driver},
        "automationDetails": {"id": automation_id},
        "invocations": [
            {"executionSuccessful": successful, "toolExecutionNotifications": notifications}
        ],
        "columnKind": "unicodeCodePoints",
        "results": results,
    }
    if properties is not None:
        sarif_run["properties"] = properties
    return {"$schema": SARIF_SCHEMA_URI, "version": "2.1.0", "runs": [sarif_run]}


def render_sarif(run: ReportLike, step_lines: Mapping[str, Sequence[int]] | None = None) -> str:
    """The report as SARIF 2.1.0 JSON (ASCII, indented, with a trailing newline).

    ``step_lines`` maps a trace id to the line of each of its steps in the source file; when it
    is given, results point at the line of their step.
    """
    run = as_run_report(run)
    lines = None if step_lines is None else (lambda report: step_lines.get(report.trace_id))
    writer = SarifWriter(lines)
    body = "".join([writer.add(report) for report in run.reports])
    summary = run.summary()
    return writer.head(summary) + body + writer.tail(summary)


_STATES: Final = ("new", "unchanged", "absent")  # a comparison's baselineState, in result order


def _states(report: TraceReport, new: Sequence[Finding]) -> list[str]:
    """The ``baselineState`` of each finding of a candidate's report: ``new`` for the
    comparison's new findings, ``unchanged`` for the others. Of equal findings the last are the
    new ones: the first keep the occurrence numbers (fingerprints) the baseline gave them."""
    left = Counter(new)
    states = []
    for finding in reversed(report.findings):
        if left[finding]:
            left[finding] -= 1
            states.append("new")
        else:
            states.append("unchanged")
    return states[::-1]


def _compared(
    delta: TraceDelta,
    step_lines: Callable[[TraceReport], Sequence[int] | None] | None,
    index: Mapping[str, int],
) -> dict[str, list[dict[str, Any]]]:
    """The results of one trace of a comparison, by ``baselineState``: the candidate's findings
    as the validation report writes them, then the resolved ones as the baseline's wrote them
    (where the baseline report locates the trace, without a step's line, which a report does
    not record). Fingerprints number equal findings within a trace: a resolved one takes the
    next number after the candidate's equal ones, the number it had among the baseline's."""
    found: dict[str, list[dict[str, Any]]] = {state: [] for state in _STATES}
    seen: dict[str, int] = {}
    candidate, baseline = delta.candidate, delta.baseline
    if candidate is not None and candidate.findings:
        lines = None if step_lines is None else step_lines(candidate)
        states = _states(candidate, delta.new_findings)
        for finding, state in zip(candidate.findings, states, strict=True):
            result = _result(candidate, finding, lines, index, seen)
            found[state].append(result | {"baselineState": state})
    if baseline is not None:
        for finding in delta.resolved_findings:
            result = _result(baseline, finding, None, index, seen)
            found["absent"].append(result | {"baselineState": "absent"})
    return found


def render_compare_sarif(
    result: CompareResult,
    gate: GateResult,
    *,
    input_errors: int = 0,
    step_lines: Callable[[TraceReport], Sequence[int] | None] | None = None,
) -> str:
    """The comparison as SARIF 2.1.0 JSON (ASCII, indented, with a trailing newline): the
    candidate's findings with ``baselineState`` ``new`` or ``unchanged``, then the baseline's
    findings that the candidate resolved, ``absent`` (SARIF 2.1.0 §3.27.24); results, rules and
    fingerprints as in :func:`render_sarif`, so that a result has the fingerprint the
    validation report gives it. The new results come first, then the unchanged, then the
    absent ones, each in trace id order: beyond ``MAX_RESULTS``, the absent and then the
    unchanged ones are left out first, and a notification says how many.

    ``input_errors`` counts the candidate inputs that could not be read (when it was validated
    now); ``step_lines`` gives the line of each step of a candidate trace in its file."""
    index = _rule_index()
    found: dict[str, list[dict[str, Any]]] = {state: [] for state in _STATES}
    for delta in result.traces:
        for state, results in _compared(delta, step_lines, index).items():
            found[state] += results
    results = [r for state in _STATES for r in found[state]]
    notifications: list[dict[str, Any]] = []
    if input_errors:
        notifications.append(
            {
                "level": "error",
                "message": {
                    "text": f"{plural(input_errors, 'candidate input')} could not be read "
                    "(listed in the run's log)"
                },
            }
        )
    notifications += [
        {"level": "warning", "message": {"text": _message(warning)}} for warning in result.warnings
    ]
    if len(results) > MAX_RESULTS:
        shown = results[:MAX_RESULTS]
        left = Counter(r["baselineState"] for r in results[MAX_RESULTS:])
        which = ", ".join(f"{left[state]} {state}" for state in _STATES if left[state])
        notifications.append(
            {
                "level": "warning",
                "message": {
                    "text": f"{len(results) - MAX_RESULTS} of {len(results)} results were left "
                    f"out ({which}): code scanning accepts at most {MAX_RESULTS} results per run"
                },
            }
        )
        results = shown
    base, cand = result.baseline, result.candidate
    properties = {
        "policy_id": visible(cand.policy_id),
        "policy_sha256": cand.policy_sha256,
        "baseline": {
            "policy_id": visible(base.policy_id),
            "policy_sha256": base.policy_sha256,
            "harness_version": base.harness_version and visible(base.harness_version),
        },
        "gate": {"passed": gate.passed, "fail_on": gate.fail_on},
    }
    document = _document(
        f"arh-compare/{visible(cand.policy_id or 'policy')}/",
        not input_errors,
        notifications,
        results,
        properties,
    )
    return dumps_indented(_unicode_safe(document)) + "\n"


_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def _unicode_safe(value: Any) -> Any:
    """Show lone surrogates (which no UTF-8 consumer accepts) as escapes such as ``\\ud800``."""
    if isinstance(value, str):
        return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", value)
    if isinstance(value, dict):
        return {_unicode_safe(k): _unicode_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unicode_safe(v) for v in value]
    return value
