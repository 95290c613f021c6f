"""Issue 12: no input takes the run down; a failure stays with its file.

Hostile shapes are generated at test time (bench/hostile.py) at a size CI affords. The
peak-memory tests, each a fresh interpreter, and the acceptance scenario are in
test_bounded_memory.py (--dist loadfile gives each file one worker).
"""

from __future__ import annotations

import errno
import gzip
import json
from pathlib import Path

import duckdb
import polars as pl
import pytest
from typer.testing import CliRunner

from bench.hostile import (
    empty_objects,
    good_records,
    gzip_bomb,
    int64_overflow,
    many_findings,
    task_record,
)
from pipeline.cli import app
from pipeline.core import sql
from pipeline.core.settings import (
    DUCKDB_MEMORY_ENV,
    DUCKDB_THREADS_ENV,
    KEEP_BAD_LINES_ENV,
    QUERY_MEMORY_ENV,
    QUERY_SECONDS_ENV,
    Settings,
)
from pipeline.ingest import batch as ingest
from pipeline.jobs import commands as jobs
from pipeline.jobs import land
from pipeline.jobs.ingest import ingest_locked
from pipeline.rubric import parse_rubric
from pipeline.sources.chunks import iter_line_chunks, read_lines
from pipeline.sources.discover import scan_inputs
from pipeline.storage import lake as lk
from pipeline.warehouse import warehouse_path

runner = CliRunner()
MIB = 1024**2


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


@pytest.mark.slow
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
@pytest.mark.slow
def test_an_unforeseen_failure_quarantines_its_file_whole_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exc: BaseException
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    good_records(folder, 10)
    bad = folder / "z-bad.jsonl"
    bad.write_text("".join(f"{i}\n" for i in range(7)))
    (folder / "a-more.jsonl").write_text('{"x": 1}\n{"x": 2}\n')
    monkeypatch.setattr(land, "build_batch", _failing_build(str(bad), exc))
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


def test_duckdb_takes_its_memory_and_threads_from_the_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(DUCKDB_MEMORY_ENV, str(64 * MIB))
    monkeypatch.setenv(DUCKDB_THREADS_ENV, "1")
    con = sql.connect()
    try:
        got = con.sql("select current_setting('memory_limit'), current_setting('threads')")
        assert got.fetchall() == [("64.0 MiB", 1)]
    finally:
        con.close()


@pytest.mark.slow
def test_a_file_past_the_duckdb_budget_fails_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    report = many_findings(folder, 3000)
    good_records(folder, 10)
    # 16 MB: the 3000-finding report needs more inside DuckDB, ten small records do not.
    monkeypatch.setenv(DUCKDB_MEMORY_ENV, str(16_000_000))
    lake = tmp_path / "lake"
    output = _run([folder], lake)
    assert f"{report}: could not be read or landed, quarantined whole: OutOfMemory" in output
    assert _query(lake, "select count(*) from task_runs") == [(10,)]
    assert _query(lake, "select source, lines from quarantine") == [(str(report), 1)]


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

    monkeypatch.setattr(land, "build_batch", build)
    lake = tmp_path / "lake"
    size = len(bad.read_bytes()) // 4 + 1
    with lk.lake_lock(lake):
        report = ingest_locked([bad], lake, parse_rubric({}), chunk_bytes=size)
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


# ----------------------------------------------------------------------------- reading


def _write_gz(path: Path, text: bytes) -> bytes:
    data = gzip.compress(text)
    path.write_bytes(data)
    return data


def test_a_line_past_the_record_limit_is_not_buffered_and_keeps_its_first_kib(
    tmp_path: Path,
) -> None:
    path = tmp_path / "long.jsonl"
    path.write_bytes(b'{"a": 1}\n' + b"x" * 100_000 + b'\n{"b": 2}\n' + b"y" * 5_000)
    frame = read_lines([path], Settings(max_record_bytes=1000)).frame
    assert frame["line"].to_list() == [1, 2, 3, 4]
    long, last = frame.row(1, named=True), frame.row(3, named=True)
    assert long["problem"].startswith("record is 100000 bytes, over the limit of 1000 bytes")
    assert long["raw"] == "x" * 1024 + "…"
    assert last["problem"].startswith("record is 5000 bytes")
    assert frame.row(2, named=True)["problem"] is None


def test_chunks_are_bounded_by_lines_as_well_as_bytes(tmp_path: Path) -> None:
    path = empty_objects(tmp_path, 5_500)
    chunks = list(iter_line_chunks([path], chunk_lines=1000))
    assert [c.frame.height for c in chunks] == [1000] * 5 + [500]
    assert pl.concat([c.frame for c in chunks])["line"].to_list() == list(range(1, 5501))


def test_a_gzip_bomb_stops_at_the_expansion_limit_as_one_counted_block(tmp_path: Path) -> None:
    path = gzip_bomb(tmp_path, 50_000_000)
    frame = read_lines([path], Settings(max_expanded_bytes=3_000_000)).frame
    kept, rest = frame.head(-1), frame.row(-1, named=True)
    assert kept.height == 1_000_000 and kept["problem"].null_count() == kept.height
    assert rest["line"] == 1_000_001
    assert rest["problem"].startswith("decompressed past the limit of 3000000 bytes")


def test_every_member_of_a_concatenated_gzip_is_read(tmp_path: Path) -> None:
    path = tmp_path / "day.jsonl.gz"
    first = gzip.compress(b'{"n": 1}\n{"n": 2}\n{"n": 3}\n')
    second = gzip.compress(b'{"n": 4}\n{"n": 5}\n{"n": 6}\n{"n": 7}\n')
    path.write_bytes(first + second)
    frame = read_lines([path]).frame
    assert frame["raw"].to_list() == [f'{{"n": {n}}}' for n in range(1, 8)]
    assert frame["problem"].null_count() == 7


def test_trailing_bytes_after_gzip_are_reported_not_dropped(tmp_path: Path) -> None:
    path = tmp_path / "tail.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"n": 1}\n') + b"garbage!")
    frame = read_lines([path]).frame
    assert frame["line"].to_list() == [1, 2]
    assert frame["problem"][1] == (
        "trailing bytes after the end of the gzip data are not gzip (8 bytes, not read)"
    )
    assert frame["raw"][1] == "garbage!"


@pytest.mark.slow
def test_links_and_files_outside_the_root_are_skipped_with_a_note(tmp_path: Path) -> None:
    secret = tmp_path / "secret.jsonl"
    secret.write_text('{"password": "hunter2"}\n')
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "more.jsonl").write_text('{"password": "x"}\n')
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    good_records(inbox, 3)
    (inbox / "shadow.jsonl").symlink_to(secret)
    (inbox / "folder").symlink_to(outside, target_is_directory=True)
    lake = tmp_path / "lake"
    output = _run([inbox], lake)
    assert f"{inbox / 'shadow.jsonl'}: a symbolic link, skipped unread" in output
    assert f"{inbox / 'folder'}: a symbolic link to a folder, skipped unread" in output
    assert _query(lake, "select count(*) from task_runs") == [(3,)]
    assert _query(lake, "select count(*) from quarantine") == [(0,)]
    scanned = scan_inputs([inbox / "shadow.jsonl"])
    assert scanned.files == [] and "symbolic link" in scanned.skipped[0]


# ----------------------------------------------------------------------------- bad lines


@pytest.mark.slow
def test_past_the_first_n_bad_lines_a_file_keeps_counted_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEEP_BAD_LINES_ENV, "100")
    path = tmp_path / "bad.jsonl"
    good = json.dumps(task_record("in-the-middle"))
    # 150 bad, one good, 849 bad, then 500 "1" lines (another reason).
    path.write_text("{}\n" * 150 + good + "\n" + "{}\n" * 849 + "1\n" * 500)
    lake = tmp_path / "lake"
    report = jobs.ingest([path], lake)
    assert (report.landed_task_runs, report.quarantined) == (1, 1499)
    assert report.accounted == report.lines_read == 1500
    _run([path], lake)
    rows = _query(
        lake,
        "select line, line_end, lines, raw is null from quarantine order by line",
    )
    assert rows[:100] == [(n, n, 1, False) for n in range(1, 101)]
    assert rows[100:] == [(101, 150, 50, True), (152, 1000, 849, True), (1001, 1500, 500, True)]
    again = jobs.ingest([path], lake)
    assert (again.quarantined, again.already_quarantined) == (0, 1499)


# ----------------------------------------------------------------------------- the analysts' door


@pytest.fixture(scope="module")
def small_lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("door")
    good_records(root, 3)
    lake = root / "lake"
    _run([root / "good-3.jsonl"], lake)
    return lake


@pytest.mark.slow
def test_query_streams_at_most_max_rows(small_lake: Path) -> None:
    sql = "select range from range(3000000000)"
    result = runner.invoke(app, ["query", sql, "--lake", str(small_lake), "--max-rows", "5"])
    assert result.exit_code == 0, result.output
    assert "only the first 5 rows were fetched" in result.output
    as_csv = runner.invoke(app, ["query", sql, "--lake", str(small_lake), "--csv"])
    assert as_csv.exit_code == 0
    assert as_csv.stdout.splitlines() == ["range", *map(str, range(1000))]


@pytest.mark.slow
def test_an_endless_query_stops_at_the_time_limit(
    small_lake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(QUERY_SECONDS_ENV, "2")
    endless = (
        "with recursive t(n) as (select 1 union all select n + 1 from t) select count(*) from t"
    )
    result = runner.invoke(app, ["query", endless, "--lake", str(small_lake)])
    assert result.exit_code == 1
    assert "time limit of 2 s" in result.stderr


@pytest.mark.slow
def test_a_query_over_the_memory_limit_fails_alone(
    small_lake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(QUERY_MEMORY_ENV, str(64 * MIB))
    hungry = "select count(distinct range::varchar || 'x') from range(20000000)"
    result = runner.invoke(app, ["query", hungry, "--lake", str(small_lake)])
    assert result.exit_code == 1
    # The setting that raises it, not DuckDB's advice to SET one (query refuses a SET).
    assert (
        f"query failed: the query needs more than the memory limit of {64 * MIB} bytes "
        f"({QUERY_MEMORY_ENV})"
    ) in " ".join(result.stderr.split())
    assert "SET memory_limit" not in result.stderr


@pytest.mark.slow
def test_a_query_duckdb_cannot_bound_is_ended_past_twice_its_memory(small_lake: Path) -> None:
    """One repeat() of a 3 GB string had run to 6 GB and 22 s under 256 MiB and 2 s:
    DuckDB's limit does not count it, and its interrupt waits for it. A process of its own,
    since the backstop ends the process."""
    import os
    import subprocess
    import sys

    limit = 128 * MIB
    env = {**os.environ, QUERY_MEMORY_ENV: str(limit), QUERY_SECONDS_ENV: "60"}
    sql = "select length(repeat(repeat('x', 1000000), 3000))"
    done = subprocess.run(
        [sys.executable, "-m", "pipeline", "query", sql, "--lake", str(small_lake)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stdout
    said = " ".join(done.stderr.split())
    assert f"past 2x the memory limit of {limit} bytes ({QUERY_MEMORY_ENV})" in said, said
    assert "the command was ended" in said


@pytest.mark.parametrize(
    "text",
    [b"x = " + b"[" * 100_000 + b"]" * 100_000 + b"\n", b"a = 1\n" + b"#" * (2 * MIB)],
)
def test_a_rubric_too_large_or_too_deep_is_refused(tmp_path: Path, text: bytes) -> None:
    path = tmp_path / "rubric.toml"
    path.write_bytes(text)
    result = runner.invoke(app, ["run", "--rubric", str(path), "--lake", str(tmp_path / "lake")])
    assert result.exit_code == 2
    assert "refused rubric" in result.stderr


def test_a_rubric_read_from_an_endless_file_is_refused(tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", "--rubric", "/dev/zero", "--lake", str(tmp_path / "lake")])
    assert result.exit_code == 2
    assert "larger than" in result.stderr
