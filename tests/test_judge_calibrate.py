"""``arh judge calibrate``: the hand-labels file, the calibration against a judge's verdicts, the
record, the exit statuses, and the shipped labels, rubric and record. Expected numbers are
worked out by hand in the comments."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_reliability_harness.judge.calibration import (
    LabelledItem,
    calibrate,
    check_item,
    parse_labels,
)
from agent_reliability_harness.judge.model import (
    Confusion,
    JudgeInput,
    Judgment,
    input_hash,
    judgment_line,
    parse_calibration,
    rubric_from_dict,
)

from conftest import REAL_TRACES, ROOT, Run, load_script

JUDGE = ROOT / "samples" / "judge"
SHIPPED_LABELS = JUDGE / "hand_labels.jsonl"
SHIPPED_RUBRIC = JUDGE / "final-answer-report.rubric.json"
SHIPPED_RECORD = JUDGE / "final-answer-report.deterministic.calibration.json"

# one criterion, checked by the deterministic engine: the answer says "ok"
RUBRIC: dict[str, Any] = {
    "rubric": "says-ok",
    "version": "2",
    "pass_threshold": 1.0,
    "criteria": [
        {"id": "ok", "description": "says ok", "check": {"kind": "regex", "pattern": "ok"}},
    ],
    "prompt_template": "Grade {answer}",
}


def _item(item_id: str, answer: str | None, label: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": item_id,
        "task": "t",
        "answer": answer,
        "rubric": "says-ok",
        "rubric_version": "2",
        "label": label,
        "criteria": {"ok": label},
        **extra,
    }


def _write(folder: Path, items: list[dict[str, Any]], rubric: dict[str, Any] = RUBRIC) -> Path:
    (folder / "rubric.json").write_text(json.dumps(rubric), encoding="utf-8")
    path = folder / "labels.jsonl"
    path.write_text("".join(json.dumps(i) + "\n" for i in items), encoding="utf-8")
    return path


# labels pass, pass, pass, fail, fail; the engine passes the answers that say "ok":
# pass, pass, fail, fail, fail. both_pass 2, judge fail/label pass 1, both_fail 2.
# po = 4/5; label pass .6, judge pass .4: pe = .6 x .4 + .4 x .6 = .48; kappa = .32/.52
AGREEING = [
    _item("a", "ok", "pass"),
    _item("b", "ok fine", "pass"),
    _item("c", "fine", "pass"),
    _item("d", "no", "fail"),
    _item("e", "nope", "fail"),
]
# the same but the engine passes "e" too: both_pass 2, fn 1, fp 1, both_fail 1.
# po = 3/5; judge pass .6: pe = .6 x .6 + .4 x .4 = .52; kappa = .08/.48 = 1/6
DISAGREEING = [*AGREEING[:4], _item("e", "ok?", "fail")]


def test_parse_labels_names_file_line_and_pointer() -> None:
    lines = [
        json.dumps(_item("a", "ok", "pass")),
        "",
        json.dumps(_item("b", "ok", "maybe")),
        "{not json",
        json.dumps({k: v for k, v in _item("c", "ok", "pass").items() if k != "answer"}),
        json.dumps(_item("a", "ok", "fail")),
        json.dumps(_item("d", None, "fail", criteria={"ok": 1})),
        json.dumps(_item("e", 5, "fail")),
    ]
    labels = parse_labels("\n".join(lines), "labels.jsonl")
    assert [i.item_id for i in labels.items] == ["a"]
    assert labels.items[0] == LabelledItem(
        "a", JudgeInput("t", "ok"), "says-ok", "2", "pass", (("ok", "pass"),), 1
    )
    shown = [str(e) for e in labels.errors]
    assert shown[0].startswith("labels.jsonl:3")
    assert "/label" in shown[0]
    assert "'maybe'" in shown[0]
    assert shown[1].startswith("labels.jsonl:4")
    assert "missing required field 'answer'" in shown[2]
    assert "labels.jsonl:6" in shown[3]
    assert "used on line 1 already" in shown[3]
    assert "/criteria/ok" in shown[4]
    assert "got number" in shown[4]
    assert "/answer" in shown[5]
    assert "string or null" in shown[5]
    assert len(shown) == 6


def test_check_item_against_the_rubric() -> None:
    rubric = rubric_from_dict(
        {
            **RUBRIC,
            "criteria": [
                {"id": "x", "description": "x", "check": {"kind": "regex", "pattern": "x"}},
                {"id": "y", "description": "y", "check": {"kind": "regex", "pattern": "y"}},
            ],
        }
    )
    good = LabelledItem("i", JudgeInput(None, "x"), "says-ok", "2", "fail", (("x", "fail"),), 1)
    assert check_item(good, rubric, "l") is None  # one criterion labelled: nothing implied
    unknown = LabelledItem("i", JudgeInput(None, "x"), "says-ok", "2", "pass", (("z", "pass"),), 4)
    problem = check_item(unknown, rubric, "l")
    assert problem is not None
    assert str(problem).startswith("l:4")
    assert "'z' is not one of" in str(problem)
    # both criteria pass, so under the threshold 1 the verdict is a pass, not a fail
    contradicts = LabelledItem(
        "i", JudgeInput(None, "x"), "says-ok", "2", "fail", (("x", "pass"), ("y", "pass")), 2
    )
    problem = check_item(contradicts, rubric, "l")
    assert problem is not None
    assert "contradicts" in str(problem)
    assert problem.pointer == "/label"


def _judgment(verdict: str, score: float | None = None) -> Judgment:
    scores = () if score is None else (("ok", score),)
    return Judgment("says-ok", "2", "m", "0" * 64, "pass" if verdict == "pass" else "fail", scores)


def test_calibrate_counts_by_hand() -> None:
    rubric = rubric_from_dict(RUBRIC)
    items = parse_labels("\n".join(json.dumps(i) for i in DISAGREEING), "l").items
    judgments: dict[str, Judgment | None] = {
        "a": _judgment("pass", 1),
        "b": _judgment("pass", 1),
        "c": _judgment("fail", 0),
        "d": _judgment("fail"),  # no criterion score: only the verdict counts
        "e": _judgment("pass", 1),
    }
    result = calibrate(rubric, "m", items, judgments, "f" * 64)
    assert result.confusion == Confusion(2, 1, 1, 1)
    assert result.kappa.value == pytest.approx(1 / 6)
    assert result.disagreements == (("c", "pass", "fail"), ("e", "fail", "pass"))
    # the criterion over the four judged items that have a score: a, b pass/pass, c pass/fail,
    # e fail/pass
    (ok,) = result.per_criterion
    assert ok.confusion == Confusion(2, 1, 1, 0)
    record = result.record
    assert record is not None
    assert record.key == ("says-ok", "2", "m")
    assert record.n == 5
    assert record.labels_sha256 == "f" * 64
    assert [e.to_dict() for e in record.per_criterion] == [
        {"criterion": "ok", "false_positives": 1, "false_negatives": 1, "n": 4}
    ]
    # an item without a judgment is left out, never counted as a pass
    judgments["e"] = None
    fewer = calibrate(rubric, "m", items, judgments, "f" * 64)
    assert fewer.not_judged == ("e",)
    assert fewer.confusion == Confusion(2, 0, 1, 1)


def test_undefined_kappa_makes_no_record() -> None:
    rubric = rubric_from_dict(RUBRIC)
    items = parse_labels(json.dumps(_item("a", "ok", "pass")), "l").items
    result = calibrate(rubric, "m", items, {"a": _judgment("pass", 1)}, "f" * 64)
    assert result.kappa.value is None
    assert result.record is None


def test_engine_kappa_over_the_gate_exits_0(arh: Callable[..., Run], tmp_path: Path) -> None:
    labels = _write(tmp_path, AGREEING)
    out = tmp_path / "record.json"
    run = arh("judge", "calibrate", "--labels", labels, "--rubric", tmp_path / "rubric.json",
              "-o", out)  # fmt: skip
    assert run.status == 0, run.err
    assert "Cohen's kappa 0.62" in run.out
    assert "label pass             2           1" in run.out
    assert "label fail             0           2" in run.out
    assert "gating: rubric says-ok version 2 judged by deterministic" in run.out
    record = parse_calibration(out.read_text(encoding="utf-8"), str(out))
    assert record.kappa == pytest.approx(0.32 / 0.52)
    assert record.model == "deterministic"
    assert record.confusion == Confusion(2, 0, 1, 2)
    # the same labels write the same bytes
    again = tmp_path / "again.json"
    arh("judge", "calibrate", "--labels", labels, "--rubric", tmp_path / "rubric.json",
        "-o", again, "-q")  # fmt: skip
    assert again.read_bytes() == out.read_bytes()


def test_kappa_under_the_gate_exits_1(arh: Callable[..., Run], tmp_path: Path) -> None:
    labels = _write(tmp_path, DISAGREEING)
    run = arh("judge", "calibrate", "--labels", labels, "--rubric", tmp_path / "rubric.json")
    assert run.status == 1, run.err
    assert "Cohen's kappa 0.17" in run.out
    assert "warning only" in run.out
    assert "below 0.6" in run.out
    assert "  c: pass, fail\n  e: fail, pass\n" in run.out


def test_replayed_judgments(arh: Callable[..., Run], tmp_path: Path) -> None:
    labels = _write(tmp_path, DISAGREEING)
    judgments = tmp_path / "judgments.jsonl"
    lines = []
    for item, verdict in zip(DISAGREEING, ("pass", "pass", "pass", "fail", "fail"), strict=True):
        digest = input_hash(JudgeInput(item["task"], item["answer"]))
        score = 1.0 if verdict == "pass" else 0.0
        j = Judgment("says-ok", "2", "gpt-x", digest, verdict, (("ok", score),), 0.9)  # type: ignore[arg-type]
        lines.append(judgment_line(j))
    # a judgment of another model, of item a's input only (a pass, as its label)
    other = Judgment("says-ok", "2", "other", input_hash(JudgeInput("t", "ok")), "pass", ())
    judgments.write_text("".join(lines) + judgment_line(other), encoding="utf-8")
    common = ("judge", "calibrate", "--labels", labels, "--rubric", tmp_path / "rubric.json")
    # two models in the file: which one?
    run = arh(*common, "--judgments", judgments)
    assert run.status == 2
    assert "name the judge with --model" in run.err
    assert "gpt-x, other" in run.err
    # gpt-x agrees with every label: kappa 1
    run = arh(*common, "--judgments", judgments, "--model", "gpt-x")
    assert run.status == 0, run.err
    assert "Cohen's kappa 1.00" in run.out
    # "other" judged only one input: the rest are not judged, and one item that both pass
    # gives no kappa (chance agreement 1)
    run = arh(*common, "--judgments", judgments, "--model", "other", "-o", tmp_path / "r.json")
    assert run.status == 3
    assert "1 of 5 labelled items judged" in run.out
    assert "not judged (left out, never counted as a pass): b, c, d, e" in run.out
    assert "kappa is undefined" in run.err
    assert not (tmp_path / "r.json").exists()


def test_errors_and_statuses(arh: Callable[..., Run], tmp_path: Path) -> None:
    labels = _write(tmp_path, AGREEING)
    rubric = tmp_path / "rubric.json"
    # a rubric that cannot be used is configuration: 2
    bad_rubric = tmp_path / "bad.json"
    bad_rubric.write_text(json.dumps({**RUBRIC, "pass_threshold": 2}), encoding="utf-8")
    run = arh("judge", "calibrate", "--labels", labels, "--rubric", bad_rubric)
    assert run.status == 2
    assert "invalid rubric" in run.err
    assert "bad.json" in run.err
    assert "/pass_threshold" in run.err
    # a rubric the engine cannot judge without a model
    no_check = tmp_path / "nocheck.json"
    no_check.write_text(
        json.dumps({**RUBRIC, "criteria": [{"id": "ok", "description": "says ok"}]}),
        encoding="utf-8",
    )
    run = arh("judge", "calibrate", "--labels", labels, "--rubric", no_check)
    assert run.status == 2
    assert "criteria without a check: ok" in run.err
    # options
    run = arh("judge", "calibrate", "--labels", labels, "--rubric", rubric, "--model", "m")
    assert run.status == 2
    assert "--model applies only with --judgments" in run.err
    run = arh("judge", "calibrate", "--labels", labels, "--rubric", rubric, "-o", labels)
    assert run.status == 2
    assert "must not overwrite an input" in run.err
    run = arh("judge", "--labels", labels)
    assert run.status == 2
    # a labels file that cannot be read: 3
    run = arh("judge", "calibrate", "--labels", tmp_path / "missing.jsonl", "--rubric", rubric)
    assert run.status == 3
    assert "missing.jsonl: cannot read: No such file or directory" in run.err
    # one bad line is reported, the others are used, and the status is 3 whatever kappa says
    text = labels.read_text(encoding="utf-8") + '{"id": "z"}\n'
    labels.write_text(text, encoding="utf-8")
    out = tmp_path / "record.json"
    run = arh("judge", "calibrate", "--labels", labels, "--rubric", rubric, "-o", out)
    assert run.status == 3
    assert "labels.jsonl:6" in run.err
    assert "5 of 5 labelled items judged" in run.out
    assert out.exists()
    # labels of another rubric version are left out and said so
    other = _write(tmp_path, [*AGREEING, _item("v1", "ok", "pass") | {"rubric_version": "1"}])
    run = arh("judge", "calibrate", "--labels", other, "--rubric", rubric)
    assert run.status == 0
    assert "1 items of other rubrics or versions left out" in run.out


# -- the shipped hand labels, rubric and record ------------------------------------------------


def test_shipped_labels() -> None:
    rubric = rubric_from_dict(json.loads(SHIPPED_RUBRIC.read_text(encoding="utf-8")))
    labels = parse_labels(SHIPPED_LABELS.read_text(encoding="utf-8"), str(SHIPPED_LABELS))
    assert labels.errors == ()
    assert len(labels.items) >= 50
    for item in labels.items:
        assert (item.rubric_id, item.rubric_version) == (rubric.rubric_id, rubric.version)
        assert check_item(item, rubric, str(SHIPPED_LABELS)) is None
        assert {name for name, _ in item.criteria} == {c.criterion_id for c in rubric.criteria}
    raw = [json.loads(line) for line in SHIPPED_LABELS.read_text(encoding="utf-8").splitlines()]
    datasets = {r["source"]["dataset"] for r in raw}
    assert datasets == {"tau-bench", "AgentDojo", "ToolBench", "SWE-agent", "arh samples"}
    for r in raw:  # every third-party excerpt says where it is from and under which licence
        if r["source"]["dataset"] != "arh samples":
            assert r["source"]["license"] in ("MIT", "Apache-2.0")
            assert r["source"]["repository"]
    verdicts = [i.label for i in labels.items]
    assert verdicts.count("pass") > 10
    assert verdicts.count("fail") > 10


def test_shipped_record_matches_its_matrix() -> None:
    record = parse_calibration(SHIPPED_RECORD.read_text(encoding="utf-8"), str(SHIPPED_RECORD))
    assert record.key == ("final-answer-report", "1", "deterministic")
    # kappa from the record's own matrix, by hand: po = (both_pass + both_fail) / n; the label
    # passes (both_pass + judge_fail_label_pass) / n, the judge (both_pass + judge_pass_...) / n
    c, n = record.confusion, record.n
    po = (c.both_pass + c.both_fail) / n
    label_pass = (c.both_pass + c.judge_fail_label_pass) / n
    judge_pass = (c.both_pass + c.judge_pass_label_fail) / n
    pe = label_pass * judge_pass + (1 - label_pass) * (1 - judge_pass)
    assert record.kappa == pytest.approx((po - pe) / (1 - pe))
    assert record.n == len(SHIPPED_LABELS.read_text(encoding="utf-8").splitlines())


def test_calibration_report_check() -> None:
    script = load_script("calibration_report", ROOT / "tools" / "calibration_report.py")
    assert script.main(["--check"]) == 0


def test_calibration_report_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not REAL_TRACES.is_dir():
        pytest.skip(f"shared real traces not found at {REAL_TRACES} (set ARH_SHARED_DIR)")
    script = load_script("calibration_report", ROOT / "tools" / "calibration_report.py")
    assert script.check_sources() == []
    # a changed answer is caught
    text = SHIPPED_LABELS.read_text(encoding="utf-8").replace("HATHAT", "HATHAX", 1)
    changed = tmp_path / "labels.jsonl"
    changed.write_text(text, encoding="utf-8")
    monkeypatch.setattr(script, "LABELS", changed)
    problems = script.check_sources()
    assert len(problems) == 1
    assert problems[0].startswith("tau-airline-000: the answer is not the text at")


def test_a_record_decides_whether_judge_findings_gate(
    arh: Callable[..., Run], tmp_path: Path
) -> None:
    # arh judge calibrate writes the record that arh validate --calibration reads: the shipped
    # record (kappa 0.53) leaves the judge's finding a warning; a record of kappa 1 (two items on
    # which the engine agrees with the labels) makes it an error
    quickstart = ROOT / "docs" / "examples" / "quickstart"
    validate = (
        "validate", "--policy", quickstart / "policy.json", quickstart / "runs" / "refund-2.json",
        "--rubric", SHIPPED_RUBRIC, "--judge-model", "deterministic", "--show-passing",
    )  # fmt: skip
    run = arh(*validate, "--calibration", SHIPPED_RECORD)
    assert run.status == 0, run.err
    assert "warning ARH-JDG-001" in run.out
    assert "kappa 0.53 (95% interval 0.34 to 0.71, n=85), below 0.6" in " ".join(run.out.split())
    labels = tmp_path / "labels.jsonl"
    items = [
        ("refund-1", "Done: 42.50 USD is on its way back to your card.", "pass"),
        ("refund-2", "Your order is still on its way, so it cannot be refunded yet.", "fail"),
    ]
    labels.write_text(
        "".join(
            json.dumps(
                {"id": i, "task": None, "answer": a, "rubric": "final-answer-report",
                 "rubric_version": "1", "label": v}
            ) + "\n"
            for i, a, v in items
        ),
        encoding="utf-8",
    )  # fmt: skip
    record = tmp_path / "record.json"
    run = arh("judge", "calibrate", "--labels", labels, "--rubric", SHIPPED_RUBRIC, "-o", record)
    assert run.status == 0, run.err
    assert "Cohen's kappa 1.00" in run.out
    run = arh(*validate, "--calibration", record)
    assert run.status == 1
    assert "error   ARH-JDG-001" in run.out
    assert "gating: rubric final-answer-report version 1" in " ".join(run.out.split())
