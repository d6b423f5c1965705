"""The refund agent of refund_agent.py, tested with arh's pytest plugin.

    pytest examples/test_refund_agent.py -m agent_eval --arh-report-dir reports/

Each test runs the agent with a fresh recorder and checks the trace against refund_policy.json,
which the agent_eval marker names (a path relative to this file).
"""

from __future__ import annotations

import pytest
from refund_agent import FakeLLM, Shop, run_agent

from agent_reliability_harness.model.policy import Policy
from agent_reliability_harness.pytest_plugin import assert_trace_passes
from agent_reliability_harness.record import Recorder

pytestmark = pytest.mark.agent_eval(policy="refund_policy.json")

REQUEST = "Please refund order A1001, it arrived broken."


def test_refund_is_issued_once(arh_policy: Policy) -> None:
    shop = Shop()
    rec = Recorder("refund-once", agent_name="refund-agent", workflow="refunds")
    answer = run_agent(REQUEST, FakeLLM(), shop, rec)
    assert answer == "Refunded $42.50 for order A1001."
    assert shop.refunds == [("A1001", 42.5)]
    assert_trace_passes(rec, arh_policy)


def test_repeated_refund_fails_the_policy(arh_policy: Policy) -> None:
    shop = Shop()
    rec = Recorder("refund-twice", agent_name="refund-agent", workflow="refunds")
    run_agent(REQUEST, FakeLLM(repeat_refund=True), shop, rec)
    assert len(shop.refunds) == 2  # without a guard the customer is paid twice...
    with pytest.raises(AssertionError, match=r"ARH-FLW-003 at step 's4'"):
        assert_trace_passes(rec, arh_policy)  # ...and the trace says so


def test_guard_blocks_the_repeated_refund(arh_policy: Policy) -> None:
    shop = Shop()
    rec = Recorder(
        "refund-guarded", agent_name="refund-agent", workflow="refunds", guard=arh_policy
    )
    run_agent(REQUEST, FakeLLM(repeat_refund=True), shop, rec)
    assert shop.refunds == [("A1001", 42.5)]  # the second issue_refund never ran
    assert [b["rule_ids"] for b in rec.trace().metadata["blocked_calls"]] == [["ARH-FLW-003"]]
    assert_trace_passes(rec)  # no policy given: the marker's
