"""``arh serve`` in headless Chromium: each page renders under the server's CSP with no console
message or error, every same-origin link of the overview, run, trace and compare pages answers
(no 404), the filter form submits without a script, and a hostile trace runs nothing.

Skips, saying why, without Chromium (see tests/test_html_report.py). With
``ARH_UPDATE_SCREENSHOT=1`` (or ``--update-goldens``) it writes the screenshots of
docs/dashboard.md to docs/images/dashboard-*.png.
"""

from __future__ import annotations

import base64
import http.client
import os
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from agent_reliability_harness.cli import main
from agent_reliability_harness.serve.server import DashboardServer
from serve_runs import OUTSIDE_MARK, make_runs
from test_html_report import Chromium, Loaded, _chromium_binary

from conftest import ROOT

IMAGES = ROOT / "docs" / "images"
PAGES = {
    "overview": "/",
    "run": "/runs/golden%2Fseed0",
    "trace": "/trace?run=golden%2Fseed1&trace=rebook-1002",
    "compare": "/compare?base=golden%2Fseed0&head=golden%2Fseed1",
    "hostile-run": "/runs/hostile%2Frun1",
}


@contextmanager
def _served(runs: Path) -> Iterator[str]:
    """The address of `arh serve` over ``runs``, in a thread of this process."""
    server = DashboardServer(("127.0.0.1", 0), str(runs))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with _served(make_runs(tmp_path_factory.mktemp("web"))) as url:
        yield url


# The screenshots of docs/dashboard.md: what a user sees over runs that `arh run` wrote (the
# reference agent's baseline and run, then the broken example agent's run) of the hand-written
# tasks of docs/running-agents.md.
DOCS_TASKS = ROOT / "docs" / "examples" / "running-agents" / "datasets" / "mini"
DOCS_PAGES = {
    "overview": "/",
    "run": "/runs/mini-2?verdict=failed",
    "trace": "/trace?run=mini-2&trace=react-refund-001%23run1",
    "compare": "/compare?base=mini-1&head=mini-2",
}


def _arh_run(out: Path, agent: str) -> None:
    status = main(["run", "--dataset", str(DOCS_TASKS), "--agent", agent, "-o", str(out), "-q"])
    assert status in (0, 1), status


@pytest.fixture(scope="module")
def docs_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    runs = tmp_path_factory.mktemp("docs") / "runs"
    here = Path.cwd()
    os.chdir(ROOT)  # the agent named as a user in the repository names it
    try:
        _arh_run(runs / "mini-1", "agent_reliability_harness.harness.agents:auto")
        (runs / "baselines").mkdir()
        shutil.copy(runs / "mini-1" / "report.json", runs / "baselines" / "mini.json")
        _arh_run(runs / "mini-2", "examples/broken_agent.py:broken")
    finally:
        os.chdir(here)
    with _served(runs) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Chromium]:
    binary = _chromium_binary()
    if binary is None:
        pytest.skip(
            "Chromium not found: install the Debian packages chromium and chromium-driver "
            "(.ci/run does), or set ARH_CHROMIUM to the browser's path"
        )
    chromium = Chromium(binary)
    try:
        yield chromium
    finally:
        chromium.close()


def _open(browser: Chromium, url: str) -> Loaded:
    target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
        "sessionId"
    ]
    for domain in ("Page", "Runtime", "Log", "Network"):
        browser.send(f"{domain}.enable", session=session)
    browser.send(
        "Emulation.setDeviceMetricsOverride",
        {"width": 1100, "height": 900, "deviceScaleFactor": 1, "mobile": False},
        session=session,
    )
    browser.events.clear()
    browser.send("Page.navigate", {"url": url}, session=session)
    browser.wait_for("Page.loadEventFired", session)
    browser.settle(0.3)
    mine = [e for e in browser.events if e.get("sessionId") == session]
    return Loaded(browser, session, url, mine)


def _status(base_url: str, href: str) -> int:
    parts = urlsplit(href)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    try:
        connection.request("GET", target)
        return connection.getresponse().status
    finally:
        connection.close()


def _update(config: Any) -> bool:
    return (
        bool(config.getoption("--update-goldens")) or os.environ.get("ARH_UPDATE_SCREENSHOT") == "1"
    )


@pytest.mark.parametrize("name", list(PAGES))
def test_page_renders_and_its_links_work(browser: Chromium, base_url: str, name: str) -> None:
    loaded = _open(browser, base_url + PAGES[name])
    assert loaded.problems() == []
    # the hashed style sheet applied (a blocked one leaves the default font size of 16px)
    assert loaded.evaluate("getComputedStyle(document.body).fontSize") == "15px"
    facts = loaded.evaluate(
        """({scripts: document.scripts.length, pwned: typeof window.__arh_pwned,
             links: [...document.links].map(a => a.href),
             text: document.body.innerText})"""
    )
    assert facts["scripts"] == 0
    assert facts["pwned"] == "undefined"
    assert OUTSIDE_MARK not in facts["text"]
    own = sorted({h.split("#")[0] for h in facts["links"] if h.startswith(base_url)})
    assert own, "no link on the page"
    broken = [h for h in own if _status(base_url, h) != 200]
    assert broken == []


def test_the_filter_form_submits_without_a_script(browser: Chromium, base_url: str) -> None:
    loaded = _open(browser, base_url + PAGES["run"])
    session = loaded.session
    browser.events.clear()
    loaded.evaluate(
        """(() => { const form = document.querySelector('form.filters');
                   form.querySelector('select[name=verdict]').value = 'failed';
                   form.submit(); })()"""
    )
    browser.wait_for("Page.loadEventFired", session)
    after = Loaded(browser, session, loaded.url, [])
    assert "verdict=failed" in after.evaluate("location.search")
    assert "Traces (4 of 6)" in after.evaluate("document.body.innerText")
    errors = [
        e for e in browser.events
        if e.get("sessionId") == session and e.get("method") == "Log.entryAdded"
    ]  # fmt: skip
    assert errors == []  # a form-action the CSP refused would be logged here


@pytest.mark.parametrize("name", list(DOCS_PAGES))
def test_the_docs_pages_render_over_runs_of_arh_run(
    browser: Chromium, docs_url: str, name: str, request: pytest.FixtureRequest
) -> None:
    """The pages docs/dashboard.md shows, over real `arh run` output; with
    ``ARH_UPDATE_SCREENSHOT=1`` (or ``--update-goldens``) they are its screenshots."""
    loaded = _open(browser, docs_url + DOCS_PAGES[name])
    assert loaded.problems() == []
    text = loaded.evaluate("document.body.innerText")
    assert "Not found" not in text
    assert "mini" in text
    if name == "overview":  # the compare form offers the latest run against its baseline
        chosen = loaded.evaluate("[...document.querySelectorAll('form select')].map(s => s.value)")
        assert chosen == ["baselines/mini.json", "mini-2"]
        assert "3 runs and reports in 1 benchmark." in text
    if _update(request.config):
        shot = browser.send(
            "Page.captureScreenshot",
            {"format": "png", "captureBeyondViewport": True,
             "clip": {"x": 0, "y": 0, "width": 1100, "height": 900, "scale": 1}},
            session=loaded.session,
        )  # fmt: skip
        IMAGES.mkdir(parents=True, exist_ok=True)
        (IMAGES / f"dashboard-{name}.png").write_bytes(base64.b64decode(shot["data"]))
