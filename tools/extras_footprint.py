"""How long each framework extra takes to install, and how much it adds, in a fresh venv.

    python tools/extras_footprint.py                      # every extra of the integrations
    python tools/extras_footprint.py langgraph crewai     # the ones named

For each extra it creates an empty virtual environment in a temporary directory, installs
``agent-reliability-harness[<extra>]`` from this checkout with pip (the package index and
cache as pip is configured on the machine: a warm cache makes the second run faster, so say
which one a number is), and prints the wall time of the install, the number of distributions
it added and the size of ``site-packages`` afterwards, less that of the bare venv. The numbers
depend on the machine and the network: docs/integrations.md quotes them with the date and the
command that printed them.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXTRAS = ("langgraph", "openai-agents", "crewai")


def _size(path: Path) -> int:
    total = 0
    for dirpath, _, names in os.walk(path):
        for name in names:
            file = Path(dirpath, name)
            if not file.is_symlink():
                total += file.stat().st_size
    return total


def _site_packages(venv: Path) -> Path:
    found = sorted(venv.glob("lib/python3*/site-packages")) or sorted(
        venv.glob("Lib/site-packages")
    )
    return found[0]


def _python(venv: Path) -> Path:
    unix = venv / "bin" / "python"
    return unix if unix.exists() else venv / "Scripts" / "python.exe"


def _count(python: Path) -> int:
    done = subprocess.run(
        [str(python), "-m", "pip", "list", "--format=freeze"],
        capture_output=True,
        text=True,
        check=True,
    )
    return len(done.stdout.splitlines())


def measure(extra: str) -> tuple[float, int, int, str]:
    """(install seconds, distributions added, bytes added, error or "") for one extra."""
    with tempfile.TemporaryDirectory(prefix=f"arh-extra-{extra}-") as tmp:
        venv = Path(tmp) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        python = _python(venv)
        site = _site_packages(venv)
        before_size, before_count = _size(site), _count(python)
        start = time.perf_counter()
        done = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", f"{ROOT}[{extra}]"],
            capture_output=True,
            text=True,
            check=False,
        )
        seconds = time.perf_counter() - start
        if done.returncode != 0:
            return seconds, 0, 0, (done.stderr.strip().splitlines() or ["pip failed"])[-1]
        # the harness itself is one of the distributions added; it is not the extra's cost
        added = _count(python) - before_count - 1
        return seconds, added, _size(site) - before_size, ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("extras", nargs="*", metavar="EXTRA", help=f"of {', '.join(EXTRAS)}")
    extras = parser.parse_args().extras or list(EXTRAS)
    unknown = sorted(set(extras) - set(EXTRAS))
    if unknown:
        parser.error(f"unknown extra: {', '.join(unknown)} (choose from {', '.join(EXTRAS)})")
    print(f"{'extra':<15} {'install s':>10} {'packages':>9} {'size MiB':>9}")
    for extra in extras:
        seconds, added, size, error = measure(extra)
        if error:
            print(f"{extra:<15} {seconds:>10.1f} failed: {error}")
        else:
            print(f"{extra:<15} {seconds:>10.1f} {added:>9} {size / 2**20:>9.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
