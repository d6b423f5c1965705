"""Answer outcomes as the console shows them in ``arh stats`` and ``arh compare``
(``regression/answers.py``): pass rates with their 95% Wilson intervals, and flips."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from agent_reliability_harness.regression.answers import AnswerFlips, AnswerRate
from agent_reliability_harness.render._markdown import md_code, md_row
from agent_reliability_harness.render._text import terminal_safe

__all__ = ["flip_lines", "flip_rows", "rate_lines", "rate_markdown"]

_SHOWN: Final = 10  # trace ids listed per kind of flip


def _rate(rate: AnswerRate) -> str:
    if rate.rate is None:
        text = "none judged"
    else:
        low, high = rate.interval
        text = (
            f"{rate.passed:,} of {rate.judged:,} passed {rate.rate:.3f} "
            f"(95% CI {low:.3f}\u2013{high:.3f})"
        )
    if rate.not_judged:
        text += f", {rate.not_judged:,} not judged (no expected outcome)"
    return text


def rate_lines(rates: Sequence[AnswerRate]) -> list[str]:
    """The answers block of ``arh stats`` (none without answer outcomes)."""
    if not rates:
        return []
    lines = ["", f"ANSWERS  all traces: {_rate(rates[0])}"]
    if len(rates) > 2:  # one workflow: the line above says it all
        lines += [f"  {terminal_safe(r.workflow or '')!r}: {_rate(r)}" for r in rates[1:]]
    return lines


def _ids(ids: Sequence[str]) -> str:
    shown = ", ".join(terminal_safe(i) for i in ids[:_SHOWN])
    more = f", and {len(ids) - _SHOWN:,} more" if len(ids) > _SHOWN else ""
    return f": {shown}{more}" if ids else ""


def flip_lines(flips: AnswerFlips | None) -> list[str]:
    """The answers block of ``arh compare`` (none without answer outcomes)."""
    if flips is None:
        return []
    return [
        "",
        f"ANSWERS  baseline {_rate(flips.baseline)}",
        f"         candidate {_rate(flips.candidate)}",
        f"  answer pass->fail {len(flips.pass_to_fail):,}{_ids(flips.pass_to_fail)}",
        f"  answer fail->pass {len(flips.fail_to_pass):,}{_ids(flips.fail_to_pass)}",
    ]


def _md_rate(rate: AnswerRate) -> str:
    if rate.rate is None:
        return "-"
    low, high = rate.interval
    return f"{rate.rate:.3f} ({low:.3f}\u2013{high:.3f})"


def rate_markdown(rates: Sequence[AnswerRate]) -> list[str]:
    """The answers table of ``arh stats --md-out`` (none without answer outcomes)."""
    if not rates:
        return []
    out = [
        "",
        "### Answers",
        "",
        "| Workflow | Passed | Failed | Not judged | Pass rate (95% CI) |",
        "|---|---|---|---|---|",
    ]
    for rate in rates if len(rates) > 2 else rates[:1]:
        name = "all traces" if rate.workflow is None else md_code(rate.workflow)
        cells = [str(rate.passed), str(rate.judged - rate.passed), str(rate.not_judged)]
        out.append(md_row([name, *cells, _md_rate(rate)]))
    return out


def flip_rows(flips: AnswerFlips | None) -> list[str]:
    """Rows of the summary table of ``arh compare --md-out`` (none without answer outcomes)."""
    if flips is None:
        return []

    def ids(found: Sequence[str]) -> str:
        shown = ", ".join(md_code(i) for i in found[:_SHOWN])
        more = f", and {len(found) - _SHOWN:,} more" if len(found) > _SHOWN else ""
        return f"{len(found):,}" + (f": {shown}{more}" if found else "")

    return [
        md_row(["Answer pass rate", f"{_md_rate(flips.baseline)} -> {_md_rate(flips.candidate)}"]),
        md_row(["Answer pass to fail", ids(flips.pass_to_fail)]),
        md_row(["Answer fail to pass", ids(flips.fail_to_pass)]),
    ]
