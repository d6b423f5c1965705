"""Fidelity for every adapter: each of the eight formats writes ``metadata.adapter.missing`` (the
canonical fields its source provided for none of the steps they apply to), lists a field only
when the source really lacks it, and the reports then mark the checks that need it as not
applicable. Canonical traces (format ``arh``) are not converted and get no such list.

Every record below is written by hand from the formats' documentation (the shapes of
docs/adapters.md and tests/fixtures/adapters/*/README.md). Each tells the same story (a user asks
where order 7 is, the agent calls ``lookup_order`` with the id ``call_1``, the tool answers
"shipped", the agent answers). The expected ``missing`` lists are derived by hand from what each
record holds, against the table in TRACE-SPEC.md ("Fidelity of converted traces"), whose order
they follow: latency_ms, cost_usd, tokens, tool_output, tool_status, tool_call_id.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_reliability_harness import Policy, Trace, validate_trace
from agent_reliability_harness._formats import FORMAT_NAMES
from agent_reliability_harness.adapters import RecordOptions, span_traces, to_traces
from agent_reliability_harness.model.fidelity import MISSING_FIELDS
from agent_reliability_harness.model.report import RunReport
from agent_reliability_harness.render.console import render_console
from agent_reliability_harness.render.markdown import render_markdown

from conftest import ROOT, Run, load_json
from conftest import adapter_missing as missing

QUESTION = "Where is order 7?"
ARGUMENTS = {"order_id": "7"}
ANSWER = "Order 7 has shipped."
TRANSCRIPTS = ("openai-chat", "anthropic-messages", "cohere-chat")  # the formats of arh 0.2.x

# -- the conversation in each format, without latency, cost or token counts ----------------------


def _openai_chat(*, usage: bool = False, error_member: bool = False) -> dict[str, Any]:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "lookup_order", "arguments": json.dumps(ARGUMENTS)},
    }
    asking: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
    result: dict[str, Any] = {"role": "tool", "tool_call_id": "call_1", "content": "shipped"}
    answer: dict[str, Any] = {"role": "assistant", "content": ANSWER}
    if usage:
        asking["usage"] = {"prompt_tokens": 50, "completion_tokens": 9}
        answer["usage"] = {"prompt_tokens": 70, "completion_tokens": 6}
    if error_member:  # AgentDojo writes `error` on every tool message, null when it worked
        result["error"] = None
    return {
        "messages": [{"role": "user", "content": QUESTION}, asking, result, answer],
    }


def _anthropic(*, usage: bool = False) -> dict[str, Any]:
    asking: dict[str, Any] = {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "call_1", "name": "lookup_order", "input": ARGUMENTS}
        ],
    }
    answer: dict[str, Any] = {"role": "assistant", "content": [{"type": "text", "text": ANSWER}]}
    if usage:
        asking["usage"] = {"input_tokens": 50, "output_tokens": 9}
    return {
        "messages": [
            {"role": "user", "content": QUESTION},
            asking,
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "shipped"}],
            },
            answer,
        ]
    }


def _cohere(*, usage: bool = False) -> dict[str, Any]:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "lookup_order", "arguments": json.dumps(ARGUMENTS)},
    }
    asking: dict[str, Any] = {
        "role": "assistant",
        "tool_plan": "I will look the order up.",
        "tool_calls": [call],
    }
    if usage:
        asking["usage"] = {"tokens": {"input_tokens": 50, "output_tokens": 9}}
    document = {"id": "0", "data": {"status": "shipped"}}
    return {
        "messages": [
            {"role": "user", "content": QUESTION},
            asking,
            {
                "role": "tool",
                "tool_call_id": "call_1",
                "content": [{"type": "document", "document": document}],
            },
            {"role": "assistant", "content": [{"type": "text", "text": ANSWER}]},
        ]
    }


def _responses(*, usage: bool = False) -> dict[str, Any]:
    record: dict[str, Any] = {
        "object": "response",
        "input": [
            {"type": "message", "role": "user", "content": QUESTION},
            {
                "type": "function_call",
                "call_id": "call_1",
                "name": "lookup_order",
                "arguments": json.dumps(ARGUMENTS),
            },
            {"type": "function_call_output", "call_id": "call_1", "output": "shipped"},
        ],
        "output": [
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": ANSWER, "annotations": []}],
            }
        ],
    }
    if usage:
        record["usage"] = {"input_tokens": 70, "output_tokens": 6}
    return record


def _gemini(*, usage: bool = False) -> dict[str, Any]:
    record: dict[str, Any] = {
        "contents": [
            {"role": "user", "parts": [{"text": QUESTION}]},
            {
                "role": "model",
                "parts": [
                    {"functionCall": {"id": "call_1", "name": "lookup_order", "args": ARGUMENTS}}
                ],
            },
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "id": "call_1",
                            "name": "lookup_order",
                            "response": {"output": "shipped"},
                        }
                    }
                ],
            },
        ],
        "candidates": [{"content": {"role": "model", "parts": [{"text": ANSWER}]}}],
    }
    if usage:
        record["usageMetadata"] = {"promptTokenCount": 70, "candidatesTokenCount": 6}
    return record


def _bedrock(*, usage: bool = False, latency: bool = False) -> dict[str, Any]:
    record: dict[str, Any] = {
        "modelId": "anthropic.claude-3-haiku-20240307-v1:0",
        "messages": [
            {"role": "user", "content": [{"text": QUESTION}]},
            {
                "role": "assistant",
                "content": [
                    {"toolUse": {"toolUseId": "call_1", "name": "lookup_order", "input": ARGUMENTS}}
                ],
            },
            {
                "role": "user",
                "content": [
                    {"toolResult": {"toolUseId": "call_1", "content": [{"text": "shipped"}]}}
                ],
            },
        ],
        "output": {"message": {"role": "assistant", "content": [{"text": ANSWER}]}},
    }
    if usage:
        record["usage"] = {"inputTokens": 70, "outputTokens": 6}
    if latency:
        record["metrics"] = {"latencyMs": 420}
    return record


def _kv(key: str, value: Any) -> dict[str, Any]:
    if type(value) is int:
        return {"key": key, "value": {"intValue": str(value)}}
    if type(value) is float:
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": value}}


def _span(span_id: str, name: str, start_ms: int, attributes: dict[str, Any], timed: bool) -> Any:
    span: dict[str, Any] = {
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "spanId": span_id,
        "name": name,
        "attributes": [_kv(k, v) for k, v in attributes.items()],
    }
    if timed:  # a span's duration is its step's latency
        base = 1_700_000_000_000_000_000
        span["startTimeUnixNano"] = str(base + start_ms * 1_000_000)
        span["endTimeUnixNano"] = str(base + (start_ms + 100) * 1_000_000)
    # without times, spans are ordered by span id (the ids below increase with time)
    return span


def _export(spans: list[Any]) -> dict[str, Any]:
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [_kv("service.name", "order-desk")]},
                "scopeSpans": [{"scope": {"name": "hand-written"}, "spans": spans}],
            }
        ]
    }


def _otel(*, usage: bool = False, timed: bool = False) -> dict[str, Any]:
    tool = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "lookup_order",
        "gen_ai.tool.call.id": "call_1",
        "gen_ai.tool.call.arguments": json.dumps(ARGUMENTS),
        "gen_ai.tool.call.result": "shipped",
    }
    chat: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": json.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": QUESTION}]}]
        ),
        "gen_ai.output.messages": json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": ANSWER}]}]
        ),
    }
    if usage:
        chat["gen_ai.usage.input_tokens"] = 70
        chat["gen_ai.usage.output_tokens"] = 6
    return _export(
        [
            _span("00000000000000a1", "execute_tool lookup_order", 0, tool, timed),
            _span("00000000000000a2", "chat gpt-4o", 200, chat, timed),
        ]
    )


def _openinference(*, usage: bool = False, timed: bool = False) -> dict[str, Any]:
    tool = {
        "openinference.span.kind": "TOOL",
        "tool.name": "lookup_order",
        "tool_call.id": "call_1",
        "input.value": json.dumps(ARGUMENTS),
        "output.value": "shipped",
    }
    llm: dict[str, Any] = {
        "openinference.span.kind": "LLM",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": QUESTION,
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": ANSWER,
    }
    if usage:
        llm["llm.token_count.prompt"] = 70
        llm["llm.token_count.completion"] = 6
        llm["llm.cost.total"] = 0.0004
    return _export(
        [
            _span("00000000000000b1", "lookup_order", 0, tool, timed),
            _span("00000000000000b2", "ChatCompletion", 200, llm, timed),
        ]
    )


# (format, record without latency, cost and tokens, the fields it lacks)
BARE: list[tuple[str, Any, list[str]]] = [
    # a chat tool message has no failure flag, so the source never says a call worked
    ("openai-chat", _openai_chat(), ["latency_ms", "cost_usd", "tokens", "tool_status"]),
    # is_error is absent, which the Messages API defines as "the call succeeded"
    ("anthropic-messages", _anthropic(), ["latency_ms", "cost_usd", "tokens"]),
    ("cohere-chat", _cohere(), ["latency_ms", "cost_usd", "tokens", "tool_status"]),
    # a function_call_output has no failure flag either
    ("openai-responses", _responses(), ["latency_ms", "cost_usd", "tokens", "tool_status"]),
    # a functionResponse without an "error" key is a success
    ("gemini", _gemini(), ["latency_ms", "cost_usd", "tokens"]),
    # a toolResult without status is a success
    ("bedrock-converse", _bedrock(), ["latency_ms", "cost_usd", "tokens"]),
    # spans without start and end times have no duration; an unset span status is not an error
    ("otel-genai", _otel(), ["latency_ms", "cost_usd", "tokens"]),
    ("openinference", _openinference(), ["latency_ms", "cost_usd", "tokens"]),
]

# (format, the same record with what the format can add, the fields it still lacks)
RICH: list[tuple[str, Any, list[str]]] = [
    ("openai-chat", _openai_chat(usage=True, error_member=True), ["latency_ms", "cost_usd"]),
    ("anthropic-messages", _anthropic(usage=True), ["latency_ms", "cost_usd"]),
    ("cohere-chat", _cohere(usage=True), ["latency_ms", "cost_usd", "tool_status"]),
    ("openai-responses", _responses(usage=True), ["latency_ms", "cost_usd", "tool_status"]),
    ("gemini", _gemini(usage=True), ["latency_ms", "cost_usd"]),
    ("bedrock-converse", _bedrock(usage=True, latency=True), ["cost_usd"]),
    ("otel-genai", _otel(usage=True, timed=True), ["cost_usd"]),  # no cost attribute exists
    ("openinference", _openinference(usage=True, timed=True), []),
]


def convert(fmt: str, record: Any) -> Trace:
    """The one trace ``record`` gives with ``--format fmt``."""
    if "resourceSpans" in record:
        results = [r for _, r in span_traces([(1, record)], fmt)]
    else:
        results = [r for _, r in to_traces(record, fmt, RecordOptions(default_id="t"))]
    assert len(results) == 1, results
    (trace,) = results
    assert isinstance(trace, Trace), trace
    return trace


def test_the_cases_cover_every_adapter() -> None:
    converted = set(FORMAT_NAMES) - {"arh"}
    assert len(converted) == 8
    assert [fmt for fmt, _, _ in BARE] == [fmt for fmt, _, _ in RICH]
    assert {fmt for fmt, _, _ in BARE} == converted


@pytest.mark.parametrize(("fmt", "record", "expected"), BARE, ids=[c[0] for c in BARE])
def test_every_adapter_lists_what_its_source_lacks(
    fmt: str, record: Any, expected: list[str]
) -> None:
    trace = convert(fmt, record)
    assert trace.source == fmt
    # the story came through: the call, its output, the answer
    (call,) = [s for s in trace.steps if s.type == "tool_call"]
    assert (call.step_id, call.tool_name, call.arguments) == ("call_1", "lookup_order", ARGUMENTS)
    assert call.output is not None
    assert trace.steps[-1].text == ANSWER
    assert all(s.latency_ms is None and s.cost_usd is None for s in trace.steps)
    assert all(s.input_tokens is None and s.output_tokens is None for s in trace.steps)
    assert missing(trace) == expected
    # auto-detection reads it the same way
    assert convert("auto", record) == trace


@pytest.mark.parametrize(("fmt", "record", "expected"), RICH, ids=[c[0] for c in RICH])
def test_a_field_the_source_gives_is_not_listed(fmt: str, record: Any, expected: list[str]) -> None:
    trace = convert(fmt, record)
    assert missing(trace) == expected
    agent = [s for s in trace.steps if s.type != "user_message"]
    # cross-check against the steps themselves: listed exactly when no agent step has it
    has = {
        "latency_ms": any(s.latency_ms is not None for s in agent),
        "cost_usd": any(s.cost_usd is not None for s in agent),
        "tokens": any(s.input_tokens is not None or s.output_tokens is not None for s in agent),
    }
    assert [f for f in ("latency_ms", "cost_usd", "tokens") if not has[f]] == [
        f for f in missing(trace) if f in has
    ]
    bare = convert(fmt, next(r for f, r, _ in BARE if f == fmt))
    assert set(missing(trace)) < set(missing(bare))  # each rich record adds at least one field


def test_missing_names_are_known_and_in_order() -> None:
    for fmt, record, _ in [*BARE, *RICH]:
        found = missing(convert(fmt, record))
        assert found == [f for f in MISSING_FIELDS if f in found], fmt


# -- the decisions of the three transcript formats of 0.2.x ---------------------------------------


def test_openai_chat_status_is_stated_only_by_an_error_member() -> None:
    def status_missing(result_extra: dict[str, Any]) -> bool:
        record = _openai_chat()
        record["messages"][2].update(result_extra)
        return "tool_status" in missing(convert("openai-chat", record))

    assert status_missing({})  # a plain tool message
    assert not status_missing({"error": None})  # AgentDojo: the call worked
    assert not status_missing({"error": ""})
    assert not status_missing({"error": "ValueError: no such order"})  # and it failed
    assert status_missing({"error": 5})  # unreadable (noted as invalid_field): says nothing


def test_openai_chat_without_ids_and_results() -> None:
    record = _openai_chat()
    del record["messages"][1]["tool_calls"][0]["id"]
    del record["messages"][2]["tool_call_id"]
    trace = convert("openai-chat", record)
    # the result is still paired (by position), but no call has an id of its own
    assert trace.steps[1].output == "shipped"
    assert missing(trace) == ["latency_ms", "cost_usd", "tokens", "tool_status", "tool_call_id"]
    # a run cut off after the call: no call got a result
    record = _openai_chat()
    del record["messages"][2:]
    assert missing(convert("openai-chat", record)) == [
        "latency_ms",
        "cost_usd",
        "tokens",
        "tool_output",
        "tool_status",
    ]


def test_legacy_function_results_say_nothing_of_failure_or_ids() -> None:
    record = [
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": None, "function_call": {"name": "lookup_order"}},
        {"role": "function", "name": "lookup_order", "content": "shipped"},
        {"role": "assistant", "content": ANSWER},
    ]
    assert missing(convert("openai-chat", record)) == [
        "latency_ms",
        "cost_usd",
        "tokens",
        "tool_status",
        "tool_call_id",
    ]


def test_anthropic_failures_are_stated_unless_the_flag_is_unreadable() -> None:
    record = _anthropic()
    record["messages"][2]["content"][0]["is_error"] = True
    trace = convert("anthropic-messages", record)
    assert trace.steps[1].status == "error"
    assert "tool_status" not in missing(trace)
    record["messages"][2]["content"][0]["is_error"] = "yes"
    trace = convert("anthropic-messages", record)
    assert trace.steps[1].status == "ok"  # ignored, with an invalid_field note
    assert "tool_status" in missing(trace)


def test_text_only_transcripts_lack_nothing_about_tools() -> None:
    for fmt in TRANSCRIPTS:
        trace = convert(
            fmt, [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
        )
        assert missing(trace) == ["latency_ms", "cost_usd", "tokens"], fmt


def test_canonical_traces_are_not_converted() -> None:
    canonical = load_json(
        ROOT / "docs" / "examples" / "adapters" / "exported" / "canonical_refund.json"
    )
    for fmt in ("arh", "auto"):
        (result,) = [r for _, r in to_traces(canonical, fmt, RecordOptions(default_id="t"))]
        assert isinstance(result, Trace)
        assert result == Trace.from_dict(canonical)
        assert "adapter" not in result.metadata


# -- what the reports make of it ------------------------------------------------------------------

POLICY = {
    "policy_id": "fidelity",
    "allow_unlisted_tools": True,
    "budgets": {"max_total_latency_ms": 20000, "max_total_cost_usd": 1, "max_total_tokens": 5000},
    "error_handling": {"require_retry_on_error": True},
    "unsafe_patterns": ["rm -rf"],
}


def test_a_duplicate_side_effect_says_when_failures_are_not_recorded() -> None:
    # tau-bench results say "Error: ..." in text, which arh does not read as a failure; a repeat
    # of such a call is still a duplicate (0.2.x verdicts), and the message says why it counts
    call = {"type": "function", "function": {"name": "book", "arguments": '{"seat": "4A"}'}}
    messages = [
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", **call}]},
        {"role": "tool", "tool_call_id": "c1", "content": "Error: payment does not add up"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c2", **call}]},
        {"role": "tool", "tool_call_id": "c2", "content": "booked"},
        {"role": "assistant", "content": "Booked."},
    ]
    book = {"optional_arguments": {"seat": "str"}, "side_effect": True}
    policy = Policy.from_dict({"policy_id": "p", "allowed_tools": {"book": book}})
    converted = convert("openai-chat", messages)
    assert "tool_status" in missing(converted)
    (finding,) = validate_trace(converted, policy).findings
    assert (finding.rule_id, finding.step_id) == ("ARH-FLW-003", "c2")
    assert finding.message == (
        "duplicate side effect: tool 'book' was called again with identical arguments after step "
        "'c1' succeeded (its source records no failures, so every call counts as a success)"
    )
    # the same steps in a trace that records statuses: the plain message
    document = converted.to_dict()
    del document["metadata"]["adapter"]["missing"]
    (plain,) = validate_trace(Trace.from_dict(document), policy).findings
    assert plain.message.endswith("after step 'c1' succeeded")
    assert (plain.severity, plain.rule_id, plain.step_id) == ("error", "ARH-FLW-003", "c2")


def test_reports_of_the_transcript_formats_list_checks_not_applicable() -> None:
    policy = Policy.from_dict(POLICY)
    traces = [convert(fmt, record) for fmt, record, _ in BARE if fmt in TRANSCRIPTS]
    reports = tuple(validate_trace(trace, policy) for trace in traces)
    # openai-chat and cohere-chat lack latency, cost, tokens and failure status; Anthropic's
    # is_error covers failures, so the retry rule applies there. Outputs are present everywhere,
    # so the scan of tool outputs (unsafe_patterns) applies to all three.
    assert [[c.rule_id for c in r.not_applicable] for r in reports] == [
        ["ARH-BUD-002", "ARH-BUD-003", "ARH-BUD-004", "ARH-FLW-001"],
        ["ARH-BUD-002", "ARH-BUD-003", "ARH-BUD-004"],
        ["ARH-BUD-002", "ARH-BUD-003", "ARH-BUD-004", "ARH-FLW-001"],
    ]
    # not applicable checks change no verdict or score: the same steps without the list
    for report, trace in zip(reports, traces, strict=True):
        document = trace.to_dict()
        del document["metadata"]["adapter"]["missing"]
        plain = validate_trace(Trace.from_dict(document), policy)
        assert plain.not_applicable == ()
        assert (plain.passed, plain.score, plain.findings) == (
            report.passed,
            report.score,
            report.findings,
        )
    run = RunReport(reports, policy_id="fidelity")
    console = render_console(run)
    assert console.count("n/a     ARH-FLW-001") == 2
    assert console.count("n/a     ARH-BUD-004") == 3
    rows = [line for line in render_markdown(run).splitlines() if line.startswith("| `ARH-")]
    assert rows == [
        "| `ARH-BUD-002` | `budgets.max_total_latency_ms` | `latency_ms` | 3: `t`, `t`, `t` |",
        "| `ARH-BUD-003` | `budgets.max_total_cost_usd` | `cost_usd` | 3: `t`, `t`, `t` |",
        "| `ARH-BUD-004` | `budgets.max_total_tokens` | `tokens` | 3: `t`, `t`, `t` |",
        "| `ARH-FLW-001` | `error_handling.require_retry_on_error` | `tool_status` | 2: `t`, `t` |",
    ]


def test_validate_an_openai_chat_transcript(tmp_path: Path, arh: Callable[..., Run]) -> None:
    transcript = tmp_path / "chat.json"
    transcript.write_text(json.dumps(_openai_chat(usage=True)), encoding="utf-8")
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps(POLICY), encoding="utf-8")
    run = arh(
        "validate",
        "--show-passing",
        "--policy",
        policy,
        transcript,
        "--json-out",
        tmp_path / "r.json",
    )
    assert run.status == 0, run.err
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    # usage is given (so the token budget applies); latency, cost and failures are not
    assert report["reports"][0]["not_applicable"] == [
        {"rule_id": "ARH-BUD-002", "check": "budgets.max_total_latency_ms", "field": "latency_ms"},
        {"rule_id": "ARH-BUD-003", "check": "budgets.max_total_cost_usd", "field": "cost_usd"},
        {
            "rule_id": "ARH-FLW-001",
            "check": "error_handling.require_retry_on_error",
            "field": "tool_status",
        },
    ]
    assert "n/a     ARH-BUD-004" not in run.out
    assert "n/a     ARH-FLW-001  error_handling.require_retry_on_error" in run.out
