"""The release gate: paired verdicts overall and per env type, Holm-corrected, in one table.

One function, :func:`step_table`, turns paired problems into the numbers every
consumer reads: ``compare`` (one pair of versions), ``history`` (each version
against the one before) and the lake's ``version_regressions`` table (every
consecutive pair of every agent, written at scoring time). It is vectorized over
any number of comparisons at once: a comparison is a group
``(agent, baseline, candidate)``, and each group gives one ``all`` row (every
paired problem) and one row per env type.

The gate fails a comparison when the ``all`` row's verdict is ``regression``,
or when an env type regressed after a Holm (1979) step-down correction over the
env types of that comparison (those with at least two pairs, hence a p-value):
with the p-values sorted ``p_(1) <= ... <= p_(k)``, the adjusted value is
``max_{j<=i} min(1, (k - j + 1) p_(j))``, and an env type regressed when its
adjusted p-value is below ``1 - confidence`` and its delta is negative. Holm
keeps the chance of any false alarm over the k env types at or below
``1 - confidence`` whatever their dependence; the ``all`` row is tested alone,
as the contract's verdict.
"""

from __future__ import annotations

from typing import Final

import numpy as np
import polars as pl

from pipeline.compare import metrics, stats
from pipeline.compare.names import ALL_ENV_TYPES
from pipeline.core import repeatable

GROUP: Final = ("agent", "baseline", "candidate")
KEY: Final = metrics.KEY
HOLM: Final = "holm"
# What the table's columns are, for the view's header and the README.
COLUMNS: Final = (
    "agent",
    "env_type",
    "baseline",
    "candidate",
    "paired_problems",
    "baseline_mean",
    "candidate_mean",
    "delta",
    "se",
    "ci_low",
    "ci_high",
    "p_value",
    "verdict",
    "insufficient_data",
    "holm_family",
    "p_value_holm",
    "gate_verdict",
)


def _moments(pairs: pl.LazyFrame, keys: list[str]) -> pl.LazyFrame:
    return pairs.group_by(keys).agg(
        paired_problems=pl.len().cast(pl.Int64),
        baseline_mean=repeatable.mean("b_score"),
        candidate_mean=repeatable.mean("c_score"),
        delta=repeatable.mean("diff"),
        sd=repeatable.std("diff"),
    )


def holm_adjusted(p_value: str, family: list[str]) -> list[pl.Expr]:
    """Holm's adjusted p-values within each ``family`` (frame sorted by p, nulls last).

    Returns the expressions for ``holm_family`` (k, the p-values in the family) and
    ``p_value_holm``; a null p-value stays null and is not counted in k.
    """
    p = pl.col(p_value)
    k = p.count().over(family)
    rank = pl.int_range(1, pl.len() + 1).over(family)
    raw = ((k - rank + 1).cast(pl.Float64) * p).clip(upper_bound=1.0)
    return [k.cast(pl.Int64).alias("holm_family"), raw.cum_max().over(family).alias("p_value_holm")]


def step_table(pairs: pl.LazyFrame | pl.DataFrame, confidence: float) -> pl.DataFrame:
    """Per comparison and env type (and ``all``): the paired t verdict and the gate's.

    ``pairs`` holds one row per paired problem: ``agent, baseline, candidate,
    problem_id, env_type, b_score, c_score, diff`` (``diff = c_score - b_score``).
    """
    # The moments add their terms in a canonical order (pipeline.core.repeatable), so
    # compare, history and the table give the same last bit whatever order rows came in.
    lf = pairs.lazy()
    overall = _moments(lf, list(GROUP)).with_columns(env_type=pl.lit(ALL_ENV_TYPES))
    per_env = _moments(lf, [*GROUP, "env_type"])
    moments = pl.concat([overall, per_env], how="diagonal").collect()
    t = stats.t_interval_from_moments(
        moments["paired_problems"].to_numpy(),
        moments["delta"].to_numpy(),
        moments["sd"].fill_null(0.0).to_numpy(),
        confidence,
    )
    verdicts = stats.verdict(t.ci_low, t.ci_high, t.n)
    alpha = 1.0 - confidence
    is_all = pl.col("env_type") == ALL_ENV_TYPES
    # The env rows form each comparison's Holm family; `all` sorts into a family of its own.
    family = [*GROUP, "is_all"]
    tested = (
        moments.with_columns(
            se=pl.Series(t.se, dtype=pl.Float64).fill_nan(None),
            ci_low=pl.Series(t.ci_low, dtype=pl.Float64).fill_nan(None),
            ci_high=pl.Series(t.ci_high, dtype=pl.Float64).fill_nan(None),
            p_value=pl.Series(t.p_value, dtype=pl.Float64).fill_nan(None),
            verdict=pl.Series(np.asarray(verdicts).astype(str), dtype=pl.String),
            insufficient_data=pl.col("paired_problems") < stats.MIN_PAIRS_TO_CONCLUDE,
            is_all=is_all,
        )
        .sort([*family, "p_value", "env_type"], nulls_last=True)
        .with_columns(holm_adjusted("p_value", family))
    )
    significant = pl.col("p_value_holm") < alpha
    gate_verdict = (
        pl.when(is_all)
        .then(pl.col("verdict"))
        .when(significant & (pl.col("delta") < 0))
        .then(pl.lit(stats.REGRESSION))
        .when(significant & (pl.col("delta") > 0))
        .then(pl.lit(stats.IMPROVEMENT))
        .otherwise(pl.lit(stats.NO_CHANGE))
    )
    return (
        tested.with_columns(
            holm_family=pl.when(is_all).then(1).otherwise(pl.col("holm_family")),
            p_value_holm=pl.when(is_all).then(pl.col("p_value")).otherwise(pl.col("p_value_holm")),
        )
        .with_columns(gate_verdict=gate_verdict)
        .select(COLUMNS)
        .sort([*GROUP, pl.col("env_type") != ALL_ENV_TYPES, "env_type"])
    )


def regressed_env_types(table: pl.DataFrame) -> list[str]:
    """The env types whose Holm-corrected verdict is a regression (one comparison's table)."""
    hit = table.filter(
        (pl.col("env_type") != ALL_ENV_TYPES) & (pl.col("gate_verdict") == stats.REGRESSION)
    )
    return sorted(hit["env_type"].to_list())


def gate_fails(table: pl.DataFrame) -> pl.DataFrame:
    """Per comparison: ``fails`` when ``all`` regressed, any env type did after Holm, or
    fewer problems are paired than an interval needs (the gate does not pass what it
    cannot measure)."""
    overall = pl.col("env_type") == ALL_ENV_TYPES
    return table.group_by(GROUP).agg(
        fails=(pl.col("gate_verdict") == stats.REGRESSION).any()
        | (pl.col("paired_problems").filter(overall) < stats.MIN_PAIRS_FOR_INTERVAL).any(),
        holm_family=pl.col("holm_family").filter(pl.col("env_type") != ALL_ENV_TYPES).max(),
    )


def version_order(runs: pl.LazyFrame) -> pl.LazyFrame:
    """Each agent's versions in order of first graded run (ties by version text), 0-based.

    Every landed run counts (scored or not): the order ``history`` shows and
    ``version_regressions`` steps through.
    """
    return (
        runs.group_by("agent", "agent_version")
        .agg(first_graded_at=pl.col("graded_at").min(), runs=pl.len())
        .sort(["agent", "first_graded_at", "agent_version"], nulls_last=True)
        .with_columns(version_index=pl.int_range(pl.len()).over("agent"))
    )


def consecutive_pairs(runs: pl.LazyFrame) -> pl.LazyFrame:
    """Problems paired between each version and the next, for every agent at once."""
    order = version_order(runs).select("agent", "agent_version", "version_index")
    problems = metrics.problem_outcomes(runs, ["agent", "agent_version"]).join(
        order, on=["agent", "agent_version"], how="inner"
    )
    base = problems.select(
        "agent",
        *KEY,
        pl.col("agent_version").alias("baseline"),
        (pl.col("version_index") + 1).alias("step"),
        pl.col("score").alias("b_score"),
    )
    cand = problems.select(
        "agent",
        *KEY,
        pl.col("agent_version").alias("candidate"),
        pl.col("version_index").alias("step"),
        pl.col("score").alias("c_score"),
    )
    return base.join(cand, on=["agent", "step", *KEY], how="inner").with_columns(
        diff=metrics.score_difference()
    )


def consecutive_steps(runs: pl.LazyFrame) -> pl.LazyFrame:
    """Each agent's (baseline, candidate) pairs of consecutive versions, paired or not."""
    order = version_order(runs).select("agent", "agent_version", "version_index")
    return order.join(
        order.select("agent", candidate="agent_version", version_index=pl.col("version_index") - 1),
        on=["agent", "version_index"],
    ).select("agent", baseline="agent_version", candidate="candidate")


def version_regressions(runs: pl.LazyFrame, confidence: float) -> pl.DataFrame:
    """The gate's table for every consecutive pair of versions of every agent. A step with
    no paired problem (a candidate whose every run was a grader error, or that ran other
    problems) has its ``all`` row too, with 0 pairs: its gate fails, and a scan of the
    table for failing gates must not pass over it."""
    # The version order and the problems both read the runs (a scan and a join with their
    # scores): cached, that is done once, ~40% of the table's time at 100k runs.
    cached = runs.cache()
    table = step_table(consecutive_pairs(cached).collect(), confidence)
    unpaired = (
        consecutive_steps(cached)
        .join(table.lazy().select(GROUP).unique(), on=list(GROUP), how="anti")
        .collect()
    )
    if unpaired.is_empty():
        return table
    nothing = unpaired.with_columns(
        env_type=pl.lit(ALL_ENV_TYPES),
        paired_problems=pl.lit(0, pl.Int64),
        verdict=pl.lit(stats.NO_CHANGE),
        insufficient_data=pl.lit(True),
        holm_family=pl.lit(1, pl.Int64),
        gate_verdict=pl.lit(stats.NO_CHANGE),
    )
    return (
        pl.concat([table, nothing], how="diagonal_relaxed")
        .select(COLUMNS)
        .cast(table.schema)
        .sort([*GROUP, pl.col("env_type") != ALL_ENV_TYPES, "env_type"])
    )
