"""The adapters on real agent logs (../shared/data/real-traces; each folder's README describes it).

Every file is converted, in one loop per data set. The expected tool calls and results are
computed here from the source files by each data set's documented layout (tau-bench: one call per
assistant message, its result right after; AgentDojo: the results of a message's calls follow it
in call order; ToolBench: each legacy result follows its call), independently of the adapters'
pairing logic, and compared with what the adapters built.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_reliability_harness._json import loads
from agent_reliability_harness.adapters import RecordOptions, to_traces
from agent_reliability_harness.errors import InputError
from agent_reliability_harness.model.trace import Trace

from conftest import (
    REAL_TRACES,
    Run,
    adapter_notes,
    json_paths,
    load_json,
    require_shared,
    schema_validator,
)

TAU = REAL_TRACES / "tau-bench" / "historical_trajectories" / "gpt-4o-airline.json"
AGENTDOJO = REAL_TRACES / "agentdojo" / "runs"
TOOLBENCH = REAL_TRACES / "toolbench" / "data_example" / "answer"
SWE_AGENT = REAL_TRACES / "swe-agent"
TAU_OPTIONS = {"messages_at": "/traj", "trace_id_at": ("/task_id", "/trial")}
TOOLBENCH_OPTIONS = {"messages_at": "/answer_generation/train_messages/-1"}


@cache
def read(path: Path) -> Any:
    return loads(path.read_bytes().decode("utf-8"))


def results(path: Path, **options: Any) -> list[Trace | InputError]:
    named = RecordOptions(default_id=path.stem, **options)
    return [r for _, r in to_traces(read(path), "auto", named)]


def only_traces(path: Path, **options: Any) -> list[Trace]:
    found = results(path, **options)
    assert all(isinstance(r, Trace) for r in found), (path, found)
    return found  # type: ignore[return-value]


def agentdojo_files() -> list[Path]:
    return sorted(require_shared(AGENTDOJO).rglob("*.json"))


def tool_calls(trace: Trace) -> list[Any]:
    return [s for s in trace.steps if s.type == "tool_call"]


def text_of(content: Any) -> Any:
    """A result's content as the adapters document it: a string as is, the text of parts joined."""
    if type(content) is list:
        return "\n".join(p.get("text", p.get("content")) for p in content)
    return content


# ---------------------------------------------------------------------------------------------


def test_every_real_file_ingests() -> None:
    require_shared(REAL_TRACES)
    converted: Counter[str] = Counter()
    errors: dict[str, InputError] = {}
    for path in agentdojo_files():
        converted["agentdojo"] += len(only_traces(path))
    converted["tau-bench"] += len(only_traces(TAU, **TAU_OPTIONS))
    for path in sorted(TOOLBENCH.rglob("*.json")):
        for outcome in results(path, **TOOLBENCH_OPTIONS):
            if isinstance(outcome, InputError):
                errors[path.relative_to(TOOLBENCH).as_posix()] = outcome
            else:
                converted["toolbench"] += 1
    for path in sorted(SWE_AGENT.rglob("*.traj")):
        converted["swe-agent"] += len(only_traces(path))
    # counts from the folders' READMEs: 1,445 AgentDojo runs, 200 tau-bench trajectories, 15
    # ToolBench queries of which 2 (valid_data false) have no train_messages, 3 SWE-agent runs
    assert converted == {"agentdojo": 1445, "tau-bench": 200, "toolbench": 13, "swe-agent": 3}
    assert sorted(errors) == [
        "G1_answer/69_ChatGPT_DFS_woFilter_w2.json",
        "G3_answer/8_ChatGPT_DFS_woFilter_w2.json",
    ]
    for path, error in errors.items():
        assert read(TOOLBENCH / path)["answer_generation"]["valid_data"] is False
        assert error.pointer == "/answer_generation"
        assert "no member 'train_messages'" in error.message


def all_traces() -> Iterator[Trace]:
    for path in agentdojo_files():
        yield from only_traces(path)
    yield from only_traces(TAU, **TAU_OPTIONS)
    for path in sorted(TOOLBENCH.rglob("*.json")):
        yield from (r for r in results(path, **TOOLBENCH_OPTIONS) if isinstance(r, Trace))
    for path in sorted(SWE_AGENT.rglob("*.traj")):
        yield from only_traces(path)


def test_converted_real_traces_are_valid_canonical_traces() -> None:
    require_shared(REAL_TRACES)
    schema = schema_validator("trace")
    count = 0
    for trace in all_traces():
        document = trace.to_dict()
        assert list(schema.iter_errors(document)) == [], trace.trace_id
        ids = [s.step_id for s in trace.steps]
        assert len(ids) == len(set(ids)), trace.trace_id
        count += 1
    assert count == 1661


def test_tau_bench_every_call_is_a_step_with_its_result() -> None:
    records = read(require_shared(TAU))
    traces = only_traces(TAU, **TAU_OPTIONS)
    assert len(traces) == len(records) == 200
    reused = 0
    for record, trace in zip(records, traces, strict=True):
        assert trace.trace_id == f"{record['task_id']}-{record['trial']}"
        assert trace.metadata["record"]["reward"] == record["reward"]
        expected: list[tuple[str, Any, Any]] = []
        for message in record["traj"]:
            for call in message.get("tool_calls") or []:
                function = call["function"]
                expected.append((function["name"], json.loads(function["arguments"]), None))
            if message["role"] == "tool":
                # the result of the call right before it (the README: ids are reused)
                name, arguments, _ = expected[-1]
                assert message["name"] == name
                expected[-1] = (name, arguments, message["content"])
        got = [(s.tool_name, s.arguments, s.output) for s in tool_calls(trace)]
        assert got == expected, trace.trace_id
        reused += bool(adapter_notes(trace, "duplicate_tool_call_id"))
    assert reused == 49  # the README: 49 trajectories reuse an id for a later call


def test_agentdojo_parallel_calls_pair_even_without_ids() -> None:
    id_kinds: Counter[str] = Counter()
    parallel = 0
    for path in agentdojo_files():
        run = read(path)
        expected: list[list[Any]] = []
        waiting: list[int] = []  # indexes into expected of the latest message's calls
        for message in run["messages"]:
            if message["role"] == "assistant":
                batch = message.get("tool_calls") or []
                parallel += len(batch) > 1
                waiting = []
                for call in batch:
                    id_kinds[repr(call["id"])[:1] if "id" in call else "absent"] += 1
                    waiting.append(len(expected))
                    expected.append([call["function"], call["args"], None, "ok"])
            elif message["role"] == "tool":
                slot = expected[waiting.pop(0)]
                assert message["tool_call"]["function"] == slot[0]  # the echo confirms the order
                assert message["tool_call"]["args"] == slot[1]
                slot[2] = text_of(message["content"])
                slot[3] = "error" if message["error"] else "ok"
        (trace,) = only_traces(path)
        got = [[s.tool_name, s.arguments, s.output, s.status] for s in tool_calls(trace)]
        assert got == expected, path
    # the logs hold every kind of id the README lists, and many parallel calls
    assert id_kinds.keys() >= {"'", "N", "absent"}  # strings (some empty), null, missing
    # the README counts 24 (gpt-4o banking) + 149 (gpt-4o slack) + 12 (Llama) such messages,
    # and gemini and command-r-plus have some too
    assert parallel >= 24 + 149 + 12


def test_toolbench_legacy_results_follow_their_calls() -> None:
    for path in sorted(require_shared(TOOLBENCH).rglob("*.json")):
        traces = [r for r in results(path, **TOOLBENCH_OPTIONS) if isinstance(r, Trace)]
        if not traces:
            continue
        messages = read(path)["answer_generation"]["train_messages"][-1]
        expected: list[list[Any]] = []
        for message in messages:
            if message.get("function_call"):
                call = message["function_call"]
                expected.append([call["name"], json.loads(call["arguments"]), None])
            elif message["role"] == "function":
                assert expected[-1][0] == message["name"]
                expected[-1][2] = message["content"]
        got = [[s.tool_name, s.arguments, s.output] for s in tool_calls(traces[0])]
        assert got == expected, path
        assert got[-1][0] == "Finish"  # the final answer is itself a call, with no result


def test_swe_agent_results_pair_through_tool_call_ids() -> None:
    # one call per assistant message, its observation right after (the SWE-agent README); the
    # replayed marshmallow demonstration reuses call ids, so the ids alone cannot pair them
    reused = 0
    for path in sorted(require_shared(SWE_AGENT).rglob("*.traj")):
        history = read(path)["history"]
        expected: list[list[Any]] = []
        for message in history:
            calls = message.get("tool_calls") or []
            expected.extend([call["id"], call["function"]["name"], None] for call in calls)
            if message["role"] == "tool":
                assert message["tool_call_ids"] == [expected[-1][0]]
                expected[-1][2] = message["content"]
        (trace,) = only_traces(path)
        got = [[s.tool_name, s.output] for s in tool_calls(trace)]
        assert got == [[name, output] for _, name, output in expected], path
        ids = [call_id for call_id, _, _ in expected]
        reused += len(ids) - len(set(ids))
    assert reused == 5  # counted in the marshmallow file: three ids used 2, 4 and 2 times


def test_real_logs_through_the_cli(arh: Callable[..., Run], tmp_path: Path) -> None:
    require_shared(REAL_TRACES)
    policy = tmp_path / "policy.json"
    policy.write_text(
        json.dumps(
            {
                "policy_id": "smoke",
                "allow_unlisted_tools": True,
                "completion": {"require_final_response": True},
            }
        ),
        encoding="utf-8",
    )
    report = tmp_path / "tau.json"
    run = arh(
        "validate", "--policy", policy, TAU, *["--messages-at", "/traj"],
        *["--trace-id-at", "/task_id", "--trace-id-at", "/trial"],
        "--quiet", "--json-out", report,
    )  # fmt: skip
    assert run.status == 1, run.err  # some runs end on a tool call
    assert run.err == ""
    reports = load_json(report)["reports"]
    assert len(reports) == 200
    assert len({r["trace_id"] for r in reports}) == 200
    # Claude runs of one suite: files named none.json in many folders stay distinct
    folder = AGENTDOJO / "claude-3-7-sonnet-20250219" / "slack"
    report = tmp_path / "dojo.json"
    run = arh("validate", "--policy", policy, folder, "--quiet", "--json-out", report)
    assert run.err == ""
    ids = [r["trace_id"] for r in load_json(report)["reports"]]
    assert len(ids) == len(set(ids)) == 131  # the AgentDojo README: 131 slack files
    assert "user_task_0/none/none" in ids


# ---------------------------------------------------------------------------------------------
# Mutating real transcripts: only an input error may escape


@cache
def real_seeds() -> list[tuple[Any, dict[str, Any]]]:
    seeds: list[tuple[Any, dict[str, Any]]] = [(read(TAU)[89], {"messages_at": "/traj"})]
    for model in sorted(p.name for p in AGENTDOJO.iterdir()):
        first = min((AGENTDOJO / model).rglob("none.json"))
        seeds.append((read(first), {}))
    path = TOOLBENCH / "G1_answer" / "10_ChatGPT_DFS_woFilter_w2.json"
    seeds.append((read(path)["answer_generation"]["train_messages"][-1], {}))
    seeds.append((read(SWE_AGENT / "trajectories/demonstrations/function_calling_simple.traj"), {}))
    return seeds


REPLACEMENTS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.sampled_from(["", "x", "{", "[]", "assistant", "tool", "user", "function", "text"]),
    st.just([]),
    st.just({}),
    st.just([{"type": "thinking"}, 3]),
    st.just({"name": 1, "arguments": []}),
)


@st.composite
def mutated_real(draw: st.DrawFn) -> tuple[Any, dict[str, Any]]:
    index = draw(st.integers(0, len(real_seeds()) - 1))
    seed, options = real_seeds()[index]
    document = copy.deepcopy(seed)
    paths = json_paths(document)
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(paths[1:]))
        parent = document
        try:
            for key in path[:-1]:
                parent = parent[key]
            if draw(st.booleans()):
                parent[path[-1]] = draw(REPLACEMENTS)
            else:
                del parent[path[-1]]
        except (KeyError, IndexError, TypeError):
            continue  # the path went away with an earlier mutation
    return document, options


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=mutated_real())
def test_mutated_real_transcripts_give_a_trace_or_an_input_error(
    case: tuple[Any, dict[str, Any]],
) -> None:
    document, options = case
    for fmt in ("auto", "openai-chat", "anthropic-messages", "cohere-chat"):
        for _, outcome in to_traces(document, fmt, RecordOptions(**options)):
            assert isinstance(outcome, Trace | InputError)


@pytest.fixture(autouse=True)
def _shared() -> None:
    require_shared(REAL_TRACES)
