"""The same inputs give the same bytes: across runs, argument orders and JSON key orders.

Each scenario copies a set of traces and their policy into a temporary directory and runs
``arh validate --json-out`` on it. The file paths stay the same between runs (they appear in
the report), only the order of arguments or of keys inside the files changes.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conftest import REFERENCE, SAMPLES, Run, require_shared

CASES = REFERENCE / "benchmarks" / "cases"


@dataclass
class Scenario:
    policy: Path
    traces: list[Path]
    out: Path


def _reorder(value: Any, order: Callable[[list[str]], list[str]]) -> Any:
    """``value`` with the keys of every object rearranged by ``order``; list order is kept."""
    if isinstance(value, dict):
        return {key: _reorder(value[key], order) for key in order(list(value))}
    if isinstance(value, list):
        return [_reorder(item, order) for item in value]
    return value


def _reversed_keys(keys: list[str]) -> list[str]:
    return keys[::-1]


def _shuffler(seed: int) -> Callable[[list[str]], list[str]]:
    rng = random.Random(seed)  # noqa: S311 - a reproducible order, not a secret

    def shuffle(keys: list[str]) -> list[str]:
        keys = keys[:]
        rng.shuffle(keys)
        return keys

    return shuffle


def _rewrite(path: Path, order: Callable[[list[str]], list[str]]) -> None:
    """Rewrite a .json or .jsonl file with reordered keys (records stay in their order)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        lines = [
            json.dumps(_reorder(json.loads(line), order), ensure_ascii=False)
            for line in text.splitlines()
            if line.strip()
        ]
        new = "\n".join(lines) + "\n"
    else:
        new = json.dumps(_reorder(json.loads(text), order), indent=2, ensure_ascii=False) + "\n"
    path.write_text(new, encoding="utf-8")


def _samples(tmp_path: Path) -> Scenario:
    root = tmp_path / "samples"
    policy = root / "policy.json"
    policy.parent.mkdir(parents=True)
    policy.write_bytes((SAMPLES / "policy_trajectory.json").read_bytes())
    traces = []
    for source in sorted((SAMPLES / "traces").iterdir()):
        target = root / "traces" / source.name
        target.parent.mkdir(exist_ok=True)
        target.write_bytes(source.read_bytes())
        traces.append(target)
    return Scenario(policy, traces, tmp_path / "report.json")


def _reference_samples(tmp_path: Path) -> Scenario:
    require_shared(REFERENCE)
    root = tmp_path / "reference"
    (root / "traces").mkdir(parents=True)
    policy = root / "policy.json"
    policy.write_bytes((REFERENCE / "samples" / "policy.json").read_bytes())
    traces = []
    for source in sorted((REFERENCE / "samples" / "traces").glob("*.json")):
        target = root / "traces" / source.name
        target.write_bytes(source.read_bytes())
        traces.append(target)
    return Scenario(policy, traces, tmp_path / "report.json")


def _case_groups(tmp_path: Path) -> list[Scenario]:
    """The 34 reference cases, one scenario per distinct policy (32 of them share one)."""
    require_shared(CASES)
    groups: dict[str, Scenario] = {}
    paths = sorted(CASES.glob("*.json"))
    assert len(paths) == 34
    for path in paths:
        case = json.loads(path.read_text(encoding="utf-8"))
        key = json.dumps(case["policy"], sort_keys=True)
        if key not in groups:
            root = tmp_path / f"group{len(groups)}"
            (root / "traces").mkdir(parents=True)
            policy = root / "policy.json"
            policy.write_text(json.dumps(case["policy"], indent=2), encoding="utf-8")
            groups[key] = Scenario(policy, [], tmp_path / f"report{len(groups)}.json")
        group = groups[key]
        target = group.policy.parent / "traces" / path.name
        target.write_text(json.dumps(case["trace"], indent=2), encoding="utf-8")
        group.traces.append(target)
    assert sum(len(g.traces) for g in groups.values()) == 34
    return list(groups.values())


def _scenarios(tmp_path: Path, which: str) -> list[Scenario]:
    if which == "samples":
        return [_samples(tmp_path)]
    if which == "reference-samples":
        return [_reference_samples(tmp_path)]
    return _case_groups(tmp_path)


def _run(arh: Callable[..., Run], scenario: Scenario, traces: list[Path]) -> tuple[bytes, str]:
    """Validate; return the JSON report's bytes and the console output."""
    scenario.out.unlink(missing_ok=True)
    run = arh("validate", "--policy", scenario.policy, *traces, "--json-out", scenario.out)
    assert run.status in (0, 1), run.err
    assert "Traceback" not in run.err
    return scenario.out.read_bytes(), run.out


WHICH = ["samples", "reference-samples", "cases"]


@pytest.mark.parametrize("which", WHICH)
def test_two_runs_give_identical_bytes(arh: Callable[..., Run], tmp_path: Path, which: str) -> None:
    for scenario in _scenarios(tmp_path, which):
        first = _run(arh, scenario, scenario.traces)
        second = _run(arh, scenario, scenario.traces)
        assert first == second
        assert json.loads(first[0])["reports"], "the scenario validated nothing"


@pytest.mark.parametrize("which", WHICH)
def test_argument_order_does_not_matter(
    arh: Callable[..., Run], tmp_path: Path, which: str
) -> None:
    for scenario in _scenarios(tmp_path, which):
        baseline = _run(arh, scenario, scenario.traces)
        orders = [scenario.traces[::-1]]
        for seed in (1, 2, 3):
            shuffled = scenario.traces[:]
            random.Random(seed).shuffle(shuffled)  # noqa: S311 - reproducible test order
            orders.append(shuffled)
        for order in orders:
            report, console = _run(arh, scenario, order)
            assert report == baseline[0], [p.name for p in order]
            assert console == baseline[1], [p.name for p in order]


def test_directory_and_file_arguments_give_the_same_report(
    arh: Callable[..., Run], tmp_path: Path
) -> None:
    # naming the directory or each of its files (in any order) reads the same sources
    scenario = _samples(tmp_path)
    by_files = _run(arh, scenario, scenario.traces[::-1])
    by_directory = _run(arh, scenario, [scenario.traces[0].parent])
    assert by_directory == by_files


@pytest.mark.parametrize("which", WHICH)
@pytest.mark.parametrize("order", ["reversed", "shuffled"])
def test_key_order_of_trace_files_does_not_matter(
    arh: Callable[..., Run], tmp_path: Path, which: str, order: str
) -> None:
    for scenario in _scenarios(tmp_path, which):
        baseline = _run(arh, scenario, scenario.traces)
        before = [p.read_bytes() for p in scenario.traces]
        rearrange = _reversed_keys if order == "reversed" else _shuffler(7)
        for path in scenario.traces:
            _rewrite(path, rearrange)
        assert [p.read_bytes() for p in scenario.traces] != before  # the files did change
        assert _run(arh, scenario, scenario.traces) == baseline


@pytest.mark.parametrize("which", WHICH)
@pytest.mark.parametrize("order", ["reversed", "shuffled"])
def test_key_order_of_the_policy_does_not_matter(
    arh: Callable[..., Run], tmp_path: Path, which: str, order: str
) -> None:
    # the report carries the policy's sha256, which is computed from its meaning, so the
    # whole report (hash included) must stay byte-identical
    for scenario in _scenarios(tmp_path, which):
        baseline = _run(arh, scenario, scenario.traces)
        before = scenario.policy.read_bytes()
        _rewrite(scenario.policy, _reversed_keys if order == "reversed" else _shuffler(11))
        assert scenario.policy.read_bytes() != before
        assert _run(arh, scenario, scenario.traces) == baseline


def test_a_changed_policy_changes_the_hash(arh: Callable[..., Run], tmp_path: Path) -> None:
    # the counterpart of the test above: the hash is not a constant
    scenario = _samples(tmp_path)
    baseline = json.loads(_run(arh, scenario, scenario.traces)[0])
    policy = json.loads(scenario.policy.read_text(encoding="utf-8"))
    policy["completion"] = {**policy.get("completion", {}), "max_steps": 999}
    scenario.policy.write_text(json.dumps(policy), encoding="utf-8")
    changed = json.loads(_run(arh, scenario, scenario.traces)[0])
    assert changed["policy"]["sha256"] != baseline["policy"]["sha256"]
    assert changed["policy"]["policy_id"] == baseline["policy"]["policy_id"]


def test_reorder_helper_keeps_values_and_list_order() -> None:
    doc = {"a": 1, "b": [{"x": 1, "y": 2}, 3], "c": {"d": None, "e": "f"}}
    flipped = _reorder(doc, _reversed_keys)
    assert flipped == doc
    assert list(flipped) == ["c", "b", "a"]
    assert list(flipped["b"][0]) == ["y", "x"]
    assert flipped["b"][1] == 3


def _validate_in(folder: Path, env: dict[str, str]) -> dict[str, bytes]:
    """Run ``arh validate`` (every report format) and ``arh stats`` as their own process, in
    ``folder``, with ``env`` added to the environment; the bytes of each file written."""
    out = folder / "out"
    out.mkdir(exist_ok=True)
    commands = [
        ["validate", "--policy", "policy.json", "traces", "--quiet", "--json-out", "out/r é.json",
         "--md-out", "out/r.md", "--junit-out", "out/r.xml", "--sarif-out", "out/r.sarif",
         "--html-out", "out/r.html"],
        ["stats", "out/r é.json", "--quiet", "--json-out", "out/s.json", "--md-out", "out/s.md"],
    ]  # fmt: skip
    for command in commands:
        done = subprocess.run(
            [sys.executable, "-m", "agent_reliability_harness", *command],
            cwd=folder,
            env={**os.environ, **env},
            capture_output=True,
            check=False,
            timeout=60,
        )
        assert b"Traceback" not in done.stderr, done.stderr.decode("utf-8", "replace")
    return {path.name: path.read_bytes() for path in sorted(out.iterdir())}


@pytest.mark.skipif(os.name == "nt", reason="file names are bytes on POSIX systems only")
def test_file_names_are_reported_the_same_whatever_the_locale(tmp_path: Path) -> None:
    # Under a locale that is not UTF-8 (PYTHONUTF8=0 with LC_ALL=C, or a Latin-1 locale) Python
    # decodes file names with that locale's encoding: a name's non-ASCII bytes became lone
    # surrogates (or other characters) in every report, and in the ids of traces named after
    # their file, so that baselines no longer matched.
    folder = tmp_path / "run"
    write = _writer(folder)
    policy = {"policy_id": "names", "allowed_tools": {"search": {}}}
    write("policy.json", json.dumps(policy))
    failing = {
        "trace_id": "t-1",
        "agent_name": "agent",
        "workflow": "flow",
        "steps": [
            {"step_id": "s1", "type": "tool_call", "tool_name": "delete"},
            {"step_id": "s2", "type": "model_response", "text": "done"},
        ],
    }
    write("traces/caf\u00e9 \u4e2d\u6587.json", json.dumps(failing, indent=2))
    transcript = [  # no id: it is named after its file
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    ]
    write("traces/sub/na\u00efve run.json", json.dumps(transcript))
    write("traces/bad \u00e9.json", '{"trace_id": ')
    write(os.fsdecode(b"traces/raw\xff.json"), json.dumps({**failing, "trace_id": "t-2"}))
    utf8 = _validate_in(folder, {"PYTHONUTF8": "1"})
    assert set(utf8) == {"r é.json", "r.md", "r.xml", "r.sarif", "r.html", "s.json", "s.md"}
    report = json.loads(utf8["r é.json"])
    assert [r["source_path"] for r in report["reports"]] == [
        "traces/caf\u00e9 \u4e2d\u6587.json",
        "traces/raw\udcff.json",
        "traces/sub/na\u00efve run.json",
    ]
    assert report["reports"][2]["trace_id"] == "sub/na\u00efve run"
    assert [e["source"] for e in report["input_errors"]] == ["traces/bad \u00e9.json"]
    assert b"traces/caf%C3%A9%20%E4%B8%AD%E6%96%87.json" in utf8["r.sarif"]
    assert b'"startLine": 6' in utf8["r.sarif"]  # the failing step's line, read again
    for env in ({"PYTHONUTF8": "0", "LC_ALL": "C", "LANG": "C"}, {"PYTHONUTF8": "0"}):
        assert _validate_in(folder, env) == utf8, env


@pytest.mark.skipif(os.name == "nt", reason="file names are bytes on POSIX systems only")
def test_report_files_do_not_depend_on_the_rest_of_the_environment(tmp_path: Path) -> None:
    # only the console may follow the terminal, the time zone and colour settings are not read,
    # and nothing is ordered by hash
    folder = tmp_path / "run"
    write = _writer(folder)
    write("policy.json", json.dumps({"policy_id": "env", "allowed_tools": {"search": {}}}))
    for index, tool in enumerate(["search", "delete", "pay", "search"]):
        steps = [
            {"step_id": "s1", "type": "tool_call", "tool_name": tool, "arguments": {"q": "x"}},
            {"step_id": "s2", "type": "model_response", "text": "done"},
        ]
        trace = {"trace_id": f"t{index}", "agent_name": "a", "workflow": "w", "steps": steps}
        write(f"traces/t{index}.json", json.dumps(trace))
    write("traces/bad.json", "{")
    plain = _validate_in(folder, {"PYTHONHASHSEED": "0"})
    other = {
        "PYTHONHASHSEED": "12345",
        "TZ": "Asia/Kolkata",
        "COLUMNS": "7",
        "FORCE_COLOR": "1",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "PYTHONIOENCODING": "ascii",
    }
    assert _validate_in(folder, other) == plain


def _writer(folder: Path) -> Callable[[str, str], None]:
    def write(name: str, text: str) -> None:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    return write
