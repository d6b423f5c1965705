"""The judge's values: rubrics, judgments and the judgment file, calibration records.

A *rubric* (a versioned JSON file) says how an answer is graded: criteria, each with a scale, a
weight and, for the deterministic engine, a check; a pass threshold; and the prompt template a
model judge is given. A *judgment* is one verdict on one input, keyed by (rubric id, rubric
version, model, input hash); the *judgment file* holds judgments as JSON Lines, so that
``arh validate`` replays them and never calls a model unless asked to. A *calibration record*
says how well one rubric version judged by one model agreed with hand labels (Cohen's kappa);
judge findings gate a build only while such a record with kappa >= :data:`KAPPA_GATE` exists.

Everything here is pure: parsing takes text and the name of the file it came from, and every
problem is an :class:`~agent_reliability_harness.errors.InputError` naming the file and the JSON
pointer of the bad value.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from agent_reliability_harness._decode import (
    bad,
    check_keys,
    finite_number,
    json_type,
    opt_finite_in,
    opt_nonneg_int,
    opt_str,
    req_str,
    require_object,
)
from agent_reliability_harness._json import loads
from agent_reliability_harness.errors import InputError, excerpt, join_pointer
from agent_reliability_harness.model._regex import risky_repetition
from agent_reliability_harness.model.trace import Trace

__all__ = [
    "CHECK_KINDS",
    "DETERMINISTIC",
    "KAPPA_GATE",
    "RATIONALE_CHARS",
    "CalibrationRecord",
    "Check",
    "Confusion",
    "Criterion",
    "CriterionErrors",
    "Gate",
    "JudgeInput",
    "Judgment",
    "JudgmentKey",
    "Rubric",
    "Scale",
    "Verdict",
    "calibration_from_dict",
    "canonical_json",
    "find_calibration",
    "gate",
    "input_hash",
    "judge_input",
    "judgment_from_dict",
    "judgment_line",
    "parse_calibration",
    "parse_judgments",
    "parse_rubric",
    "rubric_from_dict",
]

# The model name of the deterministic rubric engine, in judgments and calibration records.
DETERMINISTIC: Final = "deterministic"
# Judge findings are errors only while the rubric version and model have a calibration record
# whose Cohen's kappa is at least this (issue 29: kappa 0.6 is "substantial" agreement).
KAPPA_GATE: Final = 0.6
# The longest rationale a judgment keeps; a longer one is cut (never chain-of-thought).
RATIONALE_CHARS: Final = 500

Verdict = Literal["pass", "fail"]
VERDICTS: Final = ("pass", "fail")

# The checks the deterministic rubric engine runs (judge/engine.py), by their "kind".
CHECK_KINDS: Final = (
    "must_mention",
    "must_not_mention",
    "regex",
    "not_regex",
    "length",
    "json_object",
)
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_HEX64 = re.compile(r"[0-9a-f]{64}")


def canonical_json(value: Any) -> bytes:
    """``value`` as canonical JSON: keys sorted, no insignificant whitespace, UTF-8 (not
    ASCII-escaped). The bytes that :func:`input_hash` and the judgment file are made of."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


# ---------------------------------------------------------------------------------------------
# Rubrics


@dataclass(frozen=True, slots=True)
class Scale:
    """The integer scores a criterion can take, ``low`` (worst) to ``high`` (best)."""

    low: int
    high: int

    def normalised(self, score: float) -> float:
        """``score`` as a fraction from 0 (low) to 1 (high)."""
        return (score - self.low) / (self.high - self.low)

    def to_dict(self) -> dict[str, int]:
        return {"min": self.low, "max": self.high}


@dataclass(frozen=True, slots=True)
class Check:
    """What the deterministic rubric engine looks for in the answer (``CHECK_KINDS``):
    ``must_mention`` every term of ``terms`` (``must_not_mention``: none of them), matched
    case-insensitively; ``regex`` a match of ``pattern`` (``not_regex``: none); ``length`` from
    ``min_chars`` to ``max_chars`` characters; ``json_object`` an answer that is a JSON object
    with every key of ``keys``. A criterion whose check holds scores its scale's high end, one
    whose check fails its low end."""

    kind: str
    terms: tuple[str, ...] = ()
    pattern: str | None = None
    min_chars: int | None = None
    max_chars: int | None = None
    keys: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.kind in ("must_mention", "must_not_mention"):
            out["terms"] = list(self.terms)
        elif self.kind in ("regex", "not_regex"):
            out["pattern"] = self.pattern
        elif self.kind == "length":
            if self.min_chars is not None:
                out["min_chars"] = self.min_chars
            if self.max_chars is not None:
                out["max_chars"] = self.max_chars
        else:
            out["keys"] = list(self.keys)
        return out


@dataclass(frozen=True, slots=True)
class Criterion:
    """One thing a rubric grades: its ``id`` (unique in the rubric), what it means
    (``description``, shown to a model judge), its ``scale``, its ``weight`` in the overall
    score and the ``check`` of the deterministic engine (``None``: a model must judge it)."""

    criterion_id: str
    description: str
    scale: Scale
    weight: float = 1.0
    check: Check | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.criterion_id,
            "description": self.description,
            "scale": self.scale.to_dict(),
            "weight": self.weight,
        }
        if self.check is not None:
            out["check"] = self.check.to_dict()
        return out


@dataclass(frozen=True, slots=True)
class Rubric:
    """A versioned rubric. The overall score of a judgment is the weighted mean of its criteria's
    normalised scores (each 0 to 1); the verdict is pass when it is at least ``pass_threshold``.
    ``prompt_template`` is what a model judge is sent, with ``{task}``, ``{answer}`` and
    ``{criteria}`` filled in; ``api_key_env`` names the environment variable holding the API key
    of a live judge and ``model`` the model it asks (both may be given on the command line)."""

    rubric_id: str
    version: str
    criteria: tuple[Criterion, ...]
    pass_threshold: float
    prompt_template: str
    description: str = ""
    model: str | None = None
    api_key_env: str | None = None

    def score(self, scores: Mapping[str, float]) -> float:
        """The weighted mean of the normalised ``scores`` of every criterion (all must be
        there)."""
        total = sum(c.weight for c in self.criteria)
        return (
            sum(c.weight * c.scale.normalised(scores[c.criterion_id]) for c in self.criteria)
            / total
        )

    def verdict(self, scores: Mapping[str, float]) -> Verdict:
        return "pass" if self.score(scores) >= self.pass_threshold else "fail"

    @property
    def deterministic(self) -> bool:
        """Whether the deterministic engine can judge every criterion (each has a check)."""
        return all(c.check is not None for c in self.criteria)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rubric": self.rubric_id,
            "version": self.version,
            "description": self.description,
            "pass_threshold": self.pass_threshold,
            "criteria": [c.to_dict() for c in self.criteria],
            "prompt_template": self.prompt_template,
        }
        if self.model is not None:
            out["model"] = self.model
        if self.api_key_env is not None:
            out["api_key_env"] = self.api_key_env
        return out


_RUBRIC_KEYS = (
    "$schema",
    "rubric",
    "version",
    "description",
    "pass_threshold",
    "criteria",
    "prompt_template",
    "model",
    "api_key_env",
)
_CRITERION_KEYS = ("id", "description", "scale", "weight", "check")
_CHECK_KEYS: Final[Mapping[str, tuple[str, ...]]] = {
    "must_mention": ("kind", "terms"),
    "must_not_mention": ("kind", "terms"),
    "regex": ("kind", "pattern"),
    "not_regex": ("kind", "pattern"),
    "length": ("kind", "min_chars", "max_chars"),
    "json_object": ("kind", "keys"),
}
_PLACEHOLDERS = ("{answer}",)
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _an_id(data: Mapping[str, Any], key: str, base: str, what: str) -> str:
    value = req_str(data, key, base)
    if not _ID.fullmatch(value):
        raise bad(
            join_pointer(base, key),
            f"{what} must be 1 to 64 letters, digits, '_', '.' or '-' (not first), got "
            f"{excerpt(value)}",
        )
    return value


def _strings(value: object, pointer: str, *, non_empty: bool = True) -> tuple[str, ...]:
    if type(value) is not list:
        raise bad(pointer, f"must be an array of strings, got {json_type(value)}")
    out: list[str] = []
    for index, item in enumerate(value):
        if type(item) is not str or not item.strip():
            raise bad(join_pointer(pointer, index), "must be a non-blank string")
        out.append(item)
    if non_empty and not out:
        raise bad(pointer, "must not be empty")
    return tuple(out)


def _scale(value: object, pointer: str) -> Scale:
    data = require_object(value, pointer, "a scale")
    check_keys(data, ("min", "max"), pointer)
    low = opt_nonneg_int(data, "min", pointer)
    high = opt_nonneg_int(data, "max", pointer)
    if low is None or high is None:
        raise bad(pointer, "needs both 'min' and 'max' (integers >= 0)")
    if high <= low:
        raise bad(join_pointer(pointer, "max"), f"must be greater than min ({low}), got {high}")
    return Scale(low, high)


def _check(value: object, pointer: str) -> Check:
    data = require_object(value, pointer, "a check")
    kind = req_str(data, "kind", pointer)
    if kind not in CHECK_KINDS:
        raise bad(
            join_pointer(pointer, "kind"),
            f"unknown check kind {excerpt(kind)}; known: {', '.join(CHECK_KINDS)}",
        )
    check_keys(data, _CHECK_KEYS[kind], pointer)
    if kind in ("must_mention", "must_not_mention"):
        if "terms" not in data:
            raise bad(pointer, "missing required field 'terms'")
        return Check(kind, terms=_strings(data["terms"], join_pointer(pointer, "terms")))
    if kind in ("regex", "not_regex"):
        pattern = req_str(data, "pattern", pointer, non_empty=True)
        try:
            re.compile(pattern)
        except re.error as exc:
            raise bad(
                join_pointer(pointer, "pattern"), f"invalid regular expression: {exc}"
            ) from None
        if risky_repetition(pattern):
            raise bad(
                join_pointer(pointer, "pattern"),
                "nests repetitions in a shape that can take exponential time; see SECURITY.md, "
                "'Regular expressions'",
            )
        return Check(kind, pattern=pattern)
    if kind == "length":
        low = opt_nonneg_int(data, "min_chars", pointer)
        high = opt_nonneg_int(data, "max_chars", pointer)
        if low is None and high is None:
            raise bad(pointer, "a length check needs 'min_chars', 'max_chars' or both")
        if low is not None and high is not None and high < low:
            raise bad(join_pointer(pointer, "max_chars"), f"must be >= min_chars ({low})")
        return Check(kind, min_chars=low, max_chars=high)
    keys = _strings(data.get("keys", []), join_pointer(pointer, "keys"), non_empty=False)
    return Check(kind, keys=keys)


def _criterion(value: object, pointer: str) -> Criterion:
    data = require_object(value, pointer, "a criterion")
    check_keys(data, _CRITERION_KEYS, pointer)
    criterion_id = _an_id(data, "id", pointer, "a criterion id")
    description = req_str(data, "description", pointer, non_empty=True)
    if "scale" in data:
        scale = _scale(data["scale"], join_pointer(pointer, "scale"))
    else:
        scale = Scale(0, 1)
    weight = 1.0
    if "weight" in data:
        weight = float(finite_number(data["weight"], join_pointer(pointer, "weight")))
        if weight <= 0:
            raise bad(join_pointer(pointer, "weight"), "must be a number > 0")
    check = None
    if data.get("check") is not None:
        check = _check(data["check"], join_pointer(pointer, "check"))
    return Criterion(criterion_id, description, scale, weight, check)


def rubric_from_dict(data: object) -> Rubric:
    """A :class:`Rubric` from its JSON value; an :class:`InputError` at the bad value's pointer
    (without the file: :func:`parse_rubric` adds it)."""
    doc = require_object(data, "", "a rubric")
    check_keys(doc, _RUBRIC_KEYS, "")
    rubric_id = _an_id(doc, "rubric", "", "a rubric id")
    version = _an_id(doc, "version", "", "a rubric version")
    threshold = opt_finite_in(doc, "pass_threshold", "", (0.0, 1.0), required=True)
    assert threshold is not None
    raw = doc.get("criteria")
    if type(raw) is not list or not raw:
        shown = "missing" if raw is None else f"got {json_type(raw)}"
        if type(raw) is list:
            shown = "got an empty array"
        raise bad("/criteria", f"must be a non-empty array of criteria, {shown}")
    criteria = tuple(_criterion(item, join_pointer("/criteria", i)) for i, item in enumerate(raw))
    seen: set[str] = set()
    for index, criterion in enumerate(criteria):
        if criterion.criterion_id in seen:
            raise bad(
                f"/criteria/{index}/id", f"criterion id {criterion.criterion_id!r} is used twice"
            )
        seen.add(criterion.criterion_id)
    template = req_str(doc, "prompt_template", "", non_empty=True)
    for placeholder in _PLACEHOLDERS:
        if placeholder not in template:
            raise bad("/prompt_template", f"must contain the placeholder {placeholder}")
    try:
        template.format(task="", answer="", criteria="")
    except (KeyError, IndexError, ValueError) as exc:
        raise bad(
            "/prompt_template",
            "may use only the placeholders {task}, {answer} and {criteria} (write '{{' and "
            f"'}}}}' for braces): {exc!r}",
        ) from None
    api_key_env = opt_str(doc, "api_key_env", "")
    if api_key_env is not None and not _ENV_NAME.fullmatch(api_key_env):
        raise bad(
            "/api_key_env", f"must be an environment variable name, got {excerpt(api_key_env)}"
        )
    model = opt_str(doc, "model", "")
    if model is not None and not model.strip():
        raise bad("/model", "must not be blank")
    return Rubric(
        rubric_id,
        version,
        criteria,
        threshold,
        template,
        opt_str(doc, "description", "") or "",
        model,
        api_key_env,
    )


def parse_rubric(text: str, source: str) -> Rubric:
    """A rubric from the text of the file ``source``; every error names the file."""
    try:
        return rubric_from_dict(loads(text))
    except InputError as exc:
        raise exc.located(source) from None


# ---------------------------------------------------------------------------------------------
# What the judge sees, and its hash


@dataclass(frozen=True, slots=True)
class JudgeInput:
    """What a judge sees of a trace: the ``task`` (the text of the first ``user_message`` step,
    else a string ``metadata.task``, else None) and the ``answer`` (the text of the last
    ``model_response`` step, else None). Nothing else of the trace is shown to a judge."""

    task: str | None
    answer: str | None

    def to_dict(self) -> dict[str, str | None]:
        return {"answer": self.answer, "task": self.task}


def judge_input(trace: Trace) -> JudgeInput:
    """The :class:`JudgeInput` of ``trace``."""
    task: str | None = None
    answer: str | None = None
    for step in trace.steps:
        if step.type == "user_message" and task is None and step.text is not None:
            task = step.text
        elif step.type == "model_response" and step.text is not None:
            answer = step.text
    if task is None:
        meta = trace.metadata.get("task")
        task = meta if type(meta) is str else None
    return JudgeInput(task, answer)


def input_hash(seen: JudgeInput) -> str:
    """The lowercase hexadecimal SHA-256 of the canonical JSON (:func:`canonical_json`) of
    ``{"answer": ..., "task": ...}``: the key of a judgment with the rubric and the model, the
    same for every trace whose judge input is the same."""
    return hashlib.sha256(canonical_json(seen.to_dict())).hexdigest()


# ---------------------------------------------------------------------------------------------
# Judgments and the judgment file

JudgmentKey = tuple[str, str, str, str]  # (rubric id, rubric version, model, input hash)


@dataclass(frozen=True, slots=True)
class Judgment:
    """One verdict of one judge (``model``: :data:`DETERMINISTIC` for the rubric engine) on one
    input (``input_hash``) under one rubric version: the per-criterion ``scores`` (in the
    rubric's order), the model's ``confidence`` from 0 to 1 (None when it gave none; the
    deterministic engine gives 1) and a short ``rationale`` (at most
    :data:`RATIONALE_CHARS` characters, never a chain of thought). ``trace_id`` says which trace
    it was first made for; it is not part of the key."""

    rubric_id: str
    rubric_version: str
    model: str
    input_hash: str
    verdict: Verdict
    scores: tuple[tuple[str, float], ...]
    confidence: float | None = None
    rationale: str = ""
    trace_id: str | None = None

    @property
    def key(self) -> JudgmentKey:
        return (self.rubric_id, self.rubric_version, self.model, self.input_hash)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rubric": self.rubric_id,
            "rubric_version": self.rubric_version,
            "model": self.model,
            "input_hash": self.input_hash,
            "verdict": self.verdict,
            "scores": {name: _number(value) for name, value in self.scores},
            "confidence": self.confidence,
            "rationale": self.rationale,
            "trace_id": self.trace_id,
        }


def _number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def judgment_line(judgment: Judgment) -> str:
    """One line of the judgment file (canonical JSON and a newline)."""
    return canonical_json(judgment.to_dict()).decode("utf-8") + "\n"


_JUDGMENT_KEYS = (
    "rubric",
    "rubric_version",
    "model",
    "input_hash",
    "verdict",
    "scores",
    "confidence",
    "rationale",
    "trace_id",
)


def judgment_from_dict(data: object) -> Judgment:
    """A :class:`Judgment` from its JSON value (one line of the judgment file)."""
    doc = require_object(data, "", "a judgment")
    check_keys(doc, _JUDGMENT_KEYS, "")
    rubric_id = req_str(doc, "rubric", "", non_empty=True)
    version = req_str(doc, "rubric_version", "", non_empty=True)
    model = req_str(doc, "model", "", non_empty=True)
    digest = req_str(doc, "input_hash", "")
    if not _HEX64.fullmatch(digest):
        raise bad(
            "/input_hash", f"must be 64 lowercase hex digits (SHA-256), got {excerpt(digest)}"
        )
    verdict = req_str(doc, "verdict", "")
    if verdict not in VERDICTS:
        raise bad("/verdict", f"must be 'pass' or 'fail', got {excerpt(verdict)}")
    raw = doc.get("scores", {})
    scores = require_object(raw, "/scores", "scores")
    pairs = tuple(
        (name, float(finite_number(value, join_pointer("/scores", name))))
        for name, value in scores.items()
    )
    confidence = opt_finite_in(doc, "confidence", "", (0.0, 1.0))
    rationale = opt_str(doc, "rationale", "") or ""
    if len(rationale) > RATIONALE_CHARS:
        raise bad("/rationale", f"must be at most {RATIONALE_CHARS} characters")
    return Judgment(
        rubric_id,
        version,
        model,
        digest,
        "pass" if verdict == "pass" else "fail",
        pairs,
        confidence,
        rationale,
        opt_str(doc, "trace_id", ""),
    )


def parse_judgments(
    text: str, source: str
) -> tuple[dict[JudgmentKey, Judgment], tuple[InputError, ...]]:
    """The judgments of a judgment file (JSON Lines; blank lines are skipped) by their key, and
    the errors of its bad lines (each names the file, the line and the pointer). A bad line
    does not stop the others; when two lines have the same key, the later one wins (a live run
    appends)."""
    found: dict[JudgmentKey, Judgment] = {}
    errors: list[InputError] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            judgment = judgment_from_dict(loads(line))
        except InputError as exc:
            errors.append(exc.located(source, number))
            continue
        found[judgment.key] = judgment
    return found, tuple(errors)


# ---------------------------------------------------------------------------------------------
# Calibration records


@dataclass(frozen=True, slots=True)
class Confusion:
    """The judge's verdicts against the hand labels; "positive" is a pass."""

    both_pass: int
    judge_pass_label_fail: int  # false positives
    judge_fail_label_pass: int  # false negatives
    both_fail: int

    @property
    def n(self) -> int:
        return (
            self.both_pass
            + self.judge_pass_label_fail
            + self.judge_fail_label_pass
            + (self.both_fail)
        )

    def to_dict(self) -> dict[str, int]:
        return {
            "both_pass": self.both_pass,
            "judge_pass_label_fail": self.judge_pass_label_fail,
            "judge_fail_label_pass": self.judge_fail_label_pass,
            "both_fail": self.both_fail,
        }


@dataclass(frozen=True, slots=True)
class CriterionErrors:
    """False positives (the judge's criterion passed, the label's failed) and false negatives
    of one criterion, over the labelled items that label it."""

    criterion_id: str
    false_positives: int
    false_negatives: int
    n: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "criterion": self.criterion_id,
            "false_positives": self.false_positives,
            "false_negatives": self.false_negatives,
            "n": self.n,
        }


@dataclass(frozen=True, slots=True)
class CalibrationRecord:
    """How a rubric version judged by one model agreed with hand labels: Cohen's ``kappa``, its
    ``interval`` (``level``, such as 0.95), the ``n`` labelled items, the SHA-256 of the labels
    file (``labels_sha256``) and the ``confusion`` matrix of the verdicts."""

    rubric_id: str
    rubric_version: str
    model: str
    kappa: float
    interval: tuple[float, float]
    n: int
    labels_sha256: str
    confusion: Confusion
    level: float = 0.95
    per_criterion: tuple[CriterionErrors, ...] = field(default=())

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.rubric_id, self.rubric_version, self.model)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rubric": self.rubric_id,
            "rubric_version": self.rubric_version,
            "model": self.model,
            "kappa": self.kappa,
            "interval": {"level": self.level, "low": self.interval[0], "high": self.interval[1]},
            "n": self.n,
            "labels_sha256": self.labels_sha256,
            "confusion": self.confusion.to_dict(),
            "per_criterion": [c.to_dict() for c in self.per_criterion],
        }


_RECORD_KEYS = (
    "$schema",
    "rubric",
    "rubric_version",
    "model",
    "kappa",
    "interval",
    "n",
    "labels_sha256",
    "confusion",
    "per_criterion",
)
_CONFUSION_KEYS = ("both_pass", "judge_pass_label_fail", "judge_fail_label_pass", "both_fail")


def _count(data: Mapping[str, Any], key: str, base: str) -> int:
    value = opt_nonneg_int(data, key, base)
    if value is None:
        raise bad(base, f"missing required field {key!r}")
    return value


def calibration_from_dict(data: object) -> CalibrationRecord:
    """A :class:`CalibrationRecord` from its JSON value."""
    doc = require_object(data, "", "a calibration record")
    check_keys(doc, _RECORD_KEYS, "")
    kappa = opt_finite_in(doc, "kappa", "", (-1.0, 1.0), required=True)
    assert kappa is not None
    interval = require_object(doc.get("interval"), "/interval", "interval")
    check_keys(interval, ("level", "low", "high"), "/interval")
    level = opt_finite_in(interval, "level", "/interval", (0.0, 1.0), required=True)
    low = opt_finite_in(interval, "low", "/interval", (-1.0, 1.0), required=True)
    high = opt_finite_in(interval, "high", "/interval", (-1.0, 1.0), required=True)
    assert level is not None
    assert low is not None
    assert high is not None
    if not low <= kappa <= high:
        raise bad("/interval", f"must contain kappa ({kappa:g}): got [{low:g}, {high:g}]")
    digest = req_str(doc, "labels_sha256", "")
    if not _HEX64.fullmatch(digest):
        raise bad("/labels_sha256", f"must be 64 lowercase hex digits, got {excerpt(digest)}")
    raw = require_object(doc.get("confusion"), "/confusion", "confusion")
    check_keys(raw, _CONFUSION_KEYS, "/confusion")
    confusion = Confusion(*(_count(raw, key, "/confusion") for key in _CONFUSION_KEYS))
    n = _count(doc, "n", "")
    if n != confusion.n:
        raise bad("/n", f"must equal the sum of the confusion matrix ({confusion.n}), got {n}")
    per: list[CriterionErrors] = []
    items = doc.get("per_criterion", [])
    if type(items) is not list:
        raise bad("/per_criterion", f"must be an array, got {json_type(items)}")
    for index, item in enumerate(items):
        at = join_pointer("/per_criterion", index)
        entry = require_object(item, at, "an entry")
        check_keys(entry, ("criterion", "false_positives", "false_negatives", "n"), at)
        per.append(
            CriterionErrors(
                req_str(entry, "criterion", at, non_empty=True),
                _count(entry, "false_positives", at),
                _count(entry, "false_negatives", at),
                _count(entry, "n", at),
            )
        )
    return CalibrationRecord(
        req_str(doc, "rubric", "", non_empty=True),
        req_str(doc, "rubric_version", "", non_empty=True),
        req_str(doc, "model", "", non_empty=True),
        kappa,
        (low, high),
        n,
        digest,
        confusion,
        level,
        tuple(per),
    )


def parse_calibration(text: str, source: str) -> CalibrationRecord:
    """A calibration record from the text of the file ``source`` (one JSON object)."""
    try:
        return calibration_from_dict(loads(text))
    except InputError as exc:
        raise exc.located(source) from None


def find_calibration(
    records: Iterable[CalibrationRecord], rubric: Rubric, model: str
) -> CalibrationRecord | None:
    """The record that applies to ``rubric`` (its id and version) judged by ``model``: of the
    records with that key, the last one given (a later file overrides an earlier); None when
    there is none. A record of another rubric version never applies."""
    wanted = (rubric.rubric_id, rubric.version, model)
    found = None
    for record in records:
        if record.key == wanted:
            found = record
    return found


@dataclass(frozen=True, slots=True)
class Gate:
    """Whether judge findings of a rubric and model are errors (``gating``) or warnings, and
    why, in one sentence that the report shows."""

    gating: bool
    reason: str


def gate(record: CalibrationRecord | None, rubric: Rubric, model: str) -> Gate:
    """The :class:`Gate` of ``rubric`` judged by ``model`` given the record that applies
    (:func:`find_calibration`): gating only when its kappa is at least :data:`KAPPA_GATE`."""
    which = f"rubric {rubric.rubric_id} version {rubric.version} judged by {model}"
    if record is None:
        return Gate(
            False,
            f"warning only: no calibration record for {which}; judge findings gate a build "
            f"only once calibrated at kappa >= {KAPPA_GATE:g}",
        )
    low, high = record.interval
    shown = (
        f"kappa {_round(record.kappa)} ({record.level:.0%} interval {_round(low)} to "
        f"{_round(high)}, n={record.n})"
    )
    if record.kappa >= KAPPA_GATE:
        return Gate(True, f"gating: {which} is calibrated at {shown} >= {KAPPA_GATE:g}")
    return Gate(False, f"warning only: {which} is calibrated at {shown}, below {KAPPA_GATE:g}")


def _round(value: float) -> str:
    text = f"{value:.2f}"
    return "0.00" if text == "-0.00" else text
