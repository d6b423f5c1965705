"""Running an agent on tasks: one trace per task and repeat, its validation report, its outcome.

Each run goes through a fresh :class:`~agent_reliability_harness.harness.gateway.Gateway` with a
recorder guarded by the task's policy. The recorded trace carries the task's expected outcome
(trace schema 1.2) and is validated with the task's own policy. Its outcome is one of
``passed``, ``agent_failure`` (findings, the agent raised, or it ran over a step, token or cost
cap), ``evaluation_error`` (the trace could not be validated) and ``infrastructure_failure``
(the task ran over its wall-time cap, or a worker process crashed).

With ``jobs`` > 1, worker processes run the tasks; the results come back in task order and are
byte-identical to those of one process (only the wall time of a task is measured, and it decides
nothing but the wall-time cap).
"""

from __future__ import annotations

import contextlib
import importlib
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, Final

from agent_reliability_harness.engine import Validator
from agent_reliability_harness.errors import ArhError, UsageError
from agent_reliability_harness.harness.gateway import DEFAULT_OPTIONS, Gateway, GatewayOptions
from agent_reliability_harness.harness.protocol import CapExceeded, TaskView
from agent_reliability_harness.harness.task import Task
from agent_reliability_harness.model.report import TraceReport
from agent_reliability_harness.model.trace import Trace
from agent_reliability_harness.monitor import Monitor
from agent_reliability_harness.record import Recorder, json_value
from agent_reliability_harness.render.traces import render_trace

__all__ = [
    "AGENT_FAILURE",
    "EVALUATION_ERROR",
    "INFRASTRUCTURE_FAILURE",
    "OUTCOMES",
    "PASSED",
    "TaskResult",
    "load_agent",
    "run_task",
    "run_tasks",
    "trace_id",
]

PASSED: Final = "passed"
AGENT_FAILURE: Final = "agent_failure"
EVALUATION_ERROR: Final = "evaluation_error"
INFRASTRUCTURE_FAILURE: Final = "infrastructure_failure"
OUTCOMES: Final = (PASSED, AGENT_FAILURE, EVALUATION_ERROR, INFRASTRUCTURE_FAILURE)
_FILE_MODULE: Final = "arh_agent_"  # the module name of an agent loaded from a file
TRACE_SCHEMA: Final = "1.2"  # the version that carries ``expected``

AgentFunction = Callable[[TaskView, Any], object]


def trace_id(task_id: str, repeat: int) -> str:
    return f"{task_id}#run{repeat}"


def _import_file(path: str) -> Any:
    """The module in the Python file ``path`` (an agent named ``path/to/agent.py:callable``)."""
    import importlib.util
    import os
    import sys

    if not os.path.isfile(path):
        raise ImportError(f"no file {path!r}")
    module_id = _FILE_MODULE + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(module_id, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path!r}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_id] = module
    spec.loader.exec_module(module)
    return module


def load_agent(spec: str) -> AgentFunction:
    """The agent named ``module:callable`` (the callable may be dotted: ``module:Class.method``)
    or ``path/to/file.py:callable``; :class:`UsageError` saying what is wrong."""
    module_name, colon, name = spec.partition(":")
    if not colon or not module_name or not name:
        raise UsageError(f"an agent is named module:callable, got {spec!r}")
    try:
        found: Any = (
            _import_file(module_name)
            if module_name.endswith(".py")
            else importlib.import_module(module_name)
        )
    except ImportError as exc:
        raise UsageError(f"cannot import the agent's module {module_name!r}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - any error of the agent's own module
        raise UsageError(
            f"importing the agent's module {module_name!r} failed: {type(exc).__name__}: {exc}"
        ) from None
    for part in name.split("."):
        if not hasattr(found, part):
            raise UsageError(f"module {module_name!r} has no {name!r}")
        found = getattr(found, part)
    if not callable(found):
        raise UsageError(f"{spec!r} is not callable")
    return found  # type: ignore[no-any-return]


class WallTimeError(BaseException):
    """Raised in the agent when its task runs over its wall-time cap (a BaseException, so that
    an agent's ``except Exception`` does not swallow it)."""


@contextlib.contextmanager
def _alarm(seconds: float | None) -> Iterator[None]:
    """Interrupt the agent after ``seconds`` of wall time, where the platform can (a POSIX
    interval timer, in the main thread); elsewhere the cap is checked at each gateway call."""
    usable = (
        seconds is not None
        and hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
    )
    if not usable:
        yield
        return

    def expire(*_: object) -> None:
        raise WallTimeError

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, max(float(seconds or 0), 0.001))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@dataclass(frozen=True, slots=True)
class TaskResult:
    """One run of one task: its trace (canonical JSON text), its report (None when it could not
    be validated), its outcome and what it spent."""

    task_id: str
    repeat: int
    trace_id: str
    trace_text: str
    report: TraceReport | None
    outcome: str
    detail: str | None
    steps: int
    input_tokens: int
    output_tokens: int
    estimated_cost_usd: float


def _answer_text(answer: object) -> str:
    if isinstance(answer, str):
        return answer
    import json

    return json.dumps(json_value(answer), sort_keys=True, ensure_ascii=False)


def _view(task: Task, seed: int, repeat: int) -> TaskView:
    reference = task.raw.get("reference")
    return TaskView(
        task.id,
        task.prompt,
        task.pattern,
        task.category,
        tuple(tool.spec() for tool in task.tools),
        json_value(reference) if reference is not None else None,
        seed,
        repeat,
    )


def _failed_rules(report: TraceReport, blocked: Sequence[Mapping[str, Any]]) -> str:
    """Why a trace failed: its error findings' rules, and what the gateway refused or the policy
    blocked on the way (those calls are not steps, so no finding of the trace names them)."""
    rules = sorted({f.rule_id for f in report.findings if f.severity == "error"})
    detail = "findings: " + ", ".join(rules) if rules else "score below the pass mark"
    refused = sorted({str(r) for b in blocked for r in b.get("rule_ids") or [b.get("reason")]})
    return detail + "; blocked: " + ", ".join(refused) if refused else detail


def run_task(
    task: Task,
    agent: AgentFunction,
    *,
    agent_id: str,
    workflow: str,
    seed: int = 0,
    repeat: int = 1,
    options: GatewayOptions = DEFAULT_OPTIONS,
    validator: Validator | None = None,
    clock: Callable[[], float] | None = time.monotonic,
) -> TaskResult:
    """Run ``agent`` on ``task`` once and validate its trace with the task's policy."""
    tid = trace_id(task.id, repeat)
    metadata = {
        "task_id": task.id,
        "pattern": task.pattern,
        "category": task.category,
        "repeat": repeat,
        "seed": seed,
    }
    monitor = Monitor(task.policy, trace_id=tid, agent_name=agent_id, workflow=workflow)
    recorder = Recorder(
        tid, agent_id, workflow, metadata=metadata, source="arh run", guard=monitor, clock=None
    )
    recorder.user_message(task.prompt)
    gateway = Gateway(task, recorder, options, clock)
    outcome, detail = PASSED, None
    try:
        with _alarm(task.caps.max_wall_seconds if clock is not None else None):
            answer = agent(_view(task, seed, repeat), gateway)
    except WallTimeError:
        gateway.timed_out = True
    except CapExceeded as exc:
        outcome, detail = AGENT_FAILURE, str(exc)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the agent's failure, its outcome
        outcome, detail = AGENT_FAILURE, f"{type(exc).__name__}: {exc}"
    else:
        if gateway.exceeded is not None:
            outcome, detail = AGENT_FAILURE, str(gateway.exceeded)
        else:
            gateway.record_answer(_answer_text(answer))
    gateway.check_wall_time()
    if gateway.timed_out:
        cap = task.caps.max_wall_seconds
        outcome, detail = (
            INFRASTRUCTURE_FAILURE,
            f"timed out: ran over its wall-time cap of {cap:g} s",
        )
    trace: Trace = replace(gateway.trace(), schema_version=TRACE_SCHEMA, expected=task.expected)
    report: TraceReport | None = None
    try:
        # the trace file's path in the runs directory, as `arh validate traces` names it there
        source = f"traces/{task.id}.run{repeat}.json"
        report = (validator or Validator(task.policy)).validate(trace, source_path=source)
    except ArhError as exc:
        if outcome == PASSED:
            outcome, detail = EVALUATION_ERROR, f"the trace could not be validated: {exc}"
    if report is not None and outcome == PASSED and not report.passed:
        outcome, detail = AGENT_FAILURE, _failed_rules(report, gateway.blocked)
    return TaskResult(
        task.id,
        repeat,
        tid,
        render_trace(trace, indent=True),
        report,
        outcome,
        detail,
        len(trace.steps),
        gateway.input_tokens,
        gateway.output_tokens,
        gateway.estimated_cost_usd,
    )


@dataclass(frozen=True, slots=True)
class _Plan:
    """What every run of a ``run_tasks`` call shares (sent once to each worker)."""

    agent_id: str
    workflow: str
    seed: int
    options: GatewayOptions


_WORKER: dict[str, Any] = {}  # in a worker process: the plan and the agent, loaded once


def _start_worker(plan: _Plan) -> None:
    _WORKER["plan"] = plan
    _WORKER["agent"] = load_agent(plan.agent_id)
    _WORKER["validators"] = {}


def _validator(validators: dict[str, Validator], task: Task) -> Validator:
    key = task.policy_sha256
    if key not in validators:
        validators[key] = Validator(task.policy)
    return validators[key]


def _run_unit(unit: tuple[Mapping[str, Any], int]) -> TaskResult:
    raw, repeat = unit
    plan: _Plan = _WORKER["plan"]
    task = Task.from_dict(raw)
    return run_task(
        task,
        _WORKER["agent"],
        agent_id=plan.agent_id,
        workflow=plan.workflow,
        seed=plan.seed,
        repeat=repeat,
        options=plan.options,
        validator=_validator(_WORKER["validators"], task),
    )


def _crashed(task: Task, repeat: int, exc: BaseException) -> TaskResult:
    tid = trace_id(task.id, repeat)
    empty = Trace(tid, "", "", (), TRACE_SCHEMA, expected=task.expected)
    return TaskResult(
        task.id,
        repeat,
        tid,
        render_trace(empty, indent=True),
        None,
        INFRASTRUCTURE_FAILURE,
        f"the worker process failed: {type(exc).__name__}: {exc}",
        0,
        0,
        0,
        0.0,
    )


def run_tasks(
    tasks: Sequence[Task],
    agent_id: str,
    *,
    workflow: str,
    seed: int = 0,
    repeats: int = 1,
    options: GatewayOptions = DEFAULT_OPTIONS,
    jobs: int = 1,
) -> Iterator[TaskResult]:
    """Run the agent named ``agent_id`` on every task ``repeats`` times, in task order (each
    task's repeats together); ``jobs`` worker processes when more than 1."""
    plan = _Plan(agent_id, workflow, seed, options)
    units = [(task, repeat) for task in tasks for repeat in range(1, repeats + 1)]
    if jobs <= 1 or len(units) <= 1:
        agent = load_agent(agent_id)
        validators: dict[str, Validator] = {}
        for task, repeat in units:
            yield run_task(
                task,
                agent,
                agent_id=agent_id,
                workflow=workflow,
                seed=seed,
                repeat=repeat,
                options=options,
                validator=_validator(validators, task),
            )
        return
    load_agent(agent_id)  # a bad name is a usage error here, not in every worker
    with ProcessPoolExecutor(max_workers=jobs, initializer=_start_worker, initargs=(plan,)) as pool:
        futures = [pool.submit(_run_unit, (task.raw, repeat)) for task, repeat in units]
        for (task, repeat), future in zip(units, futures, strict=True):
            try:
                yield future.result()
            except Exception as exc:  # noqa: BLE001 - a crashed worker fails its task, not the run
                yield _crashed(task, repeat, exc)
