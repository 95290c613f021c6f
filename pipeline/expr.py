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
