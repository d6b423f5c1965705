"""`arh stats`, the statistical gates of `arh compare` and the labels of `arh validate`, scenario
by scenario through ``main([...])``.

The runs are generated here: 8 tasks of a refund workflow, each run either clean (passes the
policy) or ending without an answer (ARH-CMP-001, an error). Expected p-values are worked out in
the comments from the outcome tables.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from conftest import ROOT, Run, assert_markdown_is_inert, load_json

Arh = Callable[..., Run]
TASKS = [f"refund-{i:02d}" for i in range(1, 9)]
POLICY = {
    "policy_id": "refunds",
    "allow_unlisted_tools": True,
    "completion": {"require_final_response": True},
}


def _trace(
    trace_id: str, ok: bool, *, workflow: str = "refunds", **metadata: Any
) -> dict[str, Any]:
    steps: list[dict[str, Any]] = [
        {"step_id": "s1", "type": "tool_call", "tool_name": "lookup", "arguments": {},
         "latency_ms": 100, "cost_usd": 0.001},
    ]  # fmt: skip
    if ok:
        steps.append({"step_id": "s2", "type": "model_response", "text": "done"})
    doc: dict[str, Any] = {
        "trace_id": trace_id,
        "agent_name": "agent",
        "workflow": workflow,
        "steps": steps,
    }
    if metadata:
        doc["metadata"] = metadata
    return doc


def _write_jsonl(path: Path, docs: Sequence[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    return path


def _policy(tmp_path: Path) -> Path:
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(POLICY), encoding="utf-8")
    return path


def _table(rows: dict[str, str], runs: int) -> list[list[tuple[str, bool]]]:
    """``{task: "PPFPP"}`` -> per run, the (task, passed) pairs."""
    return [[(task, row[r] == "P") for task, row in rows.items()] for r in range(runs)]


def _reports_per_run(
    arh: Arh, tmp_path: Path, name: str, rows: dict[str, str], runs: int = 5
) -> list[Path]:
    """Validate each run into its own report; the trace ids repeat across runs."""
    policy = _policy(tmp_path)
    out = []
    for r, run in enumerate(_table(rows, runs), 1):
        traces = _write_jsonl(tmp_path / name / f"run-{r}.jsonl", [_trace(t, ok) for t, ok in run])
        report = tmp_path / f"{name}-{r}.json"
        result = arh("validate", "--policy", policy, traces, "--json-out", report, "--quiet")
        assert result.err == ""
        out.append(report)
    return out


def _one_report(arh: Arh, tmp_path: Path, name: str, rows: dict[str, str], runs: int = 5) -> Path:
    """Validate every run into one report; the trace ids carry a run suffix."""
    docs = [
        _trace(f"{task}-run{r}", ok, reward=1 if ok else 0)
        for r, run in enumerate(_table(rows, runs), 1)
        for task, ok in run
    ]
    traces = _write_jsonl(tmp_path / f"{name}.jsonl", docs)
    report = tmp_path / f"{name}.json"
    run = arh(
        "validate", "--policy", _policy(tmp_path), traces, "--outcome-at", "/metadata/reward",
        "--json-out", report, "--quiet",
    )  # fmt: skip
    assert run.err == ""
    return report


# Baseline: 8 tasks x 5 runs, two single failures (38 of 40 pass).
BASELINE = dict.fromkeys(TASKS, "PPPPP") | {"refund-03": "PFPPP", "refund-06": "PPPFP"}
# A real regression: tasks 1-6 now fail 2 of 5 runs (28 of 40 pass). Per-task success-rate
# differences: refund-01,02,04,05: 5/5 -> 3/5 = -2/5; refund-03, 06: 4/5 -> 3/5 = -1/5; 07, 08:
# 0. Six non-zero differences, all negative: the exact permutation p-value is 2 / 2^6 = 1/32.
REGRESSION = dict.fromkeys(TASKS[:6], "PFPFP") | dict.fromkeys(TASKS[6:], "PPPPP")
# Noise: one failure more than the baseline, on other tasks. Differences: refund-01 -1/5,
# refund-03 +1/5, refund-05 -1/5, refund-06 +1/5, refund-08 -1/5: five non-zero differences of
# equal size, sum -1/5. Every sign assignment of five 1/5s sums to an odd multiple of 1/5, so
# |sum| >= 1/5 for all 32 of them: p = 1.
NOISE = dict.fromkeys(TASKS, "PPPPP") | {"refund-01": "PPFPP", "refund-05": "FPPPP",
                                       "refund-08": "PFPPP"}  # fmt: skip


def test_a_real_regression_over_five_runs_is_detected(arh: Arh, tmp_path: Path) -> None:
    base = _reports_per_run(arh, tmp_path, "base", BASELINE)
    cand = _reports_per_run(arh, tmp_path, "cand", REGRESSION)
    out = tmp_path / "compare.json"
    run = arh(
        "compare", "--baseline", *base, "--candidate", *cand,
        "--gate", "pass rate drop significant at 0.05", "--json-out", out,
    )  # fmt: skip
    assert run.status == 1, run.out + run.err
    assert run.err == ""
    assert "GATE: FAIL (fail-on never)" in run.out
    reason = (
        "  - workflow 'refunds': pass rate dropped significantly (mean per task 0.950 -> 0.700 "
        "over 8 paired tasks, 6 down, 0 up): p = 0.03125 (exact paired permutation), at "
        "significance 0.05 "
        "[--gate 'pass rate drop significant at 0.05']"
    )
    assert reason in run.out.splitlines()
    data = load_json(out)
    assert data["gate"]["passed"] is False
    assert data["gate"]["fail_on"] == "never"
    stats = data["statistics"]["workflows"][0]
    rate = stats["tests"][0]
    assert rate["p_value"] == 1 / 32
    assert rate["down"] == TASKS[:6]
    assert rate["up"] == []
    assert (stats["baseline"]["successes"], stats["candidate"]["successes"]) == (38, 28)
    # the trace ids repeat across the per-run reports: the trace-by-trace part pairs run n with
    # run n under the names <id>@<n>
    assert "PASS->FAIL  refund-01@2" in run.out


def test_noise_is_not_flagged(arh: Arh, tmp_path: Path) -> None:
    base = _reports_per_run(arh, tmp_path, "base", BASELINE)
    cand = _reports_per_run(arh, tmp_path, "cand", NOISE)
    out = tmp_path / "compare.json"
    run = arh(
        "compare", "--baseline", *base, "--candidate", *cand,
        "--gate", "pass rate drop significant at 0.05", "--json-out", out,
    )  # fmt: skip
    assert run.status == 0, run.out
    assert "GATE: PASS (fail-on never)" in run.out
    rate = load_json(out)["statistics"]["workflows"][0]["tests"][0]
    assert rate["p_value"] == 1
    assert (rate["down"], rate["up"]) == (["refund-01", "refund-05", "refund-08"],
                                          ["refund-03", "refund-06"])  # fmt: skip
    # the same candidate fails a trace-by-trace gate, which is what the statistics avoid
    strict = arh("compare", "--baseline", *base, "--candidate", *cand, "--fail-on", "regressions")
    assert strict.status == 1


def test_too_few_runs_are_reported_as_insufficient(arh: Arh, tmp_path: Path) -> None:
    # one run of four tasks; every task goes from pass to fail. McNemar's exact p-value is
    # 2 / 2^4 = 0.125 even so: no outcome of four pairs can reach 0.05
    rows = dict.fromkeys(TASKS[:4], "P")
    base = _reports_per_run(arh, tmp_path, "base", rows, runs=1)
    cand = _reports_per_run(arh, tmp_path, "cand", dict.fromkeys(rows, "F"), runs=1)
    gate = ["--gate", "pass rate drop significant at 0.05"]
    run = arh("compare", "--baseline", *base, "--candidate", *cand, *gate)
    assert run.status == 1
    assert (
        "  - workflow 'refunds': insufficient data for significance 0.05: 4 tasks ran on both "
        "sides, and the smallest p-value that many paired tasks can give is 0.125 "
        "[--gate 'pass rate drop significant at 0.05']"
    ) in run.out.splitlines()
    assert "pass rate p = 0.125 (McNemar exact, 4 paired)" in run.out
    markdown = tmp_path / "compare.md"
    allowed = arh(
        "compare", "--baseline", *base, "--candidate", *cand, *gate, "--allow-insufficient-data",
        "--md-out", markdown,
    )  # fmt: skip
    assert allowed.status == 0
    assert "significance 0.05 ALLOWED" in allowed.out
    # why it was let through, as arh stats says it: on the console and in the Markdown report
    reason = (
        "workflow 'refunds': insufficient data for significance 0.05: 4 tasks ran on both sides, "
        "and the smallest p-value that many paired tasks can give is 0.125"
    )
    assert f"note: {reason} [--gate 'pass rate drop significant at 0.05']" in allowed.out
    assert (
        f"- allowed: {reason} \\[--gate 'pass rate drop significant at 0.05'\\]"
        in markdown.read_text(encoding="utf-8").splitlines()
    )


def test_gate_file_reasons_name_the_line(arh: Arh, tmp_path: Path) -> None:
    base = _one_report(arh, tmp_path, "base", BASELINE)
    cand = _one_report(arh, tmp_path, "cand", REGRESSION)
    gates = tmp_path / "arh.toml"
    gates.write_text(
        "# gates of the refund team\n"
        "[defaults]\n"
        "significance = 0.05\n"
        "\n"
        "[workflows.refunds]\n"
        "min_pass_rate = 0.9\n"
        "max_flaky_tasks = 6\n",
        encoding="utf-8",
    )
    run = arh("compare", "--baseline", base, "--candidate", cand, "--gates", gates)
    assert run.status == 1
    where = str(gates)  # the path as given to --gates
    lines = run.out.splitlines()
    assert (
        f"  - workflow 'refunds': pass rate 0.700 (28 of 40 runs) is below min_pass_rate 0.9 "
        f"[{where}:6]"
    ) in lines
    assert any(line.endswith(f"at significance 0.05 [{where}:3]") for line in lines)
    # flaky tasks: refund-01..06 each fail 2 of 5 runs: 6 flaky, not more than 6
    assert not any("max_flaky_tasks" in line for line in lines if line.startswith("  - "))


def test_bad_gate_files_name_the_file_line_and_key(arh: Arh, tmp_path: Path) -> None:
    base = _one_report(arh, tmp_path, "base", BASELINE)
    gates = tmp_path / "arh.toml"
    gates.write_text("[workflows.refunds]\nmin_pass_rate = 0.9\nmax_flakey_tasks = 1\n", "utf-8")
    run = arh("compare", "--baseline", base, "--candidate", base, "--gates", gates)
    assert run.status == 2  # the gate file: a configuration error
    assert run.err == (
        f"error: invalid gate file: {gates}:3: /workflows/refunds/max_flakey_tasks: unknown gate "
        "key 'max_flakey_tasks' (did you mean 'max_flaky_tasks'?)\n"
    )
    missing = arh("stats", base, "--gates", tmp_path / "nope.toml")
    assert missing.status == 2
    assert missing.err.startswith("error: invalid gate file: ")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "# the gates of the refund team: none agreed yet\n\n",
        'outcome = "verdict"\n[defaults]\nk = 5\nallow_insufficient_data = true\n',
        "[workflows.refunds]\nk = 2\n",
    ],
    ids=["empty", "comments", "settings-only", "workflow-without-threshold"],
)
def test_a_gate_file_without_a_gate_is_invalid(arh: Arh, tmp_path: Path, text: str) -> None:
    # such a file checked nothing and made --fail-on default to never: "GATE: PASS" and exit 0
    # where arh compare without it fails on the traces that went from pass to fail
    base = _one_report(arh, tmp_path, "base", BASELINE)
    cand = _one_report(arh, tmp_path, "cand", REGRESSION)
    assert arh("compare", "--baseline", base, "--candidate", cand, "--quiet").status == 1
    gates = tmp_path / "arh.toml"
    gates.write_text(text, encoding="utf-8")
    message = (
        f"error: invalid gate file: {gates}: sets no gate: a gate file needs at least one "
        "threshold (such as min_pass_rate or significance) in [defaults] or in a "
        "[workflows.<name>] table\n"
    )
    for args in (["compare", "--baseline", base, "--candidate", cand], ["stats", cand]):
        run = arh(*args, "--gates", gates)
        assert (run.status, run.out, run.err) == (2, "", message)


def test_a_gate_file_for_workflows_that_did_not_run_fails(arh: Arh, tmp_path: Path) -> None:
    # its thresholds apply to no workflow present: the gate says so and fails
    base = _one_report(arh, tmp_path, "base", BASELINE)
    gates = tmp_path / "arh.toml"
    gates.write_text("[workflows.billing]\nmin_pass_rate = 0.5\n", encoding="utf-8")
    reason = (
        f"  - workflow 'billing': no runs, but the gate file sets thresholds for it [{gates}:1]"
    )
    for args in (["compare", "--baseline", base, "--candidate", base], ["stats", base]):
        run = arh(*args, "--gates", gates)
        assert run.status == 1
        assert reason in run.out.splitlines()


def test_statistical_gates_say_what_the_trace_by_trace_gate_lets_through(
    arh: Arh, tmp_path: Path
) -> None:
    # --gate (or --gates) makes --fail-on default to never; a note says what that lets through.
    # By hand: REGRESSION fails runs 2 and 4 of refund-01..06 (12 traces, one ARH-CMP-001 each);
    # refund-03-run2 and refund-06-run4 failed on the baseline already: 10 go from pass to fail,
    # with 10 new error findings
    base = _one_report(arh, tmp_path, "base", BASELINE)
    cand = _one_report(arh, tmp_path, "cand", REGRESSION)
    md, html = tmp_path / "compare.md", tmp_path / "compare.html"
    gate = ["compare", "--baseline", base, "--candidate", cand, "--gate", "pass rate >= 0"]
    run = arh(*gate, "--md-out", md, "--html-out", html)
    assert run.status == 0
    note = (
        "not gated, as --fail-on defaults to never with --gate or --gates: 10 new error "
        "findings, 10 traces from pass to fail (--fail-on regressions gates them too)"
    )
    lines = run.out.splitlines()
    assert lines[lines.index("GATE: PASS (fail-on never)") - 2] == f"note: {note}"
    assert f"> Note: {note}" in md.read_text(encoding="utf-8").splitlines()
    assert f'<p class="note">Note: {note}.</p>' in html.read_text(encoding="utf-8")
    # asked for: nothing to say
    assert "note: not gated" not in arh(*gate, "--fail-on", "never").out
    regressions = arh(*gate, "--fail-on", "regressions")
    assert regressions.status == 1
    assert "note: not gated" not in regressions.out
    # nothing that the trace-by-trace gate would fail on: no note
    assert "note: not gated" not in arh(*gate[:4], base, *gate[5:]).out


def test_a_gate_file_line_counts_line_feeds_only(arh: Arh, tmp_path: Path) -> None:
    # a comment holding U+2028 was two lines for the key finder (str.splitlines) and one for
    # TOML: every key after it was reported a line too far down
    base = _one_report(arh, tmp_path, "base", BASELINE)
    gates = tmp_path / "arh.toml"
    gates.write_text("# refunds\u2028only\n[workflows.refunds]\nmax_flakey_tasks = 1\n", "utf-8")
    run = arh("stats", base, "--gates", gates)
    assert run.status == 2
    assert run.err.startswith(f"error: invalid gate file: {gates}:3: /workflows/refunds/"), run.err


def test_gate_files_are_decoded_as_trace_files_are(arh: Arh, tmp_path: Path) -> None:
    # UTF-16 got "not valid UTF-8: cannot decode byte 0xff at offset 0"; bad bytes had no line
    base = _one_report(arh, tmp_path, "base", BASELINE)
    gates = tmp_path / "arh.toml"
    gates.write_bytes('outcome = "verdict"\n'.encode("utf-16"))
    run = arh("stats", base, "--gates", gates)
    assert (run.status, run.err) == (
        2,
        f"error: invalid gate file: {gates}: the file is UTF-16 encoded; arh reads UTF-8 TOML\n",
    )
    gates.write_bytes(b'outcome = "verdict"\n# caf\xe9\n')
    run = arh("stats", base, "--gates", gates)
    message = (
        f"error: invalid gate file: {gates}:2:6: not valid UTF-8: cannot decode byte 0xe9 at "
        "offset 25\n"
    )
    assert (run.status, run.err) == (2, message)
    gates.write_bytes(b"\xef\xbb\xbf[defaults]\nmin_pass_rate = 0\n")  # a UTF-8 BOM is dropped
    assert arh("stats", base, "--gates", gates).err == ""


def test_gate_files_nested_too_deeply_are_invalid(arh: Arh, tmp_path: Path) -> None:
    base = _one_report(arh, tmp_path, "base", BASELINE)
    gates = tmp_path / "deep.toml"
    gates.write_text("x = " + "[" * 2000 + "]" * 2000 + "\n", "utf-8")
    message = (
        f"error: invalid gate file: {gates}: nested too deeply to read: arrays or inline tables "
        "hundreds of levels deep\n"
    )
    for args in (["stats", base], ["compare", "--baseline", base, "--candidate", base]):
        run = arh(*args, "--gates", gates)
        assert (run.status, run.err) == (2, message)


def test_stats_of_one_report_with_every_run(arh: Arh, tmp_path: Path) -> None:
    report = _one_report(arh, tmp_path, "base", BASELINE)
    run = arh("stats", report)
    assert run.status == 0
    assert run.err == ""
    lines = run.out.splitlines()
    assert lines[0] == "1 report · outcome verdict · 40 runs of 8 tasks in 1 workflow"
    assert lines[2] == "refunds · 8 tasks · 5 runs per task · k = 5"
    # 38 of 40. Wilson, by hand with z^2 = 3.8415: centre (0.95 + 3.8415/80) / (1 + 3.8415/40)
    # = 0.91058, half-width 1.95996 / 1.09604 * sqrt(0.95 * 0.05 / 40 + 3.8415 / 6400) = 0.07560
    assert lines[3] == "  pass@1    0.950  95% CI 0.835-0.986  (38 of 40 runs)"
    # pass^k by hand: 6 tasks 5/5, two 4/5. pass^2 = (6 + 2 * C(4,2)/C(5,2)) / 8 = (6 + 1.2)/8
    # = 0.9; pass^5 = 6/8 = 0.75
    assert lines[4] == "  pass^k    k=1 0.950 · k=2 0.900 · k=3 0.850 · k=4 0.800 · k=5 0.750"
    assert lines[6] == "  tasks     6 stable-pass · 0 stable-fail · 2 flaky: refund-03, refund-06"
    assert lines[7] == "  rules     ARH-CMP-001 in 2 of 40 runs (5.0%)"
    # the traces record latency and cost but no tokens: n/a, not left out
    assert lines[8] == (
        "  run 1     8 traces · 8 succeeded · latency p50 100 ms p95 100 ms · cost $0.0080 · "
        "tokens n/a"
    )


def test_rates_are_rounded_from_the_exact_fraction_half_to_even(arh: Arh, tmp_path: Path) -> None:
    # 16 tasks x 5 runs, 13 of the 80 runs pass: pass@1 = 13/80 = 0.1625 exactly, a tie at 3
    # decimals, rounded to even as 5/16 = 0.3125 is. (The float nearest 0.1625 lies above it,
    # so formatting the float printed 0.163.)
    rows = {f"t{i:02}": "FFFFF" for i in range(16)} | {
        "t00": "PPPPP",
        "t01": "PPPPP",
        "t02": "PPPFF",
    }
    run = arh("stats", _one_report(arh, tmp_path, "ties", rows))
    assert run.out.splitlines()[3].startswith("  pass@1    0.162  95% CI ")


def test_the_default_k_and_both_curves_in_every_summary(arh: Arh, tmp_path: Path) -> None:
    # Task a (workflow one) passes runs 1 and 3 of 3, task b (workflow two) all 3. With the
    # gate file's default k = 2, by hand: pass^2 = (C(2,2)/C(3,2) + 1) / 2 = (1/3 + 1) / 2 = 2/3;
    # pass@1 = (2/3 + 1) / 2 = 5/6; pass@2 = 1 for both tasks; pass^3 = (0 + 1) / 2.
    docs = [
        _trace(f"{task}-run{r}", task == "b" or r != 2, workflow="one" if task == "a" else "two")
        for r in (1, 2, 3)
        for task in ("a", "b")
    ]
    report = tmp_path / "runs.json"
    traces = _write_jsonl(tmp_path / "runs.jsonl", docs)
    arh("validate", "--policy", _policy(tmp_path), traces, "--json-out", report, "--quiet")
    gates = tmp_path / "arh.toml"
    gates.write_text("[defaults]\nk = 2\nmin_pass_rate = 0\n", encoding="utf-8")
    md = tmp_path / "stats.md"
    run = arh("stats", report, "--gates", gates, "--md-out", md)
    assert run.status == 0
    # the summary of all workflows takes the default k too, not the fewest runs (3)
    assert "all workflows · 2 tasks · 3 runs per task · k = 2" in run.out.splitlines()
    lines = md.read_text(encoding="utf-8").splitlines()
    assert "| all workflows | 2 | 6 | 0.833 (0.436\u20130.970) | 2 | 0.667 | 1.000 | 1 |" in lines
    hat, at = lines.index("### pass^k by k"), lines.index("### pass@k by k")
    assert lines[hat + 2 : hat + 5] == [
        "| Workflow | k=1 | k=2 | k=3 |",
        "|---|---|---|---|",
        "| all workflows | 0.833 | 0.667 | 0.500 |",
    ]
    assert lines[at + 2 : at + 7] == [
        "| Workflow | k=1 | k=2 | k=3 |",
        "|---|---|---|---|",
        "| all workflows | 0.833 | 1.000 | 1.000 |",
        "| `one` | 0.667 | 1.000 | 1.000 |",
        "| `two` | 1.000 | 1.000 | 1.000 |",
    ]


def test_per_run_reports_and_one_report_agree(arh: Arh, tmp_path: Path) -> None:
    together = _one_report(arh, tmp_path, "all", NOISE)
    split = _reports_per_run(arh, tmp_path, "split", NOISE)
    one, several = tmp_path / "one.json", tmp_path / "several.json"
    assert arh("stats", together, "--json-out", one, "--quiet").status == 0
    assert arh("stats", *split, "--json-out", several, "--quiet").status == 0
    first, second = load_json(one)["workflows"][0], load_json(several)["workflows"][0]
    for data in (first, second):
        for task in data["task_results"]:
            del task["trace_ids"]  # refund-01-run1 in one, refund-01 in the other
    assert first == second


def test_outcomes_from_labels(arh: Arh, tmp_path: Path) -> None:
    # a run the policy passes can still have failed the task (reward 0), and a run that solved
    # the task can still have broken the policy: the outcome modes count them differently
    docs = [
        _trace("t1-run1", True, reward=1, task_id="t1"),
        _trace("t1-run2", True, reward=0, task_id="t1"),
        _trace("t2-run1", False, reward=1.0, task_id="t2"),
        _trace("t2-run2", True, reward=True, task_id="t2"),
    ]
    traces = _write_jsonl(tmp_path / "runs.jsonl", docs)
    report = tmp_path / "report.json"
    arh(
        "validate", "--policy", _policy(tmp_path), traces, "--json-out", report, "--quiet",
        "--task-key", "/metadata/task_id", "--outcome-at", "/metadata/reward",
    )  # fmt: skip
    reports = load_json(report)["reports"]
    assert [(r["task"], r["outcome"]) for r in reports] == [
        ("t1", 1), ("t1", 0), ("t2", 1.0), ("t2", True),
    ]  # fmt: skip
    counts = {}
    for outcome in ("verdict", "label", "both"):
        out = tmp_path / f"{outcome}.json"
        arh("stats", report, "--outcome", outcome, "--json-out", out, "--quiet")
        counts[outcome] = load_json(out)["overall"]["successes"]
    # verdict: t1-run1, t1-run2, t2-run2; label: t1-run1, t2-run1, t2-run2; both: t1-run1, t2-run2
    assert counts == {"verdict": 3, "label": 3, "both": 2}


def test_missing_labels_are_input_errors(arh: Arh, tmp_path: Path) -> None:
    traces = _write_jsonl(
        tmp_path / "runs.jsonl",
        [
            _trace("a", True, reward=1),
            _trace("b", True),
            _trace("c", True, reward="yes"),
            {**_trace("d", True), "metadata": {}},  # empty: as if it were not there
        ],
    )
    report = tmp_path / "report.json"
    run = arh(
        "validate", "--policy", _policy(tmp_path), traces, "--outcome-at", "/metadata/reward",
        "--json-out", report, "--quiet",
    )  # fmt: skip
    assert run.status == 3  # an input error
    name = traces.as_posix()
    missing = "no member 'reward' here (looking for /metadata/reward)"
    assert run.err.splitlines() == [
        f"error: {name}:2: /metadata: trace 'b': {missing}",
        (
            f"error: {name}:3: /metadata/reward: trace 'c': an outcome label must be true, "
            "false or a number, got string"
        ),
        f"error: {name}:4: /metadata: trace 'd': {missing}",
    ]
    # a report without labels cannot give label outcomes
    plain = tmp_path / "plain.json"
    arh("validate", "--policy", _policy(tmp_path), traces, "--json-out", plain, "--quiet")
    stats = arh("stats", plain, "--outcome", "label")
    assert stats.status == 3  # the report lacks what the option needs: an input error
    assert stats.err == (
        f"error: {plain}: /reports/0/outcome: trace 'a' has no recorded outcome label, which "
        "--outcome label needs (validate with --outcome-at POINTER)\n"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["stats", "r.json", "--gate", "pass rate > 1"], "is not a gate"),
        (["stats", "r.json", "--gate", "pass rate drop significant at 0.05"],
         "use it with arh compare"),
        (["stats", "r.json", "--allow-insufficient-data"], "applies only with --gate or --gates"),
        (["stats", "r.json", "--k", "0"], "must be an integer >= 1"),
        (["stats", "r.json", "--outcome", "reward"], "invalid choice"),
        (["compare", "--baseline", "b.json", "--candidate", "c.json", "--task-key", "/x"],
         "--task-key applies only when validating traces with --policy"),
        (["compare", "--baseline", "b.json", "--candidate", "c.json", "--outcome-at", "/x"],
         "--outcome-at applies only"),
        (["compare", "--baseline", "b.json", "--candidate", "c.json", "--gate", "x"],
         "is not a gate"),
        (["stats", "r.json", "--gate", "pass rate >= 0." + "9" * 4400],
         "0." + "9" * 98 + "... (4402 characters) has 4401 digits, too many to use"),
        (["compare", "--baseline", "b.json", "--candidate", "c.json", "--gate",
          "pass rate >= 0." + "9" * 4400], "has 4401 digits, too many to use (at most 100)"),
        (["stats", "r.json", "--gate", "flaky tasks <= " + "9" * 4400],
         "has 4400 digits, too many to use (at most 100)"),
        (["compare", "--baseline", "b.json", "--candidate", "c.json", "--gate",
          "pass rate >= 0.9", "--max-score-drop", "1"],
         ("--max-score-drop applies only to --fail-on regressions (with --gate or --gates it "
         "defaults to never)")),
        (["validate", "--policy", "p.json", "t.json", "--task-key", "metadata/x"],
         "a JSON pointer is empty or starts with '/'"),
    ],
)  # fmt: skip
def test_usage_errors(arh: Arh, tmp_path: Path, args: list[str], message: str) -> None:
    run = arh(*args)  # none of the files exists: usage errors come first
    assert run.status == 2, run.err
    assert message in run.err


def test_the_earlier_compare_form_still_reads_traces_after_the_baseline(
    arh: Arh, tmp_path: Path
) -> None:
    docs = [_trace(t, True) for t in TASKS[:2]]
    traces = _write_jsonl(tmp_path / "runs.jsonl", docs)
    policy = _policy(tmp_path)
    base = tmp_path / "base.json"
    arh("validate", "--policy", policy, traces, "--json-out", base, "--quiet")
    old_form = arh("compare", "--policy", policy, "--baseline", base, traces)
    new_form = arh("compare", "--baseline", base, "--policy", policy, traces)
    assert old_form.status == new_form.status == 0
    assert old_form.out == new_form.out
    assert old_form.out.startswith("compared 2 traces")


def test_shards_of_one_run_compare_as_one_report(arh: Arh, tmp_path: Path) -> None:
    policy = _policy(tmp_path)
    docs = [_trace(t, i % 3 != 0) for i, t in enumerate(TASKS)]
    whole = tmp_path / "whole.json"
    arh("validate", "--policy", policy, _write_jsonl(tmp_path / "w.jsonl", docs),
        "--json-out", whole, "--quiet")  # fmt: skip
    shards = []
    for n, part in enumerate((docs[:5], docs[5:])):
        shard = tmp_path / f"shard{n}.json"
        arh("validate", "--policy", policy, _write_jsonl(tmp_path / f"s{n}.jsonl", part),
            "--json-out", shard, "--quiet")  # fmt: skip
        shards.append(shard)
    one = arh("compare", "--baseline", whole, "--candidate", whole)
    split = arh("compare", "--baseline", *shards, "--candidate", whole)
    assert one.status == split.status == 0
    assert one.out == split.out  # unique ids: concatenated, nothing renamed


def _stats_validator(definition: str | None = None) -> Draft202012Validator:
    stats = load_json(ROOT / "schemas" / "stats.schema.json")
    compare = load_json(ROOT / "schemas" / "compare.schema.json")
    Draft202012Validator.check_schema(stats)
    registry = Registry().with_resources(
        [
            ("stats.schema.json", Resource.from_contents(stats)),
            ("compare.schema.json", Resource.from_contents(compare)),
        ]
    )
    schema = compare if definition == "compare" else stats
    return Draft202012Validator(schema, registry=registry)


def test_outputs_match_their_schemas(arh: Arh, tmp_path: Path) -> None:
    base = _one_report(arh, tmp_path, "base", BASELINE)
    cand = _one_report(arh, tmp_path, "cand", REGRESSION)
    gates = tmp_path / "arh.toml"
    gates.write_text("[defaults]\nmin_pass_rate = 0.5\nsignificance = 0.05\n", "utf-8")
    stats_out, compare_out = tmp_path / "stats.json", tmp_path / "compare.json"
    arh("stats", base, cand, "--gates", gates, "--json-out", stats_out, "--quiet")
    arh("compare", "--baseline", base, "--candidate", cand, "--gates", gates,
        "--outcome", "both", "--json-out", compare_out, "--quiet")  # fmt: skip
    stats_data, compare_data = load_json(stats_out), load_json(compare_out)
    for validator, data in (
        (_stats_validator(), stats_data),
        (_stats_validator("compare"), compare_data),
    ):
        errors = [f"{e.json_path}: {e.message}" for e in validator.iter_errors(data)]
        assert not errors, errors
    assert [c["status"] for c in stats_data["gate"]["checks"]] == ["pass", "skipped"]
    assert compare_data["statistics"]["outcome"] == "both"
    broken = json.loads(json.dumps(compare_data))
    broken["statistics"]["workflows"][0]["tests"][0]["method"] = "t-test"
    assert not _stats_validator("compare").is_valid(broken)  # the reference is followed
    # a report with the new keys is still a valid report
    report_schema = Draft202012Validator(load_json(ROOT / "schemas" / "report.schema.json"))
    assert report_schema.is_valid(load_json(base))
    assert load_json(base)["reports"][0]["outcome"] == 1


def test_markdown_outputs_are_inert(arh: Arh, tmp_path: Path) -> None:
    hostile = "<img src=x> @team #12 [x](http://e.com) *em*"
    docs = [
        _trace(f"{hostile}|{i}-run{r}", (i + r) % 3 != 0, workflow=f"wf {hostile}")
        for r in range(1, 4)
        for i in range(3)
    ]
    traces = _write_jsonl(tmp_path / "runs.jsonl", docs)
    report = tmp_path / "r.json"
    arh("validate", "--policy", _policy(tmp_path), traces, "--json-out", report, "--quiet")
    md, cmp_md = tmp_path / "s.md", tmp_path / "c.md"
    assert arh("stats", report, "--md-out", md, "--gate", "flaky tasks <= 0").status == 1
    arh("compare", "--baseline", report, "--candidate", report, "--gate", "pass^k >= 0.9",
        "--md-out", cmp_md, "--quiet")  # fmt: skip
    for path in (md, cmp_md):
        text = path.read_text(encoding="utf-8")
        assert "### " in text
        assert_markdown_is_inert(text)


def test_several_workflows_and_determinism(arh: Arh, tmp_path: Path) -> None:
    docs = [
        _trace(f"{w}-{t}-run{r}", (t + r) % 4 != 0, workflow=w)
        for w in ("refunds", "rebooking")
        for r in range(1, 4)
        for t in range(1, 5)
    ]
    traces = _write_jsonl(tmp_path / "runs.jsonl", docs)
    report = tmp_path / "r.json"
    arh("validate", "--policy", _policy(tmp_path), traces, "--json-out", report, "--quiet")
    outputs = []
    for _ in range(2):
        js, md = tmp_path / "s.json", tmp_path / "s.md"
        run = arh("stats", report, "--json-out", js, "--md-out", md)
        outputs.append((run.out, js.read_bytes(), md.read_bytes()))
    assert outputs[0] == outputs[1]
    lines = outputs[0][0].splitlines()
    assert lines[0] == "1 report · outcome verdict · 24 runs of 8 tasks in 2 workflows"
    titles = [line for line in lines if " · k = " in line]
    assert titles == [
        "all workflows · 8 tasks · 3 runs per task · k = 3",
        "rebooking · 4 tasks · 3 runs per task · k = 3",
        "refunds · 4 tasks · 3 runs per task · k = 3",
    ]


def test_an_empty_report_is_an_error(arh: Arh, tmp_path: Path) -> None:
    report = tmp_path / "empty.json"
    report.write_text(json.dumps({"reports": []}), "utf-8")
    run = arh("stats", report)
    assert run.status == 3  # an input error: no trace to summarise
    assert "nothing to summarise" in run.err


def test_compare_without_statistics_options_writes_no_statistics(arh: Arh, tmp_path: Path) -> None:
    base = _one_report(arh, tmp_path, "base", BASELINE)
    out = tmp_path / "c.json"
    run = arh("compare", "--baseline", base, "--candidate", base, "--json-out", out)
    assert "statistics" not in load_json(out)
    assert "STATISTICS" not in run.out
    assert "GATE: PASS (fail-on regressions)" in run.out


def test_totals_that_add_up_beyond_a_float_are_input_errors(arh: Arh, tmp_path: Path) -> None:
    data = load_json(_one_report(arh, tmp_path, "base", BASELINE))
    data["reports"][0]["total_cost_usd"] = 1.7e308
    one = tmp_path / "one.json"
    one.write_text(json.dumps(data), "utf-8")
    out = tmp_path / "stats.json"
    run = arh("stats", one, "--json-out", out, "--quiet")  # one such total alone still fits
    assert run.status == 0, run.err
    assert load_json(out)["overall"]["cost_usd"] == 1.7e308
    data["reports"][3]["total_cost_usd"] = 1.7e308
    two = tmp_path / "two.json"
    two.write_text(json.dumps(data), "utf-8")
    message = (
        f"error: {two}: /reports/3/total_cost_usd: the reports' total_cost_usd values add up to "
        "more than the largest number a summary can hold\n"
    )
    run = arh("stats", two)
    assert (run.status, run.err) == (3, message)
    run = arh("compare", "--baseline", one, "--candidate", two, "--gate", "pass rate >= 0.5")
    assert (run.status, run.err) == (3, message)


def test_token_totals_too_long_to_write_are_input_errors(arh: Arh, tmp_path: Path) -> None:
    import sys

    limit = sys.get_int_max_str_digits()
    if not limit:
        pytest.skip("the interpreter has no limit on the length of integers it writes")
    data = load_json(_one_report(arh, tmp_path, "base", BASELINE))
    for entry in data["reports"][:2]:
        entry["total_tokens"] = 10**limit - 1  # the longest integer that can be written
    report = tmp_path / "tokens.json"
    report.write_text(json.dumps(data), "utf-8")
    run = arh("stats", report)
    assert run.status == 3
    assert run.err == (
        f"error: {report}: /reports/1/total_tokens: the reports' total_tokens values add up to a "
        "number too long to report\n"
    )


def test_reports_with_input_errors_are_warned_about(arh: Arh, tmp_path: Path) -> None:
    good = _write_jsonl(tmp_path / "runs" / "good.jsonl", [_trace("a-run1", True)])
    (tmp_path / "runs" / "bad.json").write_text("{", encoding="utf-8")
    report = tmp_path / "r.json"
    arh("validate", "--policy", _policy(tmp_path), good.parent, "--json-out", report, "--quiet")
    run = arh("stats", report)
    assert run.status == 0
    assert (
        f"warning: report {report} records 1 input error: traces from unreadable inputs are "
        "missing from it"
    ) in run.out.splitlines()


def test_a_report_named_twice_is_read_once(arh: Arh, tmp_path: Path) -> None:
    # "arh stats one.json one.json" counted every run twice, without a word
    report = _one_report(arh, tmp_path, "base", BASELINE)
    once = tmp_path / "once.json"
    twice = tmp_path / "twice.json"
    assert arh("stats", report, "--json-out", once, "--quiet").status == 0
    alias = tmp_path / "." / report.name  # another spelling of the same file
    run = arh("stats", report, alias, "--json-out", twice, "--quiet")
    assert run.status == 0
    assert run.err == (f"warning: {alias}: this report is named more than once; it is read once\n")
    assert json.loads(twice.read_text("utf-8")) == json.loads(once.read_text("utf-8"))
