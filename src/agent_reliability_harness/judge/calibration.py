"""Calibration: the hand-labels file, and how a judge's verdicts agree with it.

A hand-labels file is JSON Lines, one labelled item a line (docs/answers-and-judge.md,
"How to label")::

    {"id": "tau-airline-000", "source": {...}, "task": "...", "answer": "...",
     "rubric": "final-answer-report", "rubric_version": "1",
     "label": "pass", "criteria": {"outcome": "pass", "key_values": "pass"}, "note": "..."}

``task`` and ``answer`` are what the judge sees (a :class:`JudgeInput`, so a judgment is found
by the same input hash as ``arh validate`` uses); ``label`` is the verdict the labeller gave
under the rubric, and ``criteria`` the verdict of each criterion they labelled. Every other key
(``source``, ``tool_calls``, ``note``, ...) is for the reader and is kept as it is.

:func:`calibrate` compares the judge's verdicts with the labels: Cohen's kappa and its interval
(:mod:`.agreement`), the confusion matrix, false positives and negatives per criterion, and the
:class:`CalibrationRecord` they make. Pure: no files, clocks or randomness.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from agent_reliability_harness._decode import bad, json_type, req_str, require_object
from agent_reliability_harness._json import loads
from agent_reliability_harness.errors import InputError, excerpt, join_pointer
from agent_reliability_harness.judge.agreement import Kappa, confusion, confusion_kappa
from agent_reliability_harness.judge.model import (
    CalibrationRecord,
    Confusion,
    CriterionErrors,
    JudgeInput,
    Judgment,
    Rubric,
    Verdict,
)

__all__ = [
    "Calibration",
    "CriterionAgreement",
    "LabelledItem",
    "Labels",
    "calibrate",
    "criterion_passed",
    "labels_sha256",
    "parse_labels",
]


@dataclass(frozen=True, slots=True)
class LabelledItem:
    """One hand-labelled answer: what the judge sees (``seen``), the rubric it was labelled
    under, the overall ``label`` and the label of each criterion labelled (in the file's order),
    and the line of the labels file it is on."""

    item_id: str
    seen: JudgeInput
    rubric_id: str
    rubric_version: str
    label: Verdict
    criteria: tuple[tuple[str, Verdict], ...]
    line: int


@dataclass(frozen=True, slots=True)
class Labels:
    """The items of a labels file that were read, and the errors of the lines that were not."""

    items: tuple[LabelledItem, ...]
    errors: tuple[InputError, ...]


def _verdict(value: object, pointer: str) -> Verdict:
    if value == "pass":
        return "pass"
    if value == "fail":
        return "fail"
    shown = excerpt(value) if type(value) is str else json_type(value)
    raise bad(pointer, f"must be 'pass' or 'fail', got {shown}")


def _optional_text(data: Mapping[str, object], key: str) -> str | None:
    if key not in data:
        raise bad("", f"missing required field {key!r} (a string, or null)")
    value = data[key]
    if value is None or type(value) is str:
        return value
    raise bad(join_pointer("", key), f"must be a string or null, got {json_type(value)}")


def _item(value: object, line: int) -> LabelledItem:
    data = require_object(value, "", "a labelled item")
    item_id = req_str(data, "id", "", non_empty=True)
    seen = JudgeInput(_optional_text(data, "task"), _optional_text(data, "answer"))
    rubric_id = req_str(data, "rubric", "", non_empty=True)
    version = req_str(data, "rubric_version", "", non_empty=True)
    if "label" not in data:
        raise bad("", "missing required field 'label' ('pass' or 'fail')")
    label = _verdict(data["label"], "/label")
    raw = data.get("criteria", {})
    criteria = require_object(raw, "/criteria", "the criteria's labels")
    pairs = tuple(
        (name, _verdict(verdict, join_pointer("/criteria", name)))
        for name, verdict in criteria.items()
    )
    return LabelledItem(item_id, seen, rubric_id, version, label, pairs, line)


def parse_labels(text: str, source: str) -> Labels:
    """The labelled items of the labels file ``source`` (JSON Lines; blank lines are skipped).
    A bad line is an error naming the file, the line and the pointer, and does not stop the
    others; an id used twice is an error on its second line."""
    items: list[LabelledItem] = []
    errors: list[InputError] = []
    seen_ids: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = _item(loads(line), number)
            first = seen_ids.get(item.item_id)
            if first is not None:
                raise bad("/id", f"id {item.item_id!r} is used on line {first} already")
        except InputError as exc:
            errors.append(exc.located(source, number))
            continue
        seen_ids[item.item_id] = number
        items.append(item)
    return Labels(tuple(items), tuple(errors))


def labels_sha256(data: bytes) -> str:
    """The SHA-256 of the labels file's bytes, which a calibration record keeps."""
    return hashlib.sha256(data).hexdigest()


def check_item(item: LabelledItem, rubric: Rubric, source: str) -> InputError | None:
    """Why ``item``, labelled under ``rubric``, cannot be used (None when it can): a criterion
    the rubric lacks, or an overall label that contradicts the labels of every criterion under
    the rubric's pass threshold."""
    known = {c.criterion_id for c in rubric.criteria}
    for name, _ in item.criteria:
        if name not in known:
            return InputError(
                f"criterion {name!r} is not one of rubric {rubric.rubric_id}'s "
                f"({', '.join(sorted(known))})",
                pointer=join_pointer("/criteria", name),
                source=source,
                line=item.line,
            )
    labelled = dict(item.criteria)
    if set(labelled) == known:
        scores = {
            c.criterion_id: (c.scale.high if labelled[c.criterion_id] == "pass" else c.scale.low)
            for c in rubric.criteria
        }
        implied = rubric.verdict(scores)
        if implied != item.label:
            return InputError(
                f"label {item.label!r} contradicts the labels of the criteria, which give "
                f"{implied!r} under the rubric's pass threshold {rubric.pass_threshold:g}",
                pointer="/label",
                source=source,
                line=item.line,
            )
    return None


def criterion_passed(judgment: Judgment, rubric: Rubric, criterion_id: str) -> bool | None:
    """Whether ``judgment`` passed one criterion: its score, normalised to 0..1 on the
    criterion's scale, is at least the rubric's pass threshold (on a 0-1 scale, a 1 with the
    threshold 1). None when the judgment has no score for it."""
    scores = dict(judgment.scores)
    if criterion_id not in scores:
        return None
    criterion = next(c for c in rubric.criteria if c.criterion_id == criterion_id)
    return criterion.scale.normalised(scores[criterion_id]) >= rubric.pass_threshold


@dataclass(frozen=True, slots=True)
class CriterionAgreement:
    """The judge against the labels on one criterion, over the judged items that label it."""

    criterion_id: str
    confusion: Confusion
    kappa: Kappa

    def errors(self) -> CriterionErrors:
        return CriterionErrors(
            self.criterion_id,
            self.confusion.judge_pass_label_fail,
            self.confusion.judge_fail_label_pass,
            self.confusion.n,
        )


@dataclass(frozen=True, slots=True)
class Calibration:
    """A calibration run: the ``confusion`` matrix and ``kappa`` of the verdicts over the
    judged items, each criterion's agreement, the items without a judgment (``not_judged``:
    left out, never counted as a pass) and those where the judge and the label disagree
    (``disagreements``: id, label, verdict). ``record`` is None when kappa is undefined."""

    rubric: Rubric
    model: str
    confusion: Confusion
    kappa: Kappa
    per_criterion: tuple[CriterionAgreement, ...]
    not_judged: tuple[str, ...]
    disagreements: tuple[tuple[str, Verdict, Verdict], ...]
    record: CalibrationRecord | None


def calibrate(
    rubric: Rubric,
    model: str,
    items: Sequence[LabelledItem],
    judgments: Mapping[str, Judgment | None],
    digest: str,
) -> Calibration:
    """Compare the verdicts of ``model`` (``judgments``, by item id; None or absent: not
    judged) with the hand labels of ``items``, all labelled under ``rubric``; ``digest`` is the
    SHA-256 of the labels file."""
    pairs: list[tuple[bool, bool]] = []
    per: dict[str, list[tuple[bool, bool]]] = {c.criterion_id: [] for c in rubric.criteria}
    not_judged: list[str] = []
    disagreements: list[tuple[str, Verdict, Verdict]] = []
    for item in items:
        judgment = judgments.get(item.item_id)
        if judgment is None:
            not_judged.append(item.item_id)
            continue
        pairs.append((item.label == "pass", judgment.verdict == "pass"))
        if item.label != judgment.verdict:
            disagreements.append((item.item_id, item.label, judgment.verdict))
        for name, verdict in item.criteria:
            passed = criterion_passed(judgment, rubric, name)
            if passed is not None:
                per[name].append((verdict == "pass", passed))
    matrix = confusion(pairs)
    kappa = confusion_kappa(matrix)
    agreements = tuple(
        CriterionAgreement(name, confusion(found), confusion_kappa(confusion(found)))
        for name, found in per.items()
        if found
    )
    record = None
    if kappa.value is not None and kappa.low is not None and kappa.high is not None:
        record = CalibrationRecord(
            rubric.rubric_id,
            rubric.version,
            model,
            kappa.value,
            (kappa.low, kappa.high),
            matrix.n,
            digest,
            matrix,
            0.95,
            tuple(a.errors() for a in agreements),
        )
    return Calibration(
        rubric,
        model,
        matrix,
        kappa,
        agreements,
        tuple(not_judged),
        tuple(disagreements),
        record,
    )
