"""The strict trace parser: ``Trace.from_dict`` / ``Step.from_dict`` and ``to_dict``.

Every rejected value must raise one InputError whose ``pointer`` is the RFC 6901 pointer of the bad
field (or of the object that lacks a required key) and whose message says what is wrong.
"""

from __future__ import annotations

import collections
import copy
import enum
import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_reliability_harness import InputError, Step, Trace

from conftest import REFERENCE, load_json, require_shared

INF = math.inf
NAN = math.nan


def tool_step(**fields: Any) -> dict[str, Any]:
    step: dict[str, Any] = {"step_id": "s1", "type": "tool_call", "tool_name": "lookup"}
    step.update(fields)
    return step


def trace_doc(*steps: dict[str, Any], **fields: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "schema_version": "1",
        "trace_id": "t-1",
        "agent_name": "agent",
        "workflow": "wf",
        "steps": list(steps) if steps else [tool_step()],
    }
    doc.update(fields)
    return doc


def without(doc: dict[str, Any], key: str) -> dict[str, Any]:
    out = dict(doc)
    del out[key]
    return out


def rejected(data: object) -> InputError:
    with pytest.raises(InputError) as info:
        Trace.from_dict(data)
    return info.value


def step_rejected(**fields: Any) -> InputError:
    """Parse a trace whose only step has ``fields`` (a value of ``...`` deletes the key)."""
    step = tool_step()
    for key, value in fields.items():
        if value is ...:
            step.pop(key, None)
        else:
            step[key] = value
    return rejected(trace_doc(step))


def parse_step(**fields: Any) -> Step:
    return Trace.from_dict(trace_doc(tool_step(**fields))).steps[0]


# --- the document and its identity fields --------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "kind"),
    [([], "array"), ("trace", "string"), (None, "null"), (5, "number"), (True, "boolean")],
)
def test_trace_must_be_an_object(data: object, kind: str) -> None:
    err = rejected(data)
    assert err.pointer == ""
    assert "must be a JSON object" in err.message
    assert kind in err.message


@pytest.mark.parametrize(
    ("value", "stored"),
    [
        (None, "1"),
        (1, "1"),
        ("1", "1"),
        ("1.0", "1.0"),
        (1.5, "1.5"),
        ("1.1", "1.1"),
    ],
)
def test_schema_version_accepted(value: object, stored: str) -> None:
    assert Trace.from_dict(trace_doc(schema_version=value)).schema_version == stored


def test_schema_version_missing_means_1() -> None:
    assert Trace.from_dict(without(trace_doc(), "schema_version")).schema_version == "1"


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("2.0", "unsupported schema_version '2.0'"),
        ("01", "unsupported schema_version '01'"),
        (2, "unsupported schema_version '2'"),
        ("", "unsupported schema_version ''"),
        ("v1", "unsupported schema_version 'v1'"),
        (True, "got boolean"),
        ([], "got array"),
        ({}, "got object"),
    ],
)
def test_schema_version_rejected(value: object, fragment: str) -> None:
    err = rejected(trace_doc(schema_version=value))
    assert err.pointer == "/schema_version"
    assert fragment in err.message


@pytest.mark.parametrize("key", ["trace_id", "agent_name", "workflow", "steps"])
def test_required_trace_field_missing(key: str) -> None:
    err = rejected(without(trace_doc(), key))
    assert err.pointer == ""
    assert f"missing required field '{key}'" in err.message


@pytest.mark.parametrize("key", ["trace_id", "agent_name", "workflow"])
@pytest.mark.parametrize(
    ("value", "kind"),
    # 0.2.x called str() on ids, so 42 became "42" and null became "None"; both are errors now.
    [(42, "number"), (1.5, "number"), (None, "null"), (True, "boolean"), (["a"], "array")],
)
def test_identity_fields_must_be_strings(key: str, value: object, kind: str) -> None:
    err = rejected(trace_doc(**{key: value}))
    assert err.pointer == f"/{key}"
    assert f"must be a string, got {kind}" in err.message


def test_trace_id_must_not_be_empty() -> None:
    err = rejected(trace_doc(trace_id=""))
    assert err.pointer == "/trace_id"
    assert "must not be empty" in err.message


def test_agent_name_and_workflow_may_be_empty() -> None:
    trace = Trace.from_dict(trace_doc(agent_name="", workflow=""))
    assert (trace.agent_name, trace.workflow) == ("", "")


@pytest.mark.parametrize(
    ("value", "kind"),
    [({}, "object"), ("s1", "string"), (None, "null"), (3, "number")],
)
def test_steps_must_be_a_list(value: object, kind: str) -> None:
    err = rejected(trace_doc(steps=value))
    assert err.pointer == "/steps"
    assert f"must be an array of steps, got {kind}" in err.message


def test_empty_steps_are_accepted() -> None:
    assert Trace.from_dict(trace_doc(steps=[])).steps == ()


@pytest.mark.parametrize(("value", "kind"), [([], "array"), ("x", "string"), (1, "number")])
def test_trace_metadata_must_be_an_object(value: object, kind: str) -> None:
    err = rejected(trace_doc(metadata=value))
    assert err.pointer == "/metadata"
    assert f"must be an object or null, got {kind}" in err.message


def test_trace_metadata_and_source() -> None:
    assert Trace.from_dict(trace_doc(metadata=None)).metadata == {}
    trace = Trace.from_dict(trace_doc(metadata={"env": "ci"}, source="otel"))
    assert trace.metadata == {"env": "ci"}
    assert trace.source == "otel"
    err = rejected(trace_doc(source=5))
    assert err.pointer == "/source"
    assert "must be a string or null, got number" in err.message


# --- steps ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "kind"), [(5, "number"), ("s1", "string"), (None, "null"), ([], "array")]
)
def test_step_must_be_an_object(value: object, kind: str) -> None:
    err = rejected(trace_doc(tool_step(), value))
    assert err.pointer == "/steps/1"
    assert f"a step must be an object, got {kind}" in err.message


def test_step_id_required_non_empty_string() -> None:
    err = step_rejected(step_id=...)
    assert err.pointer == "/steps/0"
    assert "missing required field 'step_id'" in err.message
    err = step_rejected(step_id="")
    assert err.pointer == "/steps/0/step_id"
    assert "must not be empty" in err.message
    for value, kind in ((7, "number"), (None, "null"), (False, "boolean")):
        err = step_rejected(step_id=value)
        assert err.pointer == "/steps/0/step_id"
        assert f"must be a string, got {kind}" in err.message


@pytest.mark.parametrize("kind", ["tool_call", "model_response"])
def test_step_type_accepted(kind: str) -> None:
    assert parse_step(type=kind).type == kind


def test_step_type_missing() -> None:
    err = step_rejected(type=...)
    assert err.pointer == "/steps/0"
    assert "missing required field 'type'" in err.message


@pytest.mark.parametrize(
    ("value", "shown"),
    [("tool", "'tool'"), ("Tool_Call", "'Tool_Call'"), (None, "null"), (1, "number")],
)
def test_step_type_rejected(value: object, shown: str) -> None:
    err = step_rejected(type=value)
    assert err.pointer == "/steps/0/type"
    assert f"unknown step type {shown}" in err.message
    assert "tool_call" in err.message  # the message names the accepted values


@pytest.mark.parametrize("key", ["tool_name", "text", "error"])
def test_string_or_null_fields(key: str) -> None:
    assert getattr(parse_step(**{key: "value"}), key) == "value"
    assert getattr(parse_step(**{key: None}), key) is None
    for value, kind in ((5, "number"), ({}, "object"), (["x"], "array"), (True, "boolean")):
        err = step_rejected(**{key: value})
        assert err.pointer == f"/steps/0/{key}"
        assert f"must be a string or null, got {kind}" in err.message


def test_arguments_object_or_null() -> None:
    assert parse_step(arguments={"id": 1}).arguments == {"id": 1}
    assert parse_step(arguments=None).arguments is None
    assert parse_step(arguments={}).arguments == {}
    for value, kind in (([], "array"), ("id=1", "string"), (0, "number")):
        err = step_rejected(arguments=value)
        assert err.pointer == "/steps/0/arguments"
        assert f"must be an object or null, got {kind}" in err.message


def test_citations_accepted() -> None:
    assert parse_step(citations=None).citations == ()
    assert parse_step(citations=[]).citations == ()
    cites = [{"url": "https://a.example/x", "source": None, "title": 3}, {"source": "doc"}, {}]
    assert parse_step(citations=cites).citations == tuple(cites)


@pytest.mark.parametrize(
    ("value", "kind"),
    # 0.2.x ran list() on these: a string became its characters, an object its keys.
    [("https://a.example", "string"), (7, "number"), ({"url": "https://a.example"}, "object")],
)
def test_citations_must_be_an_array(value: object, kind: str) -> None:
    err = step_rejected(citations=value)
    assert err.pointer == "/steps/0/citations"
    assert f"must be an array of citation objects, got {kind}" in err.message


@pytest.mark.parametrize(
    ("value", "pointer", "fragment"),
    [
        (["https://a.example"], "/steps/0/citations/0", "a citation must be an object, got string"),
        ([{}, 3], "/steps/0/citations/1", "a citation must be an object, got number"),
        ([None], "/steps/0/citations/0", "a citation must be an object, got null"),
        ([[]], "/steps/0/citations/0", "a citation must be an object, got array"),
        ([{"url": 5}], "/steps/0/citations/0/url", "must be a string or null, got number"),
        (
            [{}, {"source": []}],
            "/steps/0/citations/1/source",
            "must be a string or null, got array",
        ),
    ],
)
def test_citation_entries_rejected(value: object, pointer: str, fragment: str) -> None:
    err = step_rejected(citations=value)
    assert err.pointer == pointer
    assert fragment in err.message


@pytest.mark.parametrize("key", ["latency_ms", "cost_usd"])
@pytest.mark.parametrize("value", [0, 0.0, -0.0, 12, 1.5, 1e-9, 10**12, 2**1023, None])
def test_metrics_accepted(key: str, value: object) -> None:
    stored = getattr(parse_step(**{key: value}), key)
    assert stored == value
    assert type(stored) is type(value)


@pytest.mark.parametrize("key", ["latency_ms", "cost_usd"])
@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (True, "must be a number, got boolean"),
        (False, "must be a number, got boolean"),
        ("5", "must be a number, got string"),
        ([1], "must be a number, got array"),
        (-1, "must be a finite number >= 0, got -1"),
        (-0.5, "must be a finite number >= 0, got -0.5"),
        (INF, "must be a finite number >= 0, got inf"),
        (-INF, "must be a finite number >= 0, got -inf"),
        (NAN, "must be a finite number >= 0, got nan"),
        # an integer past the largest float (2**1024 less half a unit rounds up to infinity)
        (2**1024, "must be a finite number >= 0, got an integer of 309 digits"),
        (2**1024 - 2**970, "must be a finite number >= 0, got an integer of 309 digits"),
    ],
)
def test_metrics_rejected(key: str, value: object, fragment: str) -> None:
    err = step_rejected(**{key: value})
    assert err.pointer == f"/steps/0/{key}"
    assert fragment in err.message


@pytest.mark.parametrize("key", ["input_tokens", "output_tokens"])
def test_tokens_accepted(key: str) -> None:
    assert getattr(parse_step(**{key: 0}), key) == 0
    assert getattr(parse_step(**{key: 1200}), key) == 1200
    assert getattr(parse_step(**{key: None}), key) is None
    four = getattr(parse_step(**{key: 4.0}), key)
    assert four == 4
    assert type(four) is int  # an integral float is stored as an int


@pytest.mark.parametrize("key", ["input_tokens", "output_tokens"])
@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (1.5, "must be an integer >= 0, got 1.5"),
        (-1, "must be an integer >= 0, got -1"),
        (-4.0, "must be an integer >= 0, got -4"),
        (True, "must be an integer >= 0, got boolean"),
        ("4", "must be an integer >= 0, got string"),
        (INF, "must be an integer >= 0, got inf"),
        (NAN, "must be an integer >= 0, got nan"),
    ],
)
def test_tokens_rejected(key: str, value: object, fragment: str) -> None:
    err = step_rejected(**{key: value})
    assert err.pointer == f"/steps/0/{key}"
    assert fragment in err.message


def test_requires_grounding() -> None:
    assert parse_step(requires_grounding=True).requires_grounding is True
    assert parse_step(requires_grounding=False).requires_grounding is False
    assert parse_step(requires_grounding=None).requires_grounding is False
    assert parse_step().requires_grounding is False
    # 0.2.x used bool(), so the string "false" counted as true.
    for value, kind in (("false", "string"), ("true", "string"), (0, "number"), (1, "number")):
        err = step_rejected(requires_grounding=value)
        assert err.pointer == "/steps/0/requires_grounding"
        assert f"must be true or false, got {kind}" in err.message


@pytest.mark.parametrize(
    ("fields", "status"),
    [
        ({}, "ok"),
        ({"status": "ok"}, "ok"),
        ({"status": "error"}, "error"),
        ({"status": None}, "ok"),
        ({"error": "timeout"}, "error"),  # derived from a non-empty error
        ({"status": None, "error": "timeout"}, "error"),
        ({"error": ""}, "ok"),  # an empty error text is no error
        ({"error": None}, "ok"),
        ({"status": "ok", "error": "recovered"}, "ok"),  # an explicit status wins
        ({"status": "error", "error": None}, "error"),
    ],
)
def test_status_and_its_derivation(fields: dict[str, Any], status: str) -> None:
    assert parse_step(**fields).status == status


@pytest.mark.parametrize(
    ("value", "shown"),
    [("failed", "'failed'"), ("OK", "'OK'"), (True, "boolean"), (0, "number"), ([], "array")],
)
def test_status_rejected(value: object, shown: str) -> None:
    err = step_rejected(status=value)
    assert err.pointer == "/steps/0/status"
    assert f"must be 'ok' or 'error', got {shown}" in err.message


def test_step_metadata() -> None:
    assert parse_step(metadata={"span": "abc"}).metadata == {"span": "abc"}
    assert parse_step(metadata=None).metadata == {}
    for value, kind in (([], "array"), ("x", "string"), (False, "boolean")):
        err = step_rejected(metadata=value)
        assert err.pointer == "/steps/0/metadata"
        assert f"must be an object or null, got {kind}" in err.message


def test_output_is_any_json_value() -> None:
    for value in ({"a": [1, None]}, [1, 2], "text", 3.5, False, None):
        assert parse_step(output=value).output == value


def test_nested_error_pointer_names_the_step_index() -> None:
    steps = [
        tool_step(step_id="s1", latency_ms=5),
        {"step_id": "s2", "type": "model_response", "text": "hi"},
        tool_step(step_id="s3", latency_ms=-3),
    ]
    err = rejected(trace_doc(*steps))
    assert err.pointer == "/steps/2/latency_ms"
    assert str(err) == "/steps/2/latency_ms: must be a finite number >= 0, got -3"


def test_step_from_dict_alone_uses_the_given_pointer_base() -> None:
    with pytest.raises(InputError) as info:
        Step.from_dict(tool_step(cost_usd="1"), pointer="/steps/9")
    assert info.value.pointer == "/steps/9/cost_usd"
    with pytest.raises(InputError) as info:
        Step.from_dict(tool_step(cost_usd="1"))
    assert info.value.pointer == "/cost_usd"


# --- open for unknown keys, and the canonical form ---------------------------------------------


def test_unknown_keys_are_kept_in_extra_and_round_trip() -> None:
    step = tool_step(span_id="abc", attributes={"http.status": 200})
    doc = trace_doc(step, exporter="otel-bridge", run={"url": "https://ci.example/1"})
    trace = Trace.from_dict(doc)
    assert trace.extra == {"exporter": "otel-bridge", "run": {"url": "https://ci.example/1"}}
    assert trace.steps[0].extra == {"span_id": "abc", "attributes": {"http.status": 200}}
    out = trace.to_dict()
    assert out["exporter"] == "otel-bridge"
    assert out["run"] == {"url": "https://ci.example/1"}
    assert out["steps"][0]["span_id"] == "abc"
    assert out["steps"][0]["attributes"] == {"http.status": 200}
    assert Trace.from_dict(out) == trace


def test_unknown_keys_keep_their_order() -> None:
    step = Trace.from_dict(trace_doc(tool_step(zeta=1, alpha=2, mid=3))).steps[0]
    assert list(step.extra) == ["zeta", "alpha", "mid"]
    assert list(Trace.from_dict(trace_doc(tool_step(zeta=1))).steps[0].extra) == ["zeta"]


def test_known_keys_are_not_extra() -> None:
    trace = Trace.from_dict(trace_doc(tool_step(metadata={"a": 1}, output=1), metadata={"b": 2}))
    assert trace.extra == {}
    assert trace.steps[0].extra == {}


def test_v01_style_trace_parses() -> None:
    # A v0.1 trace: no schema_version, no status, no tokens, no metadata.
    doc = {
        "trace_id": "renewal-7",
        "agent_name": "renewals",
        "workflow": "renewal",
        "steps": [
            {
                "step_id": "1",
                "type": "tool_call",
                "tool_name": "crm_lookup",
                "arguments": {"account_id": "A-1"},
                "latency_ms": 300,
                "cost_usd": 0.002,
            },
            {"step_id": "2", "type": "model_response", "text": "Renewal drafted.", "citations": []},
        ],
    }
    trace = Trace.from_dict(doc)
    assert trace.schema_version == "1"
    assert [s.step_id for s in trace.steps] == ["1", "2"]
    assert trace.steps[0].status == "ok"
    assert trace.steps[0].latency_ms == 300
    assert trace.to_dict()["schema_version"] == "1"


def test_reference_v01_sample_traces_parse() -> None:
    folder = require_shared(REFERENCE / "samples" / "traces")
    names = [
        "lead_qualification_pass.json",
        "renewal_workflow_budget_violation.json",
        "support_escalation_unsafe.json",
    ]
    for name in names:
        doc = load_json(folder / name)
        assert "schema_version" not in doc  # these are the v0.1-style samples
        trace = Trace.from_dict(doc)
        assert trace.schema_version == "1"
        assert trace.trace_id == doc["trace_id"]
        assert len(trace.steps) == len(doc["steps"])


def test_reference_traces_round_trip() -> None:
    require_shared(REFERENCE)
    docs = [load_json(p) for p in sorted((REFERENCE / "samples" / "traces").glob("*.json"))]
    docs += [
        load_json(p)["trace"] for p in sorted((REFERENCE / "benchmarks" / "cases").glob("*.json"))
    ]
    assert len(docs) == 5 + 34
    for doc in docs:
        original = copy.deepcopy(doc)
        trace = Trace.from_dict(doc)
        assert doc == original  # parsing does not modify its input
        again = Trace.from_dict(json.loads(json.dumps(trace.to_dict())))
        assert again == trace


def test_to_dict_writes_only_non_default_fields() -> None:
    step = parse_step(error="boom")
    # status is derived from error, so it is not written out; the parse-back derives it again.
    assert step.to_dict() == {
        "step_id": "s1",
        "type": "tool_call",
        "tool_name": "lookup",
        "error": "boom",
    }
    explicit = parse_step(error="boom", status="ok")
    assert explicit.to_dict()["status"] == "ok"
    assert Step.from_dict(explicit.to_dict()) == explicit


# --- property: to_dict parses back to an equal trace -------------------------------------------

_json_scalars = st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=8)
_json_values = st.recursive(
    _json_scalars | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
_json_objects = st.dictionaries(st.text(max_size=6), _json_values, max_size=3)
_metrics = st.none() | st.integers(0, 10**9) | st.floats(0, 1e9, allow_nan=False)
_tokens = st.none() | st.integers(0, 10**7)
_citation = st.fixed_dictionaries(
    {},
    optional={
        "url": st.none() | st.text(max_size=20),
        "source": st.none() | st.text(max_size=10),
        "note": _json_values,
    },
)
_EXTRA_KEYS = ("span_id", "x-vendor", "attributes", "parent")
_extra_keys = st.sampled_from(_EXTRA_KEYS)


@st.composite
def _steps(draw: st.DrawFn, index: int) -> dict[str, Any]:
    step: dict[str, Any] = {
        "step_id": draw(st.text(min_size=1, max_size=6)) + str(index),
        "type": draw(st.sampled_from(["tool_call", "model_response"])),
    }
    optional: dict[str, st.SearchStrategy[Any]] = {
        "tool_name": st.none() | st.text(max_size=10),
        "arguments": st.none() | _json_objects,
        "output": _json_values,
        "text": st.none() | st.text(max_size=20),
        "citations": st.none() | st.lists(_citation, max_size=3),
        "requires_grounding": st.none() | st.booleans(),
        "status": st.none() | st.sampled_from(["ok", "error"]),
        "error": st.none() | st.text(max_size=10),
        "latency_ms": _metrics,
        "cost_usd": _metrics,
        "input_tokens": _tokens,
        "output_tokens": _tokens,
        "metadata": st.none() | _json_objects,
    }
    for key in draw(st.sets(st.sampled_from(sorted(optional)))):
        step[key] = draw(optional[key])
    for key in draw(st.sets(_extra_keys, max_size=2)):
        step[key] = draw(_json_values)
    return step


@st.composite
def _traces(draw: st.DrawFn) -> dict[str, Any]:
    count = draw(st.integers(0, 4))
    doc: dict[str, Any] = {
        "trace_id": draw(st.text(min_size=1, max_size=8)),
        "agent_name": draw(st.text(max_size=8)),
        "workflow": draw(st.text(max_size=8)),
        "steps": [draw(_steps(i)) for i in range(count)],
    }
    if draw(st.booleans()):
        doc["schema_version"] = draw(st.sampled_from(["1", "1.0", "1.2", 1, None]))
    if draw(st.booleans()):
        doc["metadata"] = draw(st.none() | _json_objects)
    if draw(st.booleans()):
        doc["source"] = draw(st.none() | st.text(max_size=8))
    for key in draw(st.sets(st.sampled_from(["exporter", "run"]), max_size=2)):
        doc[key] = draw(_json_values)
    return doc


@settings(max_examples=250, deadline=None)
@given(_traces())
def test_to_dict_parses_back_to_an_equal_trace(doc: dict[str, Any]) -> None:
    trace = Trace.from_dict(doc)
    out = trace.to_dict()
    again = Trace.from_dict(json.loads(json.dumps(out)))
    assert again == trace
    assert again.to_dict() == out
    # The parsed values are the ones that were written (spot checks against the input).
    assert [s.step_id for s in trace.steps] == [s["step_id"] for s in doc["steps"]]
    for step, raw in zip(trace.steps, doc["steps"], strict=True):
        assert step.latency_ms == raw.get("latency_ms")
        assert step.requires_grounding is bool(raw.get("requires_grounding"))
        expected_status = raw.get("status") or ("error" if raw.get("error") else "ok")
        assert step.status == expected_status
        assert step.extra == {k: v for k, v in raw.items() if k in _EXTRA_KEYS}


# --- data built in Python: keys, subclasses of JSON types, integers too long to show ----------


class _Tool(enum.StrEnum):
    LOOKUP = "lookup"


class _Count(enum.IntEnum):
    TEN = 10


class _Real(float):
    pass


@pytest.mark.parametrize(
    ("doc", "pointer", "kind"),
    [
        (trace_doc() | {None: 1}, "", "NoneType"),
        (trace_doc(tool_step(exporter=1) | {3: "x"}), "/steps/0", "int"),
        (
            trace_doc(tool_step(), {"step_id": "s2", "type": "model_response", None: 1}),
            "/steps/1",
            "NoneType",
        ),
    ],
)
def test_trace_and_step_keys_must_be_strings(doc: object, pointer: str, kind: str) -> None:
    err = rejected(doc)
    assert err.pointer == pointer
    assert err.message == f"object keys must be strings, got a key of type {kind}"


HUGE = 10**5000


@pytest.mark.parametrize(
    ("fields", "pointer"),
    [
        ({"latency_ms": HUGE}, "/steps/0/latency_ms"),
        ({"latency_ms": -HUGE}, "/steps/0/latency_ms"),
        ({"cost_usd": -HUGE}, "/steps/0/cost_usd"),
        ({"input_tokens": -HUGE}, "/steps/0/input_tokens"),
        ({"output_tokens": -HUGE}, "/steps/0/output_tokens"),
    ],
)
def test_integers_too_long_to_show_are_described_by_length(
    int_digits_limit: int, fields: dict[str, Any], pointer: str
) -> None:
    err = step_rejected(**fields)
    assert err.pointer == pointer
    assert err.message.endswith(", got an integer of 5001 digits")


def test_schema_version_too_long_to_show(int_digits_limit: int) -> None:
    err = rejected(trace_doc(schema_version=HUGE))
    assert err.pointer == "/schema_version"
    assert "unsupported schema_version an integer of 5001 digits" in err.message


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (10**400, "an integer of 401 digits"),
        (10**400 - 1, "an integer of 400 digits"),
        (-(10**400), "an integer of 401 digits"),
        (2**1024, "an integer of 309 digits"),
        (10**308, repr(10**308)),  # a float can hold it: written out
        (-5, "-5"),
        (1.5, "1.5"),
        (2 ** (1 << 19), "an integer of about 157827 digits"),
    ],
    ids=["1e400", "1e400-1", "-1e400", "2**1024", "1e308", "-5", "1.5", "2**2**19"],
)
def test_number_text(int_digits_limit: int, value: int | float, shown: str) -> None:
    from agent_reliability_harness._decode import number_text

    assert number_text(value) == shown


def test_number_text_counts_digits_exactly() -> None:
    from agent_reliability_harness._decode import number_text

    for digits in (310, 311, 1000, 4300, 4301, 20_000):
        for value in (10 ** (digits - 1), 10**digits - 1, -(10**digits - 1)):
            assert number_text(value) == f"an integer of {digits} digits", value


@pytest.mark.parametrize(
    ("value", "name"),
    [
        (None, "null"),
        (True, "boolean"),
        (0, "number"),
        (1.5, "number"),
        ("", "string"),
        ([], "array"),
        ({}, "object"),
        ((), "tuple"),
        (collections.OrderedDict(), "OrderedDict (a dict subclass: pass a plain dict)"),
        (_Tool.LOOKUP, "enum member _Tool.LOOKUP (a str subclass: pass a plain str)"),
        (_Count.TEN, "enum member _Count.TEN (an int subclass: pass a plain int)"),
        (_Real(1.0), "_Real (a float subclass: pass a plain float)"),
        ({1}, "set"),
        (b"x", "bytes"),
    ],
)
def test_json_type_names_exact_json_types_and_python_types(value: object, name: str) -> None:
    from agent_reliability_harness._decode import json_type

    assert json_type(value) == name


@pytest.mark.parametrize(
    ("doc", "pointer", "message"),
    [
        (
            collections.OrderedDict(trace_doc()),
            "",
            "a trace must be a JSON object, got OrderedDict (a dict subclass: pass a plain dict)",
        ),
        (trace_doc(steps=(tool_step(),)), "/steps", "must be an array of steps, got tuple"),
        (
            trace_doc(collections.OrderedDict(tool_step())),
            "/steps/0",
            "a step must be an object, got OrderedDict (a dict subclass: pass a plain dict)",
        ),
        (
            trace_doc(tool_step(tool_name=_Tool.LOOKUP)),
            "/steps/0/tool_name",
            (
                "must be a string or null, got enum member _Tool.LOOKUP (a str subclass: pass a "
                "plain str)"
            ),
        ),
        (
            trace_doc(tool_step(latency_ms=_Real(1.0))),
            "/steps/0/latency_ms",
            "must be a number, got _Real (a float subclass: pass a plain float)",
        ),
        (
            trace_doc(tool_step(input_tokens=_Count.TEN)),
            "/steps/0/input_tokens",
            (
                "must be an integer >= 0, got enum member _Count.TEN (an int subclass: pass a "
                "plain int)"
            ),
        ),
        (
            trace_doc(tool_step(input_tokens=_Real(4.0))),
            "/steps/0/input_tokens",
            "must be an integer >= 0, got _Real (a float subclass: pass a plain float)",
        ),
        (
            trace_doc(tool_step(arguments=collections.OrderedDict())),
            "/steps/0/arguments",
            "must be an object or null, got OrderedDict (a dict subclass: pass a plain dict)",
        ),
        (
            trace_doc(tool_step(citations=({"url": "u"},))),
            "/steps/0/citations",
            "must be an array of citation objects, got tuple",
        ),
    ],
)
def test_subclasses_of_json_types_are_named_by_their_type(
    doc: object, pointer: str, message: str
) -> None:
    # the checks test `type(x) is ...`; the message used to name the very type it asked for
    err = rejected(doc)
    assert err.pointer == pointer
    assert err.message == message
