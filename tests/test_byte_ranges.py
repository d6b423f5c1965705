"""JSON Lines cut into byte ranges by size alone (``io.ByteRange``, as ``--executor dask`` cuts
a file without reading it): every line belongs to exactly one range, the range where it starts,
and its records come out numbered as when the whole file is read, errors included."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_reliability_harness.errors import InputError
from agent_reliability_harness.io import (
    ByteRange,
    Document,
    Source,
    file_breaks,
    read_documents,
    read_range,
)


def _seen(items: list[Document | InputError]) -> list[tuple[object, ...]]:
    return [
        ("error", item.line, item.message, item.source)
        if isinstance(item, InputError)
        else ("doc", item.line, item.value, item.source)
        for item in items
    ]


def _by_ranges(
    path: Path, size: int, limit: int = 1 << 20
) -> tuple[list[Document | InputError], int]:
    """The documents of ``path`` read range by range, each numbered by the line feeds counted in
    the ranges before it (as the executor counts them, on the workers); and the records."""
    total = path.stat().st_size
    source = Source("runs.jsonl", str(path), True)
    offsets = list(range(0, max(total, 1), size))
    out: list[Document | InputError] = []
    tally = [0]
    breaks = 0
    for index, offset in enumerate(offsets):
        last = index == len(offsets) - 1
        length = -1 if last else size
        out.extend(read_range(source, ByteRange(offset, length, breaks), tally, limit))
        if not last:
            breaks += file_breaks(str(path), offset, size)
    return out, tally[0]


def _whole(path: Path, limit: int = 1 << 20) -> list[Document | InputError]:
    return list(read_documents(Source("runs.jsonl", str(path), True), limit))


LINES = [b'{"a": 1}\n', b'{"b": [1, 2, 3]}\n', b"\n", b'{"c": "xyz"}\r\n', b"  \n", b'{"d": 4}']


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 8, 9, 10, 11, 16, 17, 26, 27, 40, 1000])
def test_every_line_once_whatever_the_range_size(tmp_path: Path, size: int) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_bytes(b"".join(LINES))  # CRLF, blank lines, and a last line without a line feed
    got, records = _by_ranges(path, size)
    # worked out by hand: the records are on lines 1, 2, 4 and 6
    assert _seen(got) == [
        ("doc", 1, {"a": 1}, "runs.jsonl"),
        ("doc", 2, {"b": [1, 2, 3]}, "runs.jsonl"),
        ("doc", 4, {"c": "xyz"}, "runs.jsonl"),
        ("doc", 6, {"d": 4}, "runs.jsonl"),
    ]
    assert records == 4


def test_a_range_that_starts_exactly_at_a_line_start(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": 2}\n')  # the second line starts at byte 9
    source = Source("runs.jsonl", str(path), True)
    first = list(read_range(source, ByteRange(0, 9, 0), [0]))
    second = list(read_range(source, ByteRange(9, -1, 1), [0]))
    assert _seen(first) == [("doc", 1, {"a": 1}, "runs.jsonl")]
    assert _seen(second) == [("doc", 2, {"b": 2}, "runs.jsonl")]


def test_a_line_crossing_the_end_of_its_range_is_read_by_it_alone(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": 2}\n')
    source = Source("runs.jsonl", str(path), True)
    first = list(read_range(source, ByteRange(0, 12, 0), [0]))  # ends inside line 2
    second = list(read_range(source, ByteRange(12, -1, 1), [0]))
    assert _seen(first) == [("doc", 1, {"a": 1}, "runs.jsonl"), ("doc", 2, {"b": 2}, "runs.jsonl")]
    assert second == []


def test_a_line_longer_than_a_range_and_than_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    long = b'{"x": "' + b"y" * 300 + b'"}\n'
    path.write_bytes(b'{"a": 1}\n' + long + b'{"b": 2}\n' + long + b'{"c": 3}\n')
    for limit in (1 << 20, 100):  # within the limit, then too long to read
        for size in (4, 50, 64, 333):
            got, records = _by_ranges(path, size, limit)
            assert _seen(got) == _seen(_whole(path, limit)), (limit, size)
            assert records == 5
    got, _ = _by_ranges(path, 50, 100)
    assert [(item.line, type(item).__name__) for item in got] == [
        (1, "Document"), (2, "InputError"), (3, "Document"), (4, "InputError"), (5, "Document"),
    ]  # fmt: skip


def test_a_bad_line_in_the_middle_of_a_range_has_its_line_number(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    lines = [b'{"n": %d}\n' % i for i in range(1, 30)]
    lines[16] = b'{"n": oops}\n'  # line 17
    path.write_bytes(b"".join(lines))
    for size in (25, 40, 100):
        got, records = _by_ranges(path, size)
        errors = [item for item in got if isinstance(item, InputError)]
        assert [(e.source, e.line) for e in errors] == [("runs.jsonl", 17)]
        assert _seen(got) == _seen(_whole(path))
        assert records == 29  # every line that is not blank, the bad one too


def test_byte_order_mark_and_lone_carriage_returns(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"a": 1}\n\xef\xbb\xbf{"b": 2}\n{"c": 3}\r{"d": 4}\n')
    whole = _seen(_whole(path))
    assert [entry[:2] for entry in whole] == [("doc", 1), ("error", 2), ("error", 3)]
    for size in (1, 5, 12, 13, 14, 30):
        got, _ = _by_ranges(path, size)
        assert _seen(got) == whole, size


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_bytes(b"")
    assert _by_ranges(path, 10) == ([], 0)
