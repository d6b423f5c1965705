"""arh run's pieces: the task parser, the tool gateway feature by feature, the reference agents
and the broken example agent on the hand-written tasks of tests/data/tasks/."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from agent_reliability_harness.errors import InputError
from agent_reliability_harness.harness import agents
from agent_reliability_harness.harness.execute import (
    AGENT_FAILURE,
    INFRASTRUCTURE_FAILURE,
    PASSED,
    run_task,
    run_tasks,
)
from agent_reliability_harness.harness.gateway import DEFAULT_OPTIONS, Gateway, GatewayOptions
from agent_reliability_harness.harness.protocol import CapExceeded, ToolCallError
from agent_reliability_harness.harness.task import Task, load_task_file, parse_task_lines
from agent_reliability_harness.monitor import Monitor
from agent_reliability_harness.record import Recorder

from conftest import ROOT

TASKS = ROOT / "tests" / "data" / "tasks" / "golden-mini.jsonl"
BROKEN = str(ROOT / "examples" / "broken_agent.py") + ":broken"
RAW = [json.loads(line) for line in TASKS.read_text(encoding="utf-8").splitlines()]
BY_ID = {raw["id"]: raw for raw in RAW}


def _task(task_id: str, **changes: Any) -> Task:
    raw = copy.deepcopy(BY_ID[task_id])
    raw.update(changes)
    return Task.from_dict(raw)


def _gateway(task: Task, options: GatewayOptions = DEFAULT_OPTIONS) -> Gateway:
    monitor = Monitor(task.policy, trace_id="t")
    recorder = Recorder("t", guard=monitor, clock=None)
    recorder.user_message(task.prompt)
    return Gateway(task, recorder, options)


# -- the task parser ------------------------------------------------------------------------


def _error(raw: Any) -> InputError:
    with pytest.raises(InputError) as caught:
        Task.from_dict(raw)
    return caught.value


def test_every_hand_written_task_parses() -> None:
    tasks, errors = load_task_file(str(TASKS))
    assert errors == []
    assert {t.pattern for t in tasks} == {
        "react",
        "plan_and_execute",
        "supervisor",
        "swarm",
        "map_reduce",
    }


@pytest.mark.parametrize(
    ("change", "pointer", "words"),
    [
        ({"promt": "x"}, "/promt", "did you mean 'prompt'"),
        ({"pattern": "chain"}, "/pattern", "must be one of react"),
        ({"category": 3}, "/category", "must be a string"),
        ({"id": "a b"}, "/id", "letters, digits"),
        ({"caps": {"max_steps": 0}}, "/caps/max_steps", "integer >= 1"),
        ({"user_replies": ["yes", ""]}, "/user_replies/1", "non-empty string"),
        ({"expected": {"answr": "x"}}, "/expected/answr", "unknown key"),
    ],
)
def test_a_bad_field_is_an_error_at_its_pointer(
    change: dict[str, Any], pointer: str, words: str
) -> None:
    raw = copy.deepcopy(BY_ID["react-refund-001"])
    raw.update(change)
    exc = _error(raw)
    assert exc.pointer == pointer
    assert words in exc.message


def test_the_inline_policy_is_parsed_by_the_policy_loader_at_policy() -> None:
    raw = copy.deepcopy(BY_ID["react-refund-001"])
    raw["policy"]["allowed_tools"]["refund"]["side_efect"] = True
    exc = _error(raw)
    assert exc.pointer == "/policy/allowed_tools/refund/side_efect"


def test_tool_and_response_errors_are_at_their_pointers() -> None:
    raw = copy.deepcopy(BY_ID["react-refund-001"])
    raw["tools"][0]["responses"][1] = {"output": 1, "error": "x"}
    assert _error(raw).pointer == "/tools/0/responses/1"
    raw = copy.deepcopy(BY_ID["react-refund-001"])
    raw["tools"][0]["parameters"] = {"type": "object", "oneOf": []}
    assert _error(raw).pointer.startswith("/tools/0/parameters")


def test_reference_refs_must_name_earlier_steps() -> None:
    raw = copy.deepcopy(BY_ID["react-refund-001"])
    raw["reference"]["steps"][1]["arguments"]["amount"]["$ref"] = "r"
    exc = _error(raw)
    assert exc.pointer == "/reference/steps/1/arguments/amount/$ref"
    raw = copy.deepcopy(BY_ID["react-refund-001"])
    raw["reference"]["steps"][0]["tool"] = "get_ordr"
    assert _error(raw).pointer == "/reference/steps/0/tool"
    raw = copy.deepcopy(BY_ID["react-refund-001"])
    raw["reference"]["answer"] = "{x:/id}"
    assert _error(raw).pointer == "/reference/answer"


def test_a_map_steps_own_ref_names_an_earlier_step_and_goes_with_map() -> None:
    raw = copy.deepcopy(BY_ID["mapreduce-stock-006"])
    raw["reference"]["steps"][1]["$ref"] = "c"  # the form of docs/golden-tasks.md: accepted
    assert Task.from_dict(raw).reference.steps[1].source == "c"
    raw["reference"]["steps"][1]["$ref"] = "s"  # itself: not an earlier step
    exc = _error(raw)
    assert exc.pointer == "/reference/steps/1/$ref"
    assert exc.message == "must name an earlier step, got 's'"
    raw = copy.deepcopy(BY_ID["mapreduce-stock-006"])
    raw["reference"]["steps"][0]["$ref"] = "c"  # a step that does not map
    assert _error(raw).message.startswith("a step's own $ref goes with map")


def test_a_task_file_reports_every_bad_line_and_keeps_the_others() -> None:
    lines = [json.dumps(RAW[0]), "{not json", json.dumps({**RAW[1], "pattern": "x"}), ""]
    lines.append(json.dumps(RAW[0]))  # the same id again
    tasks, errors = parse_task_lines("\n".join(lines).encode(), "tasks.jsonl")
    assert [t.id for t in tasks] == [RAW[0]["id"]]
    assert [(e.source, e.line) for e in errors] == [
        ("tasks.jsonl", 2),
        ("tasks.jsonl", 3),
        ("tasks.jsonl", 5),
    ]
    assert errors[1].pointer == "/pattern"
    assert "used twice (first on line 1)" in errors[2].message


# -- the gateway, feature by feature -----------------------------------------------------


def test_a_transient_error_is_retried_with_a_simulated_backoff() -> None:
    gateway = _gateway(_task("react-refund-001"))
    assert gateway.call("get_order", {"order_id": "A1"}) == {"id": "A1", "total": 42.5}
    calls = [s for s in gateway.trace().steps if s.type == "tool_call"]
    assert [(s.status, s.error) for s in calls] == [
        ("error", "order service timed out"),
        ("ok", None),
    ]
    # the fixture's 120 ms, then 120 + the first backoff of 200 ms
    assert [s.latency_ms for s in calls] == [120.0, 320.0]
    assert calls[1].metadata == {"attempt": 2, "backoff_ms": 200.0}


def test_without_retry_a_transient_error_reaches_the_agent() -> None:
    gateway = _gateway(_task("react-refund-001"), GatewayOptions(retry=False))
    with pytest.raises(ToolCallError, match="order service timed out"):
        gateway.call("get_order", {"order_id": "A1"})


def test_a_corrupt_result_is_retried_and_without_verification_returned() -> None:
    gateway = _gateway(_task("plan-weather-002"))
    assert gateway.call("forecast", {"city": "Oslo"}) == {"city": "Oslo", "temp_c": -3}
    first = gateway.trace().steps[1]
    assert first.status == "error"
    assert first.error is not None
    assert first.error.startswith("result failed verification")
    gateway = _gateway(_task("plan-weather-002"), GatewayOptions(verify=False))
    assert gateway.call("forecast", {"city": "Oslo"}) == {"city": "Oslo", "note": "partial"}


def test_bad_arguments_are_refused_and_recorded_as_a_failed_call() -> None:
    gateway = _gateway(_task("react-lookup-003"))
    with pytest.raises(ToolCallError, match="invalid arguments"):
        gateway.call("get_order", {"order_id": "b7"})
    step = gateway.trace().steps[-1]
    assert (step.tool_name, step.status) == ("get_order", "error")
    assert step.metadata == {"gateway": "refused_arguments"}
    # without validation the careless arguments reach the tool: its catch-all answer
    gateway = _gateway(_task("react-lookup-003"), GatewayOptions(validate_arguments=False))
    assert gateway.call("get_order", {"order_id": "b7"}) == {"id": "b7", "total": 0}


def test_a_call_with_no_fixture_fails_with_its_own_error() -> None:
    gateway = _gateway(_task("supervisor-trip-004"))
    with pytest.raises(ToolCallError, match="no fixture for these arguments"):
        gateway.call("search_flights", {"to": "Paris"})
    assert gateway.trace().steps[-1].metadata == {"fixture": "missing"}


def test_a_tool_the_policy_does_not_list_is_refused_without_a_step() -> None:
    gateway = _gateway(_task("react-inject-007"))
    with pytest.raises(ToolCallError, match="not permitted"):
        gateway.call("delete_account", {})
    with pytest.raises(ToolCallError, match="no tool named"):
        gateway.call("format_disk", {})
    trace = gateway.trace()
    assert [s.type for s in trace.steps] == ["user_message"]
    blocked = trace.metadata["blocked_calls"]
    assert [(b["tool_name"], b["reason"]) for b in blocked] == [
        ("delete_account", "not permitted"),
        ("format_disk", "unknown tool"),
    ]


def test_the_monitor_blocks_an_unconfirmed_side_effect() -> None:
    gateway = _gateway(_task("react-refund-001"))
    with pytest.raises(ToolCallError, match="ARH-CFM-001"):
        gateway.call("refund", {"order_id": "A1", "amount": 42.5})
    assert gateway.trace().metadata["blocked_calls"][0]["reason"] == "policy"
    # asked and confirmed, the same call goes through
    assert gateway.ask_user("Refund 42.5 for order A1?") == "yes"
    assert gateway.call("refund", {"order_id": "A1", "amount": 42.5})["status"] == "refunded"
    types = [s.type for s in gateway.trace().steps]
    assert types == ["user_message", "model_response", "user_message", "tool_call"]


def test_the_simulated_user_can_run_out_of_replies() -> None:
    gateway = _gateway(_task("react-refund-001"))
    gateway.ask_user("First?")
    with pytest.raises(ToolCallError, match="no reply left"):
        gateway.ask_user("Second?")


def test_tokens_are_recorded_on_the_next_step_and_count_against_the_cap() -> None:
    task = _task("supervisor-trip-004", caps={"max_tokens": 100})
    gateway = _gateway(task)
    gateway.usage(60, 20)
    gateway.say("thinking done")
    step = gateway.trace().steps[-1]
    assert (step.input_tokens, step.output_tokens) == (60, 20)
    gateway.usage(20, 1)  # 101 tokens in all
    with pytest.raises(CapExceeded) as caught:
        gateway.call("search_flights", {"to": "Rome"})
    assert caught.value.cap == "max_tokens"
    with pytest.raises(CapExceeded):  # and every later call
        gateway.say("again")


def test_the_step_cap_ends_the_trace() -> None:
    gateway = _gateway(_task("mapreduce-stock-006", caps={"max_steps": 2}))
    gateway.call("get_cart", {"cart": "C3"})
    with pytest.raises(CapExceeded, match="cap of 2 steps"):
        gateway.call("get_stock", {"sku": "K1"})
    assert len(gateway.trace().steps) == 2


def test_a_fixture_with_times_applies_only_that_often() -> None:
    gateway = _gateway(_task("plan-weather-002"), GatewayOptions(verify=False))
    assert gateway.call("forecast", {"city": "Oslo"})["city"] == "Oslo"  # the corrupt one
    assert gateway.call("forecast", {"city": "Oslo"}) == {"city": "Oslo", "temp_c": -3}


# -- running: reference agents, the broken agent, outcomes ------------------------------------

REFERENCE = "agent_reliability_harness.harness.agents:"


@pytest.mark.parametrize("name", [*agents.BY_PATTERN, "auto"])
def test_each_reference_agent_passes_every_hand_written_task(name: str) -> None:
    tasks, _ = load_task_file(str(TASKS))
    results = list(run_tasks(tasks, REFERENCE + name, workflow="mini"))
    assert [(r.task_id, r.outcome, r.detail) for r in results] == [
        (t.id, PASSED, None) for t in tasks
    ]


def test_the_patterns_record_their_own_messages() -> None:
    tasks = {t.id: t for t in load_task_file(str(TASKS))[0]}

    def messages(task_id: str) -> list[tuple[str | None, Any]]:
        result = next(run_tasks([tasks[task_id]], REFERENCE + "auto", workflow="mini"))
        steps = json.loads(result.trace_text)["steps"]
        return [(s.get("text"), s.get("metadata")) for s in steps if s["type"] == "model_response"]

    assert messages("plan-weather-002")[0] == ("Plan:\n1. forecast", None)
    assert messages("supervisor-trip-004")[:2] == [
        ("Delegating search_flights to flights.", {"agent": "supervisor"}),
        ("Delegating search_hotels to hotels.", {"agent": "supervisor"}),
    ]
    assert messages("swarm-support-005")[0] == (
        "Handing off to billing for get_invoice.",
        {"agent": "triage"},
    )
    assert messages("mapreduce-stock-006")[-1] == ("K1: 4 units; K2: 0 units.", None)


def test_the_broken_agent_fails_every_task_on_its_answer() -> None:
    # "All done." is not the expected answer once normalised (ARH-ANS-003) and names none of
    # the must_mention phrases (ARH-ANS-009); it names no must_not_mention one ("deleted")
    tasks, _ = load_task_file(str(TASKS))
    results = list(run_tasks(tasks, BROKEN, workflow="mini"))
    assert {r.outcome for r in results} == {AGENT_FAILURE}
    assert all(r.detail.startswith("findings: ARH-ANS-003, ARH-ANS-009") for r in results)
    # the detail also names what was blocked on the way: the unconfirmed refund (ARH-CFM-001),
    # whose arguments the policy does not declare (ARH-SCH-005, a warning, listed with it)
    assert results[0].detail.endswith("; blocked: ARH-CFM-001, ARH-SCH-005")
    refund = json.loads(results[0].trace_text)
    # it never asked: the refund with a guessed amount was blocked before it ran
    assert refund["metadata"]["blocked_calls"][0]["rule_ids"][0] == "ARH-CFM-001"


@pytest.mark.parametrize(
    ("ablation", "task_id", "answer"),
    [
        ("retry", "react-refund-001", "I could not complete the task: order service timed out"),
        ("verify", "plan-weather-002", "Tomorrow in Oslo: <missing> C."),
        ("validate_arguments", "react-lookup-003", "Order b7 totals 0."),
    ],
)
def test_each_ablation_breaks_the_task_that_needs_the_feature(
    ablation: str, task_id: str, answer: str
) -> None:
    options = GatewayOptions.ablated((ablation,))
    result = next(run_tasks([_task(task_id)], REFERENCE + "auto", workflow="m", options=options))
    assert result.outcome == AGENT_FAILURE
    assert json.loads(result.trace_text)["steps"][-1]["text"] == answer


def test_an_agent_that_raises_is_an_agent_failure_with_its_message() -> None:
    def crash(task: Any, tools: Any) -> object:
        raise KeyError("order")

    result = run_task(_task("react-refund-001"), crash, agent_id="x:y", workflow="m")
    assert (result.outcome, result.detail) == (AGENT_FAILURE, "KeyError: 'order'")


def test_a_task_over_its_wall_time_is_an_infrastructure_failure() -> None:
    ticks = iter(range(0, 1000, 20))  # every reading of the clock is 20 s later

    def clock() -> float:
        return float(next(ticks))

    result = run_task(
        _task("react-refund-001"), agents.react, agent_id="a:b", workflow="m", clock=clock
    )
    assert result.outcome == INFRASTRUCTURE_FAILURE
    assert result.detail == "timed out: ran over its wall-time cap of 30 s"


def test_an_agent_stuck_without_calls_is_stopped_at_its_wall_time_cap() -> None:
    def stuck(task: Any, tools: Any) -> object:
        tools.call("read_doc", {"doc": "D9"})
        for _ in range(10**9):  # bounded, so that a broken timer fails the test, not hangs it
            try:
                pass
            except Exception:  # noqa: BLE001, S112 - an agent that swallows errors
                continue
        return "never stopped"

    task = _task("react-inject-007", caps={"max_wall_seconds": 0.05})
    result = run_task(task, stuck, agent_id="a:b", workflow="m")
    assert result.outcome == INFRASTRUCTURE_FAILURE
    assert result.detail == "timed out: ran over its wall-time cap of 0.05 s"
    assert json.loads(result.trace_text)["steps"][1]["tool_name"] == "read_doc"


def test_the_seed_reaches_the_agent_and_the_trace() -> None:
    seen: list[tuple[int, int]] = []

    def agent(task: Any, tools: Any) -> object:
        seen.append((task.seed, task.repeat))
        return "ok"

    result = run_task(_task("react-inject-007"), agent, agent_id="a:b", workflow="m", seed=7)
    assert seen == [(7, 1)]
    assert json.loads(result.trace_text)["metadata"]["seed"] == 7


def test_the_trace_carries_the_expected_outcome_and_never_shows_it_to_the_agent(
    tmp_path: Path,
) -> None:
    views: list[Any] = []

    def agent(task: Any, tools: Any) -> object:
        views.append(task)
        return "Refunded 42.5 for order A1."

    result = run_task(_task("react-refund-001"), agent, agent_id="a:b", workflow="m")
    trace = json.loads(result.trace_text)
    assert trace["schema_version"] == "1.2"
    assert trace["expected"]["answer"] == "Refunded 42.5 for order A1."
    assert not hasattr(views[0], "expected")
