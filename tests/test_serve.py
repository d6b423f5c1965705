"""``arh serve``: the dashboard's pages and API against a server on 127.0.0.1:0 in a thread,
the traversal and escaping tests, the response headers, and the JSON Schemas of the API."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from agent_reliability_harness.serve.server import DashboardServer, is_loopback
from serve_runs import OUTSIDE_MARK, make_runs

from conftest import schema_validator


@dataclass
class Answer:
    status: int
    headers: http.client.HTTPMessage
    body: str

    def json(self) -> Any:
        return json.loads(self.body)


class Client:
    def __init__(self, server: DashboardServer) -> None:
        self.port = server.server_address[1]

    def get(self, target: str, *, method: str = "GET", host: str | None = None) -> Answer:
        """Send ``target`` as written (no normalisation by a client library)."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            connection.putrequest(method, target, skip_host=host is not None)
            if host is not None:
                connection.putheader("Host", host)
            connection.endheaders()
            response = connection.getresponse()
            return Answer(response.status, response.headers, response.read().decode("utf-8"))
        finally:
            connection.close()


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_runs(tmp_path_factory.mktemp("serve"))


@pytest.fixture(scope="module")
def server(runs_dir: Path) -> Iterator[DashboardServer]:
    server = DashboardServer(("127.0.0.1", 0), str(runs_dir))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@pytest.fixture
def client(server: DashboardServer) -> Client:
    return Client(server)


# -- the index ------------------------------------------------------------------------------------


def test_the_index_holds_the_runs_and_reports_inside_the_directory(server: DashboardServer) -> None:
    runs = server.index.runs
    assert list(runs) == [
        "baselines/golden.json",
        "broken",
        "golden/seed0",
        "golden/seed1",
        "hostile/run1",
        "reports/samples.json",
    ]  # not notes.json (not a report), the links that lead outside, nor unreadable/run.json
    seed0, seed1 = runs["golden/seed0"], runs["golden/seed1"]
    # samples: rebook-1001 and rebook-2041 pass, 4 fail; seed1: 1001 now fails, 1003 gone
    assert (seed0.traces, seed0.passed) == (6, 2)
    assert (seed1.traces, seed1.passed) == (5, 1)
    assert seed1.failures == {
        "agent_failure": 4,
        "evaluation_error": 0,
        "infrastructure_failure": 0,
    }
    # the trace file of t0 is a link to a file outside: not readable through the index
    loaded = [server.index.load_trace(seed0, t) for t in seed0.run.traces]
    assert sum(isinstance(t, str) for t in loaded) == 1
    broken = runs["broken"]
    assert broken.report is None
    assert any("invalid JSON" in p and p.startswith("broken/report.json") for p in broken.problems)
    # the files that could not be used, as arh status lists them (names relative to RUNS_DIR):
    # the two links that lead outside and the run record that does not read
    errors = server.index.errors
    assert len(errors) == 3
    assert [e.split(":")[0] for e in errors] == [
        "linked-run",
        "reports/linked.json",
        "unreadable/run.json",
    ]
    assert all("outside the runs directory" in e for e in errors[:2])
    assert "invalid JSON" in errors[2]
    assert all(str(server.index.root) not in e for e in (*errors, *broken.problems))


# -- pages ---------------------------------------------------------------------------------------


def test_overview_lists_benchmarks_with_pass_rates_and_ages(client: Client) -> None:
    page = client.get("/")
    assert page.status == 200
    assert page.headers["Content-Type"] == "text/html; charset=utf-8"
    assert "<code>golden</code>" in page.body
    assert 'href="/runs/golden%2Fseed1"' in page.body
    assert "33.3%" in page.body
    assert "20.0%" in page.body
    assert "(<code>2026-12-08T19:00:00Z</code>)" in page.body
    # latest first: seed1 (Dec 8) before seed0 (Dec 7)
    assert page.body.index("/runs/golden%2Fseed1") < page.body.index("/runs/golden%2Fseed0")
    assert 'href="/compare?base=baselines%2Fgolden.json&amp;head=golden%2Fseed1"' in page.body
    searched = client.get("/?q=HOSTILE")
    assert "/runs/hostile%2Frun1" in searched.body
    assert "/runs/golden%2Fseed1" not in searched.body


def test_run_page_filters_by_verdict_rule_and_text(client: Client) -> None:
    page = client.get("/runs/golden%2Fseed0")
    assert page.status == 200
    assert "Traces (6 of 6)" in page.body
    failed = client.get("/runs/golden%2Fseed0?verdict=failed")
    assert "Traces (4 of 6)" in failed.body
    passed = client.get("/runs/golden/seed0?verdict=passed")  # an unencoded slash works too
    assert "Traces (2 of 6)" in passed.body
    assert "rebook-1001" in passed.body
    assert "rebook-1002" not in passed.body
    # docs/reports.md: rebook-1002 books twice (ARH-FLW-003)
    rule = client.get("/runs/golden%2Fseed0?rule=ARH-FLW-003")
    assert "rebook-1002" in rule.body
    assert "rebook-1001<" not in rule.body
    text = client.get("/runs/golden%2Fseed0?q=REBOOK-204")
    assert "Traces (2 of 6)" in text.body  # rebook-2041 and rebook-2042
    link = "/trace?run=golden%2Fseed0&amp;trace=rebook-1002"
    assert f'href="{link}"' in page.body


def test_trace_page_shows_the_timeline_of_the_html_report(client: Client) -> None:
    page = client.get("/trace?run=golden%2Fseed1&trace=rebook-1002")
    assert page.status == 200
    assert '<ol class="timeline">' in page.body  # the HTML report's renderer
    assert "ARH-FLW-003" in page.body
    assert "s5b" in page.body
    # in seed0 the file of rebook-1002 is a link outside: its findings, no timeline
    linked = client.get("/trace?run=golden%2Fseed0&trace=rebook-1002")
    assert linked.status == 200
    assert "ARH-FLW-003" in linked.body
    assert '<ol class="timeline">' not in linked.body
    assert "not inside the runs directory" in linked.body
    assert OUTSIDE_MARK not in linked.body
    plain = client.get("/trace?run=reports%2Fsamples.json&trace=rebook-1001")
    assert plain.status == 200
    assert "which does not hold the trace" in plain.body


def test_compare_page_and_api(client: Client) -> None:
    page = client.get("/compare?base=golden%2Fseed0&head=golden%2Fseed1")
    assert page.status == 200
    assert "regressed from pass to fail" in page.body or "pass \u2192 fail" in page.body
    document = client.get("/api/compare?base=golden%2Fseed0&head=golden%2Fseed1").json()
    summary = document["comparison"]["summary"]
    assert summary["pass_to_fail"] == 1  # rebook-1001
    assert summary["traces_removed"] == 1  # rebook-1003
    assert document["comparison"]["gate"]["passed"] is False
    assert client.get("/compare?base=golden%2Fseed0").status == 400
    assert client.get("/api/compare?base=nope&head=golden%2Fseed1").status == 404
    assert client.get("/api/compare?base=broken&head=golden%2Fseed1").status == 409


# -- the API -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "schema"),
    [
        ("/api/status", "api-status"),
        ("/api/runs", "api-runs"),
        ("/api/runs/golden%2Fseed0", "api-run"),
        ("/api/runs/golden%2Fseed0?verdict=agent_failure&rule=ARH-FLW-003&q=1002", "api-run"),
        ("/api/runs/broken", "api-run"),
        ("/api/runs/reports%2Fsamples.json", "api-run"),
        ("/api/compare?base=baselines%2Fgolden.json&head=golden%2Fseed1", "api-compare"),
    ],
)
def test_api_answers_validate_against_their_schemas(
    client: Client, target: str, schema: str
) -> None:
    answer = client.get(target)
    assert answer.status == 200
    assert answer.headers["Content-Type"] == "application/json; charset=utf-8"
    errors = [
        f"{e.json_path}: {e.message}" for e in schema_validator(schema).iter_errors(answer.json())
    ]
    assert errors == []


def test_api_compare_holds_what_arh_compare_writes(client: Client) -> None:
    document = client.get("/api/compare?base=golden%2Fseed0&head=golden%2Fseed1").json()
    errors = list(schema_validator("compare").iter_errors(document["comparison"]))
    assert errors == []


def test_api_status_and_run(client: Client) -> None:
    status = client.get("/api/status").json()
    golden = next(b for b in status["benchmarks"] if b["benchmark"] == "golden")
    assert golden["runs"] == 2
    assert golden["latest"]["id"] == "golden/seed1"
    assert golden["baseline"] == "baselines/golden.json"
    assert golden["latest"]["finished_at"] == "2026-12-08T19:00:00Z"
    assert golden["latest"]["age_seconds"] is not None
    run = client.get("/api/runs/golden%2Fseed0?rule=ARH-FLW-003").json()
    assert [t["trace_id"] for t in run["traces"]] == ["rebook-1002"]
    assert run["filters"] == {"verdict": None, "rule": "ARH-FLW-003", "q": None}
    assert run["record"]["run_id"] == "golden.seed0"
    missing = client.get("/api/runs/nope")
    assert missing.status == 404
    assert missing.json() == {"error": "no such run", "status": 404}


# -- security ------------------------------------------------------------------------------------

TRAVERSALS = [
    "/runs/..%2f..%2foutside%2fsecret.json",
    "/runs/../outside/secret-run",
    "/runs/%2e%2e/%2e%2e/etc/passwd",
    "/runs/%252e%252e%252foutside",
    "/runs//etc/passwd",
    "/runs/%2Fetc%2Fpasswd",
    "/runs/golden%5cseed0",
    "/runs/golden\\seed0",
    "/runs/golden%00",
    "/runs/linked-run",
    "/api/runs/linked-run",
    "/api/runs/reports%2Flinked.json",
    "/api/runs/..%2Foutside%2Fsecret-run",
    "/trace?run=linked-run&trace=" + OUTSIDE_MARK,
    "/trace?run=..%2Foutside%2Fsecret-run&trace=" + OUTSIDE_MARK,
    "/../../etc/passwd",
    "/%2e%2e/%2e%2e/etc/passwd",
    "/static/../../run.json",
    "/golden/seed0/run.json",
    "/golden/seed0/traces/t1.run1.json",
]


@pytest.mark.parametrize("target", TRAVERSALS)
def test_no_path_outside_the_index_can_be_read(client: Client, target: str) -> None:
    answer = client.get(target)
    assert answer.status == 404, answer.body[:300]
    assert OUTSIDE_MARK not in answer.body
    assert "root:" not in answer.body


def test_nothing_from_outside_is_listed(client: Client) -> None:
    for target in ("/", "/api/runs", "/api/status"):
        assert OUTSIDE_MARK not in client.get(target).body


@pytest.mark.parametrize(
    "method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "PROPFIND"]
)
def test_only_get_and_head(client: Client, method: str) -> None:
    answer = client.get("/api/runs", method=method)
    assert answer.status == 405
    assert answer.headers["Allow"] == "GET, HEAD"


def test_head_sends_the_headers_only(client: Client) -> None:
    get, head = client.get("/api/runs"), client.get("/api/runs", method="HEAD")
    assert head.status == 200
    assert head.body == ""
    assert head.headers["Content-Length"] == str(len(get.body.encode("utf-8")))


def test_security_headers(client: Client) -> None:
    for target in ("/", "/api/status", "/nope"):
        headers = client.get(target).headers
        csp = headers["Content-Security-Policy"]
        assert csp.startswith("default-src 'none'; style-src 'sha256-")
        assert "frame-ancestors 'none'" in csp
        assert "script-src" not in csp  # falls back to default-src 'none': no script at all
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert headers["Referrer-Policy"] == "no-referrer"
        assert headers["X-Frame-Options"] == "DENY"


def test_another_host_name_is_refused_on_loopback(client: Client) -> None:
    # a DNS name re-pointed at 127.0.0.1 (DNS rebinding) gets nothing
    assert client.get("/api/runs", host="evil.example:8765").status == 421
    assert client.get("/api/runs", host="localhost:8765").status == 200
    assert client.get("/api/runs", host="[::1]:8765").status == 200


def test_every_value_is_escaped(client: Client) -> None:
    overview = client.get("/")
    run = client.get("/runs/hostile%2Frun1")
    trace_id = json.loads(client.get("/api/runs/hostile%2Frun1").body)["traces"][0]["trace_id"]
    assert "<script>" in trace_id
    trace = client.get("/trace?run=hostile%2Frun1&trace=" + quote(trace_id, safe=""))
    assert trace.status == 200
    for page in (overview, run, trace, client.get("/runs/hostile%2Frun1?q=%3Cscript%3E")):
        assert "<script" not in page.body.lower()
        assert "\u202e" not in page.body
    assert "&lt;script&gt;window.__arh_pwned=2&lt;/script&gt;" in overview.body
    searched = client.get("/?q=%22%3E%3Cscript%3Ealert(1)%3C/script%3E")
    assert "<script" not in searched.body
    assert 'value="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"' in searched.body


def test_reload_scans_again(runs_dir: Path, client: Client, server: DashboardServer) -> None:
    extra = runs_dir / "reports" / "later.json"
    extra.write_text((runs_dir / "reports" / "samples.json").read_text("utf-8"), "utf-8")
    try:
        assert "reports/later.json" not in client.get("/api/runs").body
        assert client.get("/?reload=1").status == 200
        assert "reports/later.json" in client.get("/api/runs").body
    finally:
        extra.unlink()
        server.reload()


def test_is_loopback() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "192.168.1.2", "example.com", ""))  # noqa: S104


# -- the command ---------------------------------------------------------------------------------


def test_serve_warns_off_loopback_and_reports_a_bad_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from agent_reliability_harness.cli import main

    assert main(["serve", str(tmp_path / "missing")]) == 3
    err = capsys.readouterr().err
    assert "error:" in err
    assert "missing" in err
    assert main(["serve", str(tmp_path / "missing"), "--host", "0.0.0.0"]) == 3  # noqa: S104
    assert "not a loopback address" in capsys.readouterr().err
    assert main(["serve", str(tmp_path), "--port", "70000"]) == 2
