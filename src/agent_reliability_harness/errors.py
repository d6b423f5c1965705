"""The error family: every bad input becomes one :class:`InputError` with a location."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "AGENT_FAILURE",
    "EVALUATION_ERROR",
    "EXCERPT_CHARS",
    "FAILURE_KINDS",
    "INFRASTRUCTURE_FAILURE",
    "TOO_DEEP",
    "ArhError",
    "InputError",
    "PointerMiss",
    "UsageError",
    "excerpt",
    "join_pointer",
    "no_failures",
    "parse_pointer",
    "pointer_token",
]

# In every message about a value nested deeper than the stack lets arh decode or walk: the
# runner looks for it, since how deep that is differs between processes.
TOO_DEEP = "nested too deeply"
# The three kinds of failure (docs/exit-codes.md, "Three kinds of failure"): the agent failed (its
# trace has findings that fail it: exit status 1), the evaluation could not decide (a bad policy,
# an unreadable trace, a judge without a judgment: 2 or 3), the infrastructure failed (the machine
# or a worker could not do the work: 4). Reports write these names as they are.
AGENT_FAILURE = "agent_failure"
EVALUATION_ERROR = "evaluation_error"
INFRASTRUCTURE_FAILURE = "infrastructure_failure"
FAILURE_KINDS = (AGENT_FAILURE, EVALUATION_ERROR, INFRASTRUCTURE_FAILURE)


def no_failures() -> dict[str, int]:
    """The counts of a run with no failure of any kind, in the order of ``FAILURE_KINDS``."""
    return dict.fromkeys(FAILURE_KINDS, 0)


# The most characters of a value that a message quotes (the rest is counted, not shown).
EXCERPT_CHARS = 100


def excerpt(value: object, *, quote: bool = True) -> str:
    """``value`` as a message quotes it: a string in quotes, as ``repr`` writes it (or as it is,
    with ``quote=False``), anything else by its ``repr``; and when that is longer than
    :data:`EXCERPT_CHARS`, its beginning, an ellipsis and its length:
    ``'1e999...'... (10002 characters)``. Every message that quotes a value of an input or an
    argument goes through it, so that one line stays one readable line whatever the input
    holds."""
    if isinstance(value, str):
        text = value
    else:
        quote = False
        try:
            text = repr(value)
        except ValueError:  # an integer of more digits than Python writes as text
            text = f"a value of type {type(value).__name__} too long to show"
    if len(text) <= EXCERPT_CHARS:
        return repr(text) if quote else text
    head = text[:EXCERPT_CHARS]
    shown = repr(head) if quote else head
    return f"{shown}... ({len(text)} characters)"


class ArhError(Exception):
    """Base class of every error the harness raises on purpose."""


class UsageError(ArhError, ValueError):
    """A caller passed an argument the API or CLI does not accept."""


def pointer_token(key: str | int) -> str:
    """Escape one reference token of a JSON pointer (RFC 6901)."""
    if isinstance(key, int):
        return str(key)
    return key.replace("~", "~0").replace("/", "~1")


def join_pointer(base: str, *keys: str | int) -> str:
    """Append reference tokens to a JSON pointer."""
    return base + "".join("/" + pointer_token(k) for k in keys)


def parse_pointer(text: str) -> tuple[str, ...]:
    """The unescaped reference tokens of a JSON pointer (RFC 6901): ``""``, or tokens each after
    a ``/``, in which ``~0`` stands for ``~`` and ``~1`` for ``/``. The one parser of every
    pointer arh reads (command-line options and policy paths); a malformed one is a
    :class:`UsageError` saying what is wrong, which the caller places (an option, a field)."""
    if text == "":
        return ()
    if not text.startswith("/"):
        raise UsageError(f"a JSON pointer is empty or starts with '/', got {excerpt(text)}")
    tokens = text[1:].split("/")
    for token in tokens:
        if "~" in token and any(
            char == "~" and token[at + 1 : at + 2] not in ("0", "1")
            for at, char in enumerate(token)
        ):
            raise UsageError(
                f"invalid JSON pointer {excerpt(text)}: '~' must be followed by 0 or 1 (~0 is "
                "'~', ~1 is '/')"
            )
    return tuple(t.replace("~1", "/").replace("~0", "~") for t in tokens)


@dataclass(frozen=True, slots=True)
class PointerMiss:
    """A pointer option (``option``: ``messages_at``, ``trace_id_at``, ``task_key`` or
    ``outcome_at``) that found nothing in one document: the ``pointer`` it looked for, the
    deepest part of it that exists (``found``), what is there (``there``, said of it: "holds the
    keys ...", "is a string"), and a pointer to a member named as the pointer's last part
    elsewhere in the document (``suggestion``), if there is one. Pointers are relative to the
    document the option reads."""

    option: str
    pointer: str
    found: str
    there: str
    suggestion: str | None = None


class InputError(ArhError, ValueError):
    """Bad input: a file, a line of it and a JSON pointer into it, and what is wrong.

    It is a ``ValueError`` too, as every error about a bad value was in arh 0.2.x, so code that
    catches ``ValueError`` around a parse or a comparison keeps working.

    ``pointer`` is a JSON pointer (RFC 6901) into the parsed document; ``""`` means the whole
    document and ``None`` means no position inside it is known (for example unreadable bytes).
    ``line`` and ``column`` locate the problem in the text when the pointer cannot (JSON syntax
    errors) or name the record of a JSON Lines file. ``miss`` is set when a pointer option
    matched nothing in the document. ``kind`` is what failed: the evaluation
    (:data:`EVALUATION_ERROR`: the input is bad or cannot be read, so nothing can be decided about
    it), or the infrastructure (:data:`INFRASTRUCTURE_FAILURE`: the input may be fine, but the
    machine could not check it, for example for lack of memory).
    """

    def __init__(
        self,
        message: str,
        *,
        pointer: str | None = "",
        source: str | None = None,
        line: int | None = None,
        column: int | None = None,
        miss: PointerMiss | None = None,
        kind: str = EVALUATION_ERROR,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.pointer = pointer
        self.source = source
        self.line = line
        self.column = column
        self.miss = miss
        self.kind = kind

    def located(self, source: str, line: int | None = None) -> InputError:
        """Return a copy that names the file (and the JSON Lines record) it came from."""
        return InputError(
            self.message,
            pointer=self.pointer,
            source=source,
            line=self.line if line is None else line,
            column=self.column,
            miss=self.miss,
            kind=self.kind,
        )

    def nested(self, *keys: str | int) -> InputError:
        """Return a copy whose pointer is prefixed by ``keys`` (for errors in a sub-document)."""
        pointer = None if self.pointer is None else join_pointer("", *keys) + self.pointer
        return InputError(
            self.message,
            pointer=pointer,
            source=self.source,
            line=self.line,
            column=self.column,
            miss=self.miss,
            kind=self.kind,
        )

    def location(self) -> str:
        """``file:line:column`` with the parts that are known."""
        parts: Iterable[object] = (
            p for p in (self.source, self.line, self.column) if p is not None
        )
        return ":".join(str(p) for p in parts)

    def __str__(self) -> str:
        where = self.location()
        head = f"{where}: " if where else ""
        if self.pointer:
            head += f"{self.pointer}: "
        return head + self.message

    def to_dict(self) -> dict[str, object]:
        """The JSON form used in reports (``input_errors``)."""
        return {
            "source": self.source,
            "line": self.line,
            "column": self.column,
            "pointer": self.pointer,
            "message": self.message,
            "kind": self.kind,
        }
