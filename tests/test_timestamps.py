"""Timestamps of traces (schema version 1.3): strict RFC 3339 parsing, kept as written, exact
conversions from unix time, and old versions keeping the keys as their own."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Final

import pytest

from agent_reliability_harness import validate_trace
from agent_reliability_harness.adapters import to_trace
from agent_reliability_harness.errors import InputError, UsageError
from agent_reliability_harness.model.policy import Policy
from agent_reliability_harness.model.report import RunReport, TraceReport
from agent_reliability_harness.model.timestamps import (
    from_datetime,
    from_unix_nanos,
    from_unix_seconds,
    instant,
    parse_timestamp,
)
from agent_reliability_harness.model.trace import Step, Trace, schema_version_for
from agent_reliability_harness.record import Recorder
from agent_reliability_harness.render.html import render_html

from conftest import Run


def trace(version: str | None = "1.3", steps: list[Any] | None = None, **keys: Any) -> Any:
    out: dict[str, Any] = {"trace_id": "t", "agent_name": "a", "workflow": "w"}
    if version is not None:
        out["schema_version"] = version
    out["steps"] = (
        [{"step_id": "s1", "type": "model_response", "text": "hi"}] if steps is None else steps
    )
    out.update(keys)
    return out


VALID = [
    "2026-01-31T09:30:00Z",
    "2026-01-31t09:30:00z",  # RFC 3339 allows lower case
    "2026-01-31T09:30:00.5Z",
    "2026-01-31T09:30:00.123456789123Z",  # more digits than nanoseconds: kept
    "2026-01-31T09:30:00+05:30",
    "2026-01-31T09:30:00-00:00",  # RFC 3339: UTC, local offset unknown
    "2024-02-29T23:59:59+23:59",  # a leap day
    "2000-02-29T00:00:00Z",  # divisible by 400: a leap year
    "0000-01-01T00:00:00Z",
    "9999-12-31T23:59:59.999Z",
]


@pytest.mark.parametrize("text", VALID)
def test_valid_timestamps_are_kept_as_written(text: str) -> None:
    assert parse_timestamp(text, "/x") == text
    step = Step.from_dict({"step_id": "s", "type": "tool_call", "timestamp": text})
    assert step.timestamp == text
    assert step.to_dict()["timestamp"] == text


INVALID = [
    ("2026-01-31T09:30:00", "has no time zone offset (add Z for UTC, or +hh:mm)"),
    ("2026-01-31 09:30:00Z", "must be an RFC 3339 date-time such as"),
    ("2026-01-31", "must be an RFC 3339 date-time such as"),
    ("2026-1-31T09:30:00Z", "must be an RFC 3339 date-time such as"),
    ("2026-01-31T09:30Z", "must be an RFC 3339 date-time such as"),
    ("2026-01-31T09:30:00.Z", "must be an RFC 3339 date-time such as"),
    ("2026-01-31T09:30:00+0530", "must be an RFC 3339 date-time such as"),
    ("2026-01-31T09:30:00Z ", "must be an RFC 3339 date-time such as"),
    (
        "\uff12\uff10\uff12\uff16-01-31T09:30:00Z",
        "must be an RFC 3339 date-time such as",
    ),  # not ASCII digits
    ("2026-00-31T09:30:00Z", "month 00 does not exist"),
    ("2026-13-01T09:30:00Z", "month 13 does not exist"),
    ("2026-02-29T09:30:00Z", "day 29 does not exist in February 2026"),
    ("1900-02-29T09:30:00Z", "day 29 does not exist in February 1900"),  # not a leap year
    ("2026-04-31T09:30:00Z", "day 31 does not exist in April 2026"),
    ("2026-01-00T09:30:00Z", "day 00 does not exist in January 2026"),
    ("2026-01-31T24:00:00Z", "hour 24 is out of range (00 to 23)"),
    ("2026-01-31T09:60:00Z", "minute 60 is out of range (00 to 59)"),
    ("2016-12-31T23:59:60Z", "second 60 (a leap second) is not accepted"),
    ("2026-01-31T09:30:61Z", "second 61 is out of range (00 to 59)"),
    ("2026-01-31T09:30:00+24:00", "time zone offset +24:00 is out of range"),
    ("2026-01-31T09:30:00-05:60", "time zone offset -05:60 is out of range"),
]


@pytest.mark.parametrize(("text", "problem"), INVALID)
def test_invalid_timestamp_is_an_input_error_at_its_pointer(text: str, problem: str) -> None:
    document = trace(steps=[{"step_id": "s1", "type": "tool_call", "timestamp": text}])
    with pytest.raises(InputError) as caught:
        Trace.from_dict(document)
    message = str(caught.value)
    assert message.startswith("/steps/0/timestamp: ")
    assert problem in message


@pytest.mark.parametrize(
    ("value", "kind"), [(1769851800, "number"), (True, "boolean"), ({}, "object"), ([], "array")]
)
def test_a_timestamp_that_is_not_a_string(value: object, kind: str) -> None:
    with pytest.raises(InputError) as caught:
        Trace.from_dict(trace(started_at=value))
    assert str(caught.value).startswith(
        f"/started_at: must be an RFC 3339 date-time string such as '2026-01-31T09:30:00Z', "
        f"got {kind}"
    )
    assert ("unix time" in str(caught.value)) == (kind == "number")


def test_trace_times_are_read_and_written_back() -> None:
    document = trace(started_at="2026-01-31T09:30:00Z", ended_at="2026-01-31T10:31:00+01:00")
    parsed = Trace.from_dict(document)
    assert parsed.started_at == "2026-01-31T09:30:00Z"
    assert parsed.ended_at == "2026-01-31T10:31:00+01:00"
    assert parsed.extra == {}
    assert parsed.to_dict() == document
    assert Trace.from_dict(parsed.to_dict()) == parsed


def test_null_times_are_none() -> None:
    parsed = Trace.from_dict(trace(started_at=None, ended_at=None))
    assert (parsed.started_at, parsed.ended_at) == (None, None)
    assert "started_at" not in parsed.to_dict()


def test_ended_before_started_is_an_error_across_offsets() -> None:
    # 10:29:59+01:00 is 09:29:59Z, one second before the start
    document = trace(started_at="2026-01-31T09:30:00Z", ended_at="2026-01-31T10:29:59+01:00")
    with pytest.raises(InputError) as caught:
        Trace.from_dict(document)
    assert str(caught.value) == (
        "/ended_at: '2026-01-31T10:29:59+01:00' is before started_at '2026-01-31T09:30:00Z'"
    )
    # the same instant written two ways is not "before"
    same = trace(started_at="2026-01-31T09:30:00.50Z", ended_at="2026-01-31T10:30:00.5+01:00")
    assert Trace.from_dict(same).ended_at == "2026-01-31T10:30:00.5+01:00"


@pytest.mark.parametrize("version", [None, "1", "1.0", "1.1", "1.2", "1.2.9", "1.x"])
def test_before_1_3_the_keys_are_the_traces_own(version: str | None) -> None:
    step = {"step_id": "s1", "type": "model_response", "text": "hi", "timestamp": "noon"}
    document = trace(version, steps=[step], started_at=5, ended_at="2026-01-31T09:30:00Z")
    parsed = Trace.from_dict(document)
    assert (parsed.started_at, parsed.ended_at) == (None, None)
    assert parsed.extra == {"started_at": 5, "ended_at": "2026-01-31T09:30:00Z"}
    assert parsed.steps[0].timestamp is None
    assert parsed.steps[0].extra == {"timestamp": "noon"}
    # written back as read: same keys, same order
    written = parsed.to_dict()
    assert json.dumps(written) == json.dumps({"schema_version": version or "1"} | document)


@pytest.mark.parametrize("version", ["1.3", "1.03", "1.4", "1.10", "1.3.1"])
def test_from_1_3_on_the_keys_are_read(version: str) -> None:
    with pytest.raises(InputError, match=r"^/started_at: "):
        Trace.from_dict(trace(version, started_at="noon"))


def test_schema_version_for() -> None:
    plain = Step.from_dict({"step_id": "s", "type": "tool_call"})
    user = Step.from_dict({"step_id": "u", "type": "user_message"})
    timed = Step.from_dict(
        {"step_id": "s", "type": "tool_call", "timestamp": "2026-01-31T09:30:00Z"}
    )
    assert schema_version_for([plain]) == "1"
    assert schema_version_for([plain, user]) == "1.1"
    assert schema_version_for([plain, user, timed]) == "1.3"
    assert schema_version_for([plain], timed=True) == "1.3"


# --- conversions from unix time ---------------------------------------------------------------


def test_unix_nanos_worked_out_by_hand() -> None:
    # 1733600000 s = 20064 days (20064 * 86400 = 1733529600) + 70400 s = 19:33:20; day 20064
    # after 1970-01-01 is 2024-12-07 (2024-01-01 is day 19723, plus 341 days of a leap year)
    assert from_unix_nanos(1_733_600_000_123_456_789) == "2024-12-07T19:33:20.123456789Z"
    assert from_unix_nanos(1_733_600_000_000_000_000) == "2024-12-07T19:33:20Z"
    assert from_unix_nanos(1_733_600_000_100_000_000) == "2024-12-07T19:33:20.1Z"
    assert from_unix_nanos(1_733_600_000_000_000_001) == "2024-12-07T19:33:20.000000001Z"
    assert from_unix_nanos(0) == "1970-01-01T00:00:00Z"
    assert from_unix_seconds(951_782_400) == "2000-02-29T00:00:00Z"


@pytest.mark.parametrize("seconds", [0, 1, 59, 86_399, 951_782_400, 1_733_600_000, 4_102_444_799])
def test_unix_seconds_agree_with_datetime(seconds: int) -> None:
    expected = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert from_unix_seconds(seconds) == expected
    micros = seconds * 1_000_000 + 250_000
    assert from_unix_nanos(micros * 1000) == expected[:-1] + ".25Z"


@pytest.mark.parametrize("nanos", [-1, 253_402_300_800 * 10**9])
def test_unix_time_outside_rfc_3339_years(nanos: int) -> None:
    with pytest.raises(ValueError, match="not between 1970 and 9999"):
        from_unix_nanos(nanos)


@pytest.mark.parametrize(
    "text", ["2026-01-31T09:30:00Z", "2026-01-31T09:30:00+05:30", "1999-12-31T23:00:00-02:00"]
)
def test_instant_agrees_with_datetime(text: str) -> None:
    seconds, fraction = instant(text)
    assert seconds == int(datetime.fromisoformat(text).timestamp())
    assert fraction == ""


def test_instant_orders_fractions() -> None:
    assert instant("2026-01-31T09:30:00.09Z") < instant("2026-01-31T09:30:00.1Z")
    assert instant("2026-01-31T09:30:00.1Z") < instant("2026-01-31T09:30:00.12Z")
    assert instant("2026-01-31T09:30:00.10Z") == instant("2026-01-31T09:30:00.1Z")
    assert instant("2026-01-31T09:30:00.999Z") < instant("2026-01-31T09:30:01Z")


# --- reports ----------------------------------------------------------------------------------

# the call of an unlisted tool fails every trace, so that the Markdown report has its section
POLICY: Final = {"policy_id": "p", "allow_unlisted_tools": False, "allowed_tools": {}}
TIMED_STEPS: Final = [
    {"step_id": "s1", "type": "tool_call", "tool_name": "search", "output": "ok",
     "timestamp": "2026-01-31T09:30:00.120Z"},
    {"step_id": "s2", "type": "model_response", "text": "Done.",
     "timestamp": "2026-01-31T10:30:03.9+01:00"},
]  # fmt: skip
UNTIMED_STEPS: Final = [{k: v for k, v in s.items() if k != "timestamp"} for s in TIMED_STEPS]


def _validate(arh: Callable[..., Run], tmp_path: Path, document: Any) -> dict[str, str]:
    """Console, JSON, Markdown and HTML reports of one trace."""
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps(POLICY), "utf-8")
    trace_file = tmp_path / "t.json"
    trace_file.write_text(json.dumps(document), "utf-8")
    outs = {kind: tmp_path / f"report.{kind}" for kind in ("json", "md", "html")}
    options = [arg for kind, path in outs.items() for arg in (f"--{kind}-out", path)]
    run = arh("validate", "--policy", policy, trace_file, "--show-passing", *options)
    assert run.status == 1, run.err
    return {"console": run.out} | {kind: path.read_text("utf-8") for kind, path in outs.items()}


def test_reports_show_the_times(arh: Callable[..., Run], tmp_path: Path) -> None:
    start, end = "2026-01-31T09:30:00Z", "2026-01-31T10:30:04.25+01:00"
    reports = _validate(arh, tmp_path, trace(steps=TIMED_STEPS, started_at=start, ended_at=end))
    report = json.loads(reports["json"])["reports"][0]
    assert (report["started_at"], report["ended_at"]) == (start, end)
    line = f"started {start} \u00b7 ended {end}"
    assert line in reports["console"]
    assert line in reports["md"]
    assert line in reports["html"]
    # the HTML timeline gives each step its time, as written
    for step in TIMED_STEPS:
        stamp = step["timestamp"]
        assert f'<time datetime="{stamp}">{stamp}</time>' in reports["html"]


def test_only_the_times_the_trace_has(arh: Callable[..., Run], tmp_path: Path) -> None:
    reports = _validate(
        arh, tmp_path, trace(steps=TIMED_STEPS[:1], ended_at="2026-01-31T09:31:00Z")
    )
    report = json.loads(reports["json"])["reports"][0]
    assert "started_at" not in report
    assert report["ended_at"] == "2026-01-31T09:31:00Z"
    assert "started " not in reports["console"]
    assert "ended 2026-01-31T09:31:00Z" in reports["console"]
    assert reports["html"].count("<time ") == 1


@pytest.mark.parametrize("version", ["1.3", "1.2"])
def test_no_time_in_the_input_none_in_the_output(
    arh: Callable[..., Run], tmp_path: Path, version: str
) -> None:
    plain = trace(
        version, steps=[{k: v for k, v in s.items() if k != "timestamp"} for s in TIMED_STEPS]
    )
    reports = _validate(arh, tmp_path, plain)
    assert "started_at" not in reports["json"]
    assert "ended_at" not in reports["json"]
    for kind in ("console", "md", "html"):
        assert "started " not in reports[kind]
        assert "ended " not in reports[kind]
    assert "<time" not in reports["html"]
    assert "2026" not in reports["console"] + reports["md"]


def test_a_1_2_trace_keeps_its_keys_and_its_report(arh: Callable[..., Run], tmp_path: Path) -> None:
    plain = trace(
        "1.2", steps=[{k: v for k, v in s.items() if k != "timestamp"} for s in TIMED_STEPS]
    )
    before = _validate(arh, tmp_path, plain)
    keyed = trace("1.2", steps=TIMED_STEPS, started_at="noon", ended_at=5)
    after = _validate(arh, tmp_path, keyed)
    # the keys are the trace's own: the JSON, Markdown and console reports are those of the
    # trace without them, and the HTML timeline lists a step's timestamp as one of its other fields
    for kind in ("json", "console", "md"):
        assert after[kind] == before[kind]
    assert "<time" not in after["html"]
    assert "other fields" in after["html"]
    assert "other fields" not in before["html"]


def test_report_read_back_keeps_the_times() -> None:
    start, end = "2026-01-31T09:30:00Z", "2026-01-31T09:30:01Z"
    report = TraceReport("t", "a", "w", "p", 100.0, True, 0.0, 0.0, None, (), None,
                         started_at=start, ended_at=end)  # fmt: skip
    assert TraceReport.from_dict(report.to_dict()) == report
    bad_time = report.to_dict() | {"ended_at": "2026-01-31"}
    with pytest.raises(InputError, match=r"^/reports/0/ended_at: must be an RFC 3339"):
        TraceReport.from_dict(bad_time, pointer="/reports/0")


# --- the recorder -----------------------------------------------------------------------------


class FixedClock:
    """A wall clock that moves on by 1.5 s at each reading, from 2026-01-31T09:30:00+01:00."""

    def __init__(self) -> None:
        self.readings = 0

    def __call__(self) -> datetime:
        start = datetime(2026, 1, 31, 9, 30, tzinfo=timezone(timedelta(hours=1)))
        self.readings += 1
        return start + timedelta(seconds=1.5 * (self.readings - 1))


def test_the_recorder_records_no_time_by_default(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    with Recorder("t", path=path, clock=None) as rec:
        rec.tool(len)([1, 2])
        rec.model_response("ok")
    text = path.read_text("utf-8")
    assert "timestamp" not in text
    assert "started_at" not in text
    assert "ended_at" not in text
    assert json.loads(text)["schema_version"] == "1"


def test_the_recorder_stamps_when_given_a_wall_clock(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    # readings: 1 the recorder is made, 2 the wrapped call starts, 3 the response is
    # recorded, 4 the block ends; each in UTC, one hour before the clock's +01:00 time
    with Recorder("t", path=path, clock=None, wall_clock=FixedClock()) as rec:
        rec.tool(len)([1, 2])
        rec.model_response("ok")
        rec.user_message("thanks", timestamp="2026-01-31T08:30:04+00:00")  # its own: no reading
    document = json.loads(path.read_text("utf-8"))
    assert document["schema_version"] == "1.3"
    assert document["started_at"] == "2026-01-31T08:30:00Z"
    assert [s.get("timestamp") for s in document["steps"]] == [
        "2026-01-31T08:30:01.5Z",
        "2026-01-31T08:30:03Z",
        "2026-01-31T08:30:04+00:00",
    ]
    assert document["ended_at"] == "2026-01-31T08:30:04.5Z"
    assert Trace.from_dict(document).ended_at == "2026-01-31T08:30:04.5Z"


def test_timestamps_true_uses_the_system_clock_in_utc() -> None:
    with Recorder("t", clock=None, timestamps=True) as rec:
        rec.model_response("ok")
    trace_ = rec.trace()
    assert trace_.started_at is not None
    assert trace_.started_at.endswith("Z")
    assert trace_.steps[0].timestamp is not None
    assert instant(trace_.started_at) <= instant(trace_.steps[0].timestamp)
    assert trace_.ended_at is not None
    assert instant(trace_.steps[0].timestamp) <= instant(trace_.ended_at)


@pytest.mark.parametrize(
    ("clock", "problem"),
    [
        (lambda: datetime(2026, 1, 31, 9, 30), "must return an aware datetime"),  # noqa: DTZ001
        (lambda: 1769851800.0, "must return a datetime, got"),
    ],
)
def test_a_bad_wall_clock_is_a_usage_error(clock: Callable[[], Any], problem: str) -> None:
    with pytest.raises(UsageError, match=problem):
        Recorder("t", wall_clock=clock)


def test_a_bad_step_timestamp_is_a_usage_error() -> None:
    rec = Recorder("t", clock=None)
    with pytest.raises(UsageError, match=r"/steps/0/timestamp: .* has no time zone offset"):
        rec.model_response("ok", timestamp="2026-01-31T09:30:00")


def test_from_datetime() -> None:
    moment = datetime(2026, 1, 31, 9, 30, 0, 120000, tzinfo=timezone(timedelta(hours=-5)))
    assert from_datetime(moment) == "2026-01-31T14:30:00.12Z"
    assert from_datetime(datetime(9, 1, 2, 3, 4, 5, 6, tzinfo=UTC)) == "0009-01-02T03:04:05.000006Z"
    with pytest.raises(ValueError, match="without a time zone"):
        from_datetime(datetime(2026, 1, 31))  # noqa: DTZ001


# --- adapters ---------------------------------------------------------------------------------


def _span(span_id: str, name: str, start: object, end: object, **attributes: Any) -> Any:
    span: dict[str, Any] = {"traceId": "abc", "spanId": span_id, "name": name}
    if start is not None:
        span["startTimeUnixNano"] = start
    if end is not None:
        span["endTimeUnixNano"] = end
    span["attributes"] = [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()]
    return span


def _export(*spans: Any) -> Any:
    return {"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}


TOOL: Final = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"}


def test_otel_span_times_worked_out_by_hand() -> None:
    # the tool span starts at 1733600000.123456789 s: 2024-12-07T19:33:20.123456789Z (see
    # test_unix_nanos_worked_out_by_hand), and lasts 250 ms; the agent span around it starts
    # 1 s earlier and ends at ...21.5 s
    export = _export(
        _span("a1", "invoke_agent", "1733599999123456789", "1733600001500000000",
              **{"gen_ai.operation.name": "invoke_agent"}),
        _span("t1", "execute_tool lookup", "1733600000123456789", "1733600000373456789", **TOOL),
    )  # fmt: skip
    converted = to_trace(export, "otel-genai")
    assert converted.schema_version == "1.3"
    assert converted.started_at == "2024-12-07T19:33:19.123456789Z"
    assert converted.ended_at == "2024-12-07T19:33:21.5Z"
    (step,) = converted.steps
    assert step.timestamp == "2024-12-07T19:33:20.123456789Z"
    assert step.latency_ms == 250


def test_otel_spans_without_times_give_none() -> None:
    # 0 is OTLP's "not set"; a span that ends before it starts gives no end
    for start, end in ((None, None), (0, 0), ("0", None), (None, "1733600000000000000")):
        converted = to_trace(_export(_span("t1", "execute_tool", start, end, **TOOL)), "otel-genai")
        assert (converted.started_at, converted.ended_at) == (None, None), (start, end)
        assert converted.steps[0].timestamp is None
        assert converted.schema_version == "1"
    backwards = _span("t1", "execute_tool", "1733600000000000000", "1733599999000000000", **TOOL)
    converted = to_trace(_export(backwards), "otel-genai")
    assert (converted.started_at, converted.ended_at) == ("2024-12-07T19:33:20Z", None)


RESPONSE: Final = {
    "object": "response",
    "input": [{"role": "user", "content": "Weather in Paris?"}],
    "output": [
        {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{}"},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "ok"}],
        },
    ],
}


def test_openai_response_created_at() -> None:
    # 1741476542 s = 20155 days (1741392000 s, 2025-03-08) + 84542 s (23:29:02)
    converted = to_trace(RESPONSE | {"created_at": 1741476542}, "openai-responses")
    user, call, response = converted.steps
    assert (user.timestamp, call.timestamp, response.timestamp) == (
        None,  # the input came before the response was created
        "2025-03-08T23:29:02Z",  # the first step of its output, which its usage goes on too
        None,
    )
    assert converted.started_at is None  # the run began before this model call
    assert converted.schema_version == "1.3"


@pytest.mark.parametrize("created", ["1741476542", 1741476542.5, True, -1])
def test_openai_response_created_at_unusable(created: object) -> None:
    converted = to_trace(RESPONSE | {"created_at": created}, "openai-responses")
    assert all(step.timestamp is None for step in converted.steps)
    notes = converted.metadata["adapter"]["notes"]
    assert [n["pointer"] for n in notes if n["code"] == "invalid_field"] == ["/created_at"]


def test_openai_response_without_output_stamps_nothing() -> None:
    converted = to_trace({"input": "hi", "created_at": 1741476542}, "openai-responses")
    assert converted.steps[0].timestamp is None
    assert converted.schema_version == "1.1"


def test_times_of_a_trace_built_in_code_are_checked_or_escaped() -> None:
    policy = Policy.from_dict(POLICY | {"allow_unlisted_tools": True})
    hostile = '"><script>alert(1)</script>'
    step = Step("s1", "model_response", text="ok", timestamp=hostile)
    built = Trace("t", "a", "w", (step,), "1.3", started_at="2026-01-31T09:30:00Z")
    report = validate_trace(built, policy)
    assert report.started_at == "2026-01-31T09:30:00Z"
    page = render_html(RunReport((report,)), {"t": built})
    assert "<script>alert" not in page
    assert "&quot;&gt;&lt;script&gt;" in page
    with pytest.raises(InputError, match=r"^/ended_at: .* has no time zone offset"):
        validate_trace(replace(built, ended_at="2026-01-31T09:30:00"), policy)
