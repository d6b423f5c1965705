"""Answer checks: normalisation, numbers and tolerance (with property tests), the JSON Schema
subset against the reference implementation, expectations (trace field and side file), and
the command line's --expect."""

from __future__ import annotations

import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_reliability_harness import (
    Expectations,
    InputError,
    Policy,
    RunReport,
    Trace,
    Validator,
    validate_trace,
)
from agent_reliability_harness.model._jsonschema import JsonSchema
from agent_reliability_harness.model.answers import (
    canonical_number,
    last_number,
    normalize,
    parse_number,
)
from agent_reliability_harness.render.json_report import render_json


def _policy(answers: dict[str, Any], version: str = "1.2") -> Policy:
    return Policy.from_dict(
        {
            "schema_version": version,
            "policy_id": "p",
            "allow_unlisted_tools": True,
            "answers": answers,
        }
    )


def _trace(text: str, expected: dict[str, Any] | None = None, version: str = "1.2") -> Trace:
    data: dict[str, Any] = {
        "schema_version": version,
        "trace_id": "t",
        "agent_name": "a",
        "workflow": "w",
        "steps": [{"step_id": "s1", "type": "model_response", "text": text}],
    }
    if expected is not None:
        data["expected"] = expected
    return Trace.from_dict(data)


# --- normalisation, worked out by hand --------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "normal"),
    [
        ("1,000.50", "1000.5"),
        ("1000.50", "1000.5"),
        ("+3.000", "3"),
        ("-0.0", "0"),
        ("007", "007"),  # identifiers keep their digits
        ("v1.2.3", "v1.2.3"),  # not a number
        ("1,5", "1,5"),  # not a grouping of three: left as written
        ("1,234,5", "1,234,5"),
        ("ORD-0012 and 2024-01-05, a 3-day stay", "ord-0012 and 2024-01-05, a 3-day stay"),
        ("x - 5.50", "x - 5.5"),
        ("Total:\t 1,234,567.890  EUR", "total: 1234567.89 eur"),
        ("\uff21\uff22\uff23 \uff11\uff12", "abc 12"),  # NFKC: full-width letters and digits
        ("STRASSE", "strasse"),
        ("Straße", "strasse"),  # casefold, not lower
        ("ﬁle", "file"),  # NFKC ligature
    ],
)
def test_normalize_by_hand(text: str, normal: str) -> None:
    assert normalize(text) == normal


def test_parse_and_last_number_by_hand() -> None:
    assert parse_number(" 1,000.50 ") == Decimal("1000.5")
    assert parse_number("12 apples") is None
    assert last_number("3 apples and 4 pears, so 7.") == Decimal(7)
    assert last_number("no digits here") is None
    assert last_number("-2.50") == Decimal("-2.5")
    assert last_number("Refunded 12.50 for ORD-0012") == Decimal("12.5")


_NUMBERS = st.decimals(min_value=-(10**12), max_value=10**12, places=4, allow_nan=False)


def _grouped(value: Decimal, zeros: int) -> str:
    return f"{value:,.4f}" + "0" * zeros


@given(_NUMBERS, st.integers(min_value=0, max_value=3))
def test_number_formats_normalise_alike(value: Decimal, zeros: int) -> None:
    """'1,000.5000' and '1000.5' are one number once normalised, and its value is kept."""
    grouped = _grouped(value, zeros)
    plain = format(value, "f")
    assert normalize(grouped) == normalize(plain)
    assert Decimal(canonical_number(grouped.replace("+", ""))) == value


@given(st.text(max_size=40))
def test_normalize_is_idempotent(text: str) -> None:
    once = normalize(text)
    assert normalize(once) == once


@given(st.text(max_size=40))
def test_normalize_ignores_case_and_spacing(text: str) -> None:
    assert normalize(text.upper()) == normalize(text.upper().casefold())
    assert normalize(f"  {text}  ") == normalize(text)


# --- the numeric tolerance -------------------------------------------------------------------


def _numeric(expected: float, observed: str, **tolerance: float) -> bool:
    policy = _policy({"checks": ["numeric"], "tolerance": tolerance})
    return validate_trace(_trace(observed, {"answer": expected}), policy).passed


@given(
    st.integers(min_value=-10_000, max_value=10_000),
    st.integers(min_value=0, max_value=100),
    st.integers(min_value=0, max_value=200),
)
def test_absolute_tolerance_is_a_closed_interval(expected: int, allowed: int, off: int) -> None:
    """An answer off by ``off`` hundredths passes exactly when off <= allowed hundredths."""
    want = Decimal(expected) / 100
    got = want + Decimal(off) / 100
    passed = _numeric(float(want), format(got, "f"), absolute=float(Decimal(allowed) / 100))
    assert passed == (off <= allowed)
    below = want - Decimal(off) / 100
    assert _numeric(float(want), format(below, "f"), absolute=allowed / 100) == passed


def test_relative_tolerance_by_hand() -> None:
    assert _numeric(200.0, "202", relative=0.01)  # 2 <= 0.01 x 200
    assert not _numeric(200.0, "202.01", relative=0.01)
    assert _numeric(0.0, "0", relative=0.5)  # relative to 0 allows nothing but 0
    assert not _numeric(0.0, "0.0001", relative=0.5)
    assert _numeric(100.0, "100.5", absolute=1, relative=0.001)  # the larger of the two


# --- the JSON Schema subset against the reference implementation -----------------------------

_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["id", "items"],
    "properties": {
        "id": {"type": "string", "pattern": "^ORD-[0-9]+$", "minLength": 5, "maxLength": 9},
        "count": {"type": "integer", "minimum": 1, "maximum": 3},
        "status": {"enum": ["open", "closed", 1]},
        "kind": {"const": {"a": [1, 2]}},
        "items": {"type": "array", "items": {"type": ["string", "null"]}},
        "flag": {"type": "boolean"},
        "price": {"type": "number"},
    },
    "additionalProperties": {"type": "string"},
}
_INSTANCES: list[tuple[Any, bool]] = [  # (instance, conforms), each worked out by hand
    ({"id": "ORD-12", "items": []}, True),
    ({"id": "ORD-12"}, False),  # items required
    ({"id": "ORD-1x", "items": []}, False),  # pattern
    ({"id": "ORD-", "items": []}, False),  # pattern needs a digit, minLength 5
    ({"id": "ORD-123456", "items": []}, False),  # maxLength 9
    ({"id": "ORD-12", "items": [], "count": 2.0}, True),  # 2.0 is an integer in 2020-12
    ({"id": "ORD-12", "items": [], "count": 2.5}, False),
    ({"id": "ORD-12", "items": [], "count": True}, False),  # a boolean is not an integer
    ({"id": "ORD-12", "items": [], "count": 0}, False),  # minimum
    ({"id": "ORD-12", "items": [], "count": 4}, False),  # maximum
    ({"id": "ORD-12", "items": [], "status": 1.0}, True),  # enum by value: 1.0 equals 1
    ({"id": "ORD-12", "items": [], "status": True}, False),  # true is not 1
    ({"id": "ORD-12", "items": [], "kind": {"a": [1, 2.0]}}, True),
    ({"id": "ORD-12", "items": [], "kind": {"a": [2, 1]}}, False),
    ({"id": "ORD-12", "items": ["x", None]}, True),
    ({"id": "ORD-12", "items": ["x", 3]}, False),
    ({"id": "ORD-12", "items": [], "note": "ok"}, True),  # additionalProperties schema
    ({"id": "ORD-12", "items": [], "note": 5}, False),
    ({"id": "ORD-12", "items": [], "flag": 0}, False),
    ({"id": "ORD-12", "items": [], "price": 3}, True),  # an integer is a number
    ([], False),
    ("ORD-12", False),
]


@pytest.mark.parametrize(("instance", "conforms"), _INSTANCES)
def test_schema_subset_agrees_with_reference(instance: Any, conforms: bool) -> None:
    ours = not JsonSchema.parse(_SCHEMA, "/answers/schema").errors(instance)
    reference = jsonschema.Draft202012Validator(_SCHEMA).is_valid(instance)
    assert ours == conforms
    assert reference == conforms


def test_boolean_schemas_and_closed_objects() -> None:
    closed = JsonSchema.parse(
        {"properties": {"a": True, "b": False}, "additionalProperties": False}, ""
    )
    assert closed.errors({"a": 1}) == []
    assert closed.errors({"b": 1}) == ["/b: no value is allowed here"]
    assert closed.errors({"c": 1}) == ["/c: property 'c' is not allowed"]
    assert not jsonschema.Draft202012Validator(
        {"properties": {"a": True, "b": False}, "additionalProperties": False}
    ).is_valid({"c": 1})


@pytest.mark.parametrize(
    ("schema", "pointer", "says"),
    [
        ({"$ref": "#/x"}, "/answers/schema/$ref", "'$ref' is not supported"),
        (
            {"properties": {"a": {"anyOf": []}}},
            "/answers/schema/properties/a/anyOf",
            "not supported",
        ),
        ({"type": "float"}, "/answers/schema/type", "unknown type 'float'"),
        ({"type": ["string", "int"]}, "/answers/schema/type/1", "unknown type 'int'"),
        ({"items": [{"type": "string"}]}, "/answers/schema/items", "array form"),
        ({"minLength": -1}, "/answers/schema/minLength", "non-negative integer"),
        ({"pattern": "("}, "/answers/schema/pattern", "invalid regular expression"),
        ({"required": ["a", "a"]}, "/answers/schema/required", "more than once"),
        ([1], "/answers/schema", "object or a boolean"),
    ],
)
def test_unsupported_schema_refused_at_its_pointer(schema: Any, pointer: str, says: str) -> None:
    with pytest.raises(InputError) as caught:
        _policy({"checks": ["schema"], "schema": schema})
    assert caught.value.pointer == pointer
    assert says in caught.value.message


# --- the policy section ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answers", "version", "pointer", "says"),
    [
        ({"checks": ["exact"]}, "1.1", "/answers", 'declare "schema_version": "1.2"'),
        ({"checks": []}, "1.2", "/answers/checks", "non-empty array"),
        ({"checks": ["fuzzy"]}, "1.2", "/answers/checks/0", "unknown answer check 'fuzzy'"),
        ({"checks": ["exact", "exact"]}, "1.2", "/answers/checks/1", "more than once"),
        ({"checks": ["schema"]}, "1.2", "/answers/checks", "needs a schema"),
        (
            {"checks": ["exact"], "tolerance": {"absolute": 1}},
            "1.2",
            "/answers/tolerance",
            "numeric",
        ),
        (
            {"checks": ["numeric"], "tolerance": {"absolute": -1}},
            "1.2",
            "/answers/tolerance/absolute",
            "",
        ),
        (
            {"checks": ["exact"], "normalize": {"accents": True}},
            "1.2",
            "/answers/normalize/accents",
            "accents",
        ),
    ],
)
def test_policy_errors(answers: dict[str, Any], version: str, pointer: str, says: str) -> None:
    with pytest.raises(InputError) as caught:
        _policy(answers, version)
    assert caught.value.pointer == pointer
    assert says in caught.value.message


def test_policy_without_answers_hashes_and_reports_as_before() -> None:
    base = {"schema_version": "1.1", "policy_id": "p", "allow_unlisted_tools": True}
    policy = Policy.from_dict(base)
    assert "answers" not in policy.to_dict()
    report = validate_trace(_trace("hi", version="1"), policy)
    assert "answers" not in [c.category for c in report.categories]
    assert report.not_applicable == ()


# --- expectations ----------------------------------------------------------------------------


def test_expected_is_read_from_version_1_2_only() -> None:
    old = _trace("x", {"answer": "x"}, version="1.1")
    assert old.expected is None
    assert old.extra == {"expected": {"answer": "x"}}  # kept as the trace's own key, as 0.2.x did
    new = _trace("x", {"answer": "x"})
    assert new.expected is not None
    assert new.expected.answer == "x"
    assert new.to_dict()["expected"] == {"answer": "x"}
    assert Trace.from_dict(new.to_dict()) == new


@pytest.mark.parametrize(
    ("expected", "pointer"),
    [
        ({}, "/expected"),
        ({"answr": 1}, "/expected/answr"),
        ({"pattern": "("}, "/expected/pattern"),
        ({"pattern": "(a+)+$"}, "/expected/pattern"),
        ({"must_mention": ["ok", " "]}, "/expected/must_mention/1"),
        ([1], "/expected"),
    ],
)
def test_bad_expected_field(expected: Any, pointer: str) -> None:
    with pytest.raises(InputError) as caught:
        _trace("x", expected)
    assert caught.value.pointer == pointer


def test_missing_expectation_is_not_applicable_never_pass_or_fail() -> None:
    policy = _policy({"checks": ["exact", "must_mention"]})
    report = validate_trace(_trace("anything"), policy)
    answers = next(c for c in report.categories if c.category == "answers")
    assert (answers.applicable, answers.checks, answers.failed) == (False, 0, 0)
    assert [(n.rule_id, n.check, n.field) for n in report.not_applicable] == [
        ("ARH-ANS-002", "answers.checks: exact", "expected"),
        ("ARH-ANS-009", "answers.checks: must_mention", "expected"),
    ]


def test_side_file_by_trace_id_then_workflow() -> None:
    expectations = Expectations.from_dict(
        {
            "expectations": [
                {"workflow": "w", "answer": "Lyon"},
                {"trace_id": "t", "answer": "Paris"},
            ]
        }
    )
    policy = _policy({"checks": ["exact"]})
    assert validate_trace(_trace("Paris", version="1"), policy, expectations=expectations).passed
    other = Trace.from_dict({**_trace("Lyon", version="1").to_dict(), "trace_id": "u"})
    assert Validator(policy, expectations=expectations).validate(other).passed
    # the trace's own expectation wins over the side file
    own = _trace("Nice", {"answer": "Nice"})
    assert validate_trace(own, policy, expectations=expectations).passed


@pytest.mark.parametrize(
    ("data", "pointer"),
    [
        ({"expectations": [{"answer": 1}]}, "/expectations/0"),
        (
            {"expectations": [{"trace_id": "a", "answer": 1}, {"trace_id": "a", "answer": 2}]},
            "/expectations/1/trace_id",
        ),
        ({"expectations": {}}, "/expectations"),
        ({}, ""),
        ({"expectations": [], "extra": 1}, "/extra"),
    ],
)
def test_bad_side_file(data: Any, pointer: str) -> None:
    with pytest.raises(InputError) as caught:
        Expectations.from_dict(data)
    assert caught.value.pointer == pointer


def test_answer_from_tool_argument() -> None:
    policy = _policy(
        {"checks": ["exact"], "from_tool": {"tool": "Finish", "argument": "final_answer"}}
    )
    trace = Trace.from_dict(
        {
            "schema_version": "1.2",
            "trace_id": "t",
            "agent_name": "a",
            "workflow": "w",
            "expected": {"answer": "42"},
            "steps": [
                {
                    "step_id": "s1",
                    "type": "tool_call",
                    "tool_name": "Finish",
                    "arguments": {"final_answer": "41"},
                },
                {
                    "step_id": "s2",
                    "type": "tool_call",
                    "tool_name": "Finish",
                    "arguments": {"final_answer": "42"},
                },
                {"step_id": "s3", "type": "model_response", "text": "done"},
            ],
        }
    )
    assert validate_trace(trace, policy).passed


def test_cli_expect(tmp_path: Path) -> None:
    policy = tmp_path / "policy.json"
    policy.write_text(
        json.dumps(
            {
                "schema_version": "1.2",
                "policy_id": "p",
                "allow_unlisted_tools": True,
                "answers": {"checks": ["normalized"]},
            }
        )
    )
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps(_trace("1,000.50", version="1").to_dict()))
    expect = tmp_path / "expect.json"
    expect.write_text(json.dumps({"expectations": [{"trace_id": "t", "answer": "1000.49"}]}))
    run = [
        sys.executable,
        "-m",
        "agent_reliability_harness",
        "validate",
        "--policy",
        str(policy),
        str(trace),
    ]
    assert subprocess.run(run, capture_output=True, check=False).returncode == 0
    failed = subprocess.run(
        [*run, "--expect", str(expect)], capture_output=True, text=True, check=False
    )
    assert failed.returncode == 1
    assert "ARH-ANS-003" in failed.stdout
    expect.write_text('{"expectations": [{"trace_id": 1}]}')
    bad = subprocess.run(
        [*run, "--expect", str(expect)], capture_output=True, text=True, check=False
    )
    assert bad.returncode == 2
    assert "/expectations/0/trace_id" in bad.stderr


# --- the JSON Schemas follow the parser ------------------------------------------------------


def _schema(name: str) -> jsonschema.Draft202012Validator:
    root = Path(__file__).resolve().parents[1] / "schemas"
    schema = json.loads((root / f"{name}.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize(
    "document",
    [
        {"expectations": [{"trace_id": "t", "answer": 3}]},
        {"schema_version": "1", "expectations": [{"workflow": "w", "must_mention": ["a"]}]},
        {"expectations": [{"trace_id": "t", "workflow": "w", "answer": 3}]},
        {"expectations": [{"task": "refund-7", "answer": 3}]},
        {"expectations": [{"task": "", "answer": 3}]},
        {"expectations": [{"task": "a", "workflow": "w", "answer": 3}]},
        {"expectations": [{"trace_id": "t"}]},
        {"expectations": [{"trace_id": "", "answer": 1}]},
        {"expectations": [{"workflow": "w", "must_mention": [" "]}]},
        {"expectations": [{"workflow": "w", "answr": 1}]},
        {"expectations": []},
        {},
    ],
)
def test_expectations_schema_agrees_with_parser(document: Any) -> None:
    try:
        Expectations.from_dict(document)
        parsed = True
    except InputError:
        parsed = False
    assert _schema("expectations").is_valid(document) == parsed


@pytest.mark.parametrize(
    ("expected", "version"),
    [
        ({"answer": "x"}, "1.2"),
        ({"must_mention": ["x"], "pattern": "a+"}, "1.2"),
        ({}, "1.2"),
        ({"must_mention": []}, "1.2"),
        ({"answr": 1}, "1.3"),
        ({"answr": 1}, "1.1"),  # not read before 1.2: any value
        ("free text", "1"),
    ],
)
def test_trace_schema_agrees_with_parser_on_expected(expected: Any, version: str) -> None:
    document = _trace("x", version=version).to_dict() | {"expected": expected}
    try:
        Trace.from_dict(document)
        parsed = True
    except InputError:
        parsed = False
    assert _schema("trace").is_valid(document) == parsed


@pytest.mark.parametrize(
    ("answers", "version"),
    [
        ({"checks": ["exact"]}, "1.2"),
        ({"checks": ["exact"]}, "1.1"),
        ({"checks": ["numeric"], "tolerance": {"absolute": 0.5}}, 1.2),
        ({"checks": []}, "1.2"),
        ({"checks": ["fuzzy"]}, "1.2"),
        ({"checks": ["schema"], "schema": {"type": "object"}}, "1.2"),
        ({"checks": ["exact"], "from_tool": {"tool": "Finish"}}, "1.2"),
    ],
)
def test_policy_schema_agrees_with_parser_on_answers(answers: Any, version: Any) -> None:
    document = {
        "schema_version": version,
        "policy_id": "p",
        "allow_unlisted_tools": True,
        "answers": answers,
    }
    try:
        Policy.from_dict(document)
        parsed = True
    except InputError:
        parsed = False
    assert _schema("policy").is_valid(document) == parsed


def test_report_schema_accepts_answer_reports() -> None:
    policy = _policy({"checks": ["exact", "must_mention"]})
    reports = (
        validate_trace(_trace("Paris", {"answer": "Lyon"}), policy),
        validate_trace(Trace.from_dict({**_trace("x").to_dict(), "trace_id": "u"}), policy),
    )
    document = json.loads(render_json(RunReport(reports, policy_id="p")))
    assert [c for c in document["reports"][0]["categories"] if c == "answers"] == ["answers"]
    assert document["reports"][1]["not_applicable"][0]["field"] == "expected"
    assert list(_schema("report").iter_errors(document)) == []


def test_not_applicable_answer_checks_are_explained(tmp_path: Path) -> None:
    policy = tmp_path / "policy.json"
    policy.write_text(
        json.dumps({"schema_version": "1.2", "policy_id": "p", "answers": {"checks": ["exact"]}})
    )
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps(_trace("hi", version="1").to_dict()))
    run = [
        sys.executable,
        "-m",
        "agent_reliability_harness",
        "validate",
        "--policy",
        str(policy),
        str(trace),
    ]
    out = subprocess.run(
        [
            *run,
            "--show-passing",
            "--md-out",
            str(tmp_path / "r.md"),
            "--html-out",
            str(tmp_path / "r.html"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert "answers.checks: exact: not applicable, the trace has no expected" in out.stdout
    markdown = (tmp_path / "r.md").read_text(encoding="utf-8")
    assert "An answer check is not applicable to a trace without an expected outcome" in markdown
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "not applicable: the trace has no <code>expected</code>" in page


def test_side_file_by_task() -> None:
    expectations = Expectations.from_dict(
        {
            "expectations": [
                {"task": "refund-7", "answer": "Paris"},
                {"workflow": "w", "answer": "Lyon"},
                {"trace_id": "refund-7-run-3", "answer": "Nice"},
            ]
        }
    )
    # the trace id without its run marker names the task, as arh stats groups runs
    assert expectations.for_trace("refund-7-run-2", "w") is expectations.by_task["refund-7"]
    assert expectations.for_trace("refund-7-run-3", "w") is expectations.by_trace["refund-7-run-3"]
    assert expectations.for_trace("refund-8-run-1", "w") is expectations.by_workflow["w"]
    assert expectations.for_trace("x", "w", "refund-7") is expectations.by_task["refund-7"]


def test_cli_expect_by_task_key(tmp_path: Path) -> None:
    policy = tmp_path / "policy.json"
    policy.write_text(
        json.dumps(
            {
                "schema_version": "1.2",
                "policy_id": "p",
                "allow_unlisted_tools": True,
                "answers": {"checks": ["exact"]},
            }
        )
    )
    runs = tmp_path / "runs.jsonl"
    lines = []
    for trial, (task, text) in enumerate([("q1", "4"), ("q1", "5"), ("q2", "9")]):
        document = _trace(text, version="1").to_dict()
        lines.append(json.dumps({**document, "trace_id": f"r{trial}", "metadata": {"task": task}}))
    runs.write_text("\n".join(lines) + "\n")
    expect = tmp_path / "expect.json"
    expect.write_text(
        json.dumps({"expectations": [{"task": "q1", "answer": "4"}, {"task": "q2", "answer": "9"}]})
    )
    run = [
        sys.executable, "-m", "agent_reliability_harness", "validate", "--policy", str(policy),
        str(runs), "--expect", str(expect), "--task-key", "/metadata/task", "--show-passing",
    ]  # fmt: skip
    out = subprocess.run(run, capture_output=True, text=True, check=False)
    assert out.returncode == 1, out.stderr
    assert "PASS  r0" in out.stdout
    assert "FAIL  r1" in out.stdout
    assert "PASS  r2" in out.stdout


def test_expect_without_answer_checks_warns(tmp_path: Path) -> None:
    expect = tmp_path / "expect.json"
    expect.write_text(json.dumps({"expectations": [{"trace_id": "t", "answer": "x"}]}))
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps(_trace("x", version="1").to_dict()))
    policy = Path(__file__).resolve().parents[1] / "samples" / "policy_trajectory.json"
    run = [sys.executable, "-m", "agent_reliability_harness", "validate", "--policy", str(policy)]
    out = subprocess.run(
        [*run, str(trace), "--expect", str(expect), "-q"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert "the policy has no answers section" in out.stderr
