"""The judge stage of ``arh validate``: after the engine has checked a trace, judge its final
answer under a rubric and add the judge's findings and verdict to the trace's report.

``replay`` (the default) takes the judgment from the judgment file and never calls a model; an
input the file has no judgment for is *not judged* (ARH-JDG-002), never a pass. ``live`` uses
the file's judgment when there is one, and otherwise calls the model judge and appends its
judgment to the file. The deterministic rubric engine needs no file: it judges in both modes
(and ``live`` appends its judgments too). A fail verdict is ARH-JDG-001, an error while a
calibration record with kappa >= 0.6 applies to the rubric version and model, else a warning
whose message says why.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Final, Literal

from agent_reliability_harness._json import decode_bytes
from agent_reliability_harness.errors import InputError, UsageError
from agent_reliability_harness.io.read import DEFAULT_MAX_INPUT, cannot_read, read_input_file
from agent_reliability_harness.judge.client import ChatJudge, JudgeCallError
from agent_reliability_harness.judge.engine import judge_deterministic, missing_checks
from agent_reliability_harness.judge.model import (
    DETERMINISTIC,
    CalibrationRecord,
    Gate,
    Judgment,
    JudgmentKey,
    Rubric,
    find_calibration,
    gate,
    input_hash,
    judge_input,
    judgment_line,
    parse_calibration,
    parse_judgments,
    parse_rubric,
)
from agent_reliability_harness.model.judge_outcome import JudgeOutcome
from agent_reliability_harness.model.report import Finding, TraceReport
from agent_reliability_harness.model.trace import Trace
from agent_reliability_harness.rules.judge import JUDGE_ERROR, JUDGE_FAILED, NOT_JUDGED
from agent_reliability_harness.rules.selection import Findings, RuleSelection
from agent_reliability_harness.scoring import passes

__all__ = [
    "JUDGE_MODES",
    "JudgeStage",
    "load_calibrations",
    "load_judgments",
    "load_rubric",
]

JudgeMode = Literal["replay", "live"]
JUDGE_MODES: Final = ("replay", "live")


def _read_text(path: str, max_input_bytes: int) -> str:
    try:
        return decode_bytes(read_input_file(path, max_input_bytes))
    except OSError as exc:
        raise cannot_read(path, exc) from None
    except InputError as exc:
        raise exc.located(path) from None


def load_rubric(path: str, max_input_bytes: int = DEFAULT_MAX_INPUT) -> Rubric:
    """The rubric file at ``path``; an :class:`InputError` naming the file and the pointer."""
    return parse_rubric(_read_text(path, max_input_bytes), path)


def load_calibrations(
    paths: Iterable[str], max_input_bytes: int = DEFAULT_MAX_INPUT
) -> tuple[CalibrationRecord, ...]:
    """The calibration records of ``paths``, in order (a later one overrides an earlier)."""
    return tuple(parse_calibration(_read_text(p, max_input_bytes), p) for p in paths)


def load_judgments(
    path: str, max_input_bytes: int = DEFAULT_MAX_INPUT, *, missing_ok: bool = False
) -> tuple[dict[JudgmentKey, Judgment], tuple[InputError, ...]]:
    """The judgments of the judgment file at ``path`` and the errors of its bad lines; with
    ``missing_ok`` (a live run, which creates it) a file that does not exist holds none."""
    if missing_ok and not os.path.lexists(path):
        return {}, ()
    return parse_judgments(_read_text(path, max_input_bytes), path)


@dataclass(frozen=True, slots=True)
class _Verdict:
    """What the stage found for one trace: a judgment, or why there is none."""

    judgment: Judgment | None
    outcome: str  # "pass", "fail", "not_judged" or "error"
    problem: str = ""


class JudgeStage:
    """Judges each trace's final answer under ``rubric`` by ``model`` and adds the outcome to
    its report. ``judgments`` are those of the judgment file ``judgments_path``; ``client``
    is the model judge of a live run (None for the deterministic engine and for replay)."""

    def __init__(
        self,
        rubric: Rubric,
        model: str,
        *,
        mode: JudgeMode = "replay",
        judgments: Mapping[JudgmentKey, Judgment] | None = None,
        judgments_path: str | None = None,
        calibrations: Iterable[CalibrationRecord] = (),
        client: ChatJudge | None = None,
        selection: RuleSelection | None = None,
        fail_under: float = 70.0,
    ) -> None:
        if model == DETERMINISTIC and missing_checks(rubric):
            raise UsageError(
                f"the deterministic rubric engine needs a check in every criterion; rubric "
                f"{rubric.rubric_id} has none in: {', '.join(missing_checks(rubric))} (name a "
                "model judge with --judge-model)"
            )
        if model != DETERMINISTIC and mode == "live" and client is None:
            raise UsageError(f"a live judgment by {model} needs a client")
        if model != DETERMINISTIC and judgments_path is None:
            raise UsageError(f"judging with the model {model} needs a judgment file (--judgments)")
        if mode == "live" and judgments_path is None and model != DETERMINISTIC:
            raise UsageError("--judge live needs --judgments FILE to append to")
        self.rubric = rubric
        self.model = model
        self.mode = mode
        self.judgments: dict[JudgmentKey, Judgment] = dict(judgments or {})
        self.judgments_path = judgments_path
        self.client = client
        self.gate: Gate = gate(find_calibration(calibrations, rubric, model), rubric, model)
        self._selection = selection
        self._fail_under = fail_under

    def _append(self, judgment: Judgment) -> None:
        """Append ``judgment`` to the judgment file (starting a new line if the file's last
        one has no line feed), and keep it for the inputs still to come."""
        self.judgments[judgment.key] = judgment
        if self.judgments_path is None:
            return
        path = self.judgments_path
        with open(path, "a+b") as stream:
            stream.seek(0, os.SEEK_END)
            if stream.tell():
                stream.seek(-1, os.SEEK_END)
                if stream.read(1) != b"\n":
                    stream.write(b"\n")
            stream.write(judgment_line(judgment).encode("utf-8"))

    def _verdict(self, trace: Trace) -> tuple[str, _Verdict]:
        seen = judge_input(trace)
        digest = input_hash(seen)
        key = (self.rubric.rubric_id, self.rubric.version, self.model, digest)
        if self.model == DETERMINISTIC:
            judgment = judge_deterministic(self.rubric, seen, digest, trace.trace_id)
            kept = self.judgments.get(key)
            # the same judgment (made for another trace of the same input, too) is not written
            # again
            same = kept is not None and judgment_line(
                replace(kept, trace_id=judgment.trace_id)
            ) == judgment_line(judgment)
            if self.mode == "live" and not same:
                self._append(judgment)
            return digest, _Verdict(judgment, judgment.verdict)
        found = self.judgments.get(key)
        if found is not None:
            return digest, _Verdict(found, found.verdict)
        if self.mode == "replay" or self.client is None:
            return digest, _Verdict(None, "not_judged")
        try:
            judgment = self.client.judge(self.rubric, seen, digest, trace.trace_id)
        except JudgeCallError as exc:
            return digest, _Verdict(None, "error", str(exc))
        self._append(judgment)
        return digest, _Verdict(judgment, judgment.verdict)

    def _which(self) -> str:
        return f"rubric {self.rubric.rubric_id} version {self.rubric.version}, model {self.model}"

    def _findings(self, verdict: _Verdict, digest: str) -> list[Finding]:
        out = Findings(self._selection)
        subject = f"{self.rubric.rubric_id}@{self.rubric.version}"
        if verdict.outcome == "fail" and verdict.judgment is not None:
            judgment = verdict.judgment
            scores = dict(judgment.scores)
            score = self.rubric.score(scores)
            low = [
                f"{c.criterion_id} {scores[c.criterion_id]:g}/{c.scale.high}"
                for c in self.rubric.criteria
                if scores[c.criterion_id] < c.scale.high
            ]
            message = (
                f"judge verdict fail ({self._which()}): score {score:.2f} below the pass "
                f"threshold {self.rubric.pass_threshold:g}"
                + (f"; below their maximum: {', '.join(low)}" if low else "")
                + (f"; rationale: {judgment.rationale}" if judgment.rationale else "")
                + f"; {self.gate.reason}"
            )
            out.add(
                JUDGE_FAILED.finding(
                    message,
                    expected=f"score >= {self.rubric.pass_threshold:g}",
                    observed=f"{score:.2f}",
                    subject=subject,
                    severity="error" if self.gate.gating else "warning",
                )
            )
        elif verdict.outcome == "not_judged":
            out.add(
                NOT_JUDGED.finding(
                    f"not judged: the judgment file {self.judgments_path} has no judgment of "
                    f"input {digest[:12]} under {self._which()} (run --judge live to make one); "
                    "the judge verdict is not_judged, not pass",
                    subject=subject,
                )
            )
        elif verdict.outcome == "error":
            out.add(
                JUDGE_ERROR.finding(
                    f"the judge gave no usable judgment ({self._which()}): {verdict.problem}",
                    subject=subject,
                )
            )
        if self.gate.gating:
            return list(out)
        # an uncalibrated judge never fails a build, whatever severity a selection asks for
        return [
            replace(f, severity="warning")
            if f.severity == "error" and f.rule_id.startswith("ARH-JDG-")
            else f
            for f in out
        ]

    def __call__(self, trace: Trace, report: TraceReport) -> TraceReport:
        """``report`` with the judge's findings and verdict on ``trace``."""
        digest, verdict = self._verdict(trace)
        added = self._findings(verdict, digest)
        findings = tuple(sorted((*report.findings, *added), key=Finding.sort_key))
        return replace(
            report,
            findings=findings,
            passed=passes(findings, report.score, self._fail_under),
            judge=JudgeOutcome(
                verdict.outcome,
                self.rubric.rubric_id,
                self.rubric.version,
                self.model,
                digest,
                self.gate.gating,
            ),
        )
