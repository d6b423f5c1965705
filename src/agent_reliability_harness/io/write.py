"""Writing report files: atomically (a reader sees the old file or the new one, never a part),
and a report's body spooled while its head waits for the run's totals."""

from __future__ import annotations

import errno
import io
import os
import sys
from collections.abc import Sequence
from contextlib import suppress
from typing import IO, Final

from agent_reliability_harness.io.read import _display

__all__ = ["Spool", "refuse_directory", "write_atomic", "write_stdout"]


def _existing_ancestor(path: str) -> str:
    while path and not os.path.exists(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path or "."


def _write_parts(stream: IO[str], text: str | Sequence[str | Spool]) -> None:
    for part in [text] if isinstance(text, str) else text:
        if isinstance(part, str):
            stream.write(part)
        else:
            part.copy_to(stream)


def _new_file_beside(path: str, temp: list[str]) -> int:
    """A new, empty, hidden file in the directory of ``path``, opened for writing; its path is
    put in ``temp`` before it is made, so that the file is removed even if an exception (Ctrl-C,
    SIGTERM) comes just after. It gets the mode of any new file (read and write for all, less the
    umask), not the owner-only mode of ``tempfile.mkstemp``: a report is as readable as the
    user's other files."""
    directory, name = os.path.split(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        temp[:] = [os.path.join(directory, f".{name}.{os.urandom(6).hex()}.tmp")]
        try:
            return os.open(temp[0], flags, 0o666)
        except FileExistsError:  # pragma: no cover - 48 random bits taken
            temp.clear()  # someone else's file: not ours to remove


def refuse_directory(path: str) -> None:
    """Raise ``IsADirectoryError`` when ``path`` names a directory (one that exists, or any path
    ending in a separator), before anything is created on the way to it."""
    if path.endswith(_SEPARATORS) or os.path.isdir(path):
        raise IsADirectoryError(errno.EISDIR, "Is a directory", path)


_SEPARATORS: Final = tuple(sep for sep in (os.sep, os.altsep) if sep)


def write_atomic(path: str, text: str | Sequence[str | Spool]) -> None:
    """Write ``text`` (or its parts in order: strings and spooled bodies) as UTF-8 to ``path``
    through a temporary file and a rename, so a reader never sees a partial report.

    A symbolic link to a regular file is written through (its target is replaced, the link
    kept); anything else that exists and is not a regular file or a directory, such as a pipe, a
    device or a link to one (``/dev/stdout``), or a link to nothing yet, is opened and written
    directly, since replacing it would destroy it. A directory is refused (see
    :func:`refuse_directory`)."""
    refuse_directory(path)
    link = os.path.islink(path)
    if link and os.path.isfile(target := os.path.realpath(path)):
        path = target
    elif (link or os.path.exists(path)) and not os.path.isfile(path):
        with open(path, "w", encoding="utf-8", newline="") as stream:
            _write_parts(stream, text)
        return
    directory = os.path.dirname(path) or "."
    try:
        os.makedirs(directory, exist_ok=True)
    except (FileExistsError, NotADirectoryError):  # a part of the parent path is a file
        blocker = _existing_ancestor(directory)
        raise NotADirectoryError(
            errno.ENOTDIR, f"{_display(blocker)} is a file, not a directory"
        ) from None
    temp: list[str] = []
    try:
        handle = _new_file_beside(path, temp)
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as stream:
            _write_parts(stream, text)
        if os.path.exists(path):  # a report written again keeps the mode it was given
            os.chmod(temp[0], os.stat(path).st_mode & 0o7777)
        os.replace(temp[0], path)
    except BaseException:  # an error, Ctrl-C or (from the command line) SIGTERM
        if temp and os.path.exists(temp[0]):
            os.unlink(temp[0])
        raise


def write_stdout(text: str | Sequence[str | Spool]) -> None:
    """Write a report (or its parts in order) to standard output as UTF-8, whatever the
    console's encoding, after what was printed before it."""
    sys.stdout.flush()
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # a text-only stream put in place of standard output
        _write_parts(sys.stdout, text)
        sys.stdout.flush()
        return
    stream = io.TextIOWrapper(buffer, encoding="utf-8", newline="", write_through=True)
    try:
        _write_parts(stream, text)
        stream.flush()
    finally:
        stream.detach()  # standard output stays open


class Spool:
    """Text kept in memory while small and in an anonymous temporary file beyond that: the body
    of a report written one trace at a time, whose head can only be written at the end.

    When the temporary file cannot be made or written (no room in the temporary directory, a
    file size limit), ``problem`` says why, and the spool takes no more text."""

    _MEMORY: Final = 1 << 20

    def __init__(self) -> None:
        import tempfile  # eager: +3 ms of every `arh validate` (only report files need it)

        self._file = tempfile.SpooledTemporaryFile(  # noqa: SIM115 - closed by close()
            max_size=self._MEMORY, mode="w+", encoding="utf-8", newline=""
        )
        self.problem: str | None = None

    def write(self, text: str) -> None:
        if text and self.problem is None:
            try:
                self._file.write(text)
            except OSError as exc:
                reason = exc.strerror or str(exc)
                self.problem = f"the temporary file that holds it cannot be written: {reason}"
                self.close()

    def copy_to(self, stream: IO[str]) -> None:
        self._file.seek(0)
        while block := self._file.read(self._MEMORY):
            stream.write(block)

    def close(self) -> None:
        with suppress(OSError):  # what a failed temporary file still buffers goes nowhere
            self._file.close()
