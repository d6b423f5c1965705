"""The container image's files: the Dockerfile's rules (the ones that matter, checked here on
every platform) and hadolint's, and the compose file's three services."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from agent_reliability_harness.cli import _build_parser

from conftest import ROOT

DOCKERFILE = ROOT / "Dockerfile"
BUILD_TOOLS = ("gcc", "build-essential", "make", "git", "setuptools", "build==", "wheel")


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of a Dockerfile, continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n", " ", text)
    found = []
    for raw in joined.splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            found.append((word.upper(), rest.strip()))
    return found


def stages(text: str) -> list[list[tuple[str, str]]]:
    out: list[list[tuple[str, str]]] = []
    for word, rest in instructions(text):
        if word == "FROM":
            out.append([])
        if out:
            out[-1].append((word, rest))
    return out


def base_images(text: str) -> list[str]:
    args = dict(
        rest.split("=", 1) for word, rest in instructions(text) if word == "ARG" and "=" in rest
    )
    images = []
    for stage in stages(text):
        image = stage[0][1].split()[0]
        images.append(re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], image))
    return images


def test_the_base_is_a_slim_python_pinned_by_tag() -> None:
    images = base_images(DOCKERFILE.read_text(encoding="utf-8"))
    assert len(images) == 2  # a build stage and the final one
    for image in images:
        name, _, tag = image.partition(":")
        assert name == "python"
        assert re.fullmatch(r"3\.12(\.\d+)?-slim(-\w+)?", tag), image
        assert "latest" not in image


def test_the_final_stage_runs_arh_as_user_10001_without_build_tools() -> None:
    text = DOCKERFILE.read_text(encoding="utf-8")
    final = stages(text)[-1]
    users = [rest for word, rest in final if word == "USER"]
    assert users
    assert users[-1].split(":")[0] == "10001"
    assert "--uid 10001" in " ".join(rest for word, rest in final if word == "RUN")
    assert [json.loads(rest) for word, rest in final if word == "ENTRYPOINT"] == [["arh"]]
    runs = " ".join(rest for word, rest in final if word == "RUN")
    assert not [tool for tool in BUILD_TOOLS if tool in runs]
    assert "apt-get" not in runs
    assert "pip uninstall --yes pip" in runs  # pip itself is gone once the wheel is in
    copies = [rest for word, rest in final if word == "COPY"]
    assert copies == ["--from=build /dist /dist"]  # the wheel, and nothing else


def test_the_build_context_is_only_what_the_build_stage_copies() -> None:
    ignored = (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
    assert ignored[1] == "*"
    kept = sorted(line[1:].rstrip("/") for line in ignored if line.startswith("!"))
    copied = sorted(
        part.rstrip("/")
        for word, rest in stages(DOCKERFILE.read_text(encoding="utf-8"))[0]
        if word == "COPY"
        for part in rest.split()[:-1]
    )
    assert kept == copied == ["LICENSE", "README.md", "pyproject.toml", "src"]


def test_compose_has_a_runner_a_status_job_and_a_dashboard_on_loopback() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
    services = compose["services"]
    assert sorted(services) == ["dashboard", "runner", "status"]
    assert services["runner"]["command"][:3] == ["run", "--dataset", "golden"]
    assert "agent_reliability_harness.harness.agents:react" in services["runner"]["command"]
    assert services["status"]["command"][:2] == ["status", "/runs"]
    dashboard = services["dashboard"]
    command = dashboard["command"]
    assert command[:2] == ["serve", "/runs"]
    assert command[command.index("--host") + 1] == "0.0.0.0"  # noqa: S104 (inside the container)
    assert dashboard["ports"] == ["127.0.0.1:8000:8000"]  # published on loopback only
    for name in ("status", "dashboard"):  # they read the runs, never write them
        assert "runs:/runs:ro" in services[name]["volumes"]
    for service in services.values():  # each command is one arh's own parser accepts
        arguments = [str(a) for a in service["command"]]
        parsed = _build_parser(arguments[0]).parse_args(arguments)
        assert parsed.command == arguments[0]


def _hadolint() -> str | None:
    here = Path(sys.executable).parent / "hadolint"
    return str(here) if here.exists() else shutil.which("hadolint")


def test_hadolint_passes() -> None:
    hadolint = _hadolint()
    if hadolint is None:
        pytest.skip("hadolint is not installed (the dev extra has it, but for Windows)")
    done = subprocess.run(
        [hadolint, str(DOCKERFILE)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _docker_answers() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        done = subprocess.run(["docker", "info"], capture_output=True, timeout=30, check=False)
    except subprocess.TimeoutExpired:
        return False
    return done.returncode == 0


def test_the_image_builds_and_works_end_to_end() -> None:
    """tools/container_check.py, a minute or more (several to make its base): opt-in only."""
    if os.environ.get("ARH_CONTAINER_TEST") != "1":
        pytest.skip(
            "builds and runs the image: set ARH_CONTAINER_TEST=1 to run it (make image-check)"
        )
    if not _docker_answers():
        pytest.skip("no Docker daemon answers `docker info`")
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "container_check.py")],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    results = [line for line in lines if line.startswith(("ok", "FAIL"))]
    names = [line.split(None, 1)[1].split(":")[0] for line in results]
    assert names == [
        "docker build",
        "arh --version",
        "runs as UID",
        "no gcc, cc, make, pip, pip3 in the image",
        "python -m pip fails",
        *names[5:8],
    ]
    assert [name.split(" (")[0] for name in names[5:]] == ["runner", "status", "dashboard"]
    assert all(line.startswith("ok") for line in results)
    assert "280 of 280 runs passed" in done.stdout  # every golden task, by the reference agent
    assert lines[-1] == "8 of 8 checks passed"
