"""Every kind of bad input ends in one clear ``error:`` line and an exit status, never a traceback.

Each test runs ``arh validate`` in-process on files written to a temporary directory. Line and
column numbers in the expected messages were counted by hand from the bytes written (the
comments say how); they are 1-based, as editors show them.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import Run

POLICY = {"policy_id": "inputs-v1", "allow_unlisted_tools": True}
STRICT_POLICY = {"policy_id": "strict-v1", "allowed_tools": {"search": {}}}


def trace(trace_id: str = "t1", **extra: Any) -> dict[str, Any]:
    doc = {
        "trace_id": trace_id,
        "agent_name": "agent",
        "workflow": "flow",
        "steps": [{"step_id": "s1", "type": "model_response", "text": "done"}],
    }
    doc.update(extra)
    return doc


def write(path: Path, content: str | bytes | dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, dict):
        content = json.dumps(content)
    if isinstance(content, str):
        content = content.encode("utf-8")
    path.write_bytes(content)
    return path


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    return write(tmp_path / "policy.json", POLICY)


def assert_no_traceback(run: Run) -> None:
    assert "Traceback" not in run.err
    assert "Traceback" not in run.out


def assert_one_error(run: Run, path: Path | str | None, *fragments: str) -> str:
    """Exactly one ``error:`` line on stderr; it starts with ``path`` and has ``fragments``."""
    assert_no_traceback(run)
    lines = run.err.splitlines()
    assert len(lines) == 1, run.err
    line = lines[0]
    assert line.startswith("error: "), line
    if path is not None:
        assert line.startswith(f"error: {Path(path).as_posix()}"), line
    for fragment in fragments:
        assert fragment in line, f"{fragment!r} not in {line!r}"
    return line


def report_of(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


# ---------------------------------------------------------------------------------------------
# Bytes and JSON syntax


def test_truncated_json(arh: Callable[..., Run], policy: Path, tmp_path: Path) -> None:
    text = '{"trace_id": "t1", "agent_name": "a",'
    bad = write(tmp_path / "trunc.json", text)
    run = arh("validate", "--policy", policy, bad)
    assert run.status == 3
    # the decoder stops after the final comma: column = len(text) + 1 = 38
    assert len(text) + 1 == 38
    assert_one_error(run, bad, f"{bad.as_posix()}:1:38: invalid JSON")


def test_invalid_utf8(arh: Callable[..., Run], policy: Path, tmp_path: Path) -> None:
    # b'{"trace_id": "t' is 15 bytes, so the bad byte is at offset 15, column 16
    bad = write(tmp_path / "latin1.json", b'{"trace_id": "t\xff1"}')
    run = arh("validate", "--policy", policy, bad)
    assert run.status == 3
    assert_one_error(run, bad, ":1:16:", "not valid UTF-8", "0xff", "offset 15")


def test_invalid_utf8_column_counts_characters(
    arh: Callable[..., Run], policy: Path, tmp_path: Path
) -> None:
    # line 2 is '"é\xff"': the quote is column 1, é (two bytes) column 2, the bad byte column 3;
    # the byte offset in the whole file is 2 ('{' and '\n') + 1 + 2 = 5
    bad = write(tmp_path / "mixed.json", b'{\n"\xc3\xa9\xff": 1}')
    run = arh("validate", "--policy", policy, bad)
    assert run.status == 3
    assert_one_error(run, bad, f"{bad.as_posix()}:2:3: not valid UTF-8", "offset 5")


def test_utf8_bom_is_accepted(arh: Callable[..., Run], policy: Path, tmp_path: Path) -> None:
    good = write(tmp_path / "bom.json", b"\xef\xbb\xbf" + json.dumps(trace("bom")).encode())
    run = arh("validate", "--show-passing", "--policy", policy, good)
    assert run.status == 0, run.err
    assert run.err == ""
    assert "PASS  bom" in run.out


def test_a_bom_is_read_only_at_the_start_of_a_jsonl_file(
    arh: Callable[..., Run], policy: Path, tmp_path: Path
) -> None:
    # a BOM at the start of line 2 (files joined with cat) was dropped silently there too
    bom = "\ufeff"
    text = bom + json.dumps(trace("m1")) + "\n" + bom + json.dumps(trace("m2")) + "\n"
    path = write(tmp_path / "joined.jsonl", text)
    run = arh("validate", "--show-passing", "--policy", policy, path)
    assert run.status == 3
    assert "PASS  m1" in run.out
    assert "m2" not in run.out
    assert_one_error(
        run,
        None,
        f"error: {path.as_posix()}:2: a byte-order mark (U+FEFF) may only start the file, not a "
        "later line",
    )


@pytest.mark.parametrize(
    ("encoding", "expected"),
    [("utf-16", "UTF-16"), ("utf-16-le", "UTF-16"), ("utf-16-be", "UTF-16"), ("utf-32", "UTF-32")],
)
def test_utf16_and_utf32_files_are_named(
    arh: Callable[..., Run], policy: Path, tmp_path: Path, encoding: str, expected: str
) -> None:
    # "utf-16" writes a byte-order mark; "-le"/"-be" do not, and are recognised by their NULs
    bad = write(tmp_path / "wide.json", json.dumps(trace()).encode(encoding))
    run = arh("validate", "--policy", policy, bad)
    assert run.status == 3
    assert_one_error(run, bad, expected, "UTF-8")


def test_crlf_line_ends_are_accepted(arh: Callable[..., Run], policy: Path, tmp_path: Path) -> None:
    pretty = json.dumps(trace("crlf-json"), indent=2).replace("\n", "\r\n") + "\r\n"
    lines = [json.dumps(trace(f"crlf-{i}")) for i in range(3)]
    one = write(tmp_path / "crlf.json", pretty)
    many = write(tmp_path / "crlf.jsonl", "\r\n".join(lines) + "\r\n")
    out = tmp_path / "report.json"
    run = arh("validate", "--policy", policy, one, many, "--json-out", out)
    assert run.status == 0, run.err
    assert run.err == ""
    reports = report_of(out)["reports"]
    assert sorted(r["trace_id"] for r in reports) == ["crlf-0", "crlf-1", "crlf-2", "crlf-json"]
    assert [r.get("source_line") for r in reports if r["trace_id"] != "crlf-json"] == [1, 2, 3]


_LONE_CR = (
    "records separated by a carriage return alone (old Mac line ends): JSON Lines records end "
    "with a line feed (LF or CRLF)"
)


def test_records_separated_by_a_carriage_return_alone_are_refused_clearly(
    arh: Callable[..., Run], policy: Path, tmp_path: Path
) -> None:
    # A carriage return alone ends no line in JSON Lines. Such a file was one line, refused
    # with "invalid JSON: Extra data"; standard input was split again with bytes.splitlines,
    # which does break lines there, and was read.
    records = [json.dumps(trace(f"cr-{i}")) for i in range(3)]
    data = "\r".join(records) + "\r"
    path = write(tmp_path / "cr.jsonl", data)
    column = len(records[0]) + 2  # the second record starts after the first and its CR
    run = arh("validate", "--policy", policy, path)
    assert (run.status, run.err) == (3, f"error: {path.as_posix()}:1:{column}: {_LONE_CR}\n")
    run = arh("validate", "--policy", policy, "-", stdin=data.encode())
    assert (run.status, run.err) == (3, f"error: <stdin>:1:{column}: {_LONE_CR}\n")


def test_lines_end_at_line_feeds_in_files_and_standard_input_alike(
    arh: Callable[..., Run], policy: Path, tmp_path: Path
) -> None:
    # One rule for JSON Lines and every line number: a line ends at LF. A CR alone is JSON
    # whitespace inside its line. Standard input read again as JSON Lines (its first line is not
    # one value) used bytes.splitlines: record 2 was cut in two at its CR, and the lines after it
    # were numbered one too far.
    first = "\r".join(json.dumps(trace(name)) for name in ("a1", "a2"))
    inner = json.dumps(trace("b")).replace('"agent_name"', '\r"agent_name"')
    data = "\n".join([first, inner, "{not json", json.dumps(trace("c"))]) + "\n"
    path = write(tmp_path / "runs.jsonl", data)
    column = len(json.dumps(trace("a1"))) + 2
    for given, shown, stdin in ((path, path.as_posix(), None), ("-", "<stdin>", data.encode())):
        out = tmp_path / "r.json"
        run = arh("validate", "--policy", policy, given, "--json-out", out, "--quiet", stdin=stdin)
        assert run.err == (
            f"error: {shown}:1:{column}: {_LONE_CR}\n"
            f"error: {shown}:3:2: invalid JSON: Expecting property name enclosed in double quotes\n"
        )
        reports = report_of(out)["reports"]
        assert [(r["trace_id"], r["source_line"]) for r in reports] == [("b", 2), ("c", 4)]


def test_sarif_regions_and_error_lines_count_lines_alike(
    arh: Callable[..., Run], tmp_path: Path
) -> None:
    # CRLF ends a line, and so does LF; a CR alone (line 3) does not, in SARIF regions (whose
    # default newlineSequences are CRLF and LF) as in the line of a JSON error
    strict = write(tmp_path / "strict.json", STRICT_POLICY)
    text = (
        '{\r\n  "trace_id": "regions",\r\n  "agent_name": "a", "workflow": "w",\r "steps": [\n'
        '    {"step_id": "s1", "type": "tool_call", "tool_name": "x"},\r\n'
        '    {"step_id": "s2", "type": "tool_call", "tool_name": "y"}\r\n  ]\r\n}\r\n'
    )
    good = write(tmp_path / "regions.json", text)
    bad = write(tmp_path / "bad.json", text.replace('"y"}', "}"))
    out = tmp_path / "r.sarif"
    run = arh("validate", "--policy", strict, good, bad, "--sarif-out", out, "--quiet")
    # '    {"step_id": "s2", "type": "tool_call", "tool_name": ' is 4 + 18 + 21 + 13 characters
    assert run.err == f"error: {bad.as_posix()}:5:57: invalid JSON: Expecting value\n"
    results = json.loads(out.read_text(encoding="utf-8"))["runs"][0]["results"]
    lines = {
        location["logicalLocations"][0]["name"]: location["physicalLocation"]["region"]["startLine"]
        for result in results
        for location in result["locations"]
        if result["ruleId"] == "ARH-SCH-001"
    }
    assert lines == {"s1": 4, "s2": 5}


_NOT_A_NUMBER = "is not a JSON number (use null or a finite number)"


@pytest.mark.parametrize(
    ("text", "where"),
    [
        # '{"x": ' is 6 characters, so NaN starts in column 7
        ('{"x": NaN}', f":1:7: invalid JSON: NaN {_NOT_A_NUMBER}"),
        # third line is '  "x": Infinity': two spaces, '"x":' and a space, so column 8
        (
            '{\n  "trace_id": "t",\n  "x": Infinity\n}',
            f":3:8: invalid JSON: Infinity {_NOT_A_NUMBER}",
        ),
        # the same words inside strings are text, not numbers: the value starts at column 27
        ('{"note": "Infinity", "x": -Infinity}', f":1:27: invalid JSON: -Infinity {_NOT_A_NUMBER}"),
        # '{"t": "a' is 8 characters: the raw tab is the 9th (the message has no dangling "at")
        ('{"t": "a\tb"}', ":1:9: invalid JSON: Invalid control character"),
        # '{"t": ' is 6 characters: the string that never ends starts in column 7
        ('{"t": "abc}', ":1:7: invalid JSON: Unterminated string"),
    ],
)
def test_json_errors_are_reported_with_their_position(
    arh: Callable[..., Run], policy: Path, tmp_path: Path, text: str, where: str
) -> None:
    bad = write(tmp_path / "bad.json", text)
    run = arh("validate", "--policy", policy, bad)
    assert run.status == 3
    line = assert_one_error(run, bad)
    assert line == f"error: {bad.as_posix()}{where}"


@pytest.mark.parametrize("kind", ["array", "object"])
def test_ten_thousand_levels_of_nesting(
    arh: Callable[..., Run], policy: Path, tmp_path: Path, kind: str
) -> None:
    depth = 10_000
    text = "[" * depth + "]" * depth if kind == "array" else '{"a":' * depth + "1" + "}" * depth
    bad = write(tmp_path / "deep.json", text)
    run = arh("validate", "--policy", policy, bad)
    assert run.status == 3
    assert_one_error(run, bad, "nested too deeply")


def test_deep_nesting_inside_a_valid_trace(
    arh: Callable[..., Run], policy: Path, tmp_path: Path
) -> None:
    # deep enough for the decoder of every supported Python to fail (3.11 stops near 1,000
    # levels, 3.13 decodes 5,000): the error is about the file, cleanly
    depth = 100_000
    text = json.dumps(trace()).replace('"text": "done"', '"output": ' + "[" * depth + "]" * depth)
    bad = write(tmp_path / "deep_output.json", text)
    run = arh("validate", "--policy", policy, bad)
    assert run.status == 3
    assert_one_error(run, bad, "nested too deeply")


@pytest.mark.parametrize(
    ("text", "pointer"),
    [
        ('{"trace_id": "t", "steps": [{"a": 1, "a": 2}]}', "/steps/0"),
        ('{"trace_id": "t", "trace_id": "u"}', ""),
        ('{"x": {"a/b": {"k": 1, "k": 1}}}', "/x/a~1b"),
    ],
)
def test_duplicate_keys_name_the_object(
    arh: Callable[..., Run], policy: Path, tmp_path: Path, text: str, pointer: str
) -> None:
    bad = write(tmp_path / "dup.json", text)
    run = arh("validate", "--policy", policy, bad)
    assert run.status == 3
    line = assert_one_error(run, bad, "duplicate key")
    if pointer:
        assert f"{bad.as_posix()}: {pointer}: duplicate key" in line
    else:  # the whole document: no pointer is printed
        assert line.startswith(f"error: {bad.as_posix()}: duplicate key")


def test_integer_with_5000_digits(arh: Callable[..., Run], policy: Path, tmp_path: Path) -> None:
    # '{"trace_id": "t", "steps": [], "n": ' is 36 characters: the number starts in column 37
    prefix = '{"trace_id": "t", "steps": [], "n": '
    assert len(prefix) == 36
    bad = write(tmp_path / "bigint.json", prefix + "7" * 5000 + "}")
    run = arh("validate", "--policy", policy, bad)
    assert run.status == 3
    assert_one_error(run, bad, ":1:37:", "more than 4300 digits")


HUGE_NUMBER = "1e" + "9" * 10_000  # overflows a float: "too large to represent"
LONG = "x" * 10_000


def _long(text: str) -> str:
    """How a message quotes a long value: its first 100 characters, then its length."""
    return f"{text[:100]!r}... ({len(text)} characters)"


@pytest.mark.parametrize(
    ("where", "shown"),
    [
        ("trace-number", f"the number {HUGE_NUMBER[:100]}... (10002 characters) is too large"),
        ("policy-number", f"the number {HUGE_NUMBER[:100]}... (10002 characters) is too large"),
        ("step-type", f"unknown step type {_long(LONG)} (expected"),
        ("step-status", f"must be 'ok' or 'error', got {_long(LONG)}"),
        # the key as JSON writes it, quotes included: 10,002 characters
        ("duplicate-key", f'duplicate key "{LONG[:99]}... (10002 characters): JSON objects'),
        ("schema-version", f"unsupported schema_version {_long('2' + LONG)};"),
        ("policy-pattern", f"invalid regular expression {_long('(' + LONG)}: missing )"),
        ("policy-unknown-tool", f"tool {_long(LONG)} is not in allowed_tools"),
    ],
)
def test_long_values_are_quoted_by_their_beginning_and_length(
    arh: Callable[..., Run], policy: Path, tmp_path: Path, where: str, shown: str
) -> None:
    # a value of 10,000 characters was quoted in full: one line of 10 KB on standard error
    good = trace()
    step = good["steps"][0]
    traces = {
        "trace-number": json.dumps(good)[:-1] + f', "n": {HUGE_NUMBER}}}',
        "step-type": json.dumps(trace(steps=[{**step, "type": LONG}])),
        "step-status": json.dumps(trace(steps=[{**step, "status": LONG}])),
        "duplicate-key": '{"a": {"' + LONG + '": 1, "' + LONG + '": 2}}',
        "schema-version": json.dumps(trace(schema_version="2" + LONG)),
    }
    policies = {
        "policy-number": json.dumps(POLICY)[:-1] + f', "budgets": {{"max_steps": {HUGE_NUMBER}}}}}',
        "policy-pattern": json.dumps({**POLICY, "unsafe_patterns": ["(" + LONG]}),
        "policy-unknown-tool": json.dumps(
            {**STRICT_POLICY, "sequence": {"required_tools": [LONG]}}
        ),
    }
    if where in policies:
        policy = write(tmp_path / "bad-policy.json", policies[where])
        source = write(tmp_path / "t.json", trace())
        bad = policy
    else:
        bad = source = write(tmp_path / "bad.json", traces[where])
    run = arh("validate", "--policy", policy, source, "--quiet")
    assert run.status == (2 if where in policies else 3)  # a configuration or an input error
    [line] = run.err.splitlines()
    assert shown in line, line[:400]
    assert len(line) < 400
    assert bad.name in line


@pytest.mark.parametrize("content", ["", "   \n\t\n", "\ufeff"])
def test_empty_file(arh: Callable[..., Run], policy: Path, tmp_path: Path, content: str) -> None:
    bad = write(tmp_path / "empty.json", content)
    run = arh("validate", "--policy", policy, bad)
    assert run.status == 3
    assert_one_error(run, bad, "empty")


# ---------------------------------------------------------------------------------------------
# Paths: directories, missing files, JSON Lines, standard input


def test_directory_is_searched_recursively_in_sorted_order(
    arh: Callable[..., Run], policy: Path, tmp_path: Path
) -> None:
    root = tmp_path / "traces"
    write(root / "b.json", trace("dup"))
    write(root / "a" / "z.json", trace("dup"))  # "traces/a/z.json" sorts before "traces/b.json"
    write(root / "c.jsonl", json.dumps(trace("from-jsonl")) + "\n")
    write(root / "d.NDJSON", json.dumps(trace("from-ndjson")) + "\n")
    write(root / "notes.txt", "not a trace")
    write(root / "e.json.bak", "{")
    write(root / ".hidden.json", "{")  # dot-files are skipped
    write(root / ".git" / "x.json", "{")  # and so are dot-directories
    out = tmp_path / "report.json"
    run = arh("validate", "--policy", policy, root, "--json-out", out)
    assert run.status == 3  # the second "dup" is an input error
    first, second = (root / "a" / "z.json").as_posix(), (root / "b.json").as_posix()
    assert_one_error(run, second, "duplicate trace_id 'dup'", f"already read from {first}")
    report = report_of(out)
    assert sorted(r["trace_id"] for r in report["reports"]) == ["dup", "from-jsonl", "from-ndjson"]
    sources = [r["source_path"] for r in report["reports"]]
    assert sources == sorted(sources)
    assert first in sources
    assert [e["source"] for e in report["input_errors"]] == [second]


@pytest.mark.parametrize("contents", [{}, {"notes.txt": "x", ".hidden.json": "{}"}])
def test_directory_without_traces_is_an_error(
    arh: Callable[..., Run], policy: Path, tmp_path: Path, contents: dict[str, str]
) -> None:
    empty = tmp_path / "nothing"
    empty.mkdir()
    for name, text in contents.items():
        write(empty / name, text)
    run = arh("validate", "--policy", policy, empty)
    assert run.status == 3
    assert_one_error(run, empty, "no .json, .jsonl or .ndjson files")


def test_a_directory_that_cannot_be_listed_is_an_error(
    arh: Callable[..., Run], policy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A directory below an argument that could not be listed (no read permission) was skipped
    # without a word, so its traces went unchecked and the run could pass; one given as the
    # argument was said to hold no trace files. (The refusal is simulated: the superuser may
    # list any directory.)
    root = write(tmp_path / "traces" / "a.json", trace("a")).parent
    write(root / "locked" / "b.json", trace("b"))
    write(root / "z-locked" / "c.json", trace("c"))
    top = write(tmp_path / "top" / "d.json", trace("d")).parent
    refused = {os.fspath(p) for p in (root / "locked", root / "z-locked", top)}
    listing = os.scandir

    def scandir(path: str) -> Any:
        if os.fspath(path) in refused:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
        return listing(path)

    monkeypatch.setattr(os, "scandir", scandir)
    out = tmp_path / "report.json"
    run = arh("validate", "--policy", policy, top, root, root / "locked", "--json-out", out)
    assert run.status == 3
    assert_no_traceback(run)
    denied = os.strerror(errno.EACCES)
    assert run.err.splitlines() == [
        f"error: {top.as_posix()}: cannot read: {denied}",
        f"error: {(root / 'locked').as_posix()}: cannot read: {denied}",
        f"error: {(root / 'z-locked').as_posix()}: cannot read: {denied}",
    ]  # each directory once, though one is also named itself
    report = report_of(out)
    assert [r["trace_id"] for r in report["reports"]] == ["a"]  # the others are still checked
    assert report["summary"]["input_errors"] == 3


def test_nonexistent_path(arh: Callable[..., Run], policy: Path, tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    run = arh("validate", "--policy", policy, missing)
    assert run.status == 3
    assert_one_error(run, missing, "no such file or directory")


def test_a_loop_of_links_says_so(arh: Callable[..., Run], policy: Path, tmp_path: Path) -> None:
    # it said "no such file or directory", as os.path.exists does not tell a loop from nothing
    if os.name == "nt":
        pytest.skip("POSIX links and name limits")
    loop = tmp_path / "loop1.json"
    try:
        loop.symlink_to(tmp_path / "loop2.json")
        (tmp_path / "loop2.json").symlink_to(loop)
    except OSError as exc:  # Windows without the right to make links
        pytest.skip(f"cannot make symbolic links here: {exc}")
    long_name = tmp_path / ("x" * 300 + ".json")
    run = arh("validate", "--policy", policy, loop, long_name)
    assert run.status == 3
    assert_no_traceback(run)
    assert run.err.splitlines() == [
        f"error: {loop.as_posix()}: cannot read: {os.strerror(errno.ELOOP)}",
        f"error: {long_name.as_posix()}: cannot read: {os.strerror(errno.ENAMETOOLONG)}",
    ]


def test_jsonl_bad_line_in_the_middle(
    arh: Callable[..., Run], policy: Path, tmp_path: Path
) -> None:
    bad_record = '{"trace_id": '  # 13 characters: the value is missing at column 14
    text = "\n".join([json.dumps(trace("first")), bad_record, json.dumps(trace("third"))]) + "\n"
    stream = write(tmp_path / "runs.jsonl", text)
    out = tmp_path / "report.json"
    run = arh("validate", "--show-passing", "--policy", policy, stream, "--json-out", out)
    assert run.status == 3
    assert_one_error(run, stream, f"{stream.as_posix()}:2:14: invalid JSON")
    assert "PASS  first" in run.out
    assert "PASS  third" in run.out
    report = report_of(out)
    assert [(r["trace_id"], r["source_line"]) for r in report["reports"]] == [
        ("first", 1),
        ("third", 3),
    ]
    [error] = report["input_errors"]
    assert (error["source"], error["line"], error["column"]) == (stream.as_posix(), 2, 14)


def test_jsonl_invalid_trace_on_a_line(
    arh: Callable[..., Run], policy: Path, tmp_path: Path
) -> None:
    text = "\n".join([json.dumps(trace("ok")), json.dumps(trace("bad", steps={}))]) + "\n"
    stream = write(tmp_path / "runs.jsonl", text)
    run = arh("validate", "--policy", policy, stream)
    assert run.status == 3
    assert_one_error(run, stream, f"{stream.as_posix()}:2: /steps: must be an array")


def test_jsonl_blank_lines_are_skipped(
    arh: Callable[..., Run], policy: Path, tmp_path: Path
) -> None:
    text = "\n" + json.dumps(trace("a")) + "\n   \n\t\n" + json.dumps(trace("b")) + "\n\n"
    stream = write(tmp_path / "runs.jsonl", text)
    out = tmp_path / "report.json"
    run = arh("validate", "--policy", policy, stream, "--json-out", out)
    assert run.status == 0, run.err
    assert run.err == ""
    # line numbers are physical lines of the file, blank ones included
    lines = [(r["trace_id"], r["source_line"]) for r in report_of(out)["reports"]]
    assert lines == [("a", 2), ("b", 5)]


def test_stdin_with_one_document(arh: Callable[..., Run], policy: Path) -> None:
    # a pretty-printed document spans many lines; it is still one document
    run = arh(
        "validate",
        "--show-passing",
        "--policy",
        policy,
        "-",
        stdin=json.dumps(trace("piped"), indent=2).encode(),
    )
    assert run.status == 0, run.err
    assert "PASS  piped" in run.out
    assert "1 of 1 trace passed" in run.out


def test_stdin_with_json_lines(arh: Callable[..., Run], policy: Path, tmp_path: Path) -> None:
    data = "\n".join(json.dumps(trace(f"p{i}")) for i in range(3)) + "\n"
    out = tmp_path / "report.json"
    run = arh("validate", "--policy", policy, "-", "--json-out", out, stdin=data.encode())
    assert run.status == 0, run.err
    report = report_of(out)
    assert [r["trace_id"] for r in report["reports"]] == ["p0", "p1", "p2"]
    assert all("source_path" not in r for r in report["reports"])


def test_stdin_json_lines_with_a_bad_record(arh: Callable[..., Run], policy: Path) -> None:
    data = json.dumps(trace("p1")) + "\n{bad\n" + json.dumps(trace("p3")) + "\n"
    run = arh("validate", "--show-passing", "--policy", policy, "-", stdin=data.encode())
    assert run.status == 3
    # '{bad': the decoder wants a quoted name at column 2 of line 2
    assert_one_error(run, "<stdin>", "<stdin>:2:2: invalid JSON")
    assert "PASS  p1" in run.out
    assert "PASS  p3" in run.out


def test_empty_stdin(arh: Callable[..., Run], policy: Path) -> None:
    run = arh("validate", "--policy", policy, "-", stdin=b"")
    assert run.status == 3
    assert_one_error(run, "<stdin>", "empty")


def test_duplicate_trace_ids_follow_sorted_source_order(
    arh: Callable[..., Run], policy: Path, tmp_path: Path
) -> None:
    first = write(tmp_path / "a_first.json", trace("same"))
    second = write(tmp_path / "b_second.json", trace("same"))
    for args in ((first, second), (second, first)):
        out = tmp_path / "report.json"
        run = arh("validate", "--policy", policy, *args, "--json-out", out)
        assert run.status == 3
        assert_one_error(
            run,
            second,
            "/trace_id: duplicate trace_id 'same'",
            f"already read from {first.as_posix()}",
        )
        report = report_of(out)
        assert [r["source_path"] for r in report["reports"]] == [first.as_posix()]
        assert [e["source"] for e in report["input_errors"]] == [second.as_posix()]


def test_duplicate_trace_id_within_a_jsonl_file_names_the_line(
    arh: Callable[..., Run], policy: Path, tmp_path: Path
) -> None:
    stream = write(tmp_path / "runs.jsonl", (json.dumps(trace("same")) + "\n") * 2)
    run = arh("validate", "--policy", policy, stream)
    assert run.status == 3
    assert_one_error(run, stream, f"{stream.as_posix()}:2: /trace_id", f"{stream.as_posix()}:1")


# ---------------------------------------------------------------------------------------------
# The policy is checked before any trace is read


@pytest.mark.parametrize(
    ("content", "fragments"),
    [
        ('{"policy_id": "p",', (":1:19: invalid JSON",)),  # 18 characters, then the end
        (
            {"policy_id": "p", "allow_unlisted_tool": True},
            ("/allow_unlisted_tool: unknown key", "did you mean 'allow_unlisted_tools'?"),
        ),
        (
            {"policy_id": "p", "completion": {"max_step": 3}},
            ("/completion/max_step: unknown key", "did you mean 'max_steps'?"),
        ),
        (
            {"policy_id": "p", "unsafe_patterns": ["ok", "(unclosed"]},
            ("/unsafe_patterns/1: invalid regular expression '(unclosed'",),
        ),
        (
            {
                "policy_id": "p",
                "allowed_tools": {"t": {"required_arguments": {"a": {"pattern": "[z-a]"}}}},
            },
            ("/allowed_tools/t/required_arguments/a/pattern: invalid regular expression",),
        ),
        (
            {"policy_id": "p", "completion": {"max_steps": "5"}},
            ("/completion/max_steps: must be an integer >= 1, got string",),
        ),
        ({"policy_id": 7}, ("/policy_id: must be a string, got number",)),
        ({"policy_id": "p", "allow_unlisted_tools": "false"}, ("must be true or false",)),
        ([], ("a policy must be a JSON object, got array",)),
    ],
)
def test_bad_policy_stops_before_traces_are_read(
    arh: Callable[..., Run], tmp_path: Path, content: Any, fragments: tuple[str, ...]
) -> None:
    bad = tmp_path / "policy.json"
    write(bad, content if isinstance(content, str) else json.dumps(content))
    missing = tmp_path / "no-such-trace.json"
    run = arh("validate", "--policy", bad, missing)
    assert run.status == 2
    assert_no_traceback(run)
    lines = run.err.splitlines()
    assert len(lines) == 1, run.err
    assert lines[0].startswith(f"error: invalid policy: {bad.as_posix()}"), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert "no-such-trace" not in run.err  # the traces were never looked at
    assert run.out == ""


def test_missing_policy_file(arh: Callable[..., Run], tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    run = arh("validate", "--policy", missing, tmp_path / "trace.json")
    assert run.status == 2
    assert_no_traceback(run)
    assert run.err.splitlines() == [
        f"error: invalid policy: {missing.as_posix()}: cannot read: No such file or directory"
    ]


# ---------------------------------------------------------------------------------------------
# Trace content


def test_unknown_step_type(arh: Callable[..., Run], policy: Path, tmp_path: Path) -> None:
    doc = trace(steps=[{"step_id": "s1", "type": "thought", "text": "hmm"}])
    bad = write(tmp_path / "thought.json", doc)
    run = arh("validate", "--policy", policy, bad)
    assert run.status == 3
    assert_one_error(
        run,
        bad,
        "/steps/0/type: unknown step type 'thought'",
        "expected 'tool_call' or 'model_response'",
    )


def test_lone_surrogates_are_escaped_and_reported(arh: Callable[..., Run], tmp_path: Path) -> None:
    policy = write(tmp_path / "policy.json", STRICT_POLICY)
    doc = trace(
        "run\udc80id",
        steps=[
            {"step_id": "s1", "type": "tool_call", "tool_name": "se\ud800arch", "arguments": {}},
            {"step_id": "s2", "type": "model_response", "text": "done"},
        ],
    )
    # json.dumps writes the lone surrogates as \udc80 / \ud800 escapes, which is valid JSON
    path = write(tmp_path / "surrogates.json", json.dumps(doc))
    out = tmp_path / "report.json"
    run = arh("validate", "--policy", policy, path, "--json-out", out)
    assert run.status == 1  # the unlisted tool is an error finding
    assert_no_traceback(run)
    assert run.err == ""
    assert "run\\udc80id" in run.out
    assert "se\\ud800arch" in run.out
    assert "ARH-SCH-001" in run.out
    text = out.read_text(encoding="ascii")  # the report is ASCII: surrogates are escaped
    report = json.loads(text)
    [entry] = report["reports"]
    assert entry["trace_id"] == "run\udc80id"
    # the message quotes the name with repr(), so the surrogate appears as an escape in it
    assert "'se\\ud800arch'" in entry["findings"][0]["message"]


def test_control_characters_and_ansi_sequences_are_escaped(
    arh: Callable[..., Run], tmp_path: Path
) -> None:
    policy = write(tmp_path / "policy.json", STRICT_POLICY)
    doc = trace(
        "evil\x1b[31mRED\x1b[0m\x07",
        agent_name="a\x1b]0;title\x07",
        workflow="w\r\nforged line",
        steps=[
            {
                "step_id": "s\x1b[2J1",
                "type": "tool_call",
                "tool_name": "bad\x1b[1mtool",
                "arguments": {},
            }
        ],
    )
    path = write(tmp_path / "ansi.json", json.dumps(doc))
    run = arh("validate", "--policy", policy, path)
    assert run.status == 1
    assert_no_traceback(run)
    for stream in (run.out, run.err):
        assert "\x1b" not in stream
        assert "\x07" not in stream
        assert "\r" not in stream
    assert "evil\\x1b[31mRED\\x1b[0m\\x07" in run.out
    assert "w\\r\\nforged line" in run.out
    assert "s\\x1b[2J1" in run.out
    assert "\nforged line" not in run.out


def test_control_characters_in_an_error_message_are_escaped(
    arh: Callable[..., Run], policy: Path, tmp_path: Path
) -> None:
    doc = trace(steps=[{"step_id": "s1", "type": "\x1b[31mtool\x1b[0m"}])
    bad = write(tmp_path / "ansi_type.json", json.dumps(doc))
    run = arh("validate", "--policy", policy, bad)
    assert run.status == 3
    assert "\x1b" not in run.err
    assert_one_error(run, bad, "unknown step type")


# ---------------------------------------------------------------------------------------------
# Options and output


@pytest.mark.parametrize("value", ["abc", "-1", "101", "nan", "inf", "-inf", "1e309", ""])
def test_invalid_fail_under_is_a_usage_error(
    arh: Callable[..., Run], policy: Path, tmp_path: Path, value: str
) -> None:
    good = write(tmp_path / "good.json", trace())
    run = arh("validate", "--policy", policy, f"--fail-under={value}", good)
    assert run.status == 2
    assert_no_traceback(run)
    assert "argument --fail-under" in run.err
    assert run.out == ""


@pytest.mark.parametrize("value", ["0", "100", "70.5", " 50 "])
def test_valid_fail_under(
    arh: Callable[..., Run], policy: Path, tmp_path: Path, value: str
) -> None:
    good = write(tmp_path / "good.json", trace())
    run = arh("validate", "--policy", policy, f"--fail-under={value}", good)
    assert run.status == 0, run.err


@pytest.mark.parametrize("below", [("report.json",), ("sub", "report.json")])
def test_json_out_below_a_file(
    arh: Callable[..., Run], policy: Path, tmp_path: Path, below: tuple[str, ...]
) -> None:
    good = write(tmp_path / "good.json", trace())
    blocker = write(tmp_path / "not-a-dir", "x")
    target = blocker.joinpath(*below)
    run = arh("validate", "--show-passing", "--policy", policy, good, "--json-out", target)
    assert run.status == 3
    assert "PASS  t1" in run.out  # the console report came first
    line = assert_one_error(run, None, f"cannot write {target}")
    assert f"{blocker.as_posix()} is a file, not a directory" in line
    assert blocker.read_text() == "x"  # left alone


def test_json_out_onto_a_directory(arh: Callable[..., Run], policy: Path, tmp_path: Path) -> None:
    good = write(tmp_path / "good.json", trace())
    target = tmp_path / "existing-dir"
    target.mkdir()
    run = arh("validate", "--policy", policy, good, "--json-out", target)
    assert run.status == 3
    assert_one_error(run, None, f"cannot write {target}")
    assert list(target.iterdir()) == []  # no temporary file is left behind


def test_json_out_ending_in_a_separator(
    arh: Callable[..., Run], policy: Path, tmp_path: Path
) -> None:
    # the run made a directory of that name, then failed to write into it
    good = write(tmp_path / "good.json", trace())
    target = f"{tmp_path / 'report.json'}{os.sep}"
    run = arh("validate", "--policy", policy, good, "--json-out", target)
    assert run.status == 3
    assert_one_error(run, None, f"cannot write {target}: Is a directory")
    assert not os.path.exists(tmp_path / "report.json")


def test_one_bad_file_among_good_ones(
    arh: Callable[..., Run], policy: Path, tmp_path: Path
) -> None:
    write(tmp_path / "in" / "a.json", trace("a"))
    bad = write(tmp_path / "in" / "b.json", '{"trace_id": ')
    write(tmp_path / "in" / "c.json", trace("c"))
    out = tmp_path / "report.json"
    run = arh("validate", "--show-passing", "--policy", policy, tmp_path / "in", "--json-out", out)
    assert run.status == 3
    assert_one_error(run, bad, "invalid JSON")
    assert "PASS  a" in run.out
    assert "PASS  c" in run.out
    assert "2 of 2 traces passed" in run.out
    assert "1 input error" in run.out
    report = report_of(out)
    assert [r["trace_id"] for r in report["reports"]] == ["a", "c"]
    assert report["summary"]["input_errors"] == 1
    [error] = report["input_errors"]
    assert error["source"] == bad.as_posix()
    assert (error["line"], error["column"]) == (1, 14)  # '{"trace_id": ' is 13 characters
    assert error["message"].startswith("invalid JSON")
    assert error["pointer"] is None


# -- streams and files that are not plain ------------------------------------------------------


def _arh_process(*args: str | Path, **options: Any) -> subprocess.CompletedProcess[bytes]:
    """``arh`` as its own process, for what in-process runs cannot show (real pipes, streams
    the process starts without)."""
    command = [sys.executable, "-m", "agent_reliability_harness", *map(str, args)]
    return subprocess.run(command, capture_output=False, check=False, timeout=60, **options)


def test_a_reader_that_stops_early_does_not_lose_the_report_files(
    policy: Path, tmp_path: Path
) -> None:
    inputs = [write(tmp_path / "in" / f"t{i:03}.json", trace(f"t{i:03}")) for i in range(300)]
    out = tmp_path / "report.json"
    # the reader takes one line and closes the pipe, long before the console report ends
    with subprocess.Popen(
        [sys.executable, "-m", "agent_reliability_harness", "validate", "--policy", str(policy),
         str(tmp_path / "in"), "--json-out", str(out), "--show-passing"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    ) as process:  # fmt: skip
        assert process.stdout is not None
        assert process.stderr is not None
        first = process.stdout.readline()
        process.stdout.close()
        errors = process.stderr.read()
        status = process.wait(timeout=60)
    assert first.startswith(b"PASS  t000")
    assert errors == b""  # no traceback, no complaint about the reader's choice
    assert status == 0  # the verdict of the run, which the reader did not change
    assert len(report_of(out)["reports"]) == len(inputs)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_standard_output_that_cannot_be_written_is_an_error(policy: Path, tmp_path: Path) -> None:
    good = write(tmp_path / "good.json", trace())
    out = tmp_path / "report.json"
    with open("/dev/full", "w") as full:
        done = _arh_process("validate", "--policy", policy, good, "--json-out", out,
                            stdout=full, stderr=subprocess.PIPE)  # fmt: skip
    assert done.stderr == b"error: cannot write to standard output: No space left on device\n"
    assert done.returncode == 3  # the console report is incomplete: an output error
    assert report_of(out)["summary"]["passed_traces"] == 1  # the file is written all the same


def test_a_temporary_file_that_cannot_be_written_is_an_error(
    arh: Callable[..., Run], policy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The body of a report is kept in a temporary file (in TMPDIR) beyond a megabyte; when that
    # file could not be made or written (a full disk, a file size limit) the run ended in a
    # traceback, and no report was written at all.
    import tempfile

    from agent_reliability_harness.io import Spool

    def no_room(*args: object, **kwargs: object) -> Any:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(Spool, "_MEMORY", 100)  # so that a small run needs the file
    monkeypatch.setattr(tempfile, "TemporaryFile", no_room)
    inputs = [write(tmp_path / "in" / f"t{i}.json", trace(f"t{i}")) for i in range(3)]
    out = tmp_path / "out"
    run = arh("validate", "--policy", policy, *inputs, "--json-out", out / "r.json",
              "--html-out", out / "r.html", "--quiet")  # fmt: skip
    assert run.status == 3
    assert_no_traceback(run)
    reason = f"the temporary file that holds it cannot be written: {os.strerror(errno.ENOSPC)}"
    assert run.err == f"error: cannot write {out / 'r.json'}: {reason}\n"
    assert not (out / "r.json").exists()
    assert "t2" in (out / "r.html").read_text(encoding="utf-8")  # the others are still written


def test_a_current_directory_that_was_removed(
    arh: Callable[..., Run], policy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Relative paths are resolved (to tell whether two of them name one file) against the
    # current directory, which ended in a traceback when it had been removed meanwhile
    # (`rm -rf build` run from inside build/).
    if os.name == "nt":
        pytest.skip("the current directory cannot be removed on Windows")
    good = write(tmp_path / "good.json", trace())
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    missing = os.strerror(errno.ENOENT)
    run = arh("validate", "--policy", policy, good, "--json-out", "r.json", "--quiet")
    assert run.status == 3
    assert_one_error(run, None, f"cannot write r.json: {missing}")
    for command, label in (
        (["stats", "r.json"], "report"),
        (["compare", "--baseline", "r.json", "--candidate", "c.json"], "baseline"),
    ):
        run = arh(*command)
        assert run.status == 3  # an input error
        assert_no_traceback(run)
        assert f"error: invalid {label}: r.json: cannot read: {missing}\n" in run.err


def test_closed_standard_streams(policy: Path, tmp_path: Path) -> None:
    good = write(tmp_path / "good.json", trace())
    out = tmp_path / "report.json"
    # stdout closed (`>&-`): the console report cannot go anywhere, the file still does
    closed = _arh_process("validate", "--policy", policy, good, "--json-out", out,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          preexec_fn=lambda: os.close(1))  # fmt: skip
    assert closed.stderr == b"error: cannot write to standard output: it is closed\n"
    assert closed.returncode == 3
    assert report_of(out)["summary"]["passed_traces"] == 1
    # stdin closed (`<&-`) and read with `-`: an input error, not a traceback
    stdin = _arh_process("validate", "--policy", policy, "-", stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, preexec_fn=lambda: os.close(0))  # fmt: skip
    assert stdin.stderr == b"error: <stdin>: cannot read: standard input is closed\n"
    assert stdin.returncode == 3
    # a policy read from a closed standard input names it as such
    policy_stdin = _arh_process("validate", "--policy", "-", good, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, preexec_fn=lambda: os.close(0))  # fmt: skip
    assert policy_stdin.stderr.startswith(b"error: invalid policy: <stdin>: cannot read: ")
    assert policy_stdin.returncode == 2  # the policy: a configuration error


def test_reports_are_written_through_links_and_pipes(
    arh: Callable[..., Run], policy: Path, tmp_path: Path
) -> None:
    good = write(tmp_path / "good.json", trace())
    (tmp_path / "link.json").symlink_to("target.json")
    os.mkfifo(tmp_path / "pipe")
    received: list[bytes] = []
    reader = threading.Thread(
        target=lambda: received.append((tmp_path / "pipe").read_bytes()), daemon=True
    )
    reader.start()
    # (a device is written to as a pipe is; a test must not risk replacing the system's)
    run = arh("validate", "--policy", policy, good, "--json-out", tmp_path / "link.json",
              "--junit-out", tmp_path / "pipe")  # fmt: skip
    reader.join(timeout=30)
    assert run.status == 0, run.err
    assert (tmp_path / "link.json").is_symlink()  # the link is kept, its target replaced
    assert report_of(tmp_path / "target.json")["summary"]["passed_traces"] == 1
    assert stat.S_ISFIFO((tmp_path / "pipe").stat().st_mode)  # still a pipe
    assert received[0].startswith(b'<?xml version="1.0" encoding="UTF-8"?>')


def test_a_directory_entry_that_is_not_a_regular_file_is_refused_not_read(
    arh: Callable[..., Run], policy: Path, tmp_path: Path
) -> None:
    write(tmp_path / "in" / "a.json", trace("a"))
    os.mkfifo(tmp_path / "in" / "pipe.json")  # reading it would wait for a writer forever
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "in" / "zero.json").symlink_to(tmp_path / "fifo")  # through a link
    run = arh("validate", "--show-passing", "--policy", policy, tmp_path / "in")
    assert run.status == 3
    assert "PASS  a" in run.out
    for name in ("pipe.json", "zero.json"):
        assert f"error: {(tmp_path / 'in' / name).as_posix()}: not a regular file" in run.err


@pytest.mark.parametrize(
    "command",
    [
        ["validate", "--policy", "p.json", "t.json", "--json-out", ""],
        ["validate", "--policy", "p.json", "t.json", "--html-out", ""],
        ["compare", "--baseline", "b.json", "--candidate", "c.json", "--md-out", ""],
        ["stats", "r.json", "--json-out", ""],
        ["convert", "t.json", "--output", ""],
    ],
)
def test_an_empty_output_path_is_a_usage_error(arh: Callable[..., Run], command: list[str]) -> None:
    # before, an empty path meant no report at all, and the run passed without one
    run = arh(*command)
    assert run.status == 2
    option = "-o/--output" if command[-2] == "--output" else command[-2]
    assert run.err.endswith(f"error: argument {option}: the path is empty\n"), run.err


# Runs arh with the report's writing held at a known point: once its temporary file holds the
# report, a marker file appears and the writing waits, so that a signal comes mid-write.
_SLOW_WRITE = """
import sys, time
from pathlib import Path
from agent_reliability_harness import cli
from agent_reliability_harness.io import write as io

write_parts = io._write_parts

def slow(stream, text):
    write_parts(stream, text)
    stream.flush()
    Path(sys.argv[1]).touch()
    time.sleep(60)

io._write_parts = slow
raise SystemExit(cli.main(sys.argv[2:]))
"""


@pytest.mark.skipif(os.name == "nt", reason="POSIX signals")
@pytest.mark.parametrize(
    ("name", "status", "message"),
    [("SIGTERM", 143, "error: terminated\n"), ("SIGINT", 130, "error: interrupted\n")],
)
def test_a_signal_while_a_report_is_written_leaves_no_temporary_file(
    policy: Path, tmp_path: Path, name: str, status: int, message: str
) -> None:
    # SIGTERM (what CI runners and `timeout` send) ended the process at once: the hidden
    # .report.json.<random>.tmp next to the report stayed there. Now it is removed, the report
    # left as it was, and the status is 128 + the signal's number, as for Ctrl-C.
    import signal
    import time

    good = write(tmp_path / "good.json", trace())
    folder = tmp_path / "out"
    report = write(folder / "report.json", "the previous report\n")
    ready = tmp_path / "ready"
    with subprocess.Popen(
        [sys.executable, "-c", _SLOW_WRITE, str(ready), "validate", "--policy", str(policy),
         str(good), "--json-out", str(report), "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    ) as process:  # fmt: skip
        deadline = time.monotonic() + 60
        while not ready.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert ready.exists()
        temporary = [p.name for p in folder.iterdir() if p.name != "report.json"]
        assert len(temporary) == 1  # mid-write: the report's temporary file is there
        assert temporary[0].startswith(".report.json.")
        assert temporary[0].endswith(".tmp")
        process.send_signal(getattr(signal, name))
        _, errors = process.communicate(timeout=60)
    assert (process.returncode, errors.decode()) == (status, message)
    assert sorted(p.name for p in folder.iterdir()) == ["report.json"]
    assert report.read_text(encoding="utf-8") == "the previous report\n"


@pytest.mark.skipif(not Path("/dev/stdout").is_symlink(), reason="needs /dev/stdout")
def test_a_report_can_go_to_dev_stdout_through_a_pipe(policy: Path, tmp_path: Path) -> None:
    good = write(tmp_path / "good.json", trace())
    done = _arh_process("validate", "--policy", policy, good, "--md-out", "/dev/stdout",
                        "--quiet", stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    assert (done.returncode, done.stderr) == (0, b"")
    assert done.stdout.startswith(b"## arh validation: the 1 trace passed\n")
    assert Path("/dev/stdout").is_symlink()


def test_the_longest_integer_does_not_depend_on_the_environment(
    policy: Path, tmp_path: Path
) -> None:
    digits = "1" + "0" * 5000  # more than Python's default limit of 4300 digits
    folder = tmp_path / "in"
    write(folder / "a.json", trace("a"))
    write(folder / "big.json", json.dumps(trace("big")).replace("}", f', "extra": {digits}}}', 1))
    runs = [
        _arh_process(
            "validate",
            "--policy",
            policy,
            folder,
            *jobs,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **env},
        )
        for env in ({}, {"PYTHONINTMAXSTRDIGITS": "0"}, {"PYTHONINTMAXSTRDIGITS": "9000"})
        for jobs in ((), ("--jobs", "2"))
    ]
    for run in runs:
        assert run.returncode == 3  # an input error
        assert b"big.json:1:" in run.stderr
        assert b"invalid JSON: an integer has more than 4300 digits" in run.stderr
        assert (run.stdout, run.stderr) == (runs[0].stdout, runs[0].stderr)


def test_report_files_get_the_mode_of_new_files(
    arh: Callable[..., Run], policy: Path, tmp_path: Path
) -> None:
    good = write(tmp_path / "good.json", trace())
    previous = os.umask(0o077)  # a user who keeps their files to themselves
    try:
        run = arh("validate", "--policy", policy, good, "--json-out", tmp_path / "private.json")
    finally:
        os.umask(previous)
    assert run.status == 0
    assert stat.S_IMODE((tmp_path / "private.json").stat().st_mode) == 0o600
    previous = os.umask(0o022)
    try:
        arh("validate", "--policy", policy, good, "--json-out", tmp_path / "shared.json")
        shared = tmp_path / "kept.json"
        shared.write_text("{}", encoding="utf-8")
        shared.chmod(0o640)  # a report written again keeps the mode it was given
        arh("validate", "--policy", policy, good, "--json-out", shared)
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "shared.json").stat().st_mode) == 0o644
    assert stat.S_IMODE(shared.stat().st_mode) == 0o640
    assert report_of(shared)["summary"]["passed_traces"] == 1
    assert not list(tmp_path.glob(".*.tmp"))  # no temporary file left behind


def test_a_file_name_that_is_not_utf8_is_percent_encoded_in_sarif(
    arh: Callable[..., Run], tmp_path: Path
) -> None:
    strict = write(tmp_path / "strict.json", STRICT_POLICY)
    folder = tmp_path / "in"
    call = {"step_id": "s1", "type": "tool_call", "tool_name": "nope"}
    # the name's byte 0xFF is no UTF-8: it crashed the SARIF writer, and no report was written
    write(folder / os.fsdecode(b"bad\xff.json"), trace(steps=[call]))
    out = tmp_path / "r.sarif"
    run = arh("validate", "--policy", strict, folder, "--sarif-out", out, "--json-out",
              tmp_path / "r.json")  # fmt: skip
    assert run.status == 1, run.err
    assert_no_traceback(run)
    sarif = json.loads(out.read_text(encoding="utf-8"))
    artifacts = {a["location"]["uri"] for a in sarif["runs"][0].get("artifacts", [])}
    uris = {
        loc["physicalLocation"]["artifactLocation"]["uri"]
        for result in sarif["runs"][0]["results"]
        for loc in result["locations"]
    } | artifacts
    assert uris
    assert all(uri.endswith("in/bad%FF.json") for uri in uris)
    assert report_of(tmp_path / "r.json")["summary"]["failed_traces"] == 1


def test_the_console_cannot_issue_ci_workflow_commands(
    arh: Callable[..., Run], tmp_path: Path
) -> None:
    strict = write(tmp_path / "strict.json", STRICT_POLICY)
    tool = "x" * 56 + " ::error file=README.md,line=1::Approved by security team"
    calls = [
        {"step_id": "s1", "type": "tool_call", "tool_name": tool},
        {"step_id": "step-" + "x" * 85, "type": "tool_call", "tool_name": "nope"},
    ]
    bad = write(tmp_path / "t.json", trace("##[error]Security review passed", steps=calls))
    run = arh("validate", "--policy", strict, bad)
    assert run.status == 1
    lines = run.out.splitlines()
    # a runner reads "##[" anywhere in a line, and "::" at its start after blanks
    assert not [line for line in lines if "##[" in line or line.lstrip().startswith("::")]
    assert "FAIL  \\x23#[error]Security review passed" in run.out
    assert "\\x3a:error file=README.md,line=1\\x3a:Approved" in run.out.replace(
        "\n" + " " * 14, " "
    )
    # a step id too long for the first line: the message starts whole on the next one
    long_id = next(i for i, line in enumerate(lines) if "step-xxx" in line)
    assert lines[long_id].endswith("x" * 85)
    assert lines[long_id + 1] == " " * 14 + "tool 'nope' is not in the policy's allowed_tools"
