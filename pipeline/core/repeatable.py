"""Float aggregations whose last bit does not depend on the order rows arrive in.

Float addition is not associative, and neither a join's output order nor a (streaming,
multithreaded) group_by's arrival order is fixed: a plain ``sum`` or ``mean`` can differ in
the last bit between two runs over the same data, a rescored total can move, and a p-value
can flip the third decimal. Each aggregation of floats here adds its terms in ascending
order (a canonical order, the multiset's); a share of booleans counts them, which is exact
in any order. So scores, ``compare``, ``history`` and the lake's ``version_regressions``
table give the same bits on every run, with any number of threads. The formulas are
unchanged.

Two forms: aggregations of a group's values (``total``, ``mean``, ``std``, ``share``, for a
``group_by``'s ``agg``), and sums of list columns (``list_sum``; ``with_list_sums`` for whole
columns of short lists, such as a run's components, cheaply).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

# A compare-exchange network that sorts four values (Knuth, TAOCP vol. 3, 5.3.4).
_SORT_FOUR = ((0, 1), (2, 3), (0, 2), (1, 3), (1, 2))
_NETWORK_WIDTH = 4


def list_sum(values: pl.Expr) -> pl.Expr:
    """Σ of a list's values (nulls skipped), added in ascending order. ``with_list_sums``
    computes the same floats for whole columns, cheaply."""
    return values.list.sort().list.sum()


def _sorted(column: str | pl.Expr) -> pl.Expr:
    expr = pl.col(column) if isinstance(column, str) else column
    # A plain ``sort().sum()`` is not enough: the optimizer drops a sort before an
    # order-blind aggregation. A sorted list is summed in its order.
    return expr.cast(pl.Float64).implode().list.sort()


def total(column: str | pl.Expr) -> pl.Expr:
    """Σ of the group's values (nulls skipped), added in ascending order."""
    return _sorted(column).list.sum()


def mean(column: str | pl.Expr) -> pl.Expr:
    """The group's mean (nulls skipped), its sum taken in ascending order."""
    return _sorted(column).list.mean()


def std(column: str | pl.Expr, ddof: int = 1) -> pl.Expr:
    """The group's standard deviation (nulls skipped), over its values in ascending order."""
    return _sorted(column).list.std(ddof=ddof)


def share(column: str | pl.Expr) -> pl.Expr:
    """The share of true values among the group's booleans (nulls skipped; null when there
    are none): ``mean`` of them as 0.0 and 1.0, bit for bit, without sorting. A count of
    trues is an integer whatever order they arrive in, and so is the count it is divided by,
    so the one division gives the same float as the sorted sum over the length."""
    expr = pl.col(column) if isinstance(column, str) else column
    counted = expr.count()
    return pl.when(counted > 0).then(expr.sum().cast(pl.Float64) / counted.cast(pl.Float64))


def with_list_sums(frame: pl.LazyFrame, columns: Sequence[str]) -> pl.LazyFrame:
    """Each list column of ``columns`` replaced by its ``list_sum``, bit for bit.

    Sorting 200k short lists one by one costs more than everything else in the totals,
    so only the lists that need it are sorted:

    - two terms or fewer need no order (a + b == b + a);
    - nor do terms that are all zeros (their sum is a zero in any order);
    - three or four terms, without nulls or NaN, are put in order by a sorting network
      of min/max over their elements, one column per element (a three-term list gets
      +inf as its fourth). Each min or max returns one of its inputs, so the order is the
      sort's and the sum the same float; min and max may both return the same one of
      0.0 and -0.0, but swapping the signs of zero terms can only change a zero sum,
      and one with a nonzero term is +0.0 either way.

    The rest (longer lists, or with nulls or NaN, where min/max and sorting disagree)
    are sorted. Only the sign of a zero sum may differ, and only with -0.0 terms or an
    empty list: ``list.sum`` itself starts from -0.0 or 0.0 depending on whether the
    column holds nulls anywhere, so that sign was never a property of the run.
    """
    width = _NETWORK_WIDTH
    slots = {column: [f"_{column}_{index}" for index in range(width)] for column in columns}
    staged: list[pl.Expr] = []
    for column, names in slots.items():
        values, length = pl.col(column), pl.col(column).list.len()
        items = [values.list.get(index, null_on_oob=True) for index in range(width)]
        pad = pl.when(length == width - 1).then(pl.lit(float("inf"))).otherwise(items[-1])
        staged += [item.alias(name) for item, name in zip([*items[:-1], pad], names, strict=True)]
        in_any_order = (length <= 2) | ((values.list.min() == 0.0) & (values.list.max() == 0.0))
        networked = (
            length.is_between(width - 1, width)
            & pl.all_horizontal(item.is_not_null() for item in items[:-1])
            & ((length == width - 1) | items[-1].is_not_null())
            & ~values.list.sum().is_nan()
        )
        staged += [
            in_any_order.fill_null(False).alias(f"_{column}_any_order"),
            networked.alias(f"_{column}_networked"),
        ]
    frame = frame.with_columns(staged)
    for low, high in _SORT_FOUR:
        frame = frame.with_columns(
            exchanged
            for names in slots.values()
            for exchanged in (
                pl.min_horizontal(names[low], names[high]).alias(names[low]),
                pl.max_horizontal(names[low], names[high]).alias(names[high]),
            )
        )
    sums: list[pl.Expr] = []
    flags: list[str] = []
    for column, names in slots.items():
        values, length = pl.col(column), pl.col(column).list.len()
        any_order, networked = pl.col(f"_{column}_any_order"), pl.col(f"_{column}_networked")
        first, second, third, fourth = (pl.col(name) for name in names)
        # x + -0.0 == x for every float x: a three-term list adds nothing as its fourth.
        last = pl.when(length == width).then(fourth).otherwise(pl.lit(-0.0))
        sums.append(
            pl.when(any_order)
            .then(values.list.sum())
            .when(networked)
            .then(((first + second) + third) + last)
            .otherwise(list_sum(pl.when(~any_order & ~networked).then(values)))
            .alias(column)
        )
        flags += [f"_{column}_any_order", f"_{column}_networked"]
    temporary = [name for names in slots.values() for name in names]
    return frame.with_columns(sums).drop(*temporary, *flags)


def with_list_means(frame: pl.LazyFrame, counts: Mapping[str, str]) -> pl.LazyFrame:
    """Each list column of ``counts`` replaced by its mean (nulls skipped; null when there is
    no value): its ``with_list_sums`` sum over ``counts[column]``, the number of its values
    that are not null (a column the caller counted in the same ``agg``, dropped here). The
    same floats as ``mean`` over the values, but for the sign of a zero mean (see
    ``with_list_sums``), and cheaper: at 1M runs, the problems' mean scores over their
    trials take 0.30-0.32 s instead of 0.42-0.48 s."""
    return (
        frame.pipe(with_list_sums, list(counts))
        .with_columns(
            pl.when(pl.col(count) > 0).then(pl.col(column) / pl.col(count)).alias(column)
            for column, count in counts.items()
        )
        .drop(*counts.values())
    )
