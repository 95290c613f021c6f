"""Cutting tables into loads (pipeline/warehouse/loads.py); what cut loads store is in
tests/e2e/test_warehouse.py."""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from pathlib import Path

import duckdb
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.warehouse import loads as loads_module
from pipeline.warehouse.file import WarehouseError
from pipeline.warehouse.loads import Load, load_all, plan
from pipeline.warehouse.models import stage_sql


def test_a_table_past_its_share_is_cut_where_its_files_reach_the_share() -> None:
    tables = {
        "a": [(f"a{i}", 44) for i in range(1, 6)],  # 220 bytes
        "b": [(f"b{i}", 20) for i in range(1, 6)],  # 100
        "c": [("c1", 1)],
    }
    # Two workers: a share of 321 / 2 = 160.5. a takes a4 (132 + 44/2 = 154 <= 160.5),
    # not a5 (176 + 22 = 198 > 160.5): loads of 176 and 44 bytes; b and c stay whole.
    assert plan(tables, 2) == [
        [Load("a", ("a1", "a2", "a3", "a4"), 176), Load("a", ("a5",), 44)],
        [Load("b", ("b1", "b2", "b3", "b4", "b5"), 100)],
        [Load("c", ("c1",), 1)],
    ]
    # One worker: the share is everything, nothing is cut.
    assert [len(loads) for loads in plan(tables, 1)] == [1, 1, 1]


def test_bytes_relabelled_beside_the_loads_count_in_the_share() -> None:
    # task_scores alone on two workers: a share of 50, so two loads of 50. Beside a relabel
    # of 100 bytes' files: a share of (100 + 100) / 2 = 100, and it stays one load.
    tables = {"task_scores": [(f"s{i}", 25) for i in range(4)]}
    assert [load.size for load in plan(tables, 2)[0]] == [50, 50]
    assert [load.size for load in plan(tables, 2, beside=100)[0]] == [100]


def test_files_larger_than_the_share_are_a_load_each() -> None:
    # Share 1000 / 2 = 500: x alone is the share; y would take the load to 750 at its middle.
    assert plan({"t": [("x", 500), ("y", 500)]}, 2) == [
        [Load("t", ("x",), 500), Load("t", ("y",), 500)]
    ]
    assert plan({}, 2) == []
    assert plan({"t": [("z", 0)]}, 2) == [[Load("t", ("z",), 0)]]


@given(
    st.dictionaries(
        st.sampled_from(["a", "b", "c", "d"]),
        st.lists(st.integers(min_value=0, max_value=10_000), max_size=12),
    ),
    st.integers(min_value=1, max_value=8),
)
def test_a_tables_loads_hold_its_files_once_in_their_order(
    sizes: dict[str, list[int]], workers: int
) -> None:
    tables = {t: [(f"{t}{i}", size) for i, size in enumerate(s)] for t, s in sizes.items()}
    planned = plan(tables, workers)
    share = sum(sum(s) for s in sizes.values()) / workers
    assert [loads[0].table for loads in planned if loads] == [t for t, f in tables.items() if f]
    for (table, files), loads in zip(tables.items(), planned, strict=True):
        assert [f for load in loads for f in load.files] == [path for path, _ in files]
        assert all(load.files and load.table == table for load in loads)
        assert [load.size for load in loads] == [
            sum(dict(files)[f] for f in load.files) for load in loads
        ]
        # Only a table past its share is cut, and a cut load holds at least half a file
        # short of the share.
        if sum(size for _, size in files) <= share:
            assert len(loads) <= 1
        for load, following in itertools.pairwise(loads):
            assert load.size + dict(files)[following.files[0]] / 2 > share


def test_a_staging_statement_names_a_lake_table_only() -> None:
    assert "stg_task_runs" in stage_sql("stage_insert", "task_runs")
    for name in ("nope", "task_runs; drop table x", "Task_Runs"):
        with pytest.raises(WarehouseError, match="not a lake table"):
            stage_sql("stage_insert", name)


class _Cursor:
    """A cursor whose commit fails for the load holding ``fail_on``."""

    def __init__(self, real: duckdb.DuckDBPyConnection, fail_on: int | None) -> None:
        self.real, self.fail_on = real, fail_on
        self.values: list[int] = []

    def execute(self, sql: str, params: object = None) -> object:
        if sql == "commit" and self.fail_on in self.values:
            raise duckdb.IOException("disk full")
        return self.real.execute(sql, params) if params is not None else self.real.execute(sql)

    def close(self) -> None:
        self.real.close()


class _Connection:
    def __init__(self, real: duckdb.DuckDBPyConnection, fail_on: int | None = None) -> None:
        self.real, self.fail_on = real, fail_on

    def execute(self, sql: str, params: object = None) -> object:
        return self.real.execute(sql, params) if params is not None else self.real.execute(sql)

    def cursor(self) -> _Cursor:
        return _Cursor(self.real.cursor(), self.fail_on)


def _numbers(cursor: _Cursor, table: str, files: Sequence[str]) -> None:
    """A load of ``files`` named by numbers: those numbers, after a moment, into ``table``."""
    cursor.values = [int(name) for name in files]
    time.sleep(0.05 if "1" in files else 0.0)  # the first load ends after those that follow it
    cursor.execute(f"insert into {table} select unnest(?)", [cursor.values])


# Table a in three loads (numbers 1-6), table b in one (7).
NUMBERED = [
    [Load("a", ("1", "2", "3"), 30), Load("a", ("4",), 10), Load("a", ("5", "6"), 20)],
    [Load("b", ("7",), 5)],
]


def _numbered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> duckdb.DuckDBPyConnection:
    """A file with tables a and b, and loads that insert their files' numbers (``_numbers``)."""
    real = duckdb.connect(str(tmp_path / "w.duckdb"))
    real.execute("create table a (x int); create table b (x int)")
    monkeypatch.setattr(loads_module, "insert", _numbers)
    return real


def test_loads_side_by_side_commit_each_tables_rows_in_file_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = _numbered(tmp_path, monkeypatch)
    load_all(_Connection(real), NUMBERED, 2)  # type: ignore[arg-type]
    assert real.execute("select x from a order by rowid").fetchall() == [(i,) for i in range(1, 7)]
    assert real.execute("select x from b").fetchall() == [(7,)]
    assert real.execute("select current_setting('threads')").fetchone() != (1,)


@pytest.mark.parametrize("fail_on", [1, 4, 5])
def test_a_failed_commit_names_its_table_and_leaves_later_loads_uncommitted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail_on: int
) -> None:
    real = _numbered(tmp_path, monkeypatch)
    with pytest.raises(WarehouseError, match=r"loading a into the warehouse failed: .*disk full"):
        load_all(_Connection(real, fail_on), NUMBERED, 2)  # type: ignore[arg-type]
    committed = [x for (x,) in real.execute("select x from a order by rowid").fetchall()]
    # The loads before the failed one committed, none after it did.
    assert committed == {1: [], 4: [1, 2, 3], 5: [1, 2, 3, 4]}[fail_on]
    # (Loads not started when the failure is raised are cancelled: the build is abandoned.)
    assert real.execute("select current_setting('threads')").fetchone() != (1,)
