"""What each command does, below the command line: read the inputs, validate, compare, gate,
and write the reports. One module per command; :mod:`agent_reliability_harness.cli` parses the
arguments, checks their combination, calls the command here and turns its outcome into the
exit status.
"""

__all__ = ["TerminatedError"]


class TerminatedError(BaseException):
    """SIGTERM arrived while a report file was being written (see ``output.write_report``)."""
