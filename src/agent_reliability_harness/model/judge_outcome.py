"""What the judge said of a trace (``TraceReport.judge``), as reports write and read it
(docs/answers-and-judge.md, "The judge")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from agent_reliability_harness._decode import json_type, str_or_empty
from agent_reliability_harness.errors import InputError, excerpt, join_pointer

__all__ = ["JUDGE_VERDICTS", "JudgeOutcome", "judge_outcome_from_dict"]

JUDGE_VERDICTS: Final = ("pass", "fail", "not_judged", "error")


@dataclass(frozen=True, slots=True)
class JudgeOutcome:
    """What the judge said of a trace (docs/answers-and-judge.md): its ``verdict`` ("pass",
    "fail", "not_judged" when the judgment file has no judgment for the trace's input, "error"
    when a live judge gave no usable judgment), the rubric and its version, the ``model`` that
    judged, the ``input_hash`` of what it saw, and whether its findings gate the build
    (``gating``: a calibration record with kappa >= 0.6 applies)."""

    verdict: str
    rubric: str
    rubric_version: str
    model: str
    input_hash: str
    gating: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "rubric": self.rubric,
            "rubric_version": self.rubric_version,
            "model": self.model,
            "input_hash": self.input_hash,
            "gating": self.gating,
        }


def judge_outcome_from_dict(value: object, where: str) -> JudgeOutcome | None:
    """The ``judge`` of a trace report at ``where``: absent or null (None), or the object
    :meth:`JudgeOutcome.to_dict` writes."""
    if value is None:
        return None
    if type(value) is not dict:
        raise InputError(f"must be an object, got {json_type(value)}", pointer=where)
    verdict = str_or_empty(value, "verdict", where, required=True)
    if verdict not in JUDGE_VERDICTS:
        raise InputError(
            f"must be one of: {', '.join(JUDGE_VERDICTS)}; got {excerpt(verdict)}",
            pointer=join_pointer(where, "verdict"),
        )
    gating = value.get("gating", False)
    if type(gating) is not bool:
        raise InputError(
            f"must be true or false, got {json_type(gating)}",
            pointer=join_pointer(where, "gating"),
        )
    return JudgeOutcome(
        verdict,
        str_or_empty(value, "rubric", where, required=True),
        str_or_empty(value, "rubric_version", where, required=True),
        str_or_empty(value, "model", where, required=True),
        str_or_empty(value, "input_hash", where, required=True),
        gating,
    )
