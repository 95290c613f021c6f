"""Surface grades: every landed report regraded from its findings (CONTRACT 5).

Seed 002: "Probes emit measurements (numbers); the grader assigns every finding a
severity, rolls findings into five weighted dimensions, and produces a 0–100 score and
letter grade." The report's own grade is kept as ``reported_*`` and compared with ours,
never used for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl

from pipeline.core.expr import true_div, with_py_round
from pipeline.surface.dimensions import (
    context_efficiency_score,
    description_quality_display,
    description_quality_score,
    letter_grade,
    ordered_sum,
    overall_display_parts,
    overall_score,
    schema_hygiene_display,
    schema_hygiene_score,
    selection_robustness_display,
    selection_robustness_score,
    surface_redundancy_display,
    surface_redundancy_score,
    with_context_efficiency_shown,
)
from pipeline.surface.fields import TOKEN_COST
from pipeline.surface.rubric import SurfaceRubric
from pipeline.surface.severity import (
    SCORE_DECIMALS,
    finding_severity,
    severity_shown,
    with_shown_lerps,
)
from schemas import polars_schema
from schemas.surface import DIMENSIONS, SurfaceFindingScore, SurfacePhaseScore, SurfaceScore

if TYPE_CHECKING:
    from pipeline.rubric import Rubric

# Probe names of CONTRACT 5 that decide whether a dimension is measured.
CONSOLIDATE_PROBE = "consolidate"
NOISE_PROBE = "noise"
# A float-noise allowance on the agreement tolerance (|shown - reported| <= 0.1).
AGREEMENT_EPSILON = 1e-9
# CONTRACT 5: an unphased server's by_phase row is "named all".
ALL_PHASES = "all"
# The unique keys the score tables are sorted by: a report, and a finding of it (a phase
# row is keyed by the token_cost finding it comes from).
RUN_KEY = ("run_id",)
FINDING_KEY = ("run_id", "finding_index")


@dataclass(frozen=True)
class SurfaceScoring:
    runs: pl.LazyFrame  # surface_scores
    findings: pl.LazyFrame  # surface_finding_scores
    phases: pl.LazyFrame  # surface_phase_scores


def _run_stats(findings: pl.LazyFrame, desc_smells: Sequence[str]) -> pl.LazyFrame:
    """Per run, the sums and counts the dimensions are made of."""
    kind = pl.col("kind")
    desc = pl.col("smell").is_in(list(desc_smells)).fill_null(False)
    proxy = (kind == "selection_error") & (pl.col("mode") == "confusability_proxy").fill_null(False)
    labeled = (kind == "selection_error") & (pl.col("mode") == "labeled").fill_null(False)
    instructions = (kind == "hidden_injector") & (pl.col("injector_kind") == "instructions")
    return findings.group_by("run_id").agg(
        redundancy_severity=pl.col("severity")
        .filter(kind.is_in(["merge_candidate", "duplicate"]))
        .sum(),
        structural_severity=pl.col("severity").filter((kind == "schema_smell") & ~desc).sum(),
        description_severity=pl.col("severity").filter((kind == "schema_smell") & desc).sum(),
        proxy_severity=pl.col("severity").filter(proxy).sum(),
        proxy_count=proxy.sum().cast(pl.Int64),
        labeled_count=labeled.sum().cast(pl.Int64),
        labeled_mean_pass_rate=pl.col("pass_rate").fill_null(1.0).filter(labeled).mean(),
        fire_rate_sum=pl.col("fire_rate").fill_null(0.0).filter(kind == "distraction").sum(),
        injector_tokens=pl.col("tokens_est")
        .fill_null(0.0)
        .filter(instructions.fill_null(False))
        .sum(),
        **_shown_stats(desc, proxy, labeled, instructions),
    )


def _shown_stats(
    desc: pl.Expr, proxy: pl.Expr, labeled: pl.Expr, instructions: pl.Expr
) -> dict[str, pl.Expr]:
    """The sums of the shown dimensions, over shown severities, in mcp-xray's order:
    findings in report order, except redundancy (its merge candidates, then duplicates)."""
    kind, shown, at = pl.col("kind"), pl.col("severity_display"), "finding_index"
    sums = {
        "redundancy_shown": ordered_sum(
            shown, kind.is_in(["merge_candidate", "duplicate"]), kind == "duplicate", at
        ),
        "structural_shown": ordered_sum(shown, (kind == "schema_smell") & ~desc, at),
        "description_shown": ordered_sum(shown, (kind == "schema_smell") & desc, at),
        "proxy_shown": ordered_sum(shown, proxy, at),
        "labeled_pass_rate_sum": ordered_sum(pl.col("pass_rate").fill_null(1.0), labeled, at),
        "fire_rate_shown": ordered_sum(
            pl.col("fire_rate").fill_null(0.0), kind == "distraction", at
        ),
        "injector_tokens_shown": ordered_sum(pl.col("tokens_est").fill_null(0.0), instructions, at),
    }
    return sums


def _surface_rows(findings: pl.LazyFrame) -> pl.LazyFrame:
    """The first surface token_cost finding of each run (mcp-xray reads the first)."""
    is_surface = (pl.col("kind") == TOKEN_COST) & (pl.col("scope") == "surface")
    return (
        findings.filter(is_surface)
        .sort("run_id", "finding_index")
        .group_by("run_id")
        .first()
        .select(
            "run_id",
            "finding_index",
            "tokens",
            "tokens_per_tool_avg",
            "worst_phase",
            surface_tool_count="tool_count",
        )
    )


def _tool_names(findings: pl.LazyFrame) -> pl.LazyFrame:
    """CONTRACT 5: without a surface finding, n is "the number of distinct string targets
    of token_cost findings of scope tool"."""
    per_tool = (
        (pl.col("kind") == TOKEN_COST)
        & (pl.col("scope") == "tool")
        & ~pl.col("target_is_list")
        & (pl.col("target").list.len() == 1)
    )
    return (
        findings.filter(per_tool)
        .group_by("run_id")
        .agg(named_tools=pl.col("target").list.first().n_unique().cast(pl.Int64))
    )


def _inputs(runs: pl.LazyFrame, scored: pl.LazyFrame, s: SurfaceRubric) -> pl.LazyFrame:
    """Per run, what the dimensions read: sums, counts, the surface row, n, probes that ran."""
    stats = _run_stats(scored, s.description_smells)
    # A run without findings has no stats row: its sums and counts are 0 (a mean stays null).
    counts = ["proxy_count", "labeled_count"]
    sums = [c for c in stats.collect_schema().names() if c not in (*counts, "run_id")]
    zero_filled = [c for c in sums if c != "labeled_mean_pass_rate"]
    return (
        runs.select("run_id", "coverage_ran", "reported_overall", "reported_letter")
        .join(stats, on="run_id", how="left")
        .join(_surface_rows(scored), on="run_id", how="left")
        .join(_tool_names(scored), on="run_id", how="left")
        .with_columns(
            [pl.col(c).fill_null(0.0) for c in zero_filled]
            + [pl.col(c).fill_null(0) for c in counts]
        )
        .with_columns(
            n_tools=pl.when(pl.col("finding_index").is_not_null())
            .then(pl.col("surface_tool_count"))
            .otherwise(pl.col("named_tools"))
            .fill_null(0)
            .cast(pl.Int64),
            consolidate_ran=pl.col("coverage_ran")
            .list.contains(CONSOLIDATE_PROBE)
            .fill_null(False),
            noise_ran=pl.col("coverage_ran").list.contains(NOISE_PROBE).fill_null(False),
        )
    )


def _dimensions(s: SurfaceRubric) -> dict[str, pl.Expr]:
    """The five dimensions, unrounded (CONTRACT 5)."""
    n, c = pl.col("n_tools"), pl.col
    return {
        "context_efficiency": context_efficiency_score(
            c("tokens_per_tool_avg"), c("tokens"), c("injector_tokens"), s
        ),
        "surface_redundancy": surface_redundancy_score(
            c("consolidate_ran"), c("redundancy_severity"), s
        ),
        "schema_hygiene": schema_hygiene_score(n, c("structural_severity")),
        "description_quality": description_quality_score(
            n, c("description_severity"), c("proxy_severity")
        ),
        "selection_robustness": selection_robustness_score(
            c("noise_ran"),
            c("labeled_count"),
            c("labeled_mean_pass_rate"),
            c("proxy_count"),
            n,
            c("fire_rate_sum"),
            s,
        ),
    }


def _with_dimensions_shown(table: pl.LazyFrame, s: SurfaceRubric) -> pl.LazyFrame:
    """The five dimensions as mcp-xray shows them (``<dimension>_display``)."""
    n, c = pl.col("n_tools"), pl.col
    table = with_shown_lerps(table, "tokens_per_tool_avg", "tokens", s)
    table = with_context_efficiency_shown(table, "injector_tokens_shown", s)
    return with_py_round(
        table,
        SCORE_DECIMALS,
        surface_redundancy_display=surface_redundancy_display(
            c("consolidate_ran"), c("redundancy_shown"), s
        ),
        schema_hygiene_display=schema_hygiene_display(n, c("structural_shown")),
        description_quality_display=description_quality_display(
            n, c("description_shown"), c("proxy_shown")
        ),
        selection_robustness_display=selection_robustness_display(
            c("noise_ran"),
            c("labeled_count"),
            c("labeled_pass_rate_sum"),
            c("proxy_count"),
            n,
            c("fire_rate_shown"),
            s,
        ),
    )


def _grade(table: pl.LazyFrame, rubric: Rubric) -> pl.LazyFrame:
    """Overall (unrounded and shown), letter, and the agreement with the report's own."""
    overall, measured_weight = overall_score(rubric.surface_weights)
    nothing = pl.all_horizontal([pl.col(d).is_null() for d in DIMENSIONS])
    table = table.with_columns(
        overall=overall,
        measured_weight=measured_weight,
        nothing_measured=nothing,
        **overall_display_parts(rubric.surface_weights),
    )
    shown = true_div(pl.col("shown_numerator"), pl.col("shown_denominator"))
    table = with_py_round(table, SCORE_DECIMALS, overall_display=shown).with_columns(
        letter=letter_grade(pl.col("overall_display"), rubric.surface.letter_bands)
    )
    # Judged on the shown values, the ones the report holds: equal for a genuine report.
    off = (pl.col("overall_display") - pl.col("reported_overall")).abs()
    tolerance = rubric.surface.agreement_tolerance + AGREEMENT_EPSILON
    checkable = rubric.is_default_surface
    unknown = pl.lit(None, pl.Boolean)
    return table.with_columns(
        overall_delta=pl.col("overall") - pl.col("reported_overall"),
        agrees_with_report=(off <= tolerance) if checkable else unknown,
        letter_agrees=(pl.col("letter") == pl.col("reported_letter")) if checkable else unknown,
    )


def score_surfaces(runs: pl.LazyFrame, findings: pl.LazyFrame, rubric: Rubric) -> SurfaceScoring:
    """Every report regraded under ``rubric``: severities, dimensions, overall, letter, phases."""
    s = rubric.surface
    rubric_id = pl.lit(rubric.rubric_id)
    scored = severity_shown(findings.with_columns(finding_severity(rubric)), rubric)
    finding_scores = scored.select(
        "run_id",
        "finding_index",
        rubric_id=rubric_id,
        kind="kind",
        severity="severity",
        severity_display="severity_display",
        reported_severity="reported_severity",
    )
    table = _with_dimensions_shown(_inputs(runs, scored, s).with_columns(**_dimensions(s)), s)
    table = _grade(table, rubric)
    run_scores = table.with_columns(rubric_id=rubric_id).select(list(polars_schema(SurfaceScore)))
    phases = _phase_scores(scored, table, s).with_columns(rubric_id=rubric_id)
    # Sorted by their unique keys, as the task scores are: the joins above leave the
    # engine's join order, and rescoring the same input should give identical files.
    return SurfaceScoring(
        runs=run_scores.cast(polars_schema(SurfaceScore)).sort(RUN_KEY),
        findings=finding_scores.cast(polars_schema(SurfaceFindingScore)).sort(FINDING_KEY),
        phases=phases.select(list(polars_schema(SurfacePhaseScore)))
        .cast(polars_schema(SurfacePhaseScore))
        .sort(FINDING_KEY),
    )


def _phase_scores(scored: pl.LazyFrame, table: pl.LazyFrame, s: SurfaceRubric) -> pl.LazyFrame:
    """CONTRACT 5 by_phase: "one row per scope phase token_cost finding ... or, for an
    unphased server, one row named all from the surface finding; its context_efficiency
    uses the same formula on that row".

    The instruction-injector shave applies to every phase row: server instructions are
    injected whatever phase is loaded, so the worst phase's row equals the dimension.
    """
    per_run = table.select("run_id", "injector_tokens", "injector_tokens_shown", "worst_phase")
    phase_rows = scored.filter(
        (pl.col("kind") == TOKEN_COST) & (pl.col("scope") == "phase")
    ).select("run_id", "finding_index", "phase", "tool_count", "tokens", "tokens_per_tool_avg")
    surface = (
        scored.filter((pl.col("kind") == TOKEN_COST) & (pl.col("scope") == "surface"))
        .sort("run_id", "finding_index")
        .group_by("run_id")
        .first()
    )
    unphased = surface.join(phase_rows, on="run_id", how="anti").select(
        "run_id",
        "finding_index",
        phase=pl.lit(ALL_PHASES),
        tool_count="tool_count",
        tokens="tokens",
        tokens_per_tool_avg="tokens_per_tool_avg",
    )
    rows = pl.concat([phase_rows, unphased]).join(per_run, on="run_id")
    row = pl.col("tokens_per_tool_avg"), pl.col("tokens")
    rows = with_shown_lerps(rows, "tokens_per_tool_avg", "tokens", s)
    rows = with_context_efficiency_shown(rows, "injector_tokens_shown", s)
    return rows.with_columns(
        context_efficiency=context_efficiency_score(*row, pl.col("injector_tokens"), s),
        is_worst_phase=(pl.col("phase") == ALL_PHASES)
        | (pl.col("phase") == pl.col("worst_phase")).fill_null(False),
    )
