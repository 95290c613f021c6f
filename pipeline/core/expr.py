"""Reusable Polars expressions for the seeds' small formulas.

Both seeds speak in ``clamp`` and ``lerp``; every stage builds its columns
from these so a formula reads like the sentence it implements.
"""

from __future__ import annotations

import polars as pl

IntoExpr = pl.Expr | float | int


def _expr(value: IntoExpr) -> pl.Expr:
    return value if isinstance(value, pl.Expr) else pl.lit(float(value))


def clamp(x: IntoExpr, lo: float = 0.0, hi: float = 1.0) -> pl.Expr:
    """CONTRACT 3: "clamp(x) is to [0, 1]"."""
    return _expr(x).clip(lo, hi)


def lerp(value: IntoExpr, good: IntoExpr, bad: IntoExpr) -> pl.Expr:
    """Seed 002: "lerp(value, good, bad) maps <=good -> 100, >=bad -> 0, linear between"."""
    v, g, b = _expr(value), _expr(good), _expr(bad)
    return (
        pl.when(v <= g)
        .then(pl.lit(100.0))
        .when(v >= b)
        .then(pl.lit(0.0))
        .otherwise(100.0 * (1.0 - (v - g) / (b - g)))
    )


def lerp01(value: IntoExpr, good: IntoExpr, bad: IntoExpr) -> pl.Expr:
    """CONTRACT 3: "lerp01 = lerp / 100"."""
    return lerp(value, good, bad) / 100.0


def true_div(x: IntoExpr, y: IntoExpr) -> pl.Expr:
    """``x / y`` as one correctly rounded IEEE division, as Python's ``/`` computes it.

    Polars divides a column by a scalar as a multiplication by the scalar's reciprocal
    (``3.0 / 10.0`` gives 0.30000000000000004 there), which is one rounding too many for
    values that must equal mcp-xray's to the last bit. Adding ``x * 0.0`` makes the divisor
    a column of the same value, and column / column is a true division. For x = ±inf (a sum
    past the largest double) or NaN that product is NaN, which would make inf / 2 NaN where
    Python gives inf; taken as 0 there, it leaves the divisor ``y`` for every x.
    """
    v, d = _expr(x), _expr(y)
    return v / ((v * 0.0).fill_nan(0.0) + d)


# Veltkamp's splitter for doubles (2**27 + 1): splits a double into two halves whose
# products are exact, so a product's rounding error can be recovered without FMA.
_SPLITTER = 134217729.0
# From 2**53 on every double is a whole number: nothing left to round.
_WHOLE = 2.0**53


def _split_constant(x: float) -> tuple[float, float]:
    c = x * _SPLITTER
    high = c - (c - x)
    return high, x - high


def with_py_round(frame: pl.LazyFrame, decimals: int, **columns: pl.Expr) -> pl.LazyFrame:
    """``frame`` with ``columns`` added, each rounded as Python's ``round(x, decimals)``
    rounds a double: half to even on the binary value, exactly.

    Polars' ``round`` rounds ``x * 10**decimals``, whose own rounding error can land on a
    half: ``round(4.35, 1)`` is 4.3 in Python (4.35 is 4.34999... in binary) but 4.4 in
    Polars. Here the product's error ``e`` is recovered exactly (Dekker's two-product,
    Veltkamp's split), so ``p + e`` is the exact scaled value. Its distance to the half above
    ``k = floor(p)`` is ``((p - k) - 0.5) + e``: ``p - k`` is exact, ``- 0.5`` is exact
    whenever the result is small enough to matter (Sterbenz), and a sum of two doubles is
    zero only when it is exactly zero, so the sign says up, down or a tie (then to even). The
    integer is divided by ``10**decimals`` once, correctly rounded: the nearest double to the
    decimal, which is what Python's round returns. Where ``|x| * 10**decimals >= 2**53`` the
    double has no digit below the asked one that could change, and it is returned as it is.

    Each step is its own column (dropped at the end): the algorithm reads its values many
    times, and as one expression its plan would be large, and geometrically larger for a
    rounding of a rounding.
    """
    scale = 10.0**decimals
    s_high, s_low = _split_constant(scale)
    names = list(columns)

    def step(name: str, part: str) -> str:
        return f"__py_round_{part}__{name}"

    def col(name: str, part: str) -> pl.Expr:
        return pl.col(step(name, part))

    stages: list[dict[str, pl.Expr]] = [
        {step(n, "m"): pl.col(n).abs() for n in names},
        {step(n, "p"): col(n, "m") * scale for n in names}
        | {step(n, "c"): col(n, "m") * _SPLITTER for n in names},
        {step(n, "hi"): col(n, "c") - (col(n, "c") - col(n, "m")) for n in names}
        | {step(n, "k"): col(n, "p").floor() for n in names},
        {step(n, "lo"): col(n, "m") - col(n, "hi") for n in names},
        {
            step(n, "e"): (
                ((col(n, "hi") * s_high - col(n, "p")) + col(n, "hi") * s_low)
                + col(n, "lo") * s_high
            )
            + col(n, "lo") * s_low
            for n in names
        },
        {step(n, "d"): ((col(n, "p") - col(n, "k")) - 0.5) + col(n, "e") for n in names},
        {step(n, "r"): true_div(_half_even(col(n, "k"), col(n, "d")), scale) for n in names},
        {
            n: pl.when(~pl.col(n).is_finite() | (col(n, "p") >= _WHOLE))
            .then(pl.col(n))
            .when(pl.col(n) < 0)
            .then(-col(n, "r"))
            .otherwise(col(n, "r"))
            for n in names
        },
    ]
    staged = frame.with_columns(**columns)
    for stage in stages:
        staged = staged.with_columns(**stage)
    return staged.drop([name for stage in stages[:-1] for name in stage])


def _half_even(low: pl.Expr, distance: pl.Expr) -> pl.Expr:
    """``low`` or ``low + 1`` by the sign of the distance to the half; a tie goes to even."""
    up = (distance > 0.0) | ((distance == 0.0) & ((low % 2.0) == 1.0))
    return pl.when(up).then(low + 1.0).otherwise(low)
