"""Order-independent sums (``pipeline.tasks.sums``): the same bits whatever order a run's
terms arrive in, as a hash join or a streaming group_by may hand them over."""

from __future__ import annotations

import math
import struct

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.tasks.sums import repeatable_sum, with_repeatable_sums
from tests.examples import examples


def _bits(value: float | None) -> int | None:
    """A float's bit pattern: tells 0.0 from -0.0, and NaN from a number."""
    return None if value is None else struct.unpack("<q", struct.pack("<d", value))[0]


def test_repeatable_sums_add_in_ascending_order() -> None:
    # Near 1e16 floats are 2 apart, so 1e16 + 1 and -1e16 + 1 round back to +-1e16.
    frame = pl.LazyFrame(
        {
            "three": [[1e16, -1e16, 1.0], [0.5, 0.25, 0.125]],
            "four": [[1e16, -1e16, 1.0, 1.0], [0.5, 0.25, 0.125, 0.0625]],
        }
    )
    sums = with_repeatable_sums(frame, ["three", "four"]).collect()
    # in list order (1e16 + -1e16) + 1 = 1.0; ascending (-1e16 + 1) + 1e16 = -1e16 + 1e16 = 0.0
    # 0.125 + 0.25 + 0.5 = 0.875 (exact)
    assert sums["three"].to_list() == [0.0, 0.875]
    # in list order 0 + 1 + 1 = 2.0; ascending ((-1e16 + 1) + 1) + 1e16 = 0.0
    # 0.0625 + 0.125 + 0.25 + 0.5 = 0.9375 (exact)
    assert sums["four"].to_list() == [0.0, 0.9375]


float_terms = st.one_of(
    st.sampled_from([0.0, -0.0, 0.1, 0.2, 0.3, 1.0, 1e16, -1e16, math.inf, -math.inf, math.nan]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.none(),
)


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.lists(float_terms, max_size=6), min_size=1, max_size=30))
def test_repeatable_sums_equal_sorting_bit_for_bit(lists: list[list[float | None]]) -> None:
    frame = pl.LazyFrame({"terms": lists}, schema={"terms": pl.List(pl.Float64)})
    expected = frame.select(repeatable_sum(pl.col("terms"))).collect()["terms"]
    actual = with_repeatable_sums(frame, ["terms"]).collect()["terms"]
    for got, want in zip(actual.to_list(), expected.to_list(), strict=True):
        assert _same_sum(got, want), (got, want)


def _same_sum(got: float | None, want: float | None) -> bool:
    if want is not None and math.isnan(want):
        return got is not None and math.isnan(got)
    if want == 0.0:
        # The sign of a zero sum (of an empty list, or of -0.0 terms) is not a property of
        # the list: Polars' list.sum starts from -0.0 or 0.0 depending on whether the column
        # holds nulls, and sorting may change that.
        return got == 0.0
    return _bits(got) == _bits(want)


def test_repeatable_sum_adds_a_list_in_ascending_order() -> None:
    frame = pl.DataFrame({"terms": [[1.0, 1e16, -1e16], [None, 0.5, 0.25], []]})
    # ascending: (-1e16 + 1) + 1e16 = 0.0 (1 is lost next to 1e16); nulls are skipped;
    # an empty list sums to zero.
    assert frame.select(repeatable_sum(pl.col("terms")))["terms"].to_list() == [0.0, 0.75, 0.0]


@settings(max_examples=examples(200), deadline=None)
@given(st.data(), st.lists(st.lists(float_terms, max_size=6), min_size=1, max_size=20))
def test_repeatable_sums_do_not_depend_on_the_order_of_terms(
    data: st.DataObject, lists: list[list[float | None]]
) -> None:
    shuffled = [data.draw(st.permutations(terms)) for terms in lists]
    schema = {"terms": pl.List(pl.Float64)}
    sums = [
        with_repeatable_sums(pl.LazyFrame({"terms": rows}, schema=schema), ["terms"]).collect()
        for rows in (lists, shuffled)
    ]
    for got, want in zip(sums[1]["terms"].to_list(), sums[0]["terms"].to_list(), strict=True):
        assert _same_sum(got, want), (got, want)
