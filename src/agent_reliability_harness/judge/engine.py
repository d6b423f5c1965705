"""The deterministic rubric engine: keyword and structure checks on the final answer, no model.

Each criterion's check (``judge.model.Check``) holds or not; a criterion whose check holds
scores the high end of its scale, one whose check fails the low end. A trace with no final
answer scores the low end of every criterion. The verdict follows from the scores and the
rubric's pass threshold, as for a model judge, and the confidence is 1.
"""

from __future__ import annotations

import re
from typing import Final

from agent_reliability_harness._json import loads
from agent_reliability_harness.errors import InputError, excerpt
from agent_reliability_harness.judge.model import (
    DETERMINISTIC,
    RATIONALE_CHARS,
    Check,
    JudgeInput,
    Judgment,
    Rubric,
)

__all__ = ["check_answer", "judge_deterministic", "missing_checks"]

_NO_ANSWER: Final = "the trace has no final answer (no model_response step with text)"


def missing_checks(rubric: Rubric) -> tuple[str, ...]:
    """The ids of the criteria without a check, which the deterministic engine cannot judge."""
    return tuple(c.criterion_id for c in rubric.criteria if c.check is None)


def check_answer(check: Check, answer: str) -> str:
    """Why ``answer`` fails ``check``, or ``""`` when it holds."""
    kind = check.kind
    if kind in ("must_mention", "must_not_mention"):
        folded = answer.casefold()
        present = [t for t in check.terms if t.casefold() in folded]
        if kind == "must_mention":
            absent = [t for t in check.terms if t not in present]
            return f"does not mention {', '.join(map(excerpt, absent))}" if absent else ""
        return f"mentions {', '.join(map(excerpt, present))}" if present else ""
    if kind in ("regex", "not_regex"):
        assert check.pattern is not None
        found = re.search(check.pattern, answer)
        if kind == "regex":
            return "" if found else f"does not match {excerpt(check.pattern)}"
        return f"matches {excerpt(check.pattern)} at {excerpt(found.group())}" if found else ""
    if kind == "length":
        size = len(answer)
        if check.min_chars is not None and size < check.min_chars:
            return f"has {size} characters, fewer than {check.min_chars}"
        if check.max_chars is not None and size > check.max_chars:
            return f"has {size} characters, more than {check.max_chars}"
        return ""
    try:
        value = loads(answer)
    except InputError as exc:
        return f"is not JSON ({exc.message})"
    if type(value) is not dict:
        return "is JSON but not an object"
    absent = [key for key in check.keys if key not in value]
    return f"lacks the keys {', '.join(map(excerpt, absent))}" if absent else ""


def judge_deterministic(
    rubric: Rubric, seen: JudgeInput, digest: str, trace_id: str | None = None
) -> Judgment:
    """The judgment of the deterministic engine on ``seen`` (whose hash is ``digest``); every
    criterion of ``rubric`` must have a check (:func:`missing_checks` is empty)."""
    scores: list[tuple[str, float]] = []
    problems: list[str] = []
    for criterion in rubric.criteria:
        assert criterion.check is not None
        problem = _NO_ANSWER if seen.answer is None else check_answer(criterion.check, seen.answer)
        if problem:
            problems.append(f"{criterion.criterion_id}: the answer {problem}")
        high, low = criterion.scale.high, criterion.scale.low
        scores.append((criterion.criterion_id, float(low if problem else high)))
    score_map = dict(scores)
    if seen.answer is None:
        rationale = _NO_ANSWER
    elif problems:
        rationale = "; ".join(problems)
    else:
        rationale = "every criterion's check holds"
    if len(rationale) > RATIONALE_CHARS:
        rationale = rationale[: RATIONALE_CHARS - 3] + "..."
    return Judgment(
        rubric.rubric_id,
        rubric.version,
        DETERMINISTIC,
        digest,
        rubric.verdict(score_map),
        tuple(scores),
        1.0,
        rationale,
        trace_id,
    )
