"""The configuration file (docs/configuration.md): found from the current directory upwards,
decoded strictly, under the command line, and shown by ``arh config``.

Every test runs ``arh`` in a project folder under a temporary directory that is the root of its
repository (it holds a ``.git``), so that no file above it, and not this repository's own
pyproject.toml, can take part. The expected lines were worked out by hand from the files each
test writes.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

from agent_reliability_harness import cli
from agent_reliability_harness.app import config
from agent_reliability_harness.cli import FORMAT_CHOICES

from conftest import ROOT, SAMPLES, Run

Arh = Callable[..., Run]
POLICY = SAMPLES / "policy_trajectory.json"
PASSING = SAMPLES / "traces" / "rebook_pass.json"  # passes the policy
# fails the policy with one error finding, ARH-FLW-003 (a rebooking made twice)
DOUBLED = SAMPLES / "traces" / "rebook_double_rebooking.json"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tmp_path/project``, the root of a repository, with ``policy.json`` and ``runs/`` (the
    two sample traces), as the current directory."""
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    (root / "runs").mkdir()
    shutil.copy(POLICY, root / "policy.json")
    shutil.copy(PASSING, root / "runs" / "pass.json")
    shutil.copy(DOUBLED, root / "runs" / "doubled.json")
    monkeypatch.chdir(root)
    return root


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _settings(arh: Arh, *argv: str) -> dict[str, dict[str, object]]:
    """``arh config --json COMMAND ARGV...``: the command's settings by key."""
    run = arh("config", "--json", *argv)
    assert run.status == 0, run.err
    [(_, rows)] = json.loads(run.out)["commands"].items()
    return {row.pop("key"): row for row in rows}


# -- where the file is found -------------------------------------------------------------------


def test_the_settings_are_found_from_a_subfolder(arh: Arh, project: Path) -> None:
    _write(
        project / "pyproject.toml",
        '[project]\nname = "demo"\n\n[tool.arh]\npolicy = "policy.json"\n'
        '[tool.arh.validate]\njson-out = "reports/latest.json"\n',
    )
    (project / "runs" / "deeper").mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(project / "runs" / "deeper")
        run = arh("validate", "../pass.json")
    # no --policy: the file's, relative to the file's folder (project/), not to runs/deeper/
    assert run.status == 0, run.err
    assert "1 of 1 trace passed" in run.out
    assert run.out.endswith("JSON report written to ../../reports/latest.json\n")
    summary = json.loads((project / "reports" / "latest.json").read_text("utf-8"))["summary"]
    assert summary["passed_traces"] == 1


def test_in_one_folder_arh_toml_wins_over_pyproject_toml(arh: Arh, project: Path) -> None:
    _write(project / "pyproject.toml", '[tool.arh]\npolicy = "policy.json"\n')
    _write(project / "arh.toml", 'policy = "policy.json"\nignore = ["ARH-FLW-003"]\n')
    run = arh("validate", "runs", "--quiet")
    assert run.status == 0, run.err  # ARH-FLW-003 is off: arh.toml's settings
    assert _settings(arh, "validate")["ignore"] == {
        "value": ["ARH-FLW-003"],
        "origin": "file",
        "location": "arh.toml:2",
        "toml_key": "ignore",
    }


def test_the_nearest_file_wins_and_a_pyproject_without_the_table_is_passed_over(
    arh: Arh, project: Path
) -> None:
    _write(project / "pyproject.toml", '[tool.arh]\npolicy = "policy.json"\nfail-under = 90\n')
    # has a tool table (so it is parsed), but no tool.arh: the search goes on upwards
    _write(project / "runs" / "pyproject.toml", "tool = { black = { line-length = 99 } }\n")
    _write(project / "runs" / "nested" / "arh.toml", "fail-under = 50\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(project / "runs")
        assert _settings(arh, "validate")["fail-under"]["location"] == "../pyproject.toml:3"
        patch.chdir(project / "runs" / "nested")
        shown = _settings(arh, "validate")
    # the nearest file alone: settings are not merged with a file further up
    assert shown["fail-under"]["location"] == "arh.toml:1"
    assert shown["policy"] == {"value": None, "origin": "default"}


@pytest.mark.parametrize(
    "text",
    [
        "[tool.arh]\nfail-under = 1",
        "[tool.arh.validate]\nfail-under = 1",
        "[tool]\narh.fail-under = 1",
        "[ tool ]\narh = { fail-under = 1 }",
        "tool.arh.fail-under = 1",
        "tool = { arh = { fail-under = 1 } }",
        '[ "tool" . "arh" ]\nfail-under = 1',
        "[tool.ruff]\nline-length = 99\n\n['tool'.arh]\nfail-under = 1",
    ],
)
def test_every_way_to_write_the_table_is_found(arh: Arh, project: Path, text: str) -> None:
    # a pyproject.toml that cannot hold tool.arh is not parsed at all (a start-up cost): each
    # TOML spelling of the table must still be
    _write(project / "pyproject.toml", text + "\n")
    shown = _settings(arh, "validate")
    assert shown["fail-under"]["value"] == 1.0
    assert shown["fail-under"]["location"].startswith("pyproject.toml:")


@pytest.mark.parametrize("marker", [".git", ".hg", ".git file"])
def test_the_search_stops_at_the_repository_root(arh: Arh, project: Path, marker: str) -> None:
    _write(project.parent / "arh.toml", 'policy = "project/policy.json"\n')
    shutil.rmtree(project / ".git")
    if marker == ".git file":  # a worktree's .git is a file
        _write(project / ".git", "gitdir: elsewhere\n")
    else:
        (project / marker).mkdir()
    run = arh("validate", "runs", "--quiet")
    assert run.status == 2
    assert "the following arguments are required: --policy" in run.err
    # without the marker, the file above is found
    shutil.rmtree(project / marker) if marker != ".git file" else (project / ".git").unlink()
    run = arh("validate", "runs/pass.json", "--quiet")
    assert run.status == 0, run.err


def test_a_gate_file_called_arh_toml_is_not_the_configuration(arh: Arh, project: Path) -> None:
    gates = "[defaults]\nmin_pass_rate = 0.9\n"  # the gate file of docs/statistics.md's kind
    _write(project / "arh.toml", gates)
    _write(project / "pyproject.toml", '[tool.arh]\npolicy = "policy.json"\n')
    run = arh("validate", "runs", "--json-out", "report.json", "--quiet")
    assert run.status == 1  # doubled.json fails: the pyproject.toml's policy was used
    run = arh("config", "stats")
    assert run.out.splitlines()[:2] == [
        "configuration file: pyproject.toml [tool.arh]",
        "skipped arh.toml: a gate file, read with --gates",
    ]
    # still read by --gates as before: 1 of 2 runs passed, below 0.9
    run = arh("stats", "report.json", "--gates", "arh.toml")
    assert run.status == 1
    assert "is below min_pass_rate 0.9 [arh.toml:2]" in run.out


# -- the command line wins ---------------------------------------------------------------------


def test_the_command_line_wins(arh: Arh, project: Path) -> None:
    _write(
        project / "pyproject.toml",
        "[tool.arh]\n"
        'policy = "missing.json"\n'
        "fail-under = 90\n"
        'trace-id-at = ["/a", "/b"]\n'
        'ignore = ["ARH-FLW-003"]\n'
        'severity = { "ARH-SCH-001" = "warning" }\n',
    )
    # the file's policy does not exist: the command line's is read instead
    run = arh("validate", "--policy", "policy.json", "runs", "--ignore", "ARH-SAF-001", "--quiet")
    assert run.status == 0, run.err  # and the file's ignore still holds: they add up
    shown = _settings(
        arh, "validate", "--policy", "policy.json", "--fail-under", "70", "--trace-id-at", "/c",
        "--ignore", "ARH-SAF-001", "--severity", "ARH-SCH-001=info",
    )  # fmt: skip
    assert shown["policy"] == {"value": "policy.json", "origin": "command line"}
    # a flag equal to the default still wins over the file
    assert shown["fail-under"] == {"value": 70.0, "origin": "command line"}
    assert shown["trace-id-at"] == {"value": ["/c"], "origin": "command line"}  # replaced
    assert shown["ignore"]["value"] == ["ARH-FLW-003", "ARH-SAF-001"]  # added
    assert shown["ignore"]["origin"] == "file and command line"
    # the command line's severity comes last, so it wins for the rule both name
    assert shown["severity"]["value"] == {"ARH-SCH-001": "info"}


def test_select_is_replaced_by_the_command_line(arh: Arh, project: Path) -> None:
    _write(project / "arh.toml", 'policy = "policy.json"\nselect = ["ARH-SCH"]\n')
    # only the schema rules run: the doubled run's ARH-FLW-003 is not among them
    assert arh("validate", "runs", "--quiet").status == 0
    # --select replaces the file's select (it does not add to it): ARH-FLW-003 runs again
    run = arh("validate", "runs", "--quiet", "--select", "ARH-FLW")
    assert run.status == 1
    assert _settings(arh, "validate", "--select", "ARH-FLW")["select"] == {
        "value": ["ARH-FLW"],
        "origin": "command line",
    }


def test_a_command_table_wins_over_the_top_level(arh: Arh, project: Path) -> None:
    _write(
        project / "arh.toml",
        'format = "openai-chat"\nfail-under = 80\n[compare]\nfail-under = 60\n[convert]\n'
        'format = "anthropic-messages"\n',
    )
    assert _settings(arh, "validate")["fail-under"]["value"] == 80.0
    assert _settings(arh, "compare")["fail-under"] == {
        "value": 60.0,
        "origin": "file",
        "location": "arh.toml:4",
        "toml_key": "compare.fail-under",
    }
    assert _settings(arh, "convert")["format"]["value"] == "anthropic-messages"
    assert _settings(arh, "validate")["format"]["value"] == "openai-chat"


def test_compare_uses_the_policy_to_validate_and_not_with_saved_reports(
    arh: Arh, project: Path
) -> None:
    run = arh("validate", "--policy", "policy.json", "runs", "--json-out", "base.json", "--quiet")
    assert run.status == 1
    _write(
        project / "pyproject.toml",
        '[tool.arh]\npolicy = "policy.json"\nfail-under = 90\nignore = ["ARH-FLW-003"]\n',
    )
    # traces: validated with the file's policy (and its ignore: the doubled run's error is off)
    run = arh("compare", "--baseline", "base.json", "runs")
    assert run.status == 0, run.err
    assert "fail->pass 1" in run.out
    # saved reports: the settings of validation do not apply (they would be a usage error)
    run = arh("compare", "--baseline", "base.json", "--candidate", "base.json")
    assert run.status == 0, run.err
    assert _settings(arh, "compare", "--candidate", "base.json")["policy"] == {
        "value": None,
        "origin": "default",
    }


def test_paths_are_relative_to_the_file(arh: Arh, project: Path) -> None:
    _write(project / "ci" / "gates.toml", "[defaults]\nmin_pass_rate = 0.9\n")
    run = arh("validate", "--policy", "policy.json", "runs", "--json-out", "report.json", "--quiet")
    assert run.status == 1
    _write(project / "ci" / "arh.toml", 'gates = "gates.toml"\n')
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(project / "ci")
        run = arh("stats", "../report.json")
    assert run.status == 1  # 1 of 2 runs passed
    assert "is below min_pass_rate 0.9 [gates.toml:2]" in run.out
    _write(project / "runs" / "x" / "y.txt", "")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(project / "runs" / "x")
        run = arh("config", "stats", "--config", "../../ci/arh.toml")
    assert '"../../ci/gates.toml"' in run.out


# -- choosing the file -------------------------------------------------------------------------


def test_isolated_and_config(arh: Arh, project: Path) -> None:
    _write(project / "pyproject.toml", '[tool.arh]\npolicy = "missing.json"\n')
    _write(project / "conf" / "team.toml", 'policy = "../policy.json"\nfail-under = 10\n')
    run = arh("validate", "runs/pass.json", "--quiet")
    assert run.status == 2  # a policy that cannot be used: a configuration error
    assert (
        run.err == "error: invalid policy: missing.json: cannot read: No such file or directory\n"
    )
    run = arh("validate", "runs/pass.json", "--quiet", "--config", "conf/team.toml")
    assert run.status == 0, run.err
    run = arh("validate", "runs/pass.json", "--isolated", "--policy", "policy.json", "--quiet")
    assert run.status == 0, run.err
    run = arh("validate", "runs/pass.json", "--isolated")
    assert run.status == 2
    assert run.err.endswith("arh validate: error: the following arguments are required: --policy\n")
    run = arh("validate", "runs", "--isolated", "--config", "conf/team.toml")
    assert run.status == 2
    assert "argument --config: not allowed with argument --isolated" in run.err
    assert arh("config", "--isolated", "stats").out.startswith(
        "configuration file: none (--isolated)\n"
    )
    assert arh("config", "stats", "--config=conf/team.toml").out.startswith(
        "configuration file: conf/team.toml (--config)\n"
    )


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("missing.toml", None, "missing.toml: cannot read: No such file or directory"),
        (
            "pyproject.toml",
            '[project]\nname = "x"\n',
            "pyproject.toml: has no [tool.arh] table: a pyproject.toml holds arh's settings there",
        ),
        (
            "gates.toml",
            "[workflows.refunds]\nmin_pass_rate = 0.9\n",
            (
                "gates.toml: is a gate file ([defaults] or [workflows] tables), not a "
                "configuration file: name it with --gates, or with the gates key of a "
                "configuration file"
            ),
        ),
    ],
)
def test_a_named_file_that_cannot_be_used(
    arh: Arh, project: Path, name: str, text: str | None, message: str
) -> None:
    if text is not None:
        _write(project / "conf" / name, text)
    run = arh("validate", "runs", "--config", f"conf/{name}")
    assert run.status == cli.EXIT_CONFIG == 2
    assert run.out == ""
    assert run.err == f"error: invalid configuration: conf/{message}\n"


def test_no_file_found(arh: Arh, project: Path) -> None:
    run = arh("config", "convert")
    assert run.out.splitlines()[0] == (
        "configuration file: none found (an arh.toml, or a pyproject.toml with [tool.arh], in "
        "the current directory or above it, up to the repository's root)"
    )


# -- what the file may say ---------------------------------------------------------------------

_FORMATS = ", ".join(map(repr, FORMAT_CHOICES))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # keys
        ("fail_under = 80", ("2: tool.arh.fail_under: unknown key 'fail_under' (keys are spelled "
         "as the options: 'fail-under')")),
        ("fail-undr = 80", ("2: tool.arh.fail-undr: unknown key 'fail-undr' (did you mean "
         "'fail-under'?)")),
        ("json-out = 'r.json'", ("2: tool.arh.json-out: a report path differs from command to "
         "command: set it in a command's table, such as [tool.arh.validate]")),
        ("[tool.arh.stats]\npolicy = 'p.json'", ("2: tool.arh.stats.policy: arh stats has no "
         "--policy option")),
        ("[tool.arh.validate]\nmd_out = 'r.md'", ("2: tool.arh.validate.md_out: unknown key "
         "'md_out' (keys are spelled as the options: 'md-out')")),
        ("validate = 5", ("2: tool.arh.validate: must be a table of arh validate's settings, got "
         "a number")),
        ("'odd key' = 1", ("2: tool.arh.'odd key': unknown key 'odd key'; known keys: "
         + ", ".join([*config.KEYS, *config.COMMANDS]))),
        # TOML types
        ("fail-under = '80'", "2: tool.arh.fail-under: must be a number, got a string"),
        ("any-step = 'yes'", "2: tool.arh.any-step: must be true or false, got a string"),
        ("k = 2.5", "2: tool.arh.k: must be an integer, got a number"),
        ("policy = ''", "2: tool.arh.policy: the path is empty"),
        ("policy = ['a.json']", "2: tool.arh.policy: must be a path (a string), got an array"),
        ("ignore = ['ARH-FLW-003', 5]", ("2: tool.arh.ignore: item 2 must be a string, got a "
         "number")),
        ("ignore = { a = 1 }", ("2: tool.arh.ignore: must be a string or an array of strings, got "
         "a table")),
        ("severity = ['ARH-FLW-003']", ("2: tool.arh.severity: must be a table of rule IDs and "
         "severities, such as { \"ARH-FLW-003\" = \"warning\" }, got an array")),
        ("severity = { ARH-FLW-003 = 'loud' }", ("2: tool.arh.severity: the severity of "
         "'ARH-FLW-003' must be one of error, warning, info, got 'loud'")),
        # values, checked by the option's own parser
        ("fail-under = 180", "2: tool.arh.fail-under: must be a number from 0 to 100, got '180'"),
        ("format = 'yaml'", f"2: tool.arh.format: must be one of {_FORMATS}, got 'yaml'"),
        ("trace-id-at = 'task'", ("2: tool.arh.trace-id-at: a JSON pointer is empty or starts "
         "with '/', got 'task'")),
        ("jobs = 0", "2: tool.arh.jobs: must be at least 1, got '0'"),
        ("max-input-size = '5X'", ("2: tool.arh.max-input-size: not a size such as 512M or 2G: "
         "'5X'")),
        ("severity = { ARH-XYZ-001 = 'info' }", ("2: tool.arh.severity: unknown rule "
         "'ARH-XYZ-001'")),
        # the table itself
        ("[tool]\narh = 5", None),
    ],
)  # fmt: skip
def test_a_bad_key_or_value_is_one_error_at_its_line(
    arh: Arh, project: Path, text: str, message: str | None
) -> None:
    body = text if text.startswith("[") else f"[tool.arh]\n{text}"
    _write(project / "pyproject.toml", body + "\n")
    if message is None:
        message = "2: tool.arh: must be a table, got a number"
    run = arh("validate", "--policy", "policy.json", "runs")
    assert run.status == 2
    assert run.out == ""
    lines = run.err.splitlines()
    assert len(lines) == 1, run.err
    assert lines[0].startswith(f"error: invalid configuration: pyproject.toml:{message}")


def test_an_arh_toml_is_checked_the_same_way(arh: Arh, project: Path) -> None:
    _write(project / "arh.toml", "policy = 'policy.json'\n\n[defaults]\nmin_pass_rate = 1\n")
    run = arh("stats", "x.json")
    assert run.err == (
        "error: invalid configuration: arh.toml:3: defaults: gate tables belong in a gate file "
        "of their own: name it with the gates key (or --gates)\n"
    )
    _write(project / "arh.toml", "[tool.arh]\npolicy = 'policy.json'\n")
    run = arh("stats", "x.json")
    assert run.err == (
        "error: invalid configuration: arh.toml:1: tool: unknown key 'tool'; known keys: "
        + ", ".join([*config.KEYS, *config.COMMANDS])
        + "\n"
    )
    _write(project / "arh.toml", "policy = 'policy.json'\nfail-under = = 1\n")
    run = arh("stats", "x.json")
    assert run.err.startswith("error: invalid configuration: arh.toml:2:14: invalid TOML: ")


def test_every_command_checks_the_whole_file(arh: Arh, project: Path) -> None:
    # a mistake in the table of a command that is not run is an error all the same
    _write(project / "arh.toml", "[stats]\ngate = 5\n")
    for argv in (["validate", "runs"], ["convert", "runs"], ["compare", "--baseline", "x"]):
        run = arh(*argv)
        assert run.status == 2
        assert run.err == (
            "error: invalid configuration: arh.toml:2: stats.gate: must be a string or an array "
            "of strings, got a number\n"
        )


def test_help_is_shown_whatever_the_file_says(arh: Arh, project: Path) -> None:
    _write(project / "arh.toml", "nonsense = 1\n")
    run = arh("validate", "--help")
    assert run.status == 0
    assert "--isolated" in run.out
    assert run.err == ""


# -- arh config --------------------------------------------------------------------------------


def test_arh_config_shows_each_setting_and_where_it_came_from(arh: Arh, project: Path) -> None:
    _write(
        project / "pyproject.toml",
        "[tool.arh]\n"
        'format = "openai-chat"\n'
        'messages-at = "/traj"\n'
        "\n"
        "[tool.arh.convert]\n"
        'output = "out/runs.jsonl"\n',
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(project / "runs")
        run = arh("config", "convert", "--trace-id-at", "/task_id")
        again = arh("config", "convert", "--trace-id-at", "/task_id")
    assert run.status == 0, run.err
    # the keys in the order of `arh convert --help`; the values as JSON; the widest key is
    # max-input-size (14 characters), the widest value "../out/runs.jsonl" (19 with quotes);
    # 536870912 is the default --max-input-size, 512M
    assert run.out == (
        "configuration file: ../pyproject.toml [tool.arh]\n"
        "\n"
        "arh convert\n"
        '  format          "openai-chat"        ../pyproject.toml:2\n'
        '  messages-at     "/traj"              ../pyproject.toml:3\n'
        '  trace-id-at     ["/task_id"]         command line\n'
        "  agent-name      null                 default\n"
        "  workflow        null                 default\n"
        '  output          "../out/runs.jsonl"  ../pyproject.toml:6\n'
        "  max-input-size  536870912            default\n"
    )
    assert again.out == run.out


def test_arh_config_json(arh: Arh, project: Path) -> None:
    _write(project / "arh.toml", 'jobs = 3\ngate = "pass rate >= 0.8"\n')
    run = arh("config", "--json")
    document = json.loads(run.out)
    assert document["configuration"] == {"path": "arh.toml", "table": None}
    assert (document["how"], document["skipped"]) == ("found", [])
    assert list(document["commands"]) == ["validate", "compare", "stats", "convert", "status"]
    stats = {row["key"]: row for row in document["commands"]["stats"]}
    assert stats["gate"] == {
        "key": "gate",
        "value": ["pass rate >= 0.8"],
        "origin": "file",
        "location": "arh.toml:2",
        "toml_key": "gate",
    }
    validate = {row["key"]: row for row in document["commands"]["validate"]}
    assert validate["jobs"]["value"] == 3
    assert "jobs" not in stats  # arh stats has no --jobs


def test_arh_config_usage(arh: Arh, project: Path) -> None:
    run = arh("config", "rules")
    assert run.status == 2
    assert "argument COMMAND: invalid choice: 'rules'" in run.err
    run = arh("config", "validate", "--bogus")
    assert run.status == 2
    assert "unrecognized arguments: --bogus" in run.err


# -- the table of keys -------------------------------------------------------------------------


def test_every_key_is_an_option_of_a_command() -> None:
    assert cli._CONFIGURED == config.COMMANDS
    options = {name: cli._options_of(name) for name in config.COMMANDS}
    for key in config.KEYS.values():
        assert any(key.option in found for found in options.values()), key.name
    # and every option that takes a value a project would always give has a key
    for name, found in options.items():
        for option in found:
            if option.endswith("-out"):
                continue
            assert option.removeprefix("--") in config.KEYS or option in {
                "--help", "--baseline", "--candidate", "--quiet", "--config", "--isolated",
                "--now", "--json",  # arh status: the time of one run, and what one reader wants
            }, (name, option)  # fmt: skip


def test_the_documentation_lists_every_key_with_its_commands() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    rows = {}
    for line in page.splitlines():
        match = re.fullmatch(r"\| `([a-z-]+)` \| .* \| ([a-z, ]+) \|", line)
        if match:
            rows[match.group(1)] = match.group(2).split(", ")
    options = {name: cli._options_of(name) for name in config.COMMANDS}
    for key in config.KEYS.values():
        commands = [name for name, found in options.items() if key.option in found]
        assert rows.get(key.name) == commands, key.name


def test_this_repository_has_no_arh_settings() -> None:
    # the tests run arh in this repository's tree; its own settings would change them all
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "arh" not in declared.get("tool", {})
    assert not (ROOT / "arh.toml").exists()


@pytest.mark.parametrize(
    "pyproject",
    [
        None,
        '[project]\nname = "plain"\n',
        # arh named, as this repository's pyproject.toml names it, but no tool.arh
        '[project.scripts]\narh = "x:main"\n[tool.pytest.ini_options]\narh_policy = "p.json"\n',
    ],
)
def test_no_file_costs_no_start_up_time(project: Path, pyproject: str | None) -> None:
    # without a configuration file (or with a pyproject.toml that never says arh), its reader
    # and tomllib are not imported: they measured 11 ms of every start
    if pyproject is not None:
        _write(project / "pyproject.toml", pyproject)
    code = (
        "import sys\n"
        "from agent_reliability_harness.cli import main\n"
        "main(['validate', '--policy', 'policy.json', 'runs/pass.json', '--quiet'])\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=project
    ).stdout.split()
    assert "tomllib" not in loaded
    assert "agent_reliability_harness.app.config" not in loaded
