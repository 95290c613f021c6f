"""Finding severities (CONTRACT 3's severity table), stored and as mcp-xray shows them.

Seed 002: "the grader assigns every finding a severity". The report's own severity is
kept as ``reported_severity`` and never used for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from pipeline.core.expr import clamp, lerp01, true_div, with_py_round
from pipeline.surface.fields import TOKEN_COST
from pipeline.surface.rubric import SurfaceRubric

if TYPE_CHECKING:
    from pipeline.rubric import Rubric

# Where mcp-xray rounds (CONTRACT 5): severities to 3 decimals, scores to 1.
SEVERITY_DECIMALS = 3
SCORE_DECIMALS = 1


def _div(x: pl.Expr, y: float, shown: bool) -> pl.Expr:
    """Shown values divide as Python does (one rounding); stored ones as Polars does."""
    return true_div(x, y) if shown else x / y


def with_shown_lerps(
    frame: pl.LazyFrame, tokens_per_tool_avg: str, tokens: str, s: SurfaceRubric
) -> pl.LazyFrame:
    """mcp-xray's two lerp scores of context efficiency, as columns ``per_tool_lerp`` and
    ``total_lerp``: 100 at or below good, 0 at or above bad, in between ``100 × (1 − (value
    − good) / (bad − good))`` rounded to one decimal."""
    anchors = {
        "per_tool_lerp": (tokens_per_tool_avg, s.tokens_per_tool_good, s.tokens_per_tool_bad),
        "total_lerp": (tokens, s.surface_tokens_good, s.surface_tokens_bad),
    }
    between = {
        name: 100.0 * (1.0 - true_div(pl.col(value) - good, pl.lit(bad) - good))
        for name, (value, good, bad) in anchors.items()
    }
    ends = {
        name: pl.when(pl.col(value) <= good)
        .then(pl.lit(100.0))
        .when(pl.col(value) >= bad)
        .then(pl.lit(0.0))
        .otherwise(pl.col(name))
        for name, (value, good, bad) in anchors.items()
    }
    return with_py_round(frame, SCORE_DECIMALS, **between).with_columns(**ends)


def token_cost_surface_severity(s: SurfaceRubric, shown: bool = False) -> pl.Expr:
    """CONTRACT 3: token_cost, scope surface: "1 − lerp01(tokens_per_tool_avg, 150, 600)";
    shown, from the column ``per_tool_lerp`` (mcp-xray's lerp score, see ``with_shown_lerps``)."""
    good, bad = s.tokens_per_tool_good, s.tokens_per_tool_bad
    if shown:
        return 1.0 - true_div(pl.col("per_tool_lerp"), 100.0)
    return 1.0 - lerp01(pl.col("tokens_per_tool_avg"), good, bad)


def token_cost_share_severity(s: SurfaceRubric) -> pl.Expr:
    """CONTRACT 3: token_cost, any other scope: "clamp(share × 3), share defaulting to 0"."""
    return clamp(pl.col("share").fill_null(0.0) * s.token_share_multiplier)


def schema_smell_severity(s: SurfaceRubric) -> pl.Expr:
    """CONTRACT 3: "by smell: missing_description 0.9, tiny_description 0.7, ... any other
    smell 0.4" (a smell-less schema_smell is "any other smell", as in mcp-xray)."""
    table = dict(s.smell_severity)
    other = float(s.other_smell_severity)
    if not table:
        return pl.lit(other)
    return (
        pl.col("smell")
        .replace_strict(table, default=other, return_dtype=pl.Float64)
        .fill_null(other)
    )


def merge_candidate_severity(s: SurfaceRubric, shown: bool = False) -> pl.Expr:
    """CONTRACT 3: "clamp((0.4 + clamp(tokens_saved_est/800) × 0.4) × 0.7 if wide_union
    × 0.6 if mixes_read_write)" (tokens_saved_est defaulting to 0, flags to false)."""
    saved = clamp(_div(pl.col("tokens_saved_est").fill_null(0.0), s.merge_saved_scale, shown))
    base = s.merge_base + saved * s.merge_saved_points
    wide = (
        pl.when(pl.col("wide_union").fill_null(False))
        .then(pl.lit(s.merge_wide_union_factor))
        .otherwise(pl.lit(1.0))
    )
    mixes = (
        pl.when(pl.col("mixes_read_write").fill_null(False))
        .then(pl.lit(s.merge_mixes_read_write_factor))
        .otherwise(pl.lit(1.0))
    )
    return clamp(base * wide * mixes)


def selection_error_severity() -> pl.Expr:
    """CONTRACT 3: selection_error "clamp(1 − pass_rate)" (pass_rate defaulting to 1, as
    mcp-xray reads it)."""
    return clamp(1.0 - pl.col("pass_rate").fill_null(1.0))


def distraction_severity() -> pl.Expr:
    """CONTRACT 3: distraction "clamp(fire_rate)" (fire_rate defaulting to 0)."""
    return clamp(pl.col("fire_rate").fill_null(0.0))


def hidden_injector_severity(s: SurfaceRubric, shown: bool = False) -> pl.Expr:
    """CONTRACT 3: hidden_injector "clamp(tokens_est / 1000)"."""
    return clamp(_div(pl.col("tokens_est").fill_null(0.0), s.hidden_injector_scale, shown))


def jit_candidate_severity(s: SurfaceRubric) -> pl.Expr:
    """CONTRACT 3: jit_candidate "0.5 if recommend_jit else 0.1"."""
    return (
        pl.when(pl.col("recommend_jit").fill_null(False))
        .then(pl.lit(s.jit_recommended_severity))
        .otherwise(pl.lit(s.jit_not_recommended_severity))
    )


def finding_severity(rubric: Rubric, shown: bool = False) -> pl.Expr:
    """CONTRACT 3's severity table as one chain over ``kind`` (seed 002: "the grader assigns
    every finding a severity"); "anything else (result_size, a kind added later)" is 0.

    ``shown``: the severity mcp-xray shows before its rounding to 3 decimals (see
    ``severity_shown``), from its lerp score and Python's division.
    """
    s = rubric.surface
    kind = pl.col("kind")
    chain = (
        pl.when((kind == TOKEN_COST) & (pl.col("scope") == "surface"))
        .then(token_cost_surface_severity(s, shown))
        .when(kind == TOKEN_COST)
        .then(token_cost_share_severity(s))
        .when(kind == "schema_smell")
        .then(schema_smell_severity(s))
        .when(kind == "merge_candidate")
        .then(merge_candidate_severity(s, shown))
        .when(kind == "duplicate")
        .then(pl.lit(s.duplicate_severity))
        .when(kind == "selection_error")
        .then(selection_error_severity())
        .when(kind == "distraction")
        .then(distraction_severity())
        .when(kind == "hidden_injector")
        .then(hidden_injector_severity(s, shown))
        .when(kind == "resource_candidate")
        .then(pl.lit(s.resource_candidate_severity))
        .when(kind == "jit_candidate")
        .then(jit_candidate_severity(s))
        .otherwise(pl.lit(0.0))
    )
    # "severity (0–1)": a rubric constant above 1 must not make a severity above 1.
    return clamp(chain.cast(pl.Float64)).alias("severity")


def severity_shown(findings: pl.LazyFrame, rubric: Rubric) -> pl.LazyFrame:
    """``severity_display``: the severity mcp-xray shows, rounded to 3 decimals. Applied to
    every kind; a no-op on the fixed ones (0.9, 0.45, ... are 3-decimal already)."""
    lerps = with_shown_lerps(findings, "tokens_per_tool_avg", "tokens", rubric.surface)
    severity = finding_severity(rubric, shown=True).alias("severity_display")
    return with_py_round(lerps, SEVERITY_DECIMALS, severity_display=severity).drop(
        "per_tool_lerp", "total_lerp"
    )
