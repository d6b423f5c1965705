"""The options for reading transcript records, kept apart so that reading canonical traces does
not import the transcript adapters."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["MESSAGE_KEYS", "RecordOptions"]

# Members of a wrapper object that may hold the message list, in the order they are tried.
MESSAGE_KEYS: Final = ("messages", "traj", "history")


@dataclass(frozen=True, slots=True)
class RecordOptions:
    """How to read one record of a transcript log.

    ``messages_at`` is a JSON pointer to the message list inside the record (by default the
    record itself when it is an array, else its ``messages``, ``traj`` or ``history``).
    ``trace_id_at`` are pointers to the parts of the trace id, joined with ``-``.
    ``default_id`` is the trace id when the record names none (the runner derives it from the
    file's path).
    """

    messages_at: str | None = None
    trace_id_at: tuple[str, ...] = ()
    default_id: str = "transcript"
