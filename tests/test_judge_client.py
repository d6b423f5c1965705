"""The model judge's HTTP client against a fake OpenAI-compatible server on 127.0.0.1: success,
malformed replies, timeouts, 429 with Retry-After, 5xx; never the network."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_reliability_harness.errors import UsageError
from agent_reliability_harness.judge.client import (
    SYSTEM_PROMPT,
    ChatJudge,
    ClientSettings,
    JudgeCallError,
)
from agent_reliability_harness.judge.model import JudgeInput, input_hash, parse_rubric
from judge_server import Reply, completion, fake_api, verdict

RUBRIC = parse_rubric(
    (Path(__file__).parent / "fixtures" / "judge" / "rubric_model.json").read_text("utf-8"),
    "rubric_model.json",
)
SEEN = JudgeInput("Rebook my cancelled flight", "You are now on UA1432 at 08:05 tomorrow.")
DIGEST = input_hash(SEEN)


def judge_at(url: str, waits: list[float], **settings: object) -> ChatJudge:
    options: dict[str, object] = {"timeout": 5.0, "retries": 2, "backoff": 0.5, **settings}
    return ChatJudge(
        ClientSettings(url, "fake-judge-1", "sk-test", **options),  # type: ignore[arg-type]
        sleep=waits.append,
    )


def test_a_reply_becomes_a_judgment_with_the_verdict_worked_out_from_the_scores() -> None:
    waits: list[float] = []
    with fake_api(verdict({"resolves": 1, "accurate": 1}, 0.8, "Rebooked; facts match.")) as api:
        judgment = judge_at(api.url, waits).judge(RUBRIC, SEEN, DIGEST, "t1")
    # (2 x 1/2 + 1 x 1/1) / 3 = 0.667 >= 0.6: pass, whatever a model might have called it
    assert judgment.verdict == "pass"
    assert judgment.scores == (("resolves", 1.0), ("accurate", 1.0))
    assert (judgment.confidence, judgment.rationale) == (0.8, "Rebooked; facts match.")
    assert judgment.key == ("helpful-answer", "2", "fake-judge-1", DIGEST)
    assert waits == []
    [request] = api.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == "Bearer sk-test"
    body = request["body"]
    assert body["model"] == "fake-judge-1"
    assert body["temperature"] == 0
    assert body["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert "Rebook my cancelled flight" in body["messages"][1]["content"]
    assert "- resolves (0 to 2): The answer resolves" in body["messages"][1]["content"]
    schema = body["response_format"]["json_schema"]["schema"]
    assert body["response_format"]["type"] == "json_schema"
    assert schema["required"] == ["scores", "confidence", "rationale"]
    assert schema["properties"]["scores"]["properties"]["resolves"]["maximum"] == 2


def test_no_chain_of_thought_is_asked_for_or_kept() -> None:
    assert "Do not write out step-by-step reasoning" in SYSTEM_PROMPT
    long = "x" * 900
    with fake_api(verdict({"resolves": 0, "accurate": 0}, 0.5, long)) as api:
        judgment = judge_at(api.url, []).judge(RUBRIC, SEEN, DIGEST)
    assert judgment.verdict == "fail"
    assert len(judgment.rationale) == 500
    assert judgment.rationale.endswith("...")


def test_json_object_response_format() -> None:
    with fake_api(verdict({"resolves": 2, "accurate": 1})) as api:
        judge_at(api.url, [], response_format="json_object").judge(RUBRIC, SEEN, DIGEST)
    assert api.requests[0]["body"]["response_format"] == {"type": "json_object"}


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("Sure! The answer is good.", "the model's reply is not JSON"),
        ('{"scores": {"resolves": 2}, "confidence": 0.9', "the model's reply is not JSON"),
        ("[1, 2]", "is not a JSON object"),
        ('{"confidence": 0.9, "rationale": ""}', "no 'scores' object"),
        (
            '{"scores": {"resolves": 3, "accurate": 1}, "confidence": 0.9}',
            "score of criterion 'resolves' is 3, not a number from 0 to 2",
        ),
        (
            '{"scores": {"resolves": true, "accurate": 1}, "confidence": 0.9}',
            "score of criterion 'resolves' is True",
        ),
        (
            '{"scores": {"resolves": 2}, "confidence": 0.9}',
            "score of criterion 'accurate' is None",
        ),
        (
            '{"scores": {"resolves": 2, "accurate": 1}, "confidence": 1.5}',
            "confidence is 1.5, not a number from 0 to 1",
        ),
    ],
)
def test_a_malformed_reply_is_a_judgment_error_not_a_crash(content: str, problem: str) -> None:
    waits: list[float] = []
    with fake_api(completion(content)) as api, pytest.raises(JudgeCallError) as caught:
        judge_at(api.url, waits).judge(RUBRIC, SEEN, DIGEST)
    assert problem in str(caught.value)
    assert len(api.requests) == 1  # a malformed reply is not retried
    assert waits == []


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"<html>bad gateway</html>", "the response body is not JSON"),
        (b'{"choices": []}', "no choices[0].message"),
        (
            json.dumps({"choices": [{"message": {"refusal": "I can't grade this"}}]}).encode(),
            "the model refused",
        ),
    ],
)
def test_a_malformed_response_is_a_judgment_error(body: bytes, problem: str) -> None:
    with fake_api(Reply(200, body)) as api, pytest.raises(JudgeCallError) as caught:
        judge_at(api.url, []).judge(RUBRIC, SEEN, DIGEST)
    assert problem in str(caught.value)


def test_a_timeout_is_retried_with_exponential_backoff_then_an_error() -> None:
    waits: list[float] = []
    slow = [Reply(200, b"{}", delay=1.0) for _ in range(3)]
    with fake_api(*slow) as api, pytest.raises(JudgeCallError) as caught:
        judge_at(api.url, waits, timeout=0.2).judge(RUBRIC, SEEN, DIGEST)
    assert str(caught.value) == "no response within 0.2 s (after 3 attempts)"
    assert len(api.requests) == 3
    assert waits == [0.5, 1.0]  # backoff 0.5 s, doubled; none after the last attempt


def test_a_timeout_then_a_reply_succeeds() -> None:
    waits: list[float] = []
    with fake_api(Reply(200, b"{}", delay=1.0), verdict({"resolves": 2, "accurate": 1})) as api:
        judgment = judge_at(api.url, waits, timeout=0.2).judge(RUBRIC, SEEN, DIGEST)
    assert judgment.verdict == "pass"
    assert waits == [0.5]


def test_429_honours_retry_after() -> None:
    waits: list[float] = []
    limited = Reply(429, b'{"error": "rate limited"}', {"Retry-After": "7"})
    with fake_api(limited, verdict({"resolves": 2, "accurate": 1})) as api:
        judgment = judge_at(api.url, waits).judge(RUBRIC, SEEN, DIGEST)
    assert judgment.verdict == "pass"
    assert len(api.requests) == 2
    assert waits == [7.0]  # the server's wait, not the backoff of 0.5 s


@pytest.mark.parametrize(
    ("header", "wait"),
    [
        ({}, 0.5),
        ({"Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"}, 0.5),
        ({"Retry-After": "600"}, 60.0),
    ],
    ids=["no-header", "http-date", "capped"],
)
def test_429_without_usable_retry_after_backs_off(header: dict[str, str], wait: float) -> None:
    waits: list[float] = []
    with fake_api(Reply(429, b"{}", header), verdict({"resolves": 2, "accurate": 1})) as api:
        judge_at(api.url, waits).judge(RUBRIC, SEEN, DIGEST)
    assert waits == [wait]


def test_500_is_retried_then_an_error() -> None:
    waits: list[float] = []
    failing = [Reply(500, b'{"error": "boom"}') for _ in range(3)]
    with fake_api(*failing) as api, pytest.raises(JudgeCallError) as caught:
        judge_at(api.url, waits).judge(RUBRIC, SEEN, DIGEST)
    assert str(caught.value) == "HTTP 500 Internal Server Error (after 3 attempts)"
    assert len(api.requests) == 3
    assert waits == [0.5, 1.0]


def test_500_then_success() -> None:
    waits: list[float] = []
    with fake_api(Reply(503, b"{}"), verdict({"resolves": 0, "accurate": 1})) as api:
        judgment = judge_at(api.url, waits).judge(RUBRIC, SEEN, DIGEST)
    # (2 x 0 + 1 x 1) / 3 = 0.333 < 0.6
    assert judgment.verdict == "fail"
    assert len(api.requests) == 2


def test_a_client_error_is_not_retried() -> None:
    waits: list[float] = []
    with (
        fake_api(Reply(401, b'{"error": "bad key"}')) as api,
        pytest.raises(JudgeCallError) as caught,
    ):
        judge_at(api.url, waits).judge(RUBRIC, SEEN, DIGEST)
    assert str(caught.value) == "the judge's API answered HTTP 401 Unauthorized"
    assert len(api.requests) == 1
    assert waits == []


def test_a_closed_port_is_a_judgment_error() -> None:
    with fake_api() as api:
        url = api.url
    waits: list[float] = []
    with pytest.raises(JudgeCallError) as caught:
        judge_at(url, waits, retries=1).judge(RUBRIC, SEEN, DIGEST)
    assert "cannot reach" in str(caught.value)
    assert waits == [0.5]


def test_only_http_urls() -> None:
    with pytest.raises(UsageError, match="must start with http:// or https://"):
        judge_at("file:///etc/passwd", [])
