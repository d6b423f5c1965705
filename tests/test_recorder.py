"""The trace recorder (``record.Recorder``) and the example agent that uses it."""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest

from agent_reliability_harness.engine import validate_trace
from agent_reliability_harness.errors import UsageError
from agent_reliability_harness.model.policy import Policy
from agent_reliability_harness.model.trace import Trace
from agent_reliability_harness.monitor import BlockedCallError, Monitor
from agent_reliability_harness.record import Recorder, json_value, record_tool

from conftest import ROOT, Run

EXAMPLES = ROOT / "examples"


class FakeClock:
    """A monotonic clock that advances by a fixed step each time it is read."""

    def __init__(self, step: float) -> None:
        self.now = 100.0
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_a_recorded_run_is_the_canonical_trace_written_by_hand() -> None:
    rec = Recorder("run-1", agent_name="bot", workflow="refunds", clock=FakeClock(0.25))
    rec.user_message("refund A1")
    lookup = rec.tool(lambda order_id: {"order_id": order_id, "total": 5}, name="lookup")
    assert lookup("A1") == {"order_id": "A1", "total": 5}
    rec.tool_call("notify", {"channel": "email"}, output="sent", cost_usd=0.001)
    rec.model_response(
        "Refunded.",
        citations=["https://shop.example/A1", "order database"],
        requires_grounding=True,
        input_tokens=12,
        output_tokens=3,
    )
    # Written out from the recorder's documented behaviour: ids s1.., a tool's latency is the
    # clock difference (one 0.25 s step = 250 ms), string citations become url/source objects.
    expected = {
        "schema_version": "1.1",
        "trace_id": "run-1",
        "agent_name": "bot",
        "workflow": "refunds",
        "steps": [
            {"step_id": "s1", "type": "user_message", "text": "refund A1"},
            {
                "step_id": "s2",
                "type": "tool_call",
                "tool_name": "lookup",
                "arguments": {"order_id": "A1"},
                "output": {"order_id": "A1", "total": 5},
                "latency_ms": 250.0,
            },
            {
                "step_id": "s3",
                "type": "tool_call",
                "tool_name": "notify",
                "arguments": {"channel": "email"},
                "output": "sent",
                "cost_usd": 0.001,
            },
            {
                "step_id": "s4",
                "type": "model_response",
                "text": "Refunded.",
                "citations": [{"url": "https://shop.example/A1"}, {"source": "order database"}],
                "requires_grounding": True,
                "input_tokens": 12,
                "output_tokens": 3,
            },
        ],
    }
    assert rec.to_dict() == expected
    assert Trace.from_dict(expected) == rec.trace()


def test_a_trace_without_user_turns_is_version_1() -> None:
    rec = Recorder("run-1", clock=None)
    rec.model_response("hi")
    assert rec.trace().schema_version == "1"


def test_a_failing_tool_is_recorded_as_an_error_and_raises_again() -> None:
    rec = Recorder("run-1", clock=None)

    @rec.tool
    def charge(card: str, amount: float = 1.0) -> str:
        raise ValueError(f"card {card} declined")

    with pytest.raises(ValueError, match="declined"):
        charge("4242")
    [step] = rec.steps
    assert step.to_dict() == {
        "step_id": "s1",
        "type": "tool_call",
        "tool_name": "charge",
        "arguments": {"card": "4242"},  # the default amount was not passed, so not recorded
        "error": "ValueError: card 4242 declined",
    }
    assert step.status == "error"


def test_arguments_are_recorded_by_parameter_name() -> None:
    rec = Recorder("run-1", clock=None)

    @rec.tool(name="search")
    def find(query: str, *extra: str, limit: int = 5, **filters: Any) -> list[str]:
        return []

    find("shoes", "red", limit=2, brand="x")
    assert rec.steps[0].tool_name == "search"
    assert rec.steps[0].arguments == {
        "query": "shoes",
        "extra": ["red"],
        "limit": 2,
        "brand": "x",
    }
    assert find.__name__ == "find"  # functools.wraps


def test_record_tool_and_async_tools() -> None:
    rec = Recorder("run-1", clock=None)

    @record_tool(rec, name="fetch")
    async def fetch(url: str) -> str:
        await asyncio.sleep(0)
        return f"<{url}>"

    assert asyncio.run(fetch("a")) == "<a>"
    assert [(s.tool_name, s.output) for s in rec.steps] == [("fetch", "<a>")]


@dataclass
class Point:
    x: int
    y: float
    unit: ClassVar[str] = "px"  # not a field: not recorded


class Broken:
    def __str__(self) -> str:
        raise RuntimeError("no text")


def test_values_become_plain_json() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    # each expected value follows the conversion rules in json_value's docstring
    assert json_value({1: (1, 2), None: {3, 1, 2}, "p": Point(1, 2.5)}) == {
        "1": [1, 2],
        "null": [1, 2, 3],
        "p": {"x": 1, "y": 2.5},
    }
    assert json_value([math.nan, math.inf, -math.inf, True, b"x", loop, Broken()]) == [
        "nan",
        "inf",
        "-inf",
        True,
        "b'x'",
        [1, "<cycle>"],
        "<Broken>",
    ]
    deep: Any = "leaf"
    for _ in range(300):
        deep = [deep]
    depth, node = 0, json_value(deep)
    while isinstance(node, list):
        depth, node = depth + 1, node[0]
    assert (depth, node) == (200, "<nested too deeply>")
    # an integer Python will not write as text (more than 4,300 digits by default) is described;
    # one it writes stays a number (writing the trace raised ValueError at the end of the run)
    assert json_value({"n": 10**5000, "m": 10**4000}) == {
        "n": "an integer of 5001 digits",
        "m": 10**4000,
    }


def test_bad_values_are_usage_errors_naming_the_step() -> None:
    rec = Recorder("run-1", clock=None)
    with pytest.raises(UsageError, match=r"cannot record step 's1': /steps/0/latency_ms"):
        rec.tool_call("t", latency_ms=-5)
    with pytest.raises(UsageError, match="/steps/0/status"):
        rec.tool_call("t", status="done")
    with pytest.raises(UsageError, match="trace_id"):
        Recorder("")
    assert rec.steps == ()


def test_writes_json_atomically_and_validates_with_the_cli(
    tmp_path: Path, arh: Callable[..., Run]
) -> None:
    path = tmp_path / "runs" / "run-1.json"
    with Recorder("run-1", path=path, clock=None) as rec:
        rec.model_response("done")
    assert json.loads(path.read_text(encoding="utf-8")) == rec.to_dict()
    assert [p.name for p in path.parent.iterdir()] == ["run-1.json"]  # no temporary file left
    policy = tmp_path / "policy.json"
    policy.write_text(
        json.dumps({"policy_id": "p", "completion": {"require_final_response": True}})
    )
    run = arh("validate", "--policy", policy, path, "--quiet")
    assert run.status == 0, run.err


def test_appends_one_line_per_trace_to_json_lines(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_bytes(b'{"torn": ')  # a writer died mid-line: the next record gets its own line
    for index in (1, 2):
        with Recorder(f"run-{index}", path=path, clock=None) as rec:
            rec.model_response(f"answer {index}")
    lines = path.read_text(encoding="utf-8").split("\n")
    assert lines[0] == '{"torn": '
    assert [json.loads(line)["trace_id"] for line in lines[1:3]] == ["run-1", "run-2"]
    assert lines[3] == ""


def _append_runs(path: str, worker: int) -> None:
    for run in range(20):
        rec = Recorder(f"w{worker}-{run}", clock=None)
        rec.tool_call("fetch", {"blob": "y" * 200_000})
        rec.append_jsonl(path)


def test_processes_appending_to_one_file_add_no_blank_lines(tmp_path: Path) -> None:
    # a writer looked at the last byte while another's long write was under way, took that
    # for a torn line and wrote a line break first: 31 and 37 blank lines in two runs of 8 x 30
    import multiprocessing

    path = tmp_path / "runs.jsonl"
    workers = [multiprocessing.Process(target=_append_runs, args=(str(path), k)) for k in range(6)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    lines = path.read_text(encoding="utf-8").split("\n")
    assert lines[-1] == ""
    assert sorted(json.loads(line)["trace_id"] for line in lines[:-1]) == sorted(
        f"w{k}-{run}" for k in range(6) for run in range(20)
    )


def test_the_trace_is_written_when_the_block_raises(tmp_path: Path) -> None:
    path = tmp_path / "crash.json"

    def crash() -> None:
        with Recorder("crash", path=path, clock=None) as rec:
            rec.user_message("go")
            raise RuntimeError("agent crashed")

    with pytest.raises(RuntimeError):
        crash()
    assert json.loads(path.read_text(encoding="utf-8"))["steps"][0]["text"] == "go"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"trace_id": ""}, "trace_id must be a non-empty string"),
        ({"trace_id": None}, "trace_id must be a non-empty string"),
        ({"agent_name": 5}, "agent_name must be a string, got int"),
        ({"source": 5}, "source must be a string or None, got int"),
        ({"metadata": [1, 2]}, "metadata must be a mapping with string keys or None, got list"),
        ({"metadata": {1: "a", "1": "b"}}, "metadata keys must be strings, got int"),
        ({"path": 5}, "path must be a str or os.PathLike path, got int"),
        ({"path": b"run.json"}, "path must be a str or os.PathLike path, got bytes"),
        ({"clock": 5}, "clock must be a function returning seconds, or None, got int"),
        ({"guard": {"policy_id": "p"}}, "guard must be a Policy, a Monitor or None, got dict"),
        ({"guard": "policy.json"}, "guard must be a Policy, a Monitor or None, got str"),
    ],
)
def test_the_constructor_refuses_what_the_trace_could_not_hold(
    arguments: dict[str, Any], message: str
) -> None:
    # each would otherwise fail later (at the first tool call, when the trace is written) or
    # write a trace that Trace.from_dict and the CLI reject
    given = {"trace_id": "run-1", **arguments}
    with pytest.raises(UsageError, match=re.escape(message)):
        Recorder(**given)


def test_the_identity_given_is_the_identity_written(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    metadata = {"model": "m", "tags": ("a", "b")}
    with Recorder("run-1", "bot", "flow", path=path, source="tests", metadata=metadata):
        pass
    trace = Trace.from_dict(json.loads(path.read_text(encoding="utf-8")))
    assert (trace.trace_id, trace.agent_name, trace.workflow, trace.source) == (
        "run-1",
        "bot",
        "flow",
        "tests",
    )
    assert trace.metadata == {"model": "m", "tags": ["a", "b"]}


def test_a_failed_write_never_replaces_the_exception_of_the_block(tmp_path: Path) -> None:
    (tmp_path / "blocker").write_text("a file where the directory should be")
    path = tmp_path / "blocker" / "run.json"
    with (
        pytest.raises(RuntimeError, match="agent crashed") as crashed,
        Recorder("run-1", path=path, clock=None),
    ):
        raise RuntimeError("agent crashed")
    notes = getattr(crashed.value, "__notes__", [])
    assert len(notes) == 1
    assert notes[0].startswith(f"arh: the trace could not be written to {path}: ")
    # without an exception of its own, the block raises the write's
    with pytest.raises(NotADirectoryError), Recorder("run-1", path=path, clock=None):
        pass


class AsyncTool:
    """A callable object whose ``__call__`` is a coroutine function."""

    def __init__(self, fail: bool) -> None:
        self.fail = fail

    async def __call__(self, order_id: str) -> dict[str, str]:
        await asyncio.sleep(0)
        if self.fail:
            raise LookupError(f"no order {order_id}")
        return {"order_id": order_id}


def plain_decorator(fn: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return call


def test_awaitables_returned_by_plain_callables_are_awaited_and_recorded() -> None:
    rec = Recorder("run-1", clock=FakeClock(0.25))

    @plain_decorator
    async def search(query: str) -> list[str]:
        await asyncio.sleep(0)
        return [query]

    async def agent() -> None:
        lookup = rec.tool(AsyncTool(fail=False), name="lookup")
        failing = rec.tool(AsyncTool(fail=True), name="lookup")
        assert await lookup(order_id="A1") == {"order_id": "A1"}
        with pytest.raises(LookupError, match="no order B2"):
            await failing(order_id="B2")
        assert await rec.tool(search)("shoes") == ["shoes"]

    asyncio.run(agent())
    # as a coroutine function's calls are recorded: what awaiting gave, and one clock step
    # (250 ms) between the call and the end of the await
    assert [s.to_dict() for s in rec.steps] == [
        {
            "step_id": "s1",
            "type": "tool_call",
            "tool_name": "lookup",
            "arguments": {"order_id": "A1"},
            "output": {"order_id": "A1"},
            "latency_ms": 250.0,
        },
        {
            "step_id": "s2",
            "type": "tool_call",
            "tool_name": "lookup",
            "arguments": {"order_id": "B2"},
            "error": "LookupError: no order B2",
            "latency_ms": 250.0,
        },
        {
            "step_id": "s3",
            "type": "tool_call",
            "tool_name": "call",  # the plain decorator's name: it did not copy the function's
            "arguments": {"args": ["shoes"]},
            "output": ["shoes"],
            "latency_ms": 250.0,
        },
    ]


def test_a_returned_task_is_returned_itself_and_recorded_when_it_is_done() -> None:
    rec = Recorder("run-1", clock=None)

    def start(n: int) -> asyncio.Task[int]:
        async def double() -> int:
            await asyncio.sleep(0)
            return 2 * n

        return asyncio.get_running_loop().create_task(double())

    async def agent() -> None:
        spawn = rec.tool(start, name="double")
        task = spawn(n=21)
        assert isinstance(task, asyncio.Task)  # still a task: it can be cancelled or waited for
        done, _ = await asyncio.wait([task])
        assert done == {task}
        assert task.result() == 42
        await asyncio.sleep(0)  # the done callback runs on the next turn of the loop
        cancelled = spawn(n=1)
        cancelled.cancel()
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        await asyncio.sleep(0)

    asyncio.run(agent())
    assert [(s.step_id, s.output, s.status, s.error) for s in rec.steps] == [
        ("s1", 42, "ok", None),
        ("s2", None, "error", "CancelledError"),
    ]


def test_the_tool_name_is_checked_before_anything_runs() -> None:
    rec = Recorder("run-1", clock=None)
    calls: list[str] = []

    def pay(to: str) -> str:
        calls.append(to)
        return "paid"

    with pytest.raises(UsageError, match="name must be a non-empty string or None, got int"):
        rec.tool(pay, name=5)  # type: ignore[call-overload]
    with pytest.raises(UsageError, match="name must be a non-empty string or None, got ''"):
        rec.tool(name="")
    with pytest.raises(UsageError, match="name must be a non-empty string or None, got list"):
        record_tool(rec, name=["pay"])  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="the tool must be callable, got str"):
        rec.tool("pay")  # type: ignore[call-overload]
    with pytest.raises(UsageError, match="recorder must be a Recorder, got str"):
        record_tool("rec")  # type: ignore[arg-type]
    assert calls == []
    assert rec.steps == ()


def test_citations_given_as_one_string_or_mapping_are_one_citation() -> None:
    rec = Recorder("run-1", clock=None)
    rec.model_response("hi", citations="https://a.example")
    rec.model_response("hi", citations={"source": "manual", "url": "https://b.example"})
    rec.model_response("hi", citations=("https://a.example", "manual"))
    assert [s.citations for s in rec.steps] == [
        ({"url": "https://a.example"},),
        ({"source": "manual", "url": "https://b.example"},),
        ({"url": "https://a.example"}, {"source": "manual"}),
    ]
    with pytest.raises(UsageError, match=r"citations must be a citation \(a string or a mapping\)"):
        rec.model_response("hi", citations=5)  # type: ignore[arg-type]
    assert len(rec.steps) == 3


GUARD_POLICY = Policy.from_dict(
    {
        "policy_id": "guarded",
        "allowed_tools": {
            "pay": {"required_arguments": {"to": "str"}, "side_effect": True},
            "look": {},
        },
        "sequence": {"forbidden_tools": ["wipe"]},
    }
)


def test_the_guard_refuses_a_duplicate_side_effect_before_the_tool_runs() -> None:
    paid: list[str] = []
    rec = Recorder("run-1", guard=GUARD_POLICY, clock=None)
    pay = rec.tool(lambda to: paid.append(to) or "paid", name="pay")
    pay(to="ann")
    with pytest.raises(BlockedCallError) as blocked:
        pay(to="ann")
    assert paid == ["ann"]  # the second call never reached the tool
    assert [f.rule_id for f in blocked.value.findings] == ["ARH-FLW-003"]
    pay(to="bob")  # a different payment goes through
    assert paid == ["ann", "bob"]
    trace = rec.trace()
    assert [s.step_id for s in trace.steps] == ["s1", "s3"]
    assert trace.metadata["blocked_calls"] == [
        {
            "step_id": "s2",
            "tool_name": "pay",
            "arguments": {"to": "ann"},
            "rule_ids": ["ARH-FLW-003"],
        }
    ]
    assert validate_trace(trace, GUARD_POLICY).passed
    assert rec.monitor is not None
    assert rec.monitor.finish() == list(validate_trace(trace, GUARD_POLICY).findings)


def test_check_call_asks_the_guard_without_recording() -> None:
    monitor = Monitor(GUARD_POLICY, trace_id="run-1")
    rec = Recorder("run-1", guard=monitor, clock=None)
    assert rec.monitor is monitor
    assert rec.check_call("look") == []
    assert [f.rule_id for f in rec.check_call("wipe", {})] == ["ARH-SCH-001", "ARH-SEQ-002"]
    assert rec.steps == ()
    rec.tool_call("wipe", {}, output="gone")  # done anyway: observed and kept in the trace
    assert [s.tool_name for s in monitor.steps] == ["wipe"]
    # observe() does not repeat what the check of this very call already said
    assert [f.rule_id for f in rec.runtime_findings] == ["ARH-SCH-001", "ARH-SEQ-002"]
    assert Recorder("x").check_call("wipe") == []  # no guard, nothing to check


# ---------------------------------------------------------------------------------------------
# The example agent in examples/


@dataclass
class Ran:
    returncode: int
    stdout: str


@pytest.fixture
def example(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> Callable[..., Ran]:
    """Run examples/refund_agent.py's main() in-process, in a scratch directory."""
    monkeypatch.syspath_prepend(str(EXAMPLES))
    monkeypatch.chdir(tmp_path)
    from refund_agent import main

    def run(*args: str) -> Ran:
        capsys.readouterr()
        status = main(list(args))
        return Ran(status, capsys.readouterr().out)

    return run


def test_the_example_runs_as_a_script(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "refund_agent.py"), "--repeat-refund", "--out", "r.json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
        check=False,
    )
    assert (result.returncode, result.stderr) == (1, "")
    assert "refunds issued: 2" in result.stdout
    assert (tmp_path / "r.json").is_file()


@pytest.fixture
def policy_path() -> Path:
    return EXAMPLES / "refund_policy.json"


def test_example_agent_records_a_passing_run(
    example: Callable[..., Ran], tmp_path: Path, policy_path: Path
) -> None:
    result = example("--out", "run.json")
    assert result.returncode == 0
    assert result.stdout.splitlines() == [
        "agent: Refunded $42.50 for order A1001.",
        "refunds issued: 1",
        "trace written to run.json (4 steps)",
        "verdict: PASS (score 100.00)",
    ]
    trace = Trace.from_dict(json.loads((tmp_path / "run.json").read_text(encoding="utf-8")))
    assert [s.tool_name or s.type for s in trace.steps] == [
        "user_message",
        "lookup_order",
        "issue_refund",
        "model_response",
    ]
    assert all(s.latency_ms is not None for s in trace.steps if s.type == "tool_call")
    policy = Policy.from_dict(json.loads(policy_path.read_text(encoding="utf-8")))
    assert validate_trace(trace, policy).passed


def test_example_agent_with_the_seeded_duplicate_refund_fails(example: Callable[..., Ran]) -> None:
    result = example("--repeat-refund", "--out", "run.json")
    assert result.returncode == 1
    assert "refunds issued: 2" in result.stdout
    assert (
        "  error ARH-FLW-003 s4: duplicate side effect: tool 'issue_refund' was called again "
        "with identical arguments after step 's3' succeeded"
    ) in result.stdout.splitlines()


def test_example_guard_blocks_the_duplicate_refund(
    example: Callable[..., Ran], tmp_path: Path
) -> None:
    result = example("--repeat-refund", "--guard", "--out", "runs.jsonl")
    assert result.returncode == 0
    assert result.stdout.splitlines() == [
        "agent: Refunded $42.50 for order A1001.",
        "refunds issued: 1",
        "guard blocked issue_refund at s4: ['ARH-FLW-003']",
        "trace written to runs.jsonl (4 steps)",
        "verdict: PASS (score 100.00)",
    ]
    [line] = (tmp_path / "runs.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(line)["metadata"]["blocked_calls"][0]["rule_ids"] == ["ARH-FLW-003"]


# ---------------------------------------------------------------------------------------------
# docs/python-api.md shows the example as it is and its code runs

DOC = ROOT / "docs" / "python-api.md"
_EXCERPT = re.compile(r"<!-- excerpt: (\S+) -->")


def _doc_blocks() -> list[tuple[str | None, str, str]]:
    """(the file a block is an excerpt of, or None; its language; its text) for each block."""
    blocks: list[tuple[str | None, str, str]] = []
    lines = DOC.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("```") and len(line) > 3:
            previous = _EXCERPT.fullmatch(lines[index - 1]) if index else None
            end = lines.index("```", index + 1)
            body = "\n".join(lines[index + 1 : end]) + "\n"
            blocks.append((previous.group(1) if previous else None, line[3:], body))
            index = end
        index += 1
    return blocks


def test_the_doc_shows_the_example_files_as_they_are() -> None:
    excerpts = [(source, body) for source, _, body in _doc_blocks() if source]
    assert len(excerpts) == 3
    for source, body in excerpts:
        assert body in (ROOT / source).read_text(encoding="utf-8"), source


def test_the_doc_python_examples_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    blocks = [body for source, lang, body in _doc_blocks() if lang == "python" and not source]
    assert len(blocks) == 5
    for number, body in enumerate(blocks):
        exec(compile(body, f"docs/python-api.md block {number}", "exec"), {"__name__": "doc"})  # noqa: S102
    printed = capsys.readouterr().out
    # the rule's message for a repeat of s1, as docs/rules.md words ARH-FLW-003
    assert printed == (
        "ARH-FLW-003 duplicate side effect: tool 'pay' was called again with identical "
        "arguments after step 's1' succeeded\n"
    )
    assert f"`{printed.strip()}`" in " ".join(DOC.read_text(encoding="utf-8").split())
    recorded = json.loads((tmp_path / "run-42.json").read_text(encoding="utf-8"))
    assert [s["type"] for s in recorded["steps"]] == [
        "user_message",
        "tool_call",
        "tool_call",
        "model_response",
    ]


def test_the_doc_transcripts_are_the_example_output(example: Callable[..., Ran]) -> None:
    runs = [body for _, lang, body in _doc_blocks() if body.startswith("$ python examples/")]
    assert len(runs) == 3
    for body in runs:
        command, *expected = body.rstrip("\n").split("\n")
        result = example(*command.split()[3:])
        assert result.stdout.splitlines() == expected, command


def test_the_doc_failure_message_is_the_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLES))
    from refund_agent import FakeLLM, Shop, run_agent

    from agent_reliability_harness.pytest_plugin import assert_trace_passes

    [shown] = [body for _, _, body in _doc_blocks() if body.startswith("E       AssertionError")]
    lines = [line[8:] for line in shown.rstrip("\n").split("\n")]
    lines[0] = lines[0].removeprefix("AssertionError: ")
    rec = Recorder("refund-twice", agent_name="refund-agent", workflow="refunds", clock=None)
    run_agent("Please refund order A1001.", FakeLLM(repeat_refund=True), Shop(), rec)
    policy = Policy.from_dict(json.loads((EXAMPLES / "refund_policy.json").read_text("utf-8")))
    with pytest.raises(AssertionError) as failed:
        assert_trace_passes(rec, policy)
    assert str(failed.value).split("\n") == lines


# A payment tool the guard lets run once.
PAY_ONCE = {"pay": {"required_arguments": {"to": "str"}, "side_effect": True, "max_calls": 1}}


def test_the_guard_checks_overlapping_coroutine_calls_one_at_a_time() -> None:
    # two payments started together with max_calls 1: each was checked before the other was
    # recorded, so both ran; now the second waits, is checked after the first, and is refused
    policy = Policy.from_dict({"policy_id": "payments", "allowed_tools": PAY_ONCE})
    paid: list[str] = []
    rec = Recorder("run", guard=policy, clock=None)

    @rec.tool
    async def pay(to: str) -> str:
        await asyncio.sleep(0.01)
        paid.append(to)
        return "paid"

    async def main() -> list[Any]:
        return await asyncio.gather(pay("ann"), pay("ann"), return_exceptions=True)

    first, second = asyncio.run(main())
    assert first == "paid"
    assert isinstance(second, BlockedCallError)
    assert sorted({f.rule_id for f in second.findings}) == ["ARH-FLW-003", "ARH-SEQ-004"]
    assert paid == ["ann"]
    assert validate_trace(rec.trace(), policy).findings == ()
    # without a guard nothing waits: the calls overlap, and both are recorded
    plain = Recorder("run", clock=None)
    both: list[str] = []

    @plain.tool
    async def pay_unguarded(to: str) -> str:
        both.append(f"start {to}")
        await asyncio.sleep(0.01)
        both.append(f"end {to}")
        return "paid"

    async def unguarded() -> list[Any]:
        return await asyncio.gather(pay_unguarded("a"), pay_unguarded("b"))

    assert asyncio.run(unguarded()) == ["paid", "paid"]
    assert both == ["start a", "start b", "end a", "end b"]


def test_guarded_coroutine_calls_inside_a_guarded_call_take_turns_among_themselves() -> None:
    # a guarded async tool that awaited another waited forever for the lock the outer call held
    policy = Policy.from_dict(
        {"policy_id": "payments", "allow_unlisted_tools": True, "allowed_tools": PAY_ONCE}
    )
    rec = Recorder("run", guard=policy, clock=None)
    events: list[str] = []

    @rec.tool
    async def pay(to: str) -> str:
        events.append(f"start {to}")
        await asyncio.sleep(0.01)
        events.append(f"end {to}")
        return "paid"

    @rec.tool
    async def lookup(x: int) -> int:
        return x + 1

    @rec.tool
    async def checkout(to: str) -> list[Any]:
        assert await lookup(x=1) == 2  # awaited inside: ran in checkout's turn
        # two payments started inside take turns: the second is refused (max_calls 1)
        return await asyncio.gather(pay(to), pay(to), return_exceptions=True)

    first, second = asyncio.run(asyncio.wait_for(checkout(to="ann"), timeout=5))
    assert first == "paid"
    assert isinstance(second, BlockedCallError)
    assert events == ["start ann", "end ann"]
    # the steps are numbered in the order the calls began, and recorded as they ended
    assert [(s.step_id, s.tool_name) for s in rec.trace().steps] == [
        ("s2", "lookup"),
        ("s3", "pay"),
        ("s1", "checkout"),
    ]


def test_a_call_is_recorded_with_its_arguments_as_they_were_passed() -> None:
    # a tool that added a key to its argument was recorded with it, after the call, so the
    # same payment made again never matched the recorded one and the guard let it through
    pay_spec = {"required_arguments": {"order": "dict"}, "side_effect": True}
    policy = Policy.from_dict({"policy_id": "p", "allowed_tools": {"pay": pay_spec}})
    rec = Recorder("run", guard=policy, clock=None)
    paid: list[dict[str, Any]] = []

    @rec.tool
    def pay(order: dict[str, Any]) -> str:
        order.setdefault("currency", "EUR")
        paid.append(dict(order))
        return "ok"

    pay(order={"id": "A1", "amount": 5})
    with pytest.raises(BlockedCallError):
        pay(order={"id": "A1", "amount": 5})
    assert len(paid) == 1
    (step,) = rec.trace().steps
    assert step.arguments == {"order": {"id": "A1", "amount": 5}}


@pytest.mark.parametrize("method", ["write", "write_json", "append_jsonl"])
@pytest.mark.parametrize("path", [5, None, b"runs.jsonl"])
def test_every_write_method_checks_its_path(method: str, path: object) -> None:
    # write checked it; write_json and append_jsonl raised TypeError or wrote a bytes path
    rec = Recorder("run", clock=None)
    with pytest.raises(UsageError, match=r"path must be a str or os\.PathLike path"):
        getattr(rec, method)(path)


@pytest.mark.parametrize("method", ["write", "write_json", "append_jsonl"])
@pytest.mark.parametrize("name", ["existing", "runs.jsonl/", "run.json/"])
def test_a_directory_is_refused_by_name_and_nothing_is_made(
    tmp_path: Path, method: str, name: str
) -> None:
    # an existing directory raised from the rename, naming the temporary file; a name ending in
    # a separator first created a directory of that name
    (tmp_path / "existing").mkdir()
    target = os.path.join(tmp_path, name)
    rec = Recorder("run", clock=None)
    with pytest.raises(IsADirectoryError) as raised:
        getattr(rec, method)(target)
    assert raised.value.filename == target
    assert raised.value.strerror == "Is a directory"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["existing"]
    assert list((tmp_path / "existing").iterdir()) == []


@pytest.mark.parametrize("value", [0, [], "yes"])
def test_requires_grounding_takes_only_true_or_false(value: object) -> None:
    # "requires_grounding or None" stored 0 and [] as False without a word
    rec = Recorder("run", clock=None)
    with pytest.raises(UsageError, match="/requires_grounding: must be true or false"):
        rec.model_response("hi", requires_grounding=value)  # type: ignore[arg-type]
    assert rec.model_response("hi", requires_grounding=True).requires_grounding is True
    assert rec.model_response("hi").requires_grounding is False


def test_citations_given_as_a_set_are_in_the_order_of_their_json(tmp_path: Path) -> None:
    # a set has no order of its own; its iteration order changed with PYTHONHASHSEED
    script = (
        "from agent_reliability_harness import Recorder\n"
        "rec = Recorder('run', clock=None)\n"
        "step = rec.model_response('hi', citations={'b-src', 'https://a.example', 'c', 'a'})\n"
        "print(step.citations)\n"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", script],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("0", "1", "2", "3")
    }
    assert outputs == {
        "({'source': 'a'}, {'source': 'b-src'}, {'source': 'c'}, {'url': 'https://a.example'})\n"
    }


def test_a_clock_that_returns_no_time_stops_the_call_before_it_runs() -> None:
    calls: list[str] = []
    rec = Recorder("run", clock=lambda: "now")  # type: ignore[arg-type,return-value]

    @rec.tool
    def pay(to: str) -> str:
        calls.append(to)
        return "paid"

    with pytest.raises(UsageError, match="the clock must return a finite number of seconds"):
        pay("ann")
    assert (calls, rec.steps) == ([], ())  # nothing ran, nothing to record


@pytest.mark.parametrize("later", [math.inf, 1e306])
def test_a_clock_that_breaks_during_a_call_keeps_the_call_recorded(later: float) -> None:
    # the call ran; its step was lost (a TypeError, or a latency of inf that no step may hold)
    readings = iter([0.0, later])
    rec = Recorder("run", clock=lambda: next(readings))

    @rec.tool
    def pay(to: str) -> str:
        return "paid"

    with pytest.raises(UsageError, match="clock"):
        pay("ann")
    (step,) = rec.steps
    assert (step.tool_name, step.output, step.latency_ms) == ("pay", "paid", None)


def test_string_enum_names_become_plain_strings_that_round_trip() -> None:
    from enum import StrEnum

    class Run(StrEnum):
        ID = "run-1"
        AGENT = "refund-agent"
        SOURCE = "sdk"

    # a trace holding an enum member as its id did not parse back: "must be a string, got enum"
    rec = Recorder(Run.ID, Run.AGENT, source=Run.SOURCE, clock=None)
    rec.model_response("done")
    monitor = Monitor(Policy.from_dict({"policy_id": "p"}), trace_id=Run.ID, agent_name=Run.AGENT)
    monitor.observe({"step_id": "s1", "type": "model_response", "text": "done"})
    for trace in (rec.trace(), monitor.trace()):
        assert (type(trace.trace_id), type(trace.agent_name)) == (str, str)
        assert Trace.from_dict(trace.to_dict()) == trace
    assert type(rec.trace().source) is str
