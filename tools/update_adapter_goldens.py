"""Regenerate the adapter goldens: each tests/fixtures/adapters/<format>/<case>.json is converted
with ``--format <format>`` (trace id defaulting to the case name) and written next to it as
<case>.trace.json, byte for byte what ``arh convert`` prints. A <case>.jsonl (an OpenTelemetry
export written by a collector's file exporter, one request per line) gives <case>.trace.jsonl.

After a deliberate change to an adapter, run ``python tools/update_adapter_goldens.py`` and review
every changed golden by hand (``git diff tests/fixtures/adapters``) before committing it.
``--check`` writes nothing and exits 1 when a golden is missing or stale.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from agent_reliability_harness.adapters import FORMATS, RecordOptions, span_traces, to_traces
from agent_reliability_harness.errors import InputError
from agent_reliability_harness.render.traces import render_traces

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "adapters"


def cases() -> list[tuple[str, Path]]:
    """(format, input file) for every golden case, sorted."""
    found = []
    for fmt in FORMATS:
        folder = FIXTURES / fmt
        if folder.is_dir():
            found.extend(
                (fmt, path)
                for path in sorted([*folder.glob("*.json"), *folder.glob("*.jsonl")])
                if not path.name.endswith((".trace.json", ".trace.jsonl"))
            )
    return found


def golden_path(path: Path) -> Path:
    """Where the golden of an input is: <case>.trace.json, or .trace.jsonl for a .jsonl."""
    return path.with_name(f"{path.stem}.trace{path.suffix}")


def converted(fmt: str, path: Path) -> list:  # type: ignore[type-arg]
    """What the adapter makes of an input file: traces or input errors, in order."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":  # the lines of an OTLP export file are read together
        lines = [(n, json.loads(line)) for n, line in enumerate(text.splitlines(), 1) if line]
        return [result for _, result in span_traces(lines, fmt)]
    options = RecordOptions(default_id=path.stem)
    return [result for _, result in to_traces(json.loads(text), fmt, options)]


def golden_text(fmt: str, path: Path) -> str:
    traces = []
    for result in converted(fmt, path):
        if isinstance(result, InputError):
            raise SystemExit(f"{path}: {result}")
        traces.append(result)
    return render_traces(traces)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only report stale goldens")
    args = parser.parse_args(argv)
    stale = []
    for fmt, path in cases():
        target = golden_path(path)
        text = golden_text(fmt, path)
        if target.exists() and target.read_text(encoding="utf-8") == text:
            continue
        stale.append(target)
        if not args.check:
            target.write_text(text, encoding="utf-8")
    for target in stale:
        sys.stdout.write(f"{'stale' if args.check else 'written'}: {target.relative_to(ROOT)}\n")
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
