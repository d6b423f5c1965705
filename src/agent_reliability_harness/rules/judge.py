"""Judge rules: the rubric verdict on a trace's final answer (docs/answers-and-judge.md).

Their findings are made by the judge stage (``judge/stage.py``) after the engine has checked a
trace, from a judgment replayed from the judgment file or made by a live judge; the engine's
rule set for the category checks nothing. They are warnings unless a calibration record with
kappa >= 0.6 exists for the rubric version and the model (``judge.model.gate``), and never
scored.
"""

from __future__ import annotations

from agent_reliability_harness.model.policy import Policy
from agent_reliability_harness.model.report import CategoryResult
from agent_reliability_harness.rules._facts import TraceFacts
from agent_reliability_harness.rules.online import Watch
from agent_reliability_harness.rules.registry import rule
from agent_reliability_harness.rules.ruleset import RuleSet
from agent_reliability_harness.rules.selection import Findings

CATEGORY = "judge"
_GATE_NOTE = (
    "A warning unless a calibration record with Cohen's kappa >= 0.6 exists for the rubric "
    "version and the model that judged (then an error). --severity and the policy's rules "
    "section can lower it or switch it off, but not make an uncalibrated judge fail a build."
)

JUDGE_FAILED = rule(
    "ARH-JDG-001",
    decided="at_end",
    category=CATEGORY,
    severity="warning",
    severity_note=_GATE_NOTE,
    title="Judge verdict on the final answer is fail",
    trigger="arh validate is given a rubric, and the judgment of the trace's judge input (its "
    "task and final answer) under that rubric version and model has the verdict fail: the "
    "weighted score of its criteria is below the rubric's pass_threshold. The message gives "
    "the score, the criteria that scored below their maximum, the rationale and whether the "
    "finding gates and why.",
    scoring="None: judge findings are not scored; as an error it fails the trace.",
    anchor="the last model_response step (the trace, when there is none)",
    remediation="Read the rationale and the low criteria; fix the agent's answer, or the rubric "
    "if it is wrong (a new rubric version needs its own calibration).",
)
NOT_JUDGED = rule(
    "ARH-JDG-002",
    decided="at_end",
    category=CATEGORY,
    severity="info",
    title="Trace was not judged",
    trigger="arh validate is given a rubric judged by a model (not the deterministic engine) "
    "without --judge live, and the judgment file has no judgment for the trace's input hash "
    "under that rubric version and model. The judge verdict is then not_judged: not a pass.",
    scoring="None: not scored; the judge verdict is not_judged, never pass.",
    anchor="the trace",
    remediation="Run arh validate --judge live once (it calls the model and appends the "
    "judgment to the judgment file), review the file and commit it.",
)
JUDGE_ERROR = rule(
    "ARH-JDG-003",
    decided="at_end",
    category=CATEGORY,
    severity="warning",
    title="Judge gave no usable judgment",
    trigger="arh validate --judge live called the model and got no usable judgment: the "
    "request failed after its retries (timeout, connection error, HTTP error), or the reply "
    "was not the JSON object the rubric asks for (malformed JSON, a missing or out-of-scale "
    "criterion score, a confidence outside 0 to 1). Nothing is written to the judgment file; "
    "the judge verdict is error.",
    scoring="None: not scored.",
    anchor="the trace",
    remediation="Check the base URL, the API key variable and the model; a malformed reply "
    "may need a clearer prompt template or a model that supports structured output.",
)


def prepare(_policy: Policy) -> None:
    return None


def evaluate(_facts: TraceFacts, _plan: None, _out: Findings) -> CategoryResult | None:
    """Nothing: the judge stage adds this category's findings after the engine."""
    return None


def watch(_policy: Policy, _plan: None) -> Watch | None:
    return None


RULE_SET = RuleSet(CATEGORY, prepare, evaluate, watch)
