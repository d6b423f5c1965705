"""The judge: rubric and judgment files, the deterministic rubric engine, arh validate --rubric
with --judge replay and live (against a fake API on loopback), and the calibration gate."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_reliability_harness.errors import InputError
from agent_reliability_harness.judge.engine import judge_deterministic
from agent_reliability_harness.judge.model import (
    CalibrationRecord,
    Confusion,
    JudgeInput,
    Judgment,
    find_calibration,
    gate,
    input_hash,
    judge_input,
    judgment_line,
    parse_calibration,
    parse_judgments,
    parse_rubric,
)
from agent_reliability_harness.model.trace import Trace
from judge_server import Reply, completion, fake_api, verdict

from conftest import SAMPLES, Run, load_json

FIXTURES = Path(__file__).parent / "fixtures" / "judge"
RUBRIC_FILE = FIXTURES / "rubric_deterministic.json"
MODEL_RUBRIC_FILE = FIXTURES / "rubric_model.json"
RUBRIC = parse_rubric(RUBRIC_FILE.read_text("utf-8"), "rubric_deterministic.json")
MODEL_RUBRIC = parse_rubric(MODEL_RUBRIC_FILE.read_text("utf-8"), "rubric_model.json")
POLICY = SAMPLES / "policy_trajectory.json"
TRACES = SAMPLES / "traces"
Arh = Callable[..., Run]


def _trace(name: str) -> Trace:
    return Trace.from_dict(load_json(TRACES / name))


def _record(kappa: float, *, version: str = "1", model: str = "deterministic") -> dict[str, Any]:
    return {
        "rubric": "rebooking-answer",
        "rubric_version": version,
        "model": model,
        "kappa": kappa,
        "interval": {
            "level": 0.95,
            "low": round(max(-1.0, kappa - 0.2), 2),
            "high": round(min(1.0, kappa + 0.2), 2),
        },
        "n": 52,
        "labels_sha256": "ab" * 32,
        "confusion": {
            "both_pass": 20,
            "judge_pass_label_fail": 3,
            "judge_fail_label_pass": 4,
            "both_fail": 25,
        },
    }


def _write(path: Path, value: object) -> Path:
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def _reports(path: Path) -> dict[str, dict[str, Any]]:
    return {r["trace_id"]: r for r in load_json(path)["reports"]}


def _judge_findings(report: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (f["rule_id"], f["severity"])
        for f in report["findings"]
        if f["rule_id"].startswith("ARH-JDG")
    ]


# ---------------------------------------------------------------------------------------------
# The files


def test_the_input_hash_is_the_sha256_of_canonical_json() -> None:
    seen = JudgeInput("Rebook me", "Done: é")
    # keys sorted, no spaces, UTF-8 not escaped (worked out by hand)
    expected = hashlib.sha256('{"answer":"Done: é","task":"Rebook me"}'.encode()).hexdigest()
    assert input_hash(seen) == expected
    assert (
        input_hash(JudgeInput(None, None))
        == hashlib.sha256(b'{"answer":null,"task":null}').hexdigest()
    )


def test_the_judge_sees_the_first_user_message_and_the_last_answer() -> None:
    trace = Trace.from_dict(
        {
            "trace_id": "t",
            "agent_name": "a",
            "workflow": "w",
            "metadata": {"task": "ignored: a user message is there"},
            "steps": [
                {"step_id": "u1", "type": "user_message", "text": "first"},
                {"step_id": "m1", "type": "model_response", "text": "draft"},
                {"step_id": "u2", "type": "user_message", "text": "second"},
                {"step_id": "m2", "type": "model_response", "text": "final"},
            ],
        }
    )
    assert judge_input(trace) == JudgeInput("first", "final")
    bare = Trace.from_dict(
        {
            "trace_id": "t",
            "agent_name": "a",
            "workflow": "w",
            "metadata": {"task": "meta"},
            "steps": [],
        }
    )
    assert judge_input(bare) == JudgeInput("meta", None)


@pytest.mark.parametrize(
    ("edit", "pointer", "message"),
    [
        ({"version": ""}, "/version", "a rubric version must be 1 to 64"),
        ({"pass_threshold": 1.5}, "/pass_threshold", "must be a number from 0 to 1"),
        ({"criteria": []}, "/criteria", "must be a non-empty array"),
        ({"prompt_template": "no answer here"}, "/prompt_template", "placeholder {answer}"),
        ({"prompt_template": "{answer} {reasoning}"}, "/prompt_template", "may use only"),
        ({"temperature": 0}, "/temperature", "unknown key"),
        ({"api_key_env": "MY KEY"}, "/api_key_env", "environment variable name"),
    ],
)
def test_a_bad_rubric_names_the_file_and_the_pointer(
    edit: dict[str, Any], pointer: str, message: str
) -> None:
    data = {**load_json(RUBRIC_FILE), **edit}
    with pytest.raises(InputError) as caught:
        parse_rubric(json.dumps(data), "r.json")
    assert caught.value.source == "r.json"
    assert caught.value.pointer == pointer
    assert message in caught.value.message


@pytest.mark.parametrize(
    ("criterion", "pointer", "message"),
    [
        (
            {"id": "a", "description": "d", "scale": {"min": 2, "max": 1}},
            "/criteria/1/scale/max",
            "greater than min",
        ),
        ({"id": "a", "description": "d", "weight": 0}, "/criteria/1/weight", "> 0"),
        (
            {"id": "a", "description": "d", "check": {"kind": "vibes"}},
            "/criteria/1/check/kind",
            "unknown check kind",
        ),
        (
            {"id": "a", "description": "d", "check": {"kind": "regex", "pattern": "("}},
            "/criteria/1/check/pattern",
            "invalid regular expression",
        ),
        (
            {"id": "a", "description": "d", "check": {"kind": "regex", "pattern": "(a+)+$"}},
            "/criteria/1/check/pattern",
            "exponential",
        ),
        (
            {"id": "a", "description": "d", "check": {"kind": "length"}},
            "/criteria/1/check",
            "needs 'min_chars'",
        ),
        (
            {"id": "a", "description": "d", "check": {"kind": "must_mention", "terms": []}},
            "/criteria/1/check/terms",
            "must not be empty",
        ),
        ({"id": "concise", "description": "d"}, "/criteria/1/id", "used twice"),
    ],
)
def test_a_bad_criterion_names_its_pointer(
    criterion: dict[str, Any], pointer: str, message: str
) -> None:
    data = load_json(RUBRIC_FILE)
    data["criteria"] = [data["criteria"][3], criterion]
    with pytest.raises(InputError) as caught:
        parse_rubric(json.dumps(data), "r.json")
    assert (caught.value.source, caught.value.pointer) == ("r.json", pointer)
    assert message in caught.value.message


def test_a_judgment_line_round_trips_and_bad_lines_do_not_stop_the_others() -> None:
    judgment = Judgment(
        "rebooking-answer", "1", "m", "0" * 64, "fail", (("a", 0.0), ("b", 2.0)), 0.5, "short", "t1"
    )
    line = judgment_line(judgment)
    assert line == (
        '{"confidence":0.5,"input_hash":"' + "0" * 64 + '","model":"m","rationale":"short",'
        '"rubric":"rebooking-answer","rubric_version":"1","scores":{"a":0,"b":2},'
        '"trace_id":"t1","verdict":"fail"}\n'
    )
    newer = judgment_line(Judgment("rebooking-answer", "1", "m", "0" * 64, "pass", (), 1.0))
    text = line + "\n{oops\n" + line.replace('"fail"', '"maybe"') + newer
    found, errors = parse_judgments(text, "j.jsonl")
    assert list(found.values()) == [
        Judgment("rebooking-answer", "1", "m", "0" * 64, "pass", (), 1.0)
    ]  # the later line of one key wins
    assert [(e.source, e.line, e.pointer) for e in errors] == [
        ("j.jsonl", 3, None),
        ("j.jsonl", 4, "/verdict"),
    ]


def test_a_calibration_record_is_checked() -> None:
    record = parse_calibration(json.dumps(_record(0.7)), "c.json")
    assert record == CalibrationRecord(
        "rebooking-answer",
        "1",
        "deterministic",
        0.7,
        (0.5, 0.9),
        52,
        "ab" * 32,
        Confusion(20, 3, 4, 25),
    )
    bad = {**_record(0.7), "n": 51}
    with pytest.raises(InputError) as caught:
        parse_calibration(json.dumps(bad), "c.json")
    assert (caught.value.source, caught.value.pointer) == ("c.json", "/n")
    outside = {**_record(0.7), "interval": {"level": 0.95, "low": 0.1, "high": 0.2}}
    with pytest.raises(InputError, match="must contain kappa"):
        parse_calibration(json.dumps(outside), "c.json")


def test_the_record_that_applies_is_the_last_of_the_same_rubric_version_and_model() -> None:
    first = parse_calibration(json.dumps(_record(0.7)), "a.json")
    second = parse_calibration(json.dumps(_record(0.4)), "b.json")
    other_version = parse_calibration(json.dumps(_record(0.9, version="2")), "c.json")
    other_model = parse_calibration(json.dumps(_record(0.9, model="m")), "d.json")
    records = [first, other_version, second, other_model]
    assert find_calibration(records, RUBRIC, "deterministic") is second
    assert find_calibration(records[:2], RUBRIC, "deterministic") is first
    assert find_calibration([other_version], RUBRIC, "deterministic") is None
    assert not gate(second, RUBRIC, "deterministic").gating
    assert gate(first, RUBRIC, "deterministic").gating
    # exactly 0.6 gates
    assert gate(
        parse_calibration(json.dumps(_record(0.6)), "e.json"), RUBRIC, "deterministic"
    ).gating
    assert not gate(None, RUBRIC, "deterministic").gating


# ---------------------------------------------------------------------------------------------
# The deterministic engine


@pytest.mark.parametrize(
    ("answer", "verdict", "scores", "rationale"),
    [
        (
            "Done: you are confirmed on UA2217. Your new ticket number is 016-1.",
            "pass",
            (1, 1, 1, 1),
            "every criterion's check holds",
        ),
        # ticket missing: (2 + 0 + 2 + 1) / 6 = 0.83 >= 0.8
        (
            "You are confirmed on UA2217 at 13:40.",
            "pass",
            (1, 0, 1, 1),
            "gives_ticket: the answer does not mention 'ticket number'",
        ),
        # a voucher: (2 + 1 + 0 + 1) / 6 = 0.67 < 0.8
        (
            "You are confirmed on UA2217, ticket number 016-1, and a $300 VOUCHER.",
            "fail",
            (1, 1, 0, 1),
            "no_unapproved_compensation: the answer mentions 'voucher'",
        ),
        ("ok", "fail", (0, 0, 1, 0), None),
    ],
)
def test_the_deterministic_engine(
    answer: str, verdict: str, scores: tuple[int, ...], rationale: str | None
) -> None:
    seen = JudgeInput("task", answer)
    judgment = judge_deterministic(RUBRIC, seen, input_hash(seen), "t")
    assert judgment.verdict == verdict
    assert tuple(int(s) for _, s in judgment.scores) == scores
    assert judgment.confidence == 1.0
    assert judgment.model == "deterministic"
    if rationale is not None:
        assert judgment.rationale == rationale


def test_no_answer_scores_the_low_end_of_every_criterion() -> None:
    judgment = judge_deterministic(RUBRIC, JudgeInput("task", None), "0" * 64)
    assert judgment.verdict == "fail"
    assert [s for _, s in judgment.scores] == [0, 0, 0, 0]


def test_json_object_check() -> None:
    data = load_json(RUBRIC_FILE)
    data["criteria"] = [
        {"id": "shape", "description": "d", "check": {"kind": "json_object", "keys": ["flight"]}}
    ]
    rubric = parse_rubric(json.dumps(data), "r.json")
    for answer, expected in [
        ('{"flight": "UA1"}', "pass"),
        ('{"seat": "1A"}', "fail"),
        ("[1]", "fail"),
        ("not json", "fail"),
    ]:
        assert judge_deterministic(rubric, JudgeInput(None, answer), "0" * 64).verdict == expected


# ---------------------------------------------------------------------------------------------
# arh validate --rubric


def test_an_uncalibrated_verdict_is_a_warning_and_says_why(arh: Arh, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    run = arh(
        "validate",
        "--policy",
        POLICY,
        TRACES / "rebook_prompt_injection.json",
        TRACES / "rebook_pass.json",
        "--rubric",
        RUBRIC_FILE,
        "--json-out",
        out,
    )
    reports = _reports(out)
    assert _judge_findings(reports["rebook-1003"]) == [("ARH-JDG-001", "warning")]
    assert _judge_findings(reports["rebook-1001"]) == []
    assert reports["rebook-1001"]["passed"] is True
    assert reports["rebook-1001"]["judge"]["verdict"] == "pass"
    judged = reports["rebook-1003"]["judge"]
    assert judged == {
        "verdict": "fail",
        "rubric": "rebooking-answer",
        "rubric_version": "1",
        "model": "deterministic",
        "input_hash": input_hash(judge_input(_trace("rebook_prompt_injection.json"))),
        "gating": False,
    }
    [finding] = [f for f in reports["rebook-1003"]["findings"] if f["rule_id"] == "ARH-JDG-001"]
    assert (
        "warning only: no calibration record for rubric rebooking-answer version 1"
        in finding["message"]
    )
    assert "no_unapproved_compensation 0/1" in finding["message"]
    assert "ARH-JDG-001" in run.out


def test_a_calibrated_verdict_is_an_error(arh: Arh, tmp_path: Path) -> None:
    record = _write(tmp_path / "cal.json", _record(0.72))
    out = tmp_path / "r.json"
    run = arh(
        "validate",
        "--policy",
        POLICY,
        TRACES / "rebook_pass.json",
        "--rubric",
        RUBRIC_FILE,
        "--calibration",
        record,
        "--json-out",
        out,
    )
    assert run.status == 0  # rebook-1001's answer passes the rubric
    run = arh(
        "validate",
        "--policy",
        POLICY,
        TRACES / "more_runs.jsonl",
        "--rubric",
        RUBRIC_FILE,
        "--calibration",
        record,
        "--json-out",
        out,
    )
    reports = _reports(out)
    # rebook-2041 passes every policy check, so the judge's error alone fails it
    assert _judge_findings(reports["rebook-2041"]) == [("ARH-JDG-001", "error")]
    assert reports["rebook-2041"]["passed"] is False
    assert reports["rebook-2041"]["judge"]["gating"] is True
    [finding] = [f for f in reports["rebook-2041"]["findings"] if f["rule_id"] == "ARH-JDG-001"]
    assert (
        "gating: rubric rebooking-answer version 1 judged by deterministic is calibrated at "
        "kappa 0.72 (95% interval 0.52 to 0.92, n=52) >= 0.6" in finding["message"]
    )
    assert run.status == 1


@pytest.mark.parametrize(
    ("record", "why"),
    [
        (_record(0.45), "is calibrated at kappa 0.45 (95% interval 0.25 to 0.65, n=52), below 0.6"),
        (_record(0.9, version="2"), "no calibration record for rubric rebooking-answer version 1"),
        (_record(0.9, model="gpt-x"), "no calibration record"),
    ],
    ids=["low-kappa", "other-version", "other-model"],
)
def test_a_record_that_does_not_gate_leaves_a_warning(
    arh: Arh, tmp_path: Path, record: dict[str, Any], why: str
) -> None:
    out = tmp_path / "r.json"
    run = arh(
        "validate",
        "--policy",
        POLICY,
        TRACES / "more_runs.jsonl",
        "--rubric",
        RUBRIC_FILE,
        "--calibration",
        _write(tmp_path / "cal.json", record),
        "--json-out",
        out,
    )
    report = _reports(out)["rebook-2041"]
    assert _judge_findings(report) == [("ARH-JDG-001", "warning")]
    assert report["passed"] is True
    assert why in report["findings"][-1]["message"]
    assert run.status == 1  # rebook-2042 fails its policy checks


def test_severity_cannot_make_an_uncalibrated_judge_fail_a_build(arh: Arh, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    arh(
        "validate",
        "--policy",
        POLICY,
        TRACES / "more_runs.jsonl",
        "--rubric",
        RUBRIC_FILE,
        "--severity",
        "ARH-JDG-001=error",
        "--json-out",
        out,
    )
    assert _judge_findings(_reports(out)["rebook-2041"]) == [("ARH-JDG-001", "warning")]
    arh(
        "validate",
        "--policy",
        POLICY,
        TRACES / "more_runs.jsonl",
        "--rubric",
        RUBRIC_FILE,
        "--ignore",
        "ARH-JDG-001",
        "--json-out",
        out,
    )
    assert _judge_findings(_reports(out)["rebook-2041"]) == []


def _model_judgment(trace: str, verdict_: str, scores: dict[str, float]) -> Judgment:
    digest = input_hash(judge_input(_trace(trace)))
    return Judgment(
        "helpful-answer",
        "2",
        "fake-judge-1",
        digest,
        verdict_,  # type: ignore[arg-type]
        tuple(scores.items()),
        0.9,
        "replayed",
    )


def test_replay_reads_the_judgment_file_and_a_missing_judgment_is_not_judged(
    arh: Arh, tmp_path: Path
) -> None:
    judgments = tmp_path / "judgments.jsonl"
    judgments.write_text(
        judgment_line(_model_judgment("rebook_pass.json", "fail", {"resolves": 0, "accurate": 1})),
        encoding="utf-8",
    )
    out = tmp_path / "r.json"
    run = arh(
        "validate",
        "--policy",
        POLICY,
        TRACES / "rebook_pass.json",
        TRACES / "rebook_double_rebooking.json",
        "--rubric",
        MODEL_RUBRIC_FILE,
        "--judgments",
        judgments,
        "--json-out",
        out,
    )
    reports = _reports(out)
    assert _judge_findings(reports["rebook-1001"]) == [("ARH-JDG-001", "warning")]
    assert "rationale: replayed" in reports["rebook-1001"]["findings"][-1]["message"]
    assert reports["rebook-1001"]["judge"]["verdict"] == "fail"
    assert _judge_findings(reports["rebook-1002"]) == [("ARH-JDG-002", "info")]
    assert reports["rebook-1002"]["judge"]["verdict"] == "not_judged"
    assert "not judged" in run.out
    again = tmp_path / "again.json"
    arh(
        "validate",
        "--policy",
        POLICY,
        TRACES / "rebook_pass.json",
        TRACES / "rebook_double_rebooking.json",
        "--rubric",
        MODEL_RUBRIC_FILE,
        "--judgments",
        judgments,
        "--json-out",
        again,
    )
    assert again.read_bytes() == out.read_bytes()


def test_live_calls_the_model_once_per_input_and_appends(
    arh: Arh, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARH_TEST_JUDGE_KEY", "sk-local")
    judgments = tmp_path / "judgments.jsonl"
    out = tmp_path / "r.json"
    with fake_api(
        verdict({"resolves": 2, "accurate": 1}, 0.95, "Confirmed."),
        verdict({"resolves": 0, "accurate": 0}, 0.6, "No flight given."),
    ) as api:
        run = arh(
            "validate",
            "--policy",
            POLICY,
            TRACES / "rebook_pass.json",
            TRACES / "rebook_prompt_injection.json",
            "--rubric",
            MODEL_RUBRIC_FILE,
            "--judge",
            "live",
            "--judgments",
            judgments,
            "--judge-base-url",
            api.url,
            "--json-out",
            out,
        )
        assert len(api.requests) == 2
        assert api.requests[0]["headers"]["Authorization"] == "Bearer sk-local"
        # a second live run finds both judgments in the file: no call
        arh(
            "validate",
            "--policy",
            POLICY,
            TRACES / "rebook_pass.json",
            TRACES / "rebook_prompt_injection.json",
            "--rubric",
            MODEL_RUBRIC_FILE,
            "--judge",
            "live",
            "--judgments",
            judgments,
            "--judge-base-url",
            api.url,
        )
        assert len(api.requests) == 2
    lines = judgments.read_text("utf-8").splitlines()
    assert [json.loads(line)["verdict"] for line in lines] == ["pass", "fail"]
    assert [json.loads(line)["trace_id"] for line in lines] == ["rebook-1001", "rebook-1003"]
    reports = _reports(out)
    assert reports["rebook-1001"]["judge"]["verdict"] == "pass"
    assert _judge_findings(reports["rebook-1003"])[0][0] == "ARH-JDG-001"
    # replay gives the live run's verdicts without a server
    replayed = tmp_path / "replayed.json"
    arh(
        "validate",
        "--policy",
        POLICY,
        TRACES / "rebook_pass.json",
        TRACES / "rebook_prompt_injection.json",
        "--rubric",
        MODEL_RUBRIC_FILE,
        "--judgments",
        judgments,
        "--json-out",
        replayed,
    )
    assert replayed.read_bytes() == out.read_bytes()
    assert run.status == 1  # rebook-1003 fails the policy


def test_live_judgment_errors_are_warnings_and_nothing_is_written(
    arh: Arh, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARH_TEST_JUDGE_KEY", "sk-local")
    judgments = tmp_path / "judgments.jsonl"
    out = tmp_path / "r.json"
    with fake_api(completion("I think it is fine."), Reply(400, b"{}")) as api:
        run = arh(
            "validate",
            "--policy",
            POLICY,
            TRACES / "rebook_pass.json",
            TRACES / "rebook_prompt_injection.json",
            "--rubric",
            MODEL_RUBRIC_FILE,
            "--judge",
            "live",
            "--judgments",
            judgments,
            "--judge-base-url",
            api.url,
            "--json-out",
            out,
        )
    reports = _reports(out)
    assert _judge_findings(reports["rebook-1001"]) == [("ARH-JDG-003", "warning")]
    assert "the model's reply is not JSON" in reports["rebook-1001"]["findings"][-1]["message"]
    assert reports["rebook-1001"]["judge"]["verdict"] == "error"
    assert reports["rebook-1001"]["passed"] is True
    assert "HTTP 400" in reports["rebook-1003"]["findings"][-1]["message"]
    assert not judgments.exists()
    assert run.status == 1


def test_live_needs_the_api_key(arh: Arh, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ARH_TEST_JUDGE_KEY", raising=False)
    run = arh(
        "validate",
        "--policy",
        POLICY,
        TRACES / "rebook_pass.json",
        "--rubric",
        MODEL_RUBRIC_FILE,
        "--judge",
        "live",
        "--judgments",
        tmp_path / "j.jsonl",
    )
    assert run.status == 2
    assert "ARH_TEST_JUDGE_KEY" in run.err


def test_bad_files_are_reported_with_file_and_pointer(arh: Arh, tmp_path: Path) -> None:
    rubric = _write(tmp_path / "rubric.json", {**load_json(RUBRIC_FILE), "pass_threshold": "high"})
    run = arh("validate", "--policy", POLICY, TRACES / "rebook_pass.json", "--rubric", rubric)
    assert run.status == 2
    assert f"invalid rubric: {rubric}: /pass_threshold: must be a finite number" in run.err
    record = _write(tmp_path / "cal.json", {**_record(0.7), "kappa": 2})
    run = arh(
        "validate",
        "--policy",
        POLICY,
        TRACES / "rebook_pass.json",
        "--rubric",
        RUBRIC_FILE,
        "--calibration",
        record,
    )
    assert run.status == 2
    assert f"{record}: /kappa: must be a number from -1 to 1" in run.err
    judgments = tmp_path / "judgments.jsonl"
    good = judgment_line(
        _model_judgment("rebook_pass.json", "pass", {"resolves": 2, "accurate": 1})
    )
    judgments.write_text('{"verdict": "pass"}\n' + good, encoding="utf-8")
    out = tmp_path / "r.json"
    run = arh(
        "validate",
        "--policy",
        POLICY,
        TRACES / "rebook_pass.json",
        "--rubric",
        MODEL_RUBRIC_FILE,
        "--judgments",
        judgments,
        "--json-out",
        out,
    )
    assert run.status == 3  # an input error; the good line is used
    assert f"{judgments}:1: missing required field 'rubric'" in run.err
    assert _reports(out)["rebook-1001"]["judge"]["verdict"] == "pass"
    run = arh(
        "validate",
        "--policy",
        POLICY,
        TRACES / "rebook_pass.json",
        "--rubric",
        MODEL_RUBRIC_FILE,
        "--judgments",
        tmp_path / "absent.jsonl",
    )
    assert run.status == 2
    assert "cannot use the judgment file" in run.err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--judgments", "j.jsonl"], "--judgments needs --rubric"),
        (["--judge", "live"], "--judge live needs --rubric"),
        (["--calibration", "c.json"], "--calibration needs --rubric"),
    ],
)
def test_judge_options_need_a_rubric(arh: Arh, extra: list[str], message: str) -> None:
    run = arh("validate", "--policy", POLICY, TRACES / "rebook_pass.json", *extra)
    assert run.status == 2
    assert message in run.err


def test_a_model_rubric_needs_a_judgment_file(arh: Arh) -> None:
    run = arh(
        "validate", "--policy", POLICY, TRACES / "rebook_pass.json", "--rubric", MODEL_RUBRIC_FILE
    )
    assert run.status == 2
    assert "needs --judgments FILE" in run.err
    run = arh(
        "validate",
        "--policy",
        POLICY,
        TRACES / "rebook_pass.json",
        "--rubric",
        MODEL_RUBRIC_FILE,
        "--judge-model",
        "deterministic",
    )
    assert run.status == 2
    assert "needs a check in every criterion" in run.err


def test_without_a_rubric_reports_are_unchanged(arh: Arh, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    arh("validate", "--policy", POLICY, TRACES, "--json-out", out)
    assert all("judge" not in r for r in load_json(out)["reports"])


def test_deterministic_live_appends_the_engines_judgments(arh: Arh, tmp_path: Path) -> None:
    judgments = tmp_path / "judgments.jsonl"
    shutil.copy(TRACES / "rebook_pass.json", tmp_path / "t.json")
    arh(
        "validate",
        "--policy",
        POLICY,
        tmp_path / "t.json",
        "--rubric",
        RUBRIC_FILE,
        "--judge",
        "live",
        "--judgments",
        judgments,
    )
    arh(
        "validate",
        "--policy",
        POLICY,
        tmp_path / "t.json",
        "--rubric",
        RUBRIC_FILE,
        "--judge",
        "live",
        "--judgments",
        judgments,
    )
    [line] = judgments.read_text("utf-8").splitlines()
    assert json.loads(line)["model"] == "deterministic"
