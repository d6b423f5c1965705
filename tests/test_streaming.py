"""Streaming reports and ``--jobs``: writing reports one trace at a time, in processes.

The report files are assembled from pieces (a head and a tail around the spooled trace reports)
so that memory does not grow with the number of traces. These tests check the pieces against
independent renderings of the whole document, the bounded Markdown collector against the whole
run, the exact running sum against ``math.fsum``, and that ``--jobs N`` gives exactly the output
of one process, including errors, duplicate ids and JSON Lines files cut into chunks.
"""

from __future__ import annotations

import errno
import functools
import io
import json
import math
import operator
import random
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Iterator
from itertools import accumulate
from pathlib import Path
from typing import Any, NoReturn

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_reliability_harness import Policy, runner
from agent_reliability_harness._json import decode_bytes, loads
from agent_reliability_harness.errors import InputError
from agent_reliability_harness.io import STDIN_NAME, Chunk, Document, Source, Spool, write_atomic
from agent_reliability_harness.io import read as io_module
from agent_reliability_harness.model.report import (
    CategoryResult,
    ExactSum,
    Finding,
    RunReport,
    TraceReport,
)
from agent_reliability_harness.render.json_report import render_json
from agent_reliability_harness.render.junit import render_junit
from agent_reliability_harness.render.markdown import MAX_CHARS, MarkdownWriter, render_markdown
from agent_reliability_harness.render.sarif import MAX_RESULTS, render_sarif

from conftest import ROOT, SAMPLES, Run

Arh = Callable[..., Run]

# Text that exercises escaping: quotes, markup, control characters, non-ASCII, a lone surrogate.
_TEXT = st.text(
    alphabet=st.sampled_from(list("ab \"'<>&|\\\n\t\x01\u00e9\u202e\U0001f600\ud800{}[],:")),
    max_size=12,
)
_FINDING = st.builds(
    Finding,
    rule_id=st.sampled_from(["ARH-SCH-001", "ARH-SAF-001", "ARH-FLW-003", "OLD-RULE"]),
    severity=st.sampled_from(["error", "warning", "info"]),
    category=st.sampled_from(["schema", "safety", "flow"]),
    message=_TEXT,
    step_id=st.none() | _TEXT,
    expected=st.none() | _TEXT,
    observed=st.none() | _TEXT,
    subject=st.none() | _TEXT,
    step_index=st.none() | st.integers(0, 3),
)


@st.composite
def _reports(draw: st.DrawFn, count: int | None = None) -> list[TraceReport]:
    size = draw(st.integers(0, 6)) if count is None else count
    reports = []
    for index in range(size):
        score = draw(st.floats(0, 100))
        reports.append(
            TraceReport(
                trace_id=f"t{index}-{draw(_TEXT)}",
                agent_name=draw(_TEXT),
                workflow=draw(_TEXT),
                policy_id="p",
                score=score,
                passed=draw(st.booleans()),
                total_latency_ms=draw(st.floats(0, 1e6)),
                total_cost_usd=draw(st.floats(0, 10)),
                citation_coverage=draw(st.none() | st.floats(0, 1)),
                findings=tuple(draw(st.lists(_FINDING, max_size=3))),
                total_tokens=draw(st.none() | st.integers(0, 10**6)),
                source_path=draw(st.none() | st.sampled_from(["a.json", "dir/b c.jsonl"])),
                categories=(CategoryResult("safety", True, score, 3, 1),),
                source_line=draw(st.none() | st.integers(1, 99)),
            )
        )
    return reports


@st.composite
def _runs(draw: st.DrawFn) -> RunReport:
    errors = draw(
        st.lists(
            st.builds(
                InputError,
                _TEXT,
                pointer=st.none() | st.just("/steps/0"),
                source=st.none() | st.just("x.json"),
                line=st.none() | st.integers(1, 5),
            ),
            max_size=2,
        )
    )
    metadata = draw(st.booleans())
    return RunReport(
        tuple(draw(_reports())),
        tuple(errors),
        "policy-<1>" if metadata else None,
        "ab" * 32 if metadata else None,
        "0.3.0" if metadata else None,
    )


@settings(max_examples=100, deadline=None)
@given(_runs())
def test_json_pieces_are_the_whole_document(run: RunReport) -> None:
    # independent rendering: the document as one object, dumped in one call
    assert render_json(run) == json.dumps(run.to_dict(), indent=2, ensure_ascii=True) + "\n"


@settings(max_examples=100, deadline=None)
@given(_runs())
def test_sarif_pieces_are_canonical_json(run: RunReport) -> None:
    from agent_reliability_harness.render._text import visible

    text = render_sarif(run)
    document = json.loads(text)
    # the spliced text is exactly what one json.dumps of the parsed document gives
    assert text == json.dumps(document, indent=2, ensure_ascii=True) + "\n"
    results = document["runs"][0]["results"]
    # trace ids are shown with the console's visible escapes (docs/ci.md)
    pairs = [(visible(r.trace_id), f.rule_id) for r in run.reports for f in r.findings]
    got = [(x["properties"]["trace_id"], x["ruleId"]) for x in results]
    assert got == pairs[:MAX_RESULTS]


@settings(max_examples=100, deadline=None)
@given(_runs())
def test_junit_pieces_are_one_indented_tree(run: RunReport) -> None:
    text = render_junit(run)
    declaration = '<?xml version="1.0" encoding="UTF-8"?>\n'
    assert text.startswith(declaration)
    root = ET.fromstring(text[len(declaration) :])  # noqa: S314 - our own output
    # Indenting the parsed tree again and writing it out gives the same text: the pieces were
    # put together exactly as ElementTree indents and writes a whole document.
    ET.indent(root, space="  ")
    if "\r" not in text:  # XML parsing turns a raw CR into LF, so only then can it round-trip
        assert declaration + ET.tostring(root, encoding="unicode") + "\n" == text
    suite = root.find("testsuite")
    assert suite is not None
    cases = suite.findall("testcase")
    assert len(cases) == len(run.reports) + len(run.input_errors)
    assert int(suite.get("failures", "-1")) == sum(1 for r in run.reports if not r.passed)


def _report(index: int, passed: bool, size: int) -> TraceReport:
    finding = Finding("ARH-SAF-001", "error", "safety", "m" * size, step_id="s1")
    return TraceReport(
        f"trace-{index:05d}", "agent", "flow", "p", 50.0 if not passed else 100.0, passed,
        1.5, 0.0, None, () if passed else (finding,),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("count", "failing_every", "size"),
    [(0, 1, 10), (7, 2, 10), (50, 3, 10), (51, 3, 10), (400, 2, 300), (3000, 1, 5), (200, 1, 900)],
)
def test_markdown_collector_keeps_what_the_report_shows(
    count: int, failing_every: int, size: int
) -> None:
    rng = random.Random(count)  # noqa: S311 - reproducible test data
    reports = [
        _report(i, i % failing_every != 0 or rng.random() < 0.1, rng.randint(1, size))
        for i in range(count)
    ]
    run = RunReport(tuple(reports), (), "p", "0" * 64, "0.3.0")
    writer = MarkdownWriter()
    assert all(writer.add(r) == "" for r in reports)
    summary = run.summary()
    streamed = writer.head(summary) + writer.tail(summary)
    assert streamed == render_markdown(run)
    assert len(streamed) <= MAX_CHARS
    # the collector holds a bounded number of reports, whatever the size of the run
    kept = len(writer._first) + len(writer._failing)
    assert kept <= 50 + MAX_CHARS // 10 + 2


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.floats(-1e300, 1e300) | st.floats(-1, 1) | st.sampled_from([0.1, 1e-16]), max_size=60
    )
)
def test_exact_sum_is_fsum(values: list[float]) -> None:
    total = ExactSum()
    for value in values:
        total.add(value)
    assert total.value == math.fsum(values)


def test_exact_sum_of_scores_in_any_order() -> None:
    rng = random.Random(7)  # noqa: S311 - reproducible test data
    scores = [rng.choice([100.0, 0.0, 70.83333333333333, 1e-9, 99.99]) for _ in range(5000)]
    forward, backward = ExactSum(), ExactSum()
    for score in scores:
        forward.add(score)
    for score in reversed(scores):
        backward.add(score)
    assert forward.value == backward.value == math.fsum(scores)
    # adding one score at a time would have drifted (sum() itself compensates since Python 3.12)
    assert functools.reduce(operator.add, scores) != math.fsum(scores)


def test_spool_spills_to_disk_and_copies_back(tmp_path: Path) -> None:
    spool = Spool()
    pieces = [f"{i:07d}\u00e9\n" * 1000 for i in range(300)]  # ~2.7 MB, beyond the memory part
    for piece in pieces:
        spool.write(piece)
    target = tmp_path / "out.txt"
    write_atomic(str(target), ["<head>", spool, "<tail>"])
    spool.close()
    assert target.read_text(encoding="utf-8") == "<head>" + "".join(pieces) + "<tail>"


# -- the command line: --jobs gives exactly the output of one process ----------------------------


def _trace(trace_id: str | None, tool: str = "search_flights") -> dict[str, object]:
    trace: dict[str, object] = {
        "schema_version": "1",
        "agent_name": "agent",
        "workflow": "rebook",
        "steps": [
            {"step_id": "s1", "type": "tool_call", "tool_name": tool, "arguments": {"x": 1}},
            {"step_id": "s2", "type": "model_response", "text": "done"},
        ],
    }
    if trace_id is not None:
        trace["trace_id"] = trace_id
    return trace


def _corpus(root: Path) -> list[str]:
    """Inputs with every kind of trouble: duplicates, bad lines, blank lines, transcripts
    without ids, an empty JSON Lines file, a directory of files, a missing path."""
    rng = random.Random(3)  # noqa: S311 - reproducible test data
    lines = []
    for index in range(119):
        roll = rng.random()
        if roll < 0.05:
            lines.append("{not json")
        elif roll < 0.1:
            lines.append("")
        elif roll < 0.15:
            lines.append(json.dumps(_trace(f"t{index - 3}")))  # often a duplicate id
        elif roll < 0.2:
            lines.append(json.dumps({"messages": [{"role": "user", "content": "hi"}]}))
        else:
            tool = "delete_account" if roll > 0.9 else "search_flights"
            lines.append(json.dumps(_trace(f"t{index}", tool)))
    lines.append(json.dumps(_trace("t119")))
    (root / "runs.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root / "empty.jsonl").write_text("\n\n", encoding="utf-8")
    folder = root / "dir"
    folder.mkdir()
    for index in range(30):
        trace = _trace("t119" if index == 7 else f"d{index}")  # clashes with the JSONL file
        (folder / f"{index:02d}.json").write_text(json.dumps(trace), encoding="utf-8")
    (folder / "broken.json").write_text('{"trace_id": ', encoding="utf-8")
    return [str(root / "runs.jsonl"), str(root / "empty.jsonl"), str(folder), str(root / "nope")]


def _one_process(extra: tuple[str, ...], default: bool) -> tuple[str, ...]:
    """``extra`` with ``--jobs 1`` when it has no ``--jobs`` (the default, auto, may start
    workers), unless the ``default`` is what is run."""
    return extra if default or "--jobs" in extra else ("--jobs", "1", *extra)


def _outputs(
    arh: Arh, inputs: list[str], out: Path, *extra: str, default: bool = False
) -> dict[str, object]:
    out.mkdir()
    run = arh(
        "validate", "--policy", SAMPLES / "policy_trajectory.json", *inputs,
        "--json-out", out / "r.json", "--md-out", out / "r.md", "--junit-out", out / "r.xml",
        "--sarif-out", out / "r.sarif", "--color", "never",
        *_one_process(extra, default),
    )  # fmt: skip
    files = {p.name: p.read_bytes() for p in sorted(out.iterdir())}
    return {
        "status": run.status,
        "out": run.out.replace(str(out), "OUT"),
        "err": run.err,
        **files,
    }


@pytest.mark.parametrize("jobs", ["2", "3"])
def test_jobs_give_the_output_of_one_process(
    arh: Arh, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: str
) -> None:
    inputs = _corpus(tmp_path)
    one = _outputs(arh, inputs, tmp_path / "one")
    monkeypatch.setattr(runner, "usable_cpus", lambda: 4)  # workers, whatever this machine has
    monkeypatch.setattr(runner, "_CHUNK_BYTES", 700)  # cut the JSON Lines file into many chunks
    monkeypatch.setattr(runner, "_BATCH_FILES", 4)
    many = _outputs(arh, inputs, tmp_path / "many", "--jobs", jobs)
    assert one == many
    assert one["status"] == 3  # input errors
    errors = str(one["err"])
    assert "duplicate trace_id 't119'" in errors
    assert errors.count("duplicate trace_id") > 1
    assert "the JSON Lines input has no records" in errors
    assert "no such file or directory" in errors
    assert "runs.jsonl:" in errors


def test_jobs_report_json_lines_files_whose_lines_all_fail_to_decode(
    arh: Arh, tmp_path: Path
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("a.jsonl", "b.jsonl"):
        (folder / name).write_bytes(b"\x80bad\n")
    one = _outputs(arh, [str(folder)], tmp_path / "one")
    many = _outputs(arh, [str(folder)], tmp_path / "many", "--jobs", "2")
    assert one == many
    errors = str(one["err"])
    # each file: its undecodable line, and no records at all
    assert errors.count("not valid UTF-8") == 2
    assert errors.count("the JSON Lines input has no records") == 2


def test_jobs_start_workers_only_for_more_than_one_piece_of_work(
    arh: Arh, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import multiprocessing

    started: list[object] = []
    real = multiprocessing.get_context

    def get_context(*args: object) -> object:
        started.append(args)
        return real(*args)

    monkeypatch.setattr(multiprocessing, "get_context", get_context)
    monkeypatch.setattr(runner, "usable_cpus", lambda: 4)
    single = [str(SAMPLES / "traces" / "rebook_pass.json")]
    one = _outputs(arh, single, tmp_path / "one")
    many = _outputs(arh, single, tmp_path / "many", "--jobs", "2")
    assert one == many
    assert not started  # one file is one piece of work: it is checked in this process
    data = (SAMPLES / "traces" / "rebook_double_rebooking.json").read_bytes()
    _outputs_stdin(arh, [*single, "-"], tmp_path / "stdin", data, "--jobs", "2")
    assert not started  # standard input is read by this process: one piece left for workers
    monkeypatch.setattr(runner, "_BATCH_FILES", 2)
    _outputs(arh, [str(SAMPLES / "traces")], tmp_path / "several", "--jobs", "2")
    assert started  # six files in pieces of two: workers


def _count_pools(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """A list that gets an item each time a pool of workers is asked for."""
    import multiprocessing

    started: list[object] = []
    real = multiprocessing.get_context

    def get_context(*args: object) -> object:
        started.append(args)
        return real(*args)

    monkeypatch.setattr(multiprocessing, "get_context", get_context)
    return started


def test_the_default_starts_workers_from_the_threshold_on_with_the_outputs_of_one(
    arh: Arh, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # --jobs defaults to auto: one worker per CPU for an input of AUTO_JOBS_MIN_BYTES or more,
    # none below, and every report byte for byte that of one process
    inputs = _corpus(tmp_path)
    size = sum(p.stat().st_size for p in tmp_path.rglob("*") if p.is_file())
    html = ("--html-out", str(tmp_path / "r.html"))  # (one path for both: the names differ)
    one = _outputs(arh, inputs, tmp_path / "one", *html)
    one["r.html"] = (tmp_path / "r.html").read_bytes()
    started = _count_pools(monkeypatch)
    monkeypatch.setattr(runner, "usable_cpus", lambda: 2)
    monkeypatch.setattr(runner, "_CHUNK_BYTES", 700)  # many pieces of work
    monkeypatch.setattr(runner, "_BATCH_FILES", 4)
    assert size < runner.AUTO_JOBS_MIN_BYTES
    small = _outputs(arh, inputs, tmp_path / "small", *html, default=True)
    small["r.html"] = (tmp_path / "r.html").read_bytes()
    assert small == one
    assert not started  # below the threshold: no workers
    monkeypatch.setattr(runner, "AUTO_JOBS_MIN_BYTES", size)
    large = _outputs(arh, inputs, tmp_path / "large", *html, default=True)
    large["r.html"] = (tmp_path / "r.html").read_bytes()
    assert large == one
    assert len(started) == 1  # at the threshold: workers
    assert {"r.json", "r.md", "r.xml", "r.sarif", "r.html", "out"} <= set(one)


def test_the_default_counts_standard_input_as_it_is_read(
    arh: Arh, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _corpus(tmp_path)
    data = (tmp_path / "runs.jsonl").read_bytes()
    one = _outputs_stdin(arh, ["-"], tmp_path / "one", data)
    started = _count_pools(monkeypatch)
    monkeypatch.setattr(runner, "usable_cpus", lambda: 2)
    monkeypatch.setattr(runner, "_STDIN_CHUNK_BYTES", 700)
    assert len(data) < runner.AUTO_JOBS_MIN_BYTES
    assert _outputs_stdin(arh, ["-"], tmp_path / "small", data, default=True) == one
    assert not started  # all of it read, less than the threshold: no workers
    monkeypatch.setattr(runner, "AUTO_JOBS_MIN_BYTES", len(data) // 2)
    assert _outputs_stdin(arh, ["-"], tmp_path / "large", data, default=True) == one
    assert len(started) == 1  # half of it read: workers for it all


def test_an_explicit_number_of_jobs_ignores_the_threshold(
    arh: Arh, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started = _count_pools(monkeypatch)
    monkeypatch.setattr(runner, "usable_cpus", lambda: 2)
    monkeypatch.setattr(runner, "_BATCH_FILES", 2)
    inputs = [str(SAMPLES / "traces")]
    one = _outputs(arh, inputs, tmp_path / "one")
    assert _outputs(arh, inputs, tmp_path / "auto", "--jobs", "auto") == one
    assert not started  # auto: the samples are far below the threshold
    assert _outputs(arh, inputs, tmp_path / "two", "--jobs", "2") == one
    assert len(started) == 1  # a number: workers whenever there are pieces for them


def test_the_help_gives_the_threshold_of_the_default(arh: Arh) -> None:
    from agent_reliability_harness import cli

    # the command line states it without importing the runner: the two must agree
    assert runner.AUTO_JOBS_MIN_BYTES == cli._AUTO_JOBS_MIB << 20
    run = arh("validate", "--help")
    text = " ".join(run.out.split())
    assert (
        f"default auto: one per CPU when the input holds at least {cli._AUTO_JOBS_MIB} MiB" in text
    )


@pytest.mark.parametrize(
    "failure",
    [
        OSError(errno.ENOSYS, "Function not implemented"),
        ImportError("This platform lacks a functioning sem_open"),
    ],
)
def test_jobs_on_a_system_that_cannot_start_workers(
    arh: Arh, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: Exception
) -> None:
    # Worker processes need the system's shared semaphores, which some containers and
    # sandboxes lack (no /dev/shm): --jobs ended in a traceback there. The traces are now
    # checked in this process, with the same outputs.
    import multiprocessing

    class NoWorkers:
        def Pool(self, *_: object) -> NoReturn:
            raise failure

    inputs = _corpus(tmp_path)
    one = _outputs(arh, inputs, tmp_path / "one")
    monkeypatch.setattr(multiprocessing, "get_context", lambda *_: NoWorkers())
    monkeypatch.setattr(runner, "usable_cpus", lambda: 4)
    monkeypatch.setattr(runner, "_BATCH_FILES", 4)
    assert _outputs(arh, inputs, tmp_path / "many", "--jobs", "2") == one


def _nested_trace(depth: int) -> str:
    nested = "[" * depth + "1" + "]" * depth
    return (
        '{"trace_id": "deep", "agent_name": "a", "workflow": "w", "steps": [{"step_id": "s", '
        f'"type": "model_response", "text": "ok", "output": {nested}}}]}}'
    )


@pytest.mark.xfail(
    sys.version_info >= (3, 12),
    reason="from Python 3.12 the decoder's depth limit counts C-level generator calls, of which "
    "the worker, the piece done again here and one process have different numbers: within a few "
    "levels of the limit their verdicts can differ",
    strict=True,
)
def test_jobs_agree_on_values_nested_as_deeply_as_the_stack_allows(
    arh: Arh, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # How deep a value can be decoded and checked depends on the stack, and a worker's is
    # deeper: near the limit, one process took a trace that two refused. Find, in this process,
    # the deepest trace that is checked, then compare one process with workers around it.
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.json").write_text(_nested_trace(1), encoding="utf-8")  # a second unit of work
    deep = folder / "b.json"

    def refused(depth: int) -> bool:
        deep.write_text(_nested_trace(depth), encoding="utf-8")
        run = arh("validate", "--policy", SAMPLES / "policy_trajectory.json", deep, "--quiet")
        return "nested too deeply" in run.err

    low, high = 1, 1 << 16  # the deepest checked, and the shallowest refused
    assert not refused(low)
    assert refused(high)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if refused(middle) else (middle, high)
    monkeypatch.setattr(runner, "usable_cpus", lambda: 2)
    monkeypatch.setattr(runner, "_BATCH_FILES", 1)  # each file a unit: workers start
    for depth in (low - 8, low - 1, low, high, high + 8):
        deep.write_text(_nested_trace(depth), encoding="utf-8")
        out = tmp_path / str(depth)
        out.mkdir()
        one = _outputs(arh, [str(folder)], out / "one")
        many = _outputs(arh, [str(folder)], out / "many", "--jobs", "2")
        assert one == many, depth
        assert ("nested too deeply" in str(one["err"])) == (depth >= high)


def test_jobs_do_again_a_piece_whose_result_a_worker_cannot_send_back(
    arh: Arh, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With --html-out a worker sends the traces back with their reports, and pickling a value
    # nested 500 deep exceeds the recursion limit (decoding and checking it do not): the result
    # cannot be sent. That piece of work is done again by this process, as one that meets a
    # value too deep is, so the reports are those of one process and every trace is in them.
    text = (SAMPLES / "traces" / "rebook_pass.json").read_text(encoding="utf-8")
    trace = json.loads(text)
    folder = tmp_path / "in"
    folder.mkdir()
    for index in range(2):  # two JSON Lines files: two pieces of work, so workers start
        trace["trace_id"] = f"deep-{index}"
        trace["steps"][1]["output"] = "NESTED"
        line = json.dumps(trace).replace('"NESTED"', "[" * 500 + "]" * 500)
        (folder / f"t{index}.jsonl").write_text(line + "\n", encoding="utf-8")
    inputs = [str(folder)]
    one = _outputs(arh, inputs, tmp_path / "one", "--html-out", str(tmp_path / "one" / "r.html"))
    monkeypatch.setattr(runner, "usable_cpus", lambda: 2)  # workers, whatever this machine has
    html = str(tmp_path / "many" / "r.html")
    many = _outputs(arh, inputs, tmp_path / "many", "--jobs", "2", "--html-out", html)
    assert one == many
    assert one["err"] == ""
    report = json.loads(one["r.json"])  # type: ignore[arg-type]
    assert [r["trace_id"] for r in report["reports"]] == ["deep-0", "deep-1"]
    assert b"deep-1" in one["r.html"]  # type: ignore[operator]


def test_jobs_start_no_more_workers_than_cpus(
    arh: Arh, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[int] = []
    real = runner._parallel

    def parallel(*args: Any, **kwargs: Any) -> Any:
        asked.append(kwargs["jobs"])
        return real(*args, **kwargs)

    monkeypatch.setattr(runner, "_parallel", parallel)
    monkeypatch.setattr(runner, "_BATCH_FILES", 2)
    monkeypatch.setattr(runner, "usable_cpus", lambda: 2)
    inputs = [str(SAMPLES / "traces")]
    one = _outputs(arh, inputs, tmp_path / "one")
    assert one == _outputs(arh, inputs, tmp_path / "many", "--jobs", "100000")
    assert asked == [2]
    monkeypatch.setattr(runner, "usable_cpus", lambda: 1)  # one CPU: no workers at all
    assert one == _outputs(arh, inputs, tmp_path / "single", "--jobs", "8")
    assert asked == [2]


def test_jobs_with_standard_input_and_samples(arh: Arh, tmp_path: Path) -> None:
    data = (SAMPLES / "traces" / "rebook_pass.json").read_bytes()
    inputs = [str(SAMPLES / "traces"), "-"]
    one = _outputs_stdin(arh, inputs, tmp_path / "one", data)
    many = _outputs_stdin(arh, inputs, tmp_path / "many", data, "--jobs", "2")
    assert one == many
    assert "duplicate trace_id" in str(one["err"])  # stdin repeats a sample's id


@pytest.mark.parametrize("jobs", ["2", "3"])
def test_jobs_share_out_json_lines_read_from_standard_input(
    arh: Arh, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: str
) -> None:
    # standard input is read here in chunks of lines that workers check, as a file is
    _corpus(tmp_path)  # bad lines, blank lines, duplicate ids, transcripts without ids
    data = (tmp_path / "runs.jsonl").read_bytes()
    inputs = ["-", str(SAMPLES / "traces")]
    one = _outputs_stdin(arh, inputs, tmp_path / "one", data)
    monkeypatch.setattr(runner, "usable_cpus", lambda: 4)
    monkeypatch.setattr(runner, "_STDIN_CHUNK_BYTES", 700)
    chunks: list[Chunk] = []
    cut = runner.stdin_chunks

    def counted(size: int, limit: int) -> Iterator[Chunk] | bytes:
        read = cut(size, limit)
        assert not isinstance(read, bytes)
        for chunk in read:
            chunks.append(chunk)
            yield chunk

    monkeypatch.setattr(runner, "stdin_chunks", counted)
    many = _outputs_stdin(arh, inputs, tmp_path / "many", data, "--jobs", jobs)
    assert one == many
    assert len(chunks) > 10
    assert (
        b"".join(line for c in chunks for line in c.data or () if isinstance(line, bytes)) == data
    )
    assert [c.first_line for c in chunks[:2]] == [1, 1 + chunks[0].lines]
    assert "<stdin>:" in str(one["err"])
    assert "duplicate trace_id" in str(one["err"])


@pytest.mark.parametrize("form", ["file", "stdin"])
def test_jobs_give_the_errors_of_one_process_for_lines_over_the_limit(
    arh: Arh, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, form: str
) -> None:
    # a line longer than --max-input-size is skipped (in pieces) wherever the chunks are cut
    _corpus(tmp_path)
    lines = (tmp_path / "runs.jsonl").read_text(encoding="utf-8").split("\n")
    lines[4] = lines[4] + " " * 5000  # longer than the limit and than a chunk
    lines[9] = "[" + "1," * 2500 + "1]"
    (tmp_path / "runs.jsonl").write_text("\n".join(lines), encoding="utf-8")
    data = (tmp_path / "runs.jsonl").read_bytes()
    limit = ("--max-input-size", "4K")  # (the policy has 2,412 bytes)

    def outputs(out: Path, *extra: str) -> dict[str, object]:
        if form == "stdin":
            return _outputs_stdin(arh, ["-"], out, data, *limit, *extra)
        return _outputs(arh, [str(tmp_path / "runs.jsonl")], out, *limit, *extra)

    one = outputs(tmp_path / "one")
    monkeypatch.setattr(runner, "usable_cpus", lambda: 4)
    monkeypatch.setattr(runner, "_CHUNK_BYTES", 700)
    monkeypatch.setattr(runner, "_STDIN_CHUNK_BYTES", 700)
    assert outputs(tmp_path / "many", "--jobs", "2") == one
    errors = str(one["err"])
    assert ":5: the line is longer than --max-input-size (4K)" in errors
    assert ":10: the line is longer than --max-input-size (4K)" in errors


def test_jobs_keep_an_otlp_export_on_standard_input_in_one_piece(
    arh: Arh, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # its traces may span lines: cut into chunks, they would be read as several traces
    data = (ROOT / "tests/fixtures/adapters/openinference/retry_and_messages.jsonl").read_bytes()
    one = _outputs_stdin(arh, ["-"], tmp_path / "one", data)
    monkeypatch.setattr(runner, "usable_cpus", lambda: 4)
    monkeypatch.setattr(runner, "_STDIN_CHUNK_BYTES", 200)
    many = _outputs_stdin(arh, ["-"], tmp_path / "many", data, "--jobs", "2")
    assert one == many
    assert json.loads(one["json"])["summary"]["total_traces"] >= 1  # type: ignore[arg-type]


class _FailingInput(io.BytesIO):
    """Standard input whose reading fails at byte ``limit``: what is read up to it is kept (a
    line that crosses it is not read)."""

    def __init__(self, data: bytes, limit: int) -> None:
        super().__init__(data)
        self.limit = limit

    def readline(self, size: int | None = -1) -> bytes:
        start = self.tell()
        line = super().readline(size)
        if self.tell() > self.limit:
            self.seek(start)
            raise OSError(errno.EIO, "Input/output error")
        return line

    def read1(self, size: int | None = -1) -> bytes:
        if self.tell() >= self.limit:
            raise OSError(errno.EIO, "Input/output error")
        room = self.limit - self.tell()
        return super().read1(room if size is None or size < 0 else min(size, room))

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.readline, b"")


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_standard_input_that_fails_midway_keeps_what_was_read(
    arh: Arh, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: str
) -> None:
    lines = [json.dumps(_trace(f"t{n}")) + "\n" for n in range(40)]
    data = "".join(lines).encode()
    stdin = _Stdin(b"")
    stdin.buffer = _FailingInput(data, limit=len(data) // 2)
    monkeypatch.setattr(sys, "stdin", stdin)
    monkeypatch.setattr(runner, "usable_cpus", lambda: 4)
    monkeypatch.setattr(runner, "_STDIN_CHUNK_BYTES", 700)
    out = tmp_path / "r.json"
    run = arh("validate", "--policy", SAMPLES / "policy_trajectory.json", "-",
              "--json-out", out, "--quiet", "--jobs", jobs)  # fmt: skip
    assert run.err == "error: <stdin>: cannot read: Input/output error\n"
    ids = [r["trace_id"] for r in json.loads(out.read_text(encoding="utf-8"))["reports"]]
    ends = list(accumulate(map(len, lines)))
    read = sum(end <= len(data) // 2 for end in ends)  # the lines that end before the limit
    assert 0 < read < len(lines)
    assert ids == [f"t{n}" for n in range(read)]


def _outputs_stdin(
    arh: Arh, inputs: list[str], out: Path, data: bytes, *extra: str, default: bool = False
) -> dict[str, object]:
    out.mkdir()
    run = arh(
        "validate", "--policy", SAMPLES / "policy_trajectory.json", *inputs,
        "--json-out", out / "r.json", "--quiet", *_one_process(extra, default), stdin=data,
    )  # fmt: skip
    return {"status": run.status, "err": run.err, "json": (out / "r.json").read_bytes()}


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5"])
def test_jobs_must_be_a_positive_number_or_auto(arh: Arh, value: str) -> None:
    run = arh("validate", "--policy", SAMPLES / "policy_trajectory.json", SAMPLES, "--jobs", value)
    assert run.status == 2
    assert "--jobs" in run.err


def test_jobs_auto_is_accepted(arh: Arh, tmp_path: Path) -> None:
    run = arh(
        "validate", "--policy", SAMPLES / "policy_trajectory.json", SAMPLES / "traces",
        "--jobs", "auto", "--quiet", "--json-out", tmp_path / "r.json",
    )  # fmt: skip
    assert run.status == 1
    assert json.loads((tmp_path / "r.json").read_text())["summary"]["total_traces"] == 6


def test_jobs_when_cutting_a_file_fails_midway(
    arh: Arh, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inputs = _corpus(tmp_path)
    one = _outputs(arh, inputs, tmp_path / "one")
    real = runner.jsonl_chunks

    def failing(path: str, size: int) -> Iterator[Chunk]:
        chunks = list(real(path, size))
        yield from chunks[:2]
        if len(chunks) > 2:
            raise OSError("disk went away")

    monkeypatch.setattr(runner, "jsonl_chunks", failing)
    monkeypatch.setattr(runner, "_CHUNK_BYTES", 700)
    assert _outputs(arh, inputs, tmp_path / "many", "--jobs", "2") == one


def _trace_document(trace_id: str, marker: str) -> dict[str, object]:
    steps = [
        {
            "step_id": f"s{i}",
            "type": "tool_call",
            "tool_name": "t",
            "arguments": {"m": marker, "l": [1]},
        }
        for i in range(3)
    ]
    return {"schema_version": "1", "trace_id": trace_id, "agent_name": "a", "workflow": "w",
            "steps": steps}  # fmt: skip


def _alive(marker: str) -> bool:
    """Is any object parsed for the trace marked ``marker`` still in memory? (The arguments
    are in its document and in its model; their list makes the collector track them.)"""
    import gc

    return any(type(o) is dict and o.get("m") == marker for o in gc.get_objects())


@pytest.mark.parametrize("form", ["jsonl", "dir"])
def test_the_reader_keeps_no_document_while_its_trace_is_checked(form: str, tmp_path: Path) -> None:
    """Once the consumer lets go of a trace it was handed, nothing of it or of its parsed
    document stays alive while the reader waits to read the next one: the garbage collector,
    back on while the report is written, would otherwise walk all of it."""
    first = f"first-{form}"  # a marker of its own: a failed test's frames stay alive
    documents = [_trace_document("one", first), _trace_document("two", "second")]
    if form == "jsonl":
        target = tmp_path / "traces.jsonl"
        target.write_text("".join(json.dumps(d) + "\n" for d in documents), encoding="utf-8")
    else:
        target = tmp_path / "traces"
        target.mkdir()
        for number, document in enumerate(documents):
            (target / f"{number}.json").write_text(json.dumps(document), encoding="utf-8")
        del document
    del documents  # only the reader's copies are left
    errors: list[InputError] = []
    reader = runner.read_traces([str(target)], errors.append)
    read = next(reader)
    assert read.trace.trace_id == "one"
    assert _alive(first)
    del read
    assert not _alive(first)  # the reader is waiting, and holds none of it
    assert next(reader).trace.trace_id == "two"
    # validation: while the caller has a trace's report, the trace is gone already
    policy = Policy.from_dict({"schema_version": "1", "policy_id": "p"})
    reports = runner.iter_reports(policy, [str(target)], on_error=errors.append)
    assert next(reports).trace_id == "one"
    assert not _alive(first)
    assert next(reports).trace_id == "two"
    assert errors == []


# -- standard input ------------------------------------------------------------------------------


class _Stdin:
    """``sys.stdin`` reading from bytes, and telling how far it has been read."""

    def __init__(self, data: bytes) -> None:
        self.buffer = io.BytesIO(data)

    def close(self) -> None:  # what a worker process does first
        pass


def _stdin_source() -> Source:
    return Source(STDIN_NAME, None, jsonl=False, relative="stdin")


def _outcomes(items: Iterable[Document | InputError]) -> list[tuple[Any, ...]]:
    return [
        ("error", item.line, item.message) if isinstance(item, InputError)
        else ("document", item.line, item.value)
        for item in items
    ]  # fmt: skip


def _read_stdin_as_before(data: bytes) -> list[tuple[Any, ...]]:
    """How standard input was read before it was streamed (all of it at once): one document if
    the whole parses as one, JSON Lines if the parser stops with "Extra data"."""
    try:
        return _outcomes([Document(STDIN_NAME, None, loads(decode_bytes(data)))])
    except InputError as exc:
        if exc.message.startswith("invalid JSON: Extra data"):
            lines = data.splitlines(keepends=True)
            return _outcomes(io_module._jsonl_records(STDIN_NAME, lines))
        return _outcomes([exc.located(STDIN_NAME)])


def test_standard_input_json_lines_are_read_as_they_come(monkeypatch: pytest.MonkeyPatch) -> None:
    # before, all of standard input was read, decoded and split before the first record was
    # parsed: memory grew to several times the size of JSON Lines piped in
    lines = [json.dumps(_trace_document(f"t{n}", "m")) + "\n" for n in range(50)]
    data = "".join(lines).encode()
    stdin = _Stdin(data)
    monkeypatch.setattr(sys, "stdin", stdin)
    documents = io_module.read_documents(_stdin_source())
    first = next(documents)
    assert isinstance(first, Document)
    assert (first.line, first.value["trace_id"]) == (1, "t0")
    assert stdin.buffer.tell() <= len(lines[0]) * 3  # the first lines, not all fifty
    assert [d.line for d in documents] == list(range(2, 51))  # type: ignore[union-attr]


_STDIN_LINES = st.sampled_from([
    '{"a": 1}', "[1, 2]", '"x"', "7", "{", "}", '"a": 1,', '"b": [1', "]}", "nul", "{} {}",
    "", " ", "\t", "\r", "\x0c", "\u00e9", '{"k": "\\u00e9"}',
])  # fmt: skip


@given(
    lines=st.lists(_STDIN_LINES, max_size=6),
    end=st.sampled_from(["", "\n"]),
    bom=st.booleans(),
)
@settings(max_examples=400, deadline=None)
def test_standard_input_is_read_as_when_it_was_read_whole(
    lines: list[str], end: str, bom: bool
) -> None:
    # "\r" only ever before "\n": a lone carriage return ends a line for bytes.splitlines, which
    # the old reading used, but not for a stream (nor for a JSON Lines file)
    data = ("\ufeff" if bom else "").encode() + ("\n".join(lines) + end).encode()
    stdin = _Stdin(data)
    old = sys.stdin
    sys.stdin = stdin  # type: ignore[assignment]
    try:
        streamed = _outcomes(io_module.read_documents(_stdin_source()))
    finally:
        sys.stdin = old
    assert streamed == _read_stdin_as_before(data)
