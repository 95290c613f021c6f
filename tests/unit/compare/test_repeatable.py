"""The order-independent aggregations of pipeline/compare/repeatable.py."""

from __future__ import annotations

import struct

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.compare import repeatable
from tests.examples import examples


def _bits(value: float | None) -> int | None:
    return None if value is None else struct.unpack("<q", struct.pack("<d", value))[0]


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


@settings(max_examples=examples(200), deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(min_value=0, max_value=6), st.one_of(st.booleans(), st.none())),
        max_size=60,
    ),
    st.randoms(use_true_random=False),
)
def test_share_is_the_sorted_mean_bit_for_bit_in_any_row_order(
    rows: list[tuple[int, bool | None]], random: object
) -> None:
    shuffled = list(rows)
    random.shuffle(shuffled)  # type: ignore[attr-defined]
    schema = {"g": pl.Int64, "passed": pl.Boolean}
    mean = (
        pl.DataFrame(rows, schema=schema, orient="row")
        .group_by("g")
        .agg(repeatable.mean("passed"))
        .sort("g")
    )
    share = (
        pl.DataFrame(shuffled, schema=schema, orient="row")
        .group_by("g")
        .agg(repeatable.share("passed"))
        .sort("g")
    )
    assert share["g"].to_list() == mean["g"].to_list()
    assert [_bits(v) for v in share["passed"]] == [_bits(v) for v in mean["passed"]]
