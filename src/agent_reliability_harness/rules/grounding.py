"""Grounding rules: responses that must be grounded cite their sources, and citations are usable."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from agent_reliability_harness.model.policy import Grounding, Policy
from agent_reliability_harness.model.report import CategoryResult
from agent_reliability_harness.rules._facts import TraceFacts
from agent_reliability_harness.rules._format import amount, show
from agent_reliability_harness.rules.online import StepAlone, Watch
from agent_reliability_harness.rules.registry import rule
from agent_reliability_harness.rules.ruleset import RuleSet
from agent_reliability_harness.rules.selection import Findings

if TYPE_CHECKING:
    from agent_reliability_harness.model.report import Severity

CATEGORY = "grounding"

NO_CITATIONS = rule(
    "ARH-GRD-001",
    decided="on_step",
    category=CATEGORY,
    severity="warning",
    title="Response that requires grounding has no citations",
    trigger="A model_response with requires_grounding: true has no citations.",
    severity_note="A warning by default; an error when the policy sets "
    "grounding.require_citations: true.",
    scoring="The response counts as uncited, which lowers coverage and so the grounding score, "
    "even when the finding is only a warning.",
    anchor="the model_response step",
    remediation="Make the agent cite the tool results or documents its answer relies on, or "
    "stop marking the response as requiring grounding.",
)
LOW_COVERAGE = rule(
    "ARH-GRD-002",
    decided="at_end",
    category=CATEGORY,
    severity="error",
    title="Citation coverage is below the policy minimum",
    trigger="The share of grounded model_responses that have at least one citation is below "
    "grounding.min_citation_coverage.",
    scoring="None beyond the coverage itself, from which the grounding score is computed.",
    anchor="the trace",
    remediation="Cite sources in more of the grounded responses, or lower min_citation_coverage.",
)
BAD_CITATION = rule(
    "ARH-GRD-003",
    decided="on_step",
    category=CATEGORY,
    severity="error",
    title="Citation is malformed or has an invalid URL",
    trigger="grounding.require_valid_citation_urls is true and a citation of a grounded "
    "response has a url that is not an absolute http(s) URL with a host, or has neither a url "
    "nor a non-empty source. It does not lower the score.",
    scoring="None: malformed citations do not lower the score, but the error fails the trace.",
    anchor="the model_response step",
    remediation="Give every citation a non-empty source or a valid http(s) url.",
)


def prepare(policy: Policy) -> Grounding:
    return policy.grounding


# URLs of printable ASCII with an http(s) scheme and a host free of brackets, with no user part
# and not starting with a port: urlsplit takes them without change or error, as valid, with a
# host. Only other URLs need urlsplit itself. The host's classes are printable ASCII (! to ~)
# without / ? # [ ] @, and : after the first character; spelt as what they hold, they compile
# in a fraction of a millisecond, where a negated class reaching U+10FFFF takes milliseconds of
# every start of the command line.
_PLAIN_HTTP_URL: Final = re.compile(r"(?i:https?)://[!\x22$-.0-9;->A-Z\\^-~]"
                                    r"[!\x22$-.0->A-Z\\^-~]*"
                                    r"(?:[/?#][\x21-\x7e]*)?")  # fmt: skip


def _parsed_url_problem(url: str) -> str:
    # only grounding with URL checks needs it; eager: +2.2 ms of every `arh validate`
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return "its url cannot be parsed"
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        return "its url is not an absolute http(s) URL"
    if not parts.hostname:  # "http://@", "http://:80", "http://user:pw@"
        return "its url has no host"
    return ""


def _citation_problem(citation: Mapping[str, Any]) -> str:
    url = citation.get("url")
    if url is not None:
        return "" if _PLAIN_HTTP_URL.fullmatch(url) else _parsed_url_problem(url)
    source = citation.get("source")
    if source is None or not source.strip():
        return "it has neither a url nor a non-empty source"
    return ""


def evaluate(facts: TraceFacts, grounding: Grounding, out: Findings) -> CategoryResult:
    grounded = facts.grounded
    if not grounded:
        return CategoryResult(CATEGORY, False, 100.0, 0, 0)
    cited = 0
    severity: Severity = "error" if grounding.require_citations else "warning"
    for at in grounded:
        step = facts.steps[at]
        if not step.citations:
            out.add(
                NO_CITATIONS.finding(
                    "model_response requires grounding but has no citations",
                    at=at,
                    step_id=step.step_id,
                    severity=severity,
                    expected="at least one citation",
                    observed="no citations",
                )
            )
            continue
        cited += 1
        if not grounding.require_valid_citation_urls:
            continue
        for number, citation in enumerate(step.citations, 1):
            problem = _citation_problem(citation)
            if problem:
                out.add(
                    BAD_CITATION.finding(
                        f"citation #{number} is malformed: {problem}",
                        at=at,
                        step_id=step.step_id,
                        subject=f"/citations/{number - 1}",
                        expected="a non-empty source or a valid http(s) url",
                        observed=show(citation),
                    )
                )
    coverage = cited / len(grounded)
    minimum = grounding.min_citation_coverage
    if coverage < minimum:
        shown, limit = amount(100 * coverage, 100 * minimum, 0)
        out.add(
            LOW_COVERAGE.finding(
                f"citation coverage {shown}% is below the policy minimum of {limit}%",
                expected=f">= {limit}%",
                observed=f"{shown}% ({cited} of {len(grounded)} grounded responses cited)",
            )
        )
    score = 100.0 * min(1.0, coverage / minimum) if minimum > 0 else 100.0 * coverage
    return CategoryResult(
        CATEGORY, True, max(0.0, min(100.0, score)), len(grounded), len(grounded) - cited
    )


def watch(policy: Policy, plan: Grounding) -> Watch:  # noqa: ARG001
    """Citations of each grounded response alone; coverage (ARH-GRD-002) is a matter of the
    whole run, decided at the end."""
    return StepAlone(
        evaluate,
        plan,
        lambda probe: probe.is_agent and bool(probe.alone.grounded),
        lambda finding: finding.rule_id != LOW_COVERAGE.rule_id,
    )


RULE_SET: Final = RuleSet(CATEGORY, prepare, evaluate, watch)
