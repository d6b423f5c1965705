"""The ``budgets`` section: upper limits on latency, cost and tokens."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from agent_reliability_harness._decode import check_keys, opt_nonneg_int, opt_nonneg_number

__all__ = ["Budgets"]


@dataclass(frozen=True, slots=True)
class Budgets:
    """Upper limits on latency, cost and tokens; ``None`` means not set."""

    max_total_latency_ms: int | float | None = None
    max_step_latency_ms: int | float | None = None
    max_total_cost_usd: int | float | None = None
    max_total_tokens: int | None = None

    _KEYS: ClassVar[tuple[str, ...]] = (
        "max_total_latency_ms",
        "max_step_latency_ms",
        "max_total_cost_usd",
        "max_total_tokens",
    )

    @classmethod
    def from_section(cls, raw: Mapping[str, Any]) -> Budgets:
        check_keys(raw, cls._KEYS, "/budgets")
        return cls(
            opt_nonneg_number(raw, "max_total_latency_ms", "/budgets"),
            opt_nonneg_number(raw, "max_step_latency_ms", "/budgets"),
            opt_nonneg_number(raw, "max_total_cost_usd", "/budgets"),
            opt_nonneg_int(raw, "max_total_tokens", "/budgets"),
        )

    @property
    def any_set(self) -> bool:
        return any(getattr(self, key) is not None for key in self._KEYS)
