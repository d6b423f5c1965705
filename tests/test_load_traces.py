"""``load_traces``: the Python API reads what ``arh validate`` reads, as it reads it."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_reliability_harness import InputError, Trace, UsageError, load_traces

from conftest import ROOT, Run

ADAPTERS = ROOT / "docs" / "examples" / "adapters"


def canonical(trace_id: str) -> dict[str, Any]:
    return {"trace_id": trace_id, "agent_name": "bot", "workflow": "wf", "steps": []}


def chat(*texts: str) -> list[dict[str, Any]]:
    """An OpenAI chat message list: a user turn, then an assistant answer per text."""
    return [{"role": "user", "content": "hi"}] + [
        {"role": "assistant", "content": text} for text in texts
    ]


def write(path: Path, value: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def layout(root: Path) -> Path:
    """A run folder holding a canonical trace, a transcript without an id, and a JSON Lines
    file of two transcripts (one with an id of its own)."""
    write(root / "a.json", canonical("own-id"))
    write(root / "sub" / "chat.json", {"messages": chat("hello")})
    lines = [json.dumps({"trace_id": "named", "messages": chat("x")}), json.dumps(chat("y"))]
    (root / "runs.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def test_a_folder_gives_the_traces_arh_validate_checks(
    tmp_path: Path, arh: Callable[..., Run]
) -> None:
    root = layout(tmp_path / "run")
    traces = load_traces(root)
    # sorted paths (a.json, runs.jsonl, sub/chat.json), then line order; a transcript without an
    # id is named after its path relative to the folder, plus :<line> in JSON Lines
    assert [t.trace_id for t in traces] == ["own-id", "named", "runs:2", "sub/chat"]
    assert [t.source for t in traces] == [None, "openai-chat", "openai-chat", "openai-chat"]
    assert all(isinstance(t, Trace) for t in traces)
    # exactly the traces of the command line, in its order
    policy = write(tmp_path / "policy.json", {"policy_id": "p"})
    run = arh("validate", "--policy", policy, root, "--json-out", tmp_path / "r.json", "--quiet")
    assert run.status == 0, run.err
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert [r["trace_id"] for r in report["reports"]] == [t.trace_id for t in traces]
    # a str path, a path list, and the file itself read alike
    assert load_traces(str(root)) == traces
    # names are relative to the argument a file was found under: sub/chat.json under sub is
    # chat, as is the file given itself
    given = load_traces([root / "sub", root / "a.json"])
    assert given == [traces[0], dataclasses.replace(traces[3], trace_id="chat")]
    assert load_traces(root / "sub" / "chat.json") == given[1:]


def test_a_decoded_document_reads_like_a_file(tmp_path: Path) -> None:
    records = json.loads((ADAPTERS / "tau_style_runs.json").read_text(encoding="utf-8"))
    traces = load_traces(records, trace_id_at=["/task_id", "/trial"])
    assert [t.trace_id for t in traces] == ["7-0", "7-1"]  # task_id 7, trials 0 and 1
    assert load_traces(records, trace_id_at="/trial")[1].trace_id == "1"  # one pointer
    # records without ids: "transcript", with the index in an array
    unnamed = load_traces([{"traj": chat("a")}, {"traj": chat("b")}])
    assert [t.trace_id for t in unnamed] == ["transcript#0", "transcript#1"]
    (single,) = load_traces({"messages": chat("a")})
    assert single.trace_id == "transcript"
    # a bare message list is one transcript, a canonical trace is itself
    assert [t.trace_id for t in load_traces(chat("a", "b"))] == ["transcript"]
    assert load_traces(canonical("c1")) == [Trace.from_dict(canonical("c1"))]
    # the file the records came from reads the same
    from_file = load_traces(ADAPTERS / "tau_style_runs.json", trace_id_at=["/task_id", "/trial"])
    assert from_file == traces


def test_format_and_messages_at(tmp_path: Path) -> None:
    nested = {"run": {"log": chat("a")}, "task": "t9"}
    (trace,) = load_traces(nested, "openai-chat", messages_at="/run/log", trace_id_at="/task")
    assert (trace.trace_id, trace.source, len(trace.steps)) == ("t9", "openai-chat", 2)
    with pytest.raises(InputError) as caught:
        load_traces({"messages": chat("a")}, "arh")  # read as a canonical trace: no steps
    assert str(caught.value) == "<document>: missing required field 'trace_id'"


def test_names_given_replace_those_of_the_data(tmp_path: Path) -> None:
    root = layout(tmp_path / "run")
    traces = load_traces(root, agent_name="gpt-4o", workflow="airline")
    assert {(t.agent_name, t.workflow) for t in traces} == {("gpt-4o", "airline")}
    only_workflow = load_traces(root, workflow="airline")
    assert [t.agent_name for t in only_workflow] == ["bot", *["openai-chat-agent"] * 3]


def test_the_first_problem_raises_naming_the_file_line_and_pointer(tmp_path: Path) -> None:
    root = layout(tmp_path / "run")
    bad = root / "runs.jsonl"
    bad.write_text(
        json.dumps(canonical("ok")) + "\n" + json.dumps({**canonical("bad"), "steps": 3}) + "\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError) as caught:
        load_traces(root)
    assert str(caught.value) == (
        f"{bad.as_posix()}:2: /steps: must be an array of steps, got number"
    )
    assert (caught.value.source, caught.value.line, caught.value.pointer) == (
        bad.as_posix(),
        2,
        "/steps",
    )
    with pytest.raises(ValueError, match="must be an array of steps"):  # as 0.2.x callers catch
        load_traces(root)


def test_with_on_error_every_problem_is_reported_and_the_rest_read(tmp_path: Path) -> None:
    root = layout(tmp_path / "run")
    write(root / "dup.json", canonical("own-id"))  # after a.json in sorted order: a duplicate
    (root / "broken.json").write_text("{", encoding="utf-8")
    errors: list[InputError] = []
    traces = load_traces([root, tmp_path / "missing"], on_error=errors.append)
    assert [t.trace_id for t in traces] == ["own-id", "named", "runs:2", "sub/chat"]
    assert [(e.source, e.pointer) for e in errors] == [
        ((tmp_path / "missing").as_posix(), None),
        ((root / "broken.json").as_posix(), None),
        ((root / "dup.json").as_posix(), "/trace_id"),
    ]
    assert errors[2].message == (
        f"duplicate trace_id 'own-id': already read from {(root / 'a.json').as_posix()}"
    )


def test_python_data_is_held_to_what_json_holds() -> None:
    with pytest.raises(InputError) as caught:
        load_traces({"messages": [{"role": "user", "content": ("a", "b")}]})
    assert (caught.value.source, caught.value.pointer) == ("<document>", "/messages/0/content")
    loop: dict[str, Any] = {"messages": []}
    loop["messages"].append(loop)
    with pytest.raises(InputError, match="contains itself"):
        load_traces(loop)
    with pytest.raises(InputError, match="duplicate trace_id 'c1'"):
        load_traces([canonical("c1"), canonical("c1")])


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ((42,), "load_traces reads a path, a list of paths, or a document decoded from JSON"),
        (({"messages": []}, "openai"), "format must be one of auto, arh, openai-chat,"),
        (({"messages": []},), None),  # fine: the control
    ],
)
def test_arguments_of_the_wrong_kind(arguments: tuple[Any, ...], message: str | None) -> None:
    if message is None:
        assert len(load_traces(*arguments)) == 1
        return
    with pytest.raises(UsageError, match=message):
        load_traces(*arguments)


def test_option_values_are_checked_as_the_command_line_checks_them() -> None:
    record = {"messages": chat("a")}
    with pytest.raises(UsageError, match="messages_at: invalid JSON pointer '/a~2'"):
        load_traces(record, messages_at="/a~2")
    with pytest.raises(UsageError, match="trace_id_at: a JSON pointer is empty or starts"):
        load_traces(record, trace_id_at=["id"])
    with pytest.raises(UsageError, match="apply to transcripts, not to format arh"):
        load_traces(record, "arh", trace_id_at="/id")
    with pytest.raises(UsageError, match="agent_name must be a str or None, got int"):
        load_traces(record, agent_name=4)  # type: ignore[arg-type]
