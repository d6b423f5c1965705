"""An agent whose behaviour varies with the seed, like a model sampled at a temperature.

It follows a task's reference script as the reference agents do (values taken from the real
outputs, the draft arguments first, a confirmation before a guarded call), but at each decision
it may make a mistake, drawn from a ``random.Random`` seeded from ``(task.seed, task.id,
task.repeat)``: the same seed gives the same run, byte for byte, and another seed or repeat
gives another draw. Its mistakes:

- it sometimes skips the confirmation a step asks for (the policy then blocks the call);
- it sometimes answers before its last call, with what it has seen so far;
- it sometimes gives up when the gateway refuses its draft arguments.

Run it on the golden dataset with two seeds and compare, or repeat it and ask ``arh stats``
which tasks are flaky (docs/experiments.md)::

    arh run --dataset datasets/golden --agent examples/sampling_agent.py:sampling \\
        --seed 1 --repeats 5 -o runs/sampling
    arh stats runs/sampling/report.json
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping
from typing import Any

from agent_reliability_harness.harness.protocol import TaskView, ToolCallError, Tools

# how often each mistake is made, per chance to make it
SKIP_CONFIRMATION = 0.15
ANSWER_EARLY = 0.08
GIVE_UP_ON_REFUSAL = 0.5

_TEMPLATE = re.compile(r"\{([A-Za-z0-9_.-]+):(/[^{}]*|)\}")
_YES = re.compile(r"\b(yes|confirm(ed)?|ok(ay)?|go ahead|sure)\b", re.IGNORECASE)


class _MissingError(Exception):
    """A value the script needs is not in what the agent has seen."""


def _at(value: Any, pointer: str) -> Any:
    for escaped in pointer.split("/")[1:]:
        token = escaped.replace("~1", "/").replace("~0", "~")
        if isinstance(value, Mapping) and token in value:
            value = value[token]
        elif isinstance(value, list) and token.isdigit() and int(token) < len(value):
            value = value[int(token)]
        else:
            raise _MissingError(pointer)
    return value


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _resolve(value: Any, outputs: Mapping[str, Any], item: Any) -> Any:
    if isinstance(value, Mapping):
        if "$ref" in value:
            return _at(outputs.get(value["$ref"]), value.get("pointer", ""))
        if "$item" in value:
            return _at(item, value["$item"])
        return {key: _resolve(inner, outputs, item) for key, inner in value.items()}
    if isinstance(value, list):
        return [_resolve(inner, outputs, item) for inner in value]
    return value


def _answer(template: str | None, outputs: Mapping[str, Any]) -> str:
    if template is None:
        return "Done."

    def fill(match: re.Match[str]) -> str:
        try:
            return _text(_at(outputs.get(match.group(1)), match.group(2)))
        except _MissingError:
            return "(not looked up)"

    return _TEMPLATE.sub(fill, template)


def sampling(task: TaskView, tools: Tools) -> object:
    # a str seed is hashed with sha512: the same draws in every process, whatever PYTHONHASHSEED
    rng = random.Random(f"{task.seed}:{task.id}:{task.repeat}")  # noqa: S311 - not for secrets
    reference = task.reference or {}
    steps: list[Mapping[str, Any]] = list(reference.get("steps") or [])
    owners = {spec["name"]: spec.get("agent") for spec in task.tools}
    outputs: dict[str, Any] = {}

    def call(step: Mapping[str, Any], item: Any, agent: str | None) -> Any:
        draft = step.get("draft")
        if isinstance(draft, Mapping):
            tools.usage(300, 20)
            try:
                return tools.call(
                    step["tool"], _resolve(draft["arguments"], outputs, item), agent=agent
                )
            except ToolCallError:
                if rng.random() < GIVE_UP_ON_REFUSAL:
                    raise
        tools.usage(300, 20)
        return tools.call(step["tool"], _resolve(step["arguments"], outputs, item), agent=agent)

    for index, step in enumerate(steps):
        if index == len(steps) - 1 and index > 0 and rng.random() < ANSWER_EARLY:
            break  # answers before its last call, with what it has seen
        agent = step.get("agent") or owners.get(step["tool"])
        agent = agent if isinstance(agent, str) else None
        try:
            confirm = step.get("confirm")
            if isinstance(confirm, str) and rng.random() >= SKIP_CONFIRMATION:
                reply = tools.ask_user(confirm)
                if not _YES.search(reply):
                    return f"Stopped: the user did not confirm ({reply})."
            if isinstance(step.get("map"), str):
                source = outputs.get(step.get("$ref") or steps[index - 1]["id"])
                items = _at(source, step["map"])
                if not isinstance(items, list):
                    raise _MissingError(step["map"])
                outputs[step["id"]] = [call(step, item, agent) for item in items]
            else:
                outputs[step["id"]] = call(step, None, agent)
        except _MissingError as exc:
            return f"I could not complete the task: no value at {exc} in a tool's output."
        except ToolCallError as exc:
            return f"I could not complete the task: {exc}"
    return _answer(reference.get("answer"), outputs)
