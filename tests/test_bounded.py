"""Issue 12: no input takes the run down; a failure stays with its file.

Hostile shapes are generated at test time (bench/hostile.py) at a size CI affords.
"""

from __future__ import annotations

import errno
import json
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from bench.hostile import good_records, int64_overflow, task_record
from pipeline import ingest, jobs
from pipeline import lake as lk
from pipeline.cli import app
from pipeline.rubric import parse_rubric
from pipeline.warehouse import warehouse_path

runner = CliRunner()


def _query(lake: Path, sql: str) -> list[tuple[object, ...]]:
    con = duckdb.connect(str(warehouse_path(lake)), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _run(inputs: list[Path], lake: Path) -> str:
    result = runner.invoke(app, ["run", *map(str, inputs), "--lake", str(lake)])
    assert result.exit_code == 0, result.output
    return result.output


def test_int64_overflow_next_to_good_files_lands_the_good_ones(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    int64_overflow(folder, 3)
    good_records(folder, 20)
    report = jobs.ingest([folder], tmp_path / "lake")
    assert report.landed_task_runs == 20
    assert report.quarantined == 3
    assert report.lines_read == report.accounted == 23


def _failing_build(bad_source: str, exc: BaseException):  # type: ignore[no-untyped-def]
    real = ingest.build_batch

    def build(lines, env_types, batch_id):  # type: ignore[no-untyped-def]
        if bad_source in lines.frame.get_column("source").to_list():
            raise exc
        return real(lines, env_types, batch_id)

    return build


@pytest.mark.parametrize(
    "exc",
    [MemoryError(), duckdb.OutOfMemoryException("failed to allocate"), RuntimeError("a bug")],
)
def test_an_unforeseen_failure_quarantines_its_file_whole_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exc: BaseException
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    good_records(folder, 10)
    bad = folder / "z-bad.jsonl"
    bad.write_text("".join(f"{i}\n" for i in range(7)))
    (folder / "a-more.jsonl").write_text('{"x": 1}\n{"x": 2}\n')
    monkeypatch.setattr(jobs, "build_batch", _failing_build(str(bad), exc))
    lake = tmp_path / "lake"
    output = _run([folder], lake)
    assert f"{bad}: could not be read or landed, quarantined whole: {type(exc).__name__}" in output
    assert _query(lake, "select count(*) from task_runs") == [(10,)]
    rows = _query(lake, "select source, line, line_end, lines, raw from quarantine")
    assert (str(bad), 1, 7, 7, None) in rows
    # The other bad file's lines were judged on their own, line by line.
    assert _query(lake, "select count(*) from quarantine where lines = 1") == [(2,)]
    # Read again: the block is seen, not quarantined twice.
    again = jobs.ingest([folder], lake)
    assert (again.quarantined, again.already_quarantined, again.skipped_duplicates) == (0, 9, 10)
    assert again.accounted == again.lines_read == 19


def test_the_rest_of_a_failed_file_follows_it_into_quarantine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = tmp_path / "big.jsonl"
    good_records(tmp_path, 1)
    lines = [task_record(f"big-{i}") for i in range(40)]
    bad.write_text("\n".join(json.dumps(r) for r in lines) + "\n")
    real = ingest.build_batch
    calls = {"n": 0}

    def build(lines, env_types, batch_id):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 2:
            raise MemoryError
        return real(lines, env_types, batch_id)

    monkeypatch.setattr(jobs, "build_batch", build)
    lake = tmp_path / "lake"
    size = len(bad.read_bytes()) // 4 + 1
    with lk.lake_lock(lake):
        report = jobs.ingest_locked([bad], lake, parse_rubric({}), chunk_bytes=size)
    assert report.accounted == report.lines_read == 40
    assert report.landed_task_runs < 40 and report.quarantined == 40 - report.landed_task_runs
    assert any("quarantined whole" in note for note in report.notes)


def test_a_lake_failure_stops_the_run_and_leaves_the_lake_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    good_records(folder, 5)
    lake = tmp_path / "lake"

    def full(*_args: object, **_kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(lk.Transaction, "write", full)
    result = runner.invoke(app, ["run", str(folder), "--lake", str(lake)])
    assert result.exit_code == 1
    assert not list(lake.glob("task_runs/*.parquet"))
    assert not list(lake.glob("quarantine/*.parquet"))
