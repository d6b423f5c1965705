"""What the commands print (on the standard streams the command line set up) and the report
files they write."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from typing import IO

from agent_reliability_harness.app import TerminatedError, error, say
from agent_reliability_harness.errors import InputError
from agent_reliability_harness.io import Spool, write_atomic, write_stdout

__all__ = ["error", "report_error", "say", "use_color", "write_report"]


def report_error(exc: InputError) -> None:
    error(str(exc))


def use_color(choice: str, stream: IO[str]) -> bool:
    """Whether ``--color choice`` colours what goes to ``stream``: the option, else NO_COLOR
    (no colour), else FORCE_COLOR (colour, even into a file or pipe, as CI logs want), else on a
    terminal that can show it; the two variables count when set to anything but the empty string,
    and NO_COLOR wins over FORCE_COLOR, as in CPython's own colour choice."""
    if choice != "auto":
        return choice == "always"
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    isatty = getattr(stream, "isatty", None)
    if not (isatty and isatty()):
        return False
    return os.environ.get("TERM") != "dumb"  # a terminal that says it cannot show colour


@contextlib.contextmanager
def _terminable() -> Iterator[None]:
    """While a report file is written, SIGTERM raises :class:`TerminatedError` as Ctrl-C
    raises ``KeyboardInterrupt``, so that the report's temporary file is removed on the way out
    (by default SIGTERM ends the process at once, and the file stayed). Only the main thread
    can set a signal handler; elsewhere the signal is left as it is."""

    def stop(*_: object) -> None:
        raise TerminatedError

    try:
        previous = signal.signal(signal.SIGTERM, stop)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def write_report(path: str, text: str | Sequence[str | Spool], what: str, quiet: bool) -> int:
    """Write one report file (``-``: standard output): 0, or 1 after printing why it could not
    be written."""
    if path == "-":
        write_stdout(text)
        return 0
    try:
        with _terminable():
            write_atomic(path, text)
    except OSError as exc:
        error(f"cannot write {path}: {exc.strerror or exc}")
        return 1
    if not quiet:
        say(f"{what} written to {path}\n", sys.stdout)
    return 0
