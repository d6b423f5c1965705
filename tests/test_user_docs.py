"""The user guides stay true to the code: every error message is in docs/troubleshooting.md, every
rule category has a recipe in docs/policy-cookbook.md whose files are the ones shown, and the
README links every guide. (tests/test_docs.py runs the commands in all of them.)

Error messages are found in the source with ``ast``: the message argument of every
``InputError``, ``UsageError``, ``bad`` (the parsers' InputError helper), ``ArgumentTypeError``
and ``_error`` call, and the usage problems the CLI returns. A message is a template; its longest
fixed piece of text (after collapsing spaces) must appear on the troubleshooting page. A new
message without an entry fails here, so the page cannot silently go stale.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent_reliability_harness.adapters import to_trace
from agent_reliability_harness.rules import RULES

from conftest import ROOT, Run

SOURCE = ROOT / "src" / "agent_reliability_harness"
TROUBLESHOOTING = ROOT / "docs" / "troubleshooting.md"
COOKBOOK = ROOT / "docs" / "policy-cookbook.md"

# callable name -> index of its message argument
_MESSAGE_ARG = {
    "InputError": 0,
    "UsageError": 0,
    "ArgumentTypeError": 0,
    "_error": 0,
    "bad": 1,
    "bad_key": 1,  # app/config.py: a key of the configuration file
    "_bad_value": 2,  # app/config.py: a value of the configuration file
    "NotADirectoryError": 1,
}
_MIN_PIECE = 4  # shorter fixed pieces (", ", "): ") say nothing about the message


@dataclass(frozen=True)
class Message:
    where: str  # file:line
    pieces: tuple[str, ...]  # the fixed text of the template, in order

    @property
    def key(self) -> str:
        """The longest fixed piece: what the page must contain."""
        return max(self.pieces, key=len)


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _assignments(tree: ast.AST) -> dict[str, list[ast.expr]]:
    """Every value assigned to each plain name in a module (any scope)."""
    found: dict[str, list[ast.expr]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found.setdefault(target.id, []).append(node.value)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
            found.setdefault(node.target.id, []).append(node.value)
    return found


def _pieces(node: ast.expr, names: dict[str, list[ast.expr]], depth: int = 0) -> list[str]:
    """The fixed text of a message expression; names are followed to their string values."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        out: list[str] = []
        for part in node.values:
            if isinstance(part, ast.Constant) and isinstance(part.value, str):
                out.append(part.value)
            elif isinstance(part, ast.FormattedValue) and isinstance(part.value, ast.Name):
                out.extend(_followed(part.value.id, names, depth))
        return out
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _pieces(node.left, names, depth) + _pieces(node.right, names, depth)
    if isinstance(node, ast.Name):
        return _followed(node.id, names, depth)
    return []


def _followed(name: str, names: dict[str, list[ast.expr]], depth: int) -> list[str]:
    if depth > 2:
        return []
    out: list[str] = []
    for value in names.get(name, []):
        if isinstance(value, ast.Constant | ast.JoinedStr | ast.BinOp):
            out.extend(_pieces(value, names, depth + 1))
    return out


def _callee(node: ast.Call) -> str | None:
    if isinstance(node.func, ast.Name):
        return node.func.id
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    return None


def _messages_in(path: Path) -> Iterator[Message]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = _assignments(tree)
    where = path.relative_to(ROOT).as_posix()
    for node in ast.walk(tree):
        expr: ast.expr | None = None
        if isinstance(node, ast.Call):
            index = _MESSAGE_ARG.get(_callee(node) or "")
            if index is not None and len(node.args) > index:
                expr = node.args[index]
        elif isinstance(node, ast.FunctionDef) and node.name.endswith("_usage"):
            # the CLI's checks of option combinations return their problem as a string
            for inner in ast.walk(node):
                if isinstance(inner, ast.Return) and inner.value is not None:
                    pieces = [p for p in _pieces(inner.value, names) if len(p.strip()) >= 4]
                    if pieces:
                        yield Message(f"{where}:{inner.lineno}", tuple(pieces))
            continue
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            # usage lines assembled by hand: "...arh: error: a command is required\n"
            found = re.search(r"\berror: (.{4,})", node.value)
            if found and path.name == "cli.py":
                yield Message(f"{where}:{node.lineno}", (found.group(1),))
            continue
        if expr is None:
            continue
        pieces = [p for p in _pieces(expr, names) if len(_collapse(p)) >= _MIN_PIECE]
        if pieces:
            yield Message(f"{where}:{expr.lineno}", tuple(_collapse(p) for p in pieces))


def source_messages() -> list[Message]:
    return [m for path in sorted(SOURCE.rglob("*.py")) for m in _messages_in(path)]


def action_messages() -> list[Message]:
    """The action script's own usage errors (`usage_error "..."`), without shell variables."""
    script = ROOT / "action" / "run.sh"
    out = []
    for number, line in enumerate(script.read_text(encoding="utf-8").splitlines(), 1):
        for text in re.findall(r'usage_error "([^"]+)"', line):
            pieces = [p for p in re.split(r"\$\w+|\$\{[^}]*\}", text) if len(p.strip()) >= 4]
            out.append(Message(f"action/run.sh:{number}", tuple(_collapse(p) for p in pieces)))
    return out


def _page() -> str:
    return _collapse(TROUBLESHOOTING.read_text(encoding="utf-8"))


def test_the_scan_finds_messages() -> None:
    keys = {m.key for m in source_messages()}
    # a few messages checked by hand in the source, so that a broken scan cannot pass vacuously
    for known in (
        "no such file or directory",  # io.py
        "the JSON Lines input has no records",  # io.py
        "unknown key",  # model/policy.py, an f-string
        "must be a finite number >= 0, got",  # _decode.py, via bad()
        "a command is required",  # cli.py, a usage line built by hand
        "--max-score-drop applies only to --fail-on regressions",  # cli.py, _compare_usage
        "not a validation report: expected an object with a 'reports' array",  # a constant
    ):
        assert any(known in key for key in keys), known
    assert len(keys) > 60


def test_every_error_message_is_documented() -> None:
    page = _page()
    missing = sorted(
        {
            f"{m.where}: {m.key!r}"
            for m in source_messages() + action_messages()
            if m.key not in page
        }
    )
    assert not missing, (
        "error messages missing from docs/troubleshooting.md (add an entry with the message, "
        "its cause and the fix):\n" + "\n".join(missing)
    )


# argparse writes these itself; each is triggered here and must be on the page
_ARGPARSE = [
    (("validate",), "the following arguments are required"),
    (("validate", "--policy", "p.json", "t.json", "--bogus"), "unrecognized arguments"),
    (("validate", "--policy", "p.json", "t.json", "--format", "yaml"), "invalid choice"),
    (("validate", "t.json", "--policy"), "expected one argument"),
    (("validate", "--policy", "p.json", "t.json", "--fail-under", "x"), "not a number"),
    (("frobnicate",), "invalid choice"),
    ((), "a command is required"),
]


@pytest.mark.parametrize(("argv", "text"), _ARGPARSE)
def test_usage_errors_are_documented(
    argv: tuple[str, ...], text: str, arh: Callable[..., Run]
) -> None:
    run = arh(*argv)
    assert run.status == 2
    assert text in run.err
    assert text in _page()


def test_troubleshooting_entries_have_cause_and_fix() -> None:
    text = TROUBLESHOOTING.read_text(encoding="utf-8")
    entries = re.split(r"^### ", text, flags=re.MULTILINE)[1:]
    assert len(entries) >= 20
    for entry in entries:
        title = entry.splitlines()[0]
        assert "**Cause**" in entry, title
        assert "**Fix**" in entry, title


# -- the cookbook --------------------------------------------------------------------------------

_LINKED_JSON = re.compile(
    r"^\[(?P<path>docs/examples/cookbook/[^\]]+\.json)\]\([^)]*\):?\s*\n+```json\n(?P<body>.*?)^```",
    re.MULTILINE | re.DOTALL,
)


def test_cookbook_shows_its_files_as_they_are() -> None:
    text = COOKBOOK.read_text(encoding="utf-8")
    shown = list(_LINKED_JSON.finditer(text))
    assert len(shown) >= 14
    for match in shown:
        path = ROOT / match.group("path")
        assert path.is_file(), match.group("path")
        assert json.loads(match.group("body")) == json.loads(path.read_text("utf-8")), path


# The rule categories of policy schema version 1. Categories of newer policy features get their
# recipes as those features are documented; add each here when its recipe is written.
RECIPE_CATEGORIES = {
    "schema",
    "budget",
    "safety",
    "grounding",
    "sequence",
    "flow",
    "completion",
    # policy language 1.1
    "provenance",
    "conditions",
    "confirmation",
    "loops",
    # policy language 1.2
    "answers",
}


def test_quickstart_shows_its_files_as_they_are() -> None:
    text = (ROOT / "docs" / "quickstart.md").read_text(encoding="utf-8")
    blocks = [
        json.loads(b) for b in re.findall(r"^```json\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
    ]
    files = [
        json.loads(p.read_text("utf-8"))
        for p in sorted((ROOT / "docs" / "examples" / "quickstart").rglob("*.json"))
    ]
    assert len(blocks) >= 2
    for block in blocks:
        assert block in files, f"a JSON block of docs/quickstart.md is no example file: {block}"


def test_cookbook_has_a_recipe_per_rule_category() -> None:
    text = COOKBOOK.read_text(encoding="utf-8")
    recipes = re.findall(r"^## Recipe: (\w+)", text, re.MULTILINE)
    categories = {rule.category for rule in RULES.values()}
    assert categories >= RECIPE_CATEGORIES, "a category was renamed or removed"
    missing = RECIPE_CATEGORIES - set(recipes)
    assert not missing, f"no recipe for {sorted(missing)}"
    for recipe in recipes:
        folder = ROOT / "docs" / "examples" / "cookbook" / recipe
        assert (folder / "policy.json").is_file(), recipe
        section = text.split(f"## Recipe: {recipe}", 1)[1].split("\n## ", 1)[0]
        # each recipe runs its policy on its traces, and the docs test checks the output
        assert re.search(
            rf"^\$ arh validate --policy docs/examples/cookbook/{recipe}/policy\.json ",
            section,
            re.MULTILINE,
        ), recipe
        rule_ids = {r for r in re.findall(r"ARH-[A-Z]+-\d{3}", section) if r in RULES}
        assert rule_ids, f"recipe {recipe} shows no finding"
        if recipe in categories:
            assert any(RULES[r].category == recipe for r in rule_ids), recipe


def test_cookbook_files_are_valid_for_the_schemas() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schemas = {
        "policy": json.loads((ROOT / "schemas" / "policy.schema.json").read_text("utf-8")),
        "trace": json.loads((ROOT / "schemas" / "trace.schema.json").read_text("utf-8")),
        "expectations": json.loads(
            (ROOT / "schemas" / "expectations.schema.json").read_text("utf-8")
        ),
    }
    files = sorted((ROOT / "docs" / "examples" / "cookbook").rglob("*.json"))
    assert files
    for path in files:
        document = json.loads(path.read_text("utf-8"))
        if path.name.startswith("transcript"):  # a provider's transcript: check what arh reads
            document = to_trace(document).to_dict()
        kind = "policy" if path.name.startswith("policy") else "trace"
        if path.name.startswith("expect"):  # an expectations file (--expect)
            kind = "expectations"
        jsonschema.validate(document, schemas[kind])


# -- links ---------------------------------------------------------------------------------------

GUIDES = [
    "docs/quickstart.md",
    "docs/concepts.md",
    "docs/policy-cookbook.md",
    "docs/troubleshooting.md",
    "docs/ci.md",
    "CONTRIBUTING.md",
    "SECURITY.md",
    "CHANGELOG.md",
]


@pytest.mark.parametrize("guide", GUIDES)
def test_readme_links_every_guide(guide: str) -> None:
    assert (ROOT / guide).is_file(), guide
    assert f"]({guide})" in (ROOT / "README.md").read_text("utf-8"), guide


def _local_links(path: Path) -> Iterator[tuple[str, Path]]:
    text = re.sub(r"^```.*?^```", "", path.read_text("utf-8"), flags=re.MULTILINE | re.DOTALL)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        yield target, (path.parent / target.split("#", 1)[0]).resolve()


@pytest.mark.parametrize("guide", GUIDES)
def test_guides_link_to_files_that_exist(guide: str) -> None:
    broken = [t for t, p in _local_links(ROOT / guide) if not p.exists()]
    assert not broken, f"{guide}: broken links {broken}"
