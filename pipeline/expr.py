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
    a column of the same value (exact for finite x), and column / column is a true division.
    """
    v, d = _expr(x), _expr(y)
    return v / (v * 0.0 + d)


# Veltkamp's splitter for doubles (2**27 + 1): splits a double into two halves whose
# products are exact, so a product's rounding error can be recovered without FMA.
_SPLITTER = 134217729.0


def _split(x: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    c = x * _SPLITTER
    high = c - (c - x)
    return high, x - high


def py_round(x: IntoExpr, decimals: int) -> pl.Expr:
    """Python's ``round(x, decimals)`` on doubles, exactly: half to even on the binary value.

    Polars' ``round`` rounds ``x * 10**decimals``, whose own rounding error can land on a
    half: ``round(4.35, 1)`` is 4.3 in Python (4.35 is 4.34999... in binary) but 4.4 in
    Polars. Here the product's error ``e`` is recovered exactly (Dekker's two-product), so
    ``p + e`` is the exact scaled value. Its distance to the half above ``k = floor(p)`` is
    ``((p - k) - 0.5) + e``: ``p - k`` is exact, ``- 0.5`` is exact whenever the result is
    small enough to matter (Sterbenz), and a sum of two doubles is zero only when it is
    exactly zero, so the sign says up, down or a tie (then to even). The integer is divided
    by ``10**decimals`` once, correctly rounded: the nearest double to the decimal, which is
    what Python's round returns. Where ``|x| * 10**decimals >= 2**53`` the double has no
    digit below the asked one that could change, and it is returned as it is.

    ``x`` is read several times over: give it a column, not a deep expression (a rounding
    of a rounding would repeat the inner one's plan in every place it is read).
    """
    v = _expr(x)
    scale = 10.0**decimals
    magnitude = v.abs()
    product = magnitude * scale
    m_high, m_low = _split(magnitude)
    s_high, s_low = _split(pl.lit(scale))
    error = (((m_high * s_high - product) + m_high * s_low) + m_low * s_high) + m_low * s_low
    low = product.floor()
    distance = ((product - low) - 0.5) + error
    odd = (low % 2.0) == 1.0
    up = (distance > 0.0) | ((distance == 0.0) & odd)
    rounded = true_div(pl.when(up).then(low + 1.0).otherwise(low), scale)
    whole = ~v.is_finite() | (product >= 2.0**53)
    return pl.when(whole).then(v).when(v < 0).then(-rounded).otherwise(rounded)
