"""The pytest plugin of arh: check agent traces against a policy in the test suite you have.

pytest loads it through the ``pytest11`` entry point ``arh`` (``-p no:arh`` turns it off);
nothing else imports it, and it imports the rest of arh only when a test uses it (eager, that
measured +60 to +90 ms of every pytest run where arh is installed). It adds:

* ``assert_trace_passes(trace, policy=None)``: validate a trace (a ``Trace``, its JSON form, a
  transcript such as an OpenAI chat or Anthropic messages log, a ``Recorder`` or ``Monitor``, or
  the path of a trace or transcript file) and fail the test with every finding, expected against
  observed, unless it passes. It returns the ``TraceReport``.
* the fixture ``arh_policy``: the policy of the test, parsed;
* the marker ``agent_eval`` (``pytest -m agent_eval`` selects those tests); as
  ``@pytest.mark.agent_eval(policy="path.json")`` or ``@pytest.mark.agent_eval("path.json")``
  it also names the test's policy (a path relative to the test's file);
* ``--arh-policy PATH`` (or the ini option ``arh_policy``, relative to the rootdir): the policy
  used when a test names none;
* ``--arh-select``, ``--arh-ignore``, ``--arh-severity`` (or the ini options ``arh_select``,
  ``arh_ignore``, ``arh_severity``): the rule selection of every check, as ``arh validate``'s
  ``--select``, ``--ignore`` and ``--severity`` make it (IDs or prefixes, comma-separated);
* ``--arh-report-dir DIR`` (or ``arh_report_dir``): at the end of the session, write the JSON
  validation report of every trace checked, one file per policy (``<policy_id>.json``), so that
  ``arh compare --baseline B --candidate DIR/<policy_id>.json`` can gate on the run.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

import pytest

from agent_reliability_harness._version import __version__
from agent_reliability_harness.errors import InputError, UsageError

if TYPE_CHECKING:
    from agent_reliability_harness.model.policy import Policy
    from agent_reliability_harness.model.report import TraceReport
    from agent_reliability_harness.model.trace import Trace
    from agent_reliability_harness.rules.selection import RuleSelection


__all__ = ["assert_trace_passes", "format_failure"]

MARKER: Final = "agent_eval"
_NO_POLICY: Final = (
    "arh: no policy for this test: pass --arh-policy PATH, set arh_policy in the pytest "
    "configuration, or mark the test @pytest.mark.agent_eval(policy=PATH)"
)
_BAD_MARKER: Final = (
    "arh: @pytest.mark.agent_eval takes at most one policy path, as its one argument or as "
    "policy=PATH"
)
_DEFAULT_FAIL_UNDER: Final = 70.0


class _Session:
    """What the plugin keeps for one pytest run: where policies come from, what was checked."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.policy_path = _configured_path(config, "arh_policy")
        self.report_dir = _configured_path(config, "arh_report_dir")
        self.selection = _configured_selection(config)
        self.item: pytest.Item | None = None
        self._policies: dict[str, Policy] = {}
        # policy sha256 -> (policy, trace id -> report), in the order traces were checked
        self.checked: dict[str, tuple[Policy, dict[str, TraceReport]]] = {}
        self.duplicates: list[str] = []
        self.written: list[tuple[str, int]] = []
        self.write_error: str | None = None

    def policy(self, path: str, *, at_start: bool = False) -> Policy:
        """The parsed policy file (read once per session); a bad one stops the session when
        it is named on the command line, and fails the test that names it otherwise."""
        policy = self._policies.get(path)
        if policy is None:
            from agent_reliability_harness.io.load import load_policy

            try:
                policy = load_policy(path)
            except InputError as exc:
                if at_start:
                    raise pytest.UsageError(f"arh: invalid policy: {exc}") from None
                problem = str(exc)
            else:
                self._policies[path] = policy
                return policy
            # outside the except block, so that the failure is not shown chained to the error
            pytest.fail(f"arh: invalid policy: {problem}", pytrace=False)
        return policy

    def policy_for(self, item: pytest.Item | None) -> Policy:
        """The policy of a test: its marker's, else the session's; fail the test if none."""
        path = self.marker_policy(item) or self.policy_path
        if path is None:
            pytest.fail(_NO_POLICY, pytrace=False)
        return self.policy(path)

    def marker_policy(self, item: pytest.Item | None) -> str | None:
        """The policy named by the closest agent_eval marker of the test that names one
        (``policy=PATH`` or its one argument; a bare marker on the test leaves its class's or
        module's in force), relative to the test's file; fail the test if a marker is misused."""
        if item is None:
            return None
        for marker in item.iter_markers(MARKER):  # the closest first
            args, kwargs = marker.args, marker.kwargs
            if len(args) + len(kwargs) > 1 or set(kwargs) - {"policy"}:
                given = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
                pytest.fail(f"{_BAD_MARKER}, got ({', '.join(given)})", pytrace=False)
            value = args[0] if args else kwargs.get("policy")
            if value is None:
                continue
            path = os.fspath(value) if isinstance(value, str | os.PathLike) else None
            if not isinstance(path, str):
                pytest.fail(
                    f"arh: the policy of @pytest.mark.{MARKER} must be a path (a str or "
                    f"os.PathLike), got {type(value).__name__}",
                    pytrace=False,
                )
            return os.path.join(os.path.dirname(str(item.path)), path)
        return None

    def add(self, policy: Policy, report: TraceReport) -> None:
        if self.report_dir is None:
            return
        _, reports = self.checked.setdefault(policy.sha256, (policy, {}))
        if report.trace_id in reports:
            self.duplicates.append(report.trace_id)
            del reports[report.trace_id]  # the latest check wins, at the latest position
        reports[report.trace_id] = report

    def write_reports(self) -> None:
        if self.report_dir is None or not self.checked:
            return
        from agent_reliability_harness.io import write_atomic
        from agent_reliability_harness.model.report import RunReport
        from agent_reliability_harness.render.json_report import render_json

        taken: set[str] = set()
        for sha, (policy, reports) in self.checked.items():
            name = _file_name(policy.policy_id)
            if name in taken:
                name = f"{name}-{sha[:12]}"
            taken.add(name)
            path = os.path.join(self.report_dir, f"{name}.json")
            run = RunReport(
                tuple(reports.values()),
                (),
                policy.policy_id,
                policy.sha256,
                __version__,
                policy.rules.choices(),
            )
            write_atomic(path, render_json(run))
            self.written.append((path, len(reports)))


def _configured_path(config: pytest.Config, name: str) -> str | None:
    """An option's path: from the command line (relative to where pytest was started), else
    from the ini file (relative to the rootdir)."""
    value = config.getoption(name)
    if value:
        return os.path.join(str(config.invocation_params.dir), value)
    value = config.getini(name)
    if value:
        return os.path.join(str(config.rootpath), str(value))
    return None


def _configured_selection(config: pytest.Config) -> RuleSelection | None:
    """The rule selection of ``--arh-select``, ``--arh-ignore`` and ``--arh-severity`` (the
    command line's values replace the ini file's), as ``arh validate`` makes it of ``--select``,
    ``--ignore`` and ``--severity``; a bad one stops the run."""
    from agent_reliability_harness.rules.selection import choose

    codes: dict[str, list[str]] = {}
    for name in ("select", "ignore", "severity"):
        given = config.getoption(f"arh_{name}") or config.getini(f"arh_{name}") or []
        codes[name] = [code.strip() for text in given for code in text.split(",") if code.strip()]
    levels = []
    for text in codes["severity"]:
        code, _, level = text.partition("=")
        levels.append((code, level.strip()))
    try:
        selection = choose(codes["select"] or None, codes["ignore"], levels)
    except UsageError as exc:
        raise pytest.UsageError(f"arh: {exc}") from None
    return selection or None


def _file_name(policy_id: str) -> str:
    safe = "".join(c if c.isascii() and (c.isalnum() or c in "-_.") else "_" for c in policy_id)
    return safe.strip(".") or "policy"


_SESSIONS: list[_Session] = []  # a stack: pytester runs sessions inside sessions


def _current() -> _Session | None:
    return _SESSIONS[-1] if _SESSIONS else None


# -- hooks ----------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("arh", "agent traces (arh)")
    group.addoption(
        "--arh-policy",
        dest="arh_policy",
        metavar="PATH",
        help="policy JSON file for tests that name none (fixture arh_policy, assert_trace_passes)",
    )
    group.addoption(
        "--arh-report-dir",
        dest="arh_report_dir",
        metavar="DIR",
        help="write the JSON report of every trace checked to DIR/<policy_id>.json",
    )
    for name, what in (
        ("select", "run only these rules: IDs or prefixes (ARH-FLW), comma-separated"),
        ("ignore", "switch these rules off: IDs or prefixes, comma-separated"),
        ("severity", "give a rule (ID or prefix) another severity: RULE=LEVEL, comma-separated"),
    ):
        group.addoption(f"--arh-{name}", dest=f"arh_{name}", action="append", help=what)
        parser.addini(f"arh_{name}", f"{what} (as --arh-{name})", type="args")
    parser.addini("arh_policy", "default policy file for arh (relative to the rootdir)")
    parser.addini("arh_report_dir", "directory for the arh reports (relative to the rootdir)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(policy=None): evaluates an agent run with arh; "
        "policy= (or the one argument) names the test's policy file (relative to the test's file)",
    )
    session = _Session(config)
    if session.policy_path is not None:
        session.policy(session.policy_path, at_start=True)  # a bad one stops the run at once
    _SESSIONS.append(session)


def pytest_unconfigure(config: pytest.Config) -> None:
    for index in range(len(_SESSIONS) - 1, -1, -1):
        if _SESSIONS[index].config is config:
            del _SESSIONS[index]
            break


def pytest_report_header(config: pytest.Config) -> list[str]:
    session = _current()
    if session is None or session.config is not config:
        return []
    lines = []
    if session.policy_path is not None:
        lines.append(f"arh: policy {session.policy_path}")
    if session.report_dir is not None:
        lines.append(f"arh: reports to {session.report_dir}")
    if session.selection is not None:
        from agent_reliability_harness.render.console import selection_text

        shown = selection_text(session.selection.choices())
        lines.append(f"arh: rules switched off or changed: {shown}")
    return lines


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item) -> None:
    session = _current()
    if session is not None:
        session.item = item  # for assert_trace_passes without a policy


def pytest_sessionfinish(session: pytest.Session) -> None:
    state = _current()
    if state is None or state.config is not session.config:
        return
    try:
        state.write_reports()
    except OSError as exc:
        state.write_error = f"arh: cannot write the report: {exc.strerror or exc}"
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # a CI gate must not pass on it


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    state = _current()
    if state is None or state.config is not config or state.report_dir is None:
        return
    if state.write_error is not None:
        terminalreporter.write_line(state.write_error, red=True)
    elif not state.written:
        terminalreporter.write_line("arh: no trace was checked, so no report was written")
    for path, count in state.written:
        terminalreporter.write_line(f"arh: report of {count} trace(s) written to {path}")
    if state.duplicates:
        shown = ", ".join(sorted(set(state.duplicates)))
        terminalreporter.write_line(
            f"arh: trace ids checked more than once (the report keeps the last check): {shown}"
        )


@pytest.fixture
def arh_policy(request: pytest.FixtureRequest) -> Policy:
    """The policy of this test: ``@pytest.mark.agent_eval(policy=...)``, else ``--arh-policy``
    (or the ``arh_policy`` ini option)."""
    session = _current()
    if session is None:  # pragma: no cover - the fixture exists only while the plugin runs
        raise pytest.UsageError("arh: the pytest plugin is not configured")
    return session.policy_for(request.node)


# -- the assertion --------------------------------------------------------------------------


def _as_trace(trace: object, reading: _Reading) -> Trace:
    """The trace to check, whose identity a report can hold (a Trace built in code is not
    parsed, so its id and names are checked here)."""
    from agent_reliability_harness.model.trace import check_identity

    made = _made_trace(trace, reading)
    check_identity(made.trace_id, made.agent_name, made.workflow)
    return made


# How to read a transcript: the format, and the pointers to its messages and to its trace id.
_Reading = tuple[str, str | None, str | Sequence[str]]


def _made_trace(trace: object, reading: _Reading) -> Trace:
    from agent_reliability_harness.model.trace import Trace

    if isinstance(trace, Trace):
        return trace
    if isinstance(trace, str | os.PathLike | dict | list):
        return _one_trace(trace, reading)
    make = getattr(trace, "trace", None)
    if callable(make):  # a Recorder or a Monitor
        made = make()
        if isinstance(made, Trace):
            return made
    raise UsageError(
        "assert_trace_passes needs a Trace, its JSON form (a dict), a transcript (a dict or a "
        "list), a Recorder or Monitor, or the path of a trace or transcript file, got "
        f"{type(trace).__name__}"
    )


def _one_trace(
    source: str | os.PathLike[str] | dict[str, Any] | list[Any], reading: _Reading
) -> Trace:
    """The one trace of a file (a JSON document, or a JSON Lines file of one record) or of a
    decoded document, read as ``arh validate`` reads it (transcripts through their adapter)."""
    from agent_reliability_harness.io import file_source
    from agent_reliability_harness.runner import DOCUMENT_NAME, load_traces

    fmt, messages_at, trace_id_at = reading
    traces = load_traces(source, fmt, messages_at=messages_at, trace_id_at=trace_id_at)
    if len(traces) != 1:
        path = source if isinstance(source, str | os.PathLike) else None
        name = DOCUMENT_NAME if path is None else file_source(os.fspath(path)).name
        raise UsageError(
            f"{name} holds {len(traces)} traces; assert_trace_passes checks one trace "
            "(call it for each, or run arh validate on the file)"
        )
    return traces[0]


def _as_policy(policy: object, session: _Session | None) -> Policy:
    from agent_reliability_harness.model.policy import Policy

    if isinstance(policy, Policy):
        return policy
    if isinstance(policy, dict):
        return Policy.from_dict(policy)
    if isinstance(policy, str | os.PathLike):
        if session is not None:
            return session.policy(os.fspath(policy))
        from agent_reliability_harness.io.load import load_policy

        return load_policy(os.fspath(policy))
    if policy is None:
        if session is None:
            raise UsageError(
                "assert_trace_passes needs a policy: pass one, or run under pytest with the arh "
                "plugin (not -p no:arh) and --arh-policy or @pytest.mark.agent_eval(policy=...)"
            )
        return session.policy_for(session.item)
    raise UsageError(
        "the policy must be a Policy, its JSON form (a dict) or the path of a policy file, got "
        f"{type(policy).__name__}"
    )


def format_failure(report: TraceReport, fail_under: float = _DEFAULT_FAIL_UNDER) -> str:
    """The failure message: the verdict, then each finding with expected (``-``) against
    observed (``+``), in report order."""
    errors = report.errors
    why = []
    if errors:
        why.append(f"{errors} error finding{'s' if errors != 1 else ''}")
    low = report.score < fail_under
    if low:
        from agent_reliability_harness.render._text import score_below, threshold_text

        why.append(f"score {score_below(report.score, fail_under)} is below "
                   f"{threshold_text(fail_under)}")  # fmt: skip
    lines = [
        f"trace {report.trace_id!r} does not pass policy {report.policy_id!r}: "
        + " and ".join(why)
        + ("" if low else f" (score {report.score:.2f})")
    ]
    width = max((len(f.severity) for f in report.findings), default=0)
    for finding in report.findings:
        where = "the trace" if finding.step_id is None else f"step {finding.step_id!r}"
        lines.append(
            f"  {finding.severity:<{width}}  {finding.rule_id} at {where}: {finding.message}"
        )
        if finding.expected is not None:
            lines.append(f"    - expected: {finding.expected}")
        if finding.observed is not None:
            lines.append(f"    + observed: {finding.observed}")
    return "\n".join(lines)


def assert_trace_passes(
    trace: object,
    policy: object = None,
    *,
    fail_under: float = _DEFAULT_FAIL_UNDER,
    format: str = "auto",
    messages_at: str | None = None,
    trace_id_at: str | Sequence[str] = (),
) -> TraceReport:
    """Validate ``trace`` against ``policy`` and raise AssertionError, listing every finding,
    unless the trace passes; return its report.

    A transcript (a file, or a decoded document) is read as ``arh validate`` reads it, with
    ``format``, ``messages_at`` and ``trace_id_at`` as its ``--format``, ``--messages-at`` and
    ``--trace-id-at``. Without a policy, the test's policy is used (see ``arh_policy``). With
    ``--arh-report-dir``, the report is kept for the session's JSON report either way.
    """
    __tracebackhide__ = True
    from agent_reliability_harness.engine import Validator

    session = _current()
    resolved = _as_policy(policy, session)
    made = _as_trace(trace, (format, messages_at, trace_id_at))
    selection = None if session is None else session.selection
    report = Validator(resolved, fail_under, selection=selection).validate(made)
    if session is not None:
        session.add(resolved, report)
    if not report.passed:
        raise AssertionError(format_failure(report, fail_under))
    return report
