"""Integer keys for runs and (run, component) (``pipeline.tasks.keys``): they must join and
sort exactly as the names they stand for."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.rubric import parse_rubric
from pipeline.tasks.keys import (
    COMPONENT_CODE,
    component_codes,
    row_key,
    rubric_weights_frame,
    run_key,
    with_component_names,
)
from tests.examples import examples

DEFAULT = parse_rubric({})


def test_run_keys_are_dense_ranks_of_run_id() -> None:
    frame = pl.DataFrame({"run_id": ["b", "a", "b", "c"]})
    assert frame.select(run_key(pl.col("run_id")))["run_id"].to_list() == [2, 1, 2, 3]


def test_a_row_key_packs_the_run_above_the_component() -> None:
    frame = pl.DataFrame(
        {"run": [1, 2, 0], "code": [2, 0, 7]}, schema={"run": pl.UInt32, "code": pl.UInt32}
    )
    keys = frame.select(row_key(pl.col("run"), pl.col("code")).alias("key"))["key"].to_list()
    # 1 * 2**32 + 2, 2 * 2**32 + 0, 0 + 7
    assert keys == [4_294_967_298, 8_589_934_592, 7]


@settings(max_examples=examples(100), deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1)), min_size=1, max_size=20
    )
)
def test_row_keys_order_like_their_pairs(pairs: list[tuple[int, int]]) -> None:
    frame = pl.DataFrame(pairs, schema={"run": pl.UInt32, "code": pl.UInt32}, orient="row")
    keyed = frame.with_columns(row_key(pl.col("run"), pl.col("code")).alias("key"))
    assert keyed.sort("key").select("run", "code").rows() == sorted(pairs)
    assert keyed["key"].n_unique() == len(set(pairs))


def test_component_codes_number_every_name_once_in_name_order() -> None:
    components = pl.LazyFrame({"component": ["zzz", "audit", "aaa", "zzz"]})
    codes = component_codes(components, DEFAULT).collect()
    names = codes["component"].to_list()
    rubric = set(rubric_weights_frame(DEFAULT).collect()["component"])
    assert names == sorted(rubric | {"zzz", "aaa"})
    assert codes[COMPONENT_CODE].to_list() == list(range(len(names)))


def test_names_come_back_in_frame_order() -> None:
    codes = pl.LazyFrame(
        {"component": ["a", "b", "c"], COMPONENT_CODE: [0, 1, 2]},
        schema={"component": pl.String, COMPONENT_CODE: pl.UInt32},
    )
    frame = pl.LazyFrame({COMPONENT_CODE: [2, 0, 2, 1]}, schema={COMPONENT_CODE: pl.UInt32})
    named = with_component_names(frame, codes).collect()
    assert named["component"].to_list() == ["c", "a", "c", "b"]
