"""The screenshot of docs/status.md: `arh status` on the docs' regressed example, as a terminal
shows it, rendered in headless Chromium. The test checks that the page shows exactly what the
command printed; with ``ARH_UPDATE_SCREENSHOT=1`` (or ``--update-goldens``) it also writes
docs/images/status.png. Skipped, saying why, without Chromium (.ci/run installs it)."""

from __future__ import annotations

import base64
import html
import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.request import pathname2url

import pytest

from test_html_report import Chromium, _chromium_binary
from test_serve_browser import _open

from conftest import ROOT

EXAMPLE = ROOT / "docs" / "examples" / "status"
IMAGE = ROOT / "docs" / "images" / "status.png"
COMMAND = ["status", "regressed", "--now", "2026-12-08T19:00:00Z", "--max-age", "7d"]
_PAGE = """<!doctype html><html><head><meta charset="utf-8"><style>
body {{ margin: 0; background: #1e1e1e; width: max-content; }}
pre {{ display: inline-block; margin: 0; padding: 16px; color: #e6e6e6;
      font: 14px/1.45 monospace; white-space: pre; }}
.prompt {{ color: #7ec699; }}
</style></head><body><pre><span class="prompt">$ arh {command}</span>
{output}<span class="prompt">$ echo $?</span>
{status}</pre></body></html>
"""


def _update(config: Any) -> bool:
    return (
        bool(config.getoption("--update-goldens")) or os.environ.get("ARH_UPDATE_SCREENSHOT") == "1"
    )


def test_the_status_screenshot_shows_what_the_command_prints(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    binary = _chromium_binary()
    if binary is None:
        pytest.skip(
            "Chromium not found: install the Debian packages chromium and chromium-driver "
            "(.ci/run does), or set ARH_CHROMIUM to the browser's path"
        )
    done = subprocess.run(
        [sys.executable, "-m", "agent_reliability_harness", *COMMAND],
        cwd=EXAMPLE,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "COLUMNS": "160"},
    )
    assert done.returncode == 1, done.stderr  # the example regressed
    assert done.stderr == ""
    page = tmp_path / "status.html"
    page.write_text(
        _PAGE.format(
            command=html.escape(" ".join(COMMAND)),
            output=html.escape(done.stdout),
            status=done.returncode,
        ),
        encoding="utf-8",
    )
    browser = Chromium(binary)
    try:
        loaded = _open(browser, "file://" + pathname2url(str(page)))
        shown = loaded.evaluate("document.querySelector('pre').innerText")
        assert shown == f"$ arh {' '.join(COMMAND)}\n{done.stdout}$ echo $?\n1"
        if _update(request.config):
            width = loaded.evaluate("document.querySelector('pre').scrollWidth")
            height = loaded.evaluate("document.querySelector('pre').scrollHeight")
            shot = browser.send(
                "Page.captureScreenshot",
                {"format": "png", "captureBeyondViewport": True,
                 "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}},
                session=loaded.session,
            )  # fmt: skip
            IMAGE.write_bytes(base64.b64decode(shot["data"]))
    finally:
        browser.close()
