"""Cutting tables into loads (pipeline/warehouse/loads.py); what cut loads store is in
tests/e2e/test_warehouse.py."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.warehouse.file import WarehouseError
from pipeline.warehouse.loads import Load, plan
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
