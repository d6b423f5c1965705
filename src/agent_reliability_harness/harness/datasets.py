"""Datasets of golden tasks: a directory ``datasets/<name>/`` with ``dataset.json`` (the manifest)
and its task files (JSON Lines), or a single task file.

The sha256 of a file is computed on its bytes with every CRLF replaced by LF, so a checkout that
converts line ends still verifies; the dataset's sha256 is the sha256 of the UTF-8 text made of
one line ``<sha256>  <path>\\n`` per file, in the manifest's order.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from agent_reliability_harness._decode import (
    bad,
    check_keys,
    json_type,
    opt_nonneg_int,
    req_str,
)
from agent_reliability_harness._json import decode_bytes, loads
from agent_reliability_harness.errors import InputError, UsageError, excerpt
from agent_reliability_harness.harness.task import Task, parse_task_lines

__all__ = [
    "DEFAULT_ROOT",
    "MANIFEST",
    "Dataset",
    "DatasetFile",
    "Manifest",
    "dataset_sha256",
    "file_sha256",
    "files_sha256",
    "list_datasets",
    "open_dataset",
    "verify_dataset",
]

DEFAULT_ROOT: Final = "datasets"
MANIFEST: Final = "dataset.json"
_KEYS: Final = (
    "$schema",
    "name",
    "version",
    "description",
    "generator",
    "seed",
    "files",
    "sha256",
    "cases",
)
_FILE_KEYS: Final = ("path", "sha256", "cases")


def _lf(data: bytes) -> bytes:
    return data.replace(b"\r\n", b"\n")


def file_sha256(data: bytes) -> str:
    """The sha256 of a file's bytes, CRLF read as LF."""
    return hashlib.sha256(_lf(data)).hexdigest()


def dataset_sha256(files: Sequence[tuple[str, str]]) -> str:
    """The sha256 of a dataset from its files' ``(path, sha256)`` in manifest order."""
    text = "".join(f"{sha}  {path}\n" for path, sha in files)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class DatasetFile:
    path: str
    sha256: str
    cases: int


@dataclass(frozen=True, slots=True)
class Manifest:
    """``dataset.json``, parsed strictly."""

    name: str
    version: str
    description: str
    generator: str
    seed: int | None
    files: tuple[DatasetFile, ...]
    sha256: str
    cases: int

    @classmethod
    def from_dict(cls, data: object) -> Manifest:
        if type(data) is not dict:
            raise bad("", f"a dataset manifest must be a JSON object, got {json_type(data)}")
        check_keys(data, _KEYS, "")
        files: list[DatasetFile] = []
        raw_files = data.get("files")
        if type(raw_files) is not list:
            raise bad("/files" if "files" in data else "", "files must be an array of files")
        for index, raw in enumerate(raw_files):
            at = f"/files/{index}"
            if type(raw) is not dict:
                raise bad(at, f"a file must be an object, got {json_type(raw)}")
            check_keys(raw, _FILE_KEYS, at)
            path = req_str(raw, "path", at, non_empty=True)
            if os.path.isabs(path) or ".." in path.replace("\\", "/").split("/"):
                raise bad(f"{at}/path", f"must be a path inside the dataset, got {excerpt(path)}")
            cases = opt_nonneg_int(raw, "cases", at)
            files.append(DatasetFile(path, req_str(raw, "sha256", at), cases or 0))
        version = data.get("version")
        if type(version) not in (str, int):
            raise bad("/version", f"must be a string, got {json_type(version)}")
        seed = data.get("seed")
        if seed is not None and type(seed) is not int:
            raise bad("/seed", f"must be an integer or null, got {json_type(seed)}")
        return cls(
            req_str(data, "name", "", non_empty=True),
            str(version),
            req_str(data, "description", "") if "description" in data else "",
            req_str(data, "generator", "") if "generator" in data else "",
            seed,
            tuple(files),
            req_str(data, "sha256", ""),
            opt_nonneg_int(data, "cases", "") or 0,
        )


@dataclass(frozen=True, slots=True)
class Dataset:
    """A dataset as read: its ``sha256`` is computed from the files' bytes (what was run), not
    taken from the manifest. ``errors`` are the task lines that could not be read."""

    name: str
    version: str
    sha256: str
    path: str
    tasks: tuple[Task, ...]
    errors: tuple[InputError, ...] = field(default=())
    manifest: Manifest | None = None


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as stream:
            return stream.read()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", pointer=None, source=path) from None


def _manifest(directory: str) -> Manifest:
    path = os.path.join(directory, MANIFEST)
    try:
        return Manifest.from_dict(loads(decode_bytes(_read(path))))
    except InputError as exc:
        raise (exc if exc.source else exc.located(path)) from None


def _spec_path(spec: str, root: str) -> str:
    if os.path.exists(spec):
        return spec
    candidate = os.path.join(root, spec)
    if os.path.isdir(candidate):
        return candidate
    raise UsageError(
        f"no dataset {spec!r}: not a path, and no directory {candidate!r} "
        f"(datasets are looked up under {root!r}; give a path or --root)"
    )


def open_dataset(spec: str, root: str = DEFAULT_ROOT) -> Dataset:
    """The dataset ``spec`` names: a dataset name under ``root``, a dataset directory or a
    single ``.jsonl`` task file (its name is the file's stem, its version ``"0"``). An unusable
    manifest raises :class:`InputError`, an unknown name :class:`UsageError`; bad task lines are
    the dataset's ``errors``."""
    path = _spec_path(spec, root)
    if not os.path.isdir(path):
        data = _read(path)
        found, problems = parse_task_lines(data, path)
        name = os.path.splitext(os.path.basename(path))[0]
        sha = dataset_sha256([(os.path.basename(path), file_sha256(data))])
        return Dataset(name, "0", sha, path, tuple(found), tuple(problems))
    manifest = _manifest(path)
    tasks: list[Task] = []
    errors: list[InputError] = []
    hashes: list[tuple[str, str]] = []
    for entry in manifest.files:
        file_path = os.path.join(path, entry.path)
        try:
            data = _read(file_path)
        except InputError as exc:
            errors.append(exc)
            continue
        hashes.append((entry.path, file_sha256(data)))
        found, problems = parse_task_lines(data, file_path)
        tasks.extend(found)
        errors.extend(problems)
    seen: set[str] = set()
    for task in tasks:
        if task.id in seen:
            errors.append(InputError(f"task id {excerpt(task.id)} is in two files", source=path))
        seen.add(task.id)
    return Dataset(
        manifest.name,
        manifest.version,
        dataset_sha256(hashes),
        path,
        tuple(tasks),
        tuple(errors),
        manifest,
    )


def files_sha256(directory: str) -> str:
    """The sha256 of the dataset in ``directory`` as its files are now (what ``arh run`` would
    record): its manifest read strictly, each listed file hashed. An :class:`InputError` naming
    the file (and the manifest's JSON pointer) when one cannot be read."""
    manifest = _manifest(directory)
    return dataset_sha256(
        [(f.path, file_sha256(_read(os.path.join(directory, f.path)))) for f in manifest.files]
    )


def verify_dataset(spec: str, root: str = DEFAULT_ROOT) -> tuple[Dataset | None, list[str]]:
    """Check a dataset against its manifest: each file's sha256 and case count, the dataset's
    sha256 and case count, and that every task parses. The problems, one line each."""
    try:
        dataset = open_dataset(spec, root)
    except (InputError, UsageError) as exc:
        return None, [str(exc)]
    problems = [str(error) for error in dataset.errors]
    manifest = dataset.manifest
    if manifest is None:
        return dataset, problems
    counts: dict[str, int] = {}
    for task_file in manifest.files:
        counts[task_file.path] = 0
    for line in _counted(dataset.path, manifest):
        counts[line] = counts.get(line, 0) + 1
    hashes: list[tuple[str, str]] = []
    for entry in manifest.files:
        file_path = os.path.join(dataset.path, entry.path)
        try:
            sha = file_sha256(_read(file_path))
        except InputError:
            continue  # already a problem of the dataset
        hashes.append((entry.path, sha))
        if sha != entry.sha256:
            problems.append(f"{file_path}: sha256 {sha} differs from the manifest's {entry.sha256}")
        if counts.get(entry.path, 0) != entry.cases:
            problems.append(
                f"{file_path}: {counts.get(entry.path, 0)} cases, the manifest says {entry.cases}"
            )
    total = dataset_sha256([(f.path, f.sha256) for f in manifest.files])
    if manifest.sha256 != total:
        problems.append(
            f"{os.path.join(dataset.path, MANIFEST)}: /sha256 {manifest.sha256} is not the sha256 "
            f"of its files' list ({total})"
        )
    listed = sum(f.cases for f in manifest.files)
    if manifest.cases != listed:
        problems.append(
            f"{os.path.join(dataset.path, MANIFEST)}: /cases {manifest.cases} is not the sum of "
            f"its files' cases ({listed})"
        )
    return dataset, problems


def _counted(directory: str, manifest: Manifest) -> list[str]:
    """The manifest path of each non-blank line of the dataset's files (the cases they hold)."""
    out: list[str] = []
    for entry in manifest.files:
        try:
            data = _read(os.path.join(directory, entry.path))
        except InputError:
            continue
        text = _lf(data).decode("utf-8", errors="replace")
        out.extend(entry.path for line in text.split("\n") if line.strip())
    return out


def list_datasets(root: str = DEFAULT_ROOT) -> list[tuple[str, Manifest | InputError]]:
    """Each directory under ``root`` with a manifest, by name: its manifest, or why it cannot be
    read."""
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return []
    out: list[tuple[str, Manifest | InputError]] = []
    for name in names:
        directory = os.path.join(root, name)
        if not os.path.isfile(os.path.join(directory, MANIFEST)):
            continue
        try:
            out.append((directory, _manifest(directory)))
        except InputError as exc:
            out.append((directory, exc))
    return out


def manifest_for(files: Mapping[str, bytes], **fields: Any) -> dict[str, Any]:
    """A manifest for task files given as ``{path: bytes}`` (for generators and tests)."""
    entries: list[dict[str, Any]] = []
    for path, data in files.items():
        cases = sum(1 for line in _lf(data).decode("utf-8").split("\n") if line.strip())
        entries.append({"path": path, "sha256": file_sha256(data), "cases": cases})
    total = dataset_sha256([(str(e["path"]), str(e["sha256"])) for e in entries])
    return {
        **fields,
        "files": entries,
        "sha256": total,
        "cases": sum(e["cases"] for e in entries),
    }
