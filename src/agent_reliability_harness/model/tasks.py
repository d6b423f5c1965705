"""The task a trace is a run of: what ``arh stats`` groups runs by, and what an expectations
file's ``task`` entries are matched with."""

from __future__ import annotations

import re
from typing import Final

__all__ = ["RUN_WORDS", "default_task_key"]

RUN_WORDS: Final = ("run", "trial", "try", "attempt", "rep", "repeat", "seed", "sample")
_RUN: Final = "(?:" + "|".join(sorted(RUN_WORDS, key=lambda w: (-len(w), w))) + ")"
# Compiled on first use by re's cache; only the statistics commands need them.
_RUN_SUFFIX: Final = r"(?i)[-_.:/#@ ]" + _RUN + r"[-_.]?[0-9]+\Z"
_RUN_PREFIX: Final = r"(?i)\A" + _RUN + r"[-_.]?[0-9]+/"


def default_task_key(trace_id: str) -> str:
    """The task a trace id names when its report records none: the id without a run marker.

    A run marker is one of the words in :data:`RUN_WORDS` (any case), optionally followed by
    ``-``, ``_`` or ``.``, then digits; it is removed once at the end of the id, after one of
    ``- _ . : / # @`` or a space (``refund-7-run2``, ``refund-7/trial_3``, ``refund-7#seed4``),
    and once at the start when a ``/`` follows it (``run-2/refund-7``). An id that would become
    empty is kept whole. Bare numbers are never removed (``rebook-1001`` names a task), so ids
    such as tau-bench's ``<task>-<trial>`` need ``--task-key``.
    """
    key = re.sub(_RUN_SUFFIX, "", trace_id, count=1)
    key = re.sub(_RUN_PREFIX, "", key, count=1)
    return key or trace_id
