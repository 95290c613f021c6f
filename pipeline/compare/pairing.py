"""Problems paired between two versions, and each component's part in the change.

The unit is the problem, keyed by ``(problem_id, env_type)``: trials of one problem
are averaged first, and only problems both versions have a score for are paired.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import polars as pl

from pipeline.compare import metrics
from pipeline.core import repeatable
from pipeline.storage.lake import InputError
from pipeline.tasks.formulas import STATUS_SCORED

KEY: Final = metrics.KEY

RUN_COLUMNS: Final = (
    "run_id",
    "agent",
    "agent_version",
    "problem_id",
    "env_type",
    "graded_at",
    "status",
    "score",
    "weighted",
    "penalty_total",
    "gate_passed",
    "passed",
    "cost_usd",
    "tokens",
    "wall_seconds",
)
COMPONENT_COLUMNS: Final = ("run_id", "component", "contribution", "is_gate")
METADATA_COLUMNS: Final = ("run_id", "key", "value")


def require(frame: pl.LazyFrame, columns: Sequence[str], what: str) -> None:
    """Refuse a frame that lacks a column the comparison reads, naming them all."""
    present = set(frame.collect_schema().names())
    missing = [c for c in columns if c not in present]
    if missing:
        raise InputError(
            f"{what} is missing column(s) {', '.join(missing)}; it has {', '.join(sorted(present))}"
        )


# --------------------------------------------------------------------------- per-problem


def problem_score(col: str) -> pl.Expr:
    """Issue 4: "trials averaged within a problem first" — the per-problem mean of a run column."""
    return repeatable.mean(col)


SIDE_COLUMNS: Final = (
    "trials",
    "score",
    "weighted",
    "penalty",
    "passed_share",
    "passes",
    "gate_passed",
    "worst_run_id",
)


def per_problem(runs: pl.LazyFrame) -> pl.LazyFrame:
    """Scored runs averaged per (agent, agent_version, problem_id, env_type).

    Score and pass come from :func:`pipeline.compare.metrics.problem_outcomes`, the one
    definition every command and view shares.
    """
    return metrics.problem_outcomes(
        runs,
        ["agent", "agent_version"],
        weighted=problem_score("weighted"),
        penalty=problem_score("penalty_total"),
        gate_passed=problem_score("gate_passed"),
        # The trial that did worst is where the reason for a drop is read.
        worst_run_id=pl.col("run_id").sort_by(["score", "run_id"]).first(),
    )


def _side(problems: pl.LazyFrame, version: str, prefix: str) -> pl.LazyFrame:
    return (
        problems.filter(pl.col("agent_version") == version)
        .drop("agent_version")
        .rename({c: f"{prefix}{c}" for c in SIDE_COLUMNS})
    )


def paired_problems(runs: pl.LazyFrame, baseline: str, candidate: str) -> pl.LazyFrame:
    """Problems both versions have a score for, side by side, with ``diff = c_score - b_score``
    (``metrics.score_difference``: rounding of the trials' means is no difference)."""
    problems = per_problem(runs)
    base = _side(problems, baseline, "b_")
    cand = _side(problems, candidate, "c_")
    return (
        base.join(cand, on=["agent", *KEY], how="inner")
        .with_columns(diff=metrics.score_difference())
        .sort(["agent", *KEY])
    )


# --------------------------------------------------------------------------- components


def component_means(
    runs: pl.LazyFrame, components: pl.LazyFrame, version: str, prefix: str
) -> pl.LazyFrame:
    """Per problem and component: Σ contribution over scored trials / number of scored trials.

    Dividing by the problem's trial count (not by the rows present) counts a
    component missing from a trial as 0, so per problem Σ_c mean contribution
    = mean over trials of Σ_c contribution = mean weighted, exactly.
    """
    scored = runs.filter((pl.col("status") == STATUS_SCORED) & (pl.col("agent_version") == version))
    trials = scored.group_by(*KEY).agg(trials=pl.len())
    return (
        components.join(scored.select("run_id", *KEY), on="run_id", how="inner")
        .group_by(*KEY, "component")
        .agg(
            total=repeatable.total(pl.col("contribution").fill_null(0.0)),
            gate=pl.col("is_gate").any(),
        )
        .join(trials, on=list(KEY), how="inner")
        .select(
            *KEY,
            "component",
            (pl.col("total") / pl.col("trials")).alias(f"{prefix}contribution"),
            pl.col("gate").alias(f"{prefix}is_gate"),
        )
    )


def component_grid(
    runs: pl.LazyFrame,
    components: pl.LazyFrame,
    pairs: pl.LazyFrame,
    baseline: str,
    candidate: str,
) -> pl.LazyFrame:
    """Paired problem × component, both versions' mean contributions (absent = 0)."""
    base = component_means(runs, components, baseline, "b_")
    cand = component_means(runs, components, candidate, "c_")
    return (
        base.join(cand, on=[*KEY, "component"], how="full", coalesce=True)
        .join(pairs.select(*KEY), on=list(KEY), how="semi")
        .with_columns(
            pl.col("b_contribution").fill_null(0.0),
            pl.col("c_contribution").fill_null(0.0),
            is_gate=pl.col("b_is_gate").fill_null(False) | pl.col("c_is_gate").fill_null(False),
        )
        .with_columns(drop=pl.col("b_contribution") - pl.col("c_contribution"))
    )


def component_split(grid: pl.LazyFrame, n_pairs: int) -> pl.DataFrame:
    """Issue 4: "the change in score split by component": Σ over pairs of (c − b) / n.

    Divided by all paired problems (a problem without the component adds 0),
    so the parts add up to the change in the mean weighted sum.
    """
    denominator = float(max(n_pairs, 1))
    return (
        grid.group_by("component")
        .agg(
            baseline=repeatable.total("b_contribution") / denominator,
            candidate=repeatable.total("c_contribution") / denominator,
            delta=repeatable.total(pl.col("c_contribution") - pl.col("b_contribution"))
            / denominator,
            is_gate=pl.col("is_gate").any(),
            problems=pl.len(),
        )
        .sort("delta", "component")
        .collect()
    )
