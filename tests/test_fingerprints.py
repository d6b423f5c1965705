"""Fingerprints that survive re-recording: `arh compare` on transcripts recorded again.

A new recording of the same runs gives every tool call a new provider id, so a converted
trace's step ids change while its steps do not. Converted traces record that
(``metadata.adapter.step_ids``), reports give their findings stable step references (the n-th
call of a tool), and compare matches them by reference. The expected findings below follow from
the policy by hand: docs/examples/adapters/policy_refund.json allows ``lookup_order`` and
``issue_refund`` (amount 0 to 100, a side effect), requires ``lookup_order`` and orders it
first.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_reliability_harness import Finding, Policy, RunReport, Trace
from agent_reliability_harness.adapters import RecordOptions, to_trace
from agent_reliability_harness.engine import Validator
from agent_reliability_harness.errors import InputError
from agent_reliability_harness.model.step_refs import declared_step_ids, step_refs
from agent_reliability_harness.regression.compare import diff_findings

from conftest import (
    REAL_TRACES,
    REFERENCE,
    ROOT,
    SAMPLES,
    Run,
    load_json,
    require_shared,
    schema_validator,
)

Arh = Callable[..., Run]

POLICY = ROOT / "docs" / "examples" / "adapters" / "policy_refund.json"
RERUNS = ROOT / "docs" / "examples" / "regression" / "reruns"
DAYS = ("monday", "tuesday", "wednesday")
ADAPTER_FIXTURES = ROOT / "tests" / "fixtures" / "adapters"
# (file name in the run folder, transcript): two OpenAI chat and two Anthropic transcripts
TRANSCRIPTS = {
    # openai-refund-001: looks the order up, refunds 42.5, answers; no finding
    "openai_refund.json": ADAPTER_FIXTURES / "openai-chat" / "refund.json",
    # refund-ORD-9: refunds 142.5, over the maximum of 100: ARH-SCH-009 at the refund call
    "openai_over.json": RERUNS / "monday" / "refund_ord9.json",
    # anthropic-error-001: calls fetch_page, which the policy does not allow (ARH-SCH-001 at
    # that call), and never lookup_order (ARH-SEQ-001, at the whole trace)
    "anthropic_error.json": ADAPTER_FIXTURES / "anthropic-messages" / "tool_error.json",
    # refund-claude-18: refunds again after a refund succeeded: ARH-FLW-003 at the third
    # issue_refund call (the first failed, the second is its retry)
    "anthropic_double.json": POLICY.parent / "exported" / "anthropic_refund.json",
}
# (trace, rule, step reference) of every finding at a step, worked out from the policy as above
FINDINGS_AT_STEPS = [
    ("anthropic-error-001", "ARH-SCH-001", "tool_call:fetch_page#1"),
    ("refund-ORD-9", "ARH-SCH-009", "tool_call:issue_refund#1"),
    ("refund-claude-18", "ARH-FLW-003", "tool_call:issue_refund#3"),
]
_ID_KEYS = ("id", "tool_call_id", "tool_use_id")


def _call_ids(value: Any) -> Iterator[str]:
    """The tool-call ids a transcript gives its calls: OpenAI ``tool_calls[].id`` and Anthropic
    ``tool_use`` blocks' ``id``."""
    if isinstance(value, dict):
        for call in value.get("tool_calls") or ():
            if isinstance(call, dict) and isinstance(call.get("id"), str):
                yield call["id"]
        if value.get("type") == "tool_use" and isinstance(value.get("id"), str):
            yield value["id"]
        for member in value.values():
            yield from _call_ids(member)
    elif isinstance(value, list):
        for item in value:
            yield from _call_ids(item)


def rerecord(transcript: Any, tag: str) -> Any:
    """The transcript as a new recording of the same run gives it: every tool-call id replaced
    by a fresh one, in the calls and in the results that name them."""
    fresh = {old: f"call_{tag}{n}" for n, old in enumerate(dict.fromkeys(_call_ids(transcript)))}

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                k: fresh.get(v, v) if k in _ID_KEYS and isinstance(v, str) else walk(v)
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [walk(item) for item in value]
        return value

    return walk(transcript)


def _write(path: Path, doc: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return path


def _record(folder: Path, tag: str | None = None) -> dict[str, Any]:
    """Write the transcripts into ``folder``: as they are, or recorded again (fresh ids)."""
    docs = {}
    for name, source in TRANSCRIPTS.items():
        doc = load_json(source)
        docs[name] = doc if tag is None else rerecord(doc, tag)
        _write(folder / name, docs[name])
    return docs


def _validate(arh: Arh, folder: Path, out: Path, *extra: str | Path) -> dict[str, Any]:
    run = arh("validate", "--policy", POLICY, folder, "--json-out", out, "--quiet", *extra)
    assert run.status in (0, 1), run.err
    assert run.err == ""
    data: dict[str, Any] = load_json(out)
    return data


def _compare(arh: Arh, baseline: Path, *args: str | Path) -> tuple[Run, dict[str, Any]]:
    out = baseline.parent / "compare.json"
    run = arh("compare", "--baseline", baseline, *args, "--json-out", out)
    return run, load_json(out)


def _at_steps(report: dict[str, Any]) -> list[tuple[str, str, str]]:
    return sorted(
        (r["trace_id"], f["rule_id"], f["step_ref"])
        for r in report["reports"]
        for f in r["findings"]
        if f["step_id"] is not None
    )


def _step_ids(report: dict[str, Any]) -> set[str]:
    return {f["step_id"] for r in report["reports"] for f in r["findings"] if f["step_id"]}


def test_the_same_runs_recorded_again_compare_as_pass(arh: Arh, tmp_path: Path) -> None:
    _record(tmp_path / "monday")
    _record(tmp_path / "tuesday", "x7")
    monday = _validate(arh, tmp_path / "monday", tmp_path / "monday.json")
    tuesday = _validate(arh, tmp_path / "tuesday", tmp_path / "tuesday.json")
    # two saved reports, and the candidate validated by compare itself
    saved = _compare(arh, tmp_path / "monday.json", "--candidate", tmp_path / "tuesday.json")
    direct = _compare(arh, tmp_path / "monday.json", "--policy", POLICY, tmp_path / "tuesday")
    for run, data in (saved, direct):
        assert run.status == 0, run.out
        assert "GATE: PASS (fail-on regressions)" in run.out
        summary = data["summary"]
        assert (summary["traces_compared"], summary["new_findings"]) == (4, 0)
        assert summary["resolved_findings"] == 0
        assert data["warnings"] == []
    # the same findings, at the same steps, whose ids all changed
    assert _step_ids(monday) == {"toolu_f1", "call_Qm42", "toolu_4"}
    assert _step_ids(monday).isdisjoint(_step_ids(tuesday))
    assert _at_steps(monday) == _at_steps(tuesday) == sorted(FINDINGS_AT_STEPS)
    assert {r["trace_id"]: r["step_ids"] for r in monday["reports"]} == {
        "anthropic-error-001": "mixed",  # toolu_f1, and m0-user, m3-text0 from positions
        "openai-refund-001": "mixed",
        "refund-ORD-9": "mixed",
        "refund-claude-18": "mixed",
    }


# what is injected into the new recording -> (file, trace, rule, step reference, status change)
INJECTED = {
    # the refund repeated after it succeeded: a duplicate side effect at the second refund
    "duplicate_refund": (
        "openai_refund.json",
        "openai-refund-001",
        "ARH-FLW-003",
        "tool_call:issue_refund#2",
        "pass->fail",
    ),
    # a tool the policy does not allow, called before everything else: no other step's
    # reference moves (they count calls per tool), so the baseline's FLW-003 still matches
    "fetch_first": (
        "anthropic_double.json",
        "refund-claude-18",
        "ARH-SCH-001",
        "tool_call:fetch_page#1",
        "unchanged",
    ),
}


@pytest.mark.parametrize("inject", INJECTED)
def test_a_regression_in_the_new_recording_is_exactly_one_new_finding(
    arh: Arh, tmp_path: Path, inject: str
) -> None:
    name, trace_id, rule_id, step_ref, status_change = INJECTED[inject]
    _record(tmp_path / "monday")
    docs = _record(tmp_path / "tuesday", "x7")
    doc = copy.deepcopy(docs[name])
    messages = doc["messages"]
    if inject == "duplicate_refund":  # before the final answer: the call again, and its result
        call = {
            "id": "call_again",
            "type": "function",
            "function": {
                "name": "issue_refund",
                "arguments": '{"order_id": "ORD-9", "amount": 42.5}',
            },
        }
        messages[-1:-1] = [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_again", "content": "refund issued"},
        ]
    else:  # after the user's request
        use = {"type": "tool_use", "id": "toolu_fetch", "name": "fetch_page", "input": {}}
        result = {"type": "tool_result", "tool_use_id": "toolu_fetch", "content": "<html>"}
        messages[1:1] = [
            {"role": "assistant", "content": [use]},
            {"role": "user", "content": [result]},
        ]
    _write(tmp_path / "tuesday" / name, doc)
    _validate(arh, tmp_path / "monday", tmp_path / "monday.json")
    run, data = _compare(arh, tmp_path / "monday.json", "--policy", POLICY, tmp_path / "tuesday")
    assert run.status == 1, run.out
    assert data["summary"]["new_findings"] == 1
    assert data["summary"]["resolved_findings"] == 0
    (delta,) = [t for t in data["traces"] if t["new_findings"] or t["resolved_findings"]]
    assert delta["status_change"] == status_change
    (found,) = delta["new_findings"]
    assert (found["trace_id"], found["rule_id"], found["step_ref"]) == (trace_id, rule_id, step_ref)
    reasons = data["gate"]["reasons"]
    assert reasons[0] == f"1 new error finding: {trace_id}:{rule_id}"
    assert len(reasons) == (2 if status_change == "pass->fail" else 1)


def test_a_native_trace_whose_author_renamed_a_step_behaves_as_in_0_2(
    arh: Arh, tmp_path: Path
) -> None:
    # rebook-1002 fails with ARH-FLW-003 at step s5b (README); its author renames that step
    policy = SAMPLES / "policy_trajectory.json"
    original = load_json(SAMPLES / "traces" / "rebook_double_rebooking.json")
    renamed = copy.deepcopy(original)
    (step,) = [s for s in renamed["steps"] if s["step_id"] == "s5b"]
    step["step_id"] = "s5-again"
    _write(tmp_path / "before" / "trace.json", original)
    _write(tmp_path / "after" / "trace.json", renamed)
    arh("validate", "--policy", policy, tmp_path / "before", "--json-out", tmp_path / "b.json")
    text = (tmp_path / "b.json").read_text(encoding="utf-8")
    assert '"step_ref"' not in text  # the report layout of 0.2.x
    assert '"step_ids"' not in text
    run, data = _compare(arh, tmp_path / "b.json", "--policy", policy, tmp_path / "after")
    # the fingerprint holds the step id, as in 0.2.x: one new and one resolved finding
    assert run.status == 1
    (delta,) = data["traces"]
    assert [(f["rule_id"], f["step_id"]) for f in delta["new_findings"]] == [
        ("ARH-FLW-003", "s5-again")
    ]
    assert [(f["rule_id"], f["step_id"]) for f in delta["resolved_findings"]] == [
        ("ARH-FLW-003", "s5b")
    ]
    assert all("step_ref" not in f for f in delta["new_findings"] + delta["resolved_findings"])
    # an exporter that makes step ids afresh for each run can say so, as adapters do
    for folder, doc in (("before", original), ("after", renamed)):
        _write(
            tmp_path / folder / "trace.json",
            doc | {"metadata": {"adapter": {"step_ids": "provider"}}},
        )
    arh("validate", "--policy", policy, tmp_path / "before", "--json-out", tmp_path / "b.json")
    run, data = _compare(arh, tmp_path / "b.json", "--policy", policy, tmp_path / "after")
    assert run.status == 0, run.out
    assert data["summary"]["new_findings"] == data["summary"]["resolved_findings"] == 0


def _as_0_2(report: dict[str, Any]) -> dict[str, Any]:
    """The report in the layout of arh 0.2.x: without the keys that version did not write."""
    old = copy.deepcopy(report)
    for key in ("harness", "policy", "input_errors"):
        old.pop(key)
    old["summary"].pop("input_errors")
    for entry in old["reports"]:
        for key in ("unrounded_score", "categories", "source_line", "not_applicable", "step_ids"):
            entry.pop(key, None)
        for finding in entry["findings"]:
            finding.pop("subject", None)
            finding.pop("step_ref", None)
    return old


def test_a_0_2_baseline_of_transcripts_still_compares(arh: Arh, tmp_path: Path) -> None:
    _record(tmp_path / "monday")
    _record(tmp_path / "tuesday", "x7")
    monday = _validate(arh, tmp_path / "monday", tmp_path / "monday.json")
    old = tmp_path / "old" / "baseline.json"
    _write(old, _as_0_2(monday))
    # the same recording: every finding matches by step id, as it did
    run, data = _compare(arh, old, "--policy", POLICY, tmp_path / "monday")
    assert run.status == 0, run.out
    assert data["summary"]["new_findings"] == data["summary"]["resolved_findings"] == 0
    # a new recording: a 0.2.x baseline has no step references, so its findings are matched by
    # step id as before (three new, three resolved), and the comparison says why and what to do
    run, data = _compare(arh, old, "--policy", POLICY, tmp_path / "tuesday")
    assert run.status == 1
    assert data["summary"]["new_findings"] == data["summary"]["resolved_findings"] == 3
    assert (
        "4 traces converted from transcripts have stable step references in the candidate "
        "report only, so their findings are matched by step id, which changes from one "
        "recording to the next: write the baseline report again with this version of arh, or "
        "pass --any-step"
    ) in data["warnings"]
    run, data = _compare(arh, old, "--policy", POLICY, tmp_path / "tuesday", "--any-step")
    assert run.status == 0, run.out
    assert data["summary"]["new_findings"] == data["summary"]["resolved_findings"] == 0
    assert not any("step references" in w for w in data["warnings"])


def test_reports_and_comparisons_of_converted_traces_match_their_schemas(
    arh: Arh, tmp_path: Path
) -> None:
    _record(tmp_path / "monday")
    monday = _validate(arh, tmp_path / "monday", tmp_path / "monday.json")
    assert list(schema_validator("report").iter_errors(monday)) == []
    docs = _record(tmp_path / "tuesday", "x7")
    doc = docs["openai_refund.json"]
    doc["messages"][2]["tool_calls"][0]["function"]["name"] = "delete_order"  # not allowed
    _write(tmp_path / "tuesday" / "openai_refund.json", doc)
    _, data = _compare(arh, tmp_path / "monday.json", "--policy", POLICY, tmp_path / "tuesday")
    assert any(f.get("step_ref") for t in data["traces"] for f in t["new_findings"])
    assert list(schema_validator("compare").iter_errors(data)) == []


def test_a_trace_saved_by_arh_convert_keeps_its_step_references(arh: Arh, tmp_path: Path) -> None:
    # the converted trace says where its step ids came from, so a canonical trace written by
    # `arh convert` is compared as the transcript is
    _record(tmp_path / "monday")
    run = arh("convert", tmp_path / "monday", "-o", tmp_path / "converted.jsonl")
    assert run.status == 0, run.err
    report = _validate(arh, tmp_path / "converted.jsonl", tmp_path / "converted.json")
    assert _at_steps(report) == sorted(FINDINGS_AT_STEPS)


def test_step_references_are_the_same_with_jobs(arh: Arh, tmp_path: Path) -> None:
    _record(tmp_path / "monday")
    _validate(arh, tmp_path / "monday", tmp_path / "one.json")
    _validate(arh, tmp_path / "monday", tmp_path / "two.json", "--jobs", "2")
    assert (tmp_path / "one.json").read_bytes() == (tmp_path / "two.json").read_bytes()
    assert _at_steps(load_json(tmp_path / "two.json")) == sorted(FINDINGS_AT_STEPS)


def test_sarif_fingerprints_survive_a_new_recording(arh: Arh, tmp_path: Path) -> None:
    _record(tmp_path / "monday")
    _record(tmp_path / "tuesday", "x7")

    def fingerprints(day: str) -> list[str]:
        out = tmp_path / f"{day}.sarif"
        arh("validate", "--policy", POLICY, tmp_path / day, "--sarif-out", out, "--quiet")
        results = load_json(out)["runs"][0]["results"]
        return sorted(r["partialFingerprints"]["arhFinding/v1"] for r in results)

    monday = fingerprints("monday")
    assert len(monday) == 4  # the three findings at steps, and ARH-SEQ-001 at a whole trace
    assert monday == fingerprints("tuesday")


def test_the_compare_page_shows_a_resolved_finding_at_its_step_of_the_new_recording(
    arh: Arh, tmp_path: Path
) -> None:
    _record(tmp_path / "monday")
    docs = _record(tmp_path / "tuesday", "x7")
    # refund-ORD-9 recorded again, refunding 92.5 instead of 142.5: its ARH-SCH-009 is resolved
    fixed = json.loads(json.dumps(docs["openai_over.json"]).replace("142.5", "92.5"))
    _write(tmp_path / "tuesday" / "openai_over.json", fixed)
    _validate(arh, tmp_path / "monday", tmp_path / "monday.json")
    page = tmp_path / "compare.html"
    arh("compare", "--baseline", tmp_path / "monday.json", "--policy", POLICY,
        tmp_path / "tuesday", "--html-out", page, "--quiet")  # fmt: skip
    text = page.read_text(encoding="utf-8")
    # the baseline's step call_Qm42 is call_x71 in this recording (the second call id of the
    # transcript, renamed in order): the resolved finding is in that step's entry of the timeline
    step = text.index(
        '<code>issue_refund</code> <span class="muted">step</span> <code>call_x71</code>'
    )
    resolved = text.index('<li class="finding error resolved">')
    assert step < resolved < text.index('<li class="step"', step)
    assert "no such step in the trace" not in text


def _ids_blanked(transcript: Any) -> Any:
    """The transcript with every tool-call id replaced by the same placeholder."""
    ids = set(_call_ids(transcript))

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                k: "<id>" if k in _ID_KEYS and isinstance(v, str) and v in ids else walk(v)
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [walk(item) for item in value]
        return value

    return walk(transcript)


def test_the_documented_recordings_differ_as_the_docs_say() -> None:
    # docs/regression-testing.md: Tuesday is Monday recorded again (only the call ids differ);
    # Wednesday too, except that refund-ORD-12 repeats its refund before its answer
    for name in ("refund_ord9.json", "refund_ord12.json"):
        monday, tuesday, wednesday = (load_json(RERUNS / day / name) for day in DAYS)
        ids = [set(_call_ids(doc)) for doc in (monday, tuesday, wednesday)]
        assert ids[0].isdisjoint(ids[1]), name
        assert ids[0].isdisjoint(ids[2]), name
        assert _ids_blanked(tuesday) == _ids_blanked(monday), name
        if name == "refund_ord9.json":
            assert _ids_blanked(wednesday) == _ids_blanked(monday)
        else:
            messages = _ids_blanked(wednesday)["messages"]
            assert messages[5:7] == [
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Let me make sure the refund went through."},
                    {"type": "tool_use", "id": "<id>", "name": "issue_refund",
                     "input": {"order_id": "ORD-12", "amount": 64.0}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "<id>", "content": "refund issued"},
                ]},
            ]  # fmt: skip
            assert messages[:5] + messages[7:] == _ids_blanked(monday)["messages"]


# -- the pieces --------------------------------------------------------------------------------


def _trace(steps: list[dict[str, Any]], metadata: Any = None) -> Trace:
    doc: dict[str, Any] = {"trace_id": "t", "agent_name": "", "workflow": "", "steps": steps}
    if metadata is not None:
        doc["metadata"] = metadata
    return Trace.from_dict(doc)


def test_step_refs_count_calls_per_tool_and_other_steps_per_type() -> None:
    kinds = [
        ("tool_call", "lookup"),
        ("model_response", None),
        ("tool_call", "refund"),
        ("tool_call", "lookup"),
        ("user_message", None),
        ("tool_call", None),
        ("model_response", None),
        ("tool_call", "refund"),
    ]
    steps = [
        {"step_id": f"s{i}", "type": kind} | ({"tool_name": name} if name else {})
        for i, (kind, name) in enumerate(kinds)
    ]
    assert step_refs(_trace(steps).steps) == [
        "tool_call:lookup#1",
        "model_response#1",
        "tool_call:refund#1",
        "tool_call:lookup#2",
        "user_message#1",
        "tool_call#1",
        "model_response#2",
        "tool_call:refund#2",
    ]


@pytest.mark.parametrize(
    ("metadata", "declared"),
    [
        (None, None),
        ({"adapter": {"missing": []}}, None),
        ({"adapter": {"step_ids": "provider"}}, "provider"),
        ({"adapter": {"step_ids": "generated"}}, "generated"),
        ({"adapter": {"step_ids": "mixed"}}, "mixed"),
        # metadata is free-form: anything else is ignored, never an error
        ({"adapter": {"step_ids": "random"}}, None),
        ({"adapter": {"step_ids": ["provider"]}}, None),
        ({"adapter": "provider"}, None),
    ],
)
def test_only_the_documented_origins_give_step_refs(metadata: Any, declared: str | None) -> None:
    trace = _trace([{"step_id": "s1", "type": "tool_call", "tool_name": "x"}], metadata)
    assert declared_step_ids(trace) == declared
    policy = Policy.from_dict({"policy_id": "p", "allowed_tools": {}})  # x is not allowed
    report = Validator(policy).validate(trace)
    (finding,) = report.findings
    assert report.step_ids == declared
    assert finding.step_ref == (None if declared is None else "tool_call:x#1")


def test_the_report_reader_keeps_step_refs_and_refuses_an_unknown_origin() -> None:
    finding = Finding("ARH-SCH-001", "error", "schema", "m", "call_1", step_ref="tool_call:x#1")
    entry = {
        "trace_id": "t", "passed": False, "score": 50.0, "step_ids": "mixed",
        "findings": [finding.to_dict()],
    }  # fmt: skip
    (report,) = RunReport.from_dict({"reports": [entry]}).reports
    assert (report.step_ids, report.findings) == ("mixed", (finding,))
    with pytest.raises(InputError) as caught:
        RunReport.from_dict({"reports": [entry | {"step_ids": "uuid"}]})
    assert caught.value.pointer == "/reports/0/step_ids"
    assert "must be one of: provider, generated, mixed" in caught.value.message


def test_matching_by_ref_ignores_the_step_ids() -> None:
    def found(step_id: str, key: str | None, rule: str = "ARH-FLW-003") -> Finding:
        return Finding(rule, "error", "flow", "m", step_id, subject="t", step_ref=key)

    base = [found("a1", "tool_call:t#2"), found("a2", "tool_call:t#3")]
    cand = [found("b1", "tool_call:t#2"), found("b2", "tool_call:t#4")]
    new, gone = diff_findings(base, cand, by_ref=True)
    assert ([f.step_id for f in new], [f.step_id for f in gone]) == (["b2"], ["a2"])
    new, gone = diff_findings(base, cand)  # by step id: nothing matches
    assert (len(new), len(gone)) == (2, 2)
    # findings without a key (a report that has none for them) are matched by their step ids
    new, gone = diff_findings([found("a1", None)], [found("a1", None)], by_ref=True)
    assert (new, gone) == ((), ())


def _cycle_transcript(tag: str) -> dict[str, Any]:
    """search_kb then open_article, three times: the cycle repeats 3 times in a row."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "What is the refund policy?"}]
    for round_ in range(3):
        for name, args in (("search_kb", '{"query": "refunds"}'), ("open_article", '{"id": 12}')):
            call_id = f"call_{tag}_{round_}_{name}"
            function = {"name": name, "arguments": args}
            messages += [
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": call_id, "function": function}],
                },
                {"role": "tool", "tool_call_id": call_id, "content": "..."},
            ]
    messages.append({"role": "assistant", "content": "Refunds are possible within 30 days."})
    return {"trace_id": "loop-1", "messages": messages}


def test_a_cycle_names_its_first_step_by_ref_in_a_converted_trace() -> None:
    policy = Policy.from_dict(
        {
            "schema_version": "1.1",
            "policy_id": "p",
            "allow_unlisted_tools": True,
            "loops": {"max_cycle_repeats": 2},
        }
    )
    validator = Validator(policy)
    subjects = []
    for tag in ("mon", "tue"):
        trace = to_trace(_cycle_transcript(tag), "openai-chat", RecordOptions())
        (finding,) = validator.validate(trace).findings
        assert finding.rule_id == "ARH-LOP-002"
        # the message still names the step by its id, the subject (part of the fingerprint) by
        # its reference: the cycle starts at the first search_kb call, and the third round's
        # open_article call completes repetition 3
        assert f"from step 'call_{tag}_0_search_kb'" in finding.message
        assert finding.step_ref == "tool_call:open_article#3"
        subjects.append(finding.subject)
    assert subjects == ["cycle search_kb -> open_article from tool_call:search_kb#1"] * 2


# -- real recordings ---------------------------------------------------------------------------


def test_reference_transcripts_recorded_again_compare_as_pass(arh: Arh, tmp_path: Path) -> None:
    fixtures = require_shared(REFERENCE / "tests" / "fixtures")
    for day, tag in (("monday", None), ("tuesday", "r2")):
        for source in sorted(fixtures.glob("*.json")):
            doc = load_json(source)
            _write(tmp_path / day / source.name, doc if tag is None else rerecord(doc, tag))
    monday = _validate(arh, tmp_path / "monday", tmp_path / "monday.json")
    assert len(_step_ids(monday)) >= 3  # findings at calls whose ids the new recording changes
    run, data = _compare(arh, tmp_path / "monday.json", "--policy", POLICY, tmp_path / "tuesday")
    assert run.status == 0, run.out
    assert data["summary"]["new_findings"] == data["summary"]["resolved_findings"] == 0


def test_tau_bench_runs_recorded_again_compare_as_pass(arh: Arh, tmp_path: Path) -> None:
    runs = require_shared(
        REAL_TRACES / "tau-bench" / "historical_trajectories" / "gpt-4o-airline.json"
    )
    records = load_json(runs)[:40]
    _write(tmp_path / "monday" / "runs.json", records)
    _write(
        tmp_path / "tuesday" / "runs.json", [rerecord(r, f"r{i}") for i, r in enumerate(records)]
    )
    options = ("--messages-at", "/traj", "--trace-id-at", "/task_id", "--trace-id-at", "/trial")
    policy = SAMPLES / "policies" / "tau-airline.json"
    for day in ("monday", "tuesday"):
        arh(
            "validate",
            "--policy",
            policy,
            *options,
            tmp_path / day,
            "--json-out",
            tmp_path / f"{day}.json",
        )
    monday = load_json(tmp_path / "monday.json")
    assert len(monday["reports"]) == 40
    assert len(_step_ids(monday)) >= 10  # confirmation and condition findings at write calls
    run, data = _compare(arh, tmp_path / "monday.json", "--candidate", tmp_path / "tuesday.json")
    assert run.status == 0, run.out
    assert data["summary"]["new_findings"] == data["summary"]["resolved_findings"] == 0
