"""Names from the data: ``--agent-name`` and ``--workflow``, a record's model as its agent's name,
and default trace ids that two input folders would share, told apart by the folder given."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_reliability_harness.adapters import RecordOptions, to_trace

from conftest import ROOT, Run

TAU_STYLE = ROOT / "docs" / "examples" / "adapters" / "tau_style_runs.json"


def chat(text: str = "done") -> list[dict[str, Any]]:
    return [{"role": "user", "content": "hi"}, {"role": "assistant", "content": text}]


def write(path: Path, value: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    return write(tmp_path / "policy.json", {"policy_id": "p"})


def names(report: Path) -> list[tuple[str, str, str]]:
    data = json.loads(report.read_text(encoding="utf-8"))
    return [(r["trace_id"], r["agent_name"], r["workflow"]) for r in data["reports"]]


def runs(root: Path) -> Path:
    """A canonical trace, a transcript naming its agent, and one naming only its model."""
    write(root / "a.json", {"trace_id": "a", "agent_name": "bot", "workflow": "wf", "steps": []})
    write(root / "b.json", {"agent_name": "desk", "model": "gpt-4o", "messages": chat()})
    write(root / "c.json", {"model": "gpt-4o-mini", "messages": chat()})
    return root


# -- --agent-name and --workflow -----------------------------------------------------------------


def test_without_options_each_trace_keeps_its_names(
    tmp_path: Path, policy: Path, arh: Callable[..., Run]
) -> None:
    out = tmp_path / "r.json"
    run = arh("validate", "--policy", policy, runs(tmp_path / "runs"), "--json-out", out)
    assert run.status == 0, run.err
    # the record's agent_name before its model; the model before the format's default name;
    # the workflow of a transcript that names none is the format's
    assert names(out) == [
        ("a", "bot", "wf"),
        ("b", "desk", "openai-chat-import"),
        ("c", "gpt-4o-mini", "openai-chat-import"),
    ]


def test_the_options_name_every_trace_of_the_run(
    tmp_path: Path, policy: Path, arh: Callable[..., Run]
) -> None:
    root = runs(tmp_path / "runs")
    out = tmp_path / "r.json"
    given = ("--agent-name", "gpt-4o-2024-08-06", "--workflow", "airline")
    run = arh("validate", "--policy", policy, root, *given, "--json-out", out, "--quiet")
    assert run.status == 0, run.err
    assert names(out) == [(i, "gpt-4o-2024-08-06", "airline") for i in ("a", "b", "c")]
    # one of them alone leaves the other name as it was
    run = arh("validate", "--policy", policy, root, "--workflow", "w2", "--json-out", out)
    assert names(out) == [("a", "bot", "w2"), ("b", "desk", "w2"), ("c", "gpt-4o-mini", "w2")]
    # the console shows them, and arh convert writes them into the traces
    shown = arh(
        "validate", "--policy", policy, root / "c.json", "--workflow", "airline", "--show-passing"
    )
    assert "(gpt-4o-mini / airline)" in shown.out
    converted = arh("convert", root / "c.json", "--agent-name", "x", "--workflow", "y")
    assert converted.status == 0, converted.err
    trace = json.loads(converted.out)
    assert (trace["agent_name"], trace["workflow"]) == ("x", "y")


def test_compare_names_the_traces_it_validates(
    tmp_path: Path, policy: Path, arh: Callable[..., Run]
) -> None:
    root = runs(tmp_path / "runs")
    base = tmp_path / "base.json"
    arh("validate", "--policy", policy, root, "--json-out", base, "--quiet")
    out = tmp_path / "cand.json"
    run = arh(
        "compare", "--baseline", base, "--policy", policy, root,
        "--workflow", "airline", "--candidate-json-out", out, "--quiet",
    )  # fmt: skip
    assert run.status == 0, run.err
    assert [w for _, _, w in names(out)] == ["airline"] * 3
    # a saved candidate report is not validated: the option does not apply
    misuse = arh("compare", "--baseline", base, "--candidate", out, "--agent-name", "x")
    assert misuse.status == 2
    assert "--agent-name applies only when validating traces with --policy" in misuse.err


def test_stats_groups_the_runs_by_the_workflow_given(
    tmp_path: Path, policy: Path, arh: Callable[..., Run]
) -> None:
    ids = ("--trace-id-at", "/task_id", "--trace-id-at", "/trial")
    for given, workflow in (((), "openai-chat-import"), (("--workflow", "airline"), "airline")):
        report, stats = tmp_path / "r.json", tmp_path / "s.json"
        run = arh("validate", "--policy", policy, TAU_STYLE, *ids, *given, "--json-out", report)
        assert run.status in (0, 1), run.err
        assert arh("stats", report, "--json-out", stats, "--quiet").status == 0
        data = json.loads(stats.read_text(encoding="utf-8"))
        assert [w["workflow"] for w in data["workflows"]] == [workflow]


# -- a record's model names its agent ------------------------------------------------------------


@pytest.mark.parametrize(
    ("record", "agent_name"),
    [
        ({"model": "gpt-4o", "messages": chat()}, "gpt-4o"),  # a chat completion request's
        ({"agent_name": "desk", "model": "gpt-4o", "messages": chat()}, "desk"),
        ({"agent_name": "", "model": "gpt-4o", "messages": chat()}, "gpt-4o"),
        ({"model": " ", "messages": chat()}, "openai-chat-agent"),  # blank: no name
        ({"model": {"name": "gpt-4o"}, "messages": chat()}, "openai-chat-agent"),  # not text
        ({"messages": chat()}, "openai-chat-agent"),
        ({"modelId": "anthropic.claude-3-haiku", "messages": []}, "anthropic.claude-3-haiku"),
    ],
)
def test_a_records_model_names_the_agent(record: dict[str, Any], agent_name: str) -> None:
    trace = to_trace(record, "openai-chat", RecordOptions(default_id="t"))
    assert trace.agent_name == agent_name
    assert trace.workflow == "openai-chat-import"  # the model says nothing of the workflow


def test_every_transcript_format_reads_the_model() -> None:
    # Anthropic and Cohere requests name the model as OpenAI's do; Gemini responses as
    # modelVersion, Bedrock Converse records as modelId
    anthropic = {"model": "claude-x", "messages": [{"role": "user", "content": "hi"}]}
    cohere = {"model": "command-r", "messages": [{"role": "user", "content": "hi"}]}
    gemini = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "modelVersion": "g-1"}
    bedrock = {"modelId": "b-1", "messages": [{"role": "user", "content": [{"text": "hi"}]}]}
    for fmt, record, model in (
        ("anthropic-messages", anthropic, "claude-x"),
        ("cohere-chat", cohere, "command-r"),
        ("gemini", gemini, "g-1"),
        ("bedrock-converse", bedrock, "b-1"),
    ):
        assert to_trace(record, fmt).agent_name == model, fmt
        assert to_trace(record, "auto").agent_name == model, fmt


# -- default trace ids of several inputs ---------------------------------------------------------


def ids(report: Path) -> list[str]:
    return [trace_id for trace_id, _, _ in names(report)]


def test_two_folders_with_the_same_file_names_are_told_apart(
    tmp_path: Path, policy: Path, arh: Callable[..., Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for folder in ("runs/a", "runs/b"):
        write(tmp_path / folder / "task1.json", {"messages": chat(folder)})
        write(tmp_path / folder / "only-here" / f"{folder[-1]}.json", {"messages": chat()})
    out = tmp_path / "r.json"
    run = arh("validate", "--policy", policy, "runs/a", "runs/b", "--json-out", out)
    # task1.json of runs/b was refused as a duplicate of runs/a's; now both are named by their
    # path as given, and the files whose names do not meet keep their relative path
    assert (run.status, run.err) == (0, "")
    assert ids(out) == ["only-here/a", "runs/a/task1", "only-here/b", "runs/b/task1"]
    # one folder: the ids are those of earlier versions, whatever else exists
    arh("validate", "--policy", policy, "runs/a", "--json-out", out)
    assert ids(out) == ["only-here/a", "task1"]
    arh("validate", "--policy", policy, "runs", "--json-out", out)
    assert ids(out) == ["a/only-here/a", "a/task1", "b/only-here/b", "b/task1"]
    # the order of the arguments changes nothing, and file arguments meet alike (a JSON Lines
    # file's stem meets a JSON file's)
    arh("validate", "--policy", policy, "runs/b", "runs/a", "--json-out", out)
    assert ids(out) == ["only-here/a", "runs/a/task1", "only-here/b", "runs/b/task1"]
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "task1.jsonl").write_text(json.dumps(chat()) + "\n", encoding="utf-8")
    run = arh("validate", "--policy", policy, "runs/a/task1.json", "other/task1.jsonl",
              "--json-out", out)  # fmt: skip
    assert (run.status, ids(out)) == (0, ["other/task1:1", "runs/a/task1"])


def test_ids_a_trace_declares_are_still_duplicates(
    tmp_path: Path, policy: Path, arh: Callable[..., Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    same = {"trace_id": "same", "messages": chat()}
    write(tmp_path / "a" / "t.json", same)
    write(tmp_path / "b" / "t.json", same)
    run = arh("validate", "--policy", policy, "a", "b")
    assert run.status == 3  # an input error
    assert (
        run.err
        == "error: b/t.json: /trace_id: duplicate trace_id 'same': already read from a/t.json\n"
    )
