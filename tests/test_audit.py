"""docs/audit.md: no chain-of-thought is stored. The adapters keep only the number of reasoning
blocks (Anthropic ``thinking`` and ``redacted_thinking``, OpenAI Responses ``reasoning`` items),
never their content, and the recorder has no parameter that takes reasoning."""

from __future__ import annotations

import inspect
import json
from typing import Any

from agent_reliability_harness.adapters import RecordOptions, to_traces
from agent_reliability_harness.model.trace import Trace
from agent_reliability_harness.record import Recorder

MARKER = "chain-of-thought-marker-7f3a"


def _trace(document: Any, fmt: str) -> dict[str, Any]:
    results = [r for _, r in to_traces(document, fmt, RecordOptions(default_id="t"))]
    assert len(results) == 1, results
    assert isinstance(results[0], Trace), results
    data: dict[str, Any] = results[0].to_dict()
    return data


def test_anthropic_thinking_is_counted_not_kept() -> None:
    document = {
        "messages": [
            {"role": "user", "content": "Refund order A1."},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": MARKER, "signature": "sig"},
                    {"type": "redacted_thinking", "data": MARKER},
                    {"type": "text", "text": "Done."},
                ],
            },
        ]
    }
    trace = _trace(document, "anthropic-messages")
    text = json.dumps(trace)
    assert MARKER not in text
    assert "sig" not in text  # nor the signature of the thinking block
    assert [s["text"] for s in trace["steps"] if s.get("text")] == ["Refund order A1.", "Done."]
    assert "reasoning (thinking) content is not stored" in text  # what the fidelity note says


def test_openai_reasoning_items_are_counted_not_kept() -> None:
    document = {
        "input": [{"role": "user", "content": "Refund order A1."}],
        "output": [
            {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [{"type": "summary_text", "text": MARKER}],
            },
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Done."}],
            },
        ],
    }
    trace = _trace(document, "openai-responses")
    text = json.dumps(trace)
    assert MARKER not in text
    assert "Done." in text
    assert "reasoning (thinking) content is not stored" in text


def test_the_recorder_has_no_reasoning_channel() -> None:
    for method in (Recorder.model_response, Recorder.tool_call, Recorder.user_message):
        names = set(inspect.signature(method).parameters)
        assert not {n for n in names if "reason" in n or "think" in n}, (method, names)
