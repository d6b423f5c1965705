"""Inputs that never end, inputs too big to hold, and running out of memory.

A device named as an input (``/dev/zero`` never ends) is refused without being read. What one
input may make arh hold is capped by ``--max-input-size``: a file or standard input read whole,
or one line of JSON Lines (a JSON Lines file itself is streamed, whatever its size). Running out
of memory on one input is an input error for that input, and the others are still checked.
Named pipes are read, once.

Tests that old versions failed by reading forever run ``arh`` as its own process, with its
address space limited (``RLIMIT_AS``, as ``ulimit -v`` does) and a timeout, so that they fail
rather than take the machine's memory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_reliability_harness import runner
from agent_reliability_harness.engine import Validator
from agent_reliability_harness.io import Document, file_source, read_documents
from agent_reliability_harness.io import load as io_load
from agent_reliability_harness.io import read as io_module

from conftest import Run

Arh = Callable[..., Run]
POLICY = {"schema_version": "1", "policy_id": "limits", "allow_unlisted_tools": True}
MiB = 1 << 20
LINUX = sys.platform.startswith("linux") and Path("/dev/zero").exists()


def trace(trace_id: str, text: str = "done") -> dict[str, Any]:
    steps = [{"step_id": "s1", "type": "model_response", "text": text}]
    return {"trace_id": trace_id, "agent_name": "a", "workflow": "w", "steps": steps}


def write(path: Path, content: str | dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if isinstance(content, str) else json.dumps(content), "utf-8")
    return path


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    return write(tmp_path / "policy.json", POLICY)


def limited(*args: str | Path, memory: int, **options: Any) -> subprocess.CompletedProcess[str]:
    """``arh`` as its own process, its address space limited to ``memory`` bytes."""
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    command = [sys.executable, "-m", "agent_reliability_harness", *map(str, args)]
    return subprocess.run(  # noqa: PLW1510 - the status is what the test looks at
        command, capture_output=True, text=True, timeout=120, preexec_fn=limit, **options
    )


def reported(path: Path) -> list[str]:
    return [r["trace_id"] for r in json.loads(path.read_text("utf-8"))["reports"]]


# -- devices ----------------------------------------------------------------------------------

DEVICE = "a device, not a file (a device such as /dev/zero never ends)"


@pytest.mark.skipif(not LINUX, reason="needs Linux devices and RLIMIT_AS")
@pytest.mark.parametrize(
    ("command", "expected", "checked"),
    [
        (["validate", "--policy", "{policy}", "/dev/zero", "{good}", "--show-passing"],
         "/dev/zero", "PASS  good"),
        (["validate", "--policy", "{policy}", "/dev/urandom", "{good}", "--jobs", "2",
          "--show-passing"], "/dev/urandom", "PASS  good"),
        (["validate", "--policy", "{policy}", "--messages-at", "/m", "/dev/zero", "{chat}",
          "--show-passing"], "/dev/zero", "PASS  chat"),
        (["convert", "/dev/zero", "{good}"], "/dev/zero", '"trace_id": "good"'),
        (["compare", "--baseline", "{report}", "--policy", "{policy}", "/dev/zero", "{good}"],
         "/dev/zero", "compared 1 trace"),
        (["validate", "--policy", "/dev/zero", "{good}"], "invalid policy: /dev/zero", None),
        (["stats", "{report}", "--gates", "/dev/urandom"], "invalid gate file: /dev/urandom",
         None),
        (["stats", "{report}", "/dev/zero"], "invalid report: /dev/zero", None),
        (["compare", "--baseline", "/dev/zero", "--candidate", "{report}"],
         "invalid baseline: /dev/zero", None),
    ],
)  # fmt: skip
def test_a_device_is_refused_not_read(
    policy: Path, tmp_path: Path, command: list[str], expected: str, checked: str | None
) -> None:
    # Read until memory ran out: a MemoryError traceback, and the other inputs never reported.
    good = write(tmp_path / "good.json", trace("good"))
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "done"}]
    chat = write(tmp_path / "chat.json", {"m": messages})
    report = tmp_path / "report.json"
    assert limited("validate", "--policy", policy, good, "--json-out", report,
                   memory=600 * MiB).returncode == 0  # fmt: skip
    names = {"policy": str(policy), "good": str(good), "chat": str(chat), "report": str(report)}
    done = limited(*(part.format(**names) for part in command), memory=600 * MiB)
    assert "Traceback" not in done.stderr
    # the policy and the gate file are configuration (2), the others inputs (3)
    configuration = expected.startswith(("invalid policy", "invalid gate file"))
    assert done.returncode == (2 if configuration else 3), done.stderr
    assert f"error: {expected}: {DEVICE}: pass a file, a pipe, or - for standard input\n" in (
        done.stderr
    )
    if checked is not None:  # the input beside it is checked
        assert checked in done.stdout


# -- running out of memory --------------------------------------------------------------------


@pytest.mark.skipif(not LINUX, reason="needs RLIMIT_AS")
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_an_input_too_big_for_the_memory_is_an_error_for_it_alone(
    policy: Path, tmp_path: Path, jobs: str
) -> None:
    # A trace of 200,000 small steps (about 28 MB) needs over 200 MB to check; under a 150 MB
    # limit the run ended in a MemoryError traceback, and the small trace was never reported.
    steps = [{"step_id": f"s{n}", "type": "tool_call", "tool_name": "t", "output": "ok"}
             for n in range(200_000)]  # fmt: skip
    big = write(tmp_path / "big.json", {**trace("big"), "steps": steps})
    del steps
    small = [write(tmp_path / f"small{n}.json", trace(f"small{n}")) for n in range(2)]
    out = tmp_path / "report.json"
    done = limited("validate", "--policy", policy, big, *small, "--json-out", out, "--quiet",
                   "--jobs", jobs, memory=150 * MiB)  # fmt: skip
    assert "Traceback" not in done.stderr
    # the machine, not the input, failed: an infrastructure failure (docs/exit-codes.md)
    assert done.returncode == 4
    [line] = done.stderr.splitlines()
    assert line.startswith(f"error: {big.as_posix()}: not enough memory to "), line
    assert reported(out) == ["small0", "small1"]
    [error] = json.loads(out.read_text(encoding="utf-8"))["input_errors"]
    assert error["kind"] == "infrastructure_failure"


def _raise_memory_error_on(marker: str, real: Callable[..., Any]) -> Callable[..., Any]:
    def wrapped(text: str, *args: Any) -> Any:
        if marker in text:
            raise MemoryError
        return real(text, *args)

    return wrapped


def test_no_memory_to_read_a_document_or_a_line(
    arh: Arh, policy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (in-process: the decoder fails as it would for lack of memory, on the marked input only)
    monkeypatch.setattr(io_module, "loads", _raise_memory_error_on("HUGE", io_module.loads))
    big = write(tmp_path / "a.json", trace("a", "HUGE"))
    lines = [json.dumps(trace("l1")), json.dumps(trace("l2", "HUGE")), json.dumps(trace("l3"))]
    jsonl = write(tmp_path / "b.jsonl", "\n".join(lines) + "\n")
    good = write(tmp_path / "c.json", trace("c"))
    out = tmp_path / "r.json"
    run = arh("validate", "--policy", policy, big, jsonl, good, "--json-out", out, "--quiet")
    assert run.status == 4  # the machine failed, not the inputs: infrastructure
    assert run.err == (
        f"error: {big.as_posix()}: not enough memory to read this input\n"
        f"error: {jsonl.as_posix()}:2: not enough memory to read this line\n"
    )
    assert reported(out) == ["l1", "l3", "c"]


def test_no_memory_to_check_a_trace(
    arh: Arh, policy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = Validator._validate_parsed

    def check(self: Validator, trace: Any, **options: Any) -> Any:
        if trace.trace_id == "b":
            raise MemoryError
        return real(self, trace, **options)

    monkeypatch.setattr(Validator, "_validate_parsed", check)
    real_to_traces = runner.to_traces

    def build(value: Any, *args: Any) -> Iterator[Any]:
        if value.get("trace_id") == "c":
            raise MemoryError
        yield from real_to_traces(value, *args)

    monkeypatch.setattr(runner, "to_traces", build)
    inputs = [write(tmp_path / f"{name}.json", trace(name)) for name in "abcd"]
    out = tmp_path / "r.json"
    run = arh("validate", "--policy", policy, *inputs, "--json-out", out, "--quiet")
    assert run.status == 4  # the machine failed, not the inputs: infrastructure
    assert run.err == (
        f"error: {inputs[1].as_posix()}: not enough memory to check this trace\n"
        f"error: {inputs[2].as_posix()}: not enough memory to check this trace\n"
    )
    assert reported(out) == ["a", "d"]


# -- --max-input-size -------------------------------------------------------------------------


def _exactly(size: int, trace_id: str) -> str:
    """A trace document of exactly ``size`` bytes (padded with spaces)."""
    text = json.dumps(trace(trace_id))
    assert len(text) <= size
    return text + " " * (size - len(text))


def test_an_input_larger_than_the_limit_is_an_error(arh: Arh, policy: Path, tmp_path: Path) -> None:
    at = write(tmp_path / "at.json", _exactly(1024, "at"))  # 1K is the limit: read
    over = write(tmp_path / "over.json", _exactly(1025, "over"))  # one byte more: refused
    out = tmp_path / "r.json"
    run = arh("validate", "--policy", policy, at, over, "--max-input-size", "1K",
              "--json-out", out, "--quiet")  # fmt: skip
    assert run.status == 3
    assert run.err == (
        f"error: {over.as_posix()}: the input is larger than --max-input-size (1K)\n"
    )
    assert reported(out) == ["at"]


def test_json_lines_are_streamed_and_each_line_is_capped(
    arh: Arh, policy: Path, tmp_path: Path
) -> None:
    # the file is many times the limit: its lines are read one at a time
    lines = [_exactly(300, f"t{n}") for n in range(40)]
    lines[2] = _exactly(2000, "long")  # a line longer than the limit is an error for that line
    lines[5] = "{" + " " * 5000  # however it ends: the rest of it is skipped, not read as lines
    jsonl = write(tmp_path / "runs.jsonl", "\n".join(lines) + "\n")
    out = tmp_path / "r.json"
    run = arh("validate", "--policy", policy, jsonl, "--max-input-size", "1000",
              "--json-out", out, "--quiet")  # fmt: skip
    assert run.status == 3
    shown = jsonl.as_posix()
    assert run.err == (
        f"error: {shown}:3: the line is longer than --max-input-size (1000)\n"
        f"error: {shown}:6: the line is longer than --max-input-size (1000)\n"
    )
    records = json.loads(out.read_text("utf-8"))["reports"]
    expected = [n for n in range(40) if n not in (2, 5)]
    assert [(r["trace_id"], r["source_line"]) for r in records] == [
        (f"t{n}", n + 1) for n in expected
    ]


def test_standard_input_is_capped_as_a_file_is(arh: Arh, policy: Path) -> None:
    document = json.dumps(trace("one"), indent=2).encode()  # on many lines: read whole
    run = arh("validate", "--policy", policy, "-", "--max-input-size", "100", stdin=document)
    assert (run.status, run.err) == (
        3,
        "error: <stdin>: the input is larger than --max-input-size (100)\n",
    )
    lines = b"".join(json.dumps(trace(f"t{n}", "x" * 40 * n)).encode() + b"\n" for n in range(4))
    run = arh("validate", "--policy", policy, "-", "--max-input-size", "200", "--show-passing",
              stdin=lines)  # fmt: skip
    assert run.status == 3
    assert run.err == (
        "error: <stdin>:3: the line is longer than --max-input-size (200)\n"
        "error: <stdin>:4: the line is longer than --max-input-size (200)\n"
    )
    assert "PASS  t0" in run.out
    assert "PASS  t1" in run.out


def test_policies_reports_and_gate_files_are_capped(arh: Arh, policy: Path, tmp_path: Path) -> None:
    good = write(tmp_path / "good.json", trace("good"))
    report = tmp_path / "report.json"
    assert arh("validate", "--policy", policy, good, "--json-out", report).status == 0
    gates = write(tmp_path / "arh.toml", "[defaults]\nmin_pass_rate = 0\n# " + "-" * 9000 + "\n")
    small = "50"  # bytes: less than the policy (76), the report (about 1,700) and the gate file
    run = arh("validate", "--policy", policy, good, "--max-input-size", small)
    assert run.err == (
        f"error: invalid policy: {policy}: the input is larger than --max-input-size (50)\n"
    )
    run = arh("stats", report, "--max-input-size", small)
    assert run.err == (
        f"error: invalid report: {report}: the input is larger than --max-input-size (50)\n"
    )
    run = arh("stats", report, "--gates", gates, "--max-input-size", "9032")  # its size
    assert (run.status, run.err) == (0, "")
    run = arh("stats", report, "--gates", gates, "--max-input-size", "9031")
    assert (run.status, run.err) == (
        2,
        f"error: invalid gate file: {gates}: the input is larger than --max-input-size (9031)\n",
    )
    run = arh("compare", "--baseline", report, "--candidate", report, "--max-input-size", small)
    assert run.err.startswith(f"error: invalid baseline: {report}: the input is larger")
    assert f"error: invalid candidate: {report}: the input is larger" in run.err


@pytest.mark.parametrize(
    ("given", "limit"),
    [("1", 1), ("2000", 2000), ("64k", 64 << 10), ("64K", 64 << 10), ("3M", 3 << 20),
     ("2G", 2 << 30)],
)  # fmt: skip
def test_max_input_size_takes_bytes_or_a_unit(
    given: str, limit: int, monkeypatch: pytest.MonkeyPatch, arh: Arh, policy: Path
) -> None:
    seen: list[int] = []

    def read(path: str, max_input_bytes: int) -> Any:
        seen.append(max_input_bytes)
        return POLICY

    monkeypatch.setattr(io_load, "read_json_file", read)  # (the policy is read first)
    arh("validate", "--policy", policy, "-", "--max-input-size", given, stdin=b"{}")
    assert seen == [limit]


@pytest.mark.parametrize("given", ["0", "0K", "-1", "1.5M", "12X", "M", "", "1 M", "١٢"])
def test_a_max_input_size_that_is_not_a_size_is_a_usage_error(
    arh: Arh, policy: Path, given: str
) -> None:
    run = arh("validate", "--policy", policy, "-", "--max-input-size", given)
    assert run.status == 2
    assert "arh validate: error: argument --max-input-size: " in run.err


# -- named pipes ------------------------------------------------------------------------------


def _feed(pipe: Path, data: bytes) -> threading.Thread:
    """Write ``data`` into the named pipe in a thread (a reader that stops early is fine)."""

    def feed() -> None:
        try:
            with open(pipe, "wb") as stream:
                stream.write(data)
        except BrokenPipeError:
            pass

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    return writer


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_named_pipe_is_read_up_to_the_limit(arh: Arh, policy: Path, tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "big.json")
    writer = _feed(tmp_path / "big.json", b"[" + b"0," * MiB + b"0]")
    good = write(tmp_path / "good.json", trace("good"))
    run = arh("validate", "--show-passing", "--policy", policy, tmp_path / "big.json", good,
              "--max-input-size", "1M")  # fmt: skip
    writer.join(timeout=30)
    assert run.status == 3
    shown = (tmp_path / "big.json").as_posix()
    assert run.err == f"error: {shown}: the input is larger than --max-input-size (1M)\n"
    assert "PASS  good" in run.out


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_named_pipe_is_read_once(policy: Path, tmp_path: Path) -> None:
    # With --jobs, a JSON Lines pipe was looked into and cut into chunks, each opened again:
    # "not seekable" errors, then a wait for a writer that never came. With --sarif-out, a
    # pipe was opened again for the lines of its steps: the run never ended.
    lines = b"".join(json.dumps(trace(f"t{n}")).encode() + b"\n" for n in range(300))
    failing = {**trace("f"), "steps": [{"step_id": "s1", "type": "tool_call"}]}
    os.mkfifo(tmp_path / "runs.jsonl")
    os.mkfifo(tmp_path / "one.json")
    for name, data, extra in (
        ("runs.jsonl", lines, ["--jobs", "2"]),
        ("one.json", json.dumps(failing).encode(), ["--sarif-out", str(tmp_path / "r.sarif")]),
    ):
        writer = _feed(tmp_path / name, data)
        out = tmp_path / "r.json"
        done = limited("validate", "--policy", policy, tmp_path / name, "--json-out", out,
                       "--quiet", *extra, memory=1 << 30)  # fmt: skip
        writer.join(timeout=30)
        assert done.stderr == ""
        assert len(reported(out)) == (300 if name == "runs.jsonl" else 1)
    sarif = json.loads((tmp_path / "r.sarif").read_text("utf-8"))
    assert sarif["runs"][0]["results"]  # written, without the lines a pipe cannot give again


# -- what is held while a trace is checked ----------------------------------------------------


@pytest.mark.parametrize("name", ["one.json", "one.jsonl"])
def test_the_bytes_of_a_document_are_let_go_once_it_is_decoded(tmp_path: Path, name: str) -> None:
    # The bytes a document was read from stayed alive while its trace was checked (a local of
    # the reader; for JSON Lines, the tuple enumerate reuses): memory held one more copy of
    # the input than needed.
    text = "x" * (8 * MiB)
    path = write(tmp_path / name, json.dumps(trace("one", text)) + "\n")
    del text
    tracemalloc.start()
    try:
        documents = read_documents(file_source(str(path)))
        document = next(documents)
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert isinstance(document, Document)
    assert len(document.value["steps"][0]["text"]) == 8 * MiB
    assert held < 9 * MiB  # the decoded text, not the 8 MiB of bytes as well


def test_a_report_or_policy_is_parsed_without_its_bytes(tmp_path: Path) -> None:
    # read_json_file (policies, reports, baselines) held the file's bytes while it parsed the
    # text: three copies of a long string at once (bytes, text, parsed value), now two
    path = write(tmp_path / "report.json", {"note": "x" * (8 * MiB)})
    tracemalloc.start()
    try:
        value = io_module.read_json_file(str(path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(value["note"]) == 8 * MiB
    assert peak < 17 * MiB
