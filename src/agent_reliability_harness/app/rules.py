"""``arh rules`` and ``arh explain``: the rule registry as text."""

from __future__ import annotations

import difflib
import sys
from argparse import Namespace

from agent_reliability_harness.app import Status
from agent_reliability_harness.app.output import error, say
from agent_reliability_harness.errors import excerpt
from agent_reliability_harness.render import rules_doc
from agent_reliability_harness.rules import RULES

__all__ = ["explain", "rules"]


def rules(args: Namespace) -> Status:
    """Print every rule, as text, Markdown (docs/rules.md) or JSON."""
    render = {
        "text": rules_doc.rules_table,
        "markdown": rules_doc.rules_markdown,
        "json": rules_doc.rules_json,
    }[args.format]
    say(render(), sys.stdout)
    return Status.OK


def explain(args: Namespace) -> Status:
    """Print what a rule checks and how to fix it; a usage error (after saying so) for an
    unknown rule."""
    rule = RULES.get(args.rule_id.strip().upper())
    if rule is None:
        close = difflib.get_close_matches(args.rule_id.upper(), list(RULES), n=1)
        hint = f" (did you mean {close[0]}?)" if close else "; `arh rules` lists them"
        error(f"unknown rule {excerpt(args.rule_id)}{hint}")
        return Status.USAGE
    say(rules_doc.explain_text(rule), sys.stdout)
    return Status.OK
