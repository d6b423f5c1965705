"""What the reference agents share: running the task's reference script through the gateway.

Every value the script takes from a tool (``$ref``, ``$item``, the answer template) comes from
the output the gateway really returned, so a corrupt or missing output changes the answer. A
``draft`` is sent first (a careless model's arguments), and the step's ``arguments`` only when
the gateway refuses it; a ``confirm`` question is asked before the call, and a reply that is not
a yes stops the script. A call that fails ends the script with an answer that says so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from agent_reliability_harness.errors import UsageError, parse_pointer
from agent_reliability_harness.harness.protocol import TaskView, ToolCallError, Tools

__all__ = ["Script", "StepHook"]

_TEMPLATE: Final = re.compile(r"\{([A-Za-z0-9_.-]+):(/[^{}]*|)\}")
_YES: Final = re.compile(r"\b(yes|confirm(ed)?|ok(ay)?|go ahead|sure)\b", re.IGNORECASE)
_MISSING: Final = "<missing>"

# called before each call of a step: (the step, the agent that makes it)
StepHook = Callable[[Mapping[str, Any], str | None], None]


class _MissingValueError(Exception):
    """A value the script needs is not in a tool's output."""


def _at(value: Any, pointer: str) -> Any:
    try:
        tokens = parse_pointer(pointer)
    except UsageError:
        raise _MissingValueError(pointer) from None
    for token in tokens:
        if isinstance(value, Mapping) and token in value:
            value = value[token]
        elif isinstance(value, list) and token.isdigit() and int(token) < len(value):
            value = value[int(token)]
        else:
            raise _MissingValueError(pointer)
    return value


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


class Script:
    """One run of a task's reference script with the gateway ``tools``."""

    def __init__(self, task: TaskView, tools: Tools) -> None:
        self.task = task
        self.tools = tools
        reference = task.reference or {}
        self.steps: list[Mapping[str, Any]] = list(reference.get("steps") or [])
        self.template: str | None = reference.get("answer")
        self.outputs: dict[str, Any] = {}
        self.calls = 0
        self.owners = {spec["name"]: spec.get("agent") for spec in task.tools}

    # -- values ---------------------------------------------------------------------------

    def resolve(self, value: Any, item: Any = None) -> Any:
        if isinstance(value, Mapping):
            if "$ref" in value:
                return _at(self.outputs.get(value["$ref"]), value.get("pointer", ""))
            if "$item" in value:
                return _at(item, value["$item"])
            return {k: self.resolve(v, item) for k, v in value.items()}
        if isinstance(value, list):
            return [self.resolve(v, item) for v in value]
        return value

    def agent_of(self, step: Mapping[str, Any]) -> str | None:
        agent = step.get("agent") or self.owners.get(step["tool"])
        return agent if isinstance(agent, str) else None

    def answer(self) -> str:
        if self.template is None:
            return "Done."

        def fill(match: re.Match[str]) -> str:
            try:
                return _text(_at(self.outputs.get(match.group(1)), match.group(2)))
            except _MissingValueError:
                return _MISSING

        return _TEMPLATE.sub(fill, self.template)

    # -- running --------------------------------------------------------------------------

    def _spend(self, arguments: Any) -> None:
        """Plausible, deterministic token counts for the model turn that chose this call."""
        self.calls += 1
        prompt = len(self.task.prompt) // 4
        self.tools.usage(150 + prompt + 60 * self.calls, 15 + len(_text(arguments)) // 4)

    def _call(self, step: Mapping[str, Any], item: Any, agent: str | None) -> Any:
        tool = step["tool"]
        draft = step.get("draft")
        if isinstance(draft, Mapping):
            arguments = self.resolve(draft.get("arguments", {}), item)
            self._spend(arguments)
            try:
                return self.tools.call(tool, arguments, agent=agent)
            except ToolCallError:
                pass  # refused: send the arguments the task really needs
        arguments = self.resolve(step.get("arguments", {}), item)
        self._spend(arguments)
        return self.tools.call(tool, arguments, agent=agent)

    def _source(self, index: int, step: Mapping[str, Any]) -> Any:
        """The output a mapped step maps over: of the step its own ``$ref`` names, else of the
        step before it."""
        name = step.get("$ref") or self.steps[index - 1]["id"]
        return self.outputs.get(name)

    def run_step(self, index: int, step: Mapping[str, Any], agent: str | None) -> str | None:
        """Run one step; the final answer when the script must stop here, else None."""
        confirm = step.get("confirm")
        try:
            if isinstance(confirm, str):
                reply = self.tools.ask_user(confirm)
                if not _YES.search(reply):
                    return f"Stopped: the user did not confirm ({reply})."
            mapped = step.get("map")
            if isinstance(mapped, str):
                items = _at(self._source(index, step), mapped)
                if not isinstance(items, list):
                    raise _MissingValueError(mapped)
                self.outputs[step["id"]] = [self._call(step, item, agent) for item in items]
            else:
                self.outputs[step["id"]] = self._call(step, None, agent)
        except _MissingValueError as exc:
            return f"I could not complete the task: no value at {exc} in a tool's output."
        except ToolCallError as exc:
            return f"I could not complete the task: {exc}"
        return None

    def run(self, before: StepHook | None = None) -> str:
        for index, step in enumerate(self.steps):
            agent = self.agent_of(step)
            if before is not None:
                before(step, agent)
            stopped = self.run_step(index, step, agent)
            if stopped is not None:
                return stopped
        return self.answer()
