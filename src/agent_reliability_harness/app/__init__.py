"""What each command does, below the command line: read the inputs, validate, compare, gate,
and write the reports. One module per command; :mod:`agent_reliability_harness.cli` parses the
arguments, checks their combination, calls the command here and returns the :class:`Status` it
gives as the exit status.
"""

import sys
from enum import IntEnum
from typing import IO

__all__ = ["Status", "TerminatedError", "error", "say", "worst"]


def say(text: str, stream: IO[str] | None) -> None:
    """Write ``text`` to ``stream`` at once (nothing when the process was started without it)."""
    if stream is None:  # started without it
        return
    stream.write(text)
    stream.flush()


def error(message: str) -> None:
    """``error: <message>`` on standard error, made safe for a terminal."""
    # imported here: the render package costs milliseconds that `arh --version` does not need
    from agent_reliability_harness.render._text import terminal_safe

    say(f"error: {terminal_safe(message)}\n", sys.stderr)


class TerminatedError(BaseException):
    """SIGTERM arrived while a report file was being written (see ``output.write_report``)."""


class Status(IntEnum):
    """A command's exit status (docs/exit-codes.md): whether the agent failed is 1, whether the
    check could not run, or not completely, is 2 or 3."""

    OK = 0  # every trace passed, the gate passed
    FAILED = 1  # a trace failed, or a gate: the check ran on every input
    USAGE = 2  # a usage or configuration error (options, policy, gate file): nothing was checked
    INPUT = 3  # an input could not be read, held no trace, or a report could not be written
    INFRASTRUCTURE = 4  # arh run: a task timed out, a worker crashed, a run record is missing


# When one run has several outcomes, the one a caller must hear about first: a check that could
# not run, then one that ran on only some inputs, then what it found.
_PRECEDENCE = (Status.OK, Status.FAILED, Status.INPUT, Status.INFRASTRUCTURE, Status.USAGE)


def worst(*statuses: Status) -> Status:
    """The status of a run with all of ``statuses``: usage (2) over infrastructure (4) over
    input (3) over failed (1) over OK (0)."""
    return max(statuses, key=_PRECEDENCE.index, default=Status.OK)
