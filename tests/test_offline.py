"""The test session opens no connection outside the loopback interface (tests/conftest.py,
``_offline``): these tests prove that the guard trips, and that loopback still works."""

from __future__ import annotations

import socket
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from conftest import OutsideLoopbackError


@pytest.mark.parametrize(
    "address",
    [("192.0.2.1", 9), ("8.8.8.8", 53), ("2001:db8::1", 443, 0, 0)],
    ids=["test-net", "public", "ipv6"],
)
def test_connecting_outside_loopback_is_refused(address: tuple[object, ...]) -> None:
    family = socket.AF_INET6 if ":" in str(address[0]) else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock, pytest.raises(OutsideLoopbackError):
        sock.connect(address)
    with socket.socket(family, socket.SOCK_STREAM) as sock, pytest.raises(OutsideLoopbackError):
        sock.connect_ex(address)


def test_a_name_is_not_looked_up() -> None:
    with pytest.raises(OutsideLoopbackError):
        socket.getaddrinfo("api.openai.com", 443)
    with pytest.raises(OutsideLoopbackError):
        socket.create_connection(("example.com", 80), timeout=1)


def test_urllib_cannot_reach_the_network() -> None:
    # urllib wraps the refusal in a URLError, as it would a failed connection
    with pytest.raises(urllib.error.URLError) as caught:
        urllib.request.urlopen("http://93.184.215.14/", timeout=1)
    assert isinstance(caught.value.reason, OutsideLoopbackError)


class _Hello(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "5")
        self.end_headers()
        self.wfile.write(b"hello")

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_loopback_still_works(host: str) -> None:
    server = HTTPServer(("127.0.0.1", 0), _Hello)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://{host}:{server.server_address[1]}/"
        with urllib.request.urlopen(url, timeout=5) as response:
            assert response.read() == b"hello"
    finally:
        server.shutdown()
        server.server_close()
