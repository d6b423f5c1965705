"""The documentation's commands run, and print what the documentation says they print.

Conventions for Markdown files (README.md, ARCHITECTURE.md, *-SPEC.md, COMPATIBILITY.md,
SECURITY.md, CONTRIBUTING.md, CHANGELOG.md, docs/*.md):

* In a ```console block, a line starting with ``$ arh `` is a command; the lines after it, up to the
  next ``$`` line, are its exact output (standard output, then standard error). A line ``...``
  stands for any number of lines. A final line ``[exit N]`` states the exit status.
* In a ```sh block, every line starting with ``arh `` is run (a trailing ``# comment`` is dropped);
  it must not be a usage error and must print nothing on standard error.
* A line ``$ cd DIR`` in a ```console block makes DIR (relative to the directory the commands ran
  in so far) the directory of the document's later commands.

Commands run in a scratch directory holding a copy of samples/, docs/examples/, schemas/,
examples/ and datasets/, so that the paths in the docs resolve and the reports they write land
nowhere permanent. The commands of one document share a directory and run in order, so a
command can read what an earlier one wrote (a baseline, say).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import ROOT, Run

DOCS = sorted(
    [
        ROOT / "README.md",
        ROOT / "ARCHITECTURE.md",
        *ROOT.glob("*-SPEC.md"),
        ROOT / "COMPATIBILITY.md",
        ROOT / "SECURITY.md",
        ROOT / "CONTRIBUTING.md",
        ROOT / "CHANGELOG.md",
        *ROOT.glob("docs/*.md"),
    ]
)
_FENCE = re.compile(r"^```(\w*)\s*$")


def _blocks(path: Path) -> Iterator[tuple[str, int, list[str]]]:
    lang, start, body = None, 0, []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        fence = _FENCE.match(line)
        if fence and lang is None:
            lang, start, body = fence.group(1), number, []
        elif line.startswith("```") and lang is not None:
            yield lang, start, body
            lang = None
        elif lang is not None:
            body.append(line)


@dataclass(frozen=True)
class Example:
    doc: str
    line: int
    command: str
    expected: list[str] | None  # None for ```sh blocks: only the exit status is checked
    folder: str = "."  # where it runs, relative to the document's scratch directory

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}:{self.command[:40]}"


def _examples() -> list[Example]:
    found: list[Example] = []
    for path in DOCS:
        if not path.exists():
            continue
        name = path.relative_to(ROOT).as_posix()
        folder = "."
        for lang, start, body in _blocks(path):
            if lang == "console":
                command: str | None = None
                expected: list[str] = []
                for line in body:
                    if line.startswith("$ "):
                        if command is not None and command.startswith("arh "):
                            found.append(Example(name, start, command, expected, folder))
                        command, expected = line[2:], []
                        if command.startswith("cd "):
                            folder = os.path.normpath(os.path.join(folder, command[3:].strip()))
                    else:
                        expected.append(line)
                if command is not None and command.startswith("arh "):
                    found.append(Example(name, start, command, expected, folder))
            elif lang == "sh":
                found.extend(
                    Example(name, start, line.split(" #", 1)[0].strip(), None, folder)
                    for line in body
                    if line.startswith("arh ")
                )
    return found


EXAMPLES = _examples()


_SCRATCH: dict[str, Path] = {}


@pytest.fixture
def scratch(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    """One scratch directory per document, so a command can use what an earlier one wrote."""
    doc = request.node.callspec.params["example"].doc
    if doc not in _SCRATCH:
        root = tmp_path_factory.mktemp("docs")
        for folder in ("samples", "docs/examples", "schemas", "examples", "datasets"):
            if (ROOT / folder).exists():
                shutil.copytree(ROOT / folder, root / folder)
        _SCRATCH[doc] = root
    old = Path.cwd()
    os.chdir(_SCRATCH[doc])
    try:
        yield _SCRATCH[doc]
    finally:
        os.chdir(old)


def _matches(expected: list[str], actual: list[str]) -> bool:
    """Compare line lists where an expected ``...`` line matches any run of lines."""
    if not expected:
        return not actual
    head, rest = expected[0], expected[1:]
    if head == "...":
        return any(_matches(rest, actual[i:]) for i in range(len(actual) + 1))
    return bool(actual) and actual[0] == head and _matches(rest, actual[1:])


def test_docs_have_examples() -> None:
    assert any(e.doc == "README.md" for e in EXAMPLES), "README.md shows no runnable arh command"


@pytest.mark.parametrize("example", EXAMPLES, ids=str)
def test_doc_example(example: Example, scratch: Path, arh: Callable[..., Run]) -> None:
    os.chdir(scratch / example.folder)  # the scratch fixture goes back where it was
    run = arh(*shlex.split(example.command)[1:])
    where = f"{example.doc}:{example.line}: {example.command}"
    expected = example.expected
    assert "Traceback" not in run.out + run.err, where
    if expected is None:
        assert run.status in (0, 1), f"{where}: exit {run.status}\n{run.err}"
        assert run.err == "", f"{where}: printed to stderr:\n{run.err}"
        return
    lines = list(expected)
    while lines and not lines[-1].strip():
        lines.pop()
    status_line = re.fullmatch(r"\[exit (\d)\]", lines[-1]) if lines else None
    if status_line:
        lines.pop()
        assert run.status == int(status_line.group(1)), f"{where}: exit {run.status}"
    printed = (run.out + run.err).rstrip("\n")
    actual = printed.split("\n") if printed else []
    assert _matches(lines, actual), (
        f"{where}: output differs\n--- documented\n"
        + "\n".join(lines)
        + "\n--- actual\n"
        + "\n".join(actual)
    )
