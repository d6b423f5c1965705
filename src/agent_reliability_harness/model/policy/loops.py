"""The ``loops`` section (language 1.1): limits on repeated identical calls and on repeated
cycles of calls."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Final

from agent_reliability_harness._decode import (
    bad,
    check_keys,
    number_text,
    opt_bool,
    opt_nonneg_int,
    require_object,
)
from agent_reliability_harness.errors import join_pointer

__all__ = ["DEFAULT_CYCLE_LENGTH", "MAX_CYCLE_LENGTH", "Loops"]

DEFAULT_CYCLE_LENGTH: Final = 4
MAX_CYCLE_LENGTH: Final = 16


@dataclass(frozen=True, slots=True)
class Loops:
    """Limits on repeated identical calls (within a window) and on repeated cycles of calls."""

    max_identical_calls: int | None = None
    window: int | None = None
    max_cycle_repeats: int | None = None
    max_cycle_length: int = DEFAULT_CYCLE_LENGTH
    ignore_arguments: bool = False

    _KEYS: ClassVar[tuple[str, ...]] = (
        "max_identical_calls",
        "window",
        "max_cycle_repeats",
        "max_cycle_length",
        "ignore_arguments",
    )

    @classmethod
    def parse(cls, raw: object) -> Loops:
        base = "/loops"
        data = require_object(raw, base, "loops")
        check_keys(data, cls._KEYS, base)
        identical = opt_nonneg_int(data, "max_identical_calls", base, minimum=1)
        window = opt_nonneg_int(data, "window", base, minimum=2)
        repeats = opt_nonneg_int(data, "max_cycle_repeats", base, minimum=1)
        length = opt_nonneg_int(data, "max_cycle_length", base, minimum=2)
        if identical is None and repeats is None:
            raise bad(base, "sets no limit: give max_identical_calls, max_cycle_repeats, or both")
        if window is not None:
            if identical is None:
                raise bad(join_pointer(base, "window"), "window applies to max_identical_calls")
            if window <= identical:
                raise bad(
                    join_pointer(base, "window"),
                    f"a window of {number_text(window)} calls can never hold more than "
                    f"max_identical_calls ({number_text(identical)}) calls",
                )
        if length is not None:
            if repeats is None:
                raise bad(
                    join_pointer(base, "max_cycle_length"),
                    "max_cycle_length applies to max_cycle_repeats",
                )
            if length > MAX_CYCLE_LENGTH:
                raise bad(
                    join_pointer(base, "max_cycle_length"),
                    f"must be an integer from 2 to {MAX_CYCLE_LENGTH}, got {number_text(length)}",
                )
        return cls(
            identical,
            window,
            repeats,
            DEFAULT_CYCLE_LENGTH if length is None else length,
            opt_bool(data, "ignore_arguments", base),
        )

    def to_dict(self) -> dict[str, Any]:
        out = {key: getattr(self, key) for key in self._KEYS}
        if self.max_cycle_repeats is None:
            out["max_cycle_length"] = None  # it applies to cycles only
        return out
