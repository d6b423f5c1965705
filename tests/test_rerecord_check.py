"""tools/rerecord_check.py: the real runs recorded again with fresh call ids, and the numbers
docs/regression-testing.md and the CHANGELOG quote from it."""

from __future__ import annotations

import contextlib
import io
import re
from types import ModuleType

from conftest import REAL_TRACES, ROOT, load_script, require_shared


def _tool() -> ModuleType:
    return load_script("rerecord_check", ROOT / "tools" / "rerecord_check.py")


def test_a_record_again_has_fresh_call_ids_and_nothing_else_changed() -> None:
    tool = _tool()
    record = {
        "messages": [
            {"role": "assistant", "tool_calls": [{"id": "call_1", "function": {"name": "f"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "id: call_1"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_2", "name": "g"}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_2"}]},
        ],
        "id": "run-7",  # not a call's id: kept
    }
    again = tool.recorded_again(record)
    first, second = (
        again["messages"][0]["tool_calls"][0]["id"],
        again["messages"][2]["content"][0]["id"],
    )
    assert first.startswith("call_")
    assert first != "call_1"
    assert second.startswith("call_")
    assert second not in (first, "toolu_2")
    # each reference to a call follows it; text that mentions an id is data, not an id
    assert again["messages"][1]["tool_call_id"] == first
    assert again["messages"][1]["content"] == "id: call_1"
    assert again["messages"][3]["content"][0]["tool_use_id"] == second
    assert again["id"] == "run-7"
    assert tool.recorded_again(record) == again  # the same every time


def test_the_quoted_numbers_are_what_the_script_prints() -> None:
    require_shared(REAL_TRACES / "tau-bench")
    require_shared(REAL_TRACES / "agentdojo")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert _tool().main() == 0
    rows = [line.split(" | ") for line in out.getvalue().splitlines()[2:]]
    by_id = {row[0].strip("| "): row for row in rows}
    expected = {  # traces, false new findings by step id; none by step reference
        "tau-bench airline": ("200", "100"),
        "AgentDojo banking": ("1,120", "178"),
        "AgentDojo slack": ("252", "121"),
    }
    for name, (traces, false_new) in expected.items():
        (row,) = [r for key, r in by_id.items() if key.startswith(name)]
        assert row[1] == traces
        assert row[3] == f"{false_new} / {false_new}, FAIL"
        assert row[4].rstrip(" |") == "0 / 0, PASS"
    quoted = (ROOT / "docs" / "regression-testing.md").read_text(encoding="utf-8")
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert re.search(r"airline runs gave 100 false new findings", quoted)
    assert re.search(r"user-task runs 178 and 121", quoted)
    assert "gave 100, 178 and\n  121 false new findings" in changelog
