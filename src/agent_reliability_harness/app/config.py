"""The configuration file: the options a project always passes, in the ``[tool.arh]`` table of a
``pyproject.toml`` or at the top level of an ``arh.toml``, found from the current directory
upwards (docs/configuration.md).

:func:`read` finds the file and decodes it into :class:`Entry` values, each checked for its
TOML type, and every problem is an :class:`InputError` naming the file, the line and the TOML
key. :func:`settings` turns the entries that one command uses into the values of its options,
through the options' own argument parsers, so that a value is checked as on the command line;
:func:`apply` puts them under what the command line gave (which wins); :func:`render_text` and
:func:`render_json` show the settings in effect and where each came from (``arh config``).

A key is an option's long name without its dashes (``fail-under``). At the top level it applies
to every command that has the option; in a command's table (``[tool.arh.validate]``) to that
command alone, over the top level. Report paths (``json-out``, ...) differ from command to
command, so they are set in a command's table only.
"""

from __future__ import annotations

import argparse
import json
import os
import posixpath
from argparse import Namespace
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from agent_reliability_harness._decode import unknown_key_hint
from agent_reliability_harness._toml import key_lines, line_of, parse_toml, toml_kind
from agent_reliability_harness.errors import InputError, excerpt
from agent_reliability_harness.io.load import config_candidates, load_toml_text
from agent_reliability_harness.model.report import SEVERITIES

__all__ = [
    "COMMANDS",
    "KEYS",
    "ConfigFile",
    "Entry",
    "Found",
    "Key",
    "Setting",
    "Shown",
    "apply",
    "describe",
    "read",
    "render_json",
    "render_text",
    "settings",
]

COMMANDS: Final = ("validate", "compare", "stats", "convert", "status")  # with settings
_PYPROJECT_TABLE: Final = ("tool", "arh")
# The tables of a gate file (docs/statistics.md), which is often called arh.toml too.
_GATE_TABLES: Final = ("defaults", "workflows")
_GATE_KEYS: Final = ("outcome", *_GATE_TABLES)

# What a key's value must be in TOML, in words.
_KINDS: Final = {
    "path": "a path (a string)",
    "string": "a string",
    "number": "a number",
    "integer": "an integer",
    "boolean": "true or false",
    "strings": "a string or an array of strings",
    "paths": "a path or an array of paths (strings)",
    "levels": 'a table of rule IDs and severities, such as { "ARH-FLW-003" = "warning" }',
    "integer or string": "an integer or a string",
}


@dataclass(frozen=True, slots=True)
class Key:
    """A key of the configuration file: the option ``--<name>`` of the commands that have it.

    ``kind`` is what its TOML value must be (a key of :data:`_KINDS`); ``per_command`` keys
    (report paths) are set in a command's table only; ``validating`` keys are used by
    ``arh compare`` only when it validates traces (not with ``--candidate``); the command
    line adds to an ``adds`` key (a list) instead of replacing it.
    """

    name: str
    kind: str
    per_command: bool = False
    validating: bool = False
    adds: bool = False

    @property
    def option(self) -> str:
        return f"--{self.name}"


KEYS: Final = {
    key.name: key
    for key in (
        Key("policy", "path", validating=True),
        Key("format", "string", validating=True),
        Key("messages-at", "string", validating=True),
        Key("trace-id-at", "strings", validating=True),
        Key("agent-name", "string", validating=True),
        Key("workflow", "string", validating=True),
        Key("task-key", "string", validating=True),
        Key("outcome-at", "string", validating=True),
        Key("expect", "path", validating=True),
        Key("fail-under", "number", validating=True),
        Key("select", "strings", validating=True),
        Key("ignore", "strings", validating=True, adds=True),
        Key("severity", "levels", validating=True, adds=True),
        Key("allow-risky-patterns", "boolean", validating=True),
        Key("jobs", "integer or string"),
        Key("executor", "string", validating=True),
        Key("scheduler", "string", validating=True),
        Key("dask-workers", "integer", validating=True),
        Key("color", "string"),
        Key("output-format", "string"),
        Key("show-passing", "boolean"),
        Key("max-input-size", "integer or string"),
        Key("fail-on", "string"),
        Key("max-score-drop", "number"),
        Key("fail-on-drift", "boolean"),
        Key("any-step", "boolean"),
        Key("outcome", "string"),
        Key("k", "integer"),
        Key("gate", "strings", adds=True),
        Key("gates", "path"),
        Key("allow-insufficient-data", "boolean"),
        Key("output", "path", per_command=True),
        # the judge of arh validate (docs/answers-and-judge.md)
        Key("rubric", "path"),
        Key("judge", "string"),
        Key("judgments", "path"),
        Key("judge-model", "string"),
        Key("calibration", "paths", adds=True),
        Key("judge-base-url", "string"),
        Key("judge-api-key-env", "string"),
        Key("judge-timeout", "number"),
        Key("judge-retries", "integer"),
        # arh status (docs/status.md)
        Key("baselines", "path"),
        Key("datasets", "path"),
        Key("max-age", "string"),
    )
}


def _key(name: str) -> Key | None:
    """The key called ``name``: one of :data:`KEYS`, or a report path (``<format>-out``)."""
    if name in KEYS:
        return KEYS[name]
    if name.endswith("-out") and len(name) > len("-out"):
        return Key(name, "path", per_command=True, validating=name == "candidate-json-out")
    return None


# The long options of a command, each with its action (the command line builds them).
Options = Callable[[str], Mapping[str, argparse.Action]]


@dataclass(frozen=True, slots=True)
class Entry:
    """A key as the file sets it: its TOML value (of the key's kind), the TOML path of the
    key, its line, and the command whose table it is in (None: the top level)."""

    key: Key
    value: object
    path: tuple[str, ...]
    line: int | None
    command: str | None

    @property
    def dotted(self) -> str:
        return _dotted(self.path)


@dataclass(frozen=True, slots=True)
class ConfigFile:
    """A configuration file: its path (as it was named, or relative to the current directory
    when it was found), the table holding its keys (``("tool", "arh")`` in a pyproject.toml,
    ``()`` in an arh.toml) and its entries, in the order of the file."""

    path: str
    table: tuple[str, ...]
    entries: tuple[Entry, ...]

    def where(self, entry: Entry) -> str:
        """``file:line`` of an entry."""
        return self.path if entry.line is None else f"{self.path}:{entry.line}"


@dataclass(frozen=True, slots=True)
class Found:
    """The configuration in effect: the file (None: none), how it was chosen (``found``,
    ``--config``, ``--isolated`` or ``none found``), and the arh.toml files passed over because
    they are gate files."""

    file: ConfigFile | None
    how: str
    skipped: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Setting:
    """The value a configuration file gives to one option of a command (as its argument parser
    would make it), from ``entry``."""

    key: Key
    dest: str
    value: object
    entry: Entry


def read(
    path: str | None,
    isolated: bool,
    options: Options,
    candidates: Iterable[tuple[str, str]] | None = None,
) -> Found:
    """The configuration: the file ``path`` (``--config``), none (``--isolated``), or the first
    of the ``candidates`` (default: :func:`config_candidates` from the current directory) that
    holds settings. InputError when it cannot be read, is not TOML or holds a key that is
    unknown, of the wrong type or in the wrong place."""
    if isolated:
        return Found(None, "--isolated")
    if path is not None:
        pyproject = os.path.basename(path) == "pyproject.toml"
        text = load_toml_text(path)
        data = parse_toml(text, path)
        if pyproject and not _has_table(data):
            raise InputError(
                "has no [tool.arh] table: a pyproject.toml holds arh's settings there",
                pointer=None,
                source=path,
            )
        if not pyproject and _is_gate_file(data):
            raise InputError(
                "is a gate file ([defaults] or [workflows] tables), not a configuration file: "
                "name it with --gates, or with the gates key of a configuration file",
                pointer=None,
                source=path,
            )
        return Found(_decode(data, text, path, pyproject, options), "--config")
    try:
        here = os.getcwd()
    except OSError:  # the current directory was removed: there is nothing above it to search
        return Found(None, "none found")
    skipped = []
    for found, text in config_candidates(here) if candidates is None else candidates:
        shown = _relative(found, here)
        pyproject = os.path.basename(found) == "pyproject.toml"
        data = parse_toml(text, shown)
        if pyproject and not _has_table(data):
            continue
        if not pyproject and _is_gate_file(data):
            skipped.append(shown)
            continue
        return Found(_decode(data, text, shown, pyproject, options), "found", tuple(skipped))
    return Found(None, "none found", tuple(skipped))


def _relative(path: str, here: str) -> str:
    """A file found above the current directory, as a path from it with ``/`` separators."""
    try:
        return os.path.relpath(path, here).replace(os.sep, "/")
    except ValueError:  # another drive (Windows)
        return path


def _has_table(data: Mapping[str, Any]) -> bool:
    tool = data.get("tool")
    return isinstance(tool, dict) and "arh" in tool


def _is_gate_file(data: Mapping[str, Any]) -> bool:
    """Whether an arh.toml is a gate file: only a gate file's keys, and a gate table."""
    return all(key in _GATE_KEYS for key in data) and any(key in data for key in _GATE_TABLES)


def _dotted(path: Iterable[str]) -> str:
    """A TOML path as a TOML document writes it: bare keys, and others quoted."""
    return ".".join(
        part
        if part
        and len(part) <= 100
        and all(c.isascii() and (c.isalnum() or c in "-_") for c in part)
        else excerpt(part)
        for part in path
    )


def _decode(
    data: Mapping[str, Any], text: str, source: str, pyproject: bool, options: Options
) -> ConfigFile:
    lines = key_lines(text)
    prefix = _PYPROJECT_TABLE if pyproject else ()

    def bad_key(path: tuple[str, ...], message: str) -> InputError:
        return InputError(
            f"{_dotted(path)}: {message}",
            pointer=None,
            source=source,
            line=line_of(lines, path),
        )

    table = data["tool"]["arh"] if pyproject else data
    if not isinstance(table, dict):
        raise bad_key(prefix, f"must be a table, got {toml_kind(table)}")
    entries: list[Entry] = []
    for name, value in table.items():
        path = (*prefix, name)
        if name in COMMANDS:
            if not isinstance(value, dict):
                raise bad_key(
                    path, f"must be a table of arh {name}'s settings, got {toml_kind(value)}"
                )
            offered = options(name)
            for inner, setting in value.items():
                where = (*path, inner)
                key = _key(inner)
                if key is None:
                    raise bad_key(where, _unknown(inner))
                if key.option not in offered:
                    raise bad_key(where, f"arh {name} has no {key.option} option")
                problem = _kind_problem(key.kind, setting)
                if problem is not None:
                    raise bad_key(where, problem)
                entries.append(Entry(key, setting, where, line_of(lines, where), name))
            continue
        if not pyproject and name in _GATE_TABLES:
            raise bad_key(
                path,
                "gate tables belong in a gate file of their own: name it with the gates key "
                "(or --gates)",
            )
        key = _key(name)
        if key is None:
            raise bad_key(path, _unknown(name))
        if key.per_command:
            raise bad_key(
                path,
                "a report path differs from command to command: set it in a command's table, "
                f"such as [{_dotted((*prefix, 'validate'))}]",
            )
        problem = _kind_problem(key.kind, value)
        if problem is not None:
            raise bad_key(path, problem)
        entries.append(Entry(key, value, path, line_of(lines, path), None))
    return ConfigFile(source, prefix, tuple(entries))


def _unknown(name: str) -> str:
    known = [*KEYS, *COMMANDS]
    hyphens = name.replace("_", "-")
    if hyphens != name and (hyphens in known or _key(hyphens) is not None):
        return f"unknown key {excerpt(name)} (keys are spelled as the options: {hyphens!r})"
    return f"unknown key {excerpt(name)}{unknown_key_hint(name, known)}"


def _kind_problem(kind: str, value: object) -> str | None:
    """Why ``value`` is not of ``kind``, or None."""
    got = f"must be {_KINDS[kind]}, got {toml_kind(value)}"
    if kind in ("path", "string"):
        if not isinstance(value, str):
            return got
        if kind == "path" and not value:
            return "the path is empty"
        return None
    if kind == "boolean":
        return None if isinstance(value, bool) else got
    if kind == "integer":
        return None if isinstance(value, int) and not isinstance(value, bool) else got
    if kind == "number":
        return None if isinstance(value, int | float) and not isinstance(value, bool) else got
    if kind == "integer or string":
        ok = isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))
        return None if ok else got
    if kind in ("strings", "paths"):
        if isinstance(value, str):
            return None
        if not isinstance(value, list):
            return got
        for index, item in enumerate(value):
            if not isinstance(item, str):
                return f"item {index + 1} must be a string, got {toml_kind(item)}"
        return None
    # levels
    if not isinstance(value, dict):
        return got
    for rule, level in value.items():
        if level not in SEVERITIES:
            shown = excerpt(level) if isinstance(level, str) else toml_kind(level)
            return (
                f"the severity of {excerpt(rule)} must be one of {', '.join(SEVERITIES)}, "
                f"got {shown}"
            )
    return None


# -- one command's settings -------------------------------------------------------------------


def settings(
    found: Found, command: str, options: Mapping[str, argparse.Action]
) -> dict[str, Setting]:
    """The values the configuration gives to ``command``'s options (its ``options``), by dest:
    each converted and checked by the option's own parser; InputError at the key when one is
    not a value the option takes. Paths are relative to the file's folder."""
    file = found.file
    if file is None:
        return {}
    chosen: dict[str, Entry] = {}
    for entry in file.entries:  # the top level, then the command's table over it
        if entry.command is None and entry.key.option in options:
            chosen.setdefault(entry.key.name, entry)
    for entry in file.entries:
        if entry.command == command:
            chosen[entry.key.name] = entry
    folder = os.path.dirname(file.path)
    out: dict[str, Setting] = {}
    for entry in sorted(chosen.values(), key=lambda e: list(options).index(e.key.option)):
        action = options[entry.key.option]
        value = _value(entry, action, folder, file)
        out[action.dest] = Setting(entry.key, action.dest, value, entry)
    return out


def _value(entry: Entry, action: argparse.Action, folder: str, file: ConfigFile) -> object:
    """What the command line's parser would make of the entry: the option given once with a
    scalar, once per item of an array (``ignore = ["A", "B"]`` is ``--ignore A --ignore B``)."""
    raw = entry.value
    if isinstance(action, argparse._StoreTrueAction | argparse._StoreFalseAction):
        return raw
    if entry.key.kind == "levels":
        assert isinstance(raw, dict)
        items: list[object] = [f"{rule}={level}" for rule, level in raw.items()]
    else:
        items = list(raw) if isinstance(raw, list) else [raw]
    values = []
    for item in items:
        text = item if isinstance(item, str) else repr(item)  # an int or a float, as written
        if entry.key.kind in ("path", "paths"):
            text = _resolved(folder, text)
        try:
            value = action.type(text) if callable(action.type) else text
        except (argparse.ArgumentTypeError, ValueError, TypeError) as exc:
            raise _bad_value(file, entry, str(exc)) from None
        if action.choices is not None and value not in action.choices:
            allowed = ", ".join(map(repr, action.choices))
            raise _bad_value(file, entry, f"must be one of {allowed}, got {excerpt(text)}")
        values.append(value)
    if isinstance(action, argparse._AppendAction) or action.nargs in ("+", "*"):
        return values
    return values[0]


def _resolved(folder: str, path: str) -> str:
    """A path of the file, which is relative to its folder, as the current directory reaches
    it, with ``/`` separators as the reports write paths (``-`` is standard output or input,
    not a file)."""
    if path == "-" or os.path.isabs(path):
        return path
    return posixpath.normpath(posixpath.join(folder.replace(os.sep, "/"), path))


def _bad_value(file: ConfigFile, entry: Entry, message: str) -> InputError:
    return InputError(f"{entry.dotted}: {message}", pointer=None, source=file.path, line=entry.line)


def apply(
    chosen: Mapping[str, Setting], args: Namespace, given: set[str], command: str
) -> dict[str, str]:
    """Put the settings in ``args`` under what the command line ``given`` (the dests it set):
    the command line wins, or adds to a key that ``adds``. Returns where each dest's value came
    from when the file is involved: ``file`` or ``file and command line``."""
    origins: dict[str, str] = {}
    for dest, setting in chosen.items():
        if command == "compare" and setting.key.validating and args.candidate is not None:
            continue  # saved reports are compared: nothing is validated
        if dest not in given:
            setattr(args, dest, setting.value)
            origins[dest] = "file"
        elif setting.key.adds:
            value = setting.value
            assert isinstance(value, list)
            setattr(args, dest, [*value, *getattr(args, dest)])
            origins[dest] = "file and command line"
    return origins


# -- arh config -------------------------------------------------------------------------------


def _shown(value: object) -> object:
    """An option's value as ``arh config`` shows it: lists of lists (``--ignore A,B``) as one
    list, pairs (``--severity RULE=LEVEL``) as a table."""
    if isinstance(value, list) and value and all(isinstance(v, tuple) for v in value):
        return {str(pair[0]): pair[1] for pair in value}
    if isinstance(value, list):
        flat: list[object] = []
        for item in value:
            flat.extend(item if isinstance(item, list) else [item])
        return flat
    return value


@dataclass(frozen=True, slots=True)
class Shown:
    """One command's settings, for ``arh config``: for each, its ``key``, ``value``, ``origin``
    (``default``, ``command line``, ``file``, ``file and command line``) and, from the file,
    its ``location`` (``file:line``) and ``toml_key``."""

    command: str
    rows: tuple[dict[str, Any], ...]


def describe(
    found: Found,
    command: str,
    args: Namespace,
    *,
    options: Mapping[str, argparse.Action],
    chosen: Mapping[str, Setting],
    origins: Mapping[str, str],
    given: set[str],
) -> Shown:
    """The settings of ``command`` in ``args``, in the order of its options."""
    rows = []
    seen = set()
    for option, action in options.items():
        key = _key(option.removeprefix("--"))
        if key is None or action.dest in seen:
            continue
        seen.add(action.dest)
        origin = origins.get(action.dest)
        if origin is None:
            origin = "command line" if action.dest in given else "default"
        row: dict[str, Any] = {
            "key": key.name,
            "value": _shown(getattr(args, action.dest, None)),
            "origin": origin,
        }
        setting = chosen.get(action.dest)
        if origin.startswith("file") and setting is not None and found.file is not None:
            row["location"] = found.file.where(setting.entry)
            row["toml_key"] = setting.entry.dotted
        rows.append(row)
    return Shown(command, tuple(rows))


def _source(found: Found) -> str:
    file = found.file
    if file is not None:
        table = f" [{_dotted(file.table)}]" if file.table else ""
        via = " (--config)" if found.how == "--config" else ""
        return f"{file.path}{table}{via}"
    if found.how == "--isolated":
        return "none (--isolated)"
    return (
        "none found (an arh.toml, or a pyproject.toml with [tool.arh], in the current "
        "directory or above it, up to the repository's root)"
    )


def render_text(found: Found, commands: Sequence[Shown]) -> str:
    """``arh config``: where the settings come from, then each command's settings in a table
    of key, value (as JSON) and origin."""
    out = [f"configuration file: {_source(found)}"]
    out += [f"skipped {path}: a gate file, read with --gates" for path in found.skipped]
    for block in commands:
        out += ["", f"arh {block.command}"]
        cells = [
            (
                row["key"],
                json.dumps(row["value"], ensure_ascii=False),
                row.get("location", row["origin"])
                + (" and command line" if row["origin"] == "file and command line" else ""),
            )
            for row in block.rows
        ]
        width_key = max((len(k) for k, _, _ in cells), default=0)
        width_value = max((len(v) for _, v, _ in cells), default=0)
        out += [
            f"  {k.ljust(width_key)}  {v.ljust(width_value)}  {origin}".rstrip()
            for k, v, origin in cells
        ]
    return "\n".join(out) + "\n"


def render_json(found: Found, commands: Sequence[Shown]) -> str:
    """``arh config --json``."""
    file = found.file
    document = {
        "configuration": None
        if file is None
        else {"path": file.path, "table": _dotted(file.table) if file.table else None},
        "how": found.how,
        "skipped": list(found.skipped),
        "commands": {block.command: block.rows for block in commands},
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
