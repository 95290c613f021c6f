"""The warehouse: correct roll-ups, a self-contained file that opens anywhere (older DuckDB
included), all or nothing for readers, and incremental builds equal to builds from nothing."""

from __future__ import annotations

import json
import math
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Collection, Sequence
from pathlib import Path

import duckdb
import polars as pl
import pytest
from polars.testing import assert_frame_equal
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.core.settings import Settings, use_settings
from pipeline.engines import local as local_engine
from pipeline.jobs import commands as jobs
from pipeline.jobs.ingest import ingest_locked
from pipeline.jobs.score import score_locked
from pipeline.rubric import parse_rubric
from pipeline.storage import lake as lk
from pipeline.warehouse import (
    PART_COLUMN,
    STAGE_PREFIX,
    STORAGE_VERSION,
    WarehouseError,
    build_warehouse,
    check_lake_path,
    reading,
    staged_tables,
    warehouse_path,
)
from pipeline.warehouse import build as build_module
from pipeline.warehouse import loads as loads_module
from schemas.registry import SCORED
from tests.paths import SAMPLE
from tools import simulate as sim

DEFAULT = parse_rubric({})
WEIGHTS = {"defect_matching": 0.6, "pov_quality": 0.2, "summary_quality": 0.1, "target_calls": 0.1}


def grade(run_id: str, version: str, problem: str, gate: float, pov: float, **extra: object) -> str:
    record = {
        "run_id": run_id,
        "agent": "crab",
        "agent_version": version,
        "problem_id": problem,
        "env_type": "exploit",
        "graded_at": "2026-11-30T12:00:00Z",
        "defect_id": f"D-{problem}",
        "cwe": "CWE-787",
        "grade": {
            "subscores": {
                "defect_matching": gate,
                "pov_quality": pov,
                "summary_quality": 0.0,
                "target_calls": 0.0,
            },
            "weights": WEIGHTS,
            "metadata": {"defect_matching": {"reason": "frame mismatch" if gate == 0 else "ok"}},
        },
        **extra,
    }
    return json.dumps(record)


def con_of(lake: Path) -> duckdb.DuckDBPyConnection:
    return duckdb.connect(str(lake / "warehouse.duckdb"), read_only=True)


@pytest.mark.slow
def test_wilson_macro_matches_hand_arithmetic(tmp_path: Path) -> None:
    build_warehouse(tmp_path, DEFAULT.rubric_id)
    con = con_of(tmp_path)
    low, high = con.execute("select wilson_low(0.5, 4), wilson_high(0.5, 4)").fetchone() or (0, 0)
    # z = 1.959963985, z² = 3.841459: centre (0.5 + z²/8) / (1 + z²/4) = 0.5;
    # half-width z·sqrt(0.0625 + z²/64) / (1 + z²/4) = 1.959964·0.350033 / 1.960365 = 0.349961
    assert low == pytest.approx(0.150039, abs=1e-6)
    assert high == pytest.approx(0.849961, abs=1e-6)
    # Every rate over every n from 1 to 60: 0 <= low <= p <= high <= 1, with the ends exact
    # (floats had put p = 1's high bound at 0.9999999999999998 or 1.0000000000000002).
    bounds = con.execute(
        "select p, wilson_low(p, n), wilson_high(p, n) "
        "from (select k / n as p, n from range(1, 61) as a(n), range(0, 61) as b(k) where k <= n)"
    ).fetchall()
    assert len(bounds) == sum(n + 1 for n in range(1, 61))
    assert all(0 <= lo <= p <= hi <= 1 for p, lo, hi in bounds)
    assert {hi for p, _, hi in bounds if p == 1} == {1.0}
    assert {lo for p, lo, _ in bounds if p == 0} == {0.0}


# The views over task grades and over surface grades that every warehouse has.
TASK_VIEWS = (
    "task_runs",
    "task_components",
    "task_penalties",
    "run_metadata",
    "by_agent",
    "by_defect",
    "by_cwe",
    "failure_reasons",
    "quarantine",
)
SURFACE_VIEWS = ("surface_runs", "surface_findings", "by_phase", "by_server", "fleet")


@pytest.mark.slow
def test_empty_lake_has_every_view_and_no_rows(tmp_path: Path) -> None:
    build_warehouse(tmp_path, DEFAULT.rubric_id)
    con = con_of(tmp_path)
    for view in (*TASK_VIEWS, *SURFACE_VIEWS, "version_history"):
        assert con.execute(f"select count(*) from {view}").fetchone() == (0,), view  # noqa: S608


@pytest.mark.slow
def test_by_agent_and_failure_reasons_by_hand(tmp_path: Path) -> None:
    source = tmp_path / "a.jsonl"
    source.write_text(
        "\n".join(
            [
                grade("a", "1", "p1", 1.0, 1.0),  # 0.6 + 0.2 = 0.8
                grade("b", "1", "p2", 1.0, 0.5),  # 0.6 + 0.1 = 0.7
                grade("c", "1", "p3", 0.0, 1.0),  # gated out: 0
                json.dumps(
                    {
                        **json.loads(grade("d", "1", "p4", 0.0, 0.0)),
                        "grade": {"subscores": {}, "weights": {}, "env_internal_failure": True},
                    }
                ),
            ]
        )
        + "\n"
    )
    jobs.run([source], tmp_path / "lake", DEFAULT)
    con = con_of(tmp_path / "lake")
    row = con.execute(
        "select runs, grader_errors, scored_runs, mean_score, score_se, pass_rate from by_agent"
    ).fetchone()
    assert row is not None
    runs, errors, scored, mean, se, rate = row
    assert (runs, errors, scored) == (4, 1, 3)
    assert mean == pytest.approx(0.5)  # (0.8 + 0.7 + 0) / 3
    # sample sd of (0.8, 0.7, 0): deviations 0.3, 0.2, -0.5 -> sqrt(0.38/2) = 0.43589; / sqrt(3)
    assert se == pytest.approx(math.sqrt(0.19) / math.sqrt(3))
    assert rate == pytest.approx(2 / 3)
    reasons = con.execute("select run_id, reason, gate_metadata from failure_reasons").fetchall()
    assert reasons == [("c", "frame mismatch", '{"reason":"frame mismatch"}')]
    errored = con.execute("select status, score from task_runs where run_id = 'd'").fetchone()
    assert errored == ("grader_error", None)


def test_task_penalties_shows_each_penalty_a_record_names(tmp_path: Path) -> None:
    penalized = json.loads(grade("c", "1", "p3", 1.0, 1.0))
    penalized["grade"]["penalties"] = {"timeout": 0.25, "retries": 0.125}
    source = tmp_path / "a.jsonl"
    source.write_text(grade("a", "1", "p1", 1.0, 1.0) + "\n" + json.dumps(penalized) + "\n")
    jobs.run([source], tmp_path / "lake", DEFAULT)
    con = con_of(tmp_path / "lake")
    penalties = con.execute("select * from task_penalties order by penalty").fetchall()
    assert penalties == [("c", "retries", 0.125), ("c", "timeout", 0.25)]
    # 0.6 + 0.2 = 0.8 weighted, less (0.25 + 0.125) x penalty_scale 1.0 = 0.425.
    total = con.execute("select penalty_total, score from task_runs where run_id = 'c'").fetchone()
    assert total == (pytest.approx(0.375), pytest.approx(0.425))


# The storage versions DuckDB 1.5 (the `duckdb-cli` pip installs) reads, from its own refusal:
# "we can only read versions between 64 and 68". DuckDB 2.0's default is newer.
READABLE_BY_DUCKDB_1_5 = range(64, 69)


def view_names(con: duckdb.DuckDBPyConnection) -> list[str]:
    rows = con.execute("select view_name from duckdb_views() where not internal").fetchall()
    return sorted(str(row[0]) for row in rows)


def ordered(frame: pl.DataFrame) -> pl.DataFrame:
    """Rows in one order whatever order the engine gave (by every column that sorts)."""
    keys = [name for name, dtype in frame.schema.items() if not dtype.is_nested()]
    return frame.sort(keys, nulls_last=True) if keys and frame.height else frame


def every_view(path: Path) -> dict[str, pl.DataFrame]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return {view: ordered(con.table(view).pl()) for view in view_names(con)}
    finally:
        con.close()


def every_stage_table(path: Path) -> dict[str, pl.DataFrame]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return {t: ordered(con.table(STAGE_PREFIX + t).pl()) for t in staged_tables()}
    finally:
        con.close()


def assert_same_rows(left: dict[str, pl.DataFrame], right: dict[str, pl.DataFrame]) -> None:
    assert sorted(left) == sorted(right)
    for name, frame in left.items():
        # Floats to a relative 1e-9: parallel sums may add in another order.
        assert_frame_equal(frame, right[name], rel_tol=1e-9, abs_tol=1e-12)


def duckdb_cli() -> Path | None:
    """The `duckdb` command of this environment (the duckdb-cli package), if installed."""
    beside = Path(sys.executable).with_name("duckdb")
    found = beside if beside.is_file() else shutil.which("duckdb")
    return None if found is None else Path(found)


def storage_version_number(path: Path) -> int:
    # DuckDB's main header: an 8-byte checksum, the magic "DUCK", then the version (u64 LE).
    head = path.read_bytes()[:20]
    assert head[8:12] == b"DUCK"
    return int.from_bytes(head[12:20], "little")


@pytest.mark.slow
def test_a_copied_lake_opens_anywhere_with_every_view(
    sample_lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = every_view(warehouse_path(sample_lake))
    assert expected["task_runs"].height > 0 and expected["surface_runs"].height > 0
    copy = Path(shutil.copytree(sample_lake.parent, tmp_path / "another machine's disk")) / "lake"
    moved = copy.with_name("moved lake")
    copy.rename(moved)  # the folder is moved too: nothing in the file names where it was
    elsewhere = tmp_path / "somewhere else"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # DuckDB resolves relative paths against the working dir
    found = every_view(moved / "warehouse.duckdb")
    assert len(found) >= 14
    assert_same_rows(found, expected)


@pytest.mark.slow
def test_an_older_duckdb_shell_opens_a_copy_from_another_folder(
    sample_lake: Path, tmp_path: Path
) -> None:
    cli = duckdb_cli()
    if cli is None:
        pytest.skip("no duckdb command here (pip install duckdb-cli); the Python test covers it")
    copy = Path(shutil.copytree(sample_lake, tmp_path / "copied lake"))
    expected = every_view(copy / "warehouse.duckdb")
    counts = " union all ".join(
        f"select '{view}' as view, count(*) as n from {view}"  # noqa: S608 (our view names)
        for view in sorted(expected)
    )

    def shell(sql: str) -> list[dict[str, object]]:
        done = subprocess.run(
            [str(cli), "-readonly", "-json", str(copy / "warehouse.duckdb"), "-c", sql],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        rows: list[dict[str, object]] = json.loads(done.stdout)
        return rows

    assert {row["view"]: row["n"] for row in shell(counts)} == {
        view: frame.height for view, frame in expected.items()
    }
    # The columns of whole input lines, stored with zstd, read back whole.
    lines = shell(
        "select (select sum(length(record))::bigint from task_runs) as records, "
        "(select sum(length(raw))::bigint from quarantine) as raws"
    )
    assert lines == [
        {
            "records": expected["task_runs"]["record"].str.len_chars().sum(),
            "raws": expected["quarantine"]["raw"].str.len_chars().sum(),
        }
    ]
    by_agent = shell("select * from by_agent")
    assert len(by_agent) == expected["by_agent"].height > 0
    assert set(by_agent[0]) == set(expected["by_agent"].columns)


def test_written_in_a_storage_version_duckdb_1_5_reads(sample_lake: Path) -> None:
    path = warehouse_path(sample_lake)
    assert storage_version_number(path) in READABLE_BY_DUCKDB_1_5
    con = duckdb.connect(str(path), read_only=True)
    try:
        meta = dict(con.execute("select key, value from _meta").fetchall())
    finally:
        con.close()
    assert meta["storage_version"] == STORAGE_VERSION
    assert meta["rubric_id"] == DEFAULT.rubric_id


@pytest.mark.slow
def test_the_views_read_no_file(sample_lake: Path, tmp_path: Path) -> None:
    copy = Path(shutil.copytree(sample_lake, tmp_path / "lake"))
    for folder in [*lk.LANDED_TABLES, "scores"]:
        shutil.rmtree(copy / folder, ignore_errors=True)
    con = duckdb.connect(
        str(copy / "warehouse.duckdb"), read_only=True, config={"enable_external_access": False}
    )
    try:
        assert con.execute("select count(*) from task_runs").fetchone() == (588,)
        for view in view_names(con):
            con.execute(f"select * from {view}").fetchall()  # noqa: S608
    finally:
        con.close()


def test_staging_tables_have_the_lake_files_column_types(sample_lake: Path, tmp_path: Path) -> None:
    """Each stg_<table> has the column types read_parquet gives for that table's files."""
    con = duckdb.connect(str(warehouse_path(sample_lake)), read_only=True)
    try:
        for table, schema in staged_tables().items():
            empty = tmp_path / f"{table}.parquet"
            pl.DataFrame(schema=schema).write_parquet(empty)
            files = con.sql("select * from read_parquet(?)", params=[str(empty)])
            held = con.execute(
                "select column_name, data_type from duckdb_columns() where table_name = ?",
                [STAGE_PREFIX + table],
            ).fetchall()
            # By name: the zstd columns come last (build.py's ZSTD_COLUMNS).
            assert dict(zip(files.columns, map(str, files.types), strict=True)) == {
                name: kind for name, kind in held if name != PART_COLUMN
            }, table
    finally:
        con.close()


def test_whole_input_lines_are_stored_with_zstd(sample_lake: Path) -> None:
    con = duckdb.connect(str(warehouse_path(sample_lake)), read_only=True)
    try:
        for table, column in [("task_runs", "record"), ("quarantine", "raw")]:
            stored = con.execute(
                "select distinct compression from pragma_storage_info(?) "
                "where column_name = ? and segment_type = 'VARCHAR'",
                [STAGE_PREFIX + table, column],
            ).fetchall()
            assert stored == [("ZSTD",)], (table, column)
    finally:
        con.close()


def count(lake: Path, sql: str, *params: object) -> int:
    con = duckdb.connect(str(warehouse_path(lake)), read_only=True)
    try:
        row = con.execute(sql, list(params)).fetchone()
    finally:
        con.close()
    assert row is not None
    return int(row[0])


@pytest.mark.slow
def test_readers_never_see_a_run_without_its_score(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake = tmp_path / "lake"
    jobs.run([SAMPLE / "tasks" / "atlas.jsonl"], lake, DEFAULT)
    atlas = count(lake, "select count(*) from task_runs")
    assert atlas > 0
    # Landed but not scored: not in the warehouse, even when it is rebuilt, quarantine included.
    # (the ingest command scores what it lands, so land below it, as a crash between would)
    from pipeline.storage import lake as lake_module

    with lake_module.lake_lock(lake):
        ingest_locked([SAMPLE / "tasks" / "borealis.jsonl", SAMPLE / "bad"], lake)
    build_warehouse(lake, DEFAULT.rubric_id)
    assert count(lake, "select count(*) from task_runs") == atlas
    assert count(lake, "select count(*) from quarantine") == 0
    # A run whose scoring fails leaves the warehouse as it was.
    before = warehouse_path(lake).read_bytes()

    def broken(*_: object, **__: object) -> None:
        raise RuntimeError("scoring failed")

    monkeypatch.setattr(local_engine, "score_part", broken)
    with pytest.raises(RuntimeError, match="scoring failed"):
        jobs.run([SAMPLE / "tasks" / "cinder.jsonl.gz"], lake, DEFAULT)
    assert warehouse_path(lake).read_bytes() == before
    monkeypatch.undo()
    # The next run scores what was pending and shows it all, each run with a status.
    jobs.run([SAMPLE / "tasks"], lake, DEFAULT)
    assert count(lake, "select count(*) from task_runs where status is null") == 0
    assert count(lake, "select count(*) from task_runs") > atlas
    assert count(lake, "select count(*) from quarantine") > 0
    assert count(lake, "select count(*) from by_agent where mean_score is null") == 0


@pytest.mark.slow
def test_an_incremental_build_equals_a_build_from_nothing(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    jobs.run([SAMPLE / "tasks" / "atlas.jsonl", SAMPLE / "bad"], lake, DEFAULT)
    jobs.run([SAMPLE / "tasks" / "borealis.jsonl", SAMPLE / "surface"], lake, DEFAULT)
    before = warehouse_path(lake).stat()
    again = build_warehouse(lake, DEFAULT.rubric_id)
    assert again.incremental and (again.files_loaded, again.files_dropped) == (0, 0)
    after = warehouse_path(lake).stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)  # untouched
    # A part's file rewritten (as replay-quarantine does) and another part removed whole
    # (as the repair of a broken part does).
    quarantine = lk.parquet_files(lk.table_dir(lake, "quarantine"))[0]
    lk.write_parquet_atomic(pl.read_parquet(quarantine).head(1), quarantine)
    removed = next(p.stem for p in lk.parquet_files(lk.table_dir(lake, "surface_runs")))
    for path in lake.rglob(f"{removed}.parquet"):
        path.unlink()
    build = build_warehouse(lake, DEFAULT.rubric_id)
    assert build.incremental
    assert build.files_loaded == 1  # the rewritten quarantine file
    assert build.files_dropped >= 6  # the quarantine file as it was, the part's 5 files
    incremental = every_stage_table(warehouse_path(lake)), every_view(warehouse_path(lake))
    assert incremental[1]["quarantine"].height == 1
    assert incremental[1]["surface_runs"].height == 0
    warehouse_path(lake).unlink()
    fresh = build_warehouse(lake, DEFAULT.rubric_id)
    assert not fresh.incremental
    assert_same_rows(incremental[0], every_stage_table(warehouse_path(lake)))
    assert_same_rows(incremental[1], every_view(warehouse_path(lake)))


def test_the_record_of_what_the_file_holds_spares_opening_it(
    sample_lake_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build that finds nothing to change reads ``_state/warehouse_held.json``, which says
    what the file holds, instead of opening the file; the record says what the file says."""
    lake = sample_lake_copy
    rubric_id = DEFAULT.rubric_id
    path = warehouse_path(lake)
    # A copied lake's file is another file (another inode): its record is not used until a
    # build has read the file and recorded it again.
    assert build_module._recorded(lake) is None
    build_warehouse(lake, rubric_id)
    views = every_view(path)
    recorded = build_module._recorded(lake)
    from_file = build_module._read_held(path)
    assert recorded is not None and from_file is not None
    assert recorded.rubric_id == from_file.rubric_id == rubric_id
    assert_frame_equal(recorded.files.sort("tbl", "path"), from_file.files.sort("tbl", "path"))

    opened: list[Path] = []
    real_read = build_module._read_held
    monkeypatch.setattr(build_module, "_read_held", lambda p: opened.append(p) or real_read(p))
    before = (path.stat().st_ino, path.stat().st_mtime_ns)
    build = build_warehouse(lake, rubric_id)
    assert (build.files_loaded, build.files_dropped, opened) == (0, 0, [])
    assert (path.stat().st_ino, path.stat().st_mtime_ns) == before

    # The file touched (another mtime): the record no longer speaks for it; the file is read,
    # and the record written again for it.
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))
    assert build_module._recorded(lake) is None
    build_warehouse(lake, rubric_id)
    assert opened == [path]
    assert build_module._recorded(lake) is not None

    # A damaged record, or one of another fingerprint: the file is read.
    record = lk.state_path(lake, build_module.HELD_RECORD)
    record.write_text("not json")
    assert build_module._recorded(lake) is None
    document = {"file": build_module._identity(path), "fingerprint": "x"}
    record.write_text(json.dumps({**document, "rubric_id": rubric_id, "files": []}))
    assert build_module._recorded(lake) is None
    build_warehouse(lake, rubric_id)
    assert opened == [path, path]
    assert_same_rows(views, every_view(path))  # nothing was loaded or dropped meanwhile


def test_a_build_that_writes_records_what_it_wrote(sample_lake_copy: Path) -> None:
    lake = sample_lake_copy
    other = parse_rubric({"task": {"failure_threshold": 0.9}})
    assert build_module._recorded(lake) is None  # copied: another file
    jobs.score(lake, other)  # a new rubric: every score file replaced, the file rebuilt
    recorded = build_module._recorded(lake)
    from_file = build_module._read_held(warehouse_path(lake))
    assert recorded is not None and from_file is not None
    assert recorded.rubric_id == from_file.rubric_id == other.rubric_id
    assert_frame_equal(recorded.files.sort("tbl", "path"), from_file.files.sort("tbl", "path"))


@pytest.mark.parametrize("threads", ["1", None])
def test_a_rescore_in_a_new_process_leaves_every_score_file_as_it_was(
    sample_lake_copy: Path, threads: str | None
) -> None:
    """Scores are planned by Polars' in-memory engine (engines/stage.py BATCH_ENGINE), whose
    rows, their order and their floats' bits must not depend on its thread pool: every score
    file then holds what the rescore computes, so it is left in place (its bytes and mtime)
    and the warehouse reloads nothing."""
    lake = sample_lake_copy
    scored = sorted((lake / "scores").rglob("*.parquet"))
    before = {path: (path.read_bytes(), path.stat().st_mtime_ns) for path in scored}
    held = warehouse_path(lake).stat().st_mtime_ns
    env = {k: v for k, v in os.environ.items() if k != "POLARS_MAX_THREADS"}
    if threads is not None:
        env["POLARS_MAX_THREADS"] = threads
    done = subprocess.run(
        [sys.executable, "-m", "pipeline", "score", "--lake", str(lake)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "scored" in done.stdout
    assert sorted((lake / "scores").rglob("*.parquet")) == scored
    assert {path: (path.read_bytes(), path.stat().st_mtime_ns) for path in scored} == before
    assert warehouse_path(lake).stat().st_mtime_ns == held


@pytest.mark.slow
def test_a_rescore_that_changes_no_score_loads_nothing_again(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    jobs.run([SAMPLE / "tasks" / "atlas.jsonl"], lake, DEFAULT)
    views = every_view(warehouse_path(lake))
    scored = sorted((lake / "scores").rglob("*.parquet"))
    before = [path.stat().st_mtime_ns for path in scored]
    held = warehouse_path(lake).stat()
    jobs.score(lake, DEFAULT)  # every score file written again, with the same bytes

    # Files that would get their own bytes again stay as they were: the warehouse is untouched.
    assert [path.stat().st_mtime_ns for path in scored] == before
    assert (warehouse_path(lake).stat().st_ino, warehouse_path(lake).stat().st_mtime_ns) == (
        held.st_ino,
        held.st_mtime_ns,
    )
    assert_same_rows(views, every_view(warehouse_path(lake)))
    # Only the mtime moves: the build records it and loads nothing; the next one writes nothing.
    stat = scored[0].stat()
    os.utime(scored[0], ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))
    redated = build_warehouse(lake, DEFAULT.rubric_id)
    assert (redated.files_loaded, redated.files_dropped) == (0, 0)
    kept = warehouse_path(lake).stat()
    build_warehouse(lake, DEFAULT.rubric_id)
    assert warehouse_path(lake).stat().st_ino == kept.st_ino
    # Other bytes: the file is loaded again.
    lk.write_parquet_atomic(pl.read_parquet(scored[0]).head(0), scored[0])
    changed = build_warehouse(lake, DEFAULT.rubric_id)
    assert (changed.files_loaded, changed.files_dropped) == (1, 1)


@pytest.mark.slow
def test_another_rubric_keeps_the_landed_tables_and_replaces_every_score(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    jobs.run([SAMPLE / "tasks" / "atlas.jsonl", SAMPLE / "surface"], lake, DEFAULT)
    runs = count(lake, "select count(*) from task_runs")
    other = parse_rubric({"task": {"failure_threshold": 0.9}})
    jobs.score(lake, other)  # scores under both rubrics are now in the lake
    back = build_warehouse(lake, DEFAULT.rubric_id)

    assert back.incremental
    assert back.files_loaded == back.files_dropped == 6  # five per-part tables, version_regressions
    assert count(lake, "select count(distinct rubric_id) from task_runs") == 1
    assert (
        count(lake, "select count(*) from task_runs where rubric_id = ?", DEFAULT.rubric_id) == runs
    )
    assert count(lake, "select count(*) from surface_runs where rubric_id is null") == 0
    incremental = every_stage_table(warehouse_path(lake)), every_view(warehouse_path(lake))
    warehouse_path(lake).unlink()
    assert not build_warehouse(lake, DEFAULT.rubric_id).incremental
    assert_same_rows(incremental[0], every_stage_table(warehouse_path(lake)))
    assert_same_rows(incremental[1], every_view(warehouse_path(lake)))


@pytest.mark.slow
def test_a_killed_build_leaves_nothing_behind(tmp_path: Path) -> None:
    build_warehouse(tmp_path, DEFAULT.rubric_id)
    for leftover in (".warehouse.duckdb.1a2b3c4d.tmp", ".warehouse.duckdb.1a2b3c4d.tmp.wal"):
        (tmp_path / leftover).write_bytes(b"half")
    build_warehouse(tmp_path, DEFAULT.rubric_id)
    # The file, and the record of what it holds (build.HELD_RECORD).
    assert sorted(p.name for p in tmp_path.iterdir()) == ["_state", "warehouse.duckdb"]
    assert [p.name for p in (tmp_path / "_state").iterdir()] == ["warehouse_held.json"]


@pytest.mark.slow
def test_a_damaged_warehouse_file_is_built_again_from_nothing(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    jobs.run([SAMPLE / "tasks" / "atlas.jsonl"], lake, DEFAULT)
    runs = count(lake, "select count(*) from task_runs")
    warehouse_path(lake).write_bytes(b"not a database")
    assert not build_warehouse(lake, DEFAULT.rubric_id).incremental
    assert count(lake, "select count(*) from task_runs") == runs


@pytest.mark.slow
def test_the_run_summary_prints_commands_that_open_the_warehouse(tmp_path: Path) -> None:
    lake = tmp_path / "the lake"
    result = CliRunner().invoke(
        app, ["run", str(SAMPLE / "tasks" / "atlas.jsonl"), "--lake", str(lake)]
    )
    assert result.exit_code == 0, result.output
    lines = {line.split(":", 1)[0]: line for line in result.stdout.splitlines() if ":  " in line}
    query = shlex.split(lines["query it"].split(":  ", 1)[1])
    assert query[1:4] == ["-m", "pipeline", "query"]
    done = subprocess.run(
        [*query, "--json"], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)) == count(lake, "select count(*) from by_agent") > 0
    shell = shlex.split(lines["or open it in DuckDB's shell"].split(":  ", 1)[1])
    assert shell[1] == "-readonly"
    assert Path(shell[2]).resolve() == warehouse_path(lake).resolve()
    if duckdb_cli() is not None:
        opened = subprocess.run(
            [*shell, "-csv", "-c", "select count(*) as n from by_agent"],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        assert opened.returncode == 0, opened.stderr
        assert opened.stdout.split() == ["n", str(count(lake, "select count(*) from by_agent"))]


@pytest.mark.slow
def test_the_run_summary_tables_are_the_warehouses(tmp_path: Path) -> None:
    """`run` returns its closing tables as data (the CLI only prints them): runs by agent and
    version in the order versions were first graded, and the servers' latest grades."""
    lake = tmp_path / "lake"
    summary = jobs.run([SAMPLE / "tasks" / "atlas.jsonl", SAMPLE / "surface"], lake, DEFAULT)
    with reading(lake) as con:
        expected = con.sql(
            "select agent, agent_version, count(*) as runs, "
            "count(*) filter (where status = 'grader_error') as grader_errors, "
            "avg(score) filter (where status = 'scored') as mean_score_runs "
            "from task_runs group by all order by agent, min(graded_at)"
        ).pl()
        ((servers,),) = con.execute("select count(*) from by_server").fetchall()
        shown = con.sql(
            "select round(overall_display - previous_overall_display, 1) as moved "
            "from by_server order by server"
        ).pl()
    assert_frame_equal(summary.by_version.select(expected.columns), expected, check_dtypes=False)
    assert summary.by_version["runs"].sum() == summary.ingest.landed_task_runs > 0
    assert summary.by_server.height == servers > 0
    # The move shown beside a shown overall is the difference of the shown values.
    assert summary.by_server["overall_display_delta"].to_list() == shown["moved"].to_list()
    assert shown["moved"].drop_nulls().len() > 0


def test_lake_path_with_glob_characters_is_refused(tmp_path: Path) -> None:
    with pytest.raises(WarehouseError, match="glob"):
        check_lake_path(tmp_path / "la*ke")
    assert check_lake_path(tmp_path / "it's").endswith("it's")


def stage_tables_as_stored(path: Path) -> dict[str, pl.DataFrame]:
    """Every staging table's rows in the order they were written (rowid), not sorted."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        return {t: con.table(STAGE_PREFIX + t).order("rowid").pl() for t in staged_tables()}
    finally:
        con.close()


@pytest.mark.slow
def test_tables_loaded_side_by_side_equal_tables_loaded_one_at_a_time(
    sample_lake_copy: Path,
) -> None:
    lake = sample_lake_copy
    built: list[tuple[dict[str, pl.DataFrame], dict[str, pl.DataFrame]]] = []
    for threads in (1, 2, 4):  # one table at a time; two and four side by side
        warehouse_path(lake).unlink()
        with use_settings(Settings(duckdb_threads=threads)):
            assert build_warehouse(lake, DEFAULT.rubric_id).files_loaded > 4
        path = warehouse_path(lake)
        built.append((stage_tables_as_stored(path), every_view(path)))
    serial = built[0]
    assert sum(frame.height for frame in serial[0].values()) > 0
    for tables, views in built[1:]:
        assert sorted(tables) == sorted(serial[0])
        for name, frame in tables.items():
            # The same rows in the same order, bit for bit: each table is one statement.
            assert_frame_equal(frame, serial[0][name], check_exact=True)
        assert_same_rows(serial[1], views)


def test_tables_loaded_side_by_side_take_one_duckdb_thread_each(
    sample_lake_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # On more threads an insert writes partly filled row groups, which the closing
    # checkpoint merges and writes again alone (bench/RESULTS.md, seventh pass): side by
    # side, each load's insert runs on its cursor's thread only, and the build's threads
    # are back for what follows the loads.
    lake = sample_lake_copy
    seen: list[tuple[str, int]] = []
    after: list[int] = []
    real_insert, real_load_all = loads_module.insert, loads_module.load_all

    def insert(con: duckdb.DuckDBPyConnection, table: str, files: Sequence[str]) -> None:
        ((threads,),) = con.execute("select current_setting('threads')").fetchall()
        seen.append((table, threads))
        real_insert(con, table, files)

    def load_all(
        con: duckdb.DuckDBPyConnection,
        planned: list[list[loads_module.Load]],
        workers: int,
        relabels: Sequence[loads_module.Relabel] = (),
    ) -> None:
        real_load_all(con, planned, workers, relabels)
        ((threads,),) = con.execute("select current_setting('threads')").fetchall()
        after.append(threads)

    monkeypatch.setattr(loads_module, "insert", insert)
    monkeypatch.setattr(build_module, "load_all", load_all)
    warehouse_path(lake).unlink()
    with use_settings(Settings(duckdb_threads=2)):
        assert build_warehouse(lake, DEFAULT.rubric_id).files_loaded > 4
    assert len(seen) > 2
    assert {threads for _, threads in seen} == {1}
    assert after == [2]


@pytest.fixture
def parted_lake(tmp_path: Path) -> Path:
    """A lake of 600 runs landed in parts of 64 KiB of lines: several files a table."""
    source = sim.write_task_jsonl(tmp_path / "runs.jsonl", 600, seed=3)
    lake = tmp_path / "lake"
    with lk.lake_lock(lake):
        report = ingest_locked([source], lake, DEFAULT, chunk_bytes=64 * 1024)
        score_locked(lake, DEFAULT, full=False)
    assert len(report.parts) >= 4, report.parts
    return lake


def a_load_a_file(monkeypatch: pytest.MonkeyPatch) -> list[list[loads_module.Load]]:
    """Every table cut into one load a file, as far as a plan can cut (the loads planned)."""
    cut: list[list[loads_module.Load]] = []

    def plan(
        tables: dict[str, list[tuple[str, int]]], workers: int, beside: int = 0
    ) -> list[list[loads_module.Load]]:
        planned = [
            [loads_module.Load(table, (path,), size) for path, size in files]
            for table, files in tables.items()
        ]
        cut.extend(planned)
        return planned

    monkeypatch.setattr(build_module, "plan", plan)
    return cut


@pytest.mark.slow
def test_tables_cut_into_loads_store_the_rows_one_insert_stores(
    parted_lake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Loads of one table run side by side and commit in file order: the table's rows are
    those, in the order, of one insert of all its files."""
    lake = parted_lake

    def built(threads: int) -> dict[str, pl.DataFrame]:
        warehouse_path(lake).unlink(missing_ok=True)
        with use_settings(Settings(duckdb_threads=threads)):
            assert build_warehouse(lake, DEFAULT.rubric_id).files_loaded > 8
        return stage_tables_as_stored(warehouse_path(lake))

    serial = built(1)  # one insert a table
    cut = a_load_a_file(monkeypatch)
    for threads in (2, 3):
        apart = built(threads)
        assert max(len(loads) for loads in cut) >= 4  # tables cut into a load a file
        assert sum(frame.height for frame in serial.values()) > 0
        for name, frame in serial.items():
            assert_frame_equal(apart[name], frame, check_exact=True)


@pytest.mark.slow
@pytest.mark.parametrize("broken_load", [0, 1, -1])
def test_a_cut_load_that_fails_leaves_the_warehouse_as_it_was(
    parted_lake: Path, monkeypatch: pytest.MonkeyPatch, broken_load: int
) -> None:
    """The first, a middle or the last load of a cut table fails in a build from nothing:
    the loads after it never commit, none waits forever, and no file is put in place."""
    lake = parted_lake
    warehouse_path(lake).unlink(missing_ok=True)
    files = lk.parquet_files(lk.table_dir(lake, "task_runs"))
    assert len(files) >= 3
    files[broken_load].write_bytes(b"not parquet")
    a_load_a_file(monkeypatch)
    with use_settings(Settings(duckdb_threads=2)), pytest.raises(WarehouseError) as failed:
        build_warehouse(lake, DEFAULT.rubric_id)
    assert "loading task_runs into the warehouse failed" in str(failed.value)
    assert not warehouse_path(lake).exists()
    assert not list(lake.glob(f".{warehouse_path(lake).name}.*"))


@pytest.mark.slow
@pytest.mark.parametrize("table", ["task_runs", "run_metadata"])
def test_a_load_that_fails_beside_others_leaves_the_warehouse_as_it_was(
    sample_lake_copy: Path, table: str
) -> None:
    lake = sample_lake_copy
    before = warehouse_path(lake).read_bytes()
    broken = lk.parquet_files(lk.table_dir(lake, table))[0]
    broken.write_bytes(b"not parquet")
    with use_settings(Settings(duckdb_threads=2)), pytest.raises(WarehouseError) as failed:
        build_warehouse(lake, DEFAULT.rubric_id)
    # The load that failed is named, not one the failure stopped (interrupted).
    assert f"loading {table} into the warehouse failed" in str(failed.value)
    assert "interrupt" not in str(failed.value).lower()
    assert warehouse_path(lake).read_bytes() == before
    assert not list(lake.glob(f".{warehouse_path(lake).name}.*"))


# The surface score tables, which a change to the task rubric leaves as they were.
SURFACE_SCORES = {"surface_scores", "surface_finding_scores", "surface_phase_scores"}
# Rubric changes, each with the score tables it leaves as they were but for the rubric named
# (relabelled, not reloaded): one that moves task totals only (no component score moves), one
# that moves component scores too, and one that only names the rubric otherwise.
RUBRIC_CHANGES: dict[str, tuple[dict[str, object], set[str]]] = {
    "penalty_scale": ({"task": {"penalty_scale": 0.5}}, {"task_component_scores", *SURFACE_SCORES}),
    "weights": (
        {"task": {"exploit": {"weights": {**WEIGHTS, "pov_quality": 0.1, "target_calls": 0.2}}}},
        SURFACE_SCORES,
    ),
    "name": (
        {"rubric_id": "renamed"},
        {"task_scores", "task_component_scores", "version_regressions", *SURFACE_SCORES},
    ),
}


def relabels_seen(monkeypatch: pytest.MonkeyPatch) -> list[set[str]]:
    """The tables each build relabels instead of reloading (``relabel.relabelled``)."""
    seen: list[set[str]] = []
    real = build_module.relabelled

    def relabelled(*args: object) -> dict[str, str]:
        found = real(*args)  # type: ignore[arg-type]
        seen.append(set(found))
        return found

    monkeypatch.setattr(build_module, "relabelled", relabelled)
    return seen


def assert_as_built_from_nothing(lake: Path, in_order: Collection[str] | None = None) -> None:
    """The warehouse equals one built from nothing on the same lake: every staging table of
    ``in_order`` (None: all) row for row in stored order, bit for bit, the others' rows in
    any order; the same views' rows and the same definitions."""
    built = stage_tables_as_stored(warehouse_path(lake)), every_view(warehouse_path(lake))
    with duckdb.connect(str(warehouse_path(lake)), read_only=True) as con:
        definitions = build_module.catalog(con)
    (lake / "_state" / f"{build_module.HELD_RECORD}.json").unlink()
    warehouse_path(lake).unlink()
    assert not build_warehouse(lake, built[0]["task_scores"]["rubric_id"][0]).incremental
    fresh = stage_tables_as_stored(warehouse_path(lake))
    assert sorted(fresh) == sorted(built[0])
    for name, frame in fresh.items():
        if in_order is None or name in in_order:
            assert_frame_equal(built[0][name], frame, check_exact=True)
        else:
            assert_frame_equal(ordered(built[0][name]), ordered(frame), check_exact=True)
    assert_same_rows(built[1], every_view(warehouse_path(lake)))
    with duckdb.connect(str(warehouse_path(lake)), read_only=True) as con:
        assert build_module.catalog(con) == definitions


@pytest.mark.slow
@pytest.mark.parametrize(
    ("change", "threads"), [*((change, 2) for change in sorted(RUBRIC_CHANGES)), ("name", 1)]
)
def test_after_a_rubric_change_the_warehouse_is_the_one_built_from_nothing(
    parted_lake: Path, monkeypatch: pytest.MonkeyPatch, change: str, threads: int
) -> None:
    """Relabels and loads side by side (two threads), or one after another (one)."""
    lake = parted_lake
    jobs.ingest([SAMPLE / "surface"], lake)
    given, relabelled = RUBRIC_CHANGES[change]
    seen = relabels_seen(monkeypatch)
    with use_settings(Settings(duckdb_threads=threads)):
        jobs.score(lake, parse_rubric(given))
    assert seen == [relabelled]
    assert count(lake, "select count(distinct rubric_id) from stg_task_component_scores") == 1
    assert_as_built_from_nothing(lake)


@pytest.mark.slow
def test_a_table_whose_parts_are_stored_out_of_order_is_reloaded(
    parted_lake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A part's rows taken out and loaded again go after the others': relabelled in place,
    the table would keep that order where a reload gives the files' order."""
    lake = parted_lake
    build_warehouse(lake, DEFAULT.rubric_id)
    first = lk.parquet_files(lk.score_dir(lake, DEFAULT.rubric_id, "task_component_scores"))[0]
    aside = lake.parent / first.name
    first.rename(aside)
    assert build_warehouse(lake, DEFAULT.rubric_id).files_dropped > 0  # its part is hidden
    aside.rename(first)
    assert build_warehouse(lake, DEFAULT.rubric_id).files_loaded > 0  # and back, at the end
    stored = stage_tables_as_stored(warehouse_path(lake))["task_component_scores"]
    assert stored[PART_COLUMN][-1] == first.stem
    seen = relabels_seen(monkeypatch)
    jobs.score(lake, parse_rubric(RUBRIC_CHANGES["penalty_scale"][0]))
    assert seen == [set()]  # its other parts' files hold the rows but for the rubric
    # The landed tables keep the order their incremental loads gave; the score tables are
    # new, in the files' order.
    assert_as_built_from_nothing(lake, in_order=SCORED)


@pytest.mark.slow
@pytest.mark.parametrize("threads", [1, 2])
def test_a_relabel_that_fails_leaves_the_warehouse_as_it_was(
    parted_lake: Path, monkeypatch: pytest.MonkeyPatch, threads: int
) -> None:
    lake = parted_lake
    build_warehouse(lake, DEFAULT.rubric_id)
    before = warehouse_path(lake).read_bytes()

    def relabel(con: duckdb.DuckDBPyConnection, job: loads_module.Relabel) -> None:
        raise loads_module.load_failed(job.table, RuntimeError("disk on fire"))

    monkeypatch.setattr(loads_module, "relabel", relabel)
    seen = relabels_seen(monkeypatch)
    with use_settings(Settings(duckdb_threads=threads)), pytest.raises(WarehouseError) as failed:
        jobs.score(lake, parse_rubric(RUBRIC_CHANGES["penalty_scale"][0]))
    assert seen == [{"task_component_scores"}]
    assert "loading task_component_scores into the warehouse failed" in str(failed.value)
    assert warehouse_path(lake).read_bytes() == before
    assert not list(lake.glob(f".{warehouse_path(lake).name}.*"))
