"""The commands a new user types first."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from agent_reliability_harness import __version__

from conftest import SAMPLES, Run


def test_version(arh: Callable[..., Run]) -> None:
    run = arh("--version")
    assert run.status == 0
    assert run.out == f"arh {__version__}\n"


def test_no_command_is_a_usage_error(arh: Callable[..., Run]) -> None:
    run = arh()
    assert run.status == 2
    assert "a command is required" in run.err


def test_samples_demo(arh: Callable[..., Run]) -> None:
    run = arh("validate", "--policy", SAMPLES / "policy_trajectory.json", SAMPLES / "traces")
    assert run.status == 1  # the samples include failing runs on purpose
    assert "2 of 6 traces passed" in run.out
    assert run.err == ""


@pytest.mark.parametrize("columns", [None, "120", "0", "-5", "wide"])
def test_help_width_is_what_argparse_would_choose(
    monkeypatch: pytest.MonkeyPatch, columns: str | None
) -> None:
    import shutil

    from agent_reliability_harness import cli

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    monkeypatch.setattr(cli, "_WIDTH", [])
    # shutil.get_terminal_size is what argparse itself asks
    assert cli._help_width() == shutil.get_terminal_size().columns - 2


# Modules a plain `arh validate` must not load: each costs milliseconds at start-up, and the
# console report needs none of them (the report writers and --jobs import theirs when asked).
# (`typing` and `dataclasses` are ordinary imports of the modules: the start-up budget, measured
# by `make perf` beside `flake8 --version`, has room for them.)
_HEAVY = ("shutil", "xml", "ssl", "http", "email", "tempfile", "multiprocessing")


@pytest.mark.parametrize(
    ("argv", "printed"),
    [
        (["--version"], "arh "),
        (["validate", "--policy", str(SAMPLES / "policy_trajectory.json"),
          str(SAMPLES / "traces")], "2 of 6 traces passed"),
        # one file is one piece of work: --jobs starts no workers for it
        (["validate", "--policy", str(SAMPLES / "policy_trajectory.json"),
          str(SAMPLES / "traces" / "rebook_pass.json"), "--jobs", "2"], "1 of 1 trace passed"),
    ],
)  # fmt: skip
def test_start_up_loads_only_what_the_command_needs(argv: list[str], printed: str) -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from agent_reliability_harness.cli import main\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "sys.stderr.write(' '.join(sorted(sys.modules)))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )
    assert printed in run.stdout  # the command did its work, not only start
    loaded = set(run.stderr.split())
    assert "agent_reliability_harness.cli" in loaded, run.stderr[-500:]
    assert not {m for m in loaded if m.split(".")[0] in _HEAVY}
