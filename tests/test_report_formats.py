"""The report formats: golden files, what CI systems accept, and hostile content.

Golden files are written only by `make goldens` (pytest --update-goldens) and compared byte for
byte. SARIF is validated against the official SARIF 2.1.0 schema and GitHub's upload limits;
JUnit is read back with junitparser; Markdown is rendered and checked for injected markup.
"""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_reliability_harness import Finding, RunReport, TraceReport
from agent_reliability_harness.cli import main
from agent_reliability_harness.io import write_atomic
from agent_reliability_harness.render.markdown import MAX_CHARS, render_markdown
from agent_reliability_harness.render.sarif import MAX_RESULTS, render_sarif
from agent_reliability_harness.rules import RULES

from conftest import (
    ROOT,
    SAMPLES,
    SARIF_SCHEMA,
    Run,
    assert_markdown_is_inert,
    load_json,
    require_shared,
)
from conftest import render_markdown as render_markdown_html

GOLDENS = ROOT / "tests" / "goldens"
HOSTILE = GOLDENS / "inputs" / "hostile"
CASES = {
    "samples": (SAMPLES / "policy_trajectory.json", [SAMPLES / "traces"]),
    "hostile": (HOSTILE / "policy.json", [HOSTILE / "traces"]),
}
FILES = ("console.txt", "report.json", "report.md", "report.xml", "report.sarif")

Arh = Callable[..., Run]


def _produce(arh: Arh, case: str, out: Path) -> dict[str, bytes]:
    """Run arh on a case from the repository root, with relative paths, into ``out``."""
    policy, inputs = CASES[case]
    old = Path.cwd()
    os.chdir(ROOT)
    try:
        rel = [p.relative_to(ROOT).as_posix() for p in (policy, *inputs)]
        run = arh(
            "validate", "--policy", rel[0], *rel[1:], "--color", "never",
            "--json-out", out / "report.json", "--md-out", out / "report.md",
            "--junit-out", out / "report.xml", "--sarif-out", out / "report.sarif",
        )  # fmt: skip
    finally:
        os.chdir(old)
    console = "\n".join(
        line for line in (run.out + run.err).splitlines() if " written to " not in line
    )
    (out / "console.txt").write_text(console + "\n", encoding="utf-8", errors="surrogateescape")
    return {name: (out / name).read_bytes() for name in FILES}


@pytest.mark.parametrize("case", sorted(CASES))
def test_goldens(case: str, arh: Arh, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    produced = _produce(arh, case, tmp_path)
    target = GOLDENS / case
    if request.config.getoption("--update-goldens"):
        target.mkdir(parents=True, exist_ok=True)
        for name, data in produced.items():
            (target / name).write_bytes(data)
    for name, data in produced.items():
        golden = target / name
        assert golden.exists(), f"missing golden {golden}: run `make goldens`"
        assert data == golden.read_bytes(), f"{case}/{name} differs from its golden: `make goldens`"


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, bytes]]:
    return {case: {n: (GOLDENS / case / n).read_bytes() for n in FILES} for case in CASES}


# -- SARIF ---------------------------------------------------------------------------------------


def _sarif(case: str) -> dict:  # type: ignore[type-arg]
    return json.loads((GOLDENS / case / "report.sarif").read_text(encoding="ascii"))


@pytest.mark.parametrize("case", sorted(CASES))
def test_sarif_is_valid_against_the_official_schema(case: str) -> None:
    from jsonschema import Draft7Validator

    schema = load_json(require_shared(SARIF_SCHEMA))
    errors = sorted(e.message for e in Draft7Validator(schema).iter_errors(_sarif(case)))
    assert not errors, errors[:5]


@pytest.mark.parametrize("case", sorted(CASES))
def test_sarif_rules_results_and_fingerprints(case: str) -> None:
    run = _sarif(case)["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == sorted(RULES)
    for rule in rules:
        assert rule["help"]["text"]
        assert rule["helpUri"].endswith("docs/rules.md#" + rule["id"].lower())
        assert len(rule["properties"]["tags"]) <= 20  # GitHub's limit
    fingerprints = [r["partialFingerprints"]["arhFinding/v1"] for r in run["results"]]
    assert len(fingerprints) == len(set(fingerprints))
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        location = result["locations"][0]["physicalLocation"]
        assert not location["artifactLocation"]["uri"].startswith(("/", "file:"))
        assert location["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
    assert len(run["results"]) <= MAX_RESULTS


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _valid_sarif(text: str) -> dict:  # type: ignore[type-arg]
    from jsonschema import Draft7Validator

    doc = json.loads(text)
    schema = load_json(require_shared(SARIF_SCHEMA))
    errors = sorted(e.message for e in Draft7Validator(schema).iter_errors(doc))
    assert not errors, errors[:5]
    return doc  # type: ignore[no-any-return]


def test_sarif_shows_hostile_text_as_escapes_and_makes_no_link() -> None:
    import unicodedata

    from agent_reliability_harness.errors import InputError

    step = "s\x1b[31m\x00\u2028[click](https://evil.example)"
    finding = Finding("ARH-SCH-001", "error", "schema", "tool 'x' is not allowed", step)
    report = TraceReport(
        "t\u202eevil", "a", "w", "p", 0.0, False, 0.0, 0.0, None, (finding,), source_path="t.json"
    )
    errors = (InputError("invalid JSON", source="b\u202e[x](https://e.test).json"),)
    run = RunReport((report,), input_errors=errors, policy_id="p\x1b\u202e")
    doc = _valid_sarif(render_sarif(run))
    sarif_run = doc["runs"][0]
    hidden = {"Cc", "Cf", "Cs", "Zl", "Zp"}
    ours = {k: v for k, v in sarif_run.items() if k != "tool"}  # rules' help has line breaks
    assert not [s for s in _strings(ours) if any(unicodedata.category(c) in hidden for c in s)]
    result = sarif_run["results"][0]
    # By hand: ESC \x1b, NUL \x00, U+2028 \u2028, U+202E \u202e (docs/reports.md); the message
    # holds "](", so each of its "[" and "]" gets a backslash (SARIF 2.1.0 §3.11.6).
    assert result["message"]["text"] == (
        "tool 'x' is not allowed (trace 't\\u202eevil', "
        "step 's\\x1b\\[31m\\x00\\u2028\\[click\\](https://evil.example)')"
    )
    shown_step = "s\\x1b[31m\\x00\\u2028[click](https://evil.example)"
    assert result["locations"][0]["logicalLocations"] == [
        {"name": shown_step, "fullyQualifiedName": f"t\\u202eevil/{shown_step}", "kind": "member"}
    ]
    assert result["properties"]["trace_id"] == "t\\u202eevil"
    assert sarif_run["automationDetails"]["id"] == "arh/p\\x1b\\u202e/"
    assert sarif_run["properties"]["policy_id"] == "p\\x1b\\u202e"
    notification = sarif_run["invocations"][0]["toolExecutionNotifications"][0]
    assert notification["message"]["text"] == (
        "input error: b\\u202e\\[x\\](https://e.test).json: invalid JSON"
    )
    # No embedded link where the text has no "](": brackets and backslashes are left alone.
    plain = Finding("ARH-SCH-001", "error", "schema", "tool '[a]\\b' is not allowed", "s1")
    report = TraceReport("t", "a", "w", "p", 0.0, False, 0.0, 0.0, None, (plain,))
    doc = _valid_sarif(render_sarif(RunReport((report,))))
    text = doc["runs"][0]["results"][0]["message"]["text"]
    assert text == "tool '[a]\\b' is not allowed (trace 't', step 's1')"


def test_sarif_results_of_standard_input_name_stdin(arh: Arh, tmp_path: Path) -> None:
    # GitHub code scanning refuses a whole upload with a result that names no file
    policy = tmp_path / "p.json"
    policy.write_text('{"policy_id": "p", "allowed_tools": {}}', encoding="utf-8")
    step = {"step_id": "s1", "type": "tool_call", "tool_name": "bad"}
    trace = {"trace_id": "t", "agent_name": "a", "workflow": "w", "steps": [step]}
    out = tmp_path / "st.sarif"
    run = arh(
        "validate", "--policy", policy, "-", "--sarif-out", out,
        stdin=json.dumps(trace).encode(),
    )  # fmt: skip
    assert run.status == 1
    doc = _valid_sarif(out.read_text(encoding="ascii"))
    (result,) = doc["runs"][0]["results"]
    (location,) = result["locations"]
    assert location["physicalLocation"]["artifactLocation"] == {"uri": "stdin"}
    assert location["logicalLocations"] == [
        {"name": "s1", "fullyQualifiedName": "t/s1", "kind": "member"}
    ]


def test_sarif_points_at_the_line_of_the_step() -> None:
    run = _sarif("samples")["runs"][0]
    by_step = {
        (r["properties"]["trace_id"], r["locations"][0]["logicalLocations"][0]["name"]): r
        for r in run["results"]
    }
    result = by_step[("rebook-1002", "s5b")]
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "samples/traces/rebook_double_rebooking.json"
    lines = (SAMPLES / "traces" / "rebook_double_rebooking.json").read_text().splitlines()
    start = location["region"]["startLine"]
    # the step object opens on that line and its step_id follows on the next one
    assert lines[start - 1].strip() == "{"
    assert lines[start].strip() == '"step_id": "s5b",'
    jsonl = by_step[("rebook-2042", "s3")]["locations"][0]["physicalLocation"]
    assert jsonl["region"] == {"startLine": 2}


def test_sarif_fingerprints_are_stable_across_runs(arh: Arh, tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    assert (
        _produce(arh, "samples", first)["report.sarif"]
        == _produce(arh, "samples", second)["report.sarif"]
    )


def test_sarif_respects_the_result_limit() -> None:
    finding = Finding("ARH-SAF-001", "error", "safety", "m", "s1", subject="x")
    report = TraceReport("t", "a", "w", "p", 0.0, False, 0.0, 0.0, None, (finding,) * 25_003)
    data = json.loads(render_sarif(RunReport((report,))))
    run = data["runs"][0]
    assert len(run["results"]) == MAX_RESULTS
    notes = run["invocations"][0]["toolExecutionNotifications"]
    assert "3 of 25003 findings were left out" in notes[-1]["message"]["text"]
    fingerprints = {r["partialFingerprints"]["arhFinding/v1"] for r in run["results"]}
    assert len(fingerprints) == MAX_RESULTS  # occurrence numbers keep equal findings apart


def test_sarif_uris_are_percent_encoded_and_absolute_paths_are_file_uris() -> None:
    finding = Finding("ARH-SCH-001", "error", "schema", "m", "s1")
    reports = (
        TraceReport("a", "a", "w", "p", 0.0, False, 0.0, 0.0, None, (finding,),
                    source_path="runs/my trace#1.json"),
        TraceReport("b", "a", "w", "p", 0.0, False, 0.0, 0.0, None, (finding,),
                    source_path="/abs/dir/t.json"),
    )  # fmt: skip
    results = json.loads(render_sarif(RunReport(reports)))["runs"][0]["results"]
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"] for r in results]
    assert uris == [
        {"uri": "runs/my%20trace%231.json", "uriBaseId": "%SRCROOT%"},
        {"uri": "file:///abs/dir/t.json"},
    ]


# -- JUnit ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(CASES))
def test_junit_reads_back_with_junitparser(case: str) -> None:
    from junitparser import Error, Failure, JUnitXml

    report = load_json(GOLDENS / case / "report.json")
    xml = JUnitXml.fromfile(str(GOLDENS / case / "report.xml"))
    cases = [c for suite in xml for c in suite]
    failures = sum(1 for c in cases for r in c.result if isinstance(r, Failure))
    errors = sum(1 for c in cases for r in c.result if isinstance(r, Error))
    assert len(cases) == report["summary"]["total_traces"] + len(report["input_errors"])
    assert failures == report["summary"]["failed_traces"]
    assert errors == len(report["input_errors"])
    assert sum(1 for c in cases if c.is_skipped) == 0
    suite = next(iter(xml))
    assert (suite.tests, suite.failures, suite.errors) == (len(cases), failures, errors)
    names = [c.name for c in cases if c.classname != "arh.inputs"]
    assert (
        names == [r["trace_id"].replace("\x1b", "\\x1b") for r in report["reports"]]
        or case == "hostile"
    )


def test_junit_replaces_characters_xml_forbids() -> None:
    text = (GOLDENS / "hostile" / "report.xml").read_text(encoding="utf-8")
    ET.fromstring(text.split("\n", 1)[1])  # noqa: S314 - our own output: is it well-formed?
    for escape in ("\\x1b", "\\ud800", "\\x00", "\\ufffe", "\\u202e"):
        assert escape in text
    assert not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]", text)
    # invisible format characters are shown too, as on the console (U+200B passed through)
    from agent_reliability_harness.render.junit import xml_safe

    assert xml_safe("x\u200by\u00ad\U000e0041") == "x\\u200by\\xad\\U000e0041"


def test_junit_time_of_totals_that_add_up_past_a_float() -> None:
    from agent_reliability_harness.render.junit import render_junit

    def run(latency: float) -> RunReport:
        return RunReport(
            tuple(TraceReport(f"t{i}", "a", "w", "p", 100.0, True, latency, 0.0, None, ())
                  for i in range(2))
        )  # fmt: skip

    # each trace's total is a finite float, their sum is not: the suites get no time at all
    text = render_junit(run(1.5e308))
    root = ET.fromstring(text.split("\n", 1)[1])  # noqa: S314 - our own output
    assert "time" not in root.attrib
    assert "time" not in root[0].attrib
    assert "inf" not in text
    assert [case.get("time") for case in root.iter("testcase")] == [f"{1.5e308 / 1000:.3f}"] * 2
    finite = ET.fromstring(render_junit(run(1500.0)).split("\n", 1)[1])  # noqa: S314
    assert (finite.get("time"), finite[0].get("time")) == ("3.000", "3.000")


# -- Markdown ------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(CASES))
def test_markdown_is_inert_and_tables_keep_their_columns(case: str) -> None:
    text = (GOLDENS / case / "report.md").read_text(encoding="utf-8")
    assert_markdown_is_inert(text)
    for line in text.splitlines():
        if line.startswith("|"):
            cells = line.replace("\\|", "").strip("|").split("|")
            assert len(cells) == 6, line


def test_markdown_stays_within_github_comment_limits() -> None:
    finding = Finding("ARH-SAF-001", "error", "safety", "m" * 2000, "s1")
    reports = tuple(
        TraceReport(f"t{i}", "a", "w", "p", 0.0, False, 0.0, 0.0, None, (finding,) * 20)
        for i in range(300)
    )
    text = render_markdown(RunReport(reports))
    assert len(text) <= MAX_CHARS < 65_536
    assert "more failing traces are not shown" in text
    assert_markdown_is_inert(text)


# -- Console -------------------------------------------------------------------------------------


def test_console_colour(arh: Arh, monkeypatch: pytest.MonkeyPatch) -> None:
    args = ("validate", "--policy", SAMPLES / "policy_trajectory.json", SAMPLES / "traces")
    assert "\x1b[" in arh(*args, "--color", "always").out
    assert "\x1b[" not in arh(*args, "--color", "never").out
    assert "\x1b[" not in arh(*args).out  # not a terminal
    monkeypatch.setenv("NO_COLOR", "1")

    class Terminal:
        def isatty(self) -> bool:
            return True

    from agent_reliability_harness.app.output import use_color as _use_color

    assert _use_color("auto", Terminal()) is False  # type: ignore[arg-type]
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("TERM", "xterm-256color")
    assert _use_color("auto", Terminal()) is True  # type: ignore[arg-type]
    monkeypatch.setenv("TERM", "dumb")  # a terminal that cannot show colour
    assert _use_color("auto", Terminal()) is False  # type: ignore[arg-type]
    assert _use_color("always", Terminal()) is True  # type: ignore[arg-type]
    # FORCE_COLOR colours output that is not a terminal (a CI log); NO_COLOR wins over it, and
    # the option over both; either variable set to the empty string counts as not set
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert "\x1b[" in arh(*args).out
    assert "\x1b[" not in arh(*args, "--color", "never").out
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in arh(*args).out
    monkeypatch.setenv("NO_COLOR", "")
    assert "\x1b[" in arh(*args).out
    monkeypatch.setenv("FORCE_COLOR", "")
    assert "\x1b[" not in arh(*args).out


def test_console_lines_fit_100_columns() -> None:
    text = (GOLDENS / "samples" / "console.txt").read_text(encoding="utf-8")
    wide = [line for line in text.splitlines() if len(line) > 100 and "latency" not in line]
    assert not wide


def test_console_says_when_a_trace_fails_on_its_score_alone() -> None:
    from agent_reliability_harness.render.console import render_console

    warning = Finding("ARH-GRD-001", "warning", "grounding", "no citations", "s2")
    error = Finding("ARH-SCH-001", "error", "schema", "tool 'x' is not allowed", "s1")

    def report(trace_id: str, score: float, findings: tuple[Finding, ...]) -> TraceReport:
        passed = score >= 70 and not any(f.severity == "error" for f in findings)
        return TraceReport(trace_id, "a", "w", "p", score, passed, 0.0, 0.0, None, findings)

    run = RunReport(
        (
            report("low", 69.999, (warning,)),  # 69.999 shows as 70.00: more decimals
            report("lower", 50.0, ()),
            report("erring", 50.0, (error,)),  # its error finding says why
            report("fine", 80.0, (warning,)),
        )
    )
    lines = render_console(run, fail_under=70.0).splitlines()
    said = [line for line in lines if "score alone" in line]
    assert said == [
        "      fails on its score alone: 69.999 is below the pass threshold of 70 (--fail-under)",
        "      fails on its score alone: 50.00 is below the pass threshold of 70 (--fail-under)",
    ]
    assert lines.index(said[0]) == 2  # after the verdict and details lines
    assert not [line for line in render_console(run).splitlines() if "score alone" in line]


def test_markdown_says_when_a_trace_fails_on_its_score_alone() -> None:
    from agent_reliability_harness.render.markdown import MarkdownWriter

    warning = Finding("ARH-GRD-001", "warning", "grounding", "no citations", "s2")
    error = Finding("ARH-SCH-001", "error", "schema", "tool 'x' is not allowed", "s1")
    reports = (
        TraceReport("low", "a", "w", "p", 69.999, False, 0.0, 0.0, None, (warning,)),
        TraceReport("erring", "a", "w", "p", 50.0, False, 0.0, 0.0, None, (error,)),
    )
    run = RunReport(reports)
    text = render_markdown(run, fail_under=70.0)
    said = [line for line in text.splitlines() if "score alone" in line]
    # 69.999 shows as 70.00 with two decimals; the trace with an error finding says nothing
    assert said == [
        "Fails on its score alone: 69.999 is below the pass threshold of 70 (`--fail-under`)."
    ]
    lines = text.splitlines()
    assert lines[lines.index(said[0]) - 2].startswith("Score 70.00 · a / w")
    assert "score alone" not in render_markdown(run)  # the threshold unknown: nothing said
    writer = MarkdownWriter(fail_under=70.0)
    for report in reports:
        writer.add(report)
    assert writer.head(run.summary()) == text


def test_junit_names_stay_on_one_line_and_a_score_failure_says_why() -> None:
    from agent_reliability_harness.errors import InputError
    from agent_reliability_harness.render.junit import render_junit

    warning = Finding("ARH-GRD-001", "warning", "grounding", "no citations", "s2")
    report = TraceReport(
        "::error::x\n::set-output name=verdict::pass", "agent\r\n##[error]", "wf", "p",
        69.999, False, 0.0, 0.0, None, (warning,), source_path="a\nb.json",
    )  # fmt: skip
    error = InputError("invalid JSON", source="c\n::warning::d.json")
    run = RunReport((report,), input_errors=(error,), policy_id="pol\nicy")
    text = render_junit(run, fail_under=70.0)
    root = ET.fromstring(text.split("\n", 1)[1])  # noqa: S314 - our own output
    attributes = [value for element in root.iter() for value in element.attrib.values()]
    assert not [value for value in attributes if "\n" in value or "\r" in value]
    case = root.find("testsuite/testcase")
    assert case is not None
    assert case.attrib["name"] == "::error::x\\n::set-output name=verdict::pass"
    assert case.attrib["classname"] == "agent\\r\\n##[error].wf"
    assert case.attrib["file"] == "a\\nb.json"
    failure = case.find("failure")
    assert failure is not None
    # 69.999 shows as 70.00 with two decimals: as many more as it takes
    assert failure.attrib["message"] == (
        "score 70.00/100; 0 error findings; fails on its score alone: 69.999 is below the pass "
        "threshold of 70"
    )
    # without the threshold (a report read back from JSON) the message says what it can
    assert 'message="score 70.00/100; 0 error findings"' in render_junit(run)


def test_console_escapes_hostile_text() -> None:
    text = (GOLDENS / "hostile" / "console.txt").read_text(encoding="utf-8")
    assert "\x1b" not in text
    assert "\u202e" not in text
    assert "evil|id <b>bold</b> @octocat #12 \\x1b[31mred\\u202e\\ud800" in text


def test_console_escapes_every_format_character() -> None:
    import unicodedata

    from agent_reliability_harness.render._text import terminal_safe

    # The Cf characters of the running Python's Unicode database (arh lists those of Unicode
    # 15.1); each is shown as \xHH, \uHHHH or \U00HHHHHH (docs/reports.md), never as itself.
    for code in range(0x110000):
        char = chr(code)
        if unicodedata.category(char) == "Cf":
            expected = f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
            expected = f"\\x{code:02x}" if code < 0x100 else expected  # U+00AD
            assert terminal_safe(f"x{char}y") == f"x{expected}y", hex(code)
    assert terminal_safe("x\u200by \u00ad\u2060\U000e0041") == "x\\u200by \\xad\\u2060\\U000e0041"
    assert (
        terminal_safe("caf\u00e9 \u3000 \U0001f600") == "caf\u00e9 \u3000 \U0001f600"
    )  # printable


def _command_lines(text: str) -> list[str]:
    """Lines a CI runner would read as a workflow command: "##[" anywhere, or "::" at the start
    after blanks (GitHub's runner trims them)."""
    return [line for line in text.splitlines() if "##[" in line or line.lstrip().startswith("::")]


def test_console_wrapping_cannot_start_a_workflow_command(arh: Arh, tmp_path: Path) -> None:
    from agent_reliability_harness.regression import compare_reports, evaluate_gate
    from agent_reliability_harness.render.compare import render_compare_console
    from agent_reliability_harness.render.console import render_console

    # The audit's case: the wrapper split the word "'AAAA...::error" just before its "::".
    policy = tmp_path / "p.json"
    policy.write_text('{"policy_id": "p", "allowed_tools": {}}', encoding="utf-8")
    tool = "A" * 64 + "::error title=pwned::injected-annotation"
    step = {"step_id": "s", "type": "tool_call", "tool_name": tool}
    trace = tmp_path / "t.json"
    trace.write_text(
        json.dumps({"trace_id": "w", "agent_name": "a", "workflow": "w", "steps": [step]}),
        encoding="utf-8",
    )
    run = arh("validate", "--policy", policy, trace)
    assert run.status == 1
    assert not _command_lines(run.out), run.out
    assert "\\x3a:error title=pwned\\x3a:injected-annotation" in run.out.replace(
        "\n" + " " * 14, ""
    )
    # Every place a long word can be split, in both writers: "::" and "##[" after 0 to 120
    # characters of a word, after a space, and ":::" (whose second and third colons are a pair).
    for n in range(121):
        for tail in ("::error x", " ::warning x", ":::add-mask x", "##[group]x"):
            finding = Finding("ARH-SCH-001", "error", "schema", "B" * n + tail, "s1")
            report = TraceReport("t", "a", "w", "p", 0.0, False, 0.0, 0.0, None, (finding,))
            other = TraceReport("t", "a", "w", "p", 100.0, True, 0.0, 0.0, None, ())
            validate = render_console(RunReport((report,)))
            result = compare_reports(RunReport((other,)), RunReport((report,)))
            compare = render_compare_console(result, evaluate_gate(result, "regressions"))
            assert not _command_lines(validate + compare), (n, tail)


# -- Writing -------------------------------------------------------------------------------------


def test_every_format_in_one_run_and_byte_identical(arh: Arh, tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    assert _produce(arh, "hostile", one) == _produce(arh, "hostile", two)


def test_an_interrupted_write_leaves_the_old_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "report.json"
    target.write_text("old", encoding="utf-8")

    def interrupted(src: str, dst: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(str(target), "new")
    assert target.read_text(encoding="utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def _inert_list_item(text: str) -> str:
    """The one paragraph-free list item ``- text`` renders to (anything else is injected)."""
    from conftest import render_markdown as to_html

    html = to_html(f"- {text}\n")
    match = re.fullmatch(r"<ul>\n<li>(.*)</li>\n</ul>\n", html)
    assert match, html
    assert not re.search(r"<(h\d|ul|ol|hr|blockquote|pre|table|p)\b", match.group(1)), html
    return match.group(1)


@pytest.mark.parametrize(
    "value",
    ["# All checks passed", "###### x", "- item", "+ item", "* item", "1. item", "12) item",
     "---", "===", "> quote", "| a | b |", "   # indented heading", "    code", "```", "~~~"],
)  # fmt: skip
def test_markdown_text_at_the_start_of_a_list_item_adds_no_block(value: str) -> None:
    from html import unescape

    from agent_reliability_harness.render._markdown import md_text

    shown = _inert_list_item(md_text(value))
    assert unescape(shown).strip() == value.strip()


def test_markdown_breaks_gh_issue_references() -> None:
    from agent_reliability_harness.render._markdown import md_text

    for value in ("fixes GH-123", "gh-7", "(GH-42)"):
        assert not re.search(r"(?i)\bgh-\d", md_text(value)), value
    assert md_text("SIGH-1 GH-x") == "SIGH-1 GH-x"  # not references: left alone


def test_markdown_file_names_cannot_add_headings(arh: Arh, tmp_path: Path) -> None:
    folder = tmp_path / "repo"
    folder.mkdir()
    (folder / "# All checks passed.json").write_text("{bad", encoding="utf-8")
    old = Path.cwd()
    os.chdir(folder)
    try:
        run = arh(
            "validate", "--policy", SAMPLES / "policy_trajectory.json",
            "# All checks passed.json", "--md-out", tmp_path / "report.md", "--quiet",
        )  # fmt: skip
    finally:
        os.chdir(old)
    assert run.status == 3
    text = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert text.startswith("## arh validation: 0 traces checked, 1 input error\n")
    item = next(line for line in text.splitlines() if line.startswith("- "))
    assert "All checks passed.json:1:2: invalid JSON" in _inert_list_item(item[2:])


def test_markdown_headline_counts_input_errors(arh: Arh, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n{not json\n", encoding="utf-8")
    policy = SAMPLES / "policy_trajectory.json"
    md = tmp_path / "report.md"
    arh("validate", "--policy", policy, SAMPLES / "traces" / "rebook_pass.json", bad,
        "--md-out", md, "--quiet")  # fmt: skip
    first = md.read_text(encoding="utf-8").splitlines()[0]
    assert first == "## arh validation: the 1 trace passed, 2 inputs could not be read"


def test_markdown_input_errors_keep_to_the_limit(arh: Arh, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n" * 3000, encoding="utf-8")
    md = tmp_path / "report.md"
    run = arh("validate", "--policy", SAMPLES / "policy_trajectory.json", bad, "--md-out", md)
    assert run.status == 3
    text = md.read_text(encoding="utf-8")
    assert len(text) <= MAX_CHARS
    assert text.startswith("## arh validation: 0 traces checked, 3000 input errors\n")
    assert re.search(
        r"\n\d+ more input errors are not listed here to keep this report within GitHub's size "
        r"limit; see the JSON report\.\n\Z",
        text,
    )
    assert text.count("\n- ") > 100  # the room left is used


def test_markdown_long_trace_ids_keep_to_the_limit(arh: Arh, tmp_path: Path) -> None:
    trace = {
        "schema_version": "1", "trace_id": "x" * 100_000, "agent_name": "a", "workflow": "w",
        "metadata": {"adapter": {"missing": ["latency_ms", "cost_usd", "tokens"]}},
        "steps": [{"step_id": "s1", "type": "user_message", "content": "hi"}],
    }  # fmt: skip
    path = tmp_path / "long.json"
    path.write_text(json.dumps(trace), encoding="utf-8")
    md = tmp_path / "report.md"
    arh("validate", "--policy", SAMPLES / "policy_trajectory.json", path, "--md-out", md)
    text = md.read_text(encoding="utf-8")
    assert len(text) < 10_000
    assert "not listed here" not in text
    assert "not shown here" not in text
    assert text.count("`" + "x" * 299 + "\u2026`") == 5  # the summary row and 4 checks
    assert_markdown_is_inert(text)


def test_markdown_checks_not_applicable_are_cut_to_their_share() -> None:
    from agent_reliability_harness.model.fidelity import NotApplicable

    checks = tuple(NotApplicable(f"ARH-X-{i:03d}", "c" * 250, "f" * 250) for i in range(200))
    report = TraceReport("t", "a", "w", "p", 1.0, True, 0.0, 0.0, None, (), not_applicable=checks)
    text = render_markdown(RunReport((report,)))
    assert len(text) <= MAX_CHARS
    assert re.search(r"\n\d+ more checks are not listed here to keep this report", text)


def test_markdown_says_one_more_trace_in_the_singular() -> None:
    def report(i: int, agent: str) -> TraceReport:
        return TraceReport(f"t{i}", agent, "w" * 260, "p", 0.0, False, 0.0, 0.0, None, ())

    small = [report(i, "a" * 280) for i in range(49)]  # rows of about 590 characters
    big = report(49, "<" * 300)  # a row of 1,200 more
    text = render_markdown(RunReport((*small, big)))
    assert "\n1 more trace is not listed here to keep this report within GitHub's size limit" in (
        text
    )
    assert len(text) <= MAX_CHARS


def _heading(markdown: str) -> str:
    """The text of the one heading in ``markdown`` as GitHub shows it."""
    from html import unescape

    match = re.search(r"<h3>(.*)</h3>", render_markdown_html(markdown))
    assert match, markdown
    return unescape(re.sub(r"</?code>", "`", match.group(1)))


@pytest.mark.parametrize(
    ("trace_id", "shown"),
    [
        # CommonMark drops a heading's closing "#"s and its trailing blanks: they are escaped.
        ("x", "x"), ("x #", "x #"), ("x ##", "x ##"), ("x # ", "x # "), ("x ", "x "),
        # As on the console (docs/reports.md, Escaping): tabs and line breaks as \t, \r, \n,
        # format characters such as U+200B as \uHHHH; other spaces stay what they are.
        ("x\ty", "x\\ty"), ("\r", "\\r"), ("a\nb", "a\\nb"), ("x\u200by", "x\\u200by"),
        ("\u00adx", "\\xadx"), ("\u3000x", "\u3000x"), (" x", " x"),
    ],
)  # fmt: skip
def test_markdown_headings_show_trace_ids_as_they_are(trace_id: str, shown: str) -> None:
    from agent_reliability_harness.render._markdown import md_code, md_text

    assert _heading(f"### {md_text(trace_id)}") == shown
    assert _heading(f"### {md_code(trace_id)}") == f"`{shown}`"


def test_markdown_trace_sections_of_ids_differing_in_closing_hashes_differ() -> None:
    finding = Finding("ARH-SCH-001", "error", "schema", "m", "s1")
    reports = tuple(
        TraceReport(i, "a", "w", "p", 0.0, False, 0.0, 0.0, None, (finding,))
        for i in ("x", "x #", "x ##")
    )
    headings = re.findall(
        r"<h3>(.*)</h3>", render_markdown_html(render_markdown(RunReport(reports)))
    )
    assert headings == ["x", "x #", "x ##"]


def test_markdown_escapes_dollar_signs_github_renders_as_math() -> None:
    from agent_reliability_harness.render._markdown import md_code, md_text

    assert md_text("$$x$$ costs $5") == "\\$\\$x\\$\\$ costs \\$5"
    assert md_code("$$x$$") == "`$$x$$`"  # no math inside code
    report = TraceReport("t", "$$x$$", "$y$", "p", 0.0, False, 0.0, 0.0, None, ())
    text = render_markdown(RunReport((report,)))
    assert "\\$\\$x\\$\\$ / \\$y\\$" in text
    assert not re.search(r"(?<!\\)\$", text)  # every "$" of the report is escaped


def _big_and_small(count: int) -> tuple[TraceReport, TraceReport]:
    """A trace with ``count`` findings (one a step, s0, s1, ...) and one with a single finding."""

    def finding(i: int) -> Finding:
        return Finding("ARH-SCH-001", "error", "schema", "tool 'bad' is not allowed", f"s{i}")

    big = tuple(finding(i) for i in range(count))
    return (
        TraceReport("a-big", "a", "w", "p", 0.0, False, 0.0, 0.0, None, big),
        TraceReport("b-small", "a", "w", "p", 0.0, False, 0.0, 0.0, None, (finding(0),)),
    )


def _cut_section(text: str, heading: str, verb: str) -> tuple[list[str], int]:
    """The steps of the rows under ``heading`` and the number its left-out line gives."""
    section = text.split(heading + "\n", 1)[1].split("\n#", 1)[0]
    steps = re.findall(r"^\| [a-z]+ \| `ARH-SCH-001` \| `(s\d+)` \|", section, re.MULTILINE)
    more = re.search(
        rf"^(\d+) more findings are not {verb} here to keep this report", section, re.MULTILINE
    )
    return steps, int(more.group(1)) if more else 0


def test_markdown_cuts_a_big_section_and_still_shows_the_next_trace() -> None:
    text = render_markdown(RunReport(_big_and_small(1000)))
    assert len(text) <= MAX_CHARS
    assert len(text) > MAX_CHARS - 2_000  # the room is used, not left empty
    assert "failing traces are not shown" not in text
    steps, more = _cut_section(text, "### a-big", "shown")
    # its first findings, in order, then a line for the others: 1000 in all
    assert steps == [f"s{i}" for i in range(len(steps))]
    assert len(steps) > 100
    assert len(steps) + more == 1000
    assert _cut_section(text, "### b-small", "shown") == (["s0"], 0)
    assert_markdown_is_inert(text)
    for line in text.splitlines():
        if line.startswith("|"):
            assert len(line.replace("\\|", "").strip("|").split("|")) == 6, line


def test_markdown_makes_only_the_rows_it_may_show(monkeypatch: pytest.MonkeyPatch) -> None:
    """A trace of 40,000 findings costs the Markdown reports only the rows that could fit in
    one report, made once for the report (and once more by the writer of --md-out, to measure
    the trace): a thousand rows or so, not 40,000 (benchmarks/perf/markdown_perf.py times them)."""
    from agent_reliability_harness.regression.compare import compare_reports
    from agent_reliability_harness.regression.gate import evaluate_gate
    from agent_reliability_harness.render import _markdown, compare, markdown

    made: list[list[str]] = []

    def md_row(cells: list[str]) -> str:
        made.append(cells)
        return _markdown.md_row(cells)

    monkeypatch.setattr(markdown, "md_row", md_row)
    monkeypatch.setattr(compare, "md_row", md_row)
    run = RunReport(_big_and_small(40_000))
    result = compare_reports(RunReport(()), run)

    def assert_rows(write: Callable[[], str], passes: int = 1) -> None:
        made.clear()
        text = write()
        shown = re.findall(r"^\| (?:new \| )?error \| `ARH-SCH-001`.*", text, re.MULTILINE)
        fit = MAX_CHARS // min(len(row) + 1 for row in shown) + 1  # rows in one report at most
        assert 500 < len(shown) < len([c for c in made if "`ARH-SCH-001`" in c]) <= passes * fit

    def streamed() -> str:
        writer = markdown.MarkdownWriter()
        writer.add(run.reports[0])
        writer.add(run.reports[1])
        return writer.head(run.summary())

    assert_rows(lambda: render_markdown(run))
    assert_rows(streamed, passes=2)
    assert_rows(lambda: compare.render_compare_markdown(result, evaluate_gate(result)))


def test_markdown_escapes_only_the_lines_it_may_show(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Markdown reports escape the values they show (and the next, which does not fit), not
    those of 20,000 input errors, or of 20,000 traces that regressed (each a gate reason, a row
    of the table of changed traces and a section of the comparison)."""
    from agent_reliability_harness.errors import InputError
    from agent_reliability_harness.regression.compare import compare_reports
    from agent_reliability_harness.regression.gate import evaluate_gate
    from agent_reliability_harness.render import _markdown, compare, markdown

    escaped: list[str] = []

    def md_text(text: str, **limit: int) -> str:
        escaped.append(text)
        return _markdown.md_text(text, **limit)

    monkeypatch.setattr(markdown, "md_text", md_text)
    monkeypatch.setattr(compare, "md_text", md_text)
    errors = tuple(InputError("not JSON", source="runs.jsonl", line=i) for i in range(20_000))
    text = render_markdown(RunReport((), errors))
    assert 0 < text.count("\n- ") < len(escaped) <= text.count("\n- ") + 1

    def runs(passed: bool) -> RunReport:
        findings = () if passed else (Finding("ARH-SCH-001", "error", "schema", "bad", "s1"),)
        return RunReport(
            tuple(
                TraceReport(f"t{i}", "a", "w", "p", 0.0, passed, 0.0, 0.0, None, findings)
                for i in range(20_000)
            )
        )

    result = compare_reports(runs(True), runs(False))
    escaped.clear()
    text = compare.render_compare_markdown(result, evaluate_gate(result))
    reasons, rows, sections = text.count("\n- "), text.count("\n| `t"), text.count("\n#### ")
    assert min(reasons, rows, sections) > 100
    for left_out in ("gate reasons are not listed", "changed traces are not listed",
                     "changed traces are not detailed"):  # fmt: skip
        assert left_out in text
    # A reason, a score in the table, a section's trace id, severity and message: those shown,
    # and the one that does not fit (for a section, also the next, to know the room it needs).
    assert len(escaped) <= reasons + 1 + rows + 1 + 3 * (sections + 2)


def test_junit_line_breaks_from_a_trace_cannot_forge_finding_lines() -> None:
    from agent_reliability_harness.render.junit import render_junit

    forged = "s1): looks fine\n[INFO] ARH-SCH-001 (step s9"
    finding = Finding("ARH-SCH-001", "error", "schema", "tool 'x'\r\nis not allowed", forged)
    report = TraceReport("t", "a", "w", "p", 0.0, False, 0.0, 0.0, None, (finding,))
    root = ET.fromstring(render_junit(RunReport((report,))).split("\n", 1)[1])  # noqa: S314
    failure = next(root.iter("failure"))
    assert failure.text is not None
    lines = failure.text.split("\n")
    assert len(lines) == 1  # one finding, one line (it has no expected/observed)
    assert lines[0] == (
        "[ERROR] ARH-SCH-001 (step s1): looks fine\\n[INFO] ARH-SCH-001 (step s9): "
        "tool 'x'\\r\\nis not allowed"
    )


def test_junit_line_breaks_in_input_error_text_are_escaped() -> None:
    from agent_reliability_harness.errors import InputError
    from agent_reliability_harness.render.junit import render_junit

    errors = (
        InputError("file not found", source="line1\n# injected heading"),
        InputError("file not found", source="x\r\n- bullet"),
    )
    text = render_junit(RunReport((), input_errors=errors))
    root = ET.fromstring(text.split("\n", 1)[1])  # noqa: S314
    shown = [element.text for element in root.iter("error")]
    # As in failures (docs/ci.md): a line break is written as the two characters \n or \r.
    assert shown == [
        "line1\\n# injected heading: file not found",
        "x\\r\\n- bullet: file not found",
    ]


# -- The comparison: JUnit and SARIF ---------------------------------------------------------------

# A baseline and a candidate, validated from the repository root with relative paths. By trace:
# rebook-1001 passes, then repeats its rebooking (pass -> fail, a new error, a drop of 1.84);
# rebook-1002 repeats it, then is fixed (fail -> pass, its finding resolved); rebook-1003 is
# removed (its finding resolved); rebook-1004 fails alike in both (three unchanged findings);
# rebook-2041 (passing) and rebook-2042 (two errors) are added, from a JSON Lines file.
COMPARE_POLICY = "samples/policy_trajectory.json"
COMPARE_BASELINE = (
    "docs/examples/regression/baseline-runs",
    "samples/traces/rebook_double_rebooking.json",
    "samples/traces/rebook_prompt_injection.json",
)
COMPARE_CANDIDATE = (
    "docs/examples/regression/candidate-runs",
    "tests/goldens/inputs/compare/rebook_1002_fixed.json",
    "samples/traces/more_runs.jsonl",
)
COMPARE_FILES = ("compare.xml", "compare.sarif")


def _produce_compare(arh: Arh, out: Path, *, saved: bool = False) -> tuple[Run, dict[str, bytes]]:
    """``arh compare --junit-out --sarif-out`` of the runs above, validating the candidate now
    or (``saved``) reading its saved report, and the validation SARIF of both runs."""
    old = Path.cwd()
    os.chdir(ROOT)
    try:
        for name, inputs in (("baseline", COMPARE_BASELINE), ("candidate", COMPARE_CANDIDATE)):
            arh("validate", "--policy", COMPARE_POLICY, *inputs, "--quiet", "--json-out",
                out / f"{name}.json", "--sarif-out", out / f"{name}.sarif")  # fmt: skip
        candidate = (
            ["--candidate", out / "candidate.json"]
            if saved
            else ["--policy", COMPARE_POLICY, *COMPARE_CANDIDATE]
        )
        run = arh(
            "compare", "--baseline", out / "baseline.json", *candidate, "--max-score-drop", "1",
            "--junit-out", out / "compare.xml", "--sarif-out", out / "compare.sarif",
        )  # fmt: skip
    finally:
        os.chdir(old)
    names = (*COMPARE_FILES, "baseline.sarif", "candidate.sarif")
    return run, {name: (out / name).read_bytes() for name in names}


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The comparison's files, as the goldens hold them, and the validation SARIF of both runs."""
    produced = {name: (GOLDENS / "compare" / name).read_bytes() for name in COMPARE_FILES}
    out = tmp_path_factory.mktemp("validated")
    old = Path.cwd()
    os.chdir(ROOT)
    try:
        for name, inputs in (("baseline", COMPARE_BASELINE), ("candidate", COMPARE_CANDIDATE)):
            main(["validate", "--policy", COMPARE_POLICY, *inputs, "--quiet",
                  "--sarif-out", str(out / f"{name}.sarif")])  # fmt: skip
    finally:
        os.chdir(old)
    return produced | {n: (out / n).read_bytes() for n in ("baseline.sarif", "candidate.sarif")}


def test_compare_goldens(arh: Arh, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    run, produced = _produce_compare(arh, tmp_path)
    # the exit status and the "written to" lines are those of the other formats
    assert run.status == 1
    assert run.out.splitlines()[-2:] == [
        f"Comparison JUnit written to {tmp_path / 'compare.xml'}",
        f"Comparison SARIF written to {tmp_path / 'compare.sarif'}",
    ]
    target = GOLDENS / "compare"
    if request.config.getoption("--update-goldens"):
        target.mkdir(parents=True, exist_ok=True)
        for name in COMPARE_FILES:
            (target / name).write_bytes(produced[name])
    for name in COMPARE_FILES:
        golden = target / name
        assert golden.exists(), f"missing golden {golden}: run `make goldens`"
        assert produced[name] == golden.read_bytes(), f"compare/{name} differs: `make goldens`"


def test_compare_reports_are_byte_identical_and_the_same_from_saved_reports(
    arh: Arh, tmp_path: Path
) -> None:
    runs = []
    for name, saved in (("one", False), ("two", False), ("saved", True)):
        (tmp_path / name).mkdir()
        runs.append(_produce_compare(arh, tmp_path / name, saved=saved)[1])
    for name in COMPARE_FILES:
        assert runs[0][name] == runs[1][name], name
    # from saved reports: the same, but that a result has no step line (a report does not say
    # at which step, by position, a finding is)
    assert runs[2]["compare.xml"] == runs[0]["compare.xml"]
    now, saved = (json.loads(run["compare.sarif"]) for run in runs[::2])
    for result in now["runs"][0]["results"]:
        result["locations"][0]["physicalLocation"].pop("region", None)
    for result in saved["runs"][0]["results"]:
        jsonl = result["properties"]["trace_id"] == "rebook-2042"  # the record's line
        assert ("region" in result["locations"][0]["physicalLocation"]) == jsonl
        result["locations"][0]["physicalLocation"].pop("region", None)
    assert saved == now


def _results_by_state(doc: dict) -> dict[str, list[dict]]:  # type: ignore[type-arg]
    found: dict[str, list[dict]] = {"new": [], "unchanged": [], "absent": []}  # type: ignore[type-arg]
    for result in doc["runs"][0]["results"]:
        found[result["baselineState"]].append(result)
    return found


def test_compare_sarif_is_valid_and_marks_each_finding(compared: dict[str, bytes]) -> None:
    doc = _valid_sarif(compared["compare.sarif"].decode("ascii"))
    sarif_run = doc["runs"][0]
    by_state = _results_by_state(doc)
    # by hand, from the runs above: new ones first, then unchanged, then absent, by trace id
    shown = {
        state: [(r["properties"]["trace_id"], r["ruleId"]) for r in results]
        for state, results in by_state.items()
    }
    assert shown == {
        "new": [("rebook-1001", "ARH-FLW-003"), ("rebook-2042", "ARH-BUD-001"),
                ("rebook-2042", "ARH-CMP-001")],
        "unchanged": [("rebook-1004", "ARH-GRD-002"), ("rebook-1004", "ARH-FLW-001"),
                      ("rebook-1004", "ARH-GRD-001")],
        "absent": [("rebook-1002", "ARH-FLW-003"), ("rebook-1003", "ARH-SAF-001")],
    }  # fmt: skip
    assert [r["baselineState"] for r in sarif_run["results"]] == ["new"] * 3 + ["unchanged"] * 3 + [
        "absent"
    ] * 2
    assert sarif_run["automationDetails"] == {"id": "arh-compare/airline-rebooking-v1/"}
    assert sarif_run["properties"]["gate"] == {"passed": False, "fail_on": "regressions"}
    assert sarif_run["properties"]["baseline"]["policy_id"] == "airline-rebooking-v1"
    rules = sarif_run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == sorted(RULES)
    for result in sarif_run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]


def test_compare_sarif_results_are_those_of_the_validation_reports(
    compared: dict[str, bytes],
) -> None:
    """A result of the comparison is the result the validation SARIF gives the finding, with
    its baselineState: the candidate's for new and unchanged ones (fingerprint, message and
    location to the line), the baseline's for absent ones (without the step's line, which the
    baseline report does not record)."""

    def results(name: str) -> dict[str, dict]:  # type: ignore[type-arg]
        doc = json.loads(compared[name])
        return {r["partialFingerprints"]["arhFinding/v1"]: r for r in doc["runs"][0]["results"]}

    baseline, candidate = results("baseline.sarif"), results("candidate.sarif")
    by_state = _results_by_state(json.loads(compared["compare.sarif"]))
    prints = {
        state: {r["partialFingerprints"]["arhFinding/v1"] for r in found}
        for state, found in by_state.items()
    }
    # exact matching: new = candidate - baseline, unchanged = both, absent = baseline - candidate
    assert prints["new"] == candidate.keys() - baseline.keys()
    assert prints["unchanged"] == candidate.keys() & baseline.keys()
    assert prints["absent"] == baseline.keys() - candidate.keys()
    for result in by_state["new"] + by_state["unchanged"]:
        state = result.pop("baselineState")
        assert result == candidate[result["partialFingerprints"]["arhFinding/v1"]], state
    for result in by_state["absent"]:
        del result["baselineState"]
        expected = baseline[result["partialFingerprints"]["arhFinding/v1"]]
        expected["locations"][0]["physicalLocation"].pop("region", None)
        assert result == expected


def test_compare_junit_reads_back_with_junitparser(compared: dict[str, bytes]) -> None:
    from junitparser import Failure, JUnitXml, Skipped

    text = compared["compare.xml"].decode("utf-8")
    xml = JUnitXml.fromstring(text.split("\n", 1)[1])
    suite = next(iter(xml))
    cases = list(suite)
    results = {case.name: [type(r).__name__ for r in case.result] or ["passed"] for case in cases}
    # by hand: the gate fails; rebook-1001 (pass -> fail, a new error, a drop beyond 1) and the
    # added rebook-2042 fail; the removed rebook-1003 and rebook-1002 is back (fail -> pass)...
    assert results == {
        "regression gate": ["Failure"],
        "rebook-1001": ["Failure"],
        "rebook-1002": ["passed"],
        "rebook-1003": ["Skipped"],
        "rebook-1004": ["passed"],
        "rebook-2041": ["passed"],
        "rebook-2042": ["Failure"],
    }
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (7, 3, 0, 1)
    assert [c.name for c in cases] == list(results)  # the gate first, then by trace id
    failures = {c.name: next(r for r in c.result if isinstance(r, Failure)) for c in cases
                if any(isinstance(r, Failure) for r in c.result)}  # fmt: skip
    assert failures["rebook-1001"].message == (
        "1 new error finding: ARH-FLW-003; regressed from pass to fail; "
        "score dropped 1.84 points (limit 1.00)"
    )
    assert failures["rebook-2042"].message == (
        "2 new error findings: ARH-BUD-001, ARH-CMP-001; added, and fails"
    )
    assert failures["regression gate"].message == (
        "the gate failed (fail-on regressions): 4 reasons"
    )
    assert (failures["regression gate"].text or "").splitlines() == [
        (
            "3 new error findings: rebook-1001:ARH-FLW-003, rebook-2042:ARH-BUD-001, "
            "rebook-2042:ARH-CMP-001"
        ),
        "trace 'rebook-1001' regressed from pass to fail",
        "added trace 'rebook-2042' fails",
        "trace 'rebook-1001' score dropped 1.84 points (limit 1.00)",
    ]
    removed = next(c for c in cases if c.name == "rebook-1003")
    assert [r.message for r in removed.result if isinstance(r, Skipped)] == [
        "removed: not in the candidate run"
    ]
    fixed = next(c for c in cases if c.name == "rebook-1002")
    assert fixed.system_out.splitlines() == [
        "verdict: fail -> pass; score: 98.16 -> 100.00 (+1.84)",
        (
            "resolved: [ERROR] ARH-FLW-003 (step s5b): duplicate side effect: tool "
            "'rebook_flight' was called again with identical arguments after step 's5' succeeded"
        ),
        (
            "    expected: one successful call per distinct set of arguments; observed: 2 calls "
            "with identical arguments"
        ),
    ]


def _report(trace_id: str, passed: bool, *findings: Finding, policy: str = "p") -> TraceReport:
    score = 100.0 if passed else 60.0
    return TraceReport(trace_id, "a", "w", policy, score, passed, 0.0, 0.0, None, findings)


def test_compare_sarif_numbers_equal_findings_as_the_validation_reports_do() -> None:
    from agent_reliability_harness.regression import compare_reports, evaluate_gate
    from agent_reliability_harness.render.sarif import render_compare_sarif

    same = Finding("ARH-FLW-003", "error", "flow", "duplicate", "s5", subject="rebook")
    other = Finding("ARH-FLW-003", "error", "flow", "duplicate", "s6", subject="rebook")

    def prints(sarif: str) -> list[tuple[str, str]]:
        results = json.loads(sarif)["runs"][0]["results"]
        return [
            (r.get("baselineState", ""), r["partialFingerprints"]["arhFinding/v1"][-2:])
            for r in results
        ]

    # fewer: the baseline numbers its three equal findings :1, :2, :3; the candidate keeps one
    # (:1, unchanged) and the other two are gone (:2 and :3, absent, as the baseline numbered them)
    for baseline, candidate, expected in (
        ((same, same, same), (same,), [("unchanged", ":1"), ("absent", ":2"), ("absent", ":3")]),
        # more: the first keeps :1, the next two are new, :2 and :3 as the candidate's report has
        ((same,), (same, same, same), [("new", ":2"), ("new", ":3"), ("unchanged", ":1")]),
        # another step is another fingerprint, numbered on its own
        ((same,), (other, same), [("new", ":1"), ("unchanged", ":1")]),
    ):
        base = RunReport((_report("t", False, *baseline),))
        cand = RunReport((_report("t", False, *candidate),))
        result = compare_reports(base, cand)
        text = render_compare_sarif(result, evaluate_gate(result))
        assert prints(text) == expected
        # the same fingerprints as the validation SARIF of each run
        shown = {p for state, p in prints(text) if state != "absent"}
        assert shown == {p for _, p in prints(render_sarif(cand))}
        absent = {p for state, p in prints(text) if state == "absent"}
        assert absent == {p for _, p in prints(render_sarif(base))} - shown


def test_compare_sarif_leaves_out_absent_then_unchanged_results_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agent_reliability_harness.regression import compare_reports, evaluate_gate
    from agent_reliability_harness.render import sarif

    def finding(step: str) -> Finding:
        return Finding("ARH-SCH-001", "error", "schema", "not allowed", step)

    old = (finding("s1"), finding("s2"), finding("gone1"), finding("gone2"))
    new = (finding("s1"), finding("s2"), finding("new1"))
    result = compare_reports(
        RunReport((_report("t", False, *old),)), RunReport((_report("t", False, *new),))
    )
    monkeypatch.setattr(sarif, "MAX_RESULTS", 2)
    doc = _valid_sarif(sarif.render_compare_sarif(result, evaluate_gate(result)))
    sarif_run = doc["runs"][0]
    assert [r["baselineState"] for r in sarif_run["results"]] == ["new", "unchanged"]
    notes = sarif_run["invocations"][0]["toolExecutionNotifications"]
    assert notes[-1]["message"]["text"] == (
        "3 of 5 results were left out (1 unchanged, 2 absent): code scanning accepts at most 2 "
        "results per run"
    )


def test_compare_sarif_and_junit_escape_hostile_text() -> None:
    import unicodedata

    from agent_reliability_harness.regression import compare_reports, evaluate_gate
    from agent_reliability_harness.render.junit import render_compare_junit
    from agent_reliability_harness.render.sarif import render_compare_sarif

    step = "s\x1b[31m\u2028[click](https://evil.example)"
    finding = Finding("ARH-SCH-001", "error", "schema", "tool 'x'\nis not allowed", step)
    trace_id = "t\u202eevil\n::error::x"
    base = RunReport((_report(trace_id, True, policy="p\x1b"),))
    cand = RunReport((_report(trace_id, False, finding, policy="q\u202e"),))
    result = compare_reports(base, cand)
    gate = evaluate_gate(result, fail_on_drift=True)
    doc = _valid_sarif(render_compare_sarif(result, gate, input_errors=2))
    sarif_run = doc["runs"][0]
    hidden = {"Cc", "Cf", "Cs", "Zl", "Zp"}
    ours = {k: v for k, v in sarif_run.items() if k != "tool"}  # rules' help has line breaks
    assert not [s for s in _strings(ours) if any(unicodedata.category(c) in hidden for c in s)]
    (result_doc,) = sarif_run["results"]
    # by hand, as in the validation SARIF: the message holds "](", so "[" and "]" are escaped
    assert result_doc["message"]["text"] == (
        "tool 'x'\\nis not allowed (trace 't\\u202eevil\\n::error::x', "
        "step 's\\x1b\\[31m\\u2028\\[click\\](https://evil.example)')"
    )
    assert sarif_run["automationDetails"]["id"] == "arh-compare/q\\u202e/"
    assert sarif_run["properties"]["baseline"]["policy_id"] == "p\\x1b"
    notes = [
        n["message"]["text"] for n in sarif_run["invocations"][0]["toolExecutionNotifications"]
    ]
    assert notes == [
        "2 candidate inputs could not be read (listed in the run's log)",
        "baseline and candidate were checked against different policies: 'p\\x1b' and 'q\\u202e'",
    ]
    assert sarif_run["invocations"][0]["executionSuccessful"] is False

    text = render_compare_junit(result, gate, input_errors=2)
    root = ET.fromstring(text.split("\n", 1)[1])  # noqa: S314 - our own output
    attributes = [value for element in root.iter() for value in element.attrib.values()]
    assert not [value for value in attributes if "\n" in value or "\r" in value]
    assert not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\u202e]", text)
    cases = {case.get("name"): case for case in root.iter("testcase")}
    assert list(cases) == ["regression gate", "candidate inputs", "t\\u202eevil\\n::error::x"]
    lines = (cases["t\\u202eevil\\n::error::x"].findtext("failure") or "").split("\n")
    # one line per finding: the line break of its message is written as \n
    assert lines[1] == (
        "new: [ERROR] ARH-SCH-001 (step s\\x1b[31m\u2028[click](https://evil.example)): "
        "tool 'x'\\nis not allowed"
    )
    error = cases["candidate inputs"].find("error")
    assert error is not None
    assert error.get("message") == "2 candidate inputs could not be read"
    # the drift fails the gate (--fail-on-drift): it is among the gate's reasons
    reasons = (cases["regression gate"].findtext("failure") or "").split("\n")
    assert reasons[-1] == (
        "drift: baseline and candidate were checked against different policies: 'p\\x1b' and "
        "'q\\u202e'"
    )
    assert len(reasons) == len(gate.reasons)


_GATE_FINDINGS = st.lists(
    st.builds(
        Finding,
        st.sampled_from(["ARH-FLW-003", "ARH-SAF-001"]),
        st.sampled_from(["error", "warning"]),
        st.sampled_from(["flow", "safety"]),
        st.just("m"),
        st.sampled_from([None, "s1", "s2"]),
    ),
    max_size=3,
).map(tuple)
_GATE_REPORTS = st.builds(
    TraceReport,
    st.sampled_from(["t1", "t2", "t3", "t4"]),
    st.just("a"),
    st.just("w"),
    st.just("p"),
    st.sampled_from([50.0, 80.0, 80.5, 100.0]),
    st.booleans(),
    st.just(0.0),
    st.just(0.0),
    st.none(),
    _GATE_FINDINGS,
)
_GATE_RUNS = st.lists(_GATE_REPORTS, max_size=4, unique_by=lambda r: r.trace_id).map(
    lambda reports: RunReport(tuple(reports))
)


@settings(max_examples=300, deadline=None)
@given(
    _GATE_RUNS,
    _GATE_RUNS,
    st.sampled_from([("regressions", None), ("regressions", 0.3), ("failures", None),
                     ("never", None)]),
)  # fmt: skip
def test_a_junit_case_fails_exactly_when_the_gate_names_its_trace(
    baseline: RunReport, candidate: RunReport, mode: tuple[str, float | None]
) -> None:
    from agent_reliability_harness.regression import compare_reports, evaluate_gate
    from agent_reliability_harness.render.junit import render_compare_junit

    result = compare_reports(baseline, candidate)
    gate = evaluate_gate(result, *mode)
    root = ET.fromstring(render_compare_junit(result, gate).split("\n", 1)[1])  # noqa: S314
    failing = {
        case.get("name") for case in root.iter("testcase") if case.find("failure") is not None
    }
    assert ("regression gate" in failing) == (not gate.passed)
    # the traces the gate's reasons name: trace 't1' ..., t1:RULE among the new error
    # findings, or the list of "candidate has 2 failing traces: t1, t2" (fail-on failures)
    named = {
        t.trace_id
        for t in result.traces
        for reason in gate.reasons
        if f"'{t.trace_id}'" in reason
        or f"{t.trace_id}:ARH-" in reason
        or (reason.startswith("candidate has") and t.trace_id in reason.split(": ")[1].split(", "))
    }
    assert failing - {"regression gate"} == named
    skipped = {
        case.get("name") for case in root.iter("testcase") if case.find("skipped") is not None
    }
    assert skipped == {t.trace_id for t in result.traces if t.status_change == "removed"}
    suite = root.find("testsuite")
    assert suite is not None
    assert suite.get("failures") == str(len(failing))
    assert suite.get("tests") == str(1 + len(result.traces))


def test_compare_junit_gate_case_holds_the_statistical_reasons(arh: Arh, tmp_path: Path) -> None:
    from junitparser import Failure, JUnitXml

    # docs/statistics.md, section 5: the pass rate drops significantly; --fail-on defaults to
    # never, so no trace's test case fails, and the gate's says what was not gated
    examples = ROOT / "docs" / "examples" / "statistics"
    runs = {}
    for side in ("baseline", "candidate"):
        runs[side] = tmp_path / f"{side}.json"
        arh("validate", "--policy", examples / "policy.json", examples / side,
            "--outcome-at", "/metadata/reward", "--json-out", runs[side], "--quiet")  # fmt: skip
    out = tmp_path / "compare.xml"
    run = arh(
        "compare", "--baseline", runs["baseline"], "--candidate", runs["candidate"],
        "--gate", "pass rate drop significant at 0.05", "--junit-out", out, "--quiet",
    )  # fmt: skip
    assert run.status == 1
    cases = list(next(iter(JUnitXml.fromfile(str(out)))))
    failing = [c.name for c in cases if any(isinstance(r, Failure) for r in c.result)]
    assert failing == ["regression gate"]
    gate = cases[0]
    failure = next(r for r in gate.result if isinstance(r, Failure))
    assert failure.message == "the gate failed (fail-on never): 1 reason"
    assert (failure.text or "").startswith(
        "workflow 'refunds': pass rate dropped significantly (mean per task 0.950 -> 0.550"
    )
    assert gate.system_out == (
        "note: not gated, as --fail-on defaults to never with --gate or --gates: 18 new error "
        "findings, 17 traces from pass to fail (--fail-on regressions gates them too)"
    )
    assert len(cases) == 1 + 40
