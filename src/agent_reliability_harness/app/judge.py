"""``arh judge calibrate``: how well a judge agrees with hand labels, and its calibration record.

It reads the rubric (configuration: a bad one is a usage error, 2), the hand-labels file and
either a judgment file (``--judgments``, with ``--model`` when it holds judgments of several
models) or runs the deterministic rubric engine (``--engine deterministic``); prints Cohen's
kappa with its interval, the confusion matrix and the false positives and negatives of each
criterion; and writes the calibration record (``-o``). The status is 0 when kappa reaches the
gate (:data:`~agent_reliability_harness.judge.model.KAPPA_GATE`: judge findings may fail a
build), 1 when it does not (they stay warnings), 3 when a labels line, a judgment line or a file
could not be used, or when there is no kappa to give (docs/exit-codes.md).
"""

from __future__ import annotations

import json
import sys
from argparse import Namespace

from agent_reliability_harness._json import decode_bytes
from agent_reliability_harness.app import Status, worst
from agent_reliability_harness.app.output import error, report_error, say, write_report
from agent_reliability_harness.errors import InputError
from agent_reliability_harness.io.read import cannot_read, read_input_file
from agent_reliability_harness.judge.calibration import (
    Calibration,
    LabelledItem,
    calibrate,
    check_item,
    labels_sha256,
    parse_labels,
)
from agent_reliability_harness.judge.engine import judge_deterministic, missing_checks
from agent_reliability_harness.judge.model import (
    DETERMINISTIC,
    KAPPA_GATE,
    Judgment,
    JudgmentKey,
    Rubric,
    gate,
    input_hash,
    parse_judgments,
    parse_rubric,
)

__all__ = ["calibrate_command"]


def _read(path: str, limit: int) -> bytes:
    try:
        return read_input_file(path, limit)
    except OSError as exc:
        raise cannot_read(path, exc) from None
    except InputError as exc:
        raise exc.located(path) from None


def _text(path: str, data: bytes) -> str:
    try:
        return decode_bytes(data)
    except InputError as exc:
        raise exc.located(path) from None


def _engine_judgments(rubric: Rubric, items: list[LabelledItem]) -> dict[str, Judgment | None]:
    """The deterministic rubric engine's judgment of every item."""
    return {
        item.item_id: judge_deterministic(rubric, item.seen, input_hash(item.seen), item.item_id)
        for item in items
    }


def _replayed(
    rubric: Rubric, model: str, items: list[LabelledItem], found: dict[JudgmentKey, Judgment]
) -> dict[str, Judgment | None]:
    return {
        item.item_id: found.get((rubric.rubric_id, rubric.version, model, input_hash(item.seen)))
        for item in items
    }


def _models(rubric: Rubric, found: dict[JudgmentKey, Judgment]) -> list[str]:
    return sorted({key[2] for key in found if key[:2] == (rubric.rubric_id, rubric.version)})


def calibrate_command(args: Namespace) -> Status:
    """Run ``arh judge calibrate`` (see the module docstring); the exit status."""
    limit = args.max_input_size
    try:
        rubric = parse_rubric(_text(args.rubric, _read(args.rubric, limit)), args.rubric)
    except InputError as exc:
        error(f"invalid rubric: {exc}")
        return Status.USAGE
    status = Status.OK
    try:
        raw = _read(args.labels, limit)
        labels = parse_labels(_text(args.labels, raw), args.labels)
    except InputError as exc:
        report_error(exc)
        return Status.INPUT
    problems = list(labels.errors)
    items: list[LabelledItem] = []
    other = 0
    for item in labels.items:
        if (item.rubric_id, item.rubric_version) != (rubric.rubric_id, rubric.version):
            other += 1
            continue
        problem = check_item(item, rubric, args.labels)
        if problem is None:
            items.append(item)
        else:
            problems.append(problem)
    judgments: dict[str, Judgment | None] = {}
    model = DETERMINISTIC
    if args.judgments is not None:
        try:
            found, bad_lines = parse_judgments(
                _text(args.judgments, _read(args.judgments, limit)), args.judgments
            )
        except InputError as exc:
            report_error(exc)
            return Status.INPUT
        problems.extend(bad_lines)
        models = _models(rubric, found)
        if args.model is not None:
            model = args.model
        elif len(models) == 1:
            model = models[0]
        else:
            for problem in problems:
                report_error(problem)
            listed = ", ".join(models) if models else "none"
            error(
                f"{args.judgments}: name the judge with --model: the file holds judgments of "
                f"rubric {rubric.rubric_id} version {rubric.version} by {len(models)} models "
                f"({listed})"
            )
            return Status.INPUT if not models else Status.USAGE
        judgments = _replayed(rubric, model, items, found)
    else:
        missing = missing_checks(rubric)
        if missing:
            error(
                f"{args.rubric}: the deterministic engine cannot judge rubric "
                f"{rubric.rubric_id}: criteria without a check: {', '.join(missing)} "
                "(give --judgments of a model judge)"
            )
            return Status.USAGE
        judgments = _engine_judgments(rubric, items)
    for problem in problems:
        report_error(problem)
    if problems:
        status = Status.INPUT
    result = calibrate(rubric, model, items, judgments, labels_sha256(raw))
    if not args.quiet and args.output != "-":  # -o - prints the record alone
        say(calibration_text(result, args.labels, other), sys.stdout)
    if result.record is None:
        error(_no_kappa(result, args.labels))
        return worst(status, Status.INPUT)
    if args.output is not None:
        text = json.dumps(result.record.to_dict(), indent=2, sort_keys=True, ensure_ascii=False)
        if write_report(args.output, text + "\n", "calibration record", args.quiet):
            return worst(status, Status.INPUT)
    return worst(status, Status.OK if result.record.kappa >= KAPPA_GATE else Status.FAILED)


def _no_kappa(result: Calibration, labels: str) -> str:
    if result.confusion.n == 0:
        return (
            f"{labels}: no labelled item of rubric {result.rubric.rubric_id} version "
            f"{result.rubric.version} was judged by {result.model}: no kappa, no record written"
        )
    return (
        f"{labels}: kappa is undefined: the labels and the judge put all "
        f"{result.confusion.n} judged items under one verdict; label items of both verdicts "
        "(no record written)"
    )


def _number(value: float | None) -> str:
    if value is None:
        return "undefined"
    text = f"{value:.2f}"
    return "0.00" if text == "-0.00" else text


def calibration_text(result: Calibration, labels: str, other: int) -> str:
    """The console report of a calibration: kappa and its interval, the confusion matrix, each
    criterion's agreement, the disagreements and whether judge findings may gate."""
    rubric, matrix, kappa = result.rubric, result.confusion, result.kappa
    judged = matrix.n
    lines = [
        (
            f"calibration of rubric {rubric.rubric_id} version {rubric.version} judged by "
            f"{result.model} against the hand labels of {labels}"
        ),
        f"{judged} of {judged + len(result.not_judged)} labelled items judged"
        + (f"; {other} items of other rubrics or versions left out" if other else ""),
    ]
    if result.not_judged:
        lines.append(
            f"not judged (left out, never counted as a pass): {', '.join(result.not_judged)}"
        )
    interval = (
        "" if kappa.low is None else f", 95% interval {_number(kappa.low)} to {_number(kappa.high)}"
    )
    lines += [
        (
            f"Cohen's kappa {_number(kappa.value)}{interval} (large-sample standard error of "
            f"Fleiss, Cohen & Everitt 1969); observed agreement {_number(kappa.observed)}, "
            f"by chance {_number(kappa.expected)}"
        ),
        "",
        f"{'':<12}{'judge pass':>12}{'judge fail':>12}",
        f"{'label pass':<12}{matrix.both_pass:>12}{matrix.judge_fail_label_pass:>12}",
        f"{'label fail':<12}{matrix.judge_pass_label_fail:>12}{matrix.both_fail:>12}",
        "",
    ]
    if result.per_criterion:
        width = max(len("criterion"), *(len(a.criterion_id) for a in result.per_criterion))
        lines.append(
            f"{'criterion':<{width}}  {'kappa':>9}  {'false pos':>9}  {'false neg':>9}  {'n':>5}"
        )
        for agreement in result.per_criterion:
            errors = agreement.errors()
            lines.append(
                f"{agreement.criterion_id:<{width}}  {_number(agreement.kappa.value):>9}  "
                f"{errors.false_positives:>9}  {errors.false_negatives:>9}  {errors.n:>5}"
            )
        lines += [
            (
                "false pos: the judge passes what the label fails; false neg: the judge fails what "
                "the label passes"
            ),
            "",
        ]
    if result.disagreements:
        lines.append(f"{len(result.disagreements)} disagreements (label, judge):")
        lines += [f"  {item}: {label}, {verdict}" for item, label, verdict in result.disagreements]
        lines.append("")
    lines.append(gate(result.record, rubric, result.model).reason)
    return "\n".join(lines) + "\n"
