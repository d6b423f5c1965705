#!/usr/bin/env python3
"""Build arh's container image and check that it works, end to end (docs/container.md)::

    python tools/container_check.py                      # on a local Debian bookworm base
    python tools/container_check.py --base python:3.12-slim-bookworm   # on the official one

Needs a Docker daemon. The steps:

1. The base. ``--base IMAGE`` uses that image. Without it the script uses (and, when it is not
   there yet, makes) ``arh-test-base:bookworm``: a ``debootstrap --variant=minbase bookworm``
   with Debian's ``python3`` (3.11) and ``python-is-python3``, pip installed from Debian's own
   pip wheel into ``/usr/local`` and the ``EXTERNALLY-MANAGED`` marker removed, so that it plays
   the official image's part: ``python`` and ``pip`` on the ``PATH``, pip installing into the
   system's site-packages. Making it needs root, ``debootstrap`` and a Debian mirror
   (``--mirror``), and takes a few minutes.
2. The build, with the ``Dockerfile`` unchanged, ``PYTHON_IMAGE`` set to the base. The build
   stage's two tools (the pinned ``build`` and ``setuptools`` of the ``Dockerfile``) come from a
   package index that the script serves on 127.0.0.1 for the build's length: ``pip download``
   fetches them on this machine, through its own pip configuration (a mirror, a proxy's
   certificate), and the build, on the host's network, installs from it (the ``PIP_INDEX_URL``
   build argument). ``--pypi`` lets the build stage reach PyPI itself instead.
3. The checks, each printed as ``ok`` or ``FAIL``: ``arh --version``; the user (UID and GID
   10001); no compiler, ``make`` or pip in the image; then the compose file's three services,
   by ``docker compose`` (or ``docker-compose``) when one is installed, else by the equivalent
   ``docker run`` commands: the runner runs the golden dataset with ``./datasets`` mounted
   read-only into a fresh runs volume, the status job checks that volume, and the dashboard,
   started on a read-only root file system, answers on 127.0.0.1 with the run in its page.

It prints the base, the image's size and each check's result, and exits 0 when every check
passed, 1 when one failed and 2 when it could not run (no Docker daemon, no base). Containers,
the volume and the index it made are removed at the end; the images are kept.
"""

from __future__ import annotations

import argparse
import contextlib
import http.server
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCAL_BASE = "arh-test-base:bookworm"
AGENT = "agent_reliability_harness.harness.agents:react"
PROJECT = "arhcheck"  # the compose project (and so the volume's prefix) of the check
ABSENT = ("gcc", "cc", "make", "pip", "pip3")


class CannotRunError(Exception):
    """The check cannot run here (exit status 2)."""


@dataclass(frozen=True)
class Check:
    name: str
    passed: bool
    detail: str


def docker(
    *args: str, check: bool = False, timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["docker", *args], capture_output=True, text=True, timeout=timeout, check=check
    )


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"


# --- the base ---------------------------------------------------------------------------------


def make_local_base(tag: str, mirror: str) -> None:
    """debootstrap a minimal bookworm with Python and pip, imported as ``tag``."""
    if shutil.which("debootstrap") is None:
        raise CannotRunError(
            "no base image: debootstrap is not installed (apt-get install debootstrap)"
        )
    if os.geteuid() != 0:
        raise CannotRunError("no base image: debootstrap needs root")
    with tempfile.TemporaryDirectory(prefix="arh-base-") as tmp:
        root = Path(tmp) / "root"
        print(f"making {tag}: debootstrap --variant=minbase bookworm from {mirror} ...")
        subprocess.run(
            [
                "debootstrap",
                "--variant=minbase",
                "--include=python3,python3-venv,python-is-python3",
                "bookworm",
                str(root),
                mirror,
            ],
            check=True,
            capture_output=True,
        )
        # Debian's ensurepip is switched off for the system Python: pip installs itself from
        # Debian's pip wheel instead, into /usr/local as in the official image.
        wheels = sorted((root / "usr/share/python-wheels").glob("pip-*.whl"))
        if not wheels:
            raise CannotRunError(
                "no base image: Debian's pip wheel is missing from the debootstrap"
            )
        (root / "usr/lib/python3.11/EXTERNALLY-MANAGED").unlink(missing_ok=True)
        wheel = f"/usr/share/python-wheels/{wheels[-1].name}"
        subprocess.run(
            ["chroot", str(root), "python3", f"{wheel}/pip", "install", "--no-index", wheel],
            check=True,
            capture_output=True,
        )
        for junk in ("var/lib/apt/lists", "var/cache/apt"):
            shutil.rmtree(root / junk, ignore_errors=True)
        tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
        imported = subprocess.run(
            ["docker", "import", "-c", "ENV LANG=C.UTF-8", "-c", 'CMD ["python3"]', "-", tag],
            stdin=tar.stdout,
            capture_output=True,
            text=True,
            check=False,
        )
        tar.wait()
        if imported.returncode != 0 or tar.returncode != 0:
            raise CannotRunError(f"no base image: docker import failed: {imported.stderr.strip()}")


def describe_base(image: str) -> str:
    probe = docker(
        "run",
        "--rm",
        "--entrypoint",
        "sh",
        image,
        "-c",
        '. /etc/os-release; echo "$PRETTY_NAME"; python --version; pip --version',
    )
    if probe.returncode != 0:
        raise CannotRunError(f"the base {image} has no python or pip: {probe.stderr.strip()}")
    os_name, python, pip = probe.stdout.strip().splitlines()[:3]
    return f"{os_name}, {python}, pip {pip.split()[1]}"


# --- a package index for the build stage ------------------------------------------------------


def build_stage_requirements() -> list[str]:
    """The pinned packages that the Dockerfile's build stage installs from the index."""
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    found = re.search(r"RUN pip install (?:--\S+ )*([^\n]+)", text)
    if found is None:
        raise CannotRunError("the Dockerfile's build stage installs nothing from an index")
    return found.group(1).split()


def base_python_version(image: str) -> str:
    probe = docker(
        "run",
        "--rm",
        image,
        "python",
        "-c",
        "import sys; print('%d.%d' % sys.version_info[:2])",
    )
    return probe.stdout.strip()


@contextlib.contextmanager
def local_index(requirements: Sequence[str], python_version: str) -> Iterator[str]:
    """A PEP 503 simple index of ``requirements`` (and what they need) on 127.0.0.1."""
    with tempfile.TemporaryDirectory(prefix="arh-index-") as tmp:
        downloads = Path(tmp) / "downloads"
        fetched = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--only-binary=:all:",
                f"--python-version={python_version}",
                "--dest",
                str(downloads),
                *requirements,
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if fetched.returncode != 0:
            raise CannotRunError(f"pip download {' '.join(requirements)} failed: {fetched.stderr}")
        for wheel in downloads.glob("*.whl"):
            project = re.sub(r"[-_.]+", "-", wheel.name.split("-")[0]).lower()
            (Path(tmp) / "simple" / project).mkdir(parents=True, exist_ok=True)
            shutil.copy(wheel, Path(tmp) / "simple" / project / wheel.name)
        handler = partial(QuietHandler, directory=tmp)
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/simple/"
        finally:
            server.shutdown()
            server.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        del format, args


# --- the checks -------------------------------------------------------------------------------


def image_checks(image: str) -> list[Check]:
    source = (ROOT / "src" / "agent_reliability_harness" / "_version.py").read_text("utf-8")
    pinned = re.search(r'^__version__ = "([^"]+)"', source, re.MULTILINE)
    version = pinned.group(1) if pinned else "(unknown)"
    checks = []
    shown = docker("run", "--rm", image, "--version")
    checks.append(
        Check(
            "arh --version",
            shown.returncode == 0 and shown.stdout.strip() == f"arh {version}",
            shown.stdout.strip() or shown.stderr.strip(),
        )
    )
    ids = docker("run", "--rm", "--entrypoint", "sh", image, "-c", 'echo "$(id -u):$(id -g)"')
    checks.append(
        Check(
            "runs as UID:GID 10001:10001", ids.stdout.strip() == "10001:10001", ids.stdout.strip()
        )
    )
    # one `command -v` per name: the shell's stops at the first name it does not find
    script = "; ".join(f"command -v {name}" for name in ABSENT)
    found = docker("run", "--rm", "--entrypoint", "sh", image, "-c", f"{script}; exit 0")
    present = found.stdout.split()
    checks.append(
        Check(
            f"no {', '.join(ABSENT)} in the image",
            not present,
            "none found" if not present else "found " + " ".join(present),
        )
    )
    module = docker("run", "--rm", "--entrypoint", "python", image, "-m", "pip", "--version")
    checks.append(
        Check(
            "python -m pip fails",
            module.returncode != 0,
            last_line(module.stderr or module.stdout),
        )
    )
    return checks


def compose_command() -> list[str] | None:
    if docker("compose", "version").returncode == 0:
        return ["docker", "compose"]
    if shutil.which("docker-compose") is not None:
        return ["docker-compose"]
    return None


def fetch(url: str, attempts: int = 30) -> tuple[int, str, str]:
    """(status, content type, body) of ``url``, waiting for the server to come up."""
    for _ in range(attempts):
        try:
            with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 (loopback http)
                body = response.read().decode("utf-8", "replace")
                return response.status, response.headers.get("Content-Type", ""), body
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.5)
    return 0, "", ""


def dashboard_check(url: str, how: str) -> Check:
    status, content_type, body = fetch(url)
    return Check(
        f"dashboard ({how}): arh serve /runs, read-only root, on 127.0.0.1",
        status == 200 and content_type.startswith("text/html") and "golden-react" in body,
        f"HTTP {status}, {content_type or 'no content type'}, "
        + ("lists golden-react" if "golden-react" in body else "no golden-react in the page"),
    )


def service_checks_compose(compose: list[str], image: str) -> list[Check]:
    """The three services of docker-compose.yml, on ``image`` (an override file names it)."""
    with tempfile.TemporaryDirectory(prefix="arh-compose-") as tmp:
        override = Path(tmp) / "image.yml"
        override.write_text(
            "services:\n"
            + "".join(
                f"  {name}: {{image: {image!r}}}\n" for name in ("runner", "status", "dashboard")
            ),
            encoding="utf-8",
        )
        base = [
            *compose,
            "-p",
            PROJECT,
            "-f",
            str(ROOT / "docker-compose.yml"),
            "-f",
            str(override),
        ]

        def run(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [*base, *args], cwd=ROOT, capture_output=True, text=True, timeout=900, check=False
            )

        try:
            return service_checks(
                runner=lambda: run("run", "--rm", "runner"),
                status=lambda: run("run", "--rm", "status"),
                dashboard=lambda: run("up", "-d", "dashboard"),
                url="http://127.0.0.1:8000/",
                how=" ".join(compose[1:] if compose[0] == "docker" else compose),
            )
        finally:
            run("down", "--volumes")


def service_checks_docker_run(image: str) -> list[Check]:
    """The same three services by the ``docker run`` commands that compose would run."""
    volume, container = f"{PROJECT}_runs", f"{PROJECT}_dashboard"
    datasets = f"{ROOT / 'datasets'}:/work/datasets:ro"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    docker("volume", "create", volume, check=True)
    try:
        return service_checks(
            runner=lambda: docker(
                "run",
                "--rm",
                "-v",
                datasets,
                "-v",
                f"{volume}:/runs",
                image,
                "run",
                "--dataset",
                "golden",
                "--agent",
                AGENT,
                "-o",
                "/runs/golden-react",
            ),
            status=lambda: docker(
                "run",
                "--rm",
                "-v",
                datasets,
                "-v",
                f"{volume}:/runs:ro",
                image,
                "status",
                "/runs",
                "--datasets",
                "/work/datasets",
                "--max-age",
                "7d",
            ),
            dashboard=lambda: docker(
                "run",
                "-d",
                "--name",
                container,
                "--read-only",
                "-p",
                f"127.0.0.1:{port}:8000",
                "-v",
                f"{volume}:/runs:ro",
                image,
                "serve",
                "/runs",
                "--host",
                "0.0.0.0",  # noqa: S104 (inside the container; published on loopback)
                "--port",
                "8000",
            ),
            url=f"http://127.0.0.1:{port}/",
            how="docker run",
        )
    finally:
        docker("rm", "--force", container)
        docker("volume", "rm", volume)


def service_checks(
    *,
    runner: Callable[[], subprocess.CompletedProcess[str]],
    status: Callable[[], subprocess.CompletedProcess[str]],
    dashboard: Callable[[], subprocess.CompletedProcess[str]],
    url: str,
    how: str,
) -> list[Check]:
    ran = runner()
    summary = next(
        (line for line in ran.stdout.splitlines() if re.search(r"\d+ of \d+ runs passed", line)),
        last_line(ran.stderr or ran.stdout),
    )
    every = re.search(r"(\d+) of \1 runs passed", summary) is not None
    checks = [
        Check(f"runner ({how}): arh run --dataset golden", ran.returncode == 0 and every, summary)
    ]
    checked = status()
    checks.append(
        Check(
            f"status ({how}): arh status /runs",
            checked.returncode == 0,
            f"exit {checked.returncode}: {last_line(checked.stdout or checked.stderr)}",
        )
    )
    started = dashboard()
    if started.returncode != 0:
        checks.append(Check(f"dashboard ({how})", False, last_line(started.stderr)))
    else:
        checks.append(dashboard_check(url, how))
    return checks


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", help=f"the base image (default: {LOCAL_BASE}, made if missing)")
    parser.add_argument("--mirror", default="http://deb.debian.org/debian", help="for debootstrap")
    parser.add_argument("--tag", default="arh:test", help="the image to build (default: arh:test)")
    parser.add_argument("--pypi", action="store_true", help="the build stage uses PyPI itself")
    parser.add_argument(
        "--compose",
        choices=("auto", "no"),
        default="auto",
        help="run the services by compose when installed (auto) or by docker run (no)",
    )
    args = parser.parse_args(argv)
    try:
        if docker("info").returncode != 0:
            raise CannotRunError("no Docker daemon answers `docker info`")
        base = args.base or LOCAL_BASE
        if args.base is None and docker("image", "inspect", base).returncode != 0:
            make_local_base(base, args.mirror)
        print(f"base: {base} ({describe_base(base)})")
        build = ["build", "--build-arg", f"PYTHON_IMAGE={base}", "-t", args.tag, str(ROOT)]
        with contextlib.ExitStack() as stack:
            if not args.pypi:
                requirements = build_stage_requirements()
                index = stack.enter_context(local_index(requirements, base_python_version(base)))
                build[1:1] = ["--network", "host", "--build-arg", f"PIP_INDEX_URL={index}"]
                print(f"build stage: {' '.join(requirements)} from a local index of pip download")
            built = docker(*build, timeout=1800)
        if built.returncode != 0:
            print(f"FAIL  docker build: {last_line(built.stderr or built.stdout)}")
            return 1
    except (CannotRunError, subprocess.CalledProcessError, subprocess.TimeoutExpired) as error:
        print(f"container_check: cannot run: {error}", file=sys.stderr)
        return 2
    size = int(docker("image", "inspect", "--format", "{{.Size}}", args.tag).stdout)
    base_size = int(docker("image", "inspect", "--format", "{{.Size}}", base).stdout)
    print(
        f"image: {args.tag}, {size} bytes ({size / 1e6:.1f} MB); the base alone {base_size} bytes"
    )
    checks = [Check("docker build", True, f"built {args.tag} on {base}")]
    checks += image_checks(args.tag)
    compose = compose_command() if args.compose == "auto" else None
    if compose is not None:
        checks += service_checks_compose(compose, args.tag)
    else:
        checks += service_checks_docker_run(args.tag)
    for check in checks:
        print(f"{'ok  ' if check.passed else 'FAIL'}  {check.name}: {check.detail}")
    failed = sum(not check.passed for check in checks)
    print(f"{len(checks) - failed} of {len(checks)} checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
