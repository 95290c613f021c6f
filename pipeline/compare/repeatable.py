"""Float aggregations whose last bit does not depend on the order rows arrive in.

Float addition is not associative, and neither a join's output order nor a
(streaming, multithreaded) group_by's arrival order is fixed: a plain ``sum`` or
``mean`` can differ in the last bit between two runs over the same data, and a
p-value can flip the third decimal. Each aggregation of floats here first sorts the
group's values (a canonical order, the multiset's), then adds them in that order; a share
of booleans counts them, which is exact in any order. So ``compare``, ``history`` and the
lake's ``version_regressions`` table give the same bits on every run, with any number of
threads. The formulas are unchanged.
"""

from __future__ import annotations

import polars as pl


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
