"""The HTML report: golden pages, its structure read back with ``html.parser``, hostile traces,
size bounds, colours, and a real browser (headless Chromium) loading the pages.

Golden pages are rewritten with ``pytest tests/test_html_report.py --update-goldens``, which also
writes the screenshot docs/images/html-report.png (so does ``ARH_UPDATE_SCREENSHOT=1``). The
browser tests skip, saying why, when Chromium is not installed (Debian: ``apt-get install
chromium chromium-driver``; ``.ci/run`` does it) or ``ARH_CHROMIUM`` names no program.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import itertools
import json
import os
import re
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agent_reliability_harness import Finding, RunReport, Trace, TraceReport
from agent_reliability_harness._version import RULES_DOC_URL
from agent_reliability_harness.cli import main
from agent_reliability_harness.regression import compare_reports, evaluate_gate
from agent_reliability_harness.render import RENDERERS
from agent_reliability_harness.render import html as page
from agent_reliability_harness.render.html import (
    CompareTraces,
    ValidationTraces,
    html_trace_table,
    render_compare_html,
    render_html,
)

from conftest import ROOT, SAMPLES, Run, load_script

GOLDENS = ROOT / "tests" / "goldens" / "html"
HOSTILE = GOLDENS / "inputs" / "hostile"
SHARED_HOSTILE = ROOT / "tests" / "goldens" / "inputs" / "hostile"
REGRESSION = ROOT / "docs" / "examples" / "regression"
SCREENSHOT = ROOT / "docs" / "images" / "html-report.png"
DOC = ROOT / "docs" / "html-report.md"

# name -> (policy, inputs, options), validated from the repository root with relative paths; the
# hostile trace records a task and an outcome in its metadata, which the report then holds
VALIDATIONS = {
    "samples": ("samples/policy_trajectory.json", ["samples/traces"], []),
    "hostile": (
        "tests/goldens/html/inputs/hostile/policy.json",
        ["tests/goldens/html/inputs/hostile/traces"],
        ["--task-key", "/metadata/task", "--outcome-at", "/metadata/reward"],
    ),
    "hostile-shared": (
        "tests/goldens/inputs/hostile/policy.json",
        ["tests/goldens/inputs/hostile/traces"],
        [],
    ),
}
PAGES = (*VALIDATIONS, "compare", "compare-reports")
BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _produce(out: Path) -> dict[str, str]:
    """Write every page (and the JSON reports they are checked against) into ``out``."""
    old = Path.cwd()
    os.chdir(ROOT)
    try:
        for name, (policy, inputs, options) in VALIDATIONS.items():
            main(["validate", "--policy", policy, *inputs, *options, "--quiet",
                  "--html-out", str(out / f"{name}.html"),
                  "--json-out", str(out / f"{name}.json")])  # fmt: skip
        policy = "samples/policy_trajectory.json"
        base, cand = out / "baseline.json", out / "candidate.json"
        main(["validate", "--policy", policy, "docs/examples/regression/baseline-runs",
              "--quiet", "--json-out", str(base)])  # fmt: skip
        main(["validate", "--policy", policy, "docs/examples/regression/candidate-runs",
              "--quiet", "--json-out", str(cand)])  # fmt: skip
        main(["compare", "--baseline", str(base), "--policy", policy,
              "docs/examples/regression/candidate-runs", "--quiet",
              "--html-out", str(out / "compare.html")])  # fmt: skip
        main(["compare", "--baseline", str(base), "--candidate", str(cand), "--quiet",
              "--html-out", str(out / "compare-reports.html")])  # fmt: skip
    finally:
        os.chdir(old)
    return {name: (out / f"{name}.html").read_text(encoding="utf-8") for name in PAGES}


@pytest.fixture(scope="module")
def produced(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    out = tmp_path_factory.mktemp("html")
    return out, _produce(out)


@pytest.fixture(scope="module")
def pages(produced: tuple[Path, dict[str, str]]) -> dict[str, str]:
    return produced[1]


def _update(config: pytest.Config) -> bool:
    return bool(config.getoption("--update-goldens"))


@pytest.mark.parametrize("name", PAGES)
def test_goldens(name: str, pages: dict[str, str], request: pytest.FixtureRequest) -> None:
    golden = GOLDENS / f"{name}.html"
    data = pages[name].encode("utf-8")
    if _update(request.config):
        golden.write_bytes(data)
    assert golden.exists(), f"missing golden {golden}: run pytest {__file__} --update-goldens"
    assert data == golden.read_bytes(), f"{name}.html differs from its golden (--update-goldens)"


def test_pages_are_byte_deterministic(tmp_path: Path, pages: dict[str, str]) -> None:
    assert _produce(tmp_path) == pages


# -- reading a page back with html.parser --------------------------------------------------------

VOID = {"meta", "link", "br", "hr", "img", "input", "area", "base", "col", "embed", "source", "wbr"}


@dataclass(eq=False)
class Node:
    tag: str
    attrs: dict[str, str]
    parent: Node | None = None
    children: list[Node | str] = field(default_factory=list)

    def iter(self, tag: str | None = None) -> Iterator[Node]:
        for child in self.children:
            if isinstance(child, Node):
                if tag is None or child.tag == tag:
                    yield child
                yield from child.iter(tag)

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def ancestors(self) -> Iterator[Node]:
        node = self.parent
        while node is not None:
            yield node
            node = node.parent


class _Builder(HTMLParser):
    """A strict tree builder: every element must be closed, in order (our pages are XHTML-like)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.current = self.root
        self.problems: list[str] = []
        self.doctype: str | None = None

    def handle_decl(self, decl: str) -> None:
        self.doctype = decl

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = [name for name, _ in attrs]
        if len(names) != len(set(names)):
            self.problems.append(f"repeated attribute in <{tag}>")
        node = Node(tag, {k: v or "" for k, v in attrs}, self.current)
        self.current.children.append(node)
        if tag not in VOID:
            self.current = node

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.current.children.append(Node(tag, {k: v or "" for k, v in attrs}, self.current))

    def handle_endtag(self, tag: str) -> None:
        if tag != self.current.tag:
            self.problems.append(f"</{tag}> closes <{self.current.tag}>")
            return
        assert self.current.parent is not None
        self.current = self.current.parent

    def handle_data(self, data: str) -> None:
        self.current.children.append(data)

    def handle_comment(self, data: str) -> None:
        self.problems.append(f"comment {data!r}")

    def handle_pi(self, data: str) -> None:
        self.problems.append(f"processing instruction {data!r}")


def parse(text: str) -> Node:
    builder = _Builder()
    builder.feed(text)
    builder.close()
    assert not builder.problems, builder.problems[:5]
    assert builder.current is builder.root, f"<{builder.current.tag}> is never closed"
    assert builder.doctype == "DOCTYPE html"
    return builder.root


def sections(doc: Node) -> dict[str, Node]:
    """Trace sections by the trace id in their heading's <code>."""
    found = {}
    for section in doc.iter("section"):
        if "trace" in section.classes():
            heading = next(section.iter("h3"))
            found[next(heading.iter("code")).text()] = section
    return found


def _step_id(item: Node) -> str | None:
    """The step id of a timeline entry (the last <code> of its heading), None for other items."""
    if "step" not in item.classes():
        return None
    return list(next(item.iter("h5")).iter("code"))[-1].text()


def placed_findings(section: Node) -> dict[str | None, list[tuple[str, str | None]]]:
    """Where a trace section shows each finding: step id (None: above the timeline) ->
    [(rule id, mark)]."""
    placed: dict[str | None, list[tuple[str, str | None]]] = {}
    for item in section.iter("li"):
        if "finding" not in item.classes():
            continue
        step = next((a for a in item.ancestors() if "step" in a.classes()), None)
        step_id = None if step is None else _step_id(step)
        rule = next(next(item.iter("p")).iter("code")).text()
        mark = next((m for m in ("new", "resolved") if m in item.classes()), None)
        placed.setdefault(step_id, []).append((rule, mark))
    return placed


# -- structure of every page ---------------------------------------------------------------------


def _style_hash(doc: Node) -> str:
    (style,) = list(doc.iter("style"))
    digest = hashlib.sha256(style.text().encode("utf-8")).digest()
    return base64.b64encode(digest).decode("ascii")


@pytest.mark.parametrize("name", PAGES)
def test_page_is_self_contained_and_inert(name: str, pages: dict[str, str]) -> None:
    doc = parse(pages[name])
    (html,) = list(doc.iter("html"))
    assert html.attrs == {"lang": "en"}
    ids = [node.attrs["id"] for node in doc.iter() if "id" in node.attrs]
    assert len(ids) == len(set(ids)), "repeated ids"
    forbidden = {"script", "iframe", "frame", "object", "embed", "img", "form", "input",
                 "button", "base", "audio", "video", "source", "template", "textarea"}  # fmt: skip
    for node in doc.iter():
        assert node.tag not in forbidden, f"<{node.tag}> in the page"
        for attr in node.attrs:
            assert not attr.startswith("on"), f"event handler {attr} on <{node.tag}>"
            assert attr not in ("style", "src", "srcset", "action", "formaction", "xlink:href")
        if "href" in node.attrs:
            href = node.attrs["href"]
            if node.tag == "link":
                assert node.attrs == {"rel": "icon", "href": "data:,"}  # no favicon request
            elif href.startswith("#"):
                assert href[1:] in ids, f"link to a missing anchor {href}"
            else:
                parts = urlsplit(href)
                assert parts.scheme in ("http", "https"), href
                assert parts.netloc, href
                assert node.tag == "a"
                assert "noreferrer" in node.attrs["rel"].split()
    for svg in doc.iter("svg"):  # only the bars of the overview's chart
        assert svg.classes() == {"bar"}
        assert [c.tag for c in svg.iter()] == ["rect"]
    metas = {m.attrs.get("http-equiv", m.attrs.get("name")): m.attrs for m in doc.iter("meta")}
    assert set(metas) <= {None, "Content-Security-Policy", "referrer", "viewport", "color-scheme",
                          "generator"}  # fmt: skip
    csp = {
        part.split()[0]: part.split()[1:]
        for part in metas["Content-Security-Policy"]["content"].split(";")
    }
    # no script-src: default-src 'none' forbids every script; the only style is the hashed one
    assert csp == {
        "default-src": ["'none'"],
        "style-src": [f"'sha256-{_style_hash(doc)}'"],
        "img-src": ["data:"],
        "base-uri": ["'none'"],
        "form-action": ["'none'"],
    }
    assert metas["referrer"]["content"] == "no-referrer"
    assert not BIDI.search(pages[name]), "a bidi control character reached the page"


@pytest.mark.parametrize("name", PAGES)
def test_headings_tables_and_skip_link(name: str, pages: dict[str, str]) -> None:
    doc = parse(pages[name])
    levels = [int(n.tag[1]) for n in doc.iter() if re.fullmatch(r"h[1-6]", n.tag)]
    assert levels[0] == 1
    assert levels.count(1) == 1
    for before, after in itertools.pairwise(levels):
        assert after <= before + 1, f"heading level jumps from h{before} to h{after}"
    for table in doc.iter("table"):
        assert list(table.iter("caption")), "a table without a caption"
        headers = list(table.iter("th"))
        assert headers
        assert all(th.attrs.get("scope") in ("col", "row") for th in headers)
    body = next(doc.iter("body"))
    first = next(body.iter())
    assert first.tag == "a"
    assert first.attrs["href"] == "#main"
    assert "skip" in first.classes()
    assert next(doc.iter("main")).attrs["id"] == "main"


# -- what the pages show -------------------------------------------------------------------------


def _page_order(reports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in reports if not r["passed"]] + [r for r in reports if r["passed"]]


def test_every_finding_is_shown_at_its_step(produced: tuple[Path, dict[str, str]]) -> None:
    """Cross-check with the JSON report of the same run: each finding sits in the timeline entry of
    its step, or above the timeline when it has no step."""
    out, pages = produced
    for name in VALIDATIONS:
        report = json.loads((out / f"{name}.json").read_text(encoding="utf-8"))
        shown = list(sections(parse(pages[name])).values())
        traces = _page_order(report["reports"])
        assert len(shown) == len(traces)
        for trace, section in zip(traces, shown, strict=True):
            expected: dict[str | None, list[tuple[str, str | None]]] = {}
            for finding in trace["findings"]:
                expected.setdefault(finding["step_id"], []).append((finding["rule_id"], None))
            # the page shows a step id's unprintable characters (in these inputs: controls and
            # noncharacters) as escapes; test_shared_hostile_trace_and_input_errors checks one
            placed = {k if k is None else _printable(k): v for k, v in expected.items()}
            assert placed_findings(section) == placed, trace["trace_id"]


def _printable(text: str) -> str:
    def escape(char: str) -> str:
        code = ord(char)
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    return "".join(c if c.isprintable() else escape(c) for c in text)


def _details(section: Node, label: str) -> list[str]:
    """The texts given as ``label`` (Subject, Expected, ...) in the findings of a section."""
    found = []
    for item in section.iter("li"):
        if "finding" in item.classes():
            for dl in item.iter("dl"):
                cells = [c for c in dl.children if isinstance(c, Node)]
                found += [
                    dd.text()
                    for dt, dd in zip(cells[::2], cells[1::2], strict=True)
                    if dt.text() == label
                ]
    return found


def test_subjects_tasks_and_outcomes_are_shown(produced: tuple[Path, dict[str, str]]) -> None:
    """Cross-check with the JSON report of the same run: each finding's subject is in the
    finding's entry, a trace's task and outcome in its facts line, written as the JSON report
    writes them (the hostile page's trace records both, see VALIDATIONS)."""
    out, pages = produced
    subjects = labels = 0
    for name in VALIDATIONS:
        report = json.loads((out / f"{name}.json").read_text(encoding="utf-8"))
        shown = list(sections(parse(pages[name])).values())
        for trace, section in zip(_page_order(report["reports"]), shown, strict=True):
            expected = [_printable(f["subject"]) for f in trace["findings"] if "subject" in f]
            assert sorted(_details(section, "Subject")) == sorted(expected), trace["trace_id"]
            subjects += len(expected)
            meta = next(p for p in section.iter("p") if "meta" in p.classes()).text()
            for key in ("task", "outcome"):
                if key in trace:
                    value = trace[key] if key == "task" else json.dumps(trace[key])
                    assert f"{key} {_printable(value)} \u00b7 " in meta
                    labels += 1
    assert subjects >= 10
    assert labels == 2


def test_known_findings_of_the_samples(pages: dict[str, str]) -> None:
    # docs/reports.md shows the console report of these two traces: rebook-1002 repeats a booking
    # at s5b (ARH-FLW-003); rebook-1004 has ARH-GRD-002 about the whole trace, ARH-FLW-001 at s2
    # and ARH-GRD-001 at s7
    shown = sections(parse(pages["samples"]))
    assert placed_findings(shown["rebook-1002"]) == {"s5b": [("ARH-FLW-003", None)]}
    assert placed_findings(shown["rebook-1004"]) == {
        None: [("ARH-GRD-002", None)],
        "s2": [("ARH-FLW-001", None)],
        "s7": [("ARH-GRD-001", None)],
    }
    headings = [h.text() for h in shown["rebook-1004"].iter("h4")]
    assert headings == ["Findings about the whole trace", "Timeline (7 steps)"]  # s1..s7
    step = next(li for li in shown["rebook-1002"].iter("li") if _step_id(li) == "s5b")
    assert "duplicate side effect" in step.text()
    links = [a.attrs["href"] for a in step.iter("a")]
    assert links == [f"{RULES_DOC_URL}#arh-flw-003"]


def test_failing_traces_first_and_passing_ones_collapsed(
    produced: tuple[Path, dict[str, str]],
) -> None:
    out, pages = produced
    report = json.loads((out / "samples.json").read_text(encoding="utf-8"))["reports"]
    order = [r["trace_id"] for r in _page_order(report)]
    assert order != [r["trace_id"] for r in report]  # the samples are not in that order already
    doc = parse(pages["samples"])
    assert list(sections(doc)) == order
    for trace in report:
        section = sections(doc)[trace["trace_id"]]
        details = [d for d in section.iter("details") if d.parent is section]
        if trace["passed"]:
            assert len(details) == 1
            assert "open" not in details[0].attrs
            assert next(details[0].iter("summary")).text().startswith("PASS")
        else:
            assert not details
            assert next(section.iter("h3")).text().startswith("FAIL")


def test_hostile_trace_is_shown_as_text(pages: dict[str, str]) -> None:
    doc = parse(pages["hostile"])
    text = doc.text()
    # the payloads of tests/goldens/html/inputs/hostile/traces/trace.json, visible as text
    for payload in (
        "<script>window.__arh_pwned=1</script>",
        '"><img src=x onerror="window.__arh_pwned=1">',
        "<svg/onload=window.__arh_pwned=1>",
        '<iframe src="javascript:window.__arh_pwned=1"></iframe>',
        "<img src=x onerror=window.__arh_pwned=1>",
        '<meta http-equiv="refresh" content="0;url=https://evil.example/">',
        # its metadata, and the task read from it
        '</pre></dd></dl><img src=x onerror=\\"window.__arh_pwned=3\\">',
        "task <script>window.__arh_pwned=2</script> ",
    ):
        assert payload in text, payload
    # its first step is a user_message, named as docs/html-report.md's table of steps names it
    assert next(doc.iter("h5")).text().startswith("1. user message ")
    escapes = [n.text() for n in doc.iter("span") if "esc" in n.classes()]
    # the trace holds U+202E, U+202C, U+2066, U+2069, U+2067, U+200F, ESC and NUL
    for code in ("u202e", "u202c", "u2066", "u2069", "u2067", "u200f", "x1b", "x00"):
        assert "\\" + code in escapes, code
    # the metadata's U+202E, U+202C, U+2067 and U+2069 are shown as escapes; its NUL is written
    # as JSON writes it, \u0000, as text
    (section,) = sections(doc).values()
    metadata = next(dl for dl in section.iter("dl") if "facts" in dl.classes())
    shown = [n.text() for n in metadata.iter("span") if "esc" in n.classes()]
    assert shown == ["\\u202e", "\\u202c", "\\u2067", "\\u2069"]
    assert 'rtl\\u2069\\u0000"' in metadata.text()
    meta = next(p for p in section.iter("p") if "meta" in p.classes())
    task = "task <script>window.__arh_pwned=2</script> \\u202eksat\\u202c"
    assert f"task {task}" in meta.text()
    assert "outcome 0.5" in meta.text()
    # of the eight citations only one is an http(s) URL with a host and no space or odd
    # character (checked by reading the trace): it is the only link that is not a rule's docs
    links = [a.attrs["href"] for a in doc.iter("a") if not a.attrs["href"].startswith("#")]
    outside = [href for href in links if not href.startswith(RULES_DOC_URL)]
    assert outside == ['https://docs.example.test/page?a=1&b="q"#frag']
    assert text.count("(not a web link)") == 7


def test_shared_hostile_trace_and_input_errors(pages: dict[str, str]) -> None:
    doc = parse(pages["hostile-shared"])
    (trace_id,) = sections(doc)
    # its id holds ESC, U+202E and a lone surrogate, which UTF-8 cannot even encode
    assert trace_id == "evil|id <b>bold</b> @octocat #12 \\x1b[31mred\\u202e\\ud800"
    errors = next(h for h in doc.iter("h3") if h.text() == "Input errors")
    assert errors.attrs["id"] == "input-errors"
    assert "broken.json:2:1: invalid JSON" in doc.text()


def test_compare_page_marks_new_findings(pages: dict[str, str]) -> None:
    # docs/regression-testing.md: rebook-1001 went from pass to fail with a new ARH-FLW-003 at s5b;
    # rebook-1004 kept the same findings
    doc = parse(pages["compare"])
    shown = sections(doc)
    assert list(shown) == ["rebook-1001"]
    assert next(shown["rebook-1001"].iter("h3")).text().startswith("pass \u2192 fail")
    assert placed_findings(shown["rebook-1001"]) == {"s5b": [("ARH-FLW-003", "new")]}
    (unchanged,) = [t for t in doc.iter("table") if t.attrs.get("id") == "same"]
    assert [next(r.iter("th")).text() for r in unchanged.iter("tr")][1:] == ["rebook-1004"]
    assert next(doc.iter("h1")).text() == "arh regression gate: FAIL"
    reasons = [li.text() for li in doc.iter("li") if li.parent and "reasons" in li.parent.classes()]
    assert reasons == [
        "1 new error finding: rebook-1001:ARH-FLW-003",
        "trace 'rebook-1001' regressed from pass to fail",
    ]


def test_compare_of_two_reports_lists_findings_without_timeline(pages: dict[str, str]) -> None:
    doc = parse(pages["compare-reports"])
    section = sections(doc)["rebook-1001"]
    assert not [ol for ol in section.iter("ol") if "timeline" in ol.classes()]
    assert "The steps are not shown" in section.text()
    assert placed_findings(section) == {None: [("ARH-FLW-003", "new")]}
    assert "at step s5b" in section.text()


def _run(paths: list[Path]) -> tuple[RunReport, dict[str, Trace]]:
    from agent_reliability_harness.runner import load_policy, run_validation

    keeper: dict[str, Trace] = {}
    run = run_validation(
        load_policy(str(SAMPLES / "policy_trajectory.json")),
        [str(p) for p in paths],
        on_trace=lambda trace, _report: keeper.__setitem__(trace.trace_id, trace),
    )
    return run, keeper


def test_resolved_findings_are_placed_at_their_step() -> None:
    # the other way round: the duplicate booking at s5b is resolved, and the baseline trace has no
    # step s5b, so the finding is shown above the timeline and says so
    old, _ = _run([REGRESSION / "candidate-runs"])
    new, traces = _run([REGRESSION / "baseline-runs"])
    result = compare_reports(old, new)
    doc = parse(render_compare_html(result, evaluate_gate(result), traces))
    section = sections(doc)["rebook-1001"]
    assert placed_findings(section) == {None: [("ARH-FLW-003", "resolved")]}
    assert "at step s5b (no such step in the trace)" in section.text()
    # a resolved finding whose step still exists is shown in that step's entry
    gone = Finding("ARH-FLW-001", "error", "flow", "tool failed", step_id="s2")
    base = replace(new.reports[0], findings=(gone,), passed=False)
    result = compare_reports(RunReport((base,)), RunReport(new.reports[:1]))
    doc = parse(render_compare_html(result, evaluate_gate(result), traces))
    assert placed_findings(sections(doc)["rebook-1001"]) == {"s2": [("ARH-FLW-001", "resolved")]}


ADAPTED = ROOT / "docs" / "examples" / "adapters"


def _table(node: Node, css: str) -> list[list[str]]:
    """The body rows of the first table with this class, as cell texts."""
    table = next(t for t in node.iter("table") if css in t.classes())
    body = next(table.iter("tbody"))
    return [
        [cell.text() for cell in row.children if isinstance(cell, Node)] for row in body.iter("tr")
    ]


def test_checks_not_applicable_are_shown() -> None:
    # docs/examples/adapters/policy_budgets.json sets max_total_latency_ms (ARH-BUD-002),
    # max_total_cost_usd (ARH-BUD-003), max_total_tokens (ARH-BUD-004) and
    # require_retry_on_error (ARH-FLW-001); an OpenAI Responses document records token usage but
    # no latency, no cost and no tool status (TRACE-SPEC.md, fidelity), so three of them cannot
    # apply: two budget checks and one flow check
    from agent_reliability_harness.runner import load_policy, run_validation

    traces: dict[str, Trace] = {}
    run = run_validation(
        load_policy(str(ADAPTED / "policy_budgets.json")),
        [str(ADAPTED / "formats" / "responses_weather.json")],
        on_trace=lambda trace, _report: traces.__setitem__(trace.trace_id, trace),
    )
    why = "not applicable: the trace's source provides no "
    expected = [
        ["ARH-BUD-002", "budgets.max_total_latency_ms", why + "latency_ms"],
        ["ARH-BUD-003", "budgets.max_total_cost_usd", why + "cost_usd"],
        ["ARH-FLW-001", "error_handling.require_retry_on_error", why + "tool_status"],
    ]
    doc = parse(render_html(run, traces))
    section = sections(doc)["responses_weather"]
    assert _table(section, "not-applicable") == expected
    # the score table counts them per category, so a budget score of 100 is not taken for a pass
    score = next(t for t in section.iter("table") if "score" in t.classes())
    header = [th.text() for th in next(score.iter("thead")).iter("th")]
    unchecked = next(r for r in _table(section, "score") if r[0] == "Checks not applicable")
    counts = dict(zip(header, unchecked[1:], strict=True))
    assert (counts["budget"], counts["flow"], counts["schema"]) == ("2", "1", "0")
    # the overview lists them for the whole run, as the Markdown report does
    overview = next(s for s in doc.iter("section") if s.attrs.get("aria-labelledby") == "overview")
    rows = _table(overview, "not-applicable")
    assert [row[:4] for row in rows] == [
        ["ARH-BUD-002", "budgets.max_total_latency_ms", "latency_ms", "1"],
        ["ARH-BUD-003", "budgets.max_total_cost_usd", "cost_usd", "1"],
        ["ARH-FLW-001", "error_handling.require_retry_on_error", "tool_status", "1"],
    ]
    # and a comparison page shows them in the trace's section too
    (report,) = run.reports
    result = compare_reports(RunReport((replace(report, findings=()),)), run)
    doc = parse(render_compare_html(result, evaluate_gate(result), traces))
    assert _table(sections(doc)["responses_weather"], "not-applicable") == expected


def test_a_removed_trace_says_it_is_not_in_the_candidate() -> None:
    # the candidate run is rebook_1004.json alone: rebook-1001 of the baseline is removed, and the
    # page was made with the candidate's traces, so "made from a JSON report" would be false
    old, _ = _run([REGRESSION / "baseline-runs"])
    new, traces = _run([REGRESSION / "candidate-runs" / "rebook_1004.json"])
    result = compare_reports(old, new)
    section = sections(parse(render_compare_html(result, evaluate_gate(result), traces)))
    text = section["rebook-1001"].text()
    assert "The steps are not shown: the trace is not in the candidate run" in text
    assert "made from a JSON report" not in text


# -- a trace that fails on its score -------------------------------------------------------------

DOCS_POLICY = ROOT / "docs" / "examples" / "policy_docs_assistant.json"
UNCITED = ROOT / "docs" / "examples" / "traces" / "uncited_answer.json"


def _why(section: Node) -> str:
    """What a trace section says about the score failing it ("" when nothing)."""
    return "\n".join(p.text() for p in section.iter("p") if "why" in p.classes())


def test_a_trace_failing_on_its_score_says_so(arh: Callable[..., Run], tmp_path: Path) -> None:
    # POLICY-SPEC.md, "Warnings can lower a score": uncited_answer.json has one warning
    # (ARH-GRD-001) and no error, and scores (3000 + 0) / 45 = 66.666..., below the default 70
    target, report = tmp_path / "r.html", tmp_path / "r.json"
    arh("validate", "--policy", DOCS_POLICY, UNCITED, "--html-out", target, "--json-out", report,
        "--quiet")  # fmt: skip
    (data,) = json.loads(report.read_text(encoding="utf-8"))["reports"]
    assert (data["passed"], data["score"]) == (False, 66.67)
    assert [f["severity"] for f in data["findings"]] == ["warning"]
    assert _why(sections(parse(target.read_text(encoding="utf-8")))["docs-0002"]) == (
        "Fails on its score alone: 66.67 is below the pass threshold of 70 (--fail-under); no "
        "error finding fails it."
    )

    def uncited_why(fail_under: str) -> str:
        arh("validate", "--policy", DOCS_POLICY, UNCITED, "--html-out", target, "--quiet",
            "--fail-under", fail_under)  # fmt: skip
        return _why(sections(parse(target.read_text(encoding="utf-8")))["docs-0002"])

    # the verdict compares the unrounded score: 66.666... fails 66.67, and the page shows the
    # digit that says so instead of "66.67 is below 66.67"; it passes 66.66
    assert uncited_why("66.67") == (
        "Fails on its score alone: 66.667 is below the pass threshold of 66.67 (--fail-under); "
        "no error finding fails it."
    )
    assert uncited_why("66.66") == ""
    # with error findings too: rebook-1004 has three (docs/reports.md) and scores 88.71
    arh("validate", "--policy", SAMPLES / "policy_trajectory.json",
        SAMPLES / "traces" / "rebook_ignored_tool_error.json", "--html-out", target, "--quiet",
        "--fail-under", "90", "--json-out", report)  # fmt: skip
    (data,) = json.loads(report.read_text(encoding="utf-8"))["reports"]
    assert data["score"] == 88.71
    assert [f["severity"] for f in data["findings"]] == ["error"] * 3
    section = sections(parse(target.read_text(encoding="utf-8")))["rebook-1004"]
    assert _why(section) == (
        "Fails on its score and on its 3 error findings: 88.71 is below the pass threshold of 90 "
        "(--fail-under)."
    )


def test_samples_say_nothing_of_a_score_that_does_not_fail_them(pages: dict[str, str]) -> None:
    # every failing sample has an error finding and scores above 70 (tests/goldens/samples)
    assert all(_why(section) == "" for section in sections(parse(pages["samples"])).values())


def test_a_comparison_says_a_trace_fails_on_its_score(
    arh: Callable[..., Run], tmp_path: Path
) -> None:
    base, cand, target = tmp_path / "b.json", tmp_path / "c.json", tmp_path / "c.html"
    arh("validate", "--policy", DOCS_POLICY, UNCITED, "--json-out", base, "--quiet",
        "--fail-under", "60")  # fmt: skip
    arh("validate", "--policy", DOCS_POLICY, UNCITED, "--json-out", cand, "--quiet")
    # two reports: the candidate's threshold is not in its report, but with no error finding
    # the score is what failed it
    arh("compare", "--baseline", base, "--candidate", cand, "--html-out", target, "--quiet")
    section = sections(parse(target.read_text(encoding="utf-8")))["docs-0002"]
    assert next(section.iter("h3")).text().startswith("pass \u2192 fail")
    assert _why(section) == (
        "Fails on its score alone: 66.67 is below the pass threshold (--fail-under) of the run "
        "that checked it, as no error finding fails it; its report does not record the "
        "threshold."
    )
    # the candidate validated now: its threshold is known
    arh("compare", "--baseline", base, "--policy", DOCS_POLICY, UNCITED, "--html-out", target,
        "--quiet")  # fmt: skip
    section = sections(parse(target.read_text(encoding="utf-8")))["docs-0002"]
    assert _why(section) == (
        "Fails on its score alone: 66.67 is below the pass threshold of 70 (--fail-under); no "
        "error finding fails it."
    )
    # a removed trace is the baseline's: checked with a threshold that is not known
    failing = RunReport.from_dict(json.loads(cand.read_text(encoding="utf-8")))
    result = compare_reports(failing, RunReport(()))
    page_of = render_compare_html(result, evaluate_gate(result), fail_under=70.0)
    assert "of the run that checked it" in _why(sections(parse(page_of))["docs-0002"])


# -- the statistics of statistical gates on a comparison page ---------------------------------

STATISTICS = ROOT / "docs" / "examples" / "statistics"
SIGNIFICANT = "pass rate drop significant at 0.05"


def _statistics(doc: Node) -> Node:
    return next(s for s in doc.iter("section") if s.attrs.get("aria-labelledby") == "statistics")


def _markdown_table(lines: list[str], header: str) -> list[list[str]]:
    """The body rows of the Markdown table whose header starts with ``header``, unescaped: code
    spans' backticks and the backslashes before punctuation removed."""
    start = next(i for i, line in enumerate(lines) if line.startswith(header)) + 2
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        cells = re.split(r"(?<!\\)\|", line.strip()[1:-1])
        rows.append([re.sub(r"\\(.)", r"\1", c.strip().strip("`")) for c in cells])
    return rows


def test_compare_page_shows_the_statistics(arh: Callable[..., Run], tmp_path: Path) -> None:
    # docs/statistics.md sections 5 and 6: the refund agent's candidate against its baseline, 8
    # tasks run 5 times each. By hand: pass@1 38/40 = 0.950 -> 22/40 = 0.550 (Wilson intervals
    # 0.835-0.986 and 0.398-0.693), pass^5 0.750 -> 0.250 (6 of 8 tasks -> 2 of 8 pass all five
    # runs), flaky tasks 2 -> 6, six tasks down and none up, so p = 2 / 2^6 = 0.03125; per task
    # pass^5 drops from 1 to 0 for four tasks (refund-01, -02, -04, -05) and rises for none, so
    # its p = 2 / 2^4 = 0.125 (the numbers docs/statistics.md shows)
    base, cand = tmp_path / "baseline.json", tmp_path / "candidate.json"
    for side, target in (("baseline", base), ("candidate", cand)):
        arh("validate", "--policy", STATISTICS / "policy.json", STATISTICS / side,
            "--outcome-at", "/metadata/reward", "--json-out", target, "--quiet")  # fmt: skip
    out = {ext: tmp_path / f"compare.{ext}" for ext in ("json", "md", "html")}
    gates = STATISTICS / "arh.toml"
    run = arh("compare", "--baseline", base, "--candidate", cand, "--gates", gates,
              "--gate", SIGNIFICANT, "--json-out", out["json"], "--md-out", out["md"],
              "--html-out", out["html"], "--quiet")  # fmt: skip
    assert run.status == 1
    doc = parse(out["html"].read_text(encoding="utf-8"))
    assert '<a href="#statistics">Statistics</a>' in out["html"].read_text(encoding="utf-8")
    shown = _statistics(doc)
    assert next(shown.iter("p")).text() == (
        "Outcome: verdict. Baseline \u2192 candidate; p-values of exact two-sided paired tests "
        "over the tasks both sides ran."
    )
    workflows = [
        "refunds", "8", "5", "0.950 (0.835\u20130.986) \u2192 0.550 (0.398\u20130.693)",
        "0.750 \u2192 0.250", "2 \u2192 6", "6 / 0", "0.03125 / 0.125", "FAIL",
    ]  # fmt: skip
    assert _table(shown, "stat-workflows") == [workflows]
    # the checks as the JSON comparison records them
    statistics = json.loads(out["json"].read_text(encoding="utf-8"))["statistics"]
    checks = [
        [c["workflow"], f"{c['key']} {c['threshold']}", c["origin"], c["observed"] or "-",
         c["status"]]
        for c in statistics["gate"]["checks"]
    ]  # fmt: skip
    assert [row[1:] for row in checks] == [
        ["min_pass_rate 0.9", f"{gates}:8", "0.550", "fail"],
        ["max_flaky_tasks 2", f"{gates}:9", "6", "fail"],
        ["significance 0.05", f"{gates}:5", "p = 0.03125", "fail"],
        ["significance 0.05", f"--gate '{SIGNIFICANT}'", "p = 0.03125", "fail"],
    ]
    assert _table(shown, "stat-checks") == checks
    # the same tables as the Markdown comparison, cell for cell
    lines = out["md"].read_text(encoding="utf-8").splitlines()
    assert _markdown_table(lines, "| Workflow | Tasks |") == [workflows]
    assert _markdown_table(lines, "| Workflow | Threshold |") == checks
    # what failed is worded as in the other formats: the gate's reasons hold the statistical ones
    reasons = [li.text() for li in doc.iter("li") if li.parent and "reasons" in li.parent.classes()]
    assert reasons == statistics["gate"]["reasons"]
    assert reasons[0] == (
        "workflow 'refunds': pass rate 0.550 (22 of 40 runs) is below min_pass_rate 0.9 "
        f"[{gates}:8]"
    )


def test_compare_page_shows_insufficient_and_allowed_statistics(
    arh: Callable[..., Run], tmp_path: Path
) -> None:
    # docs/statistics.md, "Insufficient data fails closed": 4 tasks run once, all regressed; the
    # smallest p-value 4 paired tasks can give is 2 / 2^4 = 0.125 > 0.05
    base, cand = tmp_path / "baseline.json", tmp_path / "candidate.json"
    for side, target in (("baseline", base), ("candidate", cand)):
        arh("validate", "--policy", STATISTICS / "policy.json",
            STATISTICS / "pilot" / f"{side}.jsonl", "--json-out", target, "--quiet")  # fmt: skip
    page_of = tmp_path / "compare.html"
    why = (
        "workflow 'refunds': insufficient data for significance 0.05: 4 tasks ran on both sides, "
        "and the smallest p-value that many paired tasks can give is 0.125 "
        f"[--gate '{SIGNIFICANT}']"
    )
    arh("compare", "--baseline", base, "--candidate", cand, "--gate", SIGNIFICANT,
        "--html-out", page_of, "--quiet")  # fmt: skip
    doc = parse(page_of.read_text(encoding="utf-8"))
    shown = _statistics(doc)
    assert _table(shown, "stat-workflows")[0][-1] == "insufficient data"
    assert _table(shown, "stat-checks") == [
        ["refunds", "significance 0.05", f"--gate '{SIGNIFICANT}'", "p = 0.125", "insufficient"]
    ]
    assert why in [li.text() for li in doc.iter("li")]
    arh("compare", "--baseline", base, "--candidate", cand, "--gate", SIGNIFICANT,
        "--allow-insufficient-data", "--html-out", page_of, "--quiet")  # fmt: skip
    doc = parse(page_of.read_text(encoding="utf-8"))
    shown = _statistics(doc)
    assert _table(shown, "stat-workflows")[0][-1] == "PASS"
    assert _table(shown, "stat-checks")[0][-1] == "allowed"
    allowed = next(ul for ul in shown.iter("ul") if "allowed" in ul.classes())
    assert [li.text() for li in allowed.iter("li")] == [f"allowed: {why}"]


def test_statistics_without_runs_and_with_hostile_names() -> None:
    from agent_reliability_harness.regression.stat_gates import GatePlan, parse_gate_expression
    from agent_reliability_harness.regression.stat_report import compare_stats

    plan = GatePlan(extra=(parse_gate_expression("pass rate >= 0.9"),))
    empty = RunReport(())
    stats = compare_stats([("b.json", empty)], [("c.json", empty)], "verdict", plan)
    result = compare_reports(empty, empty)
    doc = parse(render_compare_html(result, evaluate_gate(result), statistics=stats))
    shown = _statistics(doc)
    assert next(shown.iter("p")).text() == "Outcome: verdict. No runs on either side."
    assert not [t for t in shown.iter("table") if "stat-workflows" in t.classes()]
    # the thresholds of every workflow fail closed with no run at all, under no workflow's name
    assert _table(shown, "stat-checks") == [
        ["all workflows", "min_pass_rate 0.9", "--gate 'pass rate >= 0.9'", "-", "insufficient"]
    ]
    # a workflow's name comes from the traces: escaped, its bidi override made visible
    hostile = "<b>refunds</b>\u202e"
    reports = tuple(
        replace(_report(f"t-run{i}", passed=True), workflow=hostile) for i in range(1, 3)
    )
    run = RunReport(reports)
    stats = compare_stats([("b.json", run)], [("c.json", run)], "verdict", plan)
    result = compare_reports(run, run)
    text = render_compare_html(result, evaluate_gate(result), statistics=stats)
    shown = _statistics(parse(text))
    assert not list(shown.iter("b"))
    assert _table(shown, "stat-workflows")[0][0] == "<b>refunds</b>\\u202e"
    assert _table(shown, "stat-checks")[0][0] == "<b>refunds</b>\\u202e"
    assert not BIDI.search(text)


def test_statistics_tables_are_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_reliability_harness.regression.stat_gates import GatePlan, parse_gate_expression
    from agent_reliability_harness.regression.stat_report import compare_stats

    monkeypatch.setattr(page, "_STAT_ROWS", 1)
    plan = GatePlan(extra=(parse_gate_expression("pass rate >= 0.9"),))
    run = RunReport(tuple(replace(_report(f"t{i}", passed=True), workflow=f"w{i}") for i in (1, 2)))
    stats = compare_stats([("b.json", run)], [("c.json", run)], "verdict", plan)
    result = compare_reports(run, run)
    shown = _statistics(parse(render_compare_html(result, evaluate_gate(result), statistics=stats)))
    assert [row[0] for row in _table(shown, "stat-workflows")] == ["w1"]
    assert [row[0] for row in _table(shown, "stat-checks")] == ["w1"]
    notes = [p.text() for p in shown.iter("p") if "note" in p.classes()]
    assert notes == [
        "1 more workflow not listed: see the JSON comparison (--json-out).",
        "1 more gate check not listed: see the JSON comparison (--json-out).",
    ]


def test_gate_reasons_and_warnings_are_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    # one reason per regressed trace: thousands of them must not take the page past its bound
    from agent_reliability_harness.errors import InputError

    monkeypatch.setattr(page, "_GATE_ITEMS", 2)
    before = RunReport(
        tuple(_report(f"t{i}", passed=True) for i in range(5)),
        input_errors=(InputError("x"),), harness_version="0.3.0",
    )  # fmt: skip
    after = RunReport(
        tuple(_report(f"t{i}", passed=False) for i in range(5)), harness_version="0.4.0"
    )
    result = compare_reports(before, after)
    gate = evaluate_gate(result)
    assert (len(gate.reasons), len(result.warnings)) == (5, 2)
    doc = parse(render_compare_html(result, gate))
    reasons = next(u for u in doc.iter("ul") if "reasons" in u.classes())
    assert len(list(reasons.iter("li"))) == 2
    notes = [p.text() for p in doc.iter("p") if "note" in p.classes()]
    assert "3 more reasons not listed: see the JSON comparison (--json-out)." in notes
    # two warnings (arh versions, the baseline's input error): as many as the cap, no note
    warnings = next(u for u in doc.iter("ul") if "warnings" in u.classes())
    assert len(list(warnings.iter("li"))) == 2
    assert not [n for n in notes if "more warning" in n]


def test_statistics_rows_are_bounded() -> None:
    # as the other tables' rows (test_a_table_row_is_bounded), at most about 1,600 characters
    # whatever a workflow is named; the gate file names it too, as its threshold
    from fractions import Fraction

    from agent_reliability_harness.regression.stat_gates import GateFile, GatePlan, Setting
    from agent_reliability_harness.regression.stat_report import compare_stats

    ugly = '"\u202e' * 1_000
    file = GateFile("g.toml", None, (), ((ugly * 2, "g.toml:1", ()),))
    origin = "--gate '" + ugly + "'"
    plan = GatePlan(file, (Setting("min_pass_rate", Fraction(9, 10), ugly, origin),))
    run = RunReport((replace(_report("t", passed=True), workflow=ugly),))
    stats = compare_stats([("b.json", run)], [("c.json", run)], "verdict", plan)
    result = compare_reports(run, run)
    text = render_compare_html(result, evaluate_gate(result), statistics=stats)
    shown = _statistics(parse(text))
    assert len(_table(shown, "stat-workflows")) == 1
    assert len(_table(shown, "stat-checks")) == 2  # the threshold, and the workflow not run
    start = text.index('<section aria-labelledby="statistics">')
    section = text[start : text.index("</section>", start)]
    rows = re.findall(r"<tr><th scope=\"row\">.*?</tr>", section)
    assert len(rows) == 3
    assert all(len(row) <= 1_600 for row in rows), [len(row) for row in rows]


# -- escaping, clipping and links ----------------------------------------------------------------


class _Fragment(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[tuple[str, str]] = []  # ("text" | "esc", content)
        self.tags: list[str] = []
        self._in_esc = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        assert (tag, attrs) == ("span", [("class", "esc")])
        self._in_esc = True

    def handle_endtag(self, tag: str) -> None:
        assert tag == "span"
        self._in_esc = False

    def handle_data(self, data: str) -> None:
        self.parts.append(("esc" if self._in_esc else "text", data))


def _decode(fragment: str) -> tuple[str, str]:
    """The text a fragment of _text's HTML stands for, and the text a reader sees outside the
    escapes."""
    parser = _Fragment()
    parser.feed(fragment)
    parser.close()
    original, visible = [], []
    for kind, data in parser.parts:
        if kind == "text":
            original.append(data)
            visible.append(data)
        else:
            original.append(data.encode("ascii").decode("unicode_escape"))
    return "".join(original), "".join(visible)


@settings(max_examples=300, deadline=None)
@given(st.text(), st.booleans())
@example("x\u200by\u00ad\U000e0041", False)
def test_text_is_lossless_and_inert(value: str, block: bool) -> None:
    out = page._text(value, block=block)
    original, visible = _decode(out)
    assert original == value
    assert "<" not in visible or "<" in value  # markup only from the value, as text
    assert not BIDI.search(out)
    # no invisible format character either (U+200B, U+00AD, tags): each is shown as an escape
    assert not any(unicodedata.category(char) == "Cf" for char in out)
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]", out)
    if not block:
        assert "\n" not in out
        assert "\t" not in out
    out.encode("utf-8")  # never a lone surrogate


@settings(max_examples=300, deadline=None)
@given(st.text(), st.integers(min_value=0, max_value=60), st.booleans())
def test_fit_keeps_the_longest_start_that_fits(value: str, limit: int, block: bool) -> None:
    out, left = page._fit(value, limit, block=block)
    shown = len(value) - left
    assert len(out) <= limit
    assert out == page._text(value[:shown], block=block)
    if left:
        assert len(page._text(value[: shown + 1], block=block)) > limit


@pytest.mark.parametrize(
    ("url", "linked"),
    [
        ("https://example.com/a?b=1&c=2", True),
        ("HTTP://EXAMPLE.COM", True),
        ("http://[::1]:8080/x", True),
        ("javascript:alert(1)", False),
        ("JaVaScRiPt:alert(1)", False),
        ("java\tscript:alert(1)", False),
        ("data:text/html,<script>alert(1)</script>", False),
        ("vbscript:msgbox(1)", False),
        ("file:///etc/passwd", False),
        ("//example.com/x", False),  # no scheme: would become file:// on a local page
        ("https:example.com", False),
        (" https://example.com", False),
        ("https://example.com/\u202egpj.exe", False),
        ("https://exa mple.com", False),
        ("https://good.example\\@evil.example/", False),  # a browser goes to good.example
        ("http://[::1", False),  # urlsplit raises ValueError
    ],
)
def test_only_http_urls_become_links(url: str, linked: bool) -> None:
    doc = parse("<!DOCTYPE html><p>" + page._link(url) + "</p>")
    anchors = list(doc.iter("a"))
    if linked:
        assert [a.attrs["href"] for a in anchors] == [url]
        assert anchors[0].attrs["rel"] == "noreferrer nofollow"
    else:
        assert anchors == []
        assert "(not a web link)" in doc.text()


# -- size bounds ---------------------------------------------------------------------------------


def _report(trace_id: str, passed: bool, findings: tuple[Finding, ...] = ()) -> TraceReport:
    return TraceReport(
        trace_id, "agent", "wf", "p", 100.0 if passed else 10.0, passed, 0.0, 0.0, None, findings
    )


def _trace(trace_id: str, steps: list[dict[str, Any]]) -> Trace:
    return Trace.from_dict(
        {
            "schema_version": "1",
            "trace_id": trace_id,
            "agent_name": "a",
            "workflow": "w",
            "steps": steps,
        }
    )


def test_large_runs_expand_50_failing_and_20_passing_traces() -> None:
    # interleaved: t0 fails, t1 passes, ... so the page has to reorder them
    reports = [_report(f"t{i:03d}", passed=i % 2 == 1) for i in range(130)]
    doc = parse(render_html(RunReport(tuple(reports))))
    shown = list(sections(doc))
    assert shown == [f"t{i:03d}" for i in range(0, 100, 2)] + [f"t{i:03d}" for i in range(1, 41, 2)]
    assert _table_rows(doc, "more-failing") == [f"t{i:03d}" for i in range(100, 130, 2)]
    assert _table_rows(doc, "more-passing") == [f"t{i:03d}" for i in range(41, 130, 2)]


def _table_rows(doc: Node, table_id: str) -> list[str]:
    """The row headers (trace ids) of the table with this id."""
    table = next(t for t in doc.iter("table") if t.attrs.get("id") == table_id)
    return [next(row.iter("th")).text() for row in table.iter("tr")][1:]


def test_the_keeper_holds_only_the_traces_the_page_expands() -> None:
    keeper = ValidationTraces()
    for i in range(130):
        keeper(_trace(f"t{i:03d}", []), _report(f"t{i:03d}", passed=i % 2 == 1))
    assert sorted(keeper.traces) == sorted(
        [f"t{i:03d}" for i in range(0, 100, 2)] + [f"t{i:03d}" for i in range(1, 41, 2)]
    )


def test_compare_keeper_prefers_regressions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(page, "EXPANDED_CHANGED", 2)
    error = Finding("ARH-FLW-001", "error", "flow", "m", step_id="s1")
    baseline = RunReport(tuple(_report(trace_id, True) for trace_id in "abcd"))
    keeper = CompareTraces(baseline)
    candidates = [
        _report("a", True, (Finding("ARH-GRD-001", "warning", "grounding", "m"),)),  # changed
        _report("b", True),  # unchanged
        _report("c", False, (error,)),  # regression
        _report("d", True, (Finding("ARH-GRD-001", "warning", "grounding", "m"),)),  # changed
        _report("e", False, (error,)),  # added, failing: a regression
    ]
    for report in candidates:
        keeper(_trace(report.trace_id, []), report)
    assert sorted(keeper.traces) == ["c", "e"]
    result = compare_reports(baseline, RunReport(tuple(candidates)))
    doc = parse(render_compare_html(result, evaluate_gate(result), keeper.traces))
    assert list(sections(doc)) == ["c", "e"]
    assert _table_rows(doc, "more-changed") == ["a", "d"]


def test_a_score_drop_beyond_the_limit_is_a_regression(monkeypatch: pytest.MonkeyPatch) -> None:
    # docs/regression-testing.md: with --max-score-drop 0.3 a drop of more than 0.3 points fails
    # the `regressions` gate. z drops 1 point (a regression, though it fails in both runs), m 0.25
    # (within the limit); a goes from fail to pass. Regressions first (z), then the other changes
    # for the worse (m's drop), then the rest (a): z, m, a
    def pair(trace_id: str, before: float, after: float, passed: bool) -> tuple[TraceReport, ...]:
        old = replace(_report(trace_id, False), score=before)
        return old, replace(_report(trace_id, passed), score=after)

    runs = [
        pair("a", 50.0, 100.0, True),
        pair("m", 95.0, 94.75, False),
        pair("z", 95.0, 94.0, False),
    ]
    baseline = RunReport(tuple(old for old, _ in runs))
    candidate = RunReport(tuple(new for _, new in runs))
    result = compare_reports(baseline, candidate)
    gate = evaluate_gate(result, "regressions", 0.3)
    assert gate.reasons == ("trace 'z' score dropped 1.00 points (limit 0.30)",)
    doc = parse(render_compare_html(result, gate, {}))
    shown = sections(doc)
    assert list(shown) == ["z", "m", "a"]
    badges = {t: next(next(s.iter("h3")).iter("span")) for t, s in shown.items()}
    assert (badges["z"].text(), badges["z"].classes()) == ("score dropped", {"badge", "fail"})
    assert (badges["m"].text(), badges["m"].classes()) == ("score changed", {"badge", "info"})
    assert "a drop of more than 0.30, which fails the gate" in shown["z"].text()
    # the keeper of the command line ranks it the same way
    monkeypatch.setattr(page, "EXPANDED_CHANGED", 1)
    keeper = CompareTraces(baseline, max_score_drop=0.3)
    for report in candidate.reports:
        keeper(_trace(report.trace_id, []), report)
    assert list(keeper.traces) == ["z"]


def test_changed_traces_go_regressions_first_then_worse_then_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # docs/html-report.md: regressions (what fails the regressions gate) first, then the other
    # changes for the worse, then the other changes, each by trace id; unchanged traces last.
    # The names run against that order, so that an order by trace id alone fails.
    error = Finding("ARH-FLW-001", "error", "flow", "m", step_id="s1")
    warning = Finding("ARH-GRD-001", "warning", "grounding", "m", step_id="s2")

    def scored(trace_id: str, score: float, passed: bool, *findings: Finding) -> TraceReport:
        return replace(_report(trace_id, passed, findings), score=score)

    pairs = [
        (scored("a-fixed", 10.0, False, error), scored("a-fixed", 100.0, True)),  # 2
        (scored("b-resolved", 90.0, True, warning), scored("b-resolved", 100.0, True)),  # 2
        (None, scored("c-added", 100.0, True)),  # 2
        (scored("d-removed", 100.0, True), None),  # 2
        (scored("e-lower", 100.0, True), scored("e-lower", 99.0, True)),  # 1: within the limit
        (scored("f-warned", 100.0, True), scored("f-warned", 100.0, True, warning)),  # 1
        (scored("g-erred", 10.0, False), scored("g-erred", 10.0, False, error)),  # 0
        (scored("h-broke", 100.0, True), scored("h-broke", 10.0, False, error)),  # 0
        (None, scored("i-added", 10.0, False, error)),  # 0
        (scored("j-same", 100.0, True), scored("j-same", 100.0, True)),  # unchanged
        (scored("k-dropped", 100.0, True), scored("k-dropped", 90.0, True)),  # 0: beyond it
    ]
    baseline = RunReport(tuple(old for old, _ in pairs if old is not None))
    candidate = RunReport(tuple(new for _, new in pairs if new is not None))
    result = compare_reports(baseline, candidate)
    gate = evaluate_gate(result, "regressions", 5.0)
    order = ["g-erred", "h-broke", "i-added", "k-dropped", "e-lower", "f-warned",
             "a-fixed", "b-resolved", "c-added", "d-removed"]  # fmt: skip
    doc = parse(render_compare_html(result, gate, {}))
    assert list(sections(doc)) == order
    assert _table_rows(doc, "same") == ["j-same"]
    # cut to the first five: the others in the same order in the table after them, and the
    # command line's keeper keeps the traces of those five
    monkeypatch.setattr(page, "EXPANDED_CHANGED", 5)
    doc = parse(render_compare_html(result, gate, {}))
    assert list(sections(doc)) == order[:5]
    assert _table_rows(doc, "more-changed") == order[5:]
    keeper = CompareTraces(baseline, max_score_drop=5.0)
    for report in candidate.reports:
        keeper(_trace(report.trace_id, []), report)
    assert sorted(keeper.traces) == sorted(set(order[:5]) - {"d-removed"})


def test_table_rows_are_capped() -> None:
    reports = [_report(f"r{i}", True) for i in range(5)]
    doc = parse("<!DOCTYPE html>" + html_trace_table(reports, "caption", "x", limit=3))
    assert len(list(doc.iter("tr"))) == 1 + 3
    assert "2 more traces not listed" in doc.text()


def test_overview_tables_are_cut_at_200_rows_with_a_note() -> None:
    # 205 findings, each of its own rule and category: both tables stop at 200 rows and say how
    # many more there are (205 - 200 = 5)
    findings = tuple(Finding(f"X-{i:03d}", "error", f"c{i:03d}", "m") for i in range(205))
    doc = parse(render_html(RunReport((_report("t", False, findings),))))
    overview = next(s for s in doc.iter("section") if s.attrs.get("aria-labelledby") == "overview")
    for css in ("categories", "rules"):
        assert len(_table(overview, css)) == 200, css
    text = overview.text()
    assert "5 more categories not listed: see the JSON report." in text
    assert "5 more rules not listed: see the JSON report." in text


def test_a_table_row_is_bounded() -> None:
    # docs/html-report.md: a row is at most about 1,600 characters, whatever the names hold;
    # '"' becomes 6 characters and U+202E a visible escape of 31
    ugly = '"\u202e' * 1_000
    report = replace(_report(ugly, False), agent_name=ugly, workflow=ugly, source_path=ugly)
    row = re.search(r"<tr><th scope=\"row\">.*?</tr>", html_trace_table([report], "c", "x"))
    assert row is not None
    assert len(row.group()) <= 1_600
    assert row.group().count("\u2026") == 4  # every name says it was cut


def test_long_values_are_clipped_collapsed_and_budgeted() -> None:
    # one output of 50,000 characters: 8,000 shown (VALUE_CHARS), 42,000 left out, collapsed;
    # then 30 outputs of exactly 8,000 letters: the 200,000-character budget of the trace
    # (TRACE_CHARS) is used up by the first one and 24 of them
    steps = [{"step_id": "big", "type": "tool_call", "tool_name": "t", "output": "x" * 50_000}]
    steps += [
        {"step_id": f"s{i}", "type": "tool_call", "tool_name": "t", "output": "y" * 8_000}
        for i in range(30)
    ]
    trace = _trace("long", steps)
    doc = parse(render_html(RunReport((_report("long", False),)), {"long": trace}))
    items = [li for li in doc.iter("li") if "step" in li.classes()]
    first = items[0]
    (pre,) = list(first.iter("pre"))
    assert pre.text() == "x" * 8_000
    assert "42,000 more characters not shown" in first.text()
    assert next(first.iter("summary")).text() == "show output (1 line, 50,000 characters)"
    full = [li for li in items[1:] if "y" * 8_000 in li.text()]
    cut = [li for li in items[1:] if "used up the 200,000 characters" in li.text()]
    assert (len(full), len(cut)) == (24, 6)
    assert items[1:25] == full


def test_trace_metadata_is_clipped_collapsed_and_budgeted(monkeypatch: pytest.MonkeyPatch) -> None:
    # metadata of 50,000 characters: longer than 100, so written indented on 3 lines, 50,016
    # characters ('{', '  "note": "' and 50,000 m, '"', '}'); 8,000 characters of HTML shown
    # (VALUE_CHARS), its 3 quotes 6 characters each, and collapsed, like a step's value
    trace = Trace.from_dict({**_trace("m", []).to_dict(), "metadata": {"note": "m" * 50_000}})
    doc = parse(render_html(RunReport((_report("m", False),)), {"m": trace}))
    (section,) = sections(doc).values()
    facts = next(dl for dl in section.iter("dl") if "facts" in dl.classes())
    assert next(facts.iter("dt")).text() == "metadata"
    assert next(facts.iter("summary")).text() == "show metadata (3 lines, 50,016 characters)"
    shown = 8_000 - 28  # '{\n  &quot;note&quot;: &quot;' is 28 characters of HTML
    assert next(facts.iter("pre")).text() == '{\n  "note": "' + "m" * shown
    assert f"{50_016 - 13 - shown:,} more characters not shown" in facts.text()
    # it counts in the trace's budget, before the steps: with 200 characters per trace, the
    # metadata {"k": "mm...m"} (7 + 90 + 2 = 99 characters, on one line; 119 in HTML: 4 quotes
    # of 6 characters) leaves 81 for the first output, and nothing for the second
    monkeypatch.setattr(page, "TRACE_CHARS", 200)
    steps = [
        {"step_id": "s1", "type": "tool_call", "tool_name": "t", "output": "y" * 100},
        {"step_id": "s2", "type": "tool_call", "tool_name": "t", "output": "z"},
    ]
    trace = Trace.from_dict({**_trace("b", steps).to_dict(), "metadata": {"k": "m" * 90}})
    doc = parse(render_html(RunReport((_report("b", False),)), {"b": trace}))
    (section,) = sections(doc).values()
    facts = next(dl for dl in section.iter("dl") if "facts" in dl.classes())
    assert next(facts.iter("pre")).text() == '{"k": "' + "m" * 90 + '"}'
    items = {_step_id(li): li for li in section.iter("li") if "step" in li.classes()}
    assert next(items["s1"].iter("pre")).text() == "y" * 81
    assert "19 more characters not shown" in items["s1"].text()
    assert "used up the 200 characters" in items["s2"].text()
    assert not list(items["s2"].iter("pre"))


def test_a_long_task_is_cut_as_a_name() -> None:
    report = replace(_report("t", False), task="t" * 1_000 + "\u202e", outcome=True)
    doc = parse(render_html(RunReport((report,))))
    meta = next(p for p in sections(doc)["t"].iter("p") if "meta" in p.classes())
    assert f"task {'t' * 300}\u2026 \u00b7 outcome true \u00b7 " in meta.text()


def test_citations_count_in_the_trace_budget_and_long_urls_are_not_links() -> None:
    # 25 outputs of 8,000 letters use up the 200,000 characters of the trace (TRACE_CHARS), so
    # the 3 citations of the step after them are not shown; the step before them has a URL of
    # 2,000 characters (a link) and one of 5,000,023 (cut to 300 characters with "…", no link)
    fine = "https://example.com/?q=" + "a" * (2_000 - 23)
    huge = "https://example.com/?q=" + "a" * 5_000_000
    steps: list[dict[str, Any]] = [
        {
            "step_id": "cited",
            "type": "model_response",
            "text": "t",
            "citations": [{"source": "kb", "url": fine}, {"source": "s" * 400, "url": huge}],
        }
    ]
    steps += [
        {"step_id": f"s{i}", "type": "tool_call", "tool_name": "t", "output": "y" * 8_000}
        for i in range(25)
    ]
    cites = [{"source": f"kb{i}", "url": f"https://example.com/{i}"} for i in range(3)]
    steps.append({"step_id": "late", "type": "model_response", "text": "u", "citations": cites})
    text = render_html(RunReport((_report("c", False),)), {"c": _trace("c", steps)})
    assert len(text) < 300_000  # the 5 MB URL is in it neither as a link nor as text
    doc = parse(text)
    items = {_step_id(li): li for li in doc.iter("li") if "step" in li.classes()}
    links = [a.attrs["href"] for a in items["cited"].iter("a")]
    assert links == [fine]
    codes = [c.text() for c in items["cited"].iter("code")]
    assert "s" * 300 + "\u2026" in items["cited"].text()
    assert "https://example.com/?q=" + "a" * (300 - 23) + "\u2026" in codes
    assert "(not linked: 5,000,023 characters)" in items["cited"].text()
    assert [a.attrs["href"] for a in items["late"].iter("a")] == []
    assert "3 more citations not shown: this trace has used up the 200,000" in items["late"].text()


def test_small_step_metrics_are_not_shown_as_zero() -> None:
    # 0.0004 ms is 0 at 3 decimals and $0.0000004 is 0 at 6: they get the digits that show them;
    # 12.5 ms and $0.0136 keep their usual form, and a recorded 0 stays 0
    steps = [
        {"step_id": "tiny", "type": "tool_call", "tool_name": "t", "latency_ms": 0.0004,
         "cost_usd": 4e-7},
        {"step_id": "usual", "type": "tool_call", "tool_name": "t", "latency_ms": 12.5,
         "cost_usd": 0.0136},
        {"step_id": "zero", "type": "tool_call", "tool_name": "t", "latency_ms": 0, "cost_usd": 0},
    ]  # fmt: skip
    doc = parse(render_html(RunReport((_report("m", False),)), {"m": _trace("m", steps)}))
    metrics = {
        _step_id(li): next(p for p in li.iter("p") if "meta" in p.classes()).text()
        for li in doc.iter("li")
        if "step" in li.classes()
    }
    assert metrics == {
        "tiny": "0.0004 ms \u00b7 $0.0000004",
        "usual": "12.5 ms \u00b7 $0.0136",
        "zero": "0 ms \u00b7 $0",
    }


def test_steps_and_findings_beyond_the_caps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(page, "MAX_STEPS", 5)
    monkeypatch.setattr(page, "MAX_FINDINGS", 2)
    steps = [{"step_id": f"s{i}", "type": "tool_call", "tool_name": "t"} for i in range(1, 9)]
    findings = (
        Finding("ARH-FLW-001", "error", "flow", "late", step_id="s7", step_index=6),
        Finding("ARH-FLW-001", "error", "flow", "early", step_id="s1", step_index=0),
        Finding("ARH-FLW-002", "warning", "flow", "dropped", step_id="s2", step_index=1),
    )
    doc = parse(render_html(RunReport((_report("x", False, findings),)), {"x": _trace("x", steps)}))
    section = sections(doc)["x"]
    placed = placed_findings(section)
    assert placed == {None: [("ARH-FLW-001", None)], "s1": [("ARH-FLW-001", None)]}
    assert "at step s7 (step 7, beyond the steps shown)" in section.text()
    assert "1 more finding not shown" in section.text()
    assert "3 more steps not shown" in section.text()
    assert len([li for li in section.iter("li") if "step" in li.classes()]) == 5


def test_new_and_resolved_findings_are_not_crowded_out() -> None:
    # 250 warnings the baseline had too (s1..s250), a resolved error at s260 and a new warning at
    # s299: 252 findings for 200 places. The new and the resolved ones are kept, then the first
    # 198 unchanged ones (s1..s198); 52 unchanged ones are left out, and the note says where the
    # comparison's reports hold what
    steps = [{"step_id": f"s{i}", "type": "tool_call", "tool_name": "t"} for i in range(1, 301)]
    same = tuple(
        Finding("ARH-SCH-003", "warning", "schema", "m", step_id=f"s{i}", step_index=i - 1)
        for i in range(1, 251)
    )
    gone = Finding("ARH-SCH-001", "error", "schema", "gone", step_id="s260", step_index=259)
    late = Finding("ARH-FLW-002", "warning", "flow", "late", step_id="s299", step_index=298)
    baseline = RunReport((_report("x", False, (gone, *same)),))
    candidate = RunReport((_report("x", False, (*same, late)),))
    result = compare_reports(baseline, candidate)
    doc = parse(render_compare_html(result, evaluate_gate(result), {"x": _trace("x", steps)}))
    section = sections(doc)["x"]
    placed = placed_findings(section)
    assert placed.pop("s260") == [("ARH-SCH-001", "resolved")]
    assert placed.pop("s299") == [("ARH-FLW-002", "new")]
    assert placed == {f"s{i}": [("ARH-SCH-003", None)] for i in range(1, 199)}
    note = next(p for p in section.iter("p") if "more findings not shown" in p.text())
    assert note.text().startswith(
        "52 more findings not shown (0 new or resolved, 52 that the baseline had too): the JSON "
        "comparison (--json-out) holds the new and resolved findings"
    )


def test_page_budget_moves_sections_to_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(page, "PAGE_CHARS", 30_000)
    steps = [{"step_id": "s1", "type": "tool_call", "tool_name": "t", "output": "z" * 7_000}]
    reports = [_report(f"t{i}", False) for i in range(10)]
    traces = {r.trace_id: _trace(r.trace_id, steps) for r in reports}
    text = render_html(RunReport(tuple(reports)), traces)
    doc = parse(text)
    shown = list(sections(doc))
    assert 1 <= len(shown) < 10
    assert _table_rows(doc, "more-failing") == [f"t{i}" for i in range(len(shown), 10)]
    expanded = re.findall(r'<section class="trace.*?</section>\n', text, re.DOTALL)
    assert len(expanded) == len(shown)
    assert sum(map(len, expanded)) <= 30_000


def test_a_section_too_large_does_not_stop_smaller_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    # b0..b3 need more than the 30,000 characters of the page each (5 outputs of 7,000 letters);
    # the small traces after b0 are still shown, until 3 sections have not fit (MISFITS): s3,
    # after b1, b2 and b3, goes to the table
    monkeypatch.setattr(page, "PAGE_CHARS", 30_000)
    big = [{"step_id": f"s{i}", "type": "tool_call", "tool_name": "t", "output": "z" * 7_000}
           for i in range(5)]  # fmt: skip
    small = [{"step_id": "s1", "type": "tool_call", "tool_name": "t"}]
    order = ["s0", "b0", "s1", "b1", "s2", "b2", "b3", "s3"]
    reports = [_report(trace_id, False) for trace_id in order]
    traces = {t: _trace(t, big if t[0] == "b" else small) for t in order}
    doc = parse(render_html(RunReport(tuple(reports)), traces))
    assert list(sections(doc)) == ["s0", "s1", "s2"]
    assert _table_rows(doc, "more-failing") == ["b0", "b1", "b2", "b3", "s3"]


def test_renderer_map_and_sections_without_traces() -> None:
    run, _ = _run([SAMPLES / "traces" / "rebook_pass.json"])
    text = RENDERERS["html"](run)
    assert text == render_html(run)
    doc = parse(text)
    assert "The steps are not shown" in doc.text()
    assert next(doc.iter("title")).text() == "arh validation: the 1 trace passed"


# -- the command line ----------------------------------------------------------------------------


def test_cli_writes_the_pages(arh: Callable[..., Run], tmp_path: Path) -> None:
    target = tmp_path / "out" / "report.html"
    run = arh("validate", "--policy", SAMPLES / "policy_trajectory.json",
              SAMPLES / "traces" / "rebook_pass.json", "--html-out", target)  # fmt: skip
    assert run.status == 0
    assert run.out.endswith(f"HTML report written to {target}\n")
    assert target.read_text(encoding="utf-8").startswith("<!DOCTYPE html>\n")
    blocked = tmp_path / "file"
    blocked.write_text("")
    run = arh("validate", "--policy", SAMPLES / "policy_trajectory.json",
              SAMPLES / "traces" / "rebook_pass.json", "--html-out", blocked / "x")  # fmt: skip
    assert run.status == 3  # a report that cannot be written
    assert "error: cannot write" in run.err


def test_json_lines_on_standard_input_show_their_line(
    arh: Callable[..., Run], tmp_path: Path
) -> None:
    # samples/traces/more_runs.jsonl holds rebook-2041 (passes) on line 1 and rebook-2042 (fails)
    # on line 2; read from standard input they are named as its errors name them, <stdin>:LINE
    # (docs/reports.md); one document on standard input has no line and shows no source
    target = tmp_path / "stdin.html"
    run = arh("validate", "--policy", SAMPLES / "policy_trajectory.json", "-", "--html-out", target,
              "--show-passing", stdin=(SAMPLES / "traces" / "more_runs.jsonl").read_bytes(),
              )  # fmt: skip
    details = [line for line in run.out.splitlines() if line.startswith("      latency")]
    assert [line.rsplit(" \u00b7 ", 1)[1] for line in details] == ["<stdin>:1", "<stdin>:2"]
    shown = sections(parse(target.read_text(encoding="utf-8")))
    for trace_id, where in (("rebook-2041", "<stdin>:1"), ("rebook-2042", "<stdin>:2")):
        meta = next(p for p in shown[trace_id].iter("p") if "meta" in p.classes())
        assert list(meta.iter("code"))[-1].text() == where
    run = arh("validate", "--policy", SAMPLES / "policy_trajectory.json", "-", "--html-out", target,
              "--show-passing", stdin=(SAMPLES / "traces" / "rebook_pass.json").read_bytes(),
              )  # fmt: skip
    assert run.out.splitlines()[1].endswith("citation coverage 100%")
    meta = next(
        p for p in parse(target.read_text(encoding="utf-8")).iter("p") if "meta" in p.classes()
    )
    assert not list(meta.iter("code"))


def test_the_documented_page_sizes_are_the_measured_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    # the table of docs/html-report.md is written by benchmarks/perf/html_size.py --write (about
    # 20 s here, for its 2 x 10,000 traces); this fails when the page has changed since
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks" / "perf"))  # html_size.py imports perf
    script = load_script("arh_html_size_script", ROOT / "benchmarks" / "perf" / "html_size.py")
    text = DOC.read_text(encoding="utf-8")
    block = text[text.index(script.START) + len(script.START) : text.index(script.END)]
    pages = script.measure_both(10_000, 12, script.DEFAULT_SEED)
    assert block.strip() == script.doc_block(*pages, 12), (
        "docs/html-report.md is stale: run `python benchmarks/perf/html_size.py --write`"
    )
    # what the block says, by hand: the adversarial run fails every trace, and the page expands
    # as many as fit in its 5,000,000 characters (two of 600 steps of 15,000-character values)
    assert (pages[1].failing, pages[1].expanded) == (10_000, 2)


# -- colours -------------------------------------------------------------------------------------


def _luminance(colour: str) -> float:
    """WCAG 2.x relative luminance of #rrggbb."""
    channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def _contrast(a: str, b: str) -> float:
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def _schemes() -> dict[str, dict[str, str]]:
    blocks = re.findall(r":root\{([^}]*)\}", page._CSS)
    light, dark = (dict(re.findall(r"--(\w+):(#[0-9a-f]{6})", block)) for block in blocks[:2])
    return {"light": light, "dark": dark}


def test_known_contrast_values() -> None:
    # reference values from the WCAG definition: black on white is 21:1, #777 on white 4.48:1
    assert round(_contrast("#000000", "#ffffff"), 2) == 21.0
    assert round(_contrast("#777777", "#ffffff"), 2) == 4.48


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_text_colours_have_contrast_of_at_least_4_5(scheme: str) -> None:
    colours = _schemes()[scheme]
    documented = DOC.read_text(encoding="utf-8")
    for text in ("fg", "muted", "link", "fail", "pass", "warn", "info"):
        for ground in ("bg", "panel"):
            ratio = _contrast(colours[text], colours[ground])
            assert ratio >= 4.5, f"{scheme} --{text} on --{ground}: {ratio:.2f}"
        assert colours[text] in documented, f"docs/html-report.md does not list {colours[text]}"


def test_documented_contrast_ratios_are_the_computed_ones() -> None:
    # each "`#colour` (N:1 ...)" cell of the table: N is the ratio against the page background
    documented = DOC.read_text(encoding="utf-8")
    cells = re.findall(r"`(#[0-9a-f]{6})` \((\d+\.\d):1", documented)
    schemes = _schemes()
    backgrounds = {schemes["light"]["bg"]: "light", schemes["dark"]["bg"]: "dark"}
    by_colour = {colour: scheme for scheme, c in schemes.items() for colour in c.values()}
    assert len(cells) == 12
    for colour, ratio in cells:
        scheme = by_colour[colour]
        page_bg = next(bg for bg, name in backgrounds.items() if name == scheme)
        assert f"{_contrast(colour, page_bg):.1f}" == ratio, colour


# -- a real browser ------------------------------------------------------------------------------

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def _chromium_binary() -> str | None:
    configured = os.environ.get("ARH_CHROMIUM")
    if configured:
        return shutil.which(configured)
    return next((found for name in CHROMIUM_NAMES if (found := shutil.which(name))), None)


# Started in place of the browser: moves the pipe ends to fds 3 and 4, then becomes the browser
# (a shell cannot: dash redirects only fds 0-9, and a preexec_fn is unsafe with threads).
_PLUMB = """
import fcntl, os, sys
ends = [fcntl.fcntl(int(fd), fcntl.F_DUPFD, 10) for fd in sys.argv[1:3]]
for target, fd in zip((3, 4), ends):
    os.dup2(fd, target)
    os.close(fd)
os.execv(sys.argv[3], sys.argv[3:])
"""


class Chromium:
    """Headless Chromium driven through the DevTools protocol over a pipe (file descriptors 3 and
    4 of the browser, messages separated by NUL bytes): no websocket and no extra package."""

    def __init__(self, binary: str) -> None:
        self.profile = tempfile.mkdtemp(prefix="arh-chromium-")
        commands_in, self._commands = os.pipe()
        self._answers, answers_out = os.pipe()
        self.process = subprocess.Popen(
            [sys.executable, "-c", _PLUMB, str(commands_in), str(answers_out),
             binary, "--headless", "--no-sandbox", "--disable-gpu",
             f"--user-data-dir={self.profile}", "--remote-debugging-pipe", "--no-first-run",
             "--no-default-browser-check", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--disable-extensions",
             "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(commands_in, answers_out),
        )  # fmt: skip
        os.close(commands_in)
        os.close(answers_out)
        self._buffer = b""
        self._last_id = 0
        self.events: list[dict[str, Any]] = []

    def _receive(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("Chromium did not answer in time")
            if select.select([self._answers], [], [], left)[0]:
                chunk = os.read(self._answers, 1 << 20)
                if not chunk:
                    raise EOFError("Chromium closed the DevTools pipe")
                self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)  # type: ignore[no-any-return]

    def send(self, method: str, params: dict[str, Any] | None = None, *,
             session: str | None = None, timeout: float = 30.0) -> dict[str, Any]:  # fmt: skip
        self._last_id += 1
        message: dict[str, Any] = {"id": self._last_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self._commands, json.dumps(message).encode("utf-8") + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._receive(deadline)
            if reply.get("id") == self._last_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]  # type: ignore[no-any-return]
            self.events.append(reply)

    def wait_for(self, method: str, session: str, timeout: float = 30.0) -> None:
        """Wait for an event of one page (events of other pages are kept too)."""
        deadline = time.monotonic() + timeout
        while not any(
            e.get("method") == method and e.get("sessionId") == session for e in self.events
        ):
            self.events.append(self._receive(deadline))

    def settle(self, seconds: float) -> None:
        """Collect the events of the next ``seconds``."""
        deadline = time.monotonic() + seconds
        try:
            while True:
                self.events.append(self._receive(deadline))
        except TimeoutError:
            pass

    def close(self) -> None:
        with contextlib.suppress(OSError, RuntimeError, TimeoutError, EOFError):
            self.send("Browser.close", timeout=5)
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._commands)
        os.close(self._answers)
        shutil.rmtree(self.profile, ignore_errors=True)


@dataclass
class Loaded:
    browser: Chromium
    session: str
    url: str
    events: list[dict[str, Any]]

    def evaluate(self, expression: str) -> Any:
        result = self.browser.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True},
            session=self.session,
        )
        assert "exceptionDetails" not in result, result
        return result["result"].get("value")

    def problems(self) -> list[str]:
        """Console output, errors, dialogs, and requests for anything but the page itself."""
        found = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Network.requestWillBeSent" and params["request"]["url"] != self.url:
                found.append(f"request for {params['request']['url']}")
            elif method in ("Runtime.consoleAPICalled", "Runtime.exceptionThrown"):
                found.append(f"{method}: {json.dumps(params)[:300]}")
            elif method == "Log.entryAdded" and params["entry"]["level"] in ("warning", "error"):
                found.append(f"log {params['entry']['level']}: {params['entry']['text']}")
            elif method in ("Page.javascriptDialogOpening", "Network.webSocketCreated"):
                found.append(f"{method}: {json.dumps(params)[:300]}")
        return found


@pytest.fixture(scope="module")
def chromium() -> Iterator[Callable[..., Loaded]]:
    binary = _chromium_binary()
    if binary is None:
        pytest.skip(
            "Chromium not found: install the Debian packages chromium and chromium-driver "
            "(.ci/run does), or set ARH_CHROMIUM to the browser's path"
        )
    browser = Chromium(binary)

    def load(path: Path, *, dark: bool = False, media: str = "") -> Loaded:
        target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Log", "Network"):
            browser.send(f"{domain}.enable", session=session)
        browser.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": 1100, "height": 900, "deviceScaleFactor": 1, "mobile": False},
            session=session,
        )
        scheme = "dark" if dark else "light"
        browser.send(
            "Emulation.setEmulatedMedia",
            {"media": media, "features": [{"name": "prefers-color-scheme", "value": scheme}]},
            session=session,
        )
        browser.events.clear()
        url = path.resolve().as_uri()
        browser.send("Page.navigate", {"url": url}, session=session)
        browser.wait_for("Page.loadEventFired", session)
        browser.settle(0.3)
        mine = [e for e in browser.events if e.get("sessionId") == session]
        return Loaded(browser, session, url, mine)

    try:
        yield load
    finally:
        browser.close()


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_browser_check_sees_requests_scripts_and_errors(
    chromium: Callable[..., Loaded], tmp_path: Path
) -> None:
    """The browser checks can fail: a page without the report's defences trips every one."""
    bad = tmp_path / "bad.html"
    bad.write_text(
        "<!DOCTYPE html><title>bad</title><img src='http://127.0.0.1:9/x.png'>"
        "<script>console.error('boom'); window.__arh_pwned = 1;</script>",
        encoding="utf-8",
    )
    loaded = chromium(bad)
    problems = loaded.problems()
    assert any(p.startswith("request for http://127.0.0.1:9/x.png") for p in problems), problems
    assert any(p.startswith("Runtime.consoleAPICalled") for p in problems), problems
    assert loaded.evaluate("typeof window.__arh_pwned") == "number"


def test_browser_shows_the_report(
    chromium: Callable[..., Loaded],
    produced: tuple[Path, dict[str, str]],
    request: pytest.FixtureRequest,
) -> None:
    loaded = chromium(produced[0] / "samples.html")
    assert loaded.problems() == []
    # the finding of a known step (docs/reports.md: rebook-1002 repeats the booking at s5b)
    text = loaded.evaluate(
        """[...document.querySelectorAll('section.trace')]
             .find(s => s.querySelector('h3 code').textContent === 'rebook-1002')
             .querySelector('li.step:nth-child(6)').innerText"""
    )
    assert "s5b" in text
    assert "ARH-FLW-003" in text
    assert "duplicate side effect" in text
    background = loaded.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(255, 255, 255)"
    shot = loaded.browser.send(
        "Page.captureScreenshot",
        {"format": "png", "captureBeyondViewport": True,
         "clip": {"x": 0, "y": 0, "width": 1100, "height": 1950, "scale": 1}},
        session=loaded.session,
    )  # fmt: skip
    data = base64.b64decode(shot["data"])
    assert _png_size(data) == (1100, 1950)
    if _update(request.config) or os.environ.get("ARH_UPDATE_SCREENSHOT") == "1":
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        SCREENSHOT.write_bytes(data)
    # keyboard: the first Tab reaches the skip link
    for kind in ("keyDown", "keyUp"):
        loaded.browser.send(
            "Input.dispatchKeyEvent",
            {"type": kind, "key": "Tab", "code": "Tab", "windowsVirtualKeyCode": 9},
            session=loaded.session,
        )
    assert loaded.evaluate("document.activeElement.className") == "skip"


def test_browser_runs_nothing_from_a_hostile_trace(
    chromium: Callable[..., Loaded], produced: tuple[Path, dict[str, str]]
) -> None:
    for name in ("hostile", "hostile-shared"):
        loaded = chromium(produced[0] / f"{name}.html")
        assert loaded.problems() == [], name
        facts = loaded.evaluate(
            """({
                pwned: typeof window.__arh_pwned,
                scripts: document.scripts.length,
                handlers: [...document.querySelectorAll('*')].flatMap(
                    e => [...e.attributes].map(a => a.name).filter(n => n.startsWith('on'))),
                links: [...document.links].map(a => a.protocol + (a.hash ? '#' : '')),
                bidi: /[\\u202a-\\u202e\\u2066-\\u2069]/.test(document.documentElement.outerHTML),
                text: document.body.innerText.includes('<script>'),
            })"""
        )
        assert facts["pwned"] == "undefined"
        assert facts["scripts"] == 0
        assert facts["handlers"] == []
        assert facts["bidi"] is False
        assert facts["text"] is True  # the payloads are there, as text
        assert set(facts["links"]) <= {"https:", "https:#", "http:", "file:#"}, facts["links"]


def test_browser_dark_scheme_and_print(
    chromium: Callable[..., Loaded], produced: tuple[Path, dict[str, str]]
) -> None:
    loaded = chromium(produced[0] / "compare.html", dark=True)
    assert loaded.problems() == []
    # the hashed style sheet applies (a blocked one would leave the default white)
    assert loaded.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(13, 17, 23)"
    assert "ARH-FLW-003" in loaded.evaluate("document.body.innerText")
    printed = chromium(produced[0] / "samples.html", media="print")
    assert printed.problems() == []
    assert printed.evaluate("getComputedStyle(document.querySelector('nav')).display") == "none"
    assert printed.evaluate("getComputedStyle(document.body).color") == "rgb(0, 0, 0)"


def test_the_title_groups_thousands_as_the_rest_of_the_page() -> None:
    from agent_reliability_harness import RunReport, TraceReport
    from agent_reliability_harness.render.html import render_html

    reports = tuple(
        TraceReport(f"t{i}", "a", "w", "p", 0.0, i >= 1234, 0.0, 0.0, None, ()) for i in range(5000)
    )
    page = render_html(RunReport(reports))
    assert "<title>arh validation: 1,234 of 5,000 traces failed</title>" in page


@pytest.mark.skipif(sys.platform != "linux", reason="sets the stack size limit of a child process")
def test_a_deeply_nested_value_is_shown_with_a_small_stack(tmp_path: Path) -> None:
    # json.dumps with indent resumes a generator per level, each on the C stack: a value 900
    # levels deep crashed the interpreter (SIGSEGV) under a 256 KB stack, as a thread may have
    import resource

    value: Any = "bottom"
    for _ in range(900):
        value = [value]
    doc = {
        "schema_version": "1",
        "trace_id": "deep",
        "agent_name": "a",
        "workflow": "w",
        "steps": [
            {"step_id": "s1", "type": "tool_call", "tool_name": "t", "output": {"v": value}},
            {"step_id": "s2", "type": "model_response", "text": "done"},
        ],
    }
    (tmp_path / "deep.json").write_text(json.dumps(doc), encoding="utf-8")
    (tmp_path / "policy.json").write_text('{"policy_id": "p", "allow_unlisted_tools": true}')

    def small_stack() -> None:
        resource.setrlimit(resource.RLIMIT_STACK, (256 * 1024, 256 * 1024))

    command = [sys.executable, "-m", "agent_reliability_harness", "validate", "--policy",
               "policy.json", "deep.json", "--html-out", "page.html", "--quiet"]  # fmt: skip
    done = subprocess.run(
        command, cwd=tmp_path, preexec_fn=small_stack, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "page.html").read_text(encoding="utf-8")
    # shown indented (and clipped): {, "v": [, 899 lines of [, "bottom", 900 of ], }
    assert "<pre>{\n  &quot;v&quot;: [\n    [\n      [\n        [" in page
    assert "1,803 lines" in page
