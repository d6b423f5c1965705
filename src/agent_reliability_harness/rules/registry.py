"""The single source of rule metadata: categories, rule IDs, severities, titles and remediation.

Every finding is created through :meth:`Rule.finding`, so a finding can only carry a registered
ID. The registry checks itself as rules are declared: ID format, one declaration per ID, an ID
prefix that matches the category, and non-empty documentation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

from agent_reliability_harness.model.fidelity import MISSING_FIELDS, NotApplicable
from agent_reliability_harness.model.report import SEVERITIES, Finding

if TYPE_CHECKING:
    from agent_reliability_harness.model.policy import Policy
    from agent_reliability_harness.model.report import Severity

__all__ = [
    "CATEGORIES",
    "CATEGORY_BY_NAME",
    "DECIDED",
    "RULES",
    "Category",
    "Decided",
    "Need",
    "Rule",
    "fidelity_plan",
    "rule",
]

# When a finding of a rule can be decided while a run goes on (the runtime monitor):
Decided = Literal["before_call", "on_step", "at_end", "from_source"]
DECIDED: Final[Mapping[str, str]] = {
    "before_call": "before the step runs: from the steps before it and what is known of a call "
    "before it runs (its tool and arguments)",
    "on_step": "once the step is recorded: it needs the step's outcome (output, status, "
    "latency, cost, tokens) or is not a call",
    "at_end": "only at the end of the run: a later step can take the finding back",
    "from_source": "from the notes of a converted transcript, which a monitored run has not",
}


@dataclass(frozen=True, slots=True)
class Need:
    """A field of the steps that a check of the rule needs, which a converted trace's source may
    lack (``model.fidelity.MISSING_FIELDS``): when the source lacks it, the check that
    ``applies`` to the policy is reported as not applicable instead of passing."""

    field: str
    check: str  # the policy setting, as reports name it
    applies: Callable[[Policy], bool]


def _well_formed(rule_id: str) -> bool:
    """``ARH-XXX-NNN`` (checked without a regex: rules are declared at import time)."""
    prefix, category, number = rule_id[:4], rule_id[4:7], rule_id[7:]
    return (
        len(rule_id) == 11
        and prefix == "ARH-"
        and category.isascii()
        and category.isalpha()
        and category.isupper()
        and number[:1] == "-"
        and number[1:].isascii()
        and number[1:].isdigit()
    )


@dataclass(frozen=True, slots=True)
class Category:
    """A group of rules that is scored together."""

    name: str
    prefix: str
    weight: int  # relative: only ratios matter (0.2.x wrote them as 0.30, 0.25, ...)
    title: str
    applies_when: str
    score: str


CATEGORIES: Final = (
    Category(
        "schema",
        "SCH",
        30,
        "Schema (tool-call contracts)",
        "the trace has at least one tool_call step",
        "the share of tool_call steps whose call passed every contract check "
        "(warnings and info findings do not fail a step)",
    ),
    Category(
        "budget",
        "BUD",
        30,
        "Budgets",
        "any budget is set in the policy, even when the trace records nothing to check it against "
        "(then the category scores 100)",
        "the share of budget checks that passed; the 'cannot be verified' warnings are not checks",
    ),
    Category(
        "safety",
        "SAF",
        25,
        "Safety",
        "the policy has unsafe_patterns and the trace has at least one non-empty string value to "
        "scan (or an object key that matches)",
        "100 x (strings - hits) / strings, never below 0, where strings are the non-empty string "
        "values scanned plus the object keys that matched, and hits are the (string, pattern) "
        "matches",
    ),
    Category(
        "grounding",
        "GRD",
        15,
        "Grounding",
        "at least one model_response step has requires_grounding: true",
        "100 x coverage / min_citation_coverage (capped at 100) when a minimum is set, else "
        "100 x coverage, where coverage is the share of grounded responses with citations; "
        "malformed citations do not lower it",
    ),
    Category(
        "sequence",
        "SEQ",
        25,
        "Sequence (trajectory shape)",
        "at least one sequence or call-count check was made",
        "the share of sequence checks that passed",
    ),
    Category(
        "flow",
        "FLW",
        20,
        "Flow (errors and side effects)",
        "at least one retry, attempt-limit or side-effect check was made",
        "the share of flow checks that passed",
    ),
    Category(
        "completion",
        "CMP",
        10,
        "Completion",
        "require_final_response is true or max_steps is set",
        "the share of completion checks that passed",
    ),
    # Policy language 1.1 (POLICY-SPEC.md). These categories apply only to policies that declare
    # version 1.1 and enable their section, so a 1.0 policy scores exactly as before.
    Category(
        "provenance",
        "PRV",
        25,
        "Provenance (untrusted values)",
        "the policy has a provenance section and the trace calls a sink with at least one value "
        "long enough to check",
        "the share of sink checks (one per call and sink argument) whose values did not come "
        "from untrusted output",
    ),
    Category(
        "conditions",
        "CND",
        20,
        "Conditions and relations",
        "the policy has conditions or relations and a check was made: a call met a condition's "
        "when clause, or a relation's and had something to compare with (or if_missing is fail)",
        "the share of condition and relation checks that passed",
    ),
    Category(
        "confirmation",
        "CFM",
        20,
        "Confirmation before side effects",
        "the policy has a confirmation section and the trace has at least one user_message step "
        "and a guarded call (or, with separate_text_and_calls, any tool call)",
        "the share of confirmation checks that passed: one per guarded call (confirmed, and "
        "after its details were stated when the tool asks for state), and with "
        "separate_text_and_calls one per tool call (not made right after the agent's text)",
    ),
    Category(
        "loops",
        "LOP",
        15,
        "Loops",
        "the policy has a loops section and the trace has at least one tool call",
        "the share of loop checks that passed (one per distinct call under max_identical_calls, "
        "one for cycles under max_cycle_repeats)",
    ),
    # Issue 29: the judge's findings come from the judge stage after the engine (judge/), which
    # runs only when `arh validate` is given a rubric; never scored, so the weight is 0.
    Category(
        "judge",
        "JDG",
        0,
        "Judge (rubric verdicts on the final answer)",
        "arh validate is given a rubric (--rubric): the judge stage runs after the other "
        "categories (docs/answers-and-judge.md)",
        "none: judge findings are not scored; an error finding fails the trace, and judge "
        "findings are errors only for a rubric version and model calibrated at kappa >= 0.6",
    ),
)
CATEGORY_BY_NAME: Final[Mapping[str, Category]] = {c.name: c for c in CATEGORIES}


@dataclass(frozen=True, slots=True)
class Rule:
    """A registered rule: its stable ID and everything the docs, SARIF and ``arh explain`` show."""

    rule_id: str
    category: str
    title: str
    severity: Severity
    trigger: str
    anchor: str
    scoring: str
    remediation: str
    severity_note: str | None = None
    emitted: bool = True
    decided: Decided = "at_end"
    needs: tuple[Need, ...] = ()

    def finding(
        self,
        message: str,
        *,
        at: int | None = None,
        step_id: str | None = None,
        expected: str | None = None,
        observed: str | None = None,
        subject: str | None = None,
        severity: Severity | None = None,
    ) -> Finding:
        """Create a finding of this rule anchored at step position ``at`` (id ``step_id``)."""
        return Finding(
            self.rule_id,
            severity or self.severity,
            self.category,
            message,
            step_id,
            expected,
            observed,
            self.remediation,
            subject,
            at,
        )

    @property
    def anchor_id(self) -> str:
        """The HTML anchor of the rule's section in docs/rules.md."""
        return self.rule_id.lower()


RULES: dict[str, Rule] = {}


def rule(
    rule_id: str,
    *,
    category: str,
    title: str,
    severity: Severity,
    trigger: str,
    anchor: str,
    scoring: str,
    remediation: str,
    severity_note: str | None = None,
    emitted: bool = True,
    decided: Decided,
    needs: tuple[Need, ...] = (),
) -> Rule:
    """Declare and register a rule; fail at import time if its metadata is inconsistent."""
    if not _well_formed(rule_id):
        raise ValueError(f"rule id {rule_id!r} does not match ARH-XXX-NNN")
    if rule_id in RULES:
        raise ValueError(f"rule id {rule_id} is declared twice")
    cat = CATEGORY_BY_NAME.get(category)
    if cat is None or rule_id[4:7] != cat.prefix:
        raise ValueError(f"rule id {rule_id} does not belong to category {category!r}")
    if severity not in SEVERITIES:
        raise ValueError(f"rule {rule_id} has unknown severity {severity!r}")
    if decided not in DECIDED:
        raise ValueError(f"rule {rule_id} has unknown decided {decided!r}")
    for need in needs:
        if need.field not in MISSING_FIELDS:
            raise ValueError(f"rule {rule_id} needs unknown field {need.field!r}")
    for name, text in (
        ("title", title),
        ("trigger", trigger),
        ("anchor", anchor),
        ("scoring", scoring),
        ("remediation", remediation),
    ):
        if not text.strip():
            raise ValueError(f"rule {rule_id} has an empty {name}")
    declared = Rule(
        rule_id,
        category,
        title,
        severity,
        trigger,
        anchor,
        scoring,
        remediation,
        severity_note,
        emitted,
        decided,
        needs,
    )
    RULES[rule_id] = declared
    return declared


def fidelity_plan(policy: Policy) -> tuple[NotApplicable, ...]:
    """Every check the policy sets that needs a field a source may lack, in rule order."""
    return tuple(
        NotApplicable(declared.rule_id, need.check, need.field)
        for declared in RULES.values()
        for need in declared.needs
        if need.applies(policy)
    )
