"""A deliberately broken agent, to see what `arh run` reports when an agent fails.

It follows a task's reference script carelessly: it sends the first (draft) arguments it thinks
of, never asks the user to confirm a side effect, ignores every tool error, and answers without
using what it looked up. Run it on the hand-written tasks of the tests::

    arh run --dataset tests/data/tasks/golden-mini.jsonl \\
        --agent examples/broken_agent.py:broken -o runs/broken

and compare it with the reference agents' run (docs/running-agents.md).
"""

from __future__ import annotations

from typing import Any

from agent_reliability_harness.harness.protocol import TaskView, ToolCallError, Tools


def _literal(value: Any) -> Any:
    """The arguments as written; a value that should come from an earlier output is guessed
    (0) instead of looked up."""
    if isinstance(value, dict):
        if "$ref" in value or "$item" in value:
            return 0
        return {key: _literal(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_literal(item) for item in value]
    return value


def broken(task: TaskView, tools: Tools) -> object:
    for step in (task.reference or {}).get("steps", []):
        draft = step.get("draft")
        arguments = draft.get("arguments", {}) if isinstance(draft, dict) else step["arguments"]
        try:
            tools.call(step["tool"], _literal(arguments))  # no confirmation asked
        except ToolCallError:
            continue  # ignores the error and goes on
    return "All done."  # answers without looking at the results
