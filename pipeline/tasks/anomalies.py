"""Task scoring's anomalies (CONTRACT 4): the rules judged per run and per component,
gathered as one sorted list per run."""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from pipeline.tasks.formulas import (
    audit_mismatch_anomaly,
    audit_unverified_anomaly,
    component_anomaly,
    gate_failed_with_nonzero_anomaly,
    non_binary_gate_anomaly,
    unknown_env_type_anomaly,
    weights_sum_anomaly,
)
from pipeline.tasks.keys import RUN_KEY, with_component_names


def anomaly_lists(
    runs: pl.LazyFrame,
    rescored: pl.LazyFrame,
    codes: pl.LazyFrame,
    run_anomalies: Iterable[pl.Expr],
) -> pl.LazyFrame:
    """Per run with any anomaly, its sorted list of anomaly strings.

    Anomalies are rare, so each is made a row only where it occurs, and the rows are
    gathered per run: building and sorting a list for every run cost more than all the
    arithmetic. ``runs`` holds the run-level columns that ``run_anomalies`` (each null
    where its anomaly does not hold) and the gate decisions need.
    """
    anomaly = pl.col("anomaly")
    run_level = [
        runs.select(RUN_KEY, expression.alias("anomaly")).filter(anomaly.is_not_null())
        for expression in run_anomalies
    ]
    # Only a run whose gate failed as graded can have this one: the filter and join keep
    # the lists to those runs.
    failed_gates = runs.filter(pl.col("has_gate") & ~pl.col("stored_gate_ok")).select(
        RUN_KEY, "has_gate", "stored_gate_ok"
    )
    gate_failed_with_nonzero = (
        rescored.filter(~pl.col("is_gate") & (pl.col("stored_subscore") > 0.0))
        .join(failed_gates, on=RUN_KEY, how="inner")
        .pipe(with_component_names, codes)
        .group_by(RUN_KEY)
        .agg(
            pl.col("component").alias("nonzero_others"),
            pl.col("has_gate").first(),
            pl.col("stored_gate_ok").first(),
        )
        .select(
            RUN_KEY,
            gate_failed_with_nonzero_anomaly(
                pl.col("has_gate"), pl.col("stored_gate_ok"), pl.col("nonzero_others")
            ).alias("anomaly"),
        )
        .filter(anomaly.is_not_null())
    )
    component_level = (
        rescored.filter(~pl.col("in_rubric") | ~pl.col("in_record"))
        .pipe(with_component_names, codes)
        .select(
            RUN_KEY,
            component_anomaly(pl.col("component"), pl.col("in_record"), pl.col("in_rubric")).alias(
                "anomaly"
            ),
        )
    )
    return (
        pl.concat([*run_level, gate_failed_with_nonzero, component_level])
        .group_by(RUN_KEY)
        .agg(anomaly.alias("anomalies"))
        .with_columns(pl.col("anomalies").list.sort())
    )


def run_anomaly_rules() -> list[pl.Expr]:
    """The anomalies judged on a run's own columns (with its totals joined)."""
    return [
        unknown_env_type_anomaly(pl.col("env_type"), pl.col("env_known")),
        weights_sum_anomaly(pl.col("record_weight_sum")),
        non_binary_gate_anomaly(pl.col("has_gate"), pl.col("gate_stored_subscore")),
        audit_mismatch_anomaly(
            pl.col("env_type"),
            pl.col("audit_stored_subscore"),
            pl.col("audit_recall"),
            pl.col("audit_precision"),
        ),
        audit_unverified_anomaly(
            pl.col("env_type"),
            pl.col("env_internal_failure"),
            pl.col("audit_recall"),
            pl.col("audit_precision"),
        ),
    ]
