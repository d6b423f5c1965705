"""arh: check what tool-using AI agents did against a declarative policy.

The public API is small::

    from agent_reliability_harness import Policy, Trace, validate_trace

    report = validate_trace(Trace.from_dict(trace_json), Policy.from_dict(policy_json))
    report.passed, report.score, report.findings

``load_traces`` reads trace and transcript files as ``arh validate`` does, ``Recorder`` records a
trace from an agent loop and ``Monitor`` applies a policy while the agent runs
(docs/python-api.md); the pytest plugin lives in ``pytest_plugin``, loaded by pytest only.

Names are imported on first use so that ``arh --version`` does not load the whole package.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from agent_reliability_harness._version import __version__

if TYPE_CHECKING:
    from agent_reliability_harness.engine import Validator, validate_trace
    from agent_reliability_harness.errors import ArhError, InputError, UsageError
    from agent_reliability_harness.model.answers import Expectations
    from agent_reliability_harness.model.policy import Policy
    from agent_reliability_harness.model.report import (
        CategoryResult,
        Finding,
        RunReport,
        TraceReport,
    )
    from agent_reliability_harness.model.trace import Step, Trace
    from agent_reliability_harness.monitor import BlockedCallError, Monitor
    from agent_reliability_harness.record import Recorder
    from agent_reliability_harness.rules.registry import RULES, Rule
    from agent_reliability_harness.runner import load_expectations, load_traces


__all__ = [
    "RULES",
    "ArhError",
    "BlockedCallError",
    "CategoryResult",
    "Expectations",
    "Finding",
    "InputError",
    "Monitor",
    "Policy",
    "Recorder",
    "Rule",
    "RunReport",
    "Step",
    "Trace",
    "TraceReport",
    "UsageError",
    "Validator",
    "__version__",
    "load_expectations",
    "load_traces",
    "validate_trace",
]

_HOMES = {
    "validate_trace": "engine",
    "Validator": "engine",
    "ArhError": "errors",
    "InputError": "errors",
    "UsageError": "errors",
    "Policy": "model.policy",
    "Expectations": "model.answers",
    "CategoryResult": "model.report",
    "Finding": "model.report",
    "RunReport": "model.report",
    "TraceReport": "model.report",
    "Step": "model.trace",
    "Trace": "model.trace",
    "RULES": "rules.registry",
    "Rule": "rules.registry",
    "Monitor": "monitor",
    "BlockedCallError": "monitor",
    "Recorder": "record",
    "load_traces": "runner",
    "load_expectations": "runner",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
