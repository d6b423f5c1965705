"""The ``unsafe_patterns`` and ``grounding`` sections: what a run's texts must not contain, and
the citations that grounded responses need."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from agent_reliability_harness._decode import bad, check_keys, json_type, number_text, opt_bool
from agent_reliability_harness.errors import excerpt
from agent_reliability_harness.model._regex import check_consumes
from agent_reliability_harness.model.policy._parse import compile_regex

__all__ = ["Grounding", "UnsafePattern", "parse_unsafe_patterns"]


@dataclass(frozen=True, slots=True)
class UnsafePattern:
    """A disallowed-content regular expression, compiled case-insensitively."""

    pattern: str
    regex: re.Pattern[str] = field(compare=False)


def parse_unsafe_patterns(raw: object) -> list[UnsafePattern]:
    """The ``unsafe_patterns`` array: regular expressions compiled case-insensitively, none of
    which may match the empty string."""
    patterns: list[UnsafePattern] = []
    if raw is not None:
        if type(raw) is not list:
            raise bad(
                "/unsafe_patterns",
                f"must be an array of regular expressions, got {json_type(raw)}",
            )
        for index, pattern in enumerate(raw):
            pointer = f"/unsafe_patterns/{index}"
            if type(pattern) is not str or not pattern:
                raise bad(
                    pointer,
                    "must be a non-empty regular expression string, got "
                    + ("an empty string" if pattern == "" else json_type(pattern)),
                )
            regex = compile_regex(pattern, re.IGNORECASE, pointer)
            if regex.search("") is not None:
                raise bad(
                    pointer,
                    f"pattern {excerpt(pattern)} matches the empty string, so it flags every text",
                )

            check_consumes(pattern, re.IGNORECASE, pointer)
            patterns.append(UnsafePattern(pattern, regex))
    return patterns


@dataclass(frozen=True, slots=True)
class Grounding:
    """Citation requirements for model responses that are marked ``requires_grounding``."""

    require_citations: bool = False
    min_citation_coverage: float = 0.0
    require_valid_citation_urls: bool = False

    _KEYS: ClassVar[tuple[str, ...]] = (
        "require_citations",
        "min_citation_coverage",
        "require_valid_citation_urls",
    )

    @classmethod
    def from_section(cls, raw: Mapping[str, Any]) -> Grounding:
        check_keys(raw, cls._KEYS, "/grounding")
        coverage = raw.get("min_citation_coverage")
        if coverage is None:
            coverage = 0.0
        elif type(coverage) not in (int, float) or not 0 <= coverage <= 1:
            kind = type(coverage)
            shown = number_text(coverage) if kind is int or kind is float else json_type(coverage)
            raise bad(
                "/grounding/min_citation_coverage", f"must be a number from 0 to 1, got {shown}"
            )
        return cls(
            opt_bool(raw, "require_citations", "/grounding"),
            float(coverage),
            opt_bool(raw, "require_valid_citation_urls", "/grounding"),
        )
