"""The pytest plugin (``pytest_plugin``), run in inner pytest sessions with ``pytester``.

The plugin reaches those sessions the way it reaches users: through the ``pytest11`` entry point
of the installed package.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

from agent_reliability_harness.errors import UsageError
from agent_reliability_harness.model.report import RunReport

from conftest import ROOT, Run

pytest_plugins = ["pytester"]

EXAMPLES = ROOT / "examples"
POLICY = {
    "policy_id": "pay-policy",
    "allowed_tools": {"pay": {"required_arguments": {"to": "str"}, "side_effect": True}},
}
# A test module of the inner session: one run passes, one repeats a payment (ARH-FLW-003).
TESTS = """
import pytest
from agent_reliability_harness.pytest_plugin import assert_trace_passes
from agent_reliability_harness.record import Recorder


def run(trace_id, payees):
    rec = Recorder(trace_id, clock=None)
    pay = rec.tool(lambda to: "paid", name="pay")
    for to in payees:
        pay(to=to)
    return rec


@pytest.mark.agent_eval
def test_pays_once():
    assert_trace_passes(run("once", ["ann"]))


@pytest.mark.agent_eval
def test_pays_twice():
    assert_trace_passes(run("twice", ["ann", "ann"]))


def test_unrelated():
    assert True
"""


def _run(pytester: pytest.Pytester, *args: str | Path) -> pytest.RunResult:
    # without hypothesis' plugin, which would import hypothesis afresh in every inner session
    return pytester.runpytest("-p", "no:hypothesispytest", "-p", "no:cacheprovider", *args)


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".json", policy=json.dumps(POLICY))
    pytester.makepyfile(test_agent=TESTS)
    return pytester


def test_the_plugin_is_an_entry_point_of_the_package() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert declared["project"]["entry-points"]["pytest11"] == {
        "arh": "agent_reliability_harness.pytest_plugin"
    }
    installed = {ep.name: ep.value for ep in entry_points(group="pytest11")}
    assert installed.get("arh") == "agent_reliability_harness.pytest_plugin", (
        "reinstall the package (pip install -e .) to register the entry point"
    )


def test_the_package_never_imports_pytest() -> None:
    # everything but the plugin must work where pytest is not installed
    code = (
        "import sys\n"
        "import agent_reliability_harness as arh, agent_reliability_harness.cli\n"
        "import agent_reliability_harness.record, agent_reliability_harness.monitor\n"
        "arh.Monitor, arh.Recorder, arh.validate_trace\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pytest', '_pytest')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "[]"


def test_a_violation_fails_the_test_with_every_finding(suite: pytest.Pytester) -> None:
    result = _run(suite, "--arh-policy", "policy.json")
    result.assert_outcomes(passed=2, failed=1)
    # The message, line for line as format_failure builds it: the verdict, then each finding
    # with expected (-) and observed (+) under it. The score by hand: schema applies (2 calls,
    # both fine: 100, weight 30), flow applies (one group of identical side-effect calls, which
    # failed: 0, weight 20), nothing else does: (30 * 100 + 20 * 0) / 50 = 60.
    result.stdout.fnmatch_lines(
        [
            (
                "E       AssertionError: trace 'twice' does not pass policy 'pay-policy': "
                "1 error finding and score 60.00 is below 70"
            ),
            (
                "E         error  ARH-FLW-003 at step 's2': duplicate side effect: tool 'pay' was "
                "called again with identical arguments after step 's1' succeeded"
            ),
            "E           - expected: one successful call per distinct set of arguments",
            "E           + observed: 2 calls with identical arguments",
            "*test_agent.py:*: AssertionError",
        ]
    )
    # the helper's own frames are hidden: the traceback ends in the test
    assert "pytest_plugin.py" not in result.stdout.str()


def test_the_marker_selects_the_agent_tests(suite: pytest.Pytester) -> None:
    selected = _run(suite, "--arh-policy", "policy.json", "-m", "agent_eval")
    selected.assert_outcomes(passed=1, failed=1, deselected=1)
    others = _run(suite, "--arh-policy", "policy.json", "-m", "not agent_eval")
    others.assert_outcomes(passed=1, deselected=2)
    markers = _run(suite, "--markers")
    markers.stdout.fnmatch_lines(["@pytest.mark.agent_eval(policy=None): *"])
    strict = _run(suite, "--strict-markers", "--arh-policy", "policy.json")
    strict.assert_outcomes(passed=2, failed=1)  # the marker is registered


def test_without_a_policy_the_agent_tests_fail_and_say_why(suite: pytest.Pytester) -> None:
    result = _run(suite)
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["*arh: no policy for this test: pass --arh-policy PATH*"])


def test_a_bad_policy_stops_the_session(suite: pytest.Pytester) -> None:
    suite.makefile(".json", broken='{"policy_id": "x", "budgets": {"max_tokens": 5}}')
    result = _run(suite, "--arh-policy", "broken.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*arh: invalid policy: *broken.json: /budgets/max_tokens: unknown key 'max_tokens'*"]
    )
    missing = _run(suite, "--arh-policy", "missing.json")
    assert missing.ret == pytest.ExitCode.USAGE_ERROR
    missing.stderr.fnmatch_lines(["*arh: invalid policy: *missing.json: cannot read: *"])


def test_the_policy_can_come_from_the_ini_file(suite: pytest.Pytester) -> None:
    suite.makeini("[pytest]\narh_policy = policy.json\n")
    sub = suite.mkdir("sub")
    result = _run(suite, sub.parent)  # relative to the rootdir, wherever pytest starts
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["arh: policy *policy.json"])  # the report header


def _two_policies(pytester: pytest.Pytester) -> None:
    """policy.json (POLICY) and policies/strict.json, which forbids the tool pay."""
    pytester.makefile(".json", policy=json.dumps(POLICY))
    (pytester.path / "policies").mkdir()
    (pytester.path / "policies" / "strict.json").write_text(
        json.dumps({"policy_id": "strict", "sequence": {"forbidden_tools": ["pay"]}})
    )


def test_the_fixture_and_a_marker_with_its_own_policy(pytester: pytest.Pytester) -> None:
    _two_policies(pytester)
    pytester.makepyfile(
        test_policies="""
import pytest
from agent_reliability_harness.pytest_plugin import assert_trace_passes

def test_default(arh_policy):
    assert arh_policy.policy_id == "pay-policy"

@pytest.mark.agent_eval(policy="policies/strict.json")
def test_marked(arh_policy):
    assert arh_policy.policy_id == "strict"
    trace = {"trace_id": "t", "agent_name": "", "workflow": "",
             "steps": [{"step_id": "s1", "type": "tool_call", "tool_name": "pay"}]}
    with pytest.raises(AssertionError, match="ARH-SEQ-002 at step 's1': forbidden tool"):
        assert_trace_passes(trace)  # the marker's policy, not --arh-policy
"""
    )
    _run(pytester, "--arh-policy", "policy.json").assert_outcomes(passed=2)


def test_a_bare_marker_keeps_the_policy_of_the_module_or_class(
    pytester: pytest.Pytester,
) -> None:
    # the closest marker was read even when it named no policy: "no policy for this test"
    _two_policies(pytester)
    pytester.makepyfile(
        test_layers="""
import pytest
pytestmark = pytest.mark.agent_eval(policy="policies/strict.json")

def test_module(arh_policy):
    assert arh_policy.policy_id == "strict"

@pytest.mark.agent_eval
def test_bare_marker(arh_policy):
    assert arh_policy.policy_id == "strict"

@pytest.mark.agent_eval("policy.json")
class TestOwnPolicy:
    @pytest.mark.agent_eval
    def test_bare_marker_in_a_class(self, arh_policy):
        assert arh_policy.policy_id != "strict"
"""
    )
    result = _run(pytester)
    result.assert_outcomes(passed=3)


def test_the_marker_names_the_policy_as_its_one_argument_too(pytester: pytest.Pytester) -> None:
    _two_policies(pytester)
    pytester.makepyfile(
        test_markers="""
import pytest

@pytest.mark.agent_eval("policies/strict.json")
def test_positional(arh_policy):
    assert arh_policy.policy_id == "strict"

@pytest.mark.agent_eval(policy=5)
def test_not_a_path(arh_policy):
    pass

@pytest.mark.agent_eval("policies/strict.json", policy="policy.json")
def test_two_policies(arh_policy):
    pass

@pytest.mark.agent_eval(polcy="policies/strict.json")
def test_misspelled(arh_policy):
    pass
"""
    )
    result = _run(pytester, "--arh-policy", "policy.json")
    result.assert_outcomes(passed=1, errors=3)  # the fixture fails: an error at setup
    misused = "*arh: @pytest.mark.agent_eval takes at most one policy path, as its one argument or"
    result.stdout.fnmatch_lines_random(
        [
            "*arh: the policy of @pytest.mark.agent_eval must be a path (a str or os.PathLike)*",
            misused + " as policy=PATH, got ('policies/strict.json', policy='policy.json')",
            misused + " as policy=PATH, got (polcy='policies/strict.json')",
        ]
    )
    result.stdout.fnmatch_lines(["*must be a path (a str or os.PathLike), got int"])
    assert "TypeError" not in result.stdout.str()


def test_a_trace_whose_identity_a_report_cannot_hold_is_refused(tmp_path: Path) -> None:
    from agent_reliability_harness.model.policy import Policy
    from agent_reliability_harness.model.trace import Trace
    from agent_reliability_harness.pytest_plugin import assert_trace_passes

    policy = Policy.from_dict(POLICY)
    # a Trace built in code is not parsed; arh compare and arh stats would reject its report
    identities: list[tuple[Any, Any, str]] = [
        ("", "", "trace_id must be a non-empty string"),
        (5, "", "trace_id must be a non-empty string"),
        ("t", None, "agent_name must be a string, got NoneType"),
    ]
    for trace_id, agent_name, message in identities:
        with pytest.raises(UsageError, match=message):
            assert_trace_passes(Trace(trace_id, agent_name, "", ()), policy)


def test_reports_are_written_for_arh_compare(
    suite: pytest.Pytester, arh: Callable[..., Run]
) -> None:
    result = _run(suite, "--arh-policy", "policy.json", "--arh-report-dir", "base")
    result.stdout.fnmatch_lines(["arh: report of 2 trace(s) written to *pay-policy.json"])
    baseline = suite.path / "base" / "pay-policy.json"
    run = RunReport.from_dict(json.loads(baseline.read_text(encoding="utf-8")))
    assert [(r.trace_id, r.passed) for r in run.reports] == [("once", True), ("twice", False)]
    assert run.policy_id == "pay-policy"
    assert round(run.reports[1].score, 2) == 60.0  # derived in the first test
    # the same suite again: nothing regressed
    _run(suite, "--arh-policy", "policy.json", "--arh-report-dir", "same")
    same = arh(
        "compare", "--baseline", baseline, "--candidate", suite.path / "same" / "pay-policy.json"
    )
    assert same.status == 0, same.out + same.err
    # the agent starts paying twice in the first test too: a regression the gate catches
    suite.makepyfile(
        test_agent=TESTS.replace('run("once", ["ann"])', 'run("once", ["ann", "ann"])')
    )
    _run(suite, "--arh-policy", "policy.json", "--arh-report-dir", "worse")
    worse = arh(
        "compare", "--baseline", baseline, "--candidate", suite.path / "worse" / "pay-policy.json"
    )
    assert worse.status == 1
    assert "PASS->FAIL  once" in worse.out


def test_a_trace_id_checked_twice_is_reported_once(pytester: pytest.Pytester) -> None:
    pytester.makefile(".json", policy=json.dumps(POLICY))
    pytester.makepyfile(
        test_twice="""
from agent_reliability_harness.pytest_plugin import assert_trace_passes

TRACE = {"trace_id": "same", "agent_name": "", "workflow": "", "steps": []}

def test_a():
    assert_trace_passes(TRACE)

def test_b():
    assert_trace_passes(TRACE)
"""
    )
    result = _run(pytester, "--arh-policy", "policy.json", "--arh-report-dir", "out")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        ["arh: trace ids checked more than once (the report keeps the last check): same"]
    )
    report = json.loads((pytester.path / "out" / "pay-policy.json").read_text(encoding="utf-8"))
    assert [r["trace_id"] for r in report["reports"]] == ["same"]


def test_no_report_when_nothing_was_checked(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = _run(pytester, "--arh-report-dir", "out")
    result.stdout.fnmatch_lines(["arh: no trace was checked, so no report was written"])
    assert not (pytester.path / "out").exists()


def test_a_report_that_cannot_be_written_fails_the_session(suite: pytest.Pytester) -> None:
    (suite.path / "blocker").write_text("a file where the directory should be")
    result = _run(suite, "--arh-policy", "policy.json", "-k", "once", "--arh-report-dir", "blocker")
    result.assert_outcomes(passed=1, deselected=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["arh: cannot write the report: *"])


def test_assert_trace_passes_takes_every_form_of_trace_and_policy(tmp_path: Path) -> None:
    from agent_reliability_harness.model.policy import Policy
    from agent_reliability_harness.model.trace import Trace
    from agent_reliability_harness.monitor import Monitor
    from agent_reliability_harness.pytest_plugin import assert_trace_passes
    from agent_reliability_harness.record import Recorder

    data = {
        "trace_id": "t1",
        "agent_name": "",
        "workflow": "",
        "steps": [
            {"step_id": "s1", "type": "tool_call", "tool_name": "pay", "arguments": {"to": "a"}}
        ],
    }
    trace_file = tmp_path / "t1.json"
    trace_file.write_text(json.dumps(data))
    policy_file = tmp_path / "policy.json"
    policy_file.write_text(json.dumps(POLICY))
    policy = Policy.from_dict(POLICY)
    recorder = Recorder("t1", clock=None)
    recorder.tool_call("pay", {"to": "a"})
    monitor = Monitor(policy, trace_id="t1")
    monitor.observe(data["steps"][0])
    for trace in (Trace.from_dict(data), data, trace_file, str(trace_file), recorder, monitor):
        for given in (policy, POLICY, policy_file):
            report = assert_trace_passes(trace, given)
            assert (report.trace_id, report.passed, report.policy_id) == ("t1", True, "pay-policy")
    # wrong arguments are a UsageError, as everywhere in the API
    with pytest.raises(UsageError, match="needs a Trace"):
        assert_trace_passes(42, policy)
    with pytest.raises(UsageError, match="the policy must be"):
        assert_trace_passes(data, 42)
    # a failing score without an error: an uncited grounded answer (coverage 0, so the only
    # applicable category, grounding, scores 0) with a warning
    uncited = {
        "trace_id": "g1",
        "agent_name": "",
        "workflow": "",
        "steps": [
            {"step_id": "s1", "type": "model_response", "text": "x", "requires_grounding": True}
        ],
    }
    with pytest.raises(AssertionError) as failed:
        assert_trace_passes(uncited, {"policy_id": "g"})
    assert str(failed.value).splitlines() == [
        "trace 'g1' does not pass policy 'g': score 0.00 is below 70",
        (
            "  warning  ARH-GRD-001 at step 's1': model_response requires grounding but has no "
            "citations"
        ),
        "    - expected: at least one citation",
        "    + observed: no citations",
    ]
    assert assert_trace_passes(uncited, {"policy_id": "g"}, fail_under=0).score == 0.0


def test_assert_trace_passes_reads_the_one_trace_of_a_trace_file(tmp_path: Path) -> None:
    from agent_reliability_harness.errors import InputError
    from agent_reliability_harness.pytest_plugin import assert_trace_passes

    def trace(trace_id: str) -> str:
        return json.dumps({"trace_id": trace_id, "agent_name": "", "workflow": "", "steps": []})

    one = tmp_path / "one.jsonl"
    one.write_text(trace("t1") + "\n", encoding="utf-8")
    assert assert_trace_passes(one, POLICY).trace_id == "t1"
    two = tmp_path / "two.ndjson"
    two.write_text(trace("t1") + "\n" + trace("t2") + "\n", encoding="utf-8")
    with pytest.raises(UsageError) as several:
        assert_trace_passes(two, POLICY)
    assert str(several.value) == (
        f"{two.as_posix()} holds 2 traces; assert_trace_passes checks one trace (call it for "
        "each, or run arh validate on the file)"
    )
    # errors name the file, and the line of a JSON Lines record
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"trace_id": "t1", "agent_name": "", "workflow": "", "steps": 3}\n', "utf-8")
    with pytest.raises(InputError) as wrong:
        assert_trace_passes(bad, POLICY)
    assert str(wrong.value) == f"{bad.as_posix()}:1: /steps: must be an array of steps, got number"
    broken = tmp_path / "broken.json"
    broken.write_text('{"trace_id": "t1", "steps": []}', encoding="utf-8")
    with pytest.raises(InputError) as missing:
        assert_trace_passes(broken, POLICY)
    assert str(missing.value).startswith(f"{broken.as_posix()}: ")


def test_a_score_just_below_the_threshold_shows_enough_decimals() -> None:
    from agent_reliability_harness.model.report import TraceReport
    from agent_reliability_harness.pytest_plugin import format_failure

    report = TraceReport("t", "a", "w", "p", 69.999, False, 0.0, 0.0, None, ())
    assert format_failure(report).splitlines() == [
        "trace 't' does not pass policy 'p': score 69.999 is below 70"
    ]
    # 66.666... (2 of 3 weights) against 66.67: 66.67 would read as not below it
    report = TraceReport("t", "a", "w", "p", 200 / 3, False, 0.0, 0.0, None, ())
    assert format_failure(report, 66.67).startswith(
        "trace 't' does not pass policy 'p': score 66.667 is below 66.67"
    )


def test_a_marker_policy_that_cannot_be_read_is_one_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_missing="""
import pytest

@pytest.mark.agent_eval(policy="nope.json")
def test_missing(arh_policy):
    pass
"""
    )
    result = _run(pytester)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*arh: invalid policy: *nope.json: cannot read: *"])
    assert "During handling of the above exception" not in result.stdout.str()


def test_assert_trace_passes_outside_pytest_needs_a_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_reliability_harness import pytest_plugin

    monkeypatch.setattr(pytest_plugin, "_SESSIONS", [])  # as in a script: no pytest session
    trace = {"trace_id": "t1", "agent_name": "", "workflow": "", "steps": []}
    with pytest.raises(UsageError) as raised:
        pytest_plugin.assert_trace_passes(trace)
    assert str(raised.value) == (
        "assert_trace_passes needs a policy: pass one, or run under pytest with the arh plugin "
        "(not -p no:arh) and --arh-policy or @pytest.mark.agent_eval(policy=...)"
    )


def test_the_example_suite_runs_under_the_plugin(pytester: pytest.Pytester) -> None:
    for name in ("refund_agent.py", "refund_policy.json", "test_refund_agent.py"):
        shutil.copy(EXAMPLES / name, pytester.path / name)
    result = _run(pytester, "-m", "agent_eval", "--arh-report-dir", "reports")
    result.assert_outcomes(passed=3)
    report = json.loads((pytester.path / "reports" / "refund-agent.json").read_text())
    assert [(r["trace_id"], r["passed"]) for r in report["reports"]] == [
        ("refund-once", True),
        ("refund-twice", False),
        ("refund-guarded", True),
    ]


def test_the_rule_selection_of_arh_validate_applies_to_every_check(
    suite: pytest.Pytester,
) -> None:
    # test_pays_twice fails by ARH-FLW-003 alone: switched off, lowered or left out, it passes
    for option in (
        ["--arh-ignore", "ARH-FLW-003"],
        ["--arh-severity", "ARH-FLW=warning"],
        ["--arh-select", "ARH-SCH,ARH-BUD"],
    ):
        result = _run(suite, "--arh-policy", "policy.json", *option)
        result.assert_outcomes(passed=3)
    # the header says what was changed, as arh validate's report does
    shown = _run(suite, "--arh-policy", "policy.json", "--arh-severity", "ARH-FLW=warning")
    shown.stdout.fnmatch_lines(["arh: rules switched off or changed: ARH-FLW-* warning"])
    # a selection that keeps the rule fails the test as before
    kept = _run(suite, "--arh-policy", "policy.json", "--arh-select", "ARH-FLW")
    kept.assert_outcomes(passed=2, failed=1)


def test_the_rule_selection_can_come_from_the_ini_file(suite: pytest.Pytester) -> None:
    suite.makeini("[pytest]\narh_policy = policy.json\narh_ignore = ARH-FLW-003 ARH-SCH\n")
    _run(suite).assert_outcomes(passed=3)
    # the command line's value replaces the ini file's
    _run(suite, "--arh-ignore", "ARH-SCH").assert_outcomes(passed=2, failed=1)


def test_a_bad_rule_code_stops_the_session(suite: pytest.Pytester) -> None:
    result = _run(suite, "--arh-policy", "policy.json", "--arh-ignore", "ARH-FLX")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*arh: unknown rule 'ARH-FLX' (did you mean ARH-FLW?)*"])


# -- transcripts ----------------------------------------------------------------------------------


def _anthropic_payments(times: int) -> dict[str, Any]:
    """An Anthropic messages transcript that pays ann ``times`` times, then answers."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "pay ann"}]
    for i in range(1, times + 1):
        call = {"type": "tool_use", "id": f"toolu_{i}", "name": "pay", "input": {"to": "ann"}}
        result = {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": "paid"}
        messages += [
            {"role": "assistant", "content": [call]},
            {"role": "user", "content": [result]},
        ]
    messages.append({"role": "assistant", "content": "done"})
    return {"trace_id": "pay-run", "model": "claude-x", "messages": messages}


def test_assert_trace_passes_reads_transcripts(tmp_path: Path) -> None:
    from agent_reliability_harness.errors import InputError
    from agent_reliability_harness.pytest_plugin import assert_trace_passes

    # converted as arh validate converts it: the provider's call ids are the step ids
    report = assert_trace_passes(_anthropic_payments(1), POLICY)
    assert (report.trace_id, report.agent_name, report.passed) == ("pay-run", "claude-x", True)
    with pytest.raises(AssertionError) as failed:
        assert_trace_passes(_anthropic_payments(2), POLICY)
    # the same finding, message and score as for the recorded run of the first test
    assert str(failed.value).splitlines()[:2] == [
        (
            "trace 'pay-run' does not pass policy 'pay-policy': 1 error finding and score 60.00 "
            "is below 70"
        ),
        (
            "  error  ARH-FLW-003 at step 'toolu_2': duplicate side effect: tool 'pay' was "
            "called again with identical arguments after step 'toolu_1' succeeded"
        ),
    ]
    # an OpenAI chat message list, bare: one transcript, named as a record without an id is
    chat = [
        {"role": "user", "content": "pay ann"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "pay", "arguments": "{}"}}
            ],
        },
    ]
    with pytest.raises(AssertionError) as missing:
        assert_trace_passes(chat, POLICY)
    assert str(missing.value).splitlines()[:2] == [
        # schema 0 (weight 30), flow 100 (weight 20, one payment): 2000 / 50
        (
            "trace 'transcript' does not pass policy 'pay-policy': 1 error finding and score "
            "40.00 is below 70"
        ),
        "  error  ARH-SCH-003 at step 'c1': call to 'pay' is missing the required argument 'to'",
    ]
    # a transcript file, and the options of arh validate
    log = tmp_path / "log.json"
    log.write_text(json.dumps({"run": {"id": 7}, "log": chat[:1]}), encoding="utf-8")
    report = assert_trace_passes(log, POLICY, messages_at="/log", trace_id_at="/run/id")
    assert (report.trace_id, report.agent_name) == ("7", "openai-chat-agent")
    assert assert_trace_passes(log, POLICY, messages_at="/log").trace_id == "log"  # its name
    with pytest.raises(InputError) as wrong:
        assert_trace_passes(log, POLICY, format="anthropic-messages", messages_at="/run")
    assert str(wrong.value) == (
        f"{log.as_posix()}: /run: expected the message list here, got object"
    )
    # a log of several runs is not one trace
    runs = ROOT / "docs" / "examples" / "adapters" / "tau_style_runs.json"
    with pytest.raises(UsageError, match=r"tau_style_runs.json holds 2 traces; assert_trace_pa"):
        assert_trace_passes(runs, POLICY)
    with pytest.raises(UsageError, match=r"^<document> holds 2 traces; assert_trace_passes"):
        assert_trace_passes(
            [_anthropic_payments(1), {**_anthropic_payments(1), "trace_id": "b"}], POLICY
        )


def test_the_plugin_reports_transcripts_like_recorded_runs(pytester: pytest.Pytester) -> None:
    pytester.makefile(".json", policy=json.dumps(POLICY))
    pytester.makefile(".json", run_once=json.dumps(_anthropic_payments(1)))
    pytester.makepyfile(
        test_logs="""
import json, pytest
from agent_reliability_harness.pytest_plugin import assert_trace_passes

@pytest.mark.agent_eval
def test_the_logged_run():
    assert_trace_passes("run_once.json")
"""
    )
    result = _run(pytester, "--arh-policy", "policy.json", "--arh-report-dir", "out")
    result.assert_outcomes(passed=1)
    report = json.loads((pytester.path / "out" / "pay-policy.json").read_text(encoding="utf-8"))
    assert [(r["trace_id"], r["agent_name"], r["passed"]) for r in report["reports"]] == [
        ("pay-run", "claude-x", True)
    ]
