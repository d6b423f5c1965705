"""The commands a new user types first."""

from __future__ import annotations

from collections.abc import Callable

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
