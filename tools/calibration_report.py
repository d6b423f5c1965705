"""Calibrate the deterministic rubric engine on the shipped hand labels and print Cohen's kappa
and the confusion matrix (docs/answers-and-judge.md, "Calibration").

    python tools/calibration_report.py            # print kappa, the matrix, per-criterion errors
    python tools/calibration_report.py --check    # exit 1 when the shipped record is stale
    python tools/calibration_report.py --write    # rewrite the shipped record
    python tools/calibration_report.py --sources  # also check each labelled text against its
                                                  # source file (needs the shared real traces)

It runs ``arh judge calibrate`` on samples/judge/hand_labels.jsonl with the rubric
samples/judge/final-answer-report.rubric.json and the deterministic engine, whose record is
samples/judge/final-answer-report.deterministic.calibration.json. Nothing here is random: the
same labels give the same bytes. The real traces are read from ``$ARH_SHARED_DIR`` (default:
../shared next to the repository) by ``--sources`` only.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agent_reliability_harness.adapters import to_traces
from agent_reliability_harness.cli import main as arh
from agent_reliability_harness.judge.model import JudgeInput, judge_input

ROOT = Path(__file__).resolve().parent.parent
JUDGE = ROOT / "samples" / "judge"
LABELS = JUDGE / "hand_labels.jsonl"
RUBRIC = JUDGE / "final-answer-report.rubric.json"
RECORD = JUDGE / "final-answer-report.deterministic.calibration.json"
SHARED = Path(os.environ.get("ARH_SHARED_DIR", ROOT.parent / "shared"))
REAL = SHARED / "data" / "real-traces"
# where each data set of the labels lives under the shared real traces
DATASETS = {
    "tau-bench": REAL / "tau-bench",
    "AgentDojo": REAL / "agentdojo",
    "ToolBench": REAL / "toolbench",
    "SWE-agent": REAL / "swe-agent",
    "arh samples": ROOT,
}


def calibrate(output: Path, *, quiet: bool) -> tuple[int, str]:
    """Run ``arh judge calibrate`` into ``output``: its exit status and what it printed."""
    argv = ["judge", "calibrate", "--labels", str(LABELS.relative_to(ROOT))]
    argv += ["--rubric", str(RUBRIC.relative_to(ROOT)), "-o", str(output)]
    if quiet:
        argv.append("--quiet")
    printed = io.StringIO()
    with _in(ROOT), contextlib.redirect_stdout(printed):
        status = arh(argv)
    return status, printed.getvalue()


@contextlib.contextmanager
def _in(folder: Path) -> Iterator[None]:
    before = Path.cwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


def _at(document: Any, pointer: str) -> Any:
    for part in pointer.split("/")[1:]:
        key = part.replace("~1", "/").replace("~0", "~")
        document = document[int(key)] if isinstance(document, list) else document[key]
    return document


def _text(value: Any) -> str | None:
    if isinstance(value, list):  # AgentDojo content blocks
        return " ".join(block.get("content") or block.get("text") or "" for block in value)
    return value if value is None or isinstance(value, str) else str(value)


# the data sets whose runs arh converts as they are, so that a labelled item's task and answer
# must be what a judge is shown of the converted run (judge_input): a judgment arh validate
# made of the run is then found by the same input hash
CONVERTED = ("tau-bench", "AgentDojo", "arh samples")


def _run_of(item: dict[str, Any], document: Any) -> Any:
    """The run an item comes from, as arh reads it: a tau-bench record's messages."""
    if item["source"]["dataset"] == "tau-bench":
        return {"messages": document[int(item["source"]["pointer"].split("/")[1])]["traj"]}
    return document


def check_sources() -> list[str]:
    """The labelled items whose answer is not the text at their source's pointer (a labelled
    excerpt must be the start of it), or whose task and answer are not what a judge is shown of
    the converted run (:data:`CONVERTED`); items of data sets that are not there are skipped."""
    problems: list[str] = []
    cache: dict[Path, Any] = {}
    for line in LABELS.read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        source = item["source"]
        base = DATASETS.get(source["dataset"])
        if base is None or not base.is_dir():
            continue
        path = base / source["path"]
        if path not in cache:
            text = path.read_text(encoding="utf-8")
            lines = text.splitlines() if path.suffix == ".jsonl" else None
            cache[path] = [json.loads(x) for x in lines] if lines else json.loads(text)
        document = cache[path]
        if "line" in source:
            document = document[source["line"] - 1]
        pointer = source["pointer"]
        if pointer == "/steps":  # a run without a final answer
            found = None
        elif pointer == "/answer_generation/final_answer":  # ToolBench: JSON in a string
            found = json.loads(_at(document, pointer)).get("final_answer")
        else:
            found = _text(_at(document, pointer))
        answer = item["answer"]
        if item.get("excerpt"):
            same = found is not None and found.startswith(answer.removesuffix("…"))
        else:
            same = found == answer
        if not same:
            problems.append(f"{item['id']}: the answer is not the text at {path}{pointer}")
        elif source["dataset"] in CONVERTED:
            ((_, trace),) = to_traces(_run_of(item, document))
            seen = JudgeInput(item["task"], answer)
            if isinstance(trace, Exception) or judge_input(trace) != seen:
                problems.append(f"{item['id']}: the task and answer are not what a judge is shown")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 when the record is stale")
    mode.add_argument("--write", action="store_true", help="rewrite the shipped record")
    parser.add_argument(
        "--sources", action="store_true", help="check the labelled texts against their sources"
    )
    args = parser.parse_args(argv)
    status = 0
    if args.sources:
        problems = check_sources()
        for problem in problems:
            print(problem, file=sys.stderr)
        status = 1 if problems else 0
    with tempfile.TemporaryDirectory() as folder:
        fresh = Path(folder) / RECORD.name
        code, printed = calibrate(fresh, quiet=args.check or args.write)
        if code not in (0, 1):  # 0 and 1 say whether kappa reaches 0.6; anything else failed
            print(printed, end="")
            print(f"arh judge calibrate exited {code}", file=sys.stderr)
            return 2
        if args.write:
            RECORD.write_bytes(fresh.read_bytes())
            print(f"wrote {RECORD.relative_to(ROOT)}")
        elif args.check:
            if not RECORD.is_file() or RECORD.read_bytes() != fresh.read_bytes():
                print(
                    f"{RECORD.relative_to(ROOT)} is stale: run python tools/calibration_report.py "
                    "--write",
                    file=sys.stderr,
                )
                return 1
        else:
            print(printed, end="")
    return status


if __name__ == "__main__":
    sys.exit(main())
