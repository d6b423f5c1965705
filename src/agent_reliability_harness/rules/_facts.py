"""What every category needs to know about a trace, computed in one pass over its steps."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any, Final

from agent_reliability_harness._decode import fits_in_text
from agent_reliability_harness.errors import InputError
from agent_reliability_harness.model.fidelity import missing_fields
from agent_reliability_harness.model.step_refs import declared_step_ids, step_refs
from agent_reliability_harness.model.trace import Step, Trace

__all__ = [
    "COST_DECIMALS",
    "LATENCY_DECIMALS",
    "TraceFacts",
    "arguments_key",
    "sum_too_large",
    "tokens_too_long",
]

LATENCY_DECIMALS: Final = 6
COST_DECIMALS: Final = 10


def _non_json(value: object) -> str:
    return f"<non-json:{type(value).__name__}>"


def _key_encoder() -> Callable[[Any], str]:
    """``json.dumps(value, sort_keys=True, separators=(",", ":"), default=_non_json)``, with one
    C encoder made once (``JSONEncoder.encode`` makes a new one at every call, a quarter of the
    time of a small key). It does not look for values that contain themselves: the validator
    and the monitor refuse those before any rule runs."""
    if c_make_encoder is None:  # pragma: no cover - an interpreter without the C accelerator
        encoder = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=_non_json)
        return encoder.encode
    chunks = c_make_encoder(
        None, _non_json, encode_basestring_ascii, None, ":", ",", True, False, True
    )
    join = "".join

    def encode(value: Any) -> str:
        return join(chunks(value, 0))

    return encode


_encode: Final = _key_encoder()


def arguments_key(arguments: Any, at: int = 0) -> str:
    """What makes two calls of one tool identical: their arguments as JSON with keys sorted.
    An integer too long for Python to write (a step built in code; JSON files cannot hold one)
    is an InputError at the arguments of the step at ``at``."""
    try:
        return _encode(arguments or {})
    except ValueError:
        raise InputError(
            "an argument holds an integer too long to compare with other calls' (over 4,300 "
            "digits)",
            pointer=f"/steps/{at}/arguments",
        ) from None


class TraceFacts:
    """Indexes of one trace, built once and shared by all rule categories.

    Positions are indexes into ``steps``. ``calls_by_tool`` lists, per tool name, the positions
    of its tool_call steps in order; its keys are in order of each tool's first call.
    ``agent_steps`` lists the positions of the steps that are not ``user_message``: user turns
    are kept in the trace but no rule reads them, and they add nothing to the totals.
    ``status_read``: the policy's ``tool_failures`` read whether the trace's calls failed, so
    ``tool_status`` is not missing whatever the source could record.
    ``step_ids`` is where a converted trace's step ids came from (``model.step_refs``), or None.
    """

    __slots__ = (
        "_argument_keys",
        "_missing",
        "_status_read",
        "_step_refs",
        "agent_steps",
        "calls_by_tool",
        "cost_total",
        "grounded",
        "has_cost",
        "has_latency",
        "latency_total",
        "named_calls",
        "step_ids",
        "steps",
        "tokens_total",
        "tool_calls",
        "trace",
    )

    def __init__(self, trace: Trace, *, status_read: bool = False) -> None:
        self.trace = trace
        self._status_read = status_read
        self.steps: tuple[Step, ...] = trace.steps
        agent_steps: list[int] = []
        tool_calls: list[int] = []
        named_calls: list[int] = []
        calls_by_tool: dict[str, list[int]] = {}
        grounded: list[int] = []
        latencies: list[float] = []
        costs: list[float] = []
        tokens: int | None = None
        for index, step in enumerate(self.steps):
            kind = step.type
            if kind == "user_message":
                continue
            agent_steps.append(index)
            if kind == "tool_call":
                tool_calls.append(index)
                name = step.tool_name
                if name:
                    named_calls.append(index)
                    positions = calls_by_tool.get(name)
                    if positions is None:
                        calls_by_tool[name] = [index]
                    else:
                        positions.append(index)
            elif step.requires_grounding:  # a model_response
                grounded.append(index)
            if step.latency_ms is not None:
                latencies.append(step.latency_ms)
            if step.cost_usd is not None:
                costs.append(step.cost_usd)
            if step.input_tokens is not None or step.output_tokens is not None:
                tokens = (tokens or 0) + (step.input_tokens or 0) + (step.output_tokens or 0)
        self.agent_steps = agent_steps
        self.tool_calls = tool_calls
        self.named_calls = named_calls
        self.calls_by_tool = calls_by_tool
        self.grounded = grounded
        self.has_latency = bool(latencies)
        self.has_cost = bool(costs)
        # Exact sums, rounded to a documented precision so that decimal inputs add up as written
        # (0.1 + 0.2 is 0.3 here) and reports do not print binary noise.
        self.latency_total = round(_total(latencies, "latency_ms"), LATENCY_DECIMALS)
        self.cost_total = round(_total(costs, "cost_usd"), COST_DECIMALS)
        if tokens is not None and not fits_in_text(tokens):
            raise tokens_too_long("/steps")
        self.tokens_total = tokens
        self._argument_keys: dict[int, str] = {}
        self._missing: frozenset[str] | None = None
        self.step_ids = declared_step_ids(trace)
        self._step_refs: list[str] | None = None

    @property
    def missing(self) -> frozenset[str]:
        """The fields the trace's source did not provide (``fidelity.missing_fields``), found
        once for the rules and the report: empty at once for a trace that declares none."""
        if self._missing is None:
            missing = missing_fields(self.trace)
            if self._status_read and "tool_status" in missing:
                missing = missing - {"tool_status"}
            self._missing = missing
        return self._missing

    def arguments_key(self, index: int) -> str:
        """:func:`arguments_key` of the step at ``index``, made once for all the rules."""
        key = self._argument_keys.get(index)
        if key is None:
            key = self._argument_keys[index] = arguments_key(self.steps[index].arguments, index)
        return key

    def step_id(self, index: int) -> str:
        return self.steps[index].step_id

    @property
    def step_refs(self) -> list[str]:
        """The stable reference of each step (``model.step_refs``), made once."""
        if self._step_refs is None:
            self._step_refs = step_refs(self.steps)
        return self._step_refs

    def step_name(self, index: int) -> str:
        """What names the step at ``index`` in a finding's subject: its id, or its stable
        reference in a trace whose step ids change from one recording to the next."""
        return self.steps[index].step_id if self.step_ids is None else self.step_refs[index]


def _total(values: list[float], key: str) -> float:
    """The exact sum of one metric; each value is finite, but the sum may not fit in a float."""
    try:
        return math.fsum(values)
    except OverflowError:
        raise sum_too_large(key, "/steps") from None


def sum_too_large(key: str, pointer: str) -> InputError:
    """The error of a ``key`` total (latency_ms, cost_usd) past the largest float, offline and
    in the Monitor."""
    return InputError(
        f"the steps' {key} values add up to more than the largest number a report can hold",
        pointer=pointer,
    )


def tokens_too_long(pointer: str) -> InputError:
    """The error of a token total with more digits than Python writes, offline and in the
    Monitor."""
    return InputError(
        "the steps' token counts add up to a number too long to report", pointer=pointer
    )
