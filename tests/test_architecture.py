"""The package's shape, checked from its source with ``ast``: dependencies, layers, side effects.

Layers, lowest first; a module may import from its own layer and the layers below it:

    0  errors, _json, _decode, _version   the error type and strict JSON decoding
    1  model (model/*)                    traces, policies, reports
    2  rules (rules/*) | adapters (adapters/*)   siblings: they must not import each other
    3  engine, scoring, monitor           validation, the verdict, the runtime guard
    4  regression (regression/*)          comparing reports
    5  render (render/*)                  text from reports
    6  io, cli, app, runner, record, __init__, __main__   files, streams, the command line
    6  dask                               --executor dask and the Dask API (the dask extra)
    7  pytest_plugin                      loaded by pytest only (it may import pytest)

Below layer 6 the code is pure: no printing, no file access, no exiting, no clock and no
randomness, so a report depends only on its inputs.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import ROOT

PACKAGE = "agent_reliability_harness"
SOURCE = ROOT / "src" / PACKAGE

# top-level module or sub-package -> (layer, group); modules of one layer but different groups
# must not import each other
LAYERS: dict[str, tuple[int, str]] = {
    "errors": (0, "base"),
    "_json": (0, "base"),
    "_decode": (0, "base"),
    "_version": (0, "base"),
    "_formats": (0, "base"),
    "_toml": (0, "base"),
    "model": (1, "model"),
    "rules": (2, "rules"),
    "adapters": (2, "adapters"),
    "engine": (3, "engine"),
    "scoring": (3, "engine"),
    "regression": (4, "regression"),
    "render": (5, "render"),
    "io": (6, "app"),
    "cli": (6, "app"),
    # what each command does, below cli's parsing: it reads through io and drives the runner
    "app": (6, "app"),
    # runner.py reads files through io and drives the engine for the commands: it is app code
    "runner": (6, "app"),
    "__init__": (6, "app"),
    "__main__": (6, "app"),
    # the runtime guard is pure and drives the engine; the recorder writes trace files
    "monitor": (3, "engine"),
    "record": (6, "app"),
    # --executor dask and the Dask API: the only module that imports the dask extra
    "dask": (6, "app"),
    # rubrics, judgments, calibration records, the rubric engine and the model judge's HTTP
    # client: it reads files and calls a model, so it sits with the commands
    "judge": (6, "app"),
    # arh serve: the dashboard's index of a runs directory, its pages, API and HTTP server
    "serve": (6, "app"),
    # agents for arh run beyond the reference ones: the live agent and the framework adapters;
    # what users name on the command line, so nothing in the package imports it
    "integrations": (6, "app"),
    # running agents on golden tasks (arh run): tasks, the tool gateway, the reference agents
    "harness": (6, "app"),
    # loaded by pytest through its entry point; nothing in the package may import it
    "pytest_plugin": (7, "plugin"),
}
PURE_BELOW = 6
# third-party imports a module may make (the pytest plugin runs inside pytest)
THIRD_PARTY: dict[str, set[str]] = {
    "pytest_plugin": {"pytest", "_pytest"},
    "dask": {"dask", "distributed", "fsspec"},  # the dask extra
    # the framework extras, each imported by its adapter only (inside the function that makes
    # an agent, so that a missing extra is an error that says how to install it)
    "integrations.langgraph": {"langgraph", "langchain_core"},
    "integrations.openai_agents": {"agents"},
    "integrations.crewai": {"crewai", "pydantic"},
}
FRAMEWORK_ADAPTERS = ("integrations.langgraph", "integrations.openai_agents", "integrations.crewai")

FORBIDDEN_NAMES = {
    "print": "prints",
    "open": "opens a file",
    "input": "reads the terminal",
    "exit": "exits the process",
    "quit": "exits the process",
    "breakpoint": "stops in a debugger",
    "__import__": "imports dynamically",
}
CLOCKS = {
    "time",
    "time_ns",
    "monotonic",
    "monotonic_ns",
    "perf_counter",
    "perf_counter_ns",
    "process_time",
    "process_time_ns",
    "thread_time",
    "thread_time_ns",
    "localtime",
    "gmtime",
    "ctime",
    "asctime",
}
FORBIDDEN_ATTRIBUTES = {
    ("sys", "exit"): "exits the process",
    ("os", "_exit"): "exits the process",
    ("os", "urandom"): "reads randomness",
    ("os", "open"): "opens a file",
    ("io", "open"): "opens a file",
    ("uuid", "uuid1"): "reads the clock",
    ("uuid", "uuid4"): "reads randomness",
    ("importlib", "import_module"): "imports dynamically",
    **{("time", name): "reads the clock" for name in CLOCKS},
}
# methods that read or write files whatever object they are called on (Path and friends)
FILE_METHODS = {"open", "read_text", "read_bytes", "write_text", "write_bytes", "touch", "unlink"}
# datetime.now(), datetime.datetime.utcnow(), date.today(), ...
DATE_CLOCKS = {"now", "utcnow", "today"}
DATE_TYPES = {"datetime", "date"}
RANDOM_MODULES = {"random", "secrets"}


@dataclass(frozen=True)
class Module:
    name: str  # dotted, relative to the package: "model.trace", "rules", "__init__"
    path: Path
    tree: ast.Module

    @property
    def top(self) -> str:
        return self.name.split(".")[0]

    @property
    def is_package(self) -> bool:
        return self.path.name == "__init__.py"

    def where(self, node: ast.AST) -> str:
        return f"{self.path.relative_to(SOURCE).as_posix()}:{getattr(node, 'lineno', '?')}"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SOURCE).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def load_modules() -> list[Module]:
    modules = []
    for path in sorted(SOURCE.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        modules.append(Module(_module_name(path), path, tree))
    return modules


MODULES = load_modules()


def _exists(dotted: str) -> bool:
    """Whether ``dotted`` (relative to the package) is a module or sub-package of it."""
    base = SOURCE.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _resolve_relative(module: Module, level: int, name: str | None) -> str:
    package = module.name.split(".") if module.is_package else module.name.split(".")[:-1]
    if module.name in {"__init__", "__main__"}:
        package = []
    base = package[: len(package) - (level - 1)] if level > 1 else package
    return ".".join([*base, *([name] if name else [])])


def imports(module: Module) -> Iterator[tuple[ast.AST, str]]:
    """(node, absolute module name) for every import in the module, nested ones included.

    ``from package import name`` counts as importing ``package.name`` when that is a module,
    otherwise as importing ``package`` itself.
    """
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _resolve_relative(module, node.level, node.module)
                absolute = f"{PACKAGE}.{base}" if base else PACKAGE
            else:
                absolute = node.module or ""
            if absolute == PACKAGE or absolute.startswith(PACKAGE + "."):
                inner = absolute.removeprefix(PACKAGE).lstrip(".")
                for alias in node.names:
                    candidate = f"{inner}.{alias.name}" if inner else alias.name
                    if _exists(candidate):
                        yield node, f"{PACKAGE}.{candidate}"
                    else:
                        yield node, absolute
            else:
                yield node, absolute


def _layer_of(inner: str) -> tuple[int, str] | None:
    """The layer of a module given relative to the package (``""`` is the package itself)."""
    return LAYERS.get(inner.split(".", 1)[0] if inner else "__init__")


def dependency_violations(module: Module) -> list[str]:
    """Imports outside the standard library, and imports that go up or sideways in the layers."""
    problems: list[str] = []
    own = _layer_of(module.name)
    if own is None:
        return [f"{module.where(module.tree)}: module {module.name!r} has no layer in LAYERS"]
    for node, target in imports(module):
        top = target.split(".")[0]
        if top != PACKAGE:
            if top not in sys.stdlib_module_names and top not in THIRD_PARTY.get(module.name, ()):
                problems.append(f"{module.where(node)}: imports {target!r}, not in the stdlib")
            continue
        inner = target.removeprefix(PACKAGE).lstrip(".")
        theirs = _layer_of(inner)
        if theirs is None:
            problems.append(f"{module.where(node)}: imports {target!r}, which has no layer")
            continue
        if theirs[0] > own[0]:
            problems.append(
                f"{module.where(node)}: {module.name} (layer {own[0]} {own[1]!r}) imports "
                f"{target} (layer {theirs[0]} {theirs[1]!r}): upward"
            )
        elif theirs[0] == own[0] and theirs[1] != own[1]:
            problems.append(
                f"{module.where(node)}: {module.name} ({own[1]!r}) imports {target} "
                f"({theirs[1]!r}): siblings in layer {own[0]} must not depend on each other"
            )
    return problems


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""


def effect_violations(module: Module) -> list[str]:
    """Printing, file access, exiting, clocks and randomness in a module of a pure layer."""
    problems: list[str] = []
    clock_names: set[str] = set()  # names bound by "from time import monotonic" and the like
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            problems.extend(
                f"{module.where(node)}: imports {alias.name} (randomness)"
                for alias in node.names
                if alias.name.split(".", 1)[0] in RANDOM_MODULES
            )
        elif isinstance(node, ast.ImportFrom) and not node.level:
            source = (node.module or "").split(".")[0]
            if source in RANDOM_MODULES:
                problems.append(f"{module.where(node)}: imports from {node.module} (randomness)")
            if source == "time":
                clock_names.update(a.asname or a.name for a in node.names if a.name in CLOCKS)
    for node in ast.walk(module.tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        dotted = _dotted(func)
        what = ""
        if isinstance(func, ast.Name):
            if func.id in FORBIDDEN_NAMES:
                what = FORBIDDEN_NAMES[func.id]
            elif func.id in clock_names:
                what = "reads the clock"
        elif isinstance(func, ast.Attribute):
            owner = dotted.rsplit(".", 1)[0].split(".")[-1] if "." in dotted else ""
            if (owner, func.attr) in FORBIDDEN_ATTRIBUTES:
                what = FORBIDDEN_ATTRIBUTES[(owner, func.attr)]
            elif func.attr in DATE_CLOCKS and owner in DATE_TYPES:
                what = "reads the clock"
            elif func.attr in FILE_METHODS:
                what = "touches a file"
        if what:
            shown = dotted or ast.unparse(func)
            problems.append(f"{module.where(node)}: calls {shown}() in layer <6: {what}")
    return problems


def _report(problems: list[str]) -> str:
    return "\n" + "\n".join(problems)


# ---------------------------------------------------------------------------------------------
# The checks on the real package


def test_the_package_was_found() -> None:
    names = {m.name for m in MODULES}
    assert {"errors", "model.trace", "rules.registry", "engine", "cli", "__init__"} <= names


def test_every_module_has_a_layer() -> None:
    missing = sorted(m.name for m in MODULES if _layer_of(m.name) is None)
    assert not missing, f"assign a layer in LAYERS to: {', '.join(missing)}"


def test_only_the_standard_library_and_the_package_are_imported() -> None:
    problems = [
        problem
        for module in MODULES
        for problem in dependency_violations(module)
        if "not in the stdlib" in problem
    ]
    assert not problems, _report(problems)


def test_imports_respect_the_layers() -> None:
    problems = [
        problem
        for module in MODULES
        for problem in dependency_violations(module)
        if "not in the stdlib" not in problem
    ]
    assert not problems, _report(problems)


def test_architecture_md_names_every_top_level_module() -> None:
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    for name in LAYERS:
        if name != "__main__":
            shown = f"{name}/" if (SOURCE / name).is_dir() else name
            assert f"`{shown}" in text or f"`{name}`" in text, name


def test_only_the_dask_module_imports_the_dask_extra() -> None:
    # its layer allows the package's modules of layer 6 to import it: only at the place that
    # runs --executor dask, inside a function (the command line must not load dask)
    extra = THIRD_PARTY["dask"]
    outside = [
        module.where(node)
        for module in MODULES
        if module.name != "dask"
        for node, target in imports(module)
        if target.split(".")[0] in extra
    ]
    assert not outside, _report(outside)
    importers = [
        (module, node)
        for module in MODULES
        for node, target in imports(module)
        if target == f"{PACKAGE}.dask"
    ]
    assert [module.name for module, _ in importers] == ["app.inputs"]
    for module, node in importers:
        assert node.col_offset > 0, f"{module.where(node)}: import it where --executor dask runs"


def test_only_each_adapter_imports_its_framework() -> None:
    frameworks = {name: THIRD_PARTY[name] for name in FRAMEWORK_ADAPTERS}
    every = set().union(*frameworks.values())
    outside = [
        f"{module.where(node)}: imports {target}"
        for module in MODULES
        for node, target in imports(module)
        if target.split(".")[0] in every - frameworks.get(module.name, set())
    ]
    assert not outside, _report(outside)
    # inside a function: importing the adapter's module works without its extra
    for module in MODULES:
        if module.name in frameworks:
            top_level = [
                module.where(node)
                for node, target in imports(module)
                if target.split(".")[0] in frameworks[module.name] and node.col_offset == 0
            ]
            assert not top_level, _report(top_level)


def test_nothing_in_the_package_imports_the_integrations() -> None:
    importers = sorted(
        module.where(node)
        for module in MODULES
        if module.top != "integrations"
        for node, target in imports(module)
        if target.startswith(f"{PACKAGE}.integrations")
    )
    assert not importers, _report(importers)


def test_the_integrations_import_without_their_extras(tmp_path: Path) -> None:
    # the adapters' modules import, and the framework stays unloaded, whatever is installed
    code = (
        "import sys\n"
        "import agent_reliability_harness.integrations.langgraph\n"
        "import agent_reliability_harness.integrations.openai_agents\n"
        "import agent_reliability_harness.integrations.crewai\n"
        "import agent_reliability_harness.integrations.openai_live\n"
        "loaded = sorted({m.split('.')[0] for m in sys.modules} & {'langgraph', "
        "'langchain_core', 'agents', 'crewai', 'pydantic'})\n"
        "print(loaded)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=tmp_path
    )
    assert done.stdout == "[]\n", done.stderr


def test_arh_validate_does_not_load_dask(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from agent_reliability_harness.cli import main\n"
        "status = main(['validate', '--policy', sys.argv[1], sys.argv[2], '--jobs', '2', '-q'])\n"
        "loaded = sorted({m.split('.')[0] for m in sys.modules} & {'dask', 'distributed', "
        "'fsspec'})\n"
        "print(status, loaded)\n"
    )
    samples = ROOT / "samples"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            str(samples / "policy_trajectory.json"),
            str(samples / "traces"),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert done.stdout == "1 []\n", done.stderr


def test_the_monitor_imports_nothing_private_from_the_rules() -> None:
    # it drives the rule sets through rules.online and rules.selection only
    monitor = next(m for m in MODULES if m.name == "monitor")
    private = [
        target
        for _, target in imports(monitor)
        if target.startswith(f"{PACKAGE}.rules")
        and any(p.startswith("_") for p in target.split("."))
    ]
    assert private == []


def _import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports (anywhere in it: lazy imports too)."""
    graph: dict[str, set[str]] = {}
    names = {m.name for m in MODULES}
    for module in MODULES:
        targets = graph.setdefault(module.name, set())
        for _, target in imports(module):
            inner = target.removeprefix(PACKAGE).lstrip(".") or "__init__"
            while inner and inner not in names:  # a name imported from a module
                inner = inner.rpartition(".")[0]
            if inner and inner != module.name:
                targets.add(inner)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle of ``graph`` (a package's __init__ and its own modules excepted: a
    package that re-exports its modules' names imports them, and they import their package
    only to reach a sibling), or []."""
    done: set[str] = set()
    path: list[str] = []

    def visit(name: str) -> list[str]:
        if name in path:
            return [*path[path.index(name) :], name]
        if name in done:
            return []
        path.append(name)
        for target in sorted(graph.get(name, ())):
            if name.startswith(f"{target}.") or target.startswith(f"{name}."):
                continue  # a package and its own modules
            found = visit(target)
            if found:
                return found
        path.pop()
        done.add(name)
        return []

    for name in sorted(graph):
        found = visit(name)
        if found:
            return found
    return []


def test_no_import_cycle() -> None:
    assert _cycle(_import_graph()) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": set()}) == []


# Modules over ~600 lines, each with the reason it is one module.
LONG_MODULES = {
    "render.html": "one self-contained page: its CSS, markup and the tables share the escaping "
    "and the size budget, and none of it is used elsewhere",
    "cli": "mostly argparse declarations and their help texts, which read best in one place",
    "regression.stat_gates": "the gate-file parser and the statistical tests it configures",
    "adapters._otlp": "the OTLP span decoder shared by the two span formats",
    "adapters._build": "the step builders every transcript adapter shares",
    "runner": "the read-and-check pipeline and its --jobs planning, which share their units",
    "record": "the trace recorder's public API and its file writing",
    "dask": "the only module that may import the dask extra: the executor (its units, byte "
    "ranges and their line counts) and the bag API must live in it together",
    "regression.trials": "repeated runs: reading them, grouping by task, their outcomes",
    "io.read": "reading every kind of input: files, directories, JSON Lines, standard input",
    "rules._prefilter": "the safety prefilter and the soundness argument it implements",
    "model.report": "the report values and the strict readers of saved reports, field by field",
    "judge.model": "the judge's shared values and their strict parsers: rubric, judgment file, "
    "calibration record and the kappa gate, which calibration and the judge stage build on",
}


def test_long_modules_say_why() -> None:
    long = {m.name for m in MODULES if len(m.path.read_text(encoding="utf-8").splitlines()) > 650}
    assert long - set(LONG_MODULES) == set(), "split the module or give the reason here"
    assert set(LONG_MODULES) - {m.name for m in MODULES} == set()  # no stale entry


def test_no_side_effects_below_the_io_layer() -> None:
    problems = [
        problem
        for module in MODULES
        if (_layer_of(module.name) or (PURE_BELOW, ""))[0] < PURE_BELOW
        for problem in effect_violations(module)
    ]
    assert not problems, _report(problems)


def test_nothing_calls_sys_exit() -> None:
    # main() returns the exit status; only __main__ turns it into SystemExit
    problems = [
        problem
        for module in MODULES
        for problem in effect_violations(module)
        if "sys.exit" in problem or "os._exit" in problem
    ]
    assert not problems, _report(problems)


# ---------------------------------------------------------------------------------------------
# The checkers catch what they are meant to catch


def _fake(name: str, source: str) -> Module:
    parts = name.split(".")
    is_package = name in {"model", "rules", "adapters", "regression", "render"}
    relative = Path(*parts, "__init__.py") if is_package else Path(*parts).with_suffix(".py")
    return Module(name, SOURCE / relative, ast.parse(source))


@pytest.mark.parametrize(
    ("name", "source", "expected"),
    [
        ("model.trace", "import requests", "'requests', not in the stdlib"),
        ("errors", "from yaml import safe_load", "'yaml', not in the stdlib"),
        ("model.trace", f"from {PACKAGE}.engine import Validator", "upward"),
        ("model.trace", "from ..engine import Validator", "upward"),
        ("rules.schema", f"from {PACKAGE}.adapters import to_trace", "siblings"),
        ("adapters", "from ..rules import RULES", "siblings"),
        ("scoring", f"from {PACKAGE}.render import render_json", "upward"),
        ("render.console", f"from {PACKAGE} import io", "upward"),
        ("render.console", f"from {PACKAGE} import Trace", "upward"),  # the package __init__
        ("engine", "def f():\n    from agent_reliability_harness.cli import main", "upward"),
        ("_json", f"import {PACKAGE}.model.trace", "upward"),
        ("brand_new", "import json", "has no layer"),
    ],
)
def test_dependency_checker_catches(name: str, source: str, expected: str) -> None:
    problems = dependency_violations(_fake(name, source))
    assert any(expected in p for p in problems), problems


@pytest.mark.parametrize(
    ("name", "source"),
    [
        ("engine", f"from {PACKAGE}.scoring import passes"),
        ("scoring", f"from {PACKAGE}.rules.registry import CATEGORY_BY_NAME"),
        ("rules.schema", "from .registry import rule"),
        ("render.console", f"from {PACKAGE}.model.report import RunReport"),
        ("cli", f"from {PACKAGE}.render import render_json"),
        ("model.trace", "from __future__ import annotations\nimport math, json"),
    ],
)
def test_dependency_checker_allows(name: str, source: str) -> None:
    assert dependency_violations(_fake(name, source)) == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("print('x')", "print()"),
        ("open('f')", "open()"),
        ("import sys\nsys.exit(1)", "sys.exit()"),
        ("import time\nt = time.time()", "time.time()"),
        ("import time\nt = time.monotonic()", "time.monotonic()"),
        ("from time import perf_counter as pc\nt = pc()", "pc()"),
        ("import datetime\nd = datetime.datetime.now()", "datetime.datetime.now()"),
        ("from datetime import date\nd = date.today()", "date.today()"),
        ("import random", "randomness"),
        ("from random import choice", "randomness"),
        ("from pathlib import Path\nPath('x').write_text('y')", "touches a file"),
        ("import importlib\nimportlib.import_module('x')", "imports dynamically"),
    ],
)
def test_effect_checker_catches(source: str, expected: str) -> None:
    problems = effect_violations(_fake("rules.schema", source))
    assert any(expected in p for p in problems), problems


def test_effect_checker_allows_pure_code() -> None:
    source = (
        "import json, math, re\n"
        "from datetime import datetime\n"
        "x = json.dumps({'a': 1}); y = re.compile('a').search('a')\n"
        "z = datetime.fromisoformat('2024-01-01')\n"
    )
    assert effect_violations(_fake("rules.schema", source)) == []
