"""Order-independent sums, means and shares (``pipeline.core.repeatable``): the same bits
whatever order the terms arrive in, as a hash join or a streaming group_by may hand them over."""

from __future__ import annotations

import math
import struct
from typing import Any

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.core import repeatable
from pipeline.core.repeatable import list_sum, with_list_sums
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
    sums = with_list_sums(frame, ["three", "four"]).collect()
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
    expected = frame.select(list_sum(pl.col("terms"))).collect()["terms"]
    actual = with_list_sums(frame, ["terms"]).collect()["terms"]
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
    assert frame.select(list_sum(pl.col("terms")))["terms"].to_list() == [0.0, 0.75, 0.0]


@settings(max_examples=examples(200), deadline=None)
@given(st.data(), st.lists(st.lists(float_terms, max_size=6), min_size=1, max_size=20))
def test_repeatable_sums_do_not_depend_on_the_order_of_terms(
    data: st.DataObject, lists: list[list[float | None]]
) -> None:
    shuffled = [data.draw(st.permutations(terms)) for terms in lists]
    schema = {"terms": pl.List(pl.Float64)}
    sums = [
        with_list_sums(pl.LazyFrame({"terms": rows}, schema=schema), ["terms"]).collect()
        for rows in (lists, shuffled)
    ]
    for got, want in zip(sums[1]["terms"].to_list(), sums[0]["terms"].to_list(), strict=True):
        assert _same_sum(got, want), (got, want)


def test_share_counts_trues_over_the_values_given() -> None:
    frame = pl.DataFrame(
        {
            "g": [1, 1, 1, 2, 2, 3, 4, 4],
            "passed": [True, False, True, None, True, None, False, False],
        }
    )
    shares = frame.group_by("g").agg(repeatable.share("passed")).sort("g")["passed"].to_list()
    # 2 of 3; 1 of 1 (the null skipped); no value at all: null; 0 of 2.
    assert shares == [2 / 3, 1.0, None, 0.0]
    assert _bits(shares[0]) == _bits(0.6666666666666666)


@st.composite
def grouped_rows(
    draw: st.DrawFn, values: st.SearchStrategy[Any]
) -> tuple[list[tuple[int, Any]], list[tuple[int, Any]]]:
    """Rows (group, value), and the same rows in another order."""
    rows = draw(st.lists(st.tuples(st.integers(min_value=0, max_value=8), values), max_size=60))
    return rows, draw(st.permutations(rows))


def _grouped(rows: list[tuple[int, Any]], dtype: pl.DataType) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={"g": pl.Int64, "x": dtype}, orient="row")


@settings(max_examples=examples(200), deadline=None)
@given(grouped_rows(st.one_of(st.booleans(), st.none())))
def test_share_is_the_sorted_mean_bit_for_bit_in_any_row_order(
    rows: tuple[list[tuple[int, bool | None]], list[tuple[int, bool | None]]],
) -> None:
    mean = _grouped(rows[0], pl.Boolean()).group_by("g").agg(repeatable.mean("x")).sort("g")
    share = _grouped(rows[1], pl.Boolean()).group_by("g").agg(repeatable.share("x")).sort("g")
    assert share["g"].to_list() == mean["g"].to_list()
    assert [_bits(v) for v in share["x"]] == [_bits(v) for v in mean["x"]]


def test_list_means_by_hand() -> None:
    frame = pl.LazyFrame(
        {"x": [[0.5, 0.25, None], [1e16, 1.0, -1e16], [None], [0.1, 0.2, 0.3, 0.4]]},
        schema={"x": pl.List(pl.Float64)},
    )
    counted = frame.with_columns(n=pl.col("x").list.drop_nulls().list.len())
    means = repeatable.with_list_means(counted, {"x": "n"}).collect()
    assert means.columns == ["x"]
    # (0.25 + 0.5) / 2; ascending (-1e16 + 1) + 1e16 = 0.0 (the 1 is lost), over 3; no value:
    # null; ascending 0.1 + 0.2 = 0.30000000000000004, + 0.3 = 0.6000000000000001, + 0.4 = 1.0,
    # over 4 (descending, 0.4 + 0.3 + 0.2 + 0.1 = 0.9999999999999999).
    assert means["x"].to_list() == [0.375, 0.0, None, 0.25]


@settings(max_examples=examples(200), deadline=None)
@given(grouped_rows(float_terms))
def test_list_means_equal_the_sorted_mean_in_any_row_order(
    rows: tuple[list[tuple[int, float | None]], list[tuple[int, float | None]]],
) -> None:
    want = _grouped(rows[0], pl.Float64()).group_by("g").agg(repeatable.mean("x")).sort("g")
    got = (
        _grouped(rows[1], pl.Float64())
        .lazy()
        .group_by("g")
        .agg(pl.col("x").implode(), n=pl.col("x").count())
        .pipe(repeatable.with_list_means, {"x": "n"})
        .sort("g")
        .collect()
    )
    assert got["g"].to_list() == want["g"].to_list()
    for value, expected in zip(got["x"].to_list(), want["x"].to_list(), strict=True):
        assert _same_sum(value, expected), (value, expected)
