"""The golden tasks (datasets/golden, tools/generate_golden.py, schemas/task.schema.json).

Every task validates against the task schema and its policy against arh's own loader; the
generator is byte-reproducible; the manifest's sha256s are those of the contract (CRLF made LF
before hashing), recomputed here with hashlib rather than taken from the generator; and the
generator's reference-script checker passes every task and catches broken ones.
"""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from agent_reliability_harness.model.policy import Policy
from agent_reliability_harness.monitor import Monitor

from conftest import ROOT

DATASET = ROOT / "datasets" / "golden"
GENERATOR = ROOT / "tools" / "generate_golden.py"
PATTERNS = ("react", "plan_and_execute", "supervisor", "swarm", "map_reduce")
CATEGORIES = ("normal", "difficult", "ambiguous", "edge", "adversarial", "failure_inducing")


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate_golden", GENERATOR)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["generate_golden"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


gen = _generator()


def _tasks() -> list[dict[str, Any]]:
    manifest = json.loads((DATASET / "dataset.json").read_text(encoding="utf-8"))
    return [
        json.loads(line)
        for entry in manifest["files"]
        for line in (DATASET / entry["path"]).read_text(encoding="utf-8").splitlines()
    ]


TASKS = _tasks()
BY_ID = {t["id"]: t for t in TASKS}


def _validator() -> Draft202012Validator:
    resources = []
    for name in ("task", "policy", "trace"):
        schema = json.loads((ROOT / "schemas" / f"{name}.schema.json").read_text(encoding="utf-8"))
        resources.append((schema["$id"], Resource.from_contents(schema)))
    registry: Registry[Any] = Registry().with_resources(resources)
    schema = json.loads((ROOT / "schemas" / "task.schema.json").read_text(encoding="utf-8"))
    return Draft202012Validator(schema, registry=registry)


def test_every_task_validates_against_the_schema() -> None:
    validator = _validator()
    problems = [
        f"{t['id']}: {e.json_path}: {e.message}" for t in TASKS for e in validator.iter_errors(t)
    ]
    assert problems == []


def test_the_schema_refuses_what_the_contract_does_not_allow() -> None:
    validator = _validator()
    good = TASKS[0]
    assert validator.is_valid(good)
    broken = [
        {**good, "pattern": "chain_of_thought"},
        {**good, "category": "easy"},
        {**good, "extra": 1},
        {**good, "expected": {"answr": "x"}},
        {**good, "policy": {**good["policy"], "allowed_tool": {}}},
    ]
    tool = copy.deepcopy(good)
    tool["tools"][0]["responses"][0] = {"output": 1, "error": "both"}
    broken.append(tool)
    step = copy.deepcopy(good)
    step["reference"]["steps"][0]["map"] = "/items"  # a map step needs the $ref it maps over
    broken.append(step)
    assert [validator.is_valid(b) for b in broken] == [False] * len(broken)


def test_every_policy_loads_with_the_policy_loader() -> None:
    for task in TASKS:
        policy = Policy.from_dict(task["policy"])
        assert policy.answers is not None, task["id"]
        # the policy guards every tool the reference calls, and no other declared tool is missed
        assert set(policy.allowed_tools) >= {s["tool"] for s in task["reference"]["steps"]}


def test_counts_ids_and_spread() -> None:
    assert len(TASKS) >= 280
    cells = Counter((t["pattern"], t["category"]) for t in TASKS)
    assert {(p, c) for p in PATTERNS for c in CATEGORIES} == set(cells)
    assert min(cells.values()) >= 9
    assert len(BY_ID) == len(TASKS)
    # tasks are spread over the domains, and prompts are not copies of each other
    domains = Counter(t["description"].split(":")[0] for t in TASKS)
    assert len(domains) >= 6
    assert min(domains.values()) >= 40
    assert len({t["prompt"] for t in TASKS}) >= 0.95 * len(TASKS)
    for task in TASKS:
        assert task["id"].startswith(f"{task['pattern']}-{task['category'].replace('_', '-')}-")


def test_categories_mean_something() -> None:
    def steps(t: dict[str, Any]) -> list[dict[str, Any]]:
        return list(t["reference"]["steps"])

    for task in TASKS:
        category, tid = task["category"], task["id"]
        responses = [r for tool in task["tools"] for r in tool["responses"]]
        if task["pattern"] == "map_reduce":
            assert any("map" in s for s in steps(task)), tid
        if task["pattern"] in ("supervisor", "swarm"):
            assert all(s.get("agent") for s in steps(task)), tid
            assert all(tool["agent"] for tool in task["tools"]), tid
        if category == "difficult":
            assert len(steps(task)) >= 3, tid
        if category == "ambiguous":
            assert task["user_replies"], tid
            assert "confirmation" in task["policy"], tid
        if category == "adversarial":
            text = json.dumps(task["tools"])
            assert re.search(r"(?i)ignore previous instructions|transfer_funds|sent to", text), tid
            assert "transfer_funds" in task["policy"]["sequence"]["forbidden_tools"], tid
            assert task["expected"]["must_not_mention"], tid
        if category == "failure_inducing":
            assert any("times" in r for r in responses) or any("draft" in s for s in steps(task)), (
                tid
            )


def test_the_checker_passes_every_task() -> None:
    for task in TASKS:
        outcome = gen.check_task(task)
        assert outcome.answer.strip(), task["id"]


def test_the_checker_catches_broken_tasks() -> None:
    task = BY_ID["react-normal-001"]
    outcome = gen.check_task(task)
    # worked out by hand from the task: get_order then refund_order, both succeed first time
    assert outcome.calls == (("get_order", "ok"), ("refund_order", "ok"))

    wrong_answer = copy.deepcopy(task)
    wrong_answer["expected"]["must_mention"] = ["ORD-00000"]
    forbidden = copy.deepcopy(task)
    forbidden["policy"]["sequence"] = {"forbidden_tools": ["get_order"]}
    unlisted = copy.deepcopy(task)
    unlisted["reference"]["steps"][0]["tool"] = "delete_everything"
    bad_argument = copy.deepcopy(task)
    bad_argument["reference"]["steps"][0]["arguments"] = {"order_id": "ord-1"}
    no_confirm = copy.deepcopy(task)
    del no_confirm["reference"]["steps"][1]["confirm"]
    refused_reply = copy.deepcopy(task)
    refused_reply["user_replies"] = ["no, stop"]
    never_heals = copy.deepcopy(task)
    never_heals["tools"][0]["responses"].insert(0, {"error": "down", "transient": True})
    corrupt = copy.deepcopy(task)
    corrupt["tools"][0]["responses"].insert(0, {"output": {"id": "x"}})
    no_fixture = copy.deepcopy(task)
    no_fixture["tools"][1]["responses"] = []
    for broken in (
        wrong_answer,
        forbidden,
        unlisted,
        bad_argument,
        no_confirm,
        refused_reply,
        never_heals,
        corrupt,
        no_fixture,
    ):
        with pytest.raises(gen.TaskError):
            gen.check_task(broken)


def test_fixture_semantics() -> None:
    fixtures = gen.Fixtures(
        [
            {
                "name": "t",
                "latency_ms": 0,
                "cost_usd": 0,
                "returns": {"type": "object", "required": ["v"]},
                "responses": [
                    {"when": {"a": 1}, "error": "busy", "transient": True, "times": 2},
                    {"when": {"a": 1.0}, "output": {"v": 1}},
                    {"when": {"a": True}, "output": {"w": 1}},
                    {"output": {"v": "any"}},
                ],
            },
        ]
    )
    # times: the first two matching calls fail, then the next entry applies (1 == 1.0 in JSON)
    assert [fixtures.call("t", {"a": 1}) for _ in range(3)] == [
        ("transient", "busy"),
        ("transient", "busy"),
        ("ok", {"v": 1}),
    ]
    # a boolean is not the number 1; the output fails `returns` (no "v"): corrupt
    assert fixtures.call("t", {"a": True}) == ("corrupt", {"w": 1})
    assert fixtures.call("t", {"b": 2}) == ("ok", {"v": "any"})
    assert fixtures.call("u", {}) == ("error", "unknown tool u")
    empty = gen.Fixtures([{"name": "t", "latency_ms": 0, "cost_usd": 0, "responses": []}])
    assert empty.call("t", {}) == ("error", "no fixture for these arguments")


def test_the_generator_is_byte_reproducible(tmp_path: Path) -> None:
    assert gen.main(["--check"]) == 0
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    for out, seed in ((tmp_path / "a", "1"), (tmp_path / "b", "999")):
        env["PYTHONHASHSEED"] = seed  # no set or dict order effects either
        subprocess.run(
            [sys.executable, str(GENERATOR), "--out", str(out)],
            check=True,
            env=env,
            capture_output=True,
        )
    names = sorted(p.name for p in DATASET.iterdir())
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == names
    for name in names:
        committed = (DATASET / name).read_bytes()
        assert (tmp_path / "a" / name).read_bytes() == committed
        assert (tmp_path / "b" / name).read_bytes() == committed
    # --check notices a changed file
    (tmp_path / "a" / "react.jsonl").write_bytes(b"{}\n")
    assert gen.main(["--check", "--out", str(tmp_path / "a")]) == 1


def _manifest_matches(directory: Path) -> None:
    manifest = json.loads((directory / "dataset.json").read_text(encoding="utf-8"))
    lines = ""
    total = 0
    for entry in manifest["files"]:
        data = (directory / entry["path"]).read_bytes().replace(b"\r\n", b"\n")
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], entry["path"]
        assert data.count(b"\n") == entry["cases"]
        lines += f"{entry['sha256']}  {entry['path']}\n"
        total += entry["cases"]
    assert hashlib.sha256(lines.encode("utf-8")).hexdigest() == manifest["sha256"]
    assert total == manifest["cases"]


def test_the_manifest_sha256s_match_also_with_crlf(tmp_path: Path) -> None:
    _manifest_matches(DATASET)
    manifest = json.loads((DATASET / "dataset.json").read_text(encoding="utf-8"))
    assert manifest["name"] == "golden"
    assert manifest["generator"] == "tools/generate_golden.py"
    assert [e["path"] for e in manifest["files"]] == [f"{p}.jsonl" for p in PATTERNS]
    crlf = tmp_path / "golden"
    shutil.copytree(DATASET, crlf)
    for path in crlf.iterdir():
        path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    _manifest_matches(crlf)


def test_the_docs_quote_real_tasks() -> None:
    """Each example of docs/golden-tasks.md (a ```json block after a line naming the task's id)
    is that task as generated."""
    text = (ROOT / "docs" / "golden-tasks.md").read_text(encoding="utf-8")
    quoted = re.findall(r"Task `([^`]+)`[^\n]*\n\n```json\n(.*?)\n```", text, re.DOTALL)
    assert {BY_ID[i]["category"] for i, _ in quoted} == set(CATEGORIES)
    assert {BY_ID[i]["pattern"] for i, _ in quoted} == set(PATTERNS)
    for task_id, block in quoted:
        assert json.loads(block) == BY_ID[task_id], task_id


def _lenient_drafts() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(task, step) of every draft the policy accepts: the lenient-tool tasks."""
    found = []
    for task in TASKS:
        for step in task["reference"]["steps"]:
            if "draft" not in step:
                continue
            spec = task["policy"]["allowed_tools"][step["tool"]]["required_arguments"]
            loose = [
                name
                for name in step["draft"]["arguments"]
                if spec[name] == "any" or spec[name] == {"type": "str"}
            ]
            if loose:
                found.append((task, step))
    return found


def test_lenient_drafts_break_only_the_tools_parameters() -> None:
    drafts = _lenient_drafts()
    # three per pattern, over all six domains
    assert Counter(task["pattern"] for task, _ in drafts) == dict.fromkeys(PATTERNS, 3)
    assert len({task["description"].split(":")[0] for task, _ in drafts}) == 6
    for task, step in drafts:
        tid = task["id"]
        assert task["category"] == "failure_inducing", tid
        assert task["description"].endswith("(argument validation: lenient tool)"), tid
        tool = next(t for t in task["tools"] if t["name"] == step["tool"])
        arguments = step["draft"]["arguments"]
        # the tool's declared parameters refuse the draft (checked with jsonschema, not the
        # generator's own subset) ...
        assert list(Draft202012Validator(tool["parameters"]).iter_errors(arguments)), tid
        # ... and the lenient tool answers it with an output (not an error)
        answered = [
            r for r in tool["responses"] if "when" in r and r["when"] == arguments and "output" in r
        ]
        assert len(answered) == 1, tid
        # the policy's argument contract accepts it: arh's own monitor finds nothing about its
        # arguments (while it does about the same call with a bad id)
        monitor = Monitor(Policy.from_dict(task["policy"]))
        call = {"step_id": "s1", "type": "tool_call", "tool_name": step["tool"]}
        found = monitor.check({**call, "arguments": arguments})
        assert not [f.rule_id for f in found if f.rule_id.startswith("ARH-SCH")], tid
        id_arg = next(a for a in arguments if a.endswith(("_id", "_ref")))
        found = monitor.check({**call, "arguments": {**arguments, id_arg: 7}})
        assert [f.rule_id for f in found if f.rule_id.startswith("ARH-SCH")], tid


def test_the_checker_refuses_a_lenient_task_that_would_pass_unvalidated() -> None:
    task, step = next(
        (t, s) for t, s in _lenient_drafts() if t["id"] == "react-failure-inducing-010"
    )
    assert gen.check_task(task).calls[0] == ("get_ticket", "refused")
    tool_index = next(i for i, t in enumerate(task["tools"]) if t["name"] == step["tool"])
    # the lenient tool answers the draft with the right ticket: nothing to show
    honest = copy.deepcopy(task)
    entry = honest["tools"][tool_index]["responses"][0]
    assert entry["when"] == step["draft"]["arguments"]
    entry["output"] = honest["tools"][tool_index]["responses"][1]["output"]
    # the tool fails on the draft: the agent sends the right arguments anyway
    failing = copy.deepcopy(task)
    failing["tools"][tool_index]["responses"][0] = {"when": entry["when"], "error": "not found"}
    # the draft is one the parameters accept: it is not a draft at all
    accepted = copy.deepcopy(task)
    accepted["reference"]["steps"][0]["draft"]["arguments"] = {"ticket_id": "TCK-99999"}
    for broken in (honest, failing, accepted):
        with pytest.raises(gen.TaskError):
            gen.check_task(broken)
