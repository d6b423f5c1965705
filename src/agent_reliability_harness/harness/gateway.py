"""The tool gateway: every call an agent makes goes through it (docs/running-agents.md).

For each call, in this order:

1. **caps**: a per-task cap already exceeded (steps recorded, tokens, cost, wall time) raises
   :class:`CapExceeded`, and so does every later call;
2. **permissions**: a tool the task does not declare, or that the policy's ``allowed_tools``
   does not list (unless ``allow_unlisted_tools``), is refused;
3. **the monitor**: the policy checks the call before it runs (forbidden tools, argument
   contracts, budgets, confirmation, ...), as the runtime guard does; an error blocks it.
   Refused and blocked calls are not steps: they are listed under ``blocked_calls`` in the
   trace's metadata, as the recorder's guard lists them, and raise :class:`ToolCallError`;
4. **argument validation** against the tool's ``parameters`` (the JSON Schema subset of
   ``model/_jsonschema.py``): arguments that do not conform are recorded as a failed tool call
   (status ``error``, ``invalid arguments: ...``), as a real tool's API answers a bad request;
5. **the simulated tool**: the first fixture response that matches; a transient error is
   retried with backoff (the backoff is simulated: it is added to the recorded latency of the
   retry, never slept), up to :data:`MAX_ATTEMPTS` attempts in all;
6. **result verification**: an output that does not satisfy the tool's ``returns`` schema is a
   corrupt result, recorded as a failed attempt and retried like a transient error.

Each attempt is one recorded step. Latency and cost are the fixture's, so traces do not depend on
the machine; the only measured quantity is the wall time of the task (its cap).

Ablations switch a feature off: ``retry=False`` (a transient error or a corrupt result fails the
call at once), ``verify=False`` (outputs are not checked), ``validate_arguments=False``
(arguments go to the tool unchecked). The monitor always stays.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from agent_reliability_harness.harness.protocol import CapExceeded, ToolCallError
from agent_reliability_harness.harness.task import Response, Task, ToolSpec
from agent_reliability_harness.model._jsonschema import json_equal
from agent_reliability_harness.model.trace import Trace
from agent_reliability_harness.monitor import BlockedCallError
from agent_reliability_harness.record import Recorder, json_value

__all__ = [
    "ABLATIONS",
    "BACKOFF_MS",
    "MAX_ATTEMPTS",
    "NO_FIXTURE",
    "Gateway",
    "GatewayOptions",
    "Prices",
]

MAX_ATTEMPTS: Final = 3  # one call and two retries
BACKOFF_MS: Final = 200.0  # before the first retry; doubled before each next one
NO_FIXTURE: Final = "no fixture for these arguments"
ABLATIONS: Final = ("retry", "verify", "validate_arguments")


@dataclass(frozen=True, slots=True)
class Prices:
    """What model tokens cost, in US dollars per million tokens."""

    name: str = "default"
    input_usd_per_mtok: float = 0.0
    output_usd_per_mtok: float = 0.0

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        usd = input_tokens * self.input_usd_per_mtok + output_tokens * self.output_usd_per_mtok
        return round(usd / 1_000_000, 9)


@dataclass(frozen=True, slots=True)
class GatewayOptions:
    """The gateway's features (each ablation turns one off) and the price table."""

    retry: bool = True
    verify: bool = True
    validate_arguments: bool = True
    prices: Prices = Prices()

    @classmethod
    def ablated(cls, ablations: tuple[str, ...], prices: Prices = Prices()) -> GatewayOptions:
        return cls(
            retry="retry" not in ablations,
            verify="verify" not in ablations,
            validate_arguments="validate_arguments" not in ablations,
            prices=prices,
        )


DEFAULT_OPTIONS: Final = GatewayOptions()


def _matches(response: Response, arguments: Mapping[str, Any]) -> bool:
    if response.when is None:
        return True
    return all(
        key in arguments and json_equal(arguments[key], v) for key, v in response.when.items()
    )


class Gateway:
    """The ``tools`` an agent is handed for one run of one task (the :class:`Tools` protocol).

    ``clock`` returns seconds from a monotonic clock and is read for the wall-time cap only.
    """

    def __init__(
        self,
        task: Task,
        recorder: Recorder,
        options: GatewayOptions = GatewayOptions(),
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.task = task
        self.recorder = recorder
        self.options = options
        self._clock = clock
        self._started = None if clock is None else clock()
        self._specs = tuple(tool.spec() for tool in task.tools)
        self._used: dict[tuple[str, int], int] = {}  # (tool, response index) -> times applied
        self._replies = list(task.user_replies)
        self._pending = (0, 0)  # tokens reported and not yet recorded on a step
        self.input_tokens = 0
        self.output_tokens = 0
        self.tool_cost_usd = 0.0
        self.blocked: list[dict[str, Any]] = []
        self.exceeded: CapExceeded | None = None
        self.timed_out = False

    # -- the Tools protocol ---------------------------------------------------------------

    @property
    def specs(self) -> tuple[Mapping[str, Any], ...]:
        return copy.deepcopy(self._specs)

    def usage(self, input_tokens: int, output_tokens: int) -> None:
        for name, value in (("input_tokens", input_tokens), ("output_tokens", output_tokens)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ToolCallError(f"{name} must be an integer >= 0, got {value!r}")
        self._pending = (self._pending[0] + input_tokens, self._pending[1] + output_tokens)
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens

    def say(self, text: str, *, agent: str | None = None) -> None:
        self._check_caps(step=True)
        self._record_message(str(text), agent)

    def ask_user(self, text: str) -> str:
        self._check_caps(step=True)
        self._record_message(str(text), None)
        if not self._replies:
            raise ToolCallError("the simulated user has no reply left")
        reply = self._replies.pop(0)
        self.recorder.user_message(reply)
        return reply

    def call(
        self, name: str, arguments: Mapping[str, Any] | None = None, *, agent: str | None = None
    ) -> object:
        self._check_caps(step=True)
        if not isinstance(name, str) or not name:
            raise ToolCallError(f"a tool name must be a non-empty string, got {name!r}")
        if arguments is not None and not isinstance(arguments, Mapping):
            raise ToolCallError(f"arguments must be a mapping, got {type(arguments).__name__}")
        args: dict[str, Any] = json_value(arguments or {})
        tool = self.task.tool(name)
        policy = self.task.policy
        if tool is None:
            self._refuse(name, args, "unknown tool", f"no tool named {name!r} in this task")
        elif not policy.allow_unlisted_tools and name not in policy.allowed_tools:
            self._refuse(
                name, args, "not permitted", f"tool {name!r} is not permitted by the policy"
            )
        assert tool is not None
        attempt = 1
        while True:
            error, transient, output = self._attempt(tool, args, agent, attempt)
            if error is None:
                return copy.deepcopy(output)
            if not (transient and self.options.retry and attempt < MAX_ATTEMPTS):
                raise ToolCallError(error)
            attempt += 1
            self._check_caps(step=True)

    # -- one attempt ------------------------------------------------------------------------

    def _attempt(
        self, tool: ToolSpec, args: dict[str, Any], agent: str | None, attempt: int
    ) -> tuple[str | None, bool, Any]:
        """Run one attempt of a call: (the error, whether it may be retried, the output)."""
        self._guard(tool.name, args)
        metadata: dict[str, Any] = {}
        if agent is not None:
            metadata["agent"] = agent
        latency = float(tool.latency_ms)
        if attempt > 1:
            backoff = BACKOFF_MS * 2 ** (attempt - 2)
            metadata["attempt"] = attempt
            metadata["backoff_ms"] = backoff
            latency += backoff
        if self.options.validate_arguments and tool.parameters is not None:
            problems = tool.parameters.errors(args)
            if problems:
                error = "invalid arguments: " + "; ".join(problems)
                metadata["gateway"] = "refused_arguments"
                self._record_call(tool, args, None, error, 0.0, metadata=metadata, cost=False)
                return error, False, None
        response = self._respond(tool, args)
        if response is None:
            metadata["fixture"] = "missing"
            self._record_call(tool, args, None, NO_FIXTURE, latency, metadata=metadata)
            return NO_FIXTURE, False, None
        if response.error is not None:
            self._record_call(tool, args, None, response.error, latency, metadata=metadata)
            return response.error, response.transient, None
        output = response.output
        if self.options.verify and tool.returns is not None:
            problems = tool.returns.errors(output)
            if problems:
                error = "result failed verification: " + "; ".join(problems)
                metadata["gateway"] = "corrupt_result"
                self._record_call(tool, args, None, error, latency, metadata=metadata)
                return error, True, None
        self._record_call(tool, args, output, None, latency, metadata=metadata)
        return None, False, output

    def _respond(self, tool: ToolSpec, args: Mapping[str, Any]) -> Response | None:
        for index, response in enumerate(tool.responses):
            if not _matches(response, args):
                continue
            used = self._used.get((tool.name, index), 0)
            if response.times is not None and used >= response.times:
                continue
            self._used[tool.name, index] = used + 1
            return response
        return None

    def _guard(self, name: str, args: dict[str, Any]) -> None:
        monitor = self.recorder.monitor
        if monitor is None:
            return
        step_id = f"s{len(self.recorder.steps) + 1}"
        step = {"step_id": step_id, "type": "tool_call", "tool_name": name, "arguments": args}
        try:
            monitor.guard(step)
        except BlockedCallError as exc:
            errors = [f for f in exc.findings if f.severity == "error"]
            self.blocked.append(
                {
                    "step_id": step_id,
                    "tool_name": name,
                    "arguments": args,
                    "reason": "policy",
                    "rule_ids": sorted({f.rule_id for f in exc.findings}),
                }
            )
            lines = "; ".join(f"{f.rule_id} {f.message}" for f in errors)
            raise ToolCallError(f"blocked by the policy: {lines}") from None

    def _refuse(self, name: str, args: dict[str, Any], reason: str, message: str) -> None:
        self.blocked.append(
            {
                "step_id": f"s{len(self.recorder.steps) + 1}",
                "tool_name": name,
                "arguments": args,
                "reason": reason,
                "rule_ids": [],
            }
        )
        raise ToolCallError(message)

    # -- recording --------------------------------------------------------------------------

    def _tokens(self) -> tuple[int | None, int | None]:
        pending, self._pending = self._pending, (0, 0)
        return (pending[0] or None, pending[1] or None)

    def _record_call(
        self,
        tool: ToolSpec,
        args: dict[str, Any],
        output: Any,
        error: str | None,
        latency: float,
        *,
        metadata: dict[str, Any],
        cost: bool = True,
    ) -> None:
        input_tokens, output_tokens = self._tokens()
        cost_usd = float(tool.cost_usd) if cost and tool.cost_usd else None
        if cost_usd is not None:
            self.tool_cost_usd += cost_usd
        self.recorder.tool_call(
            tool.name,
            args,
            output=output,
            error=error,
            latency_ms=latency,
            cost_usd=cost_usd,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            metadata=metadata or None,
        )

    def _record_message(self, text: str, agent: str | None) -> None:
        input_tokens, output_tokens = self._tokens()
        self.recorder.model_response(
            text,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            metadata=None if agent is None else {"agent": agent},
        )

    def record_answer(self, text: str) -> None:
        """Record the final answer (the harness does, when the agent returns)."""
        self._record_message(text, None)

    # -- caps -------------------------------------------------------------------------------

    @property
    def estimated_cost_usd(self) -> float:
        model = self.options.prices.cost(self.input_tokens, self.output_tokens)
        return round(model + self.tool_cost_usd, 9)

    def elapsed(self) -> float | None:
        if self._clock is None or self._started is None:
            return None
        return self._clock() - self._started

    def check_wall_time(self) -> None:
        """Whether the task ran over its wall-time cap (an infrastructure failure)."""
        cap = self.task.caps.max_wall_seconds
        elapsed = self.elapsed()
        if cap is not None and elapsed is not None and elapsed > cap:
            self.timed_out = True

    def _check_caps(self, *, step: bool) -> None:
        if self.exceeded is not None:
            raise self.exceeded
        caps = self.task.caps
        found: tuple[str, str] | None = None
        self.check_wall_time()
        if self.timed_out:
            found = (
                "max_wall_seconds",
                f"the task ran over its wall-time cap of {caps.max_wall_seconds:g} s",
            )
        elif step and caps.max_steps is not None and len(self.recorder.steps) >= caps.max_steps:
            found = ("max_steps", f"the task reached its cap of {caps.max_steps} steps")
        elif (
            caps.max_tokens is not None and self.input_tokens + self.output_tokens > caps.max_tokens
        ):
            found = ("max_tokens", f"the task spent more than its cap of {caps.max_tokens} tokens")
        elif caps.max_cost_usd is not None and self.estimated_cost_usd > caps.max_cost_usd:
            found = (
                "max_cost_usd",
                f"the task cost more than its cap of {caps.max_cost_usd:g} USD",
            )
        if found is not None:
            self.exceeded = CapExceeded(f"cap exceeded: {found[1]}", found[0])
            raise self.exceeded

    def trace(self) -> Trace:
        """The trace recorded so far, with the refused and blocked calls in its metadata."""
        trace = self.recorder.trace()
        if not self.blocked:
            return trace
        metadata = dict(trace.metadata)
        metadata["blocked_calls"] = [dict(b) for b in self.blocked]
        return Trace(
            trace.trace_id,
            trace.agent_name,
            trace.workflow,
            trace.steps,
            trace.schema_version,
            trace.source,
            metadata,
            trace.extra,
            trace.expected,
        )
