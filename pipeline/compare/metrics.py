"""One definition of each metric a version is described by, at two levels.

- **Run level** (``*_runs``): over the scored runs (grader errors excluded and
  counted). ``mean_score_runs`` is the mean score of those runs, its interval
  normal (mean ± z·sd/√n, method ``normal_over_runs``); ``pass_rate_runs`` the
  share of them that passed, with a Wilson interval.
- **Problem level** (``*_problems``): a problem is ``(problem_id, env_type)``;
  its score is the mean over its scored trials, and it *passes* when at least
  half of its scored trials passed (``mean(passed) >= 0.5``, a majority, ties
  passing). ``mean_score_problems`` is the mean of the problem scores, its
  interval Student t with problems − 1 df (method ``t_over_problems``, the
  clustered interval of Miller 2024); ``pass_rate_problems`` the share of
  problems that pass, with a Wilson interval.

The warehouse views compute the same with the macros of ``sql/macros/metrics.sql``
and the view ``int_problem_outcomes``; a test checks they agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import polars as pl

from pipeline.compare import stats
from pipeline.core import repeatable
from pipeline.core.jsonsafe import json_safe
from pipeline.tasks.formulas import STATUS_GRADER_ERROR, STATUS_SCORED

KEY: Final = ("problem_id", "env_type")
# "a problem passes for a version when its mean passed >= 0.5" (majority of trials)
PROBLEM_PASS_THRESHOLD: Final = 0.5
METHOD_NORMAL_RUNS: Final = "normal_over_runs"
METHOD_T_PROBLEMS: Final = "t_over_problems"
METHOD_WILSON: Final = "wilson"
# The interval method of each metric, carried beside the numbers (JSON and views).
METHODS: Final = {
    "mean_score_runs": METHOD_NORMAL_RUNS,
    "pass_rate_runs": METHOD_WILSON,
    "mean_score_problems": METHOD_T_PROBLEMS,
    "pass_rate_problems": METHOD_WILSON,
}
METRICS: Final = tuple(METHODS)
COUNTS: Final = ("runs", "grader_errors", "scored_runs", "problems")


def problem_outcomes(runs: pl.LazyFrame, by: Sequence[str], **extra: pl.Expr) -> pl.LazyFrame:
    """Per ``by`` and problem: scored trials, mean score, share passed and whether it passes.

    ``extra`` aggregations over the problem's scored trials ride along (compare's
    per-problem weighted sum, penalty, worst trial).
    """
    scored = runs.filter(pl.col("status") == STATUS_SCORED)
    return (
        scored.group_by(list(dict.fromkeys([*by, *KEY])))
        .agg(
            trials=pl.len(),
            # A list per problem, its mean taken by with_list_means: most problems have a
            # few trials, whose sum needs no sort.
            score=pl.col("score").cast(pl.Float64).implode(),
            _scores=pl.col("score").count(),
            passed_share=repeatable.share("passed"),
            **extra,
        )
        .pipe(repeatable.with_list_means, {"score": "_scores"})
        .with_columns(passes=pl.col("passed_share") >= PROBLEM_PASS_THRESHOLD)
    )


# A problem's score is the mean of its trials, which rounds in the last bits: three trials
# of 0.7 average to 0.6999999999999998, one trial to 0.7. A paired difference that small
# against the scores is that rounding, not a change: the t test would read the same
# rounding on every problem as a certain move (sd 0, p 0), and a release gate would fail on
# it. Averaging k trials errs by at most about k ulps of the largest score, far below this.
SAME_SCORE_TOLERANCE: Final = 1e-12


def score_difference(baseline: str = "b_score", candidate: str = "c_score") -> pl.Expr:
    """``candidate - baseline`` per paired problem, 0 where it is within
    ``SAME_SCORE_TOLERANCE`` of the larger score (at least 1): rounding, not a change."""
    b, c = pl.col(baseline), pl.col(candidate)
    scale = pl.max_horizontal(pl.lit(1.0), b.abs(), c.abs())
    return pl.when((c - b).abs() <= SAME_SCORE_TOLERANCE * scale).then(0.0).otherwise(c - b)


def z_value(confidence: float) -> float:
    """The two-sided normal quantile (1.959963984540054 at 95%, as the SQL macro z95)."""
    # ndtri is what scipy.stats.norm.ppf computes; scipy.special imports in ~0.15 s where
    # scipy.stats takes ~0.55 s, which every rebuild of version_regressions paid.
    from scipy.special import ndtri

    return float(ndtri(0.5 + confidence / 2.0))


def wilson(
    rate: npt.ArrayLike, n: npt.ArrayLike, z: float
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """The Wilson score interval of ``rate`` over ``n`` trials (never outside [0, 1]);
    NaN where there is no trial or no rate.

    In numpy, not Polars expressions: Polars evaluated this same expression to a
    different last bit with one thread than with several.
    """
    p = np.asarray(rate, dtype=np.float64)
    count = np.asarray(n, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        centre = p + z**2 / (2 * count)
        half = z * np.sqrt(p * (1 - p) / count + z**2 / (4 * count**2))
        scale = 1 + z**2 / count
        ok = count > 0
        # At p = 0 or 1 a bound is 0 or 1 exactly, which floats miss by an ulp: the bounds
        # hold p and stay in [0, 1] (as the SQL macros do).
        low = np.minimum(np.maximum((centre - half) / scale, 0.0), p)
        high = np.maximum(np.minimum((centre + half) / scale, 1.0), p)
        return np.where(ok, low, np.nan), np.where(ok, high, np.nan)


def _interval_columns(table: pl.DataFrame, confidence: float) -> list[pl.Series]:
    """The three intervals of :func:`version_metrics` (numpy: the same bits on any thread count)."""
    z = z_value(confidence)

    def floats(column: str) -> npt.NDArray[np.float64]:
        return table[column].cast(pl.Float64).fill_null(np.nan).to_numpy()

    with np.errstate(divide="ignore", invalid="ignore"):
        normal_half = z * floats("_sd_runs") / np.sqrt(floats("scored_runs"))
    t = stats.t_interval_from_moments(
        table["problems"].to_numpy(),
        floats("mean_score_problems"),
        table["_sd_problems"].fill_null(0.0).to_numpy(),
        confidence,
    )
    columns = {
        "mean_score_runs_ci_low": floats("mean_score_runs") - normal_half,
        "mean_score_runs_ci_high": floats("mean_score_runs") + normal_half,
        "mean_score_problems_ci_low": t.ci_low,
        "mean_score_problems_ci_high": t.ci_high,
    }
    for rate, n in (("pass_rate_runs", "_pass_n_runs"), ("pass_rate_problems", "_pass_n_problems")):
        low, high = wilson(floats(rate), floats(n), z)
        columns |= {f"{rate}_ci_low": low, f"{rate}_ci_high": high}
    return [pl.Series(k, v, dtype=pl.Float64).fill_nan(None) for k, v in columns.items()]


def version_metrics(
    runs: pl.LazyFrame | pl.DataFrame,
    by: Sequence[str],
    confidence: float = stats.DEFAULT_CONFIDENCE,
) -> pl.DataFrame:
    """Counts and the four metrics with their intervals, per ``by`` (e.g. agent, version)."""
    lf = runs.lazy()
    is_scored = pl.col("status") == STATUS_SCORED
    run_level = lf.group_by(by).agg(
        runs=pl.len().cast(pl.Int64),
        grader_errors=(pl.col("status") == STATUS_GRADER_ERROR).sum().cast(pl.Int64),
        scored_runs=is_scored.sum().cast(pl.Int64),
        mean_score_runs=repeatable.mean(pl.col("score").filter(is_scored)),
        _sd_runs=repeatable.std(pl.col("score").filter(is_scored)),
        pass_rate_runs=repeatable.share(pl.col("passed").filter(is_scored)),
        _pass_n_runs=pl.col("passed").filter(is_scored).count().cast(pl.Int64),
    )
    problem_level = (
        problem_outcomes(lf, by)
        .group_by(by)
        .agg(
            problems=pl.len().cast(pl.Int64),
            mean_score_problems=repeatable.mean("score"),
            _sd_problems=repeatable.std("score"),
            pass_rate_problems=repeatable.share("passes"),
            _pass_n_problems=pl.col("passes").count().cast(pl.Int64),
        )
    )
    table = (
        run_level.join(problem_level, on=list(by), how="left", nulls_equal=True)
        .with_columns(pl.col("problems").fill_null(0))
        .sort(list(by))
        .collect()
    )
    return table.with_columns(_interval_columns(table, confidence)).select(
        *by, *COUNTS, *(c for m in METRICS for c in (m, f"{m}_ci_low", f"{m}_ci_high"))
    )


def as_documents(table: pl.DataFrame, by: Sequence[str]) -> list[dict[str, Any]]:
    """Rows of :func:`version_metrics` as JSON-ready dicts, each with its interval methods."""
    return [{**json_safe(row), "ci_methods": dict(METHODS)} for row in table.to_dicts()]


def metric_document(table: pl.DataFrame, by: Sequence[str], **where: str) -> dict[str, Any]:
    """The one row of ``table`` matching ``where`` (every metric null when there is none)."""
    hit = table
    for column, value in where.items():
        hit = hit.filter(pl.col(column) == value)
    docs = as_documents(hit, by)
    if docs:
        return docs[0]
    empty: dict[str, Any] = {c: 0 for c in COUNTS}
    for m in METRICS:
        empty |= {m: None, f"{m}_ci_low": None, f"{m}_ci_high": None}
    return {**where, **empty, "ci_methods": dict(METHODS)}
