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

from agent_reliability_harness import Finding, RunReport, TraceReport
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
