"""The warehouse file's read side (pipeline/warehouse/file.py) on tiny files: a fact is read
when the file is there and whole, and a missing, foreign or broken file reads as None."""

from __future__ import annotations

import shlex
from pathlib import Path

import duckdb
import pytest

from pipeline.core.sql import sql_text
from pipeline.warehouse.file import (
    OLDEST_READER,
    SharedInstance,
    WarehouseError,
    built_rubric_id,
    connect_read_only,
    meta_value,
    open_commands,
    opened,
    read_if_usable,
    reading,
    warehouse_path,
)


def _with_meta(lake: Path, **facts: str) -> Path:
    lake.mkdir(exist_ok=True)
    con = duckdb.connect(str(warehouse_path(lake)))
    try:
        con.execute(sql_text("queries/meta_create.sql"))
        for key, value in facts.items():
            con.execute(sql_text("queries/meta_set.sql"), [key, value])
    finally:
        con.close()
    return lake


def test_the_rubric_a_file_was_built_for_is_read(tmp_path: Path) -> None:
    lake = _with_meta(tmp_path / "lake", rubric_id="r-2", fingerprint="f")
    assert built_rubric_id(lake) == "r-2"

    def facts(con: duckdb.DuckDBPyConnection) -> tuple[list[str | None], object]:
        # A fact read leaves no result open: the connection's next query runs (as the
        # build reads the file list after the fingerprint).
        read = [meta_value(con, key) for key in ("fingerprint", "absent", "rubric_id")]
        return read, con.sql("select count(*) from _meta").fetchall()

    assert read_if_usable(warehouse_path(lake), facts) == (["f", None, "r-2"], [(2,)])


def test_no_usable_file_reads_as_none(tmp_path: Path) -> None:
    assert built_rubric_id(tmp_path) is None  # no file
    warehouse_path(tmp_path).write_bytes(b"not a database")
    assert built_rubric_id(tmp_path) is None  # DuckDB cannot open it
    other = tmp_path / "other"
    warehouse_path(other).mkdir(parents=True)
    assert built_rubric_id(other) is None  # a folder where the file would be
    empty = tmp_path / "empty"
    empty.mkdir()
    duckdb.connect(str(warehouse_path(empty))).close()
    assert built_rubric_id(empty) is None  # a database without the build's facts


def test_a_failing_read_is_none_and_the_file_is_closed(tmp_path: Path) -> None:
    lake = _with_meta(tmp_path, rubric_id="r")

    def broken(con: duckdb.DuckDBPyConnection) -> int:
        con.execute("select * from no_such_table")
        return 1

    assert read_if_usable(warehouse_path(lake), broken) is None
    # Closed: a writer may open the file again in this process.
    duckdb.connect(str(warehouse_path(lake))).close()


def test_overlapping_reads_of_one_file_each_see_it_and_leave_nothing_attached(
    tmp_path: Path,
) -> None:
    first = _with_meta(tmp_path / "a", rubric_id="r-a")
    second = _with_meta(tmp_path / "b", rubric_id="r-b")
    with opened(warehouse_path(first)) as outer:
        # The same file again while it is attached (DuckDB refuses a path twice in one
        # instance): a connection of its own; another file: attached beside it.
        with opened(warehouse_path(first)) as inner, reading(second) as other:
            assert meta_value(inner, "rubric_id") == "r-a"
            assert meta_value(other, "rubric_id") == "r-b"
        assert meta_value(outer, "rubric_id") == "r-a"
        (database,) = outer.execute("select current_database()").fetchall()[0]
    # Detached: the file can be written again in this process, and read afresh.
    con = duckdb.connect(str(warehouse_path(first)))
    con.execute(sql_text("queries/meta_set.sql"), ["rubric_id", "r-a2"])
    con.close()
    assert built_rubric_id(first) == "r-a2"
    with reading(second) as con:
        attached = con.execute("select database_name from duckdb_databases()").fetchall()
    assert (database,) not in attached


def test_a_forgotten_shared_instance_starts_again_on_the_next_opening(tmp_path: Path) -> None:
    lake = _with_meta(tmp_path, rubric_id="r")
    shared = SharedInstance()
    with shared.attached(str(warehouse_path(lake)), "read_only") as con:
        before = con.execute("select 1").fetchall()
    shared.forget()
    with shared.attached(str(warehouse_path(lake)), "read_only") as con:
        assert meta_value(con, "rubric_id") == "r"
        assert con.execute("select 1").fetchall() == before


def test_the_analysts_door_names_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(WarehouseError) as raised:
        connect_read_only(tmp_path)
    assert f"`python -m pipeline score --lake {tmp_path}` builds it" in str(raised.value)


def test_open_commands_paste_as_they_are(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    lake = tmp_path / "my lake"
    commands = open_commands(lake, "select 1;")
    # A path with a space is quoted once, relative to the working directory.
    assert shlex.split(commands["shell"])[-2:] == ["-readonly", "my lake/warehouse.duckdb"]
    assert shlex.split(commands["query"])[-4:] == ["query", "select 1;", "--lake", "my lake"]
    assert commands["readers"] == f"DuckDB {OLDEST_READER} or later"


def test_an_attached_file_spills_beside_itself(tmp_path: Path) -> None:
    lake = _with_meta(tmp_path, rubric_id="r")
    with reading(lake) as con:
        ((spill,),) = con.execute("select current_setting('temp_directory')").fetchall()
    assert spill == f"{warehouse_path(lake).resolve()}.tmp"


def test_a_reader_naming_what_another_versions_file_lacks_is_told_what_builds_it_again(
    tmp_path: Path,
) -> None:
    from pipeline.warehouse.build import fingerprint

    ours = _with_meta(tmp_path / "ours", fingerprint=fingerprint())
    with pytest.raises(duckdb.CatalogException), reading(ours) as con:
        con.execute("select * from a_newer_view")
    older = _with_meta(tmp_path / "older", fingerprint="an older build")
    with pytest.raises(WarehouseError) as told, reading(older) as con:
        con.execute("select * from a_newer_view")
    assert "a_newer_view" in str(told.value)
    assert f"pipeline score --lake {older}` (or any command that writes)" in str(told.value)
    # Without a build record there is nothing to add to DuckDB's error.
    bare = _with_meta(tmp_path / "bare")
    with pytest.raises(duckdb.CatalogException), reading(bare) as con:
        con.execute("select * from a_newer_view")
