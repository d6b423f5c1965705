"""The ``completion`` and ``error_handling`` sections: how a run must end and how long it may
be, and how it must handle failed tool calls."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from agent_reliability_harness._decode import check_keys, opt_bool, opt_nonneg_int

__all__ = ["Completion", "ErrorHandling"]


@dataclass(frozen=True, slots=True)
class Completion:
    """How a run must end, and how long it may be."""

    require_final_response: bool = False
    max_steps: int | None = None

    _KEYS: ClassVar[tuple[str, ...]] = ("require_final_response", "max_steps")

    @classmethod
    def from_section(cls, raw: Mapping[str, Any]) -> Completion:
        check_keys(raw, cls._KEYS, "/completion")
        return cls(
            opt_bool(raw, "require_final_response", "/completion"),
            opt_nonneg_int(raw, "max_steps", "/completion", minimum=1),
        )


@dataclass(frozen=True, slots=True)
class ErrorHandling:
    """How failed tool calls must be handled."""

    require_retry_on_error: bool = False
    max_attempts: int | None = None

    _KEYS: ClassVar[tuple[str, ...]] = ("require_retry_on_error", "max_attempts")

    @classmethod
    def from_section(cls, raw: Mapping[str, Any]) -> ErrorHandling:
        check_keys(raw, cls._KEYS, "/error_handling")
        return cls(
            opt_bool(raw, "require_retry_on_error", "/error_handling"),
            opt_nonneg_int(raw, "max_attempts", "/error_handling", minimum=1),
        )
