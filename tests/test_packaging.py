"""Packaging: the sdist and wheel build, pass ``twine check``, carry the right metadata and files,
and the wheel installs into a clean virtualenv where ``arh`` runs with no dependencies.

By default the distributions are built here from a copy of the source tree, without build
isolation (the dev extra pins the build backend), so the test needs no network. With
``ARH_DIST_DIR`` set (``make dist-check``, used by the release workflow) the files in that
directory are checked instead: exactly the files that get published.
"""

from __future__ import annotations

import email
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from collections.abc import Iterator
from email.message import Message
from pathlib import Path

import pytest

from conftest import ROOT

_SKIP_COPY = shutil.ignore_patterns(
    ".git",
    ".venv",
    "venv",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".hypothesis",
    "arh-reports",
)


def _source_version() -> str:
    # read from the file, not imported: the one place the version is written
    text = (ROOT / "src" / "agent_reliability_harness" / "_version.py").read_text("utf-8")
    found = re.search(r'^__version__ = "([^"]+)"$', text, re.MULTILINE)
    assert found, "no __version__ in _version.py"
    return found.group(1)


def _project_url() -> str:
    text = (ROOT / "src" / "agent_reliability_harness" / "_version.py").read_text("utf-8")
    found = re.search(r'^PROJECT_URL = "([^"]+)"$', text, re.MULTILINE)
    assert found, "no PROJECT_URL in _version.py"
    return found.group(1)


VERSION = _source_version()


def _run(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    given = os.environ.get("ARH_DIST_DIR")
    if given:
        yield Path(given).resolve()
        return
    pytest.importorskip("build", reason="the build frontend is in the dev extra")
    setuptools = pytest.importorskip("setuptools", reason="setuptools is in the dev extra")
    major = int(setuptools.__version__.split(".")[0])
    if major < 77:
        pytest.fail(
            f"setuptools {setuptools.__version__} is older than the build-system requirement; "
            "install the dev extra (pip install -e '.[dev]')"
        )
    root = tmp_path_factory.mktemp("packaging")
    tree = root / "tree"
    shutil.copytree(ROOT, tree, ignore=_SKIP_COPY)
    out = root / "dist"
    done = _run(sys.executable, "-m", "build", "--no-isolation", "--outdir", out, tree)
    assert done.returncode == 0, done.stdout + done.stderr
    yield out


def _one(dist: Path, pattern: str) -> Path:
    found = sorted(dist.glob(pattern))
    assert len(found) == 1, f"expected one {pattern} in {dist}, found {found}"
    return found[0]


@pytest.fixture(scope="module")
def wheel(dist: Path) -> Path:
    return _one(dist, "agent_reliability_harness-*.whl")


@pytest.fixture(scope="module")
def sdist(dist: Path) -> Path:
    return _one(dist, "agent_reliability_harness-*.tar.gz")


@pytest.fixture(scope="module")
def metadata(wheel: Path) -> Message:
    with zipfile.ZipFile(wheel) as archive:
        name = f"agent_reliability_harness-{VERSION}.dist-info/METADATA"
        return email.message_from_bytes(archive.read(name))


def test_file_names_carry_the_version(wheel: Path, sdist: Path) -> None:
    assert wheel.name == f"agent_reliability_harness-{VERSION}-py3-none-any.whl"
    assert sdist.name == f"agent_reliability_harness-{VERSION}.tar.gz"


def test_twine_check(wheel: Path, sdist: Path) -> None:
    pytest.importorskip("twine", reason="twine is in the dev extra")
    done = _run(sys.executable, "-m", "twine", "check", "--strict", wheel, sdist)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASSED") == 2, done.stdout


def test_metadata(metadata: Message) -> None:
    assert metadata["Name"] == "agent-reliability-harness"
    assert metadata["Version"] == VERSION
    assert metadata["License-Expression"] == "MIT"
    assert metadata.get_all("License-File") == ["LICENSE"]
    assert metadata["Requires-Python"] == ">=3.11"
    # no runtime dependency: every Requires-Dist belongs to an extra
    for requirement in metadata.get_all("Requires-Dist") or []:
        assert "extra ==" in requirement, requirement
    classifiers = set(metadata.get_all("Classifier") or [])
    for version in ("3.11", "3.12", "3.13"):
        assert f"Programming Language :: Python :: {version}" in classifiers
    assert "Typing :: Typed" in classifiers
    # the long description is the README, rendered as Markdown
    assert metadata["Description-Content-Type"] == "text/markdown"
    assert metadata.get_payload().startswith("# arh: agent-reliability-harness")  # type: ignore[union-attr]


def test_project_urls_are_the_project_url(metadata: Message) -> None:
    project_url = _project_url()
    urls = {
        label.strip(): url.strip()
        for label, url in (item.split(",", 1) for item in metadata.get_all("Project-URL") or [])
    }
    assert urls["Homepage"] == project_url
    assert {"Homepage", "Documentation", "Changelog", "Issues"} <= set(urls)
    for url in urls.values():
        assert url == project_url or url.startswith(project_url + "/"), url
    # and pyproject.toml says the same (the file a reader edits)
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["urls"]
    assert declared == urls


def test_wheel_contents(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    package = "agent_reliability_harness/"
    sources = {
        package + path.relative_to(ROOT / "src" / "agent_reliability_harness").as_posix()
        for path in (ROOT / "src" / "agent_reliability_harness").rglob("*.py")
    }
    assert sources <= names, f"missing from the wheel: {sorted(sources - names)}"
    assert package + "py.typed" in names
    assert f"agent_reliability_harness-{VERSION}.dist-info/licenses/LICENSE" in names
    entry_points = f"agent_reliability_harness-{VERSION}.dist-info/entry_points.txt"
    assert entry_points in names
    others = {
        n for n in names if not n.startswith((package, f"agent_reliability_harness-{VERSION}."))
    }
    assert not others, f"unexpected files in the wheel: {sorted(others)}"
    assert not any("/tests/" in n or n.startswith("tests/") for n in names)
    assert not any(n.endswith((".pyc", ".pyo")) for n in names)


def test_sdist_contents(sdist: Path) -> None:
    top = f"agent_reliability_harness-{VERSION}/"
    with tarfile.open(sdist) as archive:
        names = {name.removeprefix(top) for name in archive.getnames()}
    for required in (
        "LICENSE",
        "README.md",
        "CHANGELOG.md",
        "pyproject.toml",
        "PKG-INFO",
        "src/agent_reliability_harness/py.typed",
        "src/agent_reliability_harness/cli.py",
        "schemas/policy.schema.json",
    ):
        assert required in names, required
    assert not any(n.startswith("tests/") for n in names), "tests need the repository; not shipped"
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)


def _venv_bin(venv: Path) -> Path:
    return venv / ("Scripts" if os.name == "nt" else "bin")


def test_wheel_installs_and_runs_in_a_clean_venv(
    wheel: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    root = tmp_path_factory.mktemp("clean-venv")
    venv = root / "venv"
    done = _run(sys.executable, "-m", "venv", "--without-pip", venv)
    assert done.returncode == 0, done.stderr
    python = _venv_bin(venv) / ("python.exe" if os.name == "nt" else "python")
    # this test's pip installs into the clean venv; nothing comes from an index, no dependency
    done = _run(
        sys.executable, "-m", "pip", "--python", python, "install", "--no-index", "--no-deps", wheel
    )
    assert done.returncode == 0, done.stdout + done.stderr
    arh = _venv_bin(venv) / ("arh.exe" if os.name == "nt" else "arh")
    work = root / "work"
    shutil.copytree(ROOT / "samples", work / "samples")
    done = _run(arh, "--version", cwd=work)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"arh {VERSION}\n"
    # it runs the installed copy, not the source tree, and needs nothing beyond the stdlib
    done = _run(
        python,
        "-I",
        "-c",
        "import importlib.metadata as m, agent_reliability_harness as a; "
        "print(a.__file__); print(m.version('agent-reliability-harness')); "
        "print(sorted(d.metadata['Name'] for d in m.distributions()))",
        cwd=work,
    )
    assert done.returncode == 0, done.stderr
    location, version, installed = done.stdout.splitlines()
    assert Path(location).resolve().is_relative_to(venv.resolve())
    assert version == VERSION
    assert installed == "['agent-reliability-harness']"
    done = _run(
        arh,
        "validate",
        "--policy",
        "samples/policy_trajectory.json",
        "samples/traces/rebook_pass.json",
        "--show-passing",
        cwd=work,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("PASS  rebook-1001  score 100.00")
    # the typing marker is installed beside the package
    assert (Path(location).parent / "py.typed").is_file()
