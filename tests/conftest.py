"""Shared test helpers: paths, the reference data in ../shared, and running the CLI in-process."""

from __future__ import annotations

import importlib.util
import ipaddress
import json
import os
import socket
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from agent_reliability_harness.cli import main
from agent_reliability_harness.model.trace import Trace

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
SHARED = Path(os.environ.get("ARH_SHARED_DIR", ROOT.parent / "shared"))
REFERENCE = SHARED / "data" / "reference-arh"
REAL_TRACES = SHARED / "data" / "real-traces"
SARIF_SCHEMA = SHARED / "data" / "schemas" / "sarif-2.1.0" / "sarif-schema-2.1.0.json"


class OutsideLoopbackError(ConnectionRefusedError):
    """A test tried to reach a host outside the loopback interface (see :func:`_offline`)."""


def _loopback(host: object) -> bool:
    """Whether ``host`` (of an address tuple, or given to getaddrinfo) is on this machine: a
    loopback IP address, "localhost", or no host at all (a server binding every interface)."""
    if host is None or host in ("", b"", "localhost", b"localhost"):
        return True
    text = host.decode("ascii", "replace") if isinstance(host, bytes) else str(host)
    try:
        return ipaddress.ip_address(text.split("%", 1)[0]).is_loopback
    except ValueError:  # a name, which only a lookup could place: refused before the lookup
        return False


def _guarded_address(address: object) -> None:
    if isinstance(address, tuple) and address and not _loopback(address[0]):
        raise OutsideLoopbackError(f"the tests open no connection outside loopback: {address!r}")


@pytest.fixture(autouse=True, scope="session")
def _offline() -> Iterator[None]:
    """No test reaches the network: connecting a socket (and so urllib, http.client and
    socket.create_connection) to an address outside the loopback interface, or looking up a
    name that is not localhost, raises :class:`OutsideLoopbackError` for the whole session.
    Unix sockets and loopback servers (the fake judge API of tests/test_judge_client.py) work;
    tests/test_offline.py proves that the guard trips. (It guards this process: the commands
    that tests run in subprocesses call no model, and pip runs there with --no-index.)"""
    connect = socket.socket.connect
    connect_ex = socket.socket.connect_ex
    sendto = socket.socket.sendto
    getaddrinfo = socket.getaddrinfo

    def guarded_connect(self: socket.socket, address: Any) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            _guarded_address(address)
        connect(self, address)

    def guarded_connect_ex(self: socket.socket, address: Any) -> int:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            _guarded_address(address)
        return connect_ex(self, address)

    def guarded_sendto(self: socket.socket, data: Any, *rest: Any) -> int:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            _guarded_address(rest[-1])  # sendto(data, address) or sendto(data, flags, address)
        return sendto(self, data, *rest)

    def guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not _loopback(host):
            raise OutsideLoopbackError(f"the tests look up no host outside loopback: {host!r}")
        return getaddrinfo(host, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(socket.socket, "connect", guarded_connect)
        patch.setattr(socket.socket, "connect_ex", guarded_connect_ex)
        patch.setattr(socket.socket, "sendto", guarded_sendto)
        patch.setattr(socket, "getaddrinfo", guarded_getaddrinfo)
        yield


@pytest.fixture(autouse=True)
def _no_proxy_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """urllib sends requests through the proxy the environment names, even to 127.0.0.1: the
    judge tests talk to their fake API on loopback directly."""
    for name in (
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def _no_colour_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests choose colour themselves: a FORCE_COLOR or NO_COLOR of the shell that runs
    them must not change what the console report looks like."""
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)


def require_shared(path: Path) -> Path:
    """Skip the calling test, with the reason, when the shared reference data is not present."""
    if not path.exists():
        pytest.skip(f"shared reference data not found at {path} (set ARH_SHARED_DIR)")
    return path


def load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@cache
def schema_validator(name: str) -> Draft202012Validator:
    """``schemas/<name>.schema.json`` as a validator. The format checker makes "format": "regex"
    an assertion (Python's re, as in the parser)."""
    schema = load_json(ROOT / "schemas" / f"{name}.schema.json")
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


def json_paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into a JSON value (keys and indexes), depth first, the value's own first."""
    found = [prefix]
    if type(value) is dict:
        for key, child in value.items():
            found += json_paths(child, (*prefix, key))
    elif type(value) is list:
        for index, child in enumerate(value):
            found += json_paths(child, (*prefix, index))
    return found


def adapter_notes(trace: Trace, code: str | None = None) -> list[dict[str, Any]]:
    """The adapter notes of a converted trace (those with ``code``, if given)."""
    found: list[dict[str, Any]] = trace.metadata.get("adapter", {}).get("notes", [])
    return [n for n in found if code is None or n["code"] == code]


def adapter_missing(trace: Trace) -> list[str]:
    """What the adapter says the source did not give (``metadata.adapter.missing``)."""
    found: list[str] = trace.metadata["adapter"]["missing"]
    return found


def step_tuples(trace: Trace) -> list[tuple[str, str, str | None]]:
    """(step id, type, tool name) of each step."""
    return [(s.step_id, s.type, s.tool_name) for s in trace.steps]


def load_script(name: str, path: Path) -> ModuleType:
    """Import a script of benchmarks/accuracy/, benchmarks/perf/ or tools/ as module ``name``."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look the module up while a class is built
    spec.loader.exec_module(module)
    return module


@dataclass
class Run:
    status: int
    out: str
    err: str


@pytest.fixture
def arh(capsys: pytest.CaptureFixture[str]) -> Callable[..., Run]:
    """Run ``arh`` in-process with the given arguments and capture what it printed."""

    def run(*argv: str | os.PathLike[str], stdin: bytes | None = None) -> Run:
        args: Sequence[str] = [os.fspath(a) for a in argv]
        capsys.readouterr()
        if stdin is not None:
            import io
            import sys

            fake = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
            original = sys.stdin
            sys.stdin = fake
            try:
                status = main(args)
            finally:
                sys.stdin = original
        else:
            status = main(args)
        captured = capsys.readouterr()
        return Run(status, captured.out, captured.err)

    return run


def render_markdown(text: str) -> str:
    """Render Markdown the way GitHub does for tables, autolinks and inline HTML (GFM-like)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("gfm-like").render(text)


def assert_markdown_is_inert(text: str) -> None:
    """Check rendered Markdown for what untrusted trace text must never produce: HTML, links,
    emphasis (only the reports' own labels are bold), @-mentions and issue references."""
    import re

    html = render_markdown(text)
    assert "<script" not in html, html
    assert "<img" not in html, html
    assert "<a " not in html, f"a link was created:\n{html}"
    assert "<em>" not in html, html
    assert "<del>" not in html, html
    ours = re.compile(r"Warning:|FAIL|\d+ input errors?")
    assert all(ours.fullmatch(t) for t in re.findall(r"<strong>(.*?)</strong>", html)), html
    outside_code = re.sub(r"<code>.*?</code>", "", html)
    assert not re.search(r"(?<![\w&])@\w", outside_code), f"an @-mention survived:\n{outside_code}"
    assert not re.search(r"(?<![\w&])#\d", outside_code), f"an issue reference:\n{outside_code}"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-goldens",
        action="store_true",
        help="rewrite the golden report files under tests/goldens instead of comparing with them",
    )


@pytest.fixture(params=[4300, 0], ids=["default-limit", "no-limit"])
def int_digits_limit(request: pytest.FixtureRequest) -> Iterator[int]:
    """Run with Python's default int_max_str_digits and with the limit switched off (0)."""
    before = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(request.param)
    yield request.param
    sys.set_int_max_str_digits(before)


@pytest.fixture
def no_memory_for_1001(monkeypatch: pytest.MonkeyPatch) -> None:
    """Checking rebook-1001 (samples/traces/rebook_pass.json) runs out of memory, as on a machine
    too small for the trace: the runner reports it as an input error of kind
    infrastructure_failure (tests/test_failure_kinds.py, tests/test_failure_kinds_compare.py)."""
    from agent_reliability_harness.engine import Validator

    original = Validator._validate_parsed

    def validate(self: Validator, trace: Any, **kwargs: Any) -> Any:
        if trace.trace_id == "rebook-1001":
            raise MemoryError
        return original(self, trace, **kwargs)

    monkeypatch.setattr(Validator, "_validate_parsed", validate)
