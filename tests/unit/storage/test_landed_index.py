"""The index of landed run_ids: it never misses one that landed."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.storage.landed_index import LandedIndex
from tests.examples import examples


def ids(*values: str) -> pl.Series:
    return pl.Series("run_id", list(values), dtype=pl.String)


def test_finds_what_landed_and_takes_in_more() -> None:
    index = LandedIndex.of(ids("r1", "r2", "r3"))
    assert len(index) == 3
    assert index.may_hold(ids("r2", "r9", "r3", "r0")).to_list() == ["r2", "r3"]
    index.add(ids("r9", "r0"))
    assert len(index) == 5
    assert index.may_hold(ids("r2", "r9", "r3", "r0", "r4")).to_list() == ["r2", "r9", "r3", "r0"]


def test_empty_sides() -> None:
    empty = LandedIndex.of(ids())
    assert len(empty) == 0
    assert empty.may_hold(ids("r1")).to_list() == []
    assert LandedIndex.of(ids("r1")).may_hold(ids()).to_list() == []
    empty.add(ids("r1"))
    assert empty.may_hold(ids("r1", "r2")).to_list() == ["r1"]


run_ids = st.lists(st.text(min_size=1, max_size=12), max_size=40)


@settings(max_examples=examples(100), deadline=None)
@given(landed=run_ids, later=run_ids, asked=run_ids)
def test_never_misses_a_landed_run_id(
    landed: list[str], later: list[str], asked: list[str]
) -> None:
    index = LandedIndex.of(ids(*landed))
    index.add(ids(*later))
    held = set(index.may_hold(ids(*asked)).to_list())
    # No false negatives by construction; a false positive needs a 64-bit collision.
    assert held == set(asked) & (set(landed) | set(later))
