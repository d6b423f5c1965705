"""Data models: traces, policies and reports, each with strict ``from_dict`` parsing."""

from agent_reliability_harness.model.policy import (
    ArgSpec,
    Budgets,
    Completion,
    ErrorHandling,
    Grounding,
    Policy,
    Sequence,
    ToolSchema,
    UnsafePattern,
)
from agent_reliability_harness.model.report import CategoryResult, Finding, RunReport, TraceReport
from agent_reliability_harness.model.trace import Step, Trace

__all__ = [
    "ArgSpec",
    "Budgets",
    "CategoryResult",
    "Completion",
    "ErrorHandling",
    "Finding",
    "Grounding",
    "Policy",
    "RunReport",
    "Sequence",
    "Step",
    "ToolSchema",
    "Trace",
    "TraceReport",
    "UnsafePattern",
]
