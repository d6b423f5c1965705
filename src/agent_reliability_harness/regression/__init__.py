"""Regression comparison of a candidate run against a baseline, and the CI gate."""

from agent_reliability_harness.regression.compare import CompareResult, TraceDelta, compare_reports
from agent_reliability_harness.regression.gate import FAIL_ON_MODES, GateResult, evaluate_gate

__all__ = [
    "FAIL_ON_MODES",
    "CompareResult",
    "GateResult",
    "TraceDelta",
    "compare_reports",
    "evaluate_gate",
]
