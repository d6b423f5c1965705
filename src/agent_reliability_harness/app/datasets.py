"""``arh datasets list`` and ``arh datasets verify``: the golden datasets and their integrity."""

from __future__ import annotations

import json
import sys
from argparse import Namespace
from typing import Any

from agent_reliability_harness.app import Status, say
from agent_reliability_harness.errors import InputError
from agent_reliability_harness.harness.datasets import list_datasets, verify_dataset

__all__ = ["datasets_command"]


def _dumps(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=True) + "\n"


def _list(args: Namespace) -> Status:
    found = list_datasets(args.root)
    rows: list[dict[str, Any]] = []
    status = Status.OK
    for path, manifest in found:
        if isinstance(manifest, InputError):
            say(f"error: {manifest}\n", sys.stderr)
            status = Status.INPUT
            continue
        rows.append(
            {
                "name": manifest.name,
                "version": manifest.version,
                "cases": manifest.cases,
                "sha256": manifest.sha256,
                "path": path.replace("\\", "/"),
            }
        )
    if args.json:
        say(_dumps(rows), sys.stdout)
    elif not rows:
        say(f"no datasets under {args.root}\n", sys.stdout)
    else:
        width = max(len(row["name"]) for row in rows)
        for row in rows:
            say(
                f"{row['name']:<{width}}  version {row['version']}  {row['cases']} cases  "
                f"sha256 {row['sha256']}\n",
                sys.stdout,
            )
    return status


def _verify(args: Namespace) -> Status:
    specs = list(args.datasets) or [path for path, _ in list_datasets(args.root)]
    results: list[dict[str, Any]] = []
    for spec in specs:
        dataset, problems = verify_dataset(spec, args.root)
        results.append(
            {
                "dataset": spec if dataset is None else dataset.name,
                "path": spec if dataset is None else dataset.path.replace("\\", "/"),
                "cases": 0 if dataset is None else len(dataset.tasks),
                "sha256": None if dataset is None else dataset.sha256,
                "ok": not problems,
                "problems": problems,
            }
        )
    if args.json:
        say(_dumps(results), sys.stdout)
    else:
        for result in results:
            if result["ok"]:
                say(
                    f"ok {result['dataset']}: {result['cases']} cases, sha256 {result['sha256']}\n",
                    sys.stdout,
                )
            for problem in result["problems"]:
                say(f"{problem}\n", sys.stdout)
        if not results:
            say(f"no datasets under {args.root}\n", sys.stdout)
    return Status.OK if results and all(r["ok"] for r in results) else Status.INPUT


def datasets_command(args: Namespace) -> Status:
    return _list(args) if args.datasets_command == "list" else _verify(args)
