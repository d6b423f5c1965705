"""A fake OpenAI-compatible chat-completions server on the loopback interface, for the judge
tests: it answers each request with the next of a scripted list of replies and records what it
was sent."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted response: its status, headers and body, sent after ``delay`` seconds."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


def completion(content: str) -> Reply:
    """A successful chat completion whose message content is ``content``."""
    body = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
    }
    return Reply(200, json.dumps(body).encode())


def verdict(scores: dict[str, int], confidence: float = 0.9, rationale: str = "ok") -> Reply:
    return completion(
        json.dumps({"scores": scores, "confidence": confidence, "rationale": rationale})
    )


@dataclass
class FakeApi:
    """The server's script and what it received (paths, headers, JSON bodies)."""

    replies: list[Reply]
    url: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)


@contextmanager
def fake_api(*replies: Reply) -> Iterator[FakeApi]:
    api = FakeApi(list(replies))
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length))
            with lock:
                api.requests.append(
                    {"path": self.path, "headers": dict(self.headers.items()), "body": body}
                )
                reply = api.replies.pop(0) if api.replies else Reply(500, b"no reply scripted")
            if reply.delay:
                time.sleep(reply.delay)
            try:
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)
            except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
                pass

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    api.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield api
    finally:
        server.shutdown()
        server.server_close()
