"""The JUnit XML report: one test case per trace, for any CI system's test reporter.

The dialect is the common one that pytest, Jenkins and GitLab write and read: ``testsuites`` >
``testsuite`` > ``testcase`` with ``failure`` for a failing trace and ``error`` for an input that
could not be read. Characters that XML 1.0 cannot carry are shown as escapes, never dropped.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Final

from agent_reliability_harness.errors import InputError
from agent_reliability_harness.model.report import (
    Finding,
    ReportLike,
    RunSummary,
    TraceReport,
    as_run_report,
)
from agent_reliability_harness.render._text import (
    FORMAT_CHARS,
    escape_char,
    plural,
    score_alone,
)

__all__ = ["JunitWriter", "render_junit", "xml_safe"]

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
