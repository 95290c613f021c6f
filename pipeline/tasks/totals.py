"""Task scoring, per run: the totals, gate, score, passed and anomalies of each run as
TaskScore rows (CONTRACT 4)."""

from __future__ import annotations

import polars as pl

from pipeline.core.repeatable import with_list_sums
from pipeline.rubric import Rubric
from pipeline.tasks.anomalies import anomaly_lists, run_anomaly_rules
from pipeline.tasks.components import graded_term, rubric_term
from pipeline.tasks.formulas import (
    AUDIT_COMPONENT,
    STATUS_GRADER_ERROR,
    STATUS_OUT_OF_RANGE,
    STATUS_SCORED,
    TOTAL_COLUMNS,
    out_of_range_totals,
    penalty_total,
    task_passed,
    task_score,
    with_out_of_range_anomaly,
)
from pipeline.tasks.keys import COMPONENT_CODE, RUN_KEY

_EMPTY_ANOMALIES = pl.lit([], dtype=pl.List(pl.String))


def component_totals(rescored: pl.LazyFrame) -> pl.LazyFrame:
    """Per run, from the rows before gating: the sum of the terms other than the gate's (so
    gating is applied per run, without joining the gate back onto every row), as rescored
    and as graded, and the sum of the record's weights."""
    others = ~pl.col("is_gate")
    sums = ["other_terms", "other_terms_as_graded", "record_weight_sum"]
    return (
        rescored.group_by(RUN_KEY)
        .agg(
            rubric_term(pl.col("subscore"), pl.col("weight")).filter(others).alias("other_terms"),
            graded_term(pl.col("stored_subscore"), pl.col("weight_as_graded"))
            .filter(others)
            .alias("other_terms_as_graded"),
            pl.col("weight_as_graded").alias("record_weight_sum"),
        )
        .pipe(with_list_sums, sums)
    )


def audit_subscores(rescored: pl.LazyFrame, codes: pl.LazyFrame) -> pl.LazyFrame:
    """Per run, the stored subscore of its ``audit`` component (at most one per run)."""
    audit = codes.filter(pl.col("component") == AUDIT_COMPONENT).select(COMPONENT_CODE)
    return rescored.join(audit, on=COMPONENT_CODE, how="semi").select(
        RUN_KEY, pl.col("stored_subscore").alias("audit_stored_subscore")
    )


def gated_weighted(
    gate_term: pl.Expr, other_terms: pl.Expr, has_gate: pl.Expr, gate_ok: pl.Expr
) -> pl.Expr:
    """CONTRACT 4: "weighted = Σ subscore × rubric weight (after gating)": the gate's own
    term (0 when it failed, its subscore being 0) plus the others unless gated out."""
    others = pl.when(~has_gate | gate_ok).then(other_terms).otherwise(pl.lit(0.0))
    return gate_term.fill_null(0.0) + others.fill_null(0.0)


def penalty_sums(penalties: pl.LazyFrame) -> pl.LazyFrame:
    """Per run, the sum of its stored penalties."""
    return (
        penalties.group_by("run_id")
        .agg(pl.col("value").alias("penalty_sum"))
        .pipe(with_list_sums, ["penalty_sum"])
    )


def _scored(expr: pl.Expr) -> pl.Expr:
    # CONTRACT 4: a grader error has "no score, excluded from every rate and mean".
    return pl.when(~pl.col("env_internal_failure")).then(expr)


def _finite(expr: pl.Expr) -> pl.Expr:
    return pl.when(pl.col("out_of_range").is_null()).then(expr)


def _with_totals(frame: pl.LazyFrame, rubric: Rubric) -> pl.LazyFrame:
    """weighted, penalty_total and score (each also as graded), and which is out of range."""
    penalty = pl.col("penalty_total")
    return (
        frame.with_columns(
            _scored(
                gated_weighted(
                    pl.col("gate_term"),
                    pl.col("other_terms"),
                    pl.col("has_gate"),
                    pl.col("gate_ok"),
                )
            ).alias("weighted"),
            _scored(
                gated_weighted(
                    pl.col("gate_term_as_graded"),
                    pl.col("other_terms_as_graded"),
                    pl.col("has_gate"),
                    pl.col("stored_gate_ok"),
                )
            ).alias("weighted_as_graded"),
            _scored(penalty_total(pl.col("penalty_sum"), rubric.task.penalty_scale)).alias(
                "penalty_total"
            ),
        )
        .with_columns(
            task_score(pl.col("weighted"), penalty, pl.col("allow_unbounded")).alias("score"),
            task_score(pl.col("weighted_as_graded"), penalty, pl.col("allow_unbounded")).alias(
                "score_as_graded"
            ),
        )
        .with_columns(out_of_range_totals().alias("out_of_range"))
    )


def _score_row(rubric: Rubric) -> list[pl.Expr]:
    """A TaskScore row's columns, from a run with its totals and anomalies."""
    return [
        pl.col(RUN_KEY),
        pl.col("run_id"),
        pl.lit(rubric.rubric_id).alias("rubric_id"),
        pl.when(pl.col("env_internal_failure"))
        .then(pl.lit(STATUS_GRADER_ERROR))
        .when(pl.col("out_of_range").is_not_null())
        .then(pl.lit(STATUS_OUT_OF_RANGE))
        .otherwise(pl.lit(STATUS_SCORED))
        .alias("status"),
        pl.col("gate_component"),
        _scored(pl.when(pl.col("has_gate")).then(pl.col("gate_ok"))).alias("gate_passed"),
        _scored(pl.col("has_gate") & ~pl.col("gate_ok")).alias("gated_out"),
        # Checked after computing: a total out of range is stored as null.
        *(_finite(pl.col(c)).alias(c) for c in TOTAL_COLUMNS),
        _finite(
            _scored(
                task_passed(
                    pl.col("score"),
                    pl.col("has_gate"),
                    pl.col("gate_ok"),
                    rubric.task.failure_threshold,
                )
            )
        ).alias("passed"),
        with_out_of_range_anomaly(pl.col("anomalies").fill_null(_EMPTY_ANOMALIES)),
    ]


def run_scores(
    gates: pl.LazyFrame,
    rescored: pl.LazyFrame,
    codes: pl.LazyFrame,
    penalties: pl.LazyFrame,
    rubric: Rubric,
) -> pl.LazyFrame:
    """TaskScore rows, sorted by run_id: totals, gate, score, passed and anomalies per run;
    ``gates`` is ``run_gates``."""
    with_totals = (
        gates.join(component_totals(rescored), on=RUN_KEY, how="left")
        .join(audit_subscores(rescored, codes), on=RUN_KEY, how="left")
        .join(penalty_sums(penalties), on="run_id", how="left")
        .cache()
    )
    anomalies = anomaly_lists(with_totals, rescored, codes, run_anomaly_rules())
    return (
        _with_totals(with_totals.join(anomalies, on=RUN_KEY, how="left"), rubric)
        .select(_score_row(rubric))
        .sort(RUN_KEY)
        .drop(RUN_KEY)
    )
