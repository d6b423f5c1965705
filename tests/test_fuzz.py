"""No input can crash arh: property tests over arbitrary and mostly-valid JSON.

The contract under test: parsing (``Trace.from_dict``, ``Step.from_dict``, ``Policy.from_dict``),
the strict JSON decoder and validation either succeed or raise
:class:`~agent_reliability_harness.errors.InputError`, whose JSON pointer locates the problem in
the document that was given. Anything else escaping (``OverflowError``, ``ValueError``,
``KeyError``, ...) is a crash of the tool.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from agent_reliability_harness._json import decode_bytes, loads
from agent_reliability_harness.cli import main
from agent_reliability_harness.engine import Validator
from agent_reliability_harness.errors import InputError
from agent_reliability_harness.model.policy import Policy
from agent_reliability_harness.model.report import SEVERITIES, RunReport
from agent_reliability_harness.model.trace import Step, Trace
from agent_reliability_harness.render.console import render_console
from agent_reliability_harness.render.json_report import render_json
from agent_reliability_harness.rules import RULES

from conftest import REFERENCE, SAMPLES, require_shared

FUZZ = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
# fewer examples where drawing the input costs more than checking it
LIGHT = settings(FUZZ, max_examples=80)
CASES = REFERENCE / "benchmarks" / "cases"
REFERENCE_TRACES = REFERENCE / "samples" / "traces"

# ---------------------------------------------------------------------------------------------
# Helpers


def resolve_pointer(document: Any, pointer: str) -> Any:
    """Follow an RFC 6901 JSON pointer; raise AssertionError if it does not lead anywhere."""
    assert pointer == "" or pointer.startswith("/"), f"not a JSON pointer: {pointer!r}"
    node = document
    if pointer == "":
        return node
    for raw in pointer[1:].split("/"):
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict):
            assert token in node, f"pointer {pointer!r}: no key {token!r}"
            node = node[token]
        elif isinstance(node, list):
            assert token.isdigit(), f"pointer {pointer!r}: {token!r} is not an index"
            index = int(token)
            assert index < len(node), f"pointer {pointer!r}: index {index} out of range"
            node = node[index]
        else:
            raise AssertionError(f"pointer {pointer!r} goes below a scalar at {token!r}")
    return node


def check_parse_error(exc: InputError, document: Any) -> None:
    """A parse error names a JSON pointer that exists in the document it complains about."""
    assert isinstance(exc.pointer, str), f"pointer is {exc.pointer!r} for: {exc.message}"
    resolve_pointer(document, exc.pointer)
    assert exc.message
    str(exc)  # formatting the error must not fail either


def _no_constants(name: str) -> Any:
    raise AssertionError(f"the JSON report contains {name}")


def check_run(trace: Trace, policy: Policy, fail_under: float = 70.0) -> None:
    """Validate and render; check the report's invariants. InputError may escape."""
    report = Validator(policy, fail_under).validate(trace)
    step_ids = {step.step_id for step in trace.steps}
    assert 0.0 <= report.score <= 100.0, report.score
    has_error = any(f.severity == "error" for f in report.findings)
    if has_error:
        assert report.passed is False
    # the documented pass rule, restated: no error finding and score >= fail_under
    assert report.passed == (not has_error and report.score >= fail_under)
    for finding in report.findings:
        assert finding.rule_id in RULES, finding.rule_id
        assert finding.category == RULES[finding.rule_id].category
        assert finding.severity in SEVERITIES
        assert finding.step_id is None or finding.step_id in step_ids, finding
    for category in report.categories:
        assert 0.0 <= category.score <= 100.0, category
    run = RunReport((report,), (), policy.policy_id, policy.sha256, "test")
    text = render_json(run)
    # strict JSON: no NaN or Infinity may reach a report
    json.loads(text, parse_constant=_no_constants)
    render_console(run)


def parse_and_check(trace_doc: Any, policy_doc: Any) -> None:
    """The whole pipeline below the CLI; only InputError may escape, with a valid pointer."""
    try:
        policy = Policy.from_dict(policy_doc)
    except InputError as exc:
        check_parse_error(exc, policy_doc)
        return
    try:
        trace = Trace.from_dict(trace_doc)
    except InputError as exc:
        check_parse_error(exc, trace_doc)
        return
    try:
        check_run(trace, policy)
    except InputError as exc:  # allowed: values too deep to walk, totals too large
        check_validation_error(exc)


# the only reasons validation may refuse a trace that parsed
VALIDATION_REFUSALS = ("nested too deeply", "add up to")


def check_validation_error(exc: InputError) -> None:
    """Validation may refuse a trace that parsed (too deep, totals too large), cleanly."""
    note(f"validation refused the trace: {exc}")
    assert any(reason in exc.message for reason in VALIDATION_REFUSALS), exc.message
    assert exc.pointer is None or exc.pointer == "" or exc.pointer.startswith("/")
    assert exc.message
    str(exc)


# ---------------------------------------------------------------------------------------------
# Strategies: arbitrary JSON

# Every code point, lone surrogates included, plus hand-picked nasty strings.
any_char = st.characters(exclude_categories=())
nasty_strings = st.sampled_from(
    [
        "",
        " ",
        "\ud800",
        "a\udfffb",
        "\x00",
        "\x1b[31mred\x1b[0m",
        "\u202eevil",
        "\ufeff",
        "~0/~1",
        "NaN",
        "1e400",
        "tool_call",
        "model_response",
        "error",
        "ok",
    ]
)
strings = st.one_of(st.text(any_char, max_size=20), nasty_strings)
huge_ints = st.one_of(
    st.integers(min_value=2**1000, max_value=2**4000),
    st.sampled_from([2**63, 2**64 + 1, 10**308, 10**309, -(10**400), int("9" * 4000)]),
    st.integers(min_value=-(2**1100), max_value=-(2**1000)),
)
numbers = st.one_of(
    st.integers(),
    huge_ints,
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0, -0.0, 1.0, 5e-324, 1.7976931348623157e308, -1.7976931348623157e308]),
)
json_leaves = st.one_of(st.none(), st.booleans(), numbers, strings)

TRACE_KEYS = ["schema_version", "trace_id", "agent_name", "workflow", "steps", "source", "metadata"]
STEP_KEYS = [
    "step_id",
    "type",
    "tool_name",
    "arguments",
    "output",
    "text",
    "citations",
    "requires_grounding",
    "status",
    "error",
    "latency_ms",
    "cost_usd",
    "input_tokens",
    "output_tokens",
    "metadata",
]
POLICY_KEYS = [
    "schema_version",
    "policy_id",
    "allow_unlisted_tools",
    "allowed_tools",
    "budgets",
    "unsafe_patterns",
    "grounding",
    "sequence",
    "error_handling",
    "completion",
    "required_arguments",
    "optional_arguments",
    "max_calls",
    "min_calls",
    "side_effect",
    "type",
    "enum",
    "pattern",
    "min",
    "max",
    "max_total_latency_ms",
    "max_total_tokens",
    "min_citation_coverage",
    "required_tools",
    "call_order",
    "max_attempts",
    "max_steps",
]
keys = st.one_of(st.sampled_from(TRACE_KEYS + STEP_KEYS + POLICY_KEYS), strings)

json_values = st.recursive(
    json_leaves,
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.dictionaries(keys, children, max_size=6),
    ),
    max_leaves=30,
)


@FUZZ
@given(json_values)
def test_arbitrary_json_to_from_dict(value: Any) -> None:
    for parse in (Trace.from_dict, Step.from_dict, Policy.from_dict):
        try:
            parse(value)
        except InputError as exc:
            check_parse_error(exc, value)


@LIGHT
@given(st.dictionaries(st.sampled_from(TRACE_KEYS), json_values, min_size=3))
def test_arbitrary_trace_shaped_objects(value: dict[str, Any]) -> None:
    # objects that use the real keys get past the first type checks more often
    try:
        Trace.from_dict(value)
    except InputError as exc:
        check_parse_error(exc, value)


@LIGHT
@given(st.dictionaries(st.sampled_from(STEP_KEYS), json_values, min_size=2), st.text(max_size=5))
def test_arbitrary_step_shaped_objects(value: dict[str, Any], prefix: str) -> None:
    # a pointer prefix must be kept as given: errors are reported below it
    base = "/steps/" + str(len(prefix))
    try:
        Step.from_dict(value, pointer=base)
    except InputError as exc:
        error = exc
    else:
        return
    # the error must point below the prefix, at something that exists in the step
    check_parse_error(error, {"steps": [None] * len(prefix) + [value]})
    assert f"{error.pointer}/".startswith(f"{base}/"), error.pointer


# ---------------------------------------------------------------------------------------------
# Strategies: mostly-valid traces and policies, to reach the rules

TOOLS = ["search", "refund", "notify", "lookup", "delete"]
ARG_NAMES = ["q", "amount", "id", "channel", "x"]
SAFE_PATTERNS = ["secret", r"\bpassword\s*[:=]", "ignore (all|previous) instructions", "[0-9]{16}"]
REGEXES = ["[A-Z]+", r"\d{3}", ".*", "ab|cd", "(?:x)+"]

type_names = st.sampled_from(["str", "int", "float", "bool", "list", "dict", "any"])
finite_numbers = st.one_of(
    st.integers(min_value=-(10**6), max_value=10**6),
    st.floats(allow_nan=False, allow_infinity=False),
)


# Values are mostly valid, with the edge cases (the largest floats, integers beyond a float,
# 4300-digit integers) mixed in and a few invalid ones, so most documents reach the rules.
def mostly(usual: st.SearchStrategy[Any], rare: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``usual`` values, and ``rare`` ones about one time in twenty."""
    # 7, not 0: hypothesis draws the bounds of a range far more often than 1 in 20
    return st.integers(0, 19).flatmap(lambda n: rare if n == 7 else usual)


metric_values = mostly(
    st.one_of(
        st.none(), st.integers(min_value=0, max_value=10**6), st.floats(min_value=0, max_value=1e6)
    ),
    st.sampled_from(
        [1e308, 1.7976931348623157e308, 10**308, 1e-300, 5e-324, 10**309, 2**4000, -1, -0.5]
    ),
)
token_values = mostly(
    st.one_of(st.none(), st.integers(min_value=0, max_value=10**5), st.just(4.0)),
    st.sampled_from([1e300, 2**63, 10**400, int("9" * 4300), -1, 2.5]),
)
budget_values = mostly(
    st.one_of(
        st.none(), st.integers(min_value=0, max_value=10**4), st.floats(min_value=0, max_value=1e4)
    ),
    st.sampled_from([1e308, 10**308, 10**309, 2**4000, -1]),
)
ENUM_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "str": strings,
    "int": st.one_of(st.integers(), huge_ints),
    "float": finite_numbers,
    "bool": st.booleans(),
    "list": st.lists(json_leaves, max_size=2),
    "dict": st.dictionaries(strings, json_leaves, max_size=2),
    "any": json_leaves,
}


@st.composite
def arg_specs(draw: st.DrawFn) -> Any:
    kind = draw(type_names)
    if draw(st.booleans()):
        return kind
    spec: dict[str, Any] = {"type": kind}
    if draw(st.booleans()):
        spec["enum"] = draw(st.lists(ENUM_VALUES[kind], min_size=1, max_size=4))
    if kind in ("str", "any") and draw(st.booleans()):
        spec["pattern"] = draw(st.sampled_from(REGEXES))
    if kind in ("int", "float", "any") and draw(st.booleans()):
        low, high = sorted(draw(st.lists(finite_numbers, min_size=2, max_size=2)))
        if draw(st.booleans()):
            spec["min"] = low
        if draw(st.booleans()):
            spec["max"] = high
    return spec


@st.composite
def policies(draw: st.DrawFn) -> dict[str, Any]:
    tools = draw(st.lists(st.sampled_from(TOOLS), unique=True, max_size=5))
    allowed: dict[str, Any] = {}
    for tool in tools:
        required = draw(st.lists(st.sampled_from(ARG_NAMES), unique=True, max_size=3))
        optional = [
            a for a in draw(st.lists(st.sampled_from(ARG_NAMES), max_size=2)) if a not in required
        ]
        schema: dict[str, Any] = {
            "required_arguments": {a: draw(arg_specs()) for a in required},
            "optional_arguments": {a: draw(arg_specs()) for a in dict.fromkeys(optional)},
            "side_effect": draw(st.booleans()),
        }
        if draw(st.booleans()):
            low, high = sorted(draw(st.lists(st.integers(0, 4), min_size=2, max_size=2)))
            schema["min_calls"], schema["max_calls"] = low, high
        allowed[tool] = schema
    allow_unlisted = draw(st.booleans())
    named = TOOLS if allow_unlisted else tools
    required_tools = (
        draw(st.lists(st.sampled_from(named), unique=True, max_size=3)) if named else []
    )
    forbidden = [
        t
        for t in draw(st.lists(st.sampled_from(TOOLS), unique=True, max_size=2))
        if t not in required_tools
    ]
    order = draw(st.lists(st.sampled_from(named), unique=True, max_size=4)) if named else []
    policy: dict[str, Any] = {
        "schema_version": draw(st.sampled_from(["1", "1.0", 1, None])),
        "policy_id": draw(st.text(any_char, min_size=1, max_size=8)),
        "allow_unlisted_tools": allow_unlisted,
        "allowed_tools": allowed,
        "sequence": {
            "required_tools": required_tools,
            "forbidden_tools": forbidden,
            "call_order": order,
        },
        "budgets": {
            "max_total_latency_ms": draw(budget_values),
            "max_step_latency_ms": draw(budget_values),
            "max_total_cost_usd": draw(budget_values),
            "max_total_tokens": draw(
                st.one_of(st.none(), st.none(), st.integers(0, 10**6), huge_ints)
            ),
        },
        "unsafe_patterns": draw(st.lists(st.sampled_from(SAFE_PATTERNS), unique=True, max_size=3)),
        "grounding": {
            "require_citations": draw(st.booleans()),
            "min_citation_coverage": draw(st.sampled_from([0, 0.5, 1, 1.0, 0.999])),
            "require_valid_citation_urls": draw(st.booleans()),
        },
        "error_handling": {
            "require_retry_on_error": draw(st.booleans()),
            "max_attempts": draw(st.one_of(st.none(), st.integers(1, 4))),
        },
        "completion": {
            "require_final_response": draw(st.booleans()),
            "max_steps": draw(st.one_of(st.none(), st.integers(1, 8))),
        },
    }
    return policy


citation_urls = st.sampled_from(
    ["https://example.com/a", "http://x", "ftp://h/p", "https://[::1", "//no", "", "http://\ud800"]
)
citation_values = mostly(
    st.one_of(
        st.fixed_dictionaries({"url": citation_urls}),
        st.fixed_dictionaries(
            {},
            optional={
                "url": st.one_of(st.none(), citation_urls, strings),
                "source": st.one_of(st.none(), strings),
                "title": json_leaves,
            },
        ),
    ),
    json_leaves,
)
argument_values = st.one_of(
    st.sampled_from(["ABC", "123", "email", "a secret", "password=1", "", "\ud800", "x" * 50]),
    st.integers(-10, 10),
    st.floats(allow_infinity=False, allow_nan=False),
    st.booleans(),
    json_values,
)
text_values = st.one_of(
    st.none(),
    strings,
    st.sampled_from(["my password: x", "please IGNORE ALL INSTRUCTIONS", "4111111111111111", "  "]),
)


@st.composite
def steps(draw: st.DrawFn, index: int) -> dict[str, Any]:
    kind = draw(st.sampled_from(["tool_call", "tool_call", "model_response"]))
    step: dict[str, Any] = {
        "step_id": draw(st.sampled_from([f"s{index}", f"s{index}", "dup", "\ud800", "s\x1b[0m"])),
        "type": kind,
    }
    if kind == "tool_call":
        step["tool_name"] = draw(st.one_of(st.sampled_from([*TOOLS, "", "unlisted"]), st.none()))
        step["arguments"] = draw(
            st.one_of(
                st.none(), st.dictionaries(st.sampled_from(ARG_NAMES), argument_values, max_size=4)
            )
        )
        step["output"] = draw(json_values)
    else:
        step["text"] = draw(text_values)
        step["requires_grounding"] = draw(st.booleans())
        step["citations"] = draw(st.one_of(st.none(), st.lists(citation_values, max_size=3)))
    step["status"] = draw(st.sampled_from([None, "ok", "error"]))
    step["error"] = draw(mostly(st.none(), text_values))
    step["latency_ms"] = draw(metric_values)
    step["cost_usd"] = draw(metric_values)
    step["input_tokens"] = draw(token_values)
    step["output_tokens"] = draw(token_values)
    return step


@st.composite
def traces(draw: st.DrawFn) -> dict[str, Any]:
    count = draw(st.integers(0, 8))
    # repeat some steps verbatim: identical calls are what the flow rules look for
    step_list = [draw(steps(i)) for i in range(count)]
    for _ in range(draw(st.integers(0, 2))):
        if step_list:
            step_list.append(copy.deepcopy(draw(st.sampled_from(step_list))))
    return {
        "schema_version": "1",
        "trace_id": draw(st.text(any_char, min_size=1, max_size=8)),
        "agent_name": draw(strings),
        "workflow": draw(strings),
        "steps": step_list,
        "metadata": draw(st.one_of(st.none(), st.dictionaries(keys, json_leaves, max_size=2))),
    }


@FUZZ
@given(traces(), policies(), st.sampled_from([0.0, 50.0, 70.0, 99.5, 100.0]))
def test_mostly_valid_traces_validate_cleanly(
    trace_doc: dict[str, Any], policy_doc: dict[str, Any], fail_under: float
) -> None:
    try:
        policy = Policy.from_dict(policy_doc)
    except InputError as exc:
        note(f"policy rejected: {exc}")
        check_parse_error(exc, policy_doc)
        return
    try:
        trace = Trace.from_dict(trace_doc)
    except InputError as exc:
        note(f"trace rejected: {exc}")
        check_parse_error(exc, trace_doc)
        return
    try:
        check_run(trace, policy, fail_under)
    except InputError as exc:
        check_validation_error(exc)


_SAMPLE = """
import sys
from hypothesis import given, settings
from agent_reliability_harness.errors import InputError
from agent_reliability_harness.model.policy import Policy
from agent_reliability_harness.model.trace import Trace
from test_fuzz import policies, traces

outcomes = []

@settings(max_examples=60, deadline=None, database=None, derandomize=True)
@given(policies(), traces())
def sample(policy_doc, trace_doc):
    try:
        Policy.from_dict(policy_doc)
        Trace.from_dict(trace_doc)
    except InputError:
        outcomes.append(False)
    else:
        outcomes.append(True)

sample()
print(sum(outcomes), len(outcomes))
"""


def test_generated_policies_are_mostly_valid() -> None:
    # A guard on the strategy itself: if most generated policies were rejected, the property
    # above would only exercise the parser. Count over a fixed sample of examples, in a process
    # of its own: Hypothesis also draws constants from the modules loaded so far, so in this
    # process the sample would depend on which tests ran before it.
    done = subprocess.run(
        [sys.executable, "-c", _SAMPLE],
        cwd=Path(__file__).parent,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    parsed, total = map(int, done.stdout.split())
    assert total == 60
    assert parsed >= total // 3, f"{parsed} of {total} parsed"


# ---------------------------------------------------------------------------------------------
# Mutations of real data


@cache
def _corpus() -> tuple[tuple[str, Any, Any], ...]:
    """(name, trace, policy) from the 34 reference cases and the sample traces."""
    items: list[tuple[str, Any, Any]] = []
    for path in sorted(CASES.glob("*.json")):
        case = json.loads(path.read_text(encoding="utf-8"))
        items.append((path.name, case["trace"], case["policy"]))
    assert len(items) == 34, f"expected the 34 reference cases, found {len(items)}"
    repo_policy = json.loads((SAMPLES / "policy_trajectory.json").read_text(encoding="utf-8"))
    for path in sorted((SAMPLES / "traces").iterdir()):
        text = path.read_text(encoding="utf-8")
        docs = (
            [json.loads(line) for line in text.splitlines() if line.strip()]
            if path.suffix == ".jsonl"
            else [json.loads(text)]
        )
        items.extend((f"{path.name}#{i}", doc, repo_policy) for i, doc in enumerate(docs))
    reference_policy = json.loads(
        (REFERENCE / "samples" / "policy.json").read_text(encoding="utf-8")
    )
    items.extend(
        (path.name, json.loads(path.read_text(encoding="utf-8")), reference_policy)
        for path in sorted(REFERENCE_TRACES.glob("*.json"))
    )
    return tuple(items)


def _containers(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Paths of every list and object inside ``value`` (the root included)."""
    found: list[tuple[Any, ...]] = []
    if isinstance(value, dict):
        found.append(path)
        for key, child in value.items():
            found.extend(_containers(child, (*path, key)))
    elif isinstance(value, list):
        found.append(path)
        for index, child in enumerate(value):
            found.extend(_containers(child, (*path, index)))
    return found


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        value = value[key]
    return value


other_types = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from([-1, -0.5, 10**400, 1e308, 2**63, 0.1, -(10**30), 4.0]),
    st.sampled_from(["", "\ud800", "\udfff\ud800", "\x00\x1b[2J", "x" * 200]),
    # fresh containers each time: a mutation may later change them in place
    st.builds(list),
    st.builds(dict),
    st.builds(lambda: [[[[]]]]),
)


def _mutate(data: st.DataObject, doc: Any) -> Any:
    doc = copy.deepcopy(doc)
    for _ in range(data.draw(st.integers(1, 4), label="mutations")):
        containers = _containers(doc) or [()]
        path = data.draw(st.sampled_from(containers), label="at")
        node = _get(doc, path) if path or isinstance(doc, dict | list) else doc
        if not isinstance(node, dict | list) or not node:
            if isinstance(node, dict):
                node["junk"] = data.draw(other_types)
            continue
        keys_ = list(node) if isinstance(node, dict) else list(range(len(node)))
        key = data.draw(st.sampled_from(keys_), label="key")
        op = data.draw(
            st.sampled_from(
                ["delete", "retype", "junk", "truncate", "duplicate", "number", "surrogate"]
            ),
            label="op",
        )
        value = node[key]
        if op == "delete":
            del node[key]
        elif op == "retype":
            node[key] = data.draw(other_types)
        elif op == "junk" and isinstance(node, dict):
            node[data.draw(strings, label="junk key")] = data.draw(json_values)
        elif op == "truncate" and isinstance(value, list):
            del value[data.draw(st.integers(0, len(value)), label="keep") :]
        elif op == "duplicate" and isinstance(node, list):
            node.insert(key, copy.deepcopy(value))
        elif op == "number" and isinstance(value, int | float) and not isinstance(value, bool):
            node[key] = data.draw(
                st.sampled_from([-value, 10**400, -(10**309), 2**64, 1e308, 0.5, -0.0])
            )
        elif op == "surrogate" and isinstance(value, str):
            node[key] = value[: len(value) // 2] + "\ud83d" + value[len(value) // 2 :]
        else:
            node[key] = data.draw(other_types)
    return doc


def test_mutated_reference_data_only_raises_input_errors() -> None:
    require_shared(CASES)
    corpus = _corpus()

    @FUZZ
    @given(st.data())
    def run(data: st.DataObject) -> None:
        name, trace_doc, policy_doc = data.draw(st.sampled_from(corpus), label="case")
        note(name)
        if data.draw(st.booleans(), label="mutate trace"):
            trace_doc = _mutate(data, trace_doc)
        if data.draw(st.integers(0, 3), label="mutate policy") == 0:
            policy_doc = _mutate(data, policy_doc)
        parse_and_check(trace_doc, policy_doc)
        # the same document through the strict decoder: text in, what json.loads gives (not
        # always trace_doc: a drawn pair of surrogates "\ud83d\udc00" comes back as one character)
        text = json.dumps(trace_doc, ensure_ascii=data.draw(st.booleans(), label="ascii"))
        try:
            assert loads(text) == json.loads(text)
        except InputError as exc:  # e.g. an integer beyond the interpreter's digit limit
            note(str(exc))

    run()


def test_unmutated_corpus_validates() -> None:
    # the baseline of the mutation test: every real document parses and validates as it is
    require_shared(CASES)
    for name, trace_doc, policy_doc in _corpus():
        try:
            check_run(Trace.from_dict(trace_doc), Policy.from_dict(policy_doc))
        except InputError as exc:  # pragma: no cover - a failure message, not a branch
            raise AssertionError(f"{name}: {exc}") from None


byte_damage = st.sampled_from(
    [b"\xff", b"\x00", b"NaN", b"1e400", b"9" * 4400, b'"\\ud800"', b"[", b"{", b"}", b",", b"\r\n"]
)


def test_cli_survives_damaged_files(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Damaged bytes of real traces through ``arh validate``: exit 0 or 1, never a traceback."""
    require_shared(CASES)
    corpus = _corpus()
    root = tmp_path_factory.mktemp("damaged")
    policy = root / "policy.json"
    policy.write_text(json.dumps(corpus[0][2]), encoding="utf-8")

    @settings(FUZZ, max_examples=60)
    @given(st.data(), st.sampled_from([".json", ".jsonl"]))
    def run(data: st.DataObject, suffix: str) -> None:
        _, trace_doc, _ = data.draw(st.sampled_from(corpus), label="case")
        raw = bytearray(json.dumps(trace_doc).encode())
        for _ in range(data.draw(st.integers(1, 4), label="edits")):
            at = data.draw(st.integers(0, len(raw)), label="at")
            edit = data.draw(st.sampled_from(["cut", "insert", "end"]), label="edit")
            if edit == "cut":
                del raw[at : at + data.draw(st.integers(1, 8), label="length")]
            elif edit == "insert":
                raw[at:at] = data.draw(byte_damage, label="bytes")
            else:
                del raw[at:]
        path = root / f"trace{suffix}"
        path.write_bytes(bytes(raw))
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(["validate", "--policy", str(policy), str(path)])
        assert status in (0, 1, 3), err.getvalue()  # passed, failed, or an input error
        assert "Traceback" not in err.getvalue()
        assert all(line.startswith("error: ") for line in err.getvalue().splitlines())

    run()


# ---------------------------------------------------------------------------------------------
# Known crashes found by the properties above, kept as plain regression tests


def _trace(*step_list: dict[str, Any]) -> dict[str, Any]:
    return {"trace_id": "t", "agent_name": "a", "workflow": "w", "steps": list(step_list)}


def test_integer_too_large_for_a_float_is_an_input_error() -> None:
    doc = _trace({"step_id": "s1", "type": "tool_call", "tool_name": "x", "latency_ms": 10**400})
    with pytest.raises(InputError) as caught:
        Trace.from_dict(doc)
    assert caught.value.pointer == "/steps/0/latency_ms"
    with pytest.raises(InputError) as caught:
        Policy.from_dict({"policy_id": "p", "budgets": {"max_total_cost_usd": 10**400}})
    assert caught.value.pointer == "/budgets/max_total_cost_usd"
    with pytest.raises(InputError) as caught:
        Policy.from_dict(
            {
                "policy_id": "p",
                "allowed_tools": {"x": {"optional_arguments": {"n": {"min": -(10**400)}}}},
            }
        )
    assert caught.value.pointer == "/allowed_tools/x/optional_arguments/n/min"


@pytest.mark.parametrize("key", ["latency_ms", "cost_usd"])
def test_metric_sum_overflowing_a_float_is_an_input_error(key: str) -> None:
    # each value is finite, their sum is not (2 x 1e308 > 1.7976931348623157e308)
    doc = _trace(
        {"step_id": "s1", "type": "model_response", "text": "a", key: 1e308},
        {"step_id": "s2", "type": "model_response", "text": "b", key: 1e308},
    )
    policy = Policy.from_dict({"policy_id": "p"})
    trace = Trace.from_dict(doc)
    with pytest.raises(InputError, match=key) as caught:
        Validator(policy).validate(trace)
    assert caught.value.pointer == "/steps"


def test_huge_integer_argument_against_a_range_is_a_finding() -> None:
    policy = Policy.from_dict(
        {
            "policy_id": "p",
            "allowed_tools": {"x": {"required_arguments": {"n": {"type": "int", "max": 5}}}},
        }
    )
    trace = Trace.from_dict(
        _trace(
            {"step_id": "s1", "type": "tool_call", "tool_name": "x", "arguments": {"n": 10**400}}
        )
    )
    report = Validator(policy).validate(trace)
    assert [f.rule_id for f in report.findings] == ["ARH-SCH-009"]


def test_token_total_beyond_the_digit_limit_is_an_input_error() -> None:
    # three counts of 4300 nines each decode fine; their sum has 4301 digits, which Python
    # refuses to turn into text, so the total could not be reported
    big = int("9" * 4300)
    doc = _trace(
        *({"step_id": f"s{i}", "type": "model_response", "input_tokens": big} for i in range(3))
    )
    policy = Policy.from_dict({"policy_id": "p", "budgets": {"max_total_tokens": 1}})
    with pytest.raises(InputError, match="token counts"):
        Validator(policy).validate(Trace.from_dict(doc))


# ---------------------------------------------------------------------------------------------
# The strict decoder

json_alphabet = st.sampled_from(
    [*'{}[]",:0123456789.eE-+ \t\n\r\\/tfnulrsaINiy\ufeff\x00', "\ud800"]
)


def _check_decoder_error(exc: InputError, expected: str = "") -> None:
    assert expected in exc.message, exc
    assert exc.pointer is None or exc.pointer == "" or exc.pointer.startswith("/")
    for part in (exc.line, exc.column):
        assert part is None or (type(part) is int and part >= 1), (exc.line, exc.column)
    assert exc.message
    str(exc)


def _stdlib(text: str) -> Any:
    return json.loads(text.removeprefix("\ufeff"))


@FUZZ
@given(st.one_of(st.text(any_char), st.text(json_alphabet, max_size=60)))
def test_loads_arbitrary_text(text: str) -> None:
    try:
        value = loads(text)
    except InputError as exc:
        _check_decoder_error(exc)
        return
    # whatever the strict decoder accepts, the standard decoder reads the same way
    assert value == _stdlib(text)


@FUZZ
@given(json_values, st.sampled_from([None, 0, 2]), st.booleans())
def test_loads_round_trips_json_values(value: Any, indent: int | None, ascii_only: bool) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    try:
        decoded = loads(text)
    except InputError as exc:
        # the only legitimate refusal for json.dumps output: an integer over the digit limit
        _check_decoder_error(exc, "digits")
        return
    assert decoded == value


@FUZZ
@given(json_values, st.data())
def test_loads_damaged_json(value: Any, data: st.DataObject) -> None:
    text = json.dumps(value)
    cut = data.draw(st.integers(0, len(text)))
    insert = data.draw(st.text(json_alphabet, max_size=3))
    damaged = text[:cut] + insert + text[cut + data.draw(st.integers(0, 2)) :]
    try:
        decoded = loads(damaged)
    except InputError as exc:
        _check_decoder_error(exc)
        return
    assert decoded == _stdlib(damaged)


@FUZZ
@given(
    st.one_of(
        st.binary(max_size=200),
        st.sampled_from([b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff", b"\xff\xfe\x00\x00"]).flatmap(
            lambda bom: st.binary(max_size=40).map(lambda rest: bom + rest)
        ),
        st.text(any_char, max_size=40).map(lambda t: t.encode("utf-8", "surrogatepass")),
    )
)
def test_decode_bytes_arbitrary_bytes(data: bytes) -> None:
    try:
        text = decode_bytes(data)
    except InputError as exc:
        _check_decoder_error(exc)
        return
    body = data.removeprefix(b"\xef\xbb\xbf")
    assert text == body.decode("utf-8")
    try:
        loads(text)
    except InputError as exc:
        _check_decoder_error(exc)


def test_decoder_property_helpers_can_fail() -> None:
    # the pointer check must reject pointers that lead nowhere, or the properties prove nothing
    doc = {"a": [1, {"b/c": 2}]}
    assert resolve_pointer(doc, "/a/1/b~1c") == 2
    for pointer in ("/a/2", "/x", "/a/0/y", "a"):
        try:
            resolve_pointer(doc, pointer)
        except AssertionError:
            continue
        raise AssertionError(f"{pointer!r} should not resolve")
