"""The five dimensions, the overall and the letter (CONTRACT 5): unrounded, and as
mcp-xray shows them (``*_display``)."""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from pipeline.core.expr import clamp, lerp, true_div, with_py_round
from pipeline.surface.rubric import SurfaceRubric
from pipeline.surface.severity import SCORE_DECIMALS

# Contract 5: "F below" the lowest band.
FAIL_LETTER = "F"
# mcp-xray's order of the dimensions (its DIMENSIONS table): the overall's sums are taken
# in this order, so that the shown overall equals its own to the last bit.
XRAY_DIMENSION_ORDER = (
    "context_efficiency",
    "surface_redundancy",
    "schema_hygiene",
    "description_quality",
    "selection_robustness",
)


def _not_below_zero(x: pl.Expr) -> pl.Expr:
    """CONTRACT 5: "each dimension 0–100, never below 0" (the top only binds under a rubric
    whose constants could push past 100, e.g. shares summing above 1)."""
    return x.clip(0.0, 100.0)


def context_efficiency_score(
    tokens_per_tool_avg: pl.Expr, tokens: pl.Expr, injector_tokens: pl.Expr, s: SurfaceRubric
) -> pl.Expr:
    """CONTRACT 5: "0.6 × lerp(tokens_per_tool_avg, 150, 600) + 0.4 × lerp(tokens, 1500,
    12000) − clamp(I / 2000) × 10"; null when there is no surface token_cost finding."""
    per_tool = lerp(tokens_per_tool_avg, s.tokens_per_tool_good, s.tokens_per_tool_bad)
    total = lerp(tokens, s.surface_tokens_good, s.surface_tokens_bad)
    shave = clamp(injector_tokens / s.injector_tokens_scale) * s.injector_points
    return _not_below_zero(s.per_tool_share * per_tool + s.surface_share * total - shave)


def surface_redundancy_score(
    consolidate_ran: pl.Expr, redundancy_severity: pl.Expr, s: SurfaceRubric
) -> pl.Expr:
    """CONTRACT 5: measured when consolidate ran: "100 − clamp(Σ severity of
    merge_candidate and duplicate / 4) × 100"."""
    score = 100.0 - clamp(redundancy_severity / s.redundancy_scale) * 100.0
    return pl.when(consolidate_ran).then(_not_below_zero(score))


def schema_hygiene_score(n_tools: pl.Expr, structural_severity: pl.Expr) -> pl.Expr:
    """CONTRACT 5: measured when n > 0: "100 − clamp(Σ severity of schema smells other than
    the four description smells / n) × 100"."""
    score = 100.0 - clamp(structural_severity / n_tools) * 100.0
    return pl.when(n_tools > 0).then(_not_below_zero(score))


def description_quality_score(
    n_tools: pl.Expr, description_severity: pl.Expr, proxy_severity: pl.Expr
) -> pl.Expr:
    """CONTRACT 5: measured when n > 0: "100 − clamp((Σ severity of the description smells +
    Σ severity of selection_error findings whose mode is confusability_proxy) / n) × 100"."""
    score = 100.0 - clamp((description_severity + proxy_severity) / n_tools) * 100.0
    return pl.when(n_tools > 0).then(_not_below_zero(score))


def selection_robustness_score(
    noise_ran: pl.Expr,
    labeled_count: pl.Expr,
    labeled_mean_pass_rate: pl.Expr,
    proxy_count: pl.Expr,
    n_tools: pl.Expr,
    fire_rate_sum: pl.Expr,
    s: SurfaceRubric,
) -> pl.Expr:
    """CONTRACT 5: measured when noise ran: "with findings of mode labeled, mean(pass_rate)
    × 100; without, 100 − clamp(number of confusability_proxy findings / max(n, 1)) × 60;
    then − clamp(Σ fire_rate of distraction findings / 2) × 40"."""
    proxy_base = 100.0 - clamp(proxy_count / pl.max_horizontal(n_tools, 1)) * s.proxy_points
    base = (
        pl.when(labeled_count > 0)
        .then(labeled_mean_pass_rate * 100.0)
        .otherwise(_not_below_zero(proxy_base))
    )
    distraction = clamp(fire_rate_sum / s.distraction_scale) * s.distraction_points
    return pl.when(noise_ran).then(_not_below_zero(base - distraction))


def overall_score(weights: Mapping[str, float]) -> tuple[pl.Expr, pl.Expr]:
    """CONTRACT 5: "overall = Σ score × weight / Σ weight over measured dimensions ... null
    when none is measured". Returns (overall, Σ weight of the measured dimensions); when
    the measured weights sum to 0 there is nothing to average, so overall is null too."""
    numerator = pl.sum_horizontal([pl.col(d).fill_null(0.0) * float(w) for d, w in weights.items()])
    denominator = pl.sum_horizontal(
        [pl.when(pl.col(d).is_not_null()).then(float(w)).otherwise(0.0) for d, w in weights.items()]
    )
    return pl.when(denominator > 0).then(numerator / denominator), denominator


def letter_grade(overall_display: pl.Expr, bands: Mapping[str, float]) -> pl.Expr:
    """CONTRACT 5: "A+ ≥ 97, A ≥ 93, ... D- ≥ 60, F below", read off ``overall_display``
    (0.0, so F, when nothing is measured, as mcp-xray shows it).

    One binning at the cutoffs, not a when/then per band: a rubric may name thousands of
    bands, and a chain that deep took minutes and gigabytes to plan. Of two letters with
    one cutoff, the first named wins."""
    if not bands:
        # F for every row (a bare literal would be one row, not a column).
        return (
            pl.when(overall_display.is_null())
            .then(pl.lit(FAIL_LETTER))
            .otherwise(pl.lit(FAIL_LETTER))
        )
    first_per_cutoff: dict[float, str] = {}
    for letter, cutoff in bands.items():
        first_per_cutoff.setdefault(float(cutoff), letter)
    cutoffs = sorted(first_per_cutoff)
    letters = [FAIL_LETTER, *(first_per_cutoff[c] for c in cutoffs)]
    # The interval's number (left-closed: a cutoff is reached at it), then its letter:
    # letters need not be unique (a band named F).
    interval = overall_display.bin_intervals(cutoffs, labels=False)
    graded = interval.replace_strict(dict(enumerate(letters)), default=None, return_dtype=pl.String)
    return graded.fill_null(pl.lit(FAIL_LETTER))


# ------------------------------------------------------------------- shown (mcp-xray's way)
# CONTRACT 5: the display values are what mcp-xray shows: Python's round wherever it
# rounds (each lerp score and each dimension step to 1 decimal, severities to 3), sums
# taken in its order (``ordered_sum``), and Python's division (``true_div``), so that
# each equals mcp-xray's to the last bit, not merely within 0.05.


def _floored(x: pl.Expr) -> pl.Expr:
    """A dimension step as mcp-xray ends it, before its rounding: never below 0, and never
    above 100 (CONTRACT 5: "each dimension 0–100"; only input outside the report's ranges,
    a pass_rate of 1.5, or a rubric whose shares sum past 1 reaches it, and mcp-xray's own
    uncapped value would then read as an A+). A null, not measured, stays null."""
    return pl.when(x < 0.0).then(0.0).when(x > 100.0).then(100.0).otherwise(x)


def ordered_sum(value: pl.Expr, where: pl.Expr, *order: str | pl.Expr) -> pl.Expr:
    """Σ value over the rows where ``where`` holds, added one by one in ``order`` (Python's
    ``sum`` over a list): a running sum's last value, since a plain sum may regroup terms."""
    terms = pl.when(where.fill_null(False)).then(value).otherwise(0.0)
    return terms.sort_by(list(order)).cum_sum().last()


def with_context_efficiency_shown(
    frame: pl.LazyFrame, injector_tokens: str, s: SurfaceRubric
) -> pl.LazyFrame:
    """``context_efficiency_display`` from the columns of ``with_shown_lerps``: ``0.6 ×
    per-tool + 0.4 × total`` rounded, then minus the instruction shave, floored, rounded
    again (mcp-xray shaves only when I > 0; a shave of 0 changes nothing)."""
    blended = s.per_tool_share * pl.col("per_tool_lerp") + s.surface_share * pl.col("total_lerp")
    shave = clamp(true_div(pl.col(injector_tokens), s.injector_tokens_scale))
    shaved = _floored(pl.col("context_efficiency_display") - shave * s.injector_points)
    frame = with_py_round(frame, SCORE_DECIMALS, context_efficiency_display=blended)
    return with_py_round(frame, SCORE_DECIMALS, context_efficiency_display=shaved)


def surface_redundancy_display(
    consolidate_ran: pl.Expr, redundancy_severity: pl.Expr, s: SurfaceRubric
) -> pl.Expr:
    penalty = clamp(true_div(redundancy_severity, s.redundancy_scale)) * 100.0
    return pl.when(consolidate_ran).then(_floored(100.0 - penalty))


def schema_hygiene_display(n_tools: pl.Expr, structural_severity: pl.Expr) -> pl.Expr:
    penalty = clamp(true_div(structural_severity, pl.max_horizontal(n_tools, 1))) * 100.0
    return pl.when(n_tools > 0).then(_floored(100.0 - penalty))


def description_quality_display(
    n_tools: pl.Expr, description_severity: pl.Expr, proxy_severity: pl.Expr
) -> pl.Expr:
    bad = description_severity + proxy_severity
    penalty = clamp(true_div(bad, pl.max_horizontal(n_tools, 1))) * 100.0
    return pl.when(n_tools > 0).then(_floored(100.0 - penalty))


def selection_robustness_display(
    noise_ran: pl.Expr,
    labeled_count: pl.Expr,
    labeled_pass_rate_sum: pl.Expr,
    proxy_count: pl.Expr,
    n_tools: pl.Expr,
    fire_rate_sum: pl.Expr,
    s: SurfaceRubric,
) -> pl.Expr:
    """As mcp-xray shows it, but in 0-100: mcp-xray does not cap the labeled mean (a
    pass_rate above 1 would show above 100), the contract does."""
    proxy_rate = clamp(true_div(proxy_count.cast(pl.Float64), pl.max_horizontal(n_tools, 1)))
    base = (
        pl.when(labeled_count > 0)
        .then(true_div(labeled_pass_rate_sum, labeled_count.cast(pl.Float64)) * 100.0)
        .otherwise(_floored(100.0 - proxy_rate * s.proxy_points))
    )
    distraction = clamp(true_div(fire_rate_sum, s.distraction_scale)) * s.distraction_points
    return pl.when(noise_ran).then(_floored(base - distraction))


def overall_display_parts(weights: Mapping[str, float]) -> dict[str, pl.Expr]:
    """CONTRACT 5's overall as mcp-xray takes it, before its rounding (``overall_display``
    = ``shown_numerator / shown_denominator`` rounded to 1 decimal): its weights are fractions of 1
    (0.30, 0.25, 0.15...: the rubric's divided by their total, the same doubles), summed in
    its dimension order over the shown dimensions; when nothing is measured it divides by 1,
    showing 0.0."""
    total = sum(float(w) for w in weights.values())
    share = {d: float(w) / total if total > 0 else float(w) for d, w in weights.items()}
    order = [d for d in XRAY_DIMENSION_ORDER if d in share]
    order += [d for d in share if d not in order]
    numerator: pl.Expr = pl.lit(0.0)
    denominator: pl.Expr = pl.lit(0.0)
    for d in order:
        shown = pl.col(f"{d}_display")
        numerator = numerator + shown.fill_null(0.0) * share[d]
        denominator = denominator + pl.when(shown.is_not_null()).then(share[d]).otherwise(0.0)
    return {
        "shown_numerator": numerator,
        "shown_denominator": pl.when(denominator > 0).then(denominator).otherwise(1.0),
    }
