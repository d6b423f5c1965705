"""``--executor dask`` and the Dask API (the dask extra): the reports of one process, over local
paths and fsspec URLs, on a ``LocalCluster`` of two worker processes shared by the module's
tests; a worker killed mid-run; a bag of records in, a bag of reports out."""

from __future__ import annotations

import gzip
import json
import logging
import os
import shutil
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import SAMPLES, Run

distributed = pytest.importorskip(
    "distributed",
    reason="the dask extra is not installed (pip install -e '.[dev,dask]'; make test does)",
)
dask_bag = pytest.importorskip("dask.bag", reason="the dask extra is not installed")
fsspec = pytest.importorskip("fsspec", reason="the dask extra is not installed")
memory = pytest.importorskip("fsspec.implementations.memory")

from agent_reliability_harness import dask as arh_dask  # noqa: E402 - after the skip
from agent_reliability_harness import runner  # noqa: E402
from agent_reliability_harness.io.load import load_policy  # noqa: E402
from test_streaming import _corpus, _outputs, _trace  # noqa: E402

Arh = Callable[..., Run]
POLICY = SAMPLES / "policy_trajectory.json"


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    """Two worker processes of one thread, as the executor starts them, for every test here."""
    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        silence_logs=logging.ERROR,
    ) as local:
        yield local


@pytest.fixture
def scheduler(cluster: Any) -> str:
    address: str = cluster.scheduler_address
    return address


@pytest.fixture
def client(cluster: Any) -> Iterator[Any]:
    with distributed.Client(cluster) as opened:
        yield opened


@pytest.fixture
def many_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cut JSON Lines into many small units of work, as --jobs tests do."""
    monkeypatch.setattr(runner, "_CHUNK_BYTES", 700)
    monkeypatch.setattr(runner, "_MIN_CHUNK_BYTES", 700)
    monkeypatch.setattr(runner, "_BATCH_FILES", 4)


def test_dask_gives_the_output_of_one_process(
    arh: Arh, tmp_path: Path, scheduler: str, many_chunks: None
) -> None:
    inputs = _corpus(tmp_path)  # bad lines, duplicate ids, transcripts, an empty file, no file
    one = _outputs(arh, inputs, tmp_path / "one")
    dask = _outputs(arh, inputs, tmp_path / "dask", "--executor", "dask", "--scheduler", scheduler)
    assert one == dask
    assert one["status"] == 3
    assert "duplicate trace_id 't119'" in str(one["err"])


@pytest.mark.parametrize("extra", [[], ["--output-format", "github", "--show-passing"]])
def test_dask_writes_every_format_byte_for_byte(
    arh: Arh, tmp_path: Path, scheduler: str, many_chunks: None, extra: list[str]
) -> None:
    runs = tmp_path / "runs.jsonl"
    shutil.copy(next(iter(sorted((SAMPLES / "traces").glob("*.json")))), tmp_path / "good.json")
    lines = [json.dumps(_trace(f"t{i}", "delete_account" if i % 3 else "x")) for i in range(40)]
    runs.write_text("\n".join(lines) + "\n", encoding="utf-8")
    inputs = [str(SAMPLES / "traces"), str(runs), str(tmp_path / "good.json")]

    def outputs(name: str, *more: str) -> tuple[int, str, str, dict[str, bytes]]:
        out = tmp_path / name
        out.mkdir()
        reports = [f"--{f}-out" for f in ("json", "md", "junit", "sarif", "html")]
        files = [a for option in reports for a in (option, str(out / option[2:-4]))]
        run = arh("validate", "--policy", POLICY, *inputs, *files, *extra, *more)
        found = {p.name: p.read_bytes() for p in sorted(out.iterdir())}
        return run.status, run.out.replace(str(out), "OUT"), run.err, found

    one = outputs("one")
    dask = outputs("dask", "--executor", "dask", "--scheduler", scheduler)
    assert one == dask
    assert sorted(one[3]) == ["html", "json", "junit", "md", "sarif"]
    assert one[0] == 3  # good.json repeats a trace id of samples/traces
    assert "duplicate trace_id" in one[2]


def test_compare_with_a_candidate_validated_on_dask(
    arh: Arh, tmp_path: Path, scheduler: str
) -> None:
    baseline = tmp_path / "baseline.json"
    arh("validate", "--policy", POLICY, SAMPLES / "traces", "--json-out", baseline, "-q")
    runs = tmp_path / "runs.jsonl"
    runs.write_text(
        "\n".join(json.dumps(_trace(f"t{i}", "delete_account")) for i in range(5)) + "\n",
        encoding="utf-8",
    )
    argv = ["compare", "--baseline", baseline, "--policy", POLICY, SAMPLES / "traces", runs]
    one = arh(*argv, "--md-out", tmp_path / "one.md", "--candidate-json-out", tmp_path / "1.json")
    dask = arh(
        *argv, "--md-out", tmp_path / "dask.md", "--candidate-json-out", tmp_path / "2.json",
        "--executor", "dask", "--scheduler", scheduler,
    )  # fmt: skip
    assert one.status == dask.status
    assert one.out.replace("one.md", "X").replace("1.json", "C") == dask.out.replace(
        "dask.md", "X"
    ).replace("2.json", "C")
    assert (tmp_path / "one.md").read_bytes() == (tmp_path / "dask.md").read_bytes()
    assert (tmp_path / "1.json").read_bytes() == (tmp_path / "2.json").read_bytes()


def _renamed(report: dict[str, Any], names: dict[str, str]) -> str:
    text = json.dumps(report, sort_keys=True)
    for old, new in names.items():
        text = text.replace(json.dumps(old)[1:-1], json.dumps(new)[1:-1])
    return text


def test_file_urls_globs_directories_and_gzip(arh: Arh, tmp_path: Path, scheduler: str) -> None:
    inputs = _corpus(tmp_path)  # runs.jsonl, empty.jsonl, dir/, nope
    one = tmp_path / "one.json"
    arh("validate", "--policy", POLICY, *inputs[:3], "--json-out", one, "-q")
    with gzip.open(tmp_path / "runs.jsonl.gz", "wb") as packed:
        packed.write((tmp_path / "runs.jsonl").read_bytes())
    root = tmp_path.as_uri()
    urls = [f"{root}/runs.jsonl.gz", f"{root}/empty*.jsonl", f"{root}/dir"]
    dask = tmp_path / "dask.json"
    run = arh(
        "validate", "--policy", POLICY, *urls, "--json-out", dask, "-q",
        "--executor", "dask", "--scheduler", scheduler,
    )  # fmt: skip
    assert run.status == 3
    names = {
        f"{root}/runs.jsonl.gz": f"{tmp_path.as_posix()}/runs.jsonl",
        f"{root}/empty.jsonl": f"{tmp_path.as_posix()}/empty.jsonl",
        f"{root}/dir/": f"{tmp_path.as_posix()}/dir/",
    }
    got = _renamed(json.loads(dask.read_text(encoding="utf-8")), names)
    assert got == json.dumps(json.loads(one.read_text(encoding="utf-8")), sort_keys=True)
    assert f"{root}/runs.jsonl.gz:" in run.err  # errors name the object and the line


def test_a_url_that_matches_nothing(arh: Arh, tmp_path: Path, scheduler: str) -> None:
    (tmp_path / "a.json").write_text(json.dumps(_trace("a")), encoding="utf-8")
    root = tmp_path.as_uri()
    run = arh(
        "validate", "--policy", POLICY, f"{root}/a.json", f"{root}/nope/*.jsonl",
        f"{root}/missing.json", "--executor", "dask", "--scheduler", scheduler,
    )  # fmt: skip
    assert run.status == 3
    assert run.err.splitlines() == [  # in the order of the arguments, as local paths
        f"error: {root}/nope/*.jsonl: no object matches",
        f"error: {root}/missing.json: no such file or directory",
    ]
    assert "0 of 1 trace passed" in run.out  # a.json was checked


def test_memory_urls_and_an_unreadable_object(
    arh: Arh, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # memory:// lives in one process: an in-process cluster (threads) reads it
    opener = memory.MemoryFileSystem._open

    def refusing(self: Any, path: str, mode: str = "rb", *args: Any, **kwargs: Any) -> Any:
        if "secret" in path and mode == "rb":
            raise PermissionError(13, "Permission denied")
        return opener(self, path, mode, *args, **kwargs)

    monkeypatch.setattr(memory.MemoryFileSystem, "_open", refusing)
    monkeypatch.setattr(memory.MemoryFileSystem, "store", {})  # (the store is the class's)
    monkeypatch.setattr(memory.MemoryFileSystem, "pseudo_dirs", [""])
    store = fsspec.filesystem("memory")
    lines = "\n".join(json.dumps(_trace(f"m{i}")) for i in range(3)) + "\n"
    store.pipe("/runs/a.jsonl", lines.encode())
    store.pipe("/runs/secret.json", json.dumps(_trace("s")).encode())
    store.pipe("/runs/z.json", json.dumps(_trace("z", "delete_account")).encode())
    executor = None
    with distributed.Client(processes=False, n_workers=1, dashboard_address=None) as client:
        executor = arh_dask.DaskExecutor.on(client)
        errors: list[str] = []
        policy = load_policy(str(POLICY))
        reports = list(
            runner.iter_reports(
                policy, ["memory:///runs/*"], on_error=lambda e: errors.append(str(e)),
                executor=executor,
            )
        )  # fmt: skip
    assert [r.trace_id for r in reports] == ["m0", "m1", "m2", "z"]
    assert [r.source_path for r in reports] == ["memory:///runs/a.jsonl"] * 3 + [
        "memory:///runs/z.json"
    ]
    assert [r.source_line for r in reports] == [1, 2, 3, None]
    # the same one line as a local file that cannot be read
    assert errors == ["memory:///runs/secret.json: cannot read: Permission denied"]


def test_the_policy_is_compiled_once_per_worker(
    arh: Arh, tmp_path: Path, scheduler: str, client: Any, many_chunks: None
) -> None:
    runs = tmp_path / "runs.jsonl"
    runs.write_text(
        "\n".join(json.dumps(_trace(f"t{i}")) for i in range(200)) + "\n", encoding="utf-8"
    )
    run = arh("validate", "--policy", POLICY, runs, "--executor", "dask", "--scheduler", scheduler)
    assert "of 200 traces passed" in run.out
    counts = client.run(lambda: dict(arh_dask.COMPILED))
    assert len(counts) == 2
    # the run's many units of work went to both workers; each compiled the policy once
    tokens = {token for worker in counts.values() for token in worker}
    token = next(t for t in tokens if all(t in worker for worker in counts.values()))
    assert [worker[token] for worker in counts.values()] == [1, 1], counts


def test_a_worker_killed_mid_run_loses_and_duplicates_nothing(
    tmp_path: Path, cluster: Any, client: Any, many_chunks: None
) -> None:
    count = 600
    runs = tmp_path / "runs.jsonl"
    runs.write_text(
        "\n".join(json.dumps(_trace(f"t{i:04d}")) for i in range(count)) + "\n",
        encoding="utf-8",
    )
    pids = client.run(os.getpid)
    victim = min(pids.values())
    killed = threading.Event()
    ids: list[str] = []
    errors: list[str] = []
    policy = load_policy(str(POLICY))
    executor = arh_dask.DaskExecutor.on(client)
    for report in runner.iter_reports(
        policy, [str(runs)], on_error=lambda e: errors.append(str(e)), executor=executor
    ):
        ids.append(report.trace_id)
        if len(ids) == 5:  # mid-run: most units are still to come, some in the workers
            os.kill(victim, signal.SIGKILL)
            killed.set()
    assert killed.is_set()
    assert errors == []
    assert ids == [f"t{i:04d}" for i in range(count)]  # each once, in input order
    client.wait_for_workers(2, timeout=60)  # the nanny restarts it, for the next tests
    assert victim not in client.run(os.getpid).values()


def test_without_the_extra_executor_dask_is_a_usage_error(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['dask'] = None; sys.modules['distributed'] = None\n"
        "from agent_reliability_harness.cli import main\n"
        f"sys.exit(main(['validate', '--policy', {str(POLICY)!r}, {str(SAMPLES / 'traces')!r},"
        " '--executor', 'dask']))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines()[-1] == (
        "arh validate: error: --executor dask needs the dask extra, which is not installed: "
        "pip install 'agent-reliability-harness[dask]'"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--scheduler", "tcp://h:8786"], "--scheduler applies only with --executor dask"),
        (["--dask-workers", "2"], "--dask-workers applies only with --executor dask"),
        (
            ["--executor", "dask", "--scheduler", "tcp://h:8786", "--dask-workers", "2"],
            "--dask-workers sizes the local cluster: it does not apply with --scheduler",
        ),
    ],
)
def test_executor_options_need_each_other(arh: Arh, argv: list[str], message: str) -> None:
    run = arh("validate", "--policy", POLICY, SAMPLES / "traces", *argv)
    assert run.status == 2
    assert run.err.splitlines()[-1] == f"arh validate: error: {message}"


def test_executor_dask_with_a_saved_candidate_is_a_usage_error(arh: Arh, tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    arh("validate", "--policy", POLICY, SAMPLES / "traces", "--json-out", report, "-q")
    run = arh("compare", "--baseline", report, "--candidate", report, "--executor", "dask")
    assert run.status == 2
    assert run.err.splitlines()[-1] == (
        "arh compare: error: --executor applies only when validating traces with --policy"
    )


def test_a_local_cluster_of_its_own(arh: Arh, tmp_path: Path) -> None:
    one = arh("validate", "--policy", POLICY, SAMPLES / "traces")
    own = arh("validate", "--policy", POLICY, SAMPLES / "traces", "--executor", "dask",
              "--dask-workers", "1")  # fmt: skip
    assert (one.status, one.out, one.err) == (own.status, own.out, own.err)


# -- the Python API: dask.bag ------------------------------------------------------------------


def _records() -> list[dict[str, Any]]:
    transcript = {"messages": [{"role": "user", "content": "hi"}]}
    bad = {**_trace("bad"), "steps": "no"}
    return [
        *(_trace(f"b{i}", "delete_account" if i % 2 else "x") for i in range(6)),
        transcript,
        bad,
        _trace("b1"),  # a repeated id
    ]


def _record(report: dict[str, Any]) -> dict[str, Any]:
    """The record of _records() a report of validate_bag was made of."""
    records = _records()
    for record in records:
        if record.get("trace_id") == report["trace_id"]:
            return record
    return records[6]  # the transcript


def test_validate_bag_gives_the_reports_of_a_run(tmp_path: Path, client: Any) -> None:
    records = _records()
    bag = dask_bag.from_sequence(records, npartitions=3)
    got = arh_dask.validate_bag(bag, POLICY).compute()
    assert len(got) == len(records)
    # the same reports as arh validate on the same records, but where they were read
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    local = runner.run_validation(load_policy(str(POLICY)), [str(path)], on_error=[].append)
    where = ("source_path", "source_line", "trace_id")
    checked = [item for item in got if "input_error" not in item]
    assert len(checked) == len(local.reports) + 1  # the bag does not look for repeated ids
    for mine, theirs in zip(checked, local.reports, strict=False):
        expected = theirs.to_dict()
        assert {k: v for k, v in mine.items() if k not in where} == {
            k: v for k, v in expected.items() if k not in where
        }
        assert mine["source_path"] == f"<bag partition {records.index(_record(mine)) // 3}>"
    errors = [item["input_error"] for item in got if "input_error" in item]
    assert [(e["source"], e["line"], e["pointer"]) for e in errors] == [
        ("<bag partition 2>", 2, "/steps")
    ]
    # the transcript without an id is named after its place in the bag
    assert "partition-2:1" in [item.get("trace_id") for item in got]


def test_write_reports_writes_the_files_of_arh_validate(tmp_path: Path, client: Any) -> None:
    bag = dask_bag.from_sequence(_records(), npartitions=3)
    reports = arh_dask.validate_bag(bag, POLICY)
    out = tmp_path / "r.json"
    summary = arh_dask.write_reports(
        reports, POLICY, json_out=str(out), sarif_out=str(tmp_path / "r.sarif")
    )
    data = json.loads(out.read_text(encoding="utf-8"))
    assert summary.total == 7  # 9 records: one unreadable, one repeated id
    assert data["summary"]["total_traces"] == 7
    assert [e["message"][:20] for e in data["input_errors"]] == [
        "must be an array of ",
        "duplicate trace_id '",
    ]
    assert (tmp_path / "r.sarif").exists()


def test_the_python_example_of_large_runs_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import re

    from conftest import ROOT

    page = (ROOT / "docs" / "large-runs.md").read_text(encoding="utf-8")
    (code,) = re.findall(r"^```python\n(.*?)^```", page, re.MULTILINE | re.DOTALL)
    (tmp_path / "samples").mkdir()
    shutil.copy(POLICY, tmp_path / "samples" / POLICY.name)
    (tmp_path / "runs").mkdir()
    lines = [json.dumps(_trace(f"t{i}", "delete_account" if i < 2 else "x")) for i in range(5)]
    (tmp_path / "runs" / "a.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    import dask

    with dask.config.set(scheduler="synchronous"):  # (the files are in this test's directory)
        exec(compile(code, "docs/large-runs.md", "exec"), {"__name__": "doc"})  # noqa: S102
    assert capsys.readouterr().out == "5 5 0\n"
    assert (tmp_path / "report.json").is_file()
    assert (tmp_path / "arh.sarif").is_file()


def _ragged_lines() -> bytes:
    """JSON Lines whose lines cross the 700-byte ranges of ``many_chunks`` every way: CRLF ends,
    blank lines, transcripts without an id (named after their line), a line much longer than a
    range, a bad line inside a range, and a last line without a line feed."""
    lines: list[bytes] = []
    for i in range(60):
        if i % 7 == 3:
            record: dict[str, object] = {"messages": [{"role": "user", "content": f"q{i}"}]}
        else:
            record = _trace(f"r{i}", "delete_account" if i % 5 == 0 else "search_flights")
        if i == 20:
            record["steps"][1]["text"] = "long " * 400  # type: ignore[index]  # ~2 KB: 3 ranges
        end = b"\r\n" if i % 4 == 1 else b"\n"
        lines.append(json.dumps(record).encode() + end)
        if i % 9 == 2:
            lines.append(b"\n")
        if i == 33:
            lines.append(b'{"trace_id": "bad", oops}\n')
    return b"".join(lines).rstrip(b"\n")


def test_byte_ranges_give_the_lines_and_line_numbers_of_one_process(
    arh: Arh, tmp_path: Path, scheduler: str, many_chunks: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = tmp_path / "runs.jsonl"
    runs.write_bytes(_ragged_lines())
    one = _outputs(arh, [str(runs)], tmp_path / "one")

    def unread(*args: object, **kwargs: object) -> None:
        raise AssertionError("the driver read the file to cut it")

    monkeypatch.setattr(runner, "jsonl_chunks", unread)
    dask = _outputs(
        arh, [str(runs)], tmp_path / "dask", "--executor", "dask", "--scheduler", scheduler
    )
    assert one == dask
    assert one["status"] == 3
    report = json.loads(one["r.json"])  # type: ignore[arg-type]
    (error,) = report["input_errors"]
    assert error["line"] == 39  # after the records 0-33 and the blank lines after 2, 11, 20, 29
    assert len(report["reports"]) == 60
    assert {r["trace_id"] for r in report["reports"]} >= {"runs:5", "r58"}  # 59: a transcript


def test_byte_ranges_of_an_object(monkeypatch: pytest.MonkeyPatch, many_chunks: None) -> None:
    monkeypatch.setattr(memory.MemoryFileSystem, "store", {})  # (the store is the class's)
    monkeypatch.setattr(memory.MemoryFileSystem, "pseudo_dirs", [""])
    data = _ragged_lines()
    fsspec.filesystem("memory").pipe("/runs/r.jsonl", data)
    policy = load_policy(str(POLICY))

    def run(executor: Any) -> tuple[list[dict[str, Any]], list[str]]:
        errors: list[str] = []
        reports = runner.iter_reports(
            policy, ["memory:///runs/r.jsonl"], on_error=lambda e: errors.append(str(e)),
            executor=executor,
        )  # fmt: skip
        return [r.to_dict() for r in reports], errors

    with distributed.Client(processes=False, n_workers=2, dashboard_address=None) as client:
        dask = run(arh_dask.DaskExecutor.on(client))
    one = run(_InProcess())
    assert dask == one
    assert len(dask[0]) == 60
    assert [error.split(": ")[0] for error in dask[1]] == ["memory:///runs/r.jsonl:39:21"]


class _InProcess:
    """The inputs of the executor (fsspec URLs), read and checked by one process."""

    def expand(self, inputs: Any) -> Any:
        return arh_dask.expand(inputs)

    def outcomes(self, sources: Any, policy: Any, fail_under: float, settings: Any) -> Any:
        validator = runner.Validator(policy, fail_under)
        for source in sources:
            yield from runner._checked(
                validator,
                arh_dask._object_documents(source, settings.max_input),
                runner._base(source),
                settings,
            )


def test_line_feeds_that_cannot_be_counted_are_the_input_s_read_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, many_chunks: None
) -> None:
    runs = tmp_path / "runs.jsonl"
    runs.write_text(
        "\n".join(json.dumps(_trace(f"t{i:03d}")) for i in range(60)) + "\n", encoding="utf-8"
    )
    counted = arh_dask._count

    def failing(source: Any, spans: tuple[tuple[int, int], ...]) -> list[int]:
        if spans[0][0] > 0:  # the second group of ranges on: the disk fails
            raise OSError(5, "Input/output error")
        return counted(source, spans)

    monkeypatch.setattr(arh_dask, "_count", failing)
    policy = load_policy(str(POLICY))
    errors: list[str] = []
    with distributed.Client(processes=False, n_workers=2, dashboard_address=None) as client:
        ids = [
            report.trace_id
            for report in runner.iter_reports(
                policy, [str(runs)], on_error=lambda e: errors.append(str(e)),
                executor=arh_dask.DaskExecutor.on(client),
            )
        ]  # fmt: skip
    # the ranges numbered from the first group (9 of 700 bytes: the lines that start in the
    # first 6,300 bytes) are reported, then the input's read error, once
    size = len(json.dumps(_trace("t000"))) + 1
    assert ids == [f"t{i:03d}" for i in range(-(-9 * 700 // size))]
    assert errors == [f"{runs}: cannot read: Input/output error"]
