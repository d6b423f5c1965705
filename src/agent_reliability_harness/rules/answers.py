"""Answer rules (policy language 1.2): was the final answer right?

They apply to a trace that carries an expected outcome (its ``expected`` field, or an entry of
the ``--expect`` side file), and check the answer the trace ends with against it, as the policy's
``answers`` section says (POLICY-SPEC.md, "answers"). A trace with no expectation is not judged:
its answer checks are listed as not applicable, never passed or failed.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any, Final

from agent_reliability_harness.errors import excerpt
from agent_reliability_harness.model._jsonschema import json_equal
from agent_reliability_harness.model.answers import (
    Expectation,
    Normalization,
    as_number,
    last_number,
    normalize,
    normalize_value,
    parse_number,
    structured,
)
from agent_reliability_harness.model.fidelity import NotApplicable
from agent_reliability_harness.model.policy import Policy
from agent_reliability_harness.model.policy.answers import Answers
from agent_reliability_harness.model.report import CategoryResult
from agent_reliability_harness.model.trace import Trace
from agent_reliability_harness.rules._facts import TraceFacts
from agent_reliability_harness.rules.online import Watch
from agent_reliability_harness.rules.registry import Rule, rule
from agent_reliability_harness.rules.ruleset import RuleSet
from agent_reliability_harness.rules.selection import Findings

__all__ = ["RULE_SET", "not_judged"]

CATEGORY = "answers"
_ONE: Final = "One failed answer check."
_FIX: Final = "Look at what the agent answered against the task's expected outcome: either the "
_ANSWER_STEP: Final = "the step that gives the answer"


def _answer_rule(
    rule_id: str, *, title: str, trigger: str, remediation: str, scoring: str = _ONE
) -> Rule:
    """Declare an answer check: an error decided at the end of the run, anchored on the step
    that gives the answer."""
    return rule(
        rule_id,
        decided="at_end",
        category=CATEGORY,
        severity="error",
        title=title,
        trigger=trigger,
        scoring=scoring,
        anchor=_ANSWER_STEP,
        remediation=remediation,
    )


NO_ANSWER = rule(
    "ARH-ANS-001",
    decided="at_end",
    category=CATEGORY,
    severity="error",
    title="Trace has an expected outcome but gives no answer",
    trigger="the trace has an expected outcome and at least one answer check applies, but it "
    "gives no answer: its last step that is not a user_message is not a model_response with "
    "status ok and non-blank text (or, with answers.from_tool, no successful call of that tool "
    "has the argument).",
    scoring="Every answer check that applies fails (one finding for all of them).",
    anchor="the last step that is not a user_message (the trace, when there is none)",
    remediation="Make the agent end with its answer; look for early exits, crashes and step "
    "limits that cut the run short.",
)
EXACT = _answer_rule(
    "ARH-ANS-002",
    title="Answer is not exactly the expected answer",
    trigger="answers.checks has exact and expected.answer is set. A string is compared with "
    "the answer's text, both with leading and trailing whitespace removed; any other JSON value "
    "with the answer read as JSON (JSON equality: 1 equals 1.0, key order does not matter).",
    remediation=_FIX + "answer is wrong, or it is right in another form (use normalized).",
)
NORMALIZED = _answer_rule(
    "ARH-ANS-003",
    title="Answer does not match the expected answer once normalised",
    trigger="answers.checks has normalized and expected.answer is set. A string or number is "
    "compared with the answer's text, both normalised (Unicode NFKC, case, whitespace, number "
    "formats, as answers.normalize says); any other JSON value with the answer read as JSON, "
    "every string in both normalised and numbers compared by value.",
    remediation=_FIX + "answer is wrong, or the expected answer is written too narrowly.",
)
PATTERN = _answer_rule(
    "ARH-ANS-004",
    title="Answer does not match the expected pattern",
    trigger="answers.checks has pattern and expected.pattern is set, and the regular "
    "expression has no match anywhere in the answer's text (re.search, case-sensitive, on the "
    "text as recorded).",
    remediation=_FIX + "answer has the wrong form, or the pattern is too strict.",
)
NUMERIC = _answer_rule(
    "ARH-ANS-005",
    title="Answer's number is not within tolerance of the expected number",
    trigger="answers.checks has numeric and expected.answer is a number (or a string that is "
    "one number), and the answer's number differs from it by more than "
    "max(tolerance.absolute, tolerance.relative x |expected|), or the answer has no number. The "
    "answer's number is the answer itself when it is a JSON number or one number, else the last "
    "number in its text.",
    remediation=_FIX + "computation is wrong, or the tolerance is too tight for a value that "
    "is rounded.",
)
SET = _answer_rule(
    "ARH-ANS-006",
    title="Answer's items are not the expected set",
    trigger="answers.checks has set and expected.answer is an array, and the answer's items, "
    "in any order and with repeats ignored, are not the same set. Items are the answer read as "
    "a JSON array, else its text split at commas, semicolons and line breaks; each is compared "
    "normalised, and numbers by value.",
    remediation=_FIX + "agent left items out or added some; the finding names them.",
)
LIST = _answer_rule(
    "ARH-ANS-007",
    title="Answer's items are not the expected list",
    trigger="answers.checks has list and expected.answer is an array, and the answer's items "
    "(read as for set) are not the same items in the same order.",
    remediation=_FIX + "agent left items out, added some, or put them in another order.",
)
SCHEMA = _answer_rule(
    "ARH-ANS-008",
    title="Structured answer does not conform to the answer schema",
    trigger="answers.checks has schema and the trace has an expected outcome, and the answer "
    "is not JSON (the whole text, or its first fenced code block) or does not conform to "
    "answers.schema (the supported subset of JSON Schema, POLICY-SPEC.md).",
    remediation="Make the agent answer in the documented structure; the finding names the "
    "first places where the answer breaks the schema.",
)
MUST_MENTION = _answer_rule(
    "ARH-ANS-009",
    title="Answer does not mention what it must",
    trigger="answers.checks has must_mention and expected.must_mention is set, and a phrase "
    "of it is not in the answer's text (both normalised as for normalized; a phrase is found "
    "inside a longer word too).",
    scoring="One failed answer check, whatever the number of phrases missing.",
    remediation=_FIX + "answer leaves out a fact the task needs; the finding names the phrases.",
)
MUST_NOT_MENTION = _answer_rule(
    "ARH-ANS-010",
    title="Answer mentions what it must not",
    trigger="answers.checks has must_not_mention and expected.must_not_mention is set, and a "
    "phrase of it is in the answer's text (both normalised as for normalized).",
    scoring="One failed answer check, whatever the number of phrases found.",
    remediation=_FIX + "answer states something it must not (a wrong fact, a secret); the "
    "finding names the phrases.",
)

_RULES: Final[dict[str, Rule]] = {
    "exact": EXACT,
    "normalized": NORMALIZED,
    "pattern": PATTERN,
    "numeric": NUMERIC,
    "set": SET,
    "list": LIST,
    "schema": SCHEMA,
    "must_mention": MUST_MENTION,
    "must_not_mention": MUST_NOT_MENTION,
}


def _gap(check: str, expected: Expectation) -> str | None:
    """What the expectation lacks for ``check`` (the not-applicable field), or None."""
    answer = expected.answer
    if check in ("exact", "normalized", "numeric", "set", "list") and not expected.has_answer:
        return "expected/answer"
    if check == "numeric" and as_number(answer) is None:
        return "expected/answer as a number"
    if check in ("set", "list") and type(answer) is not list:
        return "expected/answer as an array"
    if check == "pattern" and expected.pattern is None:
        return "expected/pattern"
    if check == "must_mention" and not expected.must_mention:
        return "expected/must_mention"
    if check == "must_not_mention" and not expected.must_not_mention:
        return "expected/must_not_mention"
    return None


def not_judged(trace: Trace, answers: Answers | None) -> tuple[NotApplicable, ...]:
    """The answer checks of the policy that do not apply to ``trace``: all of them when it has
    no expected outcome (field ``expected``), else those whose part of it is missing."""
    if answers is None:
        return ()
    expected = trace.expected
    out = []
    for check in answers.checks:
        gap = "expected" if expected is None else _gap(check, expected)
        if gap is not None:
            out.append(NotApplicable(_RULES[check].rule_id, f"answers.checks: {check}", gap))
    return tuple(out)


def prepare(policy: Policy) -> Answers | None:
    return policy.answers


def _shown(value: Any) -> str:
    if type(value) is str:
        return excerpt(value)
    return excerpt(json.dumps(value, ensure_ascii=False, sort_keys=True), quote=False)


def _answer(facts: TraceFacts, plan: Answers) -> tuple[str | None, Any, int | None]:
    """The answer's text (None: no answer), its value when it is a tool argument that is not a
    string, and the position of the step that gives it."""
    steps = facts.steps
    if plan.from_tool is not None:
        wanted = plan.from_tool
        for at in reversed(facts.agent_steps):
            step = steps[at]
            if step.type != "tool_call" or step.tool_name != wanted.tool or step.status != "ok":
                continue
            arguments = step.arguments or {}
            if wanted.argument in arguments:
                value = arguments[wanted.argument]
                if type(value) is str:
                    return value, None, at
                return json.dumps(value, ensure_ascii=False, sort_keys=True), (value,), at
        last_at = facts.agent_steps[-1] if facts.agent_steps else None
        return None, None, last_at
    if not facts.agent_steps:
        return None, None, None
    at = facts.agent_steps[-1]
    last = steps[at]
    if last.type != "model_response" or last.status != "ok" or not (last.text or "").strip():
        return None, None, at
    return last.text, None, at


def _number_key(value: Decimal) -> str:
    return "n:" + format(value.normalize(), "f") if value else "n:0"


def _item_key(item: Any, how: Normalization) -> str:
    """An item of a set or list answer as one comparable text: numbers by value, strings
    normalised, anything else as its canonical JSON."""
    if type(item) is int or type(item) is float:
        return _number_key(Decimal(repr(item)))
    if type(item) is str:
        number = parse_number(item) if how.numbers else None
        return _number_key(number) if number is not None else "s:" + normalize(item, how)
    return "j:" + json.dumps(normalize_value(item, how), sort_keys=True, default=str)


_SEPARATORS: Final = str.maketrans({";": ",", "\n": ",", "\r": ","})


def _items(text: str, value: tuple[Any] | None) -> list[Any]:
    ok, parsed = (True, value[0]) if value is not None else structured(text)
    if ok and type(parsed) is list:
        return parsed
    parts = (part.strip() for part in text.translate(_SEPARATORS).split(","))
    return [part.removeprefix("- ").removeprefix("* ").strip() for part in parts if part]


def _numbers_close(observed: Decimal, expected: Decimal, plan: Answers) -> bool:
    allowed = max(Decimal(repr(plan.absolute)), Decimal(repr(plan.relative)) * abs(expected))
    return abs(observed - expected) <= allowed


def _check(
    check: str, text: str, value: tuple[Any] | None, expected: Expectation, plan: Answers
) -> tuple[str, str, str] | None:
    """Why the answer fails ``check``: (message, expected, observed), or None when it passes."""
    how = plan.normalize
    answer = expected.answer
    if check == "exact":
        if type(answer) is str:
            if text.strip() == answer.strip():
                return None
            return "answer is not exactly the expected answer", _shown(answer), _shown(text)
        ok, parsed = (True, value[0]) if value is not None else structured(text)
        if ok and json_equal(parsed, answer):
            return None
        return "answer is not the expected JSON value", _shown(answer), _shown(text)
    if check == "normalized":
        if type(answer) is str or type(answer) in (int, float):
            want = normalize(answer if type(answer) is str else repr(answer), how)
            got = normalize(text, how)
            if want == got:
                return None
            return "normalised answer differs from the expected answer", _shown(want), _shown(got)
        ok, parsed = (True, value[0]) if value is not None else structured(text)
        if ok and normalize_value(parsed, how) == normalize_value(answer, how):
            return None
        return "answer is not the expected JSON value once normalised", _shown(answer), _shown(text)
    if check == "pattern":
        assert expected.pattern is not None
        if expected.pattern.search(text) is not None:
            return None
        return (
            "answer has no match of the expected pattern",
            f"a match of {excerpt(expected.pattern.pattern)}",
            _shown(text),
        )
    if check == "numeric":
        want_number = as_number(answer)
        assert want_number is not None
        got_number = None
        if value is not None and type(value[0]) in (int, float):
            got_number = Decimal(repr(value[0]))
        else:
            got_number = last_number(text)
        tolerance = f" +/- max({plan.absolute!r}, {plan.relative!r} x |expected|)"
        if got_number is not None and _numbers_close(got_number, want_number, plan):
            return None
        observed = "no number in the answer" if got_number is None else str(got_number)
        return (
            "answer has no number"
            if got_number is None
            else f"answer's number {got_number} is not within tolerance of the expected "
            f"{want_number}",
            f"{want_number}{tolerance}",
            observed,
        )
    if check in ("set", "list"):
        want_items = [_item_key(item, how) for item in answer]
        got_items = [_item_key(item, how) for item in _items(text, value)]
        if check == "list":
            if want_items == got_items:
                return None
            return (
                "answer's items are not the expected list",
                _shown(answer),
                _shown(_items(text, value)),
            )
        missing = sorted(set(want_items) - set(got_items))
        extra = sorted(set(got_items) - set(want_items))
        if not missing and not extra:
            return None
        parts = []
        if missing:
            parts.append(f"missing {', '.join(k[2:] for k in missing)}")
        if extra:
            parts.append(f"not expected {', '.join(k[2:] for k in extra)}")
        return (
            f"answer's items are not the expected set ({'; '.join(parts)})",
            _shown(answer),
            _shown(_items(text, value)),
        )
    if check == "schema":
        assert plan.schema is not None
        ok, parsed = (True, value[0]) if value is not None else structured(text)
        if not ok:
            return (
                "answer is not JSON, so it cannot conform to the answer schema",
                "a JSON answer that conforms to answers.schema",
                _shown(text),
            )
        errors = plan.schema.errors(parsed)
        if not errors:
            return None
        return (
            f"answer does not conform to the answer schema: {'; '.join(errors)}",
            "a JSON answer that conforms to answers.schema",
            _shown(parsed),
        )
    seen = normalize(text, how)
    if check == "must_mention":
        absent = [p for p in expected.must_mention if normalize(p, how) not in seen]
        if not absent:
            return None
        return (
            f"answer does not mention {', '.join(excerpt(p) for p in absent)}",
            f"mentions {', '.join(excerpt(p) for p in expected.must_mention)}",
            _shown(text),
        )
    present = [p for p in expected.must_not_mention if normalize(p, how) in seen]
    if not present:
        return None
    return (
        f"answer mentions {', '.join(excerpt(p) for p in present)}",
        f"mentions none of {', '.join(excerpt(p) for p in expected.must_not_mention)}",
        _shown(text),
    )


def evaluate(facts: TraceFacts, plan: Answers | None, out: Findings) -> CategoryResult | None:
    if plan is None:
        return None  # a policy without answer checks lists no answers category
    expected = facts.trace.expected
    checks = [c for c in plan.checks if _gap(c, expected) is None] if expected is not None else []
    if not checks:
        return CategoryResult(CATEGORY, False, 100.0, 0, 0)
    assert expected is not None
    text, value, at = _answer(facts, plan)
    step_id = None if at is None else facts.step_id(at)
    if text is None:
        failed = out.add(
            NO_ANSWER.finding(
                "trace has an expected outcome but gives no answer",
                at=at,
                step_id=step_id,
                expected="an answer to check: " + ", ".join(checks),
                observed="no answer"
                if at is None
                else f"the last step is a {facts.steps[at].type} that gives none",
            )
        )
        lost = len(checks) if failed else 0
        return CategoryResult(
            CATEGORY, True, 100.0 * (len(checks) - lost) / len(checks), len(checks), lost
        )
    failed = 0
    for check in checks:
        problem = _check(check, text, value, expected, plan)
        if problem is not None:
            message, want, got = problem
            failed += out.add(
                _RULES[check].finding(message, at=at, step_id=step_id, expected=want, observed=got)
            )
    return CategoryResult(
        CATEGORY, True, 100.0 * (len(checks) - failed) / len(checks), len(checks), failed
    )


def watch(policy: Policy, plan: Answers | None) -> Watch | None:  # noqa: ARG001
    return None  # every answer check is decided at the end of the run


RULE_SET: Final = RuleSet(CATEGORY, prepare, evaluate, watch, "1.2")
