"""The JUnit XML report: one test case per trace, for any CI system's test reporter.

The dialect is the common one that pytest, Jenkins and GitLab write and read: ``testsuites`` >
``testsuite`` > ``testcase`` with ``failure`` for a failing trace and ``error`` for an input that
could not be read. Characters that XML 1.0 cannot carry are shown as escapes, never dropped.

The comparison (:func:`render_compare_junit`) is one test case for the gate and one per trace,
which fails when the gate holds something against that trace.
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING, Final

from agent_reliability_harness.errors import InputError
from agent_reliability_harness.model.report import (
    Finding,
    ReportLike,
    RunSummary,
    TraceReport,
    as_run_report,
)
from agent_reliability_harness.regression.gate import trace_reasons
from agent_reliability_harness.render._text import (
    FORMAT_CHARS,
    escape_char,
    plural,
    score_alone,
)

if TYPE_CHECKING:
    from agent_reliability_harness.regression.compare import CompareResult, TraceDelta
    from agent_reliability_harness.regression.gate import GateResult

__all__ = ["JunitWriter", "render_compare_junit", "render_junit", "xml_safe"]

# Everything outside XML 1.0's Char production (C0 controls but TAB/LF/CR, lone surrogates,
# U+FFFE and U+FFFF), and the format characters (bidi controls that make viewers show text
# reordered, invisible ones such as U+200B), shown as escapes as on the console.
_NOT_XML: Final = re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff{FORMAT_CHARS}]")


def xml_safe(text: str) -> str:
    """Replace characters XML 1.0 forbids with a visible escape such as ``\\x1b``."""
    return _NOT_XML.sub(lambda match: escape_char(match.group()), text)


_LINE_BREAKS: Final = str.maketrans({"\n": "\\n", "\r": "\\r"})


def _finding_line(finding: Finding) -> str:
    """One line per finding (and one for what was expected): a line break in a step id or a
    message from a trace is escaped, so that it cannot forge a finding line of its own."""
    step = "-" if finding.step_id is None else finding.step_id
    line = f"[{finding.severity.upper()}] {finding.rule_id or finding.category} (step {step}): "
    line += finding.message
    line = line.translate(_LINE_BREAKS)
    if finding.expected is not None or finding.observed is not None:
        seen = f"expected: {finding.expected or '-'}; observed: {finding.observed or '-'}"
        line += "\n    " + seen.translate(_LINE_BREAKS)
    return line


def _name(text: str) -> str:
    """A name for an attribute: XML-safe, on one line (a reporter that logs test names one per
    line must not be handed a line of the trace's choosing, such as a CI workflow command)."""
    return xml_safe(text.translate(_LINE_BREAKS))


def _failure_message(report: TraceReport, fail_under: float | None) -> str:
    message = f"score {report.score:.2f}/100; {plural(report.errors, 'error finding')}"
    why = score_alone(report, fail_under)
    return message if why is None else f"{message}; fails on its score alone: {why}"


def _testcase(report: TraceReport, fail_under: float | None) -> ET.Element:
    attrs = {
        "classname": _name(f"{report.agent_name}.{report.workflow}"),
        "name": _name(report.trace_id),
        "time": f"{report.total_latency_ms / 1000:.3f}",
    }
    if report.source_path is not None:
        attrs["file"] = _name(report.source_path)
    case = ET.Element("testcase", attrs)
    body = xml_safe("\n".join(_finding_line(f) for f in report.findings))
    if not report.passed:
        failure = ET.SubElement(
            case,
            "failure",
            {"message": _failure_message(report, fail_under), "type": "arh.PolicyViolation"},
        )
        failure.text = body
    elif body:
        ET.SubElement(case, "system-out").text = body
    return case


def _error_case(error: InputError) -> ET.Element:
    case = ET.Element(
        "testcase",
        {"classname": "arh.inputs", "name": _name(error.location() or "input"), "time": "0.000"},
    )
    element = ET.SubElement(
        case, "error", {"message": _name(error.message), "type": "arh.InputError"}
    )
    element.text = xml_safe(str(error).translate(_LINE_BREAKS))  # file names can hold them
    return case


def _fragment(case: ET.Element) -> str:
    """A test case as it appears in the indented document, with the line break before it."""
    ET.indent(case, space="  ", level=2)
    return "\n    " + ET.tostring(case, encoding="unicode")


_MARKER: Final = "arh-cases"
_INF: Final = float("inf")


class JunitWriter:
    """The report in pieces, so that it can be written one trace at a time: :meth:`head`, what
    :meth:`add` returned for each trace, then :meth:`tail` is :func:`render_junit`'s text."""

    def __init__(self, *, fail_under: float | None = None) -> None:
        self._count = 0
        self._fail_under = fail_under  # the pass threshold, to say when a score fails a trace

    def add(self, report: TraceReport) -> str:
        self._count += 1
        return _fragment(_testcase(report, self._fail_under))

    def _document(self, summary: RunSummary) -> tuple[str, str]:
        """The document around its test cases, split where they go."""
        tests = summary.total + len(summary.input_errors)
        counts = {
            "tests": str(tests), "failures": str(summary.failed),
            "errors": str(len(summary.input_errors)), "skipped": "0",
            "time": f"{summary.total_latency_ms / 1000:.3f}",
        }  # fmt: skip
        if summary.total_latency_ms == _INF:  # finite totals of traces may add up past a float
            del counts["time"]  # the schema wants a decimal: no time rather than "inf"
        root = ET.Element("testsuites", {"name": "arh", **counts})
        suite_name = "arh" if summary.policy_id is None else f"arh: {summary.policy_id}"
        suite = ET.SubElement(root, "testsuite", {"name": _name(suite_name), **counts})
        properties = ET.SubElement(suite, "properties")
        for name, value in (
            ("policy_id", summary.policy_id),
            ("policy_sha256", summary.policy_sha256),
            ("harness_version", summary.harness_version),
        ):
            if value is not None:
                ET.SubElement(properties, "property", {"name": name, "value": _name(value)})
        if not len(properties):
            suite.remove(properties)
        if self._count or summary.input_errors or len(suite):
            ET.SubElement(suite, _MARKER)
        ET.indent(root, space="  ")
        text = ET.tostring(root, encoding="unicode")
        marker = f"\n    <{_MARKER} />"
        at = text.find(marker)
        if at < 0:  # an empty suite: nothing goes in
            return text, ""
        return text[:at], text[at + len(marker) :]

    def head(self, summary: RunSummary) -> str:
        return '<?xml version="1.0" encoding="UTF-8"?>\n' + self._document(summary)[0]

    def tail(self, summary: RunSummary) -> str:
        errors = "".join(_fragment(_error_case(error)) for error in summary.input_errors)
        return errors + self._document(summary)[1] + "\n"


def render_junit(run: ReportLike, *, fail_under: float | None = None) -> str:
    """The report as JUnit XML, with an XML declaration and a trailing newline. ``fail_under``,
    the pass threshold the run was checked with, lets a trace that fails on its score alone say
    so in its failure message."""
    run = as_run_report(run)
    writer = JunitWriter(fail_under=fail_under)
    body = "".join([writer.add(report) for report in run.reports])
    summary = run.summary()
    return writer.head(summary) + body + writer.tail(summary)


# -- The comparison ----------------------------------------------------------------------------


def _seconds(milliseconds: float) -> str:
    return f"{milliseconds / 1000:.3f}"


def _change_lines(delta: TraceDelta) -> list[str]:
    """What changed in a trace of the candidate, one line each: its verdict and score, then its
    new and its resolved findings (line breaks from the reports escaped, as in the validation
    report)."""
    base, cand = delta.baseline, delta.candidate
    assert cand is not None
    verdict = "pass" if cand.passed else "fail"
    if base is None:
        line = f"added; verdict: {verdict}; score: {cand.score:.2f}"
    else:
        before = "pass" if base.passed else "fail"
        verdict = f"{verdict} (unchanged)" if before == verdict else f"{before} -> {verdict}"
        change = delta.score_delta
        assert change is not None
        shown = f"{round(change, 2) + 0.0:+.2f}"  # not -0.00
        line = f"verdict: {verdict}; score: {base.score:.2f} -> {cand.score:.2f} ({shown})"
    lines = [line]
    lines += ["new: " + _finding_line(f) for f in delta.new_findings]
    lines += ["resolved: " + _finding_line(f) for f in delta.resolved_findings]
    return lines


def _compare_case(delta: TraceDelta, gate: GateResult) -> ET.Element:
    report = delta.candidate or delta.baseline
    assert report is not None
    attrs = {
        "classname": _name(f"{report.agent_name}.{report.workflow}"),
        "name": _name(delta.trace_id),
        "time": "0.000" if delta.candidate is None else _seconds(report.total_latency_ms),
    }
    if report.source_path is not None:
        attrs["file"] = _name(report.source_path)
    case = ET.Element("testcase", attrs)
    if delta.candidate is None:  # the gate never counts a removed trace against it
        ET.SubElement(case, "skipped", {"message": "removed: not in the candidate run"})
        return case
    reasons = trace_reasons(delta, gate)
    text = xml_safe("\n".join(_change_lines(delta)))
    if reasons:
        message = _name("; ".join(reasons))
        ET.SubElement(case, "failure", {"message": message, "type": "arh.Regression"}).text = text
    elif delta.notable or not delta.candidate.passed:
        ET.SubElement(case, "system-out").text = text
    return case


def _gate_case(result: CompareResult, gate: GateResult, ungated: str | None) -> ET.Element:
    case = ET.Element("testcase", {"classname": "arh", "name": "regression gate", "time": "0.000"})
    if not gate.passed:
        message = f"the gate failed (fail-on {gate.fail_on}): {plural(len(gate.reasons), 'reason')}"
        failure = ET.SubElement(case, "failure", {"message": message, "type": "arh.GateFailure"})
        failure.text = xml_safe("\n".join(r.translate(_LINE_BREAKS) for r in gate.reasons))
    notes = [] if gate.fail_on_drift else [f"warning: {w}" for w in result.warnings]
    if ungated is not None:
        notes.append(f"note: {ungated}")
    if notes:
        text = "\n".join(note.translate(_LINE_BREAKS) for note in notes)
        ET.SubElement(case, "system-out").text = xml_safe(text)
    return case


def _inputs_case(input_errors: int) -> ET.Element:
    case = ET.Element(
        "testcase", {"classname": "arh.inputs", "name": "candidate inputs", "time": "0.000"}
    )
    message = f"{plural(input_errors, 'candidate input')} could not be read"
    error = ET.SubElement(case, "error", {"message": message, "type": "arh.InputError"})
    error.text = "They are listed in the run's log, on standard error."
    return case


def render_compare_junit(
    result: CompareResult,
    gate: GateResult,
    *,
    input_errors: int = 0,
    ungated: str | None = None,
) -> str:
    """The comparison as JUnit XML, with an XML declaration and a trailing newline: a test case
    for the gate (failing with its reasons: the findings gate's, the statistical gates' and,
    with ``fail_on_drift``, the drift warnings), one with an error when candidate inputs could
    not be read (``input_errors``), then one per trace in trace id order, failing when the gate
    holds something against it (:func:`~agent_reliability_harness.regression.gate.trace_reasons`),
    skipped when it was removed. ``ungated`` says what the trace-by-trace gate let through when
    statistical gates turned it off."""
    cases = [_gate_case(result, gate, ungated)]
    if input_errors:
        cases.append(_inputs_case(input_errors))
    cases += [_compare_case(delta, gate) for delta in result.traces]
    latency = math.fsum(d.candidate.total_latency_ms for d in result.traces if d.candidate)
    counts = {
        "tests": str(len(cases)),
        "failures": str(sum(1 for c in cases if c.find("failure") is not None)),
        "errors": str(sum(1 for c in cases if c.find("error") is not None)),
        "skipped": str(sum(1 for c in cases if c.find("skipped") is not None)),
    }
    if math.isfinite(latency):  # finite latencies may add up past a float: then no time
        counts["time"] = _seconds(latency)
    root = ET.Element("testsuites", {"name": "arh compare", **counts})
    policy = result.candidate.policy_id
    name = "arh compare" if not policy else f"arh compare: {policy}"
    suite = ET.SubElement(root, "testsuite", {"name": _name(name), **counts})
    properties = ET.SubElement(suite, "properties")
    facts = [
        ("fail_on", gate.fail_on),
        ("max_score_drop", None if gate.max_score_drop is None else repr(gate.max_score_drop)),
        ("fail_on_drift", "true" if gate.fail_on_drift else None),
        ("gate", "pass" if gate.passed else "fail"),
        ("policy_id", policy or None),
        ("policy_sha256", result.candidate.policy_sha256),
        ("harness_version", result.candidate.harness_version),
        ("baseline_policy_id", result.baseline.policy_id or None),
        ("baseline_policy_sha256", result.baseline.policy_sha256),
        ("baseline_harness_version", result.baseline.harness_version),
    ]
    for key, value in facts:
        if value is not None:
            ET.SubElement(properties, "property", {"name": key, "value": _name(value)})
    suite.extend(cases)
    ET.indent(root, space="  ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
