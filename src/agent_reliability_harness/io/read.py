"""Reading inputs: files, directories, JSON Lines (whole or in chunks) and standard input."""

from __future__ import annotations

import codecs
import errno
import os
import posixpath
import stat
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass, replace
from io import BytesIO
from typing import IO, Any, Final

from agent_reliability_harness._json import decode_bytes, loads
from agent_reliability_harness.errors import INFRASTRUCTURE_FAILURE, InputError

__all__ = [
    "DEFAULT_MAX_INPUT",
    "STDIN_NAME",
    "ByteRange",
    "Chunk",
    "Document",
    "Source",
    "cannot_read",
    "count_breaks",
    "expand_inputs",
    "file_breaks",
    "file_source",
    "is_jsonl_name",
    "is_regular_file",
    "jsonl_chunks",
    "no_records",
    "os_path",
    "range_documents",
    "read_chunk",
    "read_documents",
    "read_input_file",
    "read_json_file",
    "read_range",
    "read_whole",
    "size_text",
    "stdin_chunks",
    "stream_chunks",
    "stream_documents",
    "utf8_name",
]

STDIN: Final = "-"
STDIN_NAME: Final = "<stdin>"
_JSONL_SUFFIXES: Final = (".jsonl", ".ndjson")
_TRACE_SUFFIXES: Final = (".json", *_JSONL_SUFFIXES)


@dataclass(frozen=True, slots=True)
class Source:
    """One input: a file path (shown as given, with ``/`` separators) or standard input.

    ``relative`` is the path relative to the command-line argument it was found under (the file
    name when the argument is the file itself), or the path as given when another argument has a
    file of the same relative path (see :func:`expand_inputs`); traces that carry no id are
    named after it.
    """

    name: str
    path: str | None
    jsonl: bool
    relative: str = ""


@dataclass(frozen=True, slots=True)
class Document:
    """One decoded JSON document and where it came from (``line`` for JSON Lines records)."""

    source: str
    line: int | None
    value: Any


_UTF8_NAMES: Final = codecs.lookup(sys.getfilesystemencoding()).name == "utf-8"


def utf8_name(path: str) -> str:
    """A path with its bytes read as UTF-8, whatever the locale. Python decodes the names it gets
    from the system (arguments, directory listings) with the locale's encoding: under one that
    is not UTF-8 (``LC_ALL=C`` with ``PYTHONUTF8=0``, a Latin-1 locale) ``é`` came out as two
    lone surrogates or as ``Ã©``. Bytes that are not UTF-8 are lone surrogates (U+DC80 to
    U+DCFF) in any locale, as Python spells them in UTF-8 mode."""
    if _UTF8_NAMES:
        return path
    try:
        return os.fsencode(path).decode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # not a name from the system (a string given in code): as it is
        return path


def os_path(name: str) -> str:
    """The path that opens the file named ``name`` by a report (see :func:`utf8_name`)."""
    if _UTF8_NAMES:
        return name
    try:
        return os.fsdecode(name.encode("utf-8", "surrogateescape"))
    except UnicodeEncodeError:
        return name


def _display(path: str) -> str:
    """A path as the reports show it: ``/`` separators, no empty or ``.`` parts (``..`` kept),
    its bytes read as UTF-8 (:func:`utf8_name`)."""
    path = utf8_name(path)
    for separator in (os.sep, os.altsep):
        if separator and separator != "/":
            path = path.replace(separator, "/")
    drive, rest = os.path.splitdrive(path)
    parts = [part for part in rest.split("/") if part not in ("", ".")]
    shown = drive + ("/" if rest.startswith("/") else "") + "/".join(parts)
    return shown or "."


def _suffix(name: str) -> str:
    return os.path.splitext(name)[1].lower()


def is_jsonl_name(name: str) -> bool:
    """Is a file of this name read as JSON Lines (a ``.jsonl`` or ``.ndjson`` suffix, in any
    case)? ``arh convert -o`` writes such a file as JSON Lines, so that it reads back."""
    return _suffix(name) in _JSONL_SUFFIXES


def _walk(root: str) -> tuple[list[tuple[str, str]], list[OSError]]:
    """(path, path relative to ``root``) of every trace file below ``root``, including entries
    with a trace file's name that are not regular files (the caller refuses those); and why
    each directory that could not be listed (``root`` itself among them) could not be."""
    found: list[tuple[str, str]] = []
    unlisted: list[OSError] = []
    for directory, subdirs, files in os.walk(root, onerror=unlisted.append):
        subdirs[:] = [d for d in subdirs if not d.startswith(".")]
        for name in files:
            if not name.startswith(".") and _suffix(name) in _TRACE_SUFFIXES:
                path = os.path.join(directory, name)
                found.append((path, os.path.relpath(path, root)))
    return found, unlisted


_NOT_REGULAR: Final = (
    "not a regular file (a device, pipe or socket, or a link to one): only regular files are "
    "read from a directory"
)
_DEVICE: Final = (
    "a device, not a file (a device such as /dev/zero never ends): pass a file, a pipe, or - "
    "for standard input"
)

# The most one input may make arh hold: a file or standard input read whole, or one line of JSON
# Lines (`--max-input-size`). The largest legitimate inputs seen are reports of big runs (about
# 2 KB a trace) and single traces of tens of MB; checking holds up to about nine times an
# input's size (benchmarks/perf/input_memory.py), so 512 MiB is about the most a 7 GB CI machine
# fits.
DEFAULT_MAX_INPUT: Final = 512 << 20
_PIECE: Final = 1 << 20  # streams are read, and overlong lines skipped, in pieces of this size
_UNITS: Final = ((30, "G"), (20, "M"), (10, "K"))


def size_text(size: int) -> str:
    """A size as ``--max-input-size`` takes it: ``512M``, ``1G``, ``64K``, or bytes."""
    for shift, unit in _UNITS:
        if size >= 1 << shift and not size % (1 << shift):
            return f"{size >> shift}{unit}"
    return str(size)


def _too_large(limit: int) -> InputError:
    return InputError(
        f"the input is larger than --max-input-size ({size_text(limit)})", pointer=None
    )


def _too_long(limit: int) -> InputError:
    return InputError(
        f"the line is longer than --max-input-size ({size_text(limit)})", pointer=None
    )


def _no_memory(what: str) -> InputError:
    # the machine failed, not the input (which may well be fine): docs/exit-codes.md
    return InputError(
        f"not enough memory to read this {what}", pointer=None, kind=INFRASTRUCTURE_FAILURE
    )


def _is_device(mode: int) -> bool:
    return stat.S_ISCHR(mode) or stat.S_ISBLK(mode)


def is_regular_file(path: str) -> bool:
    """Does ``path`` name a regular file (through links)? A pipe can only be read once."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def expand_inputs(args: Sequence[str]) -> tuple[list[Source], list[InputError]]:
    """Resolve command-line inputs into sources in a stable order, plus errors for bad ones.

    Directories are searched recursively for ``*.json``, ``*.jsonl`` and ``*.ndjson`` files
    (names starting with ``.`` are skipped). Sources are sorted by name, so the order in which
    inputs are given does not change any result; a path given twice is read once. A device
    named (``/dev/zero``) is an error, never read; a pipe named is read.

    Files found under different arguments whose relative paths differ only in their suffix or
    not at all (``task1.json`` in both ``runs/a`` and ``runs/b``) would give their transcripts
    the same default trace id: those files are named by their paths as given instead
    (``runs/a/task1.json``). Every other file keeps its relative path, so the ids of one input,
    or of inputs whose names do not meet, do not depend on what else is given.
    """
    sources: dict[str, Source] = {}
    origins: dict[str, str] = {}  # the argument each source was found under
    errors: list[InputError] = []
    unreadable: set[str] = set()  # the directories that could not be listed

    def add(source: Source, arg: str) -> None:
        # a file reached from two arguments keeps its longest relative path, whatever the order
        known = sources.get(source.name)
        if known is None or (len(source.relative), source.relative) > (
            len(known.relative),
            known.relative,
        ):
            sources[source.name] = source
            origins[source.name] = arg

    for arg in args:
        if arg == STDIN:
            add(Source(STDIN_NAME, None, jsonl=False, relative="stdin"), arg)
            continue
        name = _display(arg)
        try:
            if os.path.isdir(arg):
                files, unlisted = _walk(arg)
                for exc in sorted(unlisted, key=lambda e: str(e.filename)):
                    shown = _display(str(exc.filename or arg))
                    if shown not in unreadable:  # also named, or found under another argument
                        unreadable.add(shown)
                        errors.append(cannot_read(shown, exc))
                if not files and not unlisted:
                    errors.append(
                        InputError(
                            "the directory contains no .json, .jsonl or .ndjson files",
                            pointer=None,
                            source=name,
                        )
                    )
                for file, relative in sorted(files):  # the errors in a stable order too
                    if not os.path.isfile(file) and os.path.exists(file):  # it may never end
                        errors.append(InputError(_NOT_REGULAR, pointer=None, source=_display(file)))
                        continue
                    jsonl = is_jsonl_name(file)
                    add(Source(_display(file), file, jsonl, _display(relative)), arg)
            elif os.path.exists(arg):
                if _is_device(os.stat(arg).st_mode):
                    errors.append(InputError(_DEVICE, pointer=None, source=name))
                    continue
                jsonl = is_jsonl_name(arg)
                add(Source(name, arg, jsonl, os.path.basename(name)), arg)
            else:
                with suppress(FileNotFoundError):  # exists() also says False for a loop of links
                    os.stat(arg)  # or a name too long: raise what it swallowed
                errors.append(InputError("no such file or directory", pointer=None, source=name))
        except OSError as exc:
            errors.append(cannot_read(name, exc))
    _tell_apart(sources, origins)
    return [sources[key] for key in sorted(sources)], errors


def _tell_apart(sources: dict[str, Source], origins: dict[str, str]) -> None:
    """Name by its path as given every file whose relative path, without its suffix, is also
    that of a file found under another argument (see :func:`expand_inputs`)."""
    arguments: dict[str, set[str]] = {}
    for name, source in sources.items():
        if source.path is not None:
            stem = posixpath.splitext(source.relative)[0]
            arguments.setdefault(stem, set()).add(origins[name])
    for name, source in sources.items():
        stem = posixpath.splitext(source.relative)[0]
        if source.path is not None and len(arguments[stem]) > 1:
            sources[name] = replace(source, relative=source.name)


def _read_capped(stream: IO[bytes], limit: int, expected: int = 0) -> bytes | None:
    """Every byte of ``stream``, or None when it has more than ``limit`` (of which no more than
    about ``limit`` are read). ``expected`` is a regular file's size: it is read at once."""
    parts = []
    left = limit + 1
    piece = expected + 1 if expected else _PIECE
    while left > 0 and (part := stream.read(min(piece, left))):
        parts.append(part)
        left -= len(part)
        piece = _PIECE
    return None if left <= 0 else b"".join(parts)  # (one part is not copied)


def _stdin_stream() -> IO[bytes]:
    if sys.stdin is None:  # the process was started with standard input closed
        raise OSError(errno.EBADF, "standard input is closed")
    return sys.stdin.buffer


def read_input_file(path: str, limit: int = DEFAULT_MAX_INPUT) -> bytes:
    """The bytes of the file (or pipe) at ``path``. Raises ``OSError``, or an ``InputError``
    without a source for a device, which is not even opened, or for more than ``limit`` bytes,
    which are not read (a pipe's are read up to the limit)."""
    info = os.stat(path)
    if _is_device(info.st_mode):
        raise InputError(_DEVICE, pointer=None)
    size = info.st_size if stat.S_ISREG(info.st_mode) else 0
    if size > limit:
        raise _too_large(limit)
    with open(path, "rb") as stream:
        data = _read_capped(stream, limit, size)
    if data is None:
        raise _too_large(limit)
    return data


_Line = bytes | InputError  # a line read, or why it could not be (see _lines)


def _lines(stream: IO[bytes], limit: int, length: int = -1, starts: int = -1) -> Iterator[_Line]:
    """The lines of a binary stream, each with its line feed (the last may have none): a line
    ends at ``\\n`` only. In place of a line of more than ``limit`` bytes, or one there is not
    enough memory for, an ``InputError`` (no location): the rest of that line is read a piece at
    a time and let go. With ``length`` >= 0, only that many bytes are read; with ``starts`` >= 0,
    only the lines that start within that many bytes, each read to its end."""
    readline = stream.readline
    whole = starts >= 0  # lines are read to their end, wherever that is
    left = starts if whole else length if length >= 0 else sys.maxsize
    while left > 0:
        error = None
        try:
            line = readline(limit + 1 if whole else min(limit + 1, left))
        except MemoryError:
            line, error = b"", _no_memory("line")
        if error is None:
            if not line:
                return
            left -= len(line)
            if len(line) <= limit:
                box = [line]
                del line
                yield box.pop()  # no local keeps the line while it is read
                continue
            error = _too_long(limit)
        while (whole or left > 0) and not line.endswith(b"\n"):  # the rest of the line
            line = readline(_PIECE if whole else min(_PIECE, left))
            if not line:
                break
            left -= len(line)
        yield error


def _jsonl_records(
    name: str,
    lines: Iterable[_Line],
    first_line: int = 1,
    tally: list[int] | None = None,
) -> Iterator[Document | InputError]:
    """The records of JSON Lines (see :func:`_lines`), numbered from ``first_line``. Without
    ``tally`` these are all of the input's lines, and an input without records is an error;
    with it, they are part of a file, and ``tally[0]`` gets the number of records (lines that
    decode and are not blank, and lines too big to read) added to it at the end."""
    records = 0
    number = first_line - 1
    for raw in lines:  # (not enumerate: its reused tuple would keep the last line)
        number += 1
        if isinstance(raw, InputError):  # a line too long, or too big for the memory left
            records += 1  # (not blank: an empty input is not what went wrong)
            yield raw.located(name, number)
            continue
        try:
            text = decode_bytes(raw) if number == 1 else _decode_line(raw)
            del raw  # a line can be big: keep one copy of it at a time
            if not text or text.isspace():
                continue
            records += 1
            box: list[Document | InputError] = [Document(name, number, _loads_line(text))]
        except InputError as exc:
            yield exc.located(name, number)
            continue
        except MemoryError:
            text = ""  # (and the line's bytes go with the next line)
            box = [_no_memory("line").located(name, number)]
        del text
        yield box.pop()  # no local keeps the document while it is checked
    if tally is not None:
        tally[0] += records
    elif not records:
        yield no_records(name)


_LONE_CR: Final = (
    "records separated by a carriage return alone (old Mac line ends): JSON Lines records end "
    "with a line feed (LF or CRLF)"
)


def _loads_line(text: str) -> Any:
    try:
        return loads(text)
    except InputError:
        pass
    # again without the line break, so that the error's column is on this line
    line = text.rstrip("\r\n")
    try:
        return loads(line)
    except InputError as exc:
        error = exc
    if error.message.startswith("invalid JSON: Extra data") and error.column is not None:
        # a carriage return alone is a line end to some editors, not to JSON Lines (nor to
        # JSON, for which it is whitespace): the value before it is followed by another one
        before = line[: error.column - 1]
        if "\r" in before[len(before.rstrip(" \t\r")) :]:
            raise InputError(_LONE_CR, pointer=None, line=error.line, column=error.column)
    raise error


def no_records(name: str) -> InputError:
    """The error for a JSON Lines input without records: an empty input must not let a CI gate
    pass with nothing checked."""
    return InputError("the JSON Lines input has no records", pointer=None, source=name)


@dataclass(frozen=True, slots=True)
class Chunk:
    """Part of a JSON Lines file: ``length`` bytes from ``offset`` (-1: to the end), whole
    lines, the first of them line number ``first_line``, ``lines`` line breaks in all; or, with
    ``data``, those lines themselves (standard input, which cannot be read again), an
    ``InputError`` in place of a line that could not be read (see :func:`_lines`)."""

    offset: int
    length: int
    first_line: int
    lines: int = 0
    data: tuple[_Line, ...] | None = None


def jsonl_chunks(path: str, size: int) -> Iterator[Chunk]:
    """Cut a JSON Lines file into chunks of about ``size`` bytes that end at line ends. Only
    their places are kept: no more than ``size`` bytes are held at once, however long a line."""
    with open(path, "rb") as stream:
        yield from stream_chunks(stream, size)


def stream_chunks(stream: IO[bytes], size: int) -> Iterator[Chunk]:
    """:func:`jsonl_chunks` of JSON Lines read from an open binary stream."""
    offset, line = 0, 1
    while True:
        data = stream.read(size)
        if not data:
            return
        length, breaks, ended = len(data), data.count(b"\n"), data.endswith(b"\n")
        del data
        while not ended and (rest := stream.readline(size)):  # to the end of its last line
            length += len(rest)
            ended = rest.endswith(b"\n")
            breaks += ended
        yield Chunk(offset, length, line, breaks)
        offset += length
        line += breaks


def read_chunk(
    source: Source, chunk: Chunk, tally: list[int], limit: int = DEFAULT_MAX_INPUT
) -> Iterator[Document | InputError]:
    """The records of one chunk of a JSON Lines file (see :func:`jsonl_chunks`); ``tally[0]``
    gets their number added to it."""
    if chunk.data is not None:
        yield from _jsonl_records(source.name, chunk.data, chunk.first_line, tally)
        return
    assert source.path is not None
    try:
        with open(source.path, "rb") as stream:
            stream.seek(chunk.offset)
            lines = _lines(stream, limit, chunk.length)
            yield from _jsonl_records(source.name, lines, chunk.first_line, tally)
    except OSError as exc:
        yield cannot_read(source.name, exc)


@dataclass(frozen=True, slots=True)
class ByteRange:
    """Part of a JSON Lines input cut by size alone, without reading it: the lines that start
    in the ``length`` bytes from ``offset`` (-1: to the end), the last one read past them to its
    end, so that each line of the input belongs to one range. ``breaks`` is the number of line
    feeds before ``offset`` (what numbers its lines: see :func:`count_breaks`)."""

    offset: int
    length: int
    breaks: int = 0


def count_breaks(stream: IO[bytes], offset: int, length: int) -> int:
    """The line feeds in ``length`` bytes of a binary stream from ``offset`` (-1: to the end),
    read a piece at a time."""
    stream.seek(offset)
    left = length if length >= 0 else sys.maxsize
    breaks = 0
    while left > 0 and (piece := stream.read(min(_PIECE, left))):
        breaks += piece.count(b"\n")
        left -= len(piece)
    return breaks


def file_breaks(path: str, offset: int, length: int) -> int:
    """:func:`count_breaks` of a file. Raises ``OSError``."""
    with open(path, "rb") as stream:
        return count_breaks(stream, offset, length)


def range_documents(
    source: Source,
    stream: IO[bytes],
    part: ByteRange,
    tally: list[int],
    limit: int = DEFAULT_MAX_INPUT,
) -> Iterator[Document | InputError]:
    """The records of the lines of a binary stream that belong to ``part`` (a range that starts
    inside a line leaves that line to the range before it), numbered as in the whole input;
    ``tally[0]`` gets their number added to it. An ``OSError`` is the caller's to report."""
    first_line = part.breaks + 1
    starts = part.length if part.length >= 0 else sys.maxsize
    if part.offset > 0:
        stream.seek(part.offset - 1)
        if stream.read(1) != b"\n":  # inside a line: skip to its end, if that is in the range
            first_line += 1
            while starts > 0:
                rest = stream.readline(min(_PIECE, starts))
                starts -= len(rest)
                if not rest:
                    return
                if rest.endswith(b"\n"):
                    break
    else:
        stream.seek(0)
    if starts > 0:
        lines = _lines(stream, limit, starts=starts)
        yield from _jsonl_records(source.name, lines, first_line, tally)


def read_range(
    source: Source, part: ByteRange, tally: list[int], limit: int = DEFAULT_MAX_INPUT
) -> Iterator[Document | InputError]:
    """:func:`range_documents` of a JSON Lines file."""
    assert source.path is not None
    try:
        with open(source.path, "rb") as stream:
            yield from range_documents(source, stream, part, tally, limit)
    except OSError as exc:
        yield cannot_read(source.name, exc)


def _decode_line(raw: bytes) -> str:
    """A line after the first; only the file's start may hold a byte-order mark."""
    if raw.startswith(b"\xef\xbb\xbf"):
        raise InputError(
            "a byte-order mark (U+FEFF) may only start the file, not a later line", pointer=None
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return decode_bytes(raw)  # raises with the offset of the bad byte


_JSON_WHITESPACE: Final = b" \t\r\n"

_Lines = tuple[list["_Line"], Iterator["_Line"]]


def _stdin_start(limit: int) -> _Lines | bytes:
    """Standard input, as the lines read so far and the lines of the rest when it is JSON
    Lines: its first line that is not blank holds a whole JSON value (or is too long to read)
    and something that is not blank follows it. Otherwise (one document, possibly on many
    lines) all of its bytes, which :func:`read_whole` decodes as one; an ``InputError`` when
    there are more than ``limit``."""
    stream = _stdin_stream()
    lines = _lines(stream, limit)
    head: list[bytes] = []
    for line in lines:
        if isinstance(line, InputError):
            return [*head, line], lines  # a line that cannot be read: the rest is lines too
        head.append(line)
        if line.strip(_JSON_WHITESPACE):
            break
    else:
        return b"".join(head)  # empty, or only blank lines
    start = b"".join(head)
    try:
        loads(decode_bytes(start))
    except InputError:  # not a value on one line: one document
        rest = _read_capped(stream, limit - len(start))
        if rest is None:
            raise _too_large(limit) from None
        return start + rest
    except MemoryError:
        return [*head], lines  # the line is read again as a record, and reported
    for line in lines:
        if isinstance(line, InputError) or line.strip(_JSON_WHITESPACE):
            return [*head, line], lines
        head.append(line)
    return b"".join(head)  # one value, on its line: one document


def _chain(head: list[_Line], rest: Iterable[_Line]) -> Iterator[_Line]:
    while head:
        yield head.pop(0)
    yield from rest


def stdin_chunks(size: int, limit: int = DEFAULT_MAX_INPUT) -> Iterator[Chunk] | bytes:
    """Standard input for worker processes: JSON Lines in chunks of about ``size`` bytes of
    whole lines, each holding its lines (read as the chunks are asked for), or all of its bytes
    when it is one document (see :func:`read_whole`). Raises ``OSError``, also while the chunks
    are read: after a chunk of the lines read whole before the error, as reading them one by
    one would have read them; and ``InputError`` for one document of more than ``limit``."""
    start = _stdin_start(limit)
    if isinstance(start, bytes):
        return start
    return _line_blocks(*start, size)


def _line_blocks(block: list[_Line], lines: Iterator[_Line], size: int) -> Iterator[Chunk]:
    first_line = 1
    while True:
        got = sum(len(line) if isinstance(line, bytes) else size for line in block)
        done, failure = False, None
        try:
            if got < size:
                for line in lines:
                    block.append(line)
                    got += len(line) if isinstance(line, bytes) else size
                    if got >= size:
                        break
                else:
                    done = True
        except OSError as exc:  # a line cut by the error is not read
            done, failure = True, exc
        if block:
            yield Chunk(-1, got, first_line, len(block), tuple(block))
            first_line += len(block)
        if failure is not None:
            raise failure
        if done:
            return
        block = []


def read_documents(
    source: Source, max_input_bytes: int = DEFAULT_MAX_INPUT
) -> Iterator[Document | InputError]:
    """Yield the documents of one source, or an error for each part that cannot be decoded.
    A JSON Lines file is read a line at a time, each line at most ``max_input_bytes``; any
    other input is read whole, at most ``max_input_bytes``."""
    limit = max_input_bytes
    data: bytes | None = None
    try:
        if source.jsonl and source.path is not None:
            with open(source.path, "rb") as stream:
                yield from _jsonl_records(source.name, _lines(stream, limit))
            return
        if source.path is None:
            start = _stdin_start(limit)
            if not isinstance(start, bytes):
                yield from _jsonl_records(source.name, _chain(*start))
                return
            data = start
            del start
        else:
            data = read_input_file(source.path, limit)
        error = None
    except OSError as exc:
        error = cannot_read(source.name, exc)
    except InputError as exc:  # a device, or too large
        error = exc.located(source.name)
    except MemoryError:
        error = _no_memory("input").located(source.name)
    if error is not None:
        yield error
        return
    assert data is not None
    whole = read_whole(source, data, limit)
    del data  # read_whole lets go of the bytes once it has decoded them
    yield from whole


def stream_documents(
    source: Source, stream: IO[bytes], max_input_bytes: int = DEFAULT_MAX_INPUT
) -> Iterator[Document | InputError]:
    """The documents of an input opened elsewhere (an object of a store, as the Dask executor
    reads it through fsspec), read as :func:`read_documents` reads a file: JSON Lines a line at
    a time, anything else whole, at most ``max_input_bytes``. An ``OSError`` raised while
    reading is the caller's to report (:func:`cannot_read`)."""
    limit = max_input_bytes
    if source.jsonl:
        yield from _jsonl_records(source.name, _lines(stream, limit))
        return
    try:
        data = _read_capped(stream, limit)
        error = None if data is not None else _too_large(limit).located(source.name)
    except MemoryError:
        data, error = None, _no_memory("input").located(source.name)
    if error is not None:
        yield error
        return
    assert data is not None
    whole = read_whole(source, data, limit)
    del data  # read_whole lets go of the bytes once it has decoded them
    yield from whole


def cannot_read(name: str, exc: OSError) -> InputError:
    return InputError(f"cannot read: {exc.strerror or exc}", pointer=None, source=name)


def read_whole(
    source: Source, data: bytes, max_input_bytes: int = DEFAULT_MAX_INPUT
) -> Iterator[Document | InputError]:
    """The document of a whole file, or of standard input that is not streamed as JSON Lines
    (read again as JSON Lines, of lines of at most ``max_input_bytes``, if it holds several
    documents). ``data`` is let go of once it is decoded: the caller should not keep it."""
    error: InputError | None = None
    try:
        text = decode_bytes(data)
    except InputError as exc:
        error = exc.located(source.name)
    except MemoryError:
        error = _no_memory("input").located(source.name)
    del data  # the bytes are not kept while the document is parsed and checked
    if error is not None:
        yield error
        return
    several = False
    try:
        value = loads(text)
    except InputError as exc:
        # standard input holding several documents is read as JSON Lines
        several = source.path is None and exc.message.startswith("invalid JSON: Extra data")
        error = None if several else exc.located(source.name)
    except MemoryError:
        error = _no_memory("input").located(source.name)
    if several:  # split at line feeds, as a file is
        lines = BytesIO(text.encode("utf-8"))
        del text
        yield from _jsonl_records(source.name, _lines(lines, max_input_bytes))
        return
    del text
    if error is not None:
        yield error
        return
    box = [Document(source.name, None, value)]
    del value
    yield box.pop()  # no local keeps the document while it is checked


def file_source(path: str) -> Source:
    """One file as an input, named as the reports name it, read as JSON Lines by its suffix."""
    return Source(_display(path), path, is_jsonl_name(path))


def read_json_file(path: str, max_input_bytes: int = DEFAULT_MAX_INPUT) -> Any:
    """Read one JSON document (a policy or a report) of at most ``max_input_bytes``; errors
    name the file."""
    name = STDIN_NAME if path == STDIN else _display(path)
    try:
        if path == STDIN:
            data = _read_capped(_stdin_stream(), max_input_bytes)
            if data is None:
                raise _too_large(max_input_bytes)
        else:
            data = read_input_file(path, max_input_bytes)
        text = decode_bytes(data)
        data = b""  # the bytes are not kept while the text is parsed
        return loads(text)
    except OSError as exc:
        raise cannot_read(name, exc) from None
    except InputError as exc:
        raise exc.located(name) from None
    except MemoryError:
        pass
    data, text = b"", ""  # raised outside the handler, the error keeps neither
    raise _no_memory("input").located(name)
