"""The HTTP server of ``arh serve``: ``http.server``'s ThreadingHTTPServer, read-only.

Routes (GET and HEAD; any other method is answered 405):

- ``/`` the overview (``?q=`` searches runs, ``?reload=1`` scans the directory again);
- ``/runs/<id>`` one run (``verdict``, ``rule``, ``q`` filters, ``page``);
- ``/trace?run=<id>&trace=<trace id>`` one trace's timeline;
- ``/compare?base=<id>&head=<id>`` two runs side by side;
- ``/api/status``, ``/api/runs``, ``/api/runs/<id>`` (the same filters), ``/api/compare``.

Run and trace ids are looked up in the index (``serve.index``); nothing from a request is ever
joined into a path, so no request can name a file.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import IO, Any, Final
from urllib.parse import parse_qs, unquote, urlsplit

from agent_reliability_harness._json import dumps_indented
from agent_reliability_harness._version import __version__
from agent_reliability_harness.render._text import terminal_safe
from agent_reliability_harness.render.html import html_csp
from agent_reliability_harness.serve import api, pages
from agent_reliability_harness.serve.index import Index, LoadedRun, scan
from agent_reliability_harness.serve.views import Filters

__all__ = ["DashboardServer", "is_loopback"]

_MAX_TARGET: Final = 8_192  # the longest request target answered (longer: 414)
_HEADERS: Final = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cache-Control": "no-store",
}
_LOOPBACK_NAMES: Final = frozenset({"localhost", "localhost.", "ip6-localhost"})


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or name to bind or a Host header's name) is loopback."""
    name = host.strip("[]").lower()
    if name in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class _Error(Exception):
    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class DashboardServer(ThreadingHTTPServer):
    """The dashboard over one runs directory. ``log`` gets one line per request (None: none)."""

    daemon_threads = True

    def __init__(
        self, address: tuple[str, int], runs_dir: str, *, log: IO[str] | None = None
    ) -> None:
        self.runs_dir = runs_dir
        self.index = scan(runs_dir)
        self.log = log
        self._lock = threading.Lock()
        self.address_family = _family(address[0])
        super().__init__(address, _Handler)

    def reload(self) -> Index:
        """Scan the directory again (one scan at a time); the new index replaces the old one
        (a scan that fails keeps the old one)."""
        with self._lock:
            self.index = scan(self.runs_dir)
        return self.index


def _family(host: str) -> socket.AddressFamily:
    try:
        version = ipaddress.ip_address(host.strip("[]")).version
    except ValueError:
        return socket.AF_INET
    return socket.AF_INET6 if version == 6 else socket.AF_INET


def _host_name(header: str) -> str:
    """The name of a Host header, without its port (``[::1]:8765`` -> ``::1``)."""
    if header.startswith("["):
        return header[1:].partition("]")[0]
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def _now() -> datetime:
    return datetime.now(UTC)


class _Handler(BaseHTTPRequestHandler):
    server: DashboardServer
    server_version = f"arh/{__version__}"
    sys_version = ""
    protocol_version = "HTTP/1.1"
    # headers and body go out in two writes: without this, Nagle's algorithm and the client's
    # delayed ACK hold the body ~40 ms on a kept-alive connection (benchmarks/serve_load.py)
    disable_nagle_algorithm = True

    # -- methods ---------------------------------------------------------------------------------

    def do_GET(self) -> None:
        self._respond(head=False)

    def do_HEAD(self) -> None:
        self._respond(head=True)

    def __getattr__(self, name: str) -> Callable[[], None]:
        """Any other method (POST, PUT, DELETE, OPTIONS, ...): 405, the dashboard is read-only."""
        if name.startswith("do_"):
            return self._not_allowed
        raise AttributeError(name)

    def _not_allowed(self) -> None:
        body = b"405: the dashboard is read-only (GET and HEAD only)\n"
        self._send(HTTPStatus.METHOD_NOT_ALLOWED, "text/plain", body, head=False,
                   extra={"Allow": "GET, HEAD"})  # fmt: skip
        self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        log = self.server.log
        if log is not None:
            log.write(terminal_safe(f"{self.address_string()} {format % args}") + "\n")
            log.flush()

    # -- answers ---------------------------------------------------------------------------------

    def _send(
        self,
        status: HTTPStatus,
        content_type: str,
        body: bytes,
        *,
        head: bool,
        extra: dict[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", f"{content_type}; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header(
            "Content-Security-Policy", f"{html_csp(forms=True)}; frame-ancestors 'none'"
        )
        for name, value in {**_HEADERS, **(extra or {})}.items():
            self.send_header(name, value)
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _respond(self, *, head: bool) -> None:
        api_call = self.path.startswith("/api/")
        try:
            content_type, text = self._route()
            status = HTTPStatus.OK
        except _Error as exc:
            status = exc.status
            if api_call:
                content_type = "application/json"
                text = dumps_indented({"error": exc.message, "status": int(status)}) + "\n"
            else:
                content_type = "text/html"
                text = pages.error_page(int(status), exc.message, self.server.index)
        self._send(status, content_type, text.encode("utf-8", "surrogatepass"), head=head)

    def _route(self) -> tuple[str, str]:
        if len(self.path) > _MAX_TARGET:
            raise _Error(HTTPStatus.REQUEST_URI_TOO_LONG, "the request target is too long")
        host = _host_name(self.headers.get("Host") or "")
        if is_loopback(str(self.server.server_address[0])) and host and not is_loopback(host):
            # a page of another site that a DNS name re-pointed to 127.0.0.1 cannot read it
            raise _Error(HTTPStatus.MISDIRECTED_REQUEST, "this dashboard answers on localhost only")
        parts = urlsplit(self.path)
        path = parts.path
        if "\\" in path or "\0" in unquote(path):
            raise _Error(HTTPStatus.NOT_FOUND, "no such page")
        query = parse_qs(parts.query, max_num_fields=20)
        index = self.server.index
        now = _now()
        if path == "/":
            if query.get("reload") == ["1"]:
                index = self.server.reload()
            return "text/html", pages.overview_page(index, now, _one(query, "q"))
        if path.startswith("/runs/"):
            run = _run(index, unquote(path.removeprefix("/runs/")))
            page = _one(query, "page")
            number = int(page) if page.isdigit() and len(page) < 9 else 1
            return "text/html", pages.run_page(index, run, Filters.of(query), number, now)
        if path == "/trace":
            run = _run(index, _one(query, "run"))
            trace_id = _one(query, "trace")
            if run.report is None or not any(r.trace_id == trace_id for r in run.report.reports):
                raise _Error(HTTPStatus.NOT_FOUND, "no such trace in this run")
            return "text/html", pages.trace_page(index, run, trace_id)
        if path == "/compare":
            base, head = _pair(index, query)
            return "text/html", pages.compare_page(index, base, head)
        if path == "/api/status":
            return _json(api.status_document(index, now))
        if path == "/api/runs":
            return _json(api.runs_document(index, now))
        if path.startswith("/api/runs/"):
            run = _run(index, unquote(path.removeprefix("/api/runs/")))
            return _json(api.run_document(run, Filters.of(query), now))
        if path == "/api/compare":
            return _json(api.compare_document(*_pair(index, query)))
        raise _Error(HTTPStatus.NOT_FOUND, "no such page")


def _json(document: object) -> tuple[str, str]:
    return "application/json", dumps_indented(document) + "\n"


def _one(query: dict[str, list[str]], name: str) -> str:
    return query.get(name, [""])[0]


def _run(index: Index, run_id: str) -> LoadedRun:
    run = index.runs.get(run_id)
    if run is None:
        raise _Error(HTTPStatus.NOT_FOUND, "no such run")
    return run


def _pair(index: Index, query: dict[str, list[str]]) -> tuple[LoadedRun, LoadedRun]:
    base_id, head_id = _one(query, "base"), _one(query, "head")
    if not base_id or not head_id:
        raise _Error(HTTPStatus.BAD_REQUEST, "name two runs: ?base=<run id>&head=<run id>")
    base, head = _run(index, base_id), _run(index, head_id)
    for run in (base, head):
        if run.report is None:
            raise _Error(HTTPStatus.CONFLICT, f"run {run.id} has no readable report to compare")
    return base, head
