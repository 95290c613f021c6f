"""Task scoring, per component: the record's and the rubric's components of each run,
rescored, the gate decisions, and the TaskComponentScore rows (CONTRACT 4)."""

from __future__ import annotations

import polars as pl

from pipeline.rubric import Rubric
from pipeline.tasks.formulas import (
    component_gated_out,
    contribution,
    gate_passed,
    rescored_subscore,
)
from pipeline.tasks.keys import (
    COMPONENT_CODE,
    COMPONENT_COLUMNS,
    ROW_KEY,
    RUN_KEY,
    row_key,
    rubric_weights_frame,
    with_component_names,
)

_SIZES = ["minimization_final_size", "minimization_minimal_size"]


def scored_components(
    context: pl.LazyFrame, components: pl.LazyFrame, codes: pl.LazyFrame, rubric: Rubric
) -> pl.LazyFrame:
    """Per run, the union of the record's components and the rubric's for its env type,
    with rescored subscores, before gating; keyed by ``row_key``, names left out.

    CONTRACT 4: "A rubric component missing from the record counts as subscore 0; a
    record component missing from the rubric gets weight 0". Each side is rescored while
    it still has the component name and the run's minimization sizes; a row on both
    sides takes the record's subscore (the rubric side has no stored subscore).
    Components whose run_id is not in the runs are left out: ingest lands a run and
    its components together.
    """
    keys = context.select(RUN_KEY, "run_id", "env_type", *_SIZES)

    def rescored(stored_subscore: pl.Expr) -> pl.Expr:
        return rescored_subscore(
            pl.col("component"),
            stored_subscore,
            pl.col("minimization_final_size"),
            pl.col("minimization_minimal_size"),
            rubric.task.minimization_multiple,
        ).alias("subscore")

    keyed = row_key(pl.col(RUN_KEY), pl.col(COMPONENT_CODE)).alias(ROW_KEY)
    recorded = (
        components.select(COMPONENT_COLUMNS)
        .join(keys, on="run_id", how="inner")
        .join(codes, on="component", how="left", nulls_equal=True)
        .select(
            keyed,
            RUN_KEY,
            COMPONENT_CODE,
            rescored(pl.col("stored_subscore")),
            "stored_subscore",
            pl.col("record_weight").alias("weight_as_graded"),
            pl.lit(True).alias("in_record"),
        )
    )
    # The rubric's few rows get their codes before they meet the runs.
    rubric_rows = rubric_weights_frame(rubric).join(codes, on="component", how="left")
    weighed = keys.join(rubric_rows, on="env_type", how="inner").select(
        keyed,
        RUN_KEY,
        COMPONENT_CODE,
        rescored(pl.lit(None, dtype=pl.Float64)),
        "weight",
        "is_gate",
        pl.lit(True).alias("in_rubric"),
    )
    return recorded.join(weighed, on=ROW_KEY, how="full", coalesce=True).select(
        ROW_KEY,
        *(
            pl.coalesce(column, f"{column}_right").alias(column)
            for column in (RUN_KEY, COMPONENT_CODE, "subscore")
        ),
        "stored_subscore",
        pl.col("weight").fill_null(0.0),
        "weight_as_graded",
        pl.col("is_gate").fill_null(False),
        pl.col("in_record").fill_null(False),
        pl.col("in_rubric").fill_null(False),
    )


def gate_decisions(context: pl.LazyFrame, gate_subscore: str, stored: str) -> pl.LazyFrame:
    """Whether each run's gate passed, under the rubric (rescored gate subscore) and as
    graded (stored gate subscore); both false for an ungated run."""
    return context.with_columns(
        (pl.col("has_gate") & gate_passed(pl.col(gate_subscore))).alias("gate_ok"),
        (pl.col("has_gate") & gate_passed(pl.col(stored))).alias("stored_gate_ok"),
    )


def rubric_term(subscore: pl.Expr, weight: pl.Expr) -> pl.Expr:
    """CONTRACT 4: "weighted = Σ subscore × rubric weight": one term, before gating."""
    return subscore * weight


def graded_term(stored_subscore: pl.Expr, weight_as_graded: pl.Expr) -> pl.Expr:
    """CONTRACT 4: score_as_graded uses "the record's own weights and stored subscores":
    one term, before gating (a missing side counts as 0)."""
    return stored_subscore.fill_null(0.0) * weight_as_graded.fill_null(0.0)


def run_gates(context: pl.LazyFrame, rescored: pl.LazyFrame) -> pl.LazyFrame:
    """The context with each run's gate row (subscores and terms) and gate decisions.

    A run has at most one gate row: its env names one gate and a record names each
    component once (TaskComponent is unique on run_id, component). So the gate row is
    found by a filter and one join on the run key, for both outputs.
    """
    gates = rescored.filter(pl.col("is_gate")).select(
        RUN_KEY,
        pl.col("subscore").alias("gate_subscore"),
        pl.col("stored_subscore").alias("gate_stored_subscore"),
        rubric_term(pl.col("subscore"), pl.col("weight")).alias("gate_term"),
        graded_term(pl.col("stored_subscore"), pl.col("weight_as_graded")).alias(
            "gate_term_as_graded"
        ),
    )
    return gate_decisions(
        context.join(gates, on=RUN_KEY, how="left"), "gate_subscore", "gate_stored_subscore"
    )


# TaskComponentScore's columns after run_id, rubric_id and component: those carried from
# the rescored rows, then the contributions computed here.
_CARRIED_COMPONENT_COLUMNS = (
    "subscore",
    "stored_subscore",
    "weight",
    "weight_as_graded",
    "is_gate",
    "in_record",
    "in_rubric",
    "gated_out",
)
_COMPONENT_SCORE_TAIL = (*_CARRIED_COMPONENT_COLUMNS, "contribution", "contribution_as_graded")


def component_scores(
    rescored: pl.LazyFrame, gates: pl.LazyFrame, codes: pl.LazyFrame, rubric: Rubric
) -> pl.LazyFrame:
    """TaskComponentScore rows, sorted by run_id and component: each component gated or
    not, and what it contributed; ``gates`` is ``run_gates``."""
    gate_flags = gates.select(
        RUN_KEY, "run_id", "has_gate", "gate_ok", "stored_gate_ok", "env_internal_failure"
    )
    scored = ~pl.col("env_internal_failure")
    # A grader error has no gate decision to report: nothing of it is gated out.
    gated_out = scored & component_gated_out(
        pl.col("is_gate"), pl.col("has_gate"), pl.col("gate_ok")
    )
    gated_out_as_graded = component_gated_out(
        pl.col("is_gate"), pl.col("has_gate"), pl.col("stored_gate_ok")
    )
    scored_rows = (
        rescored.join(gate_flags, on=RUN_KEY, how="left")
        .with_columns(gated_out.alias("gated_out"))
        .select(
            ROW_KEY,
            COMPONENT_CODE,
            "run_id",
            pl.lit(rubric.rubric_id).alias("rubric_id"),
            *_CARRIED_COMPONENT_COLUMNS,
            pl.when(scored)
            .then(contribution(pl.col("subscore"), pl.col("weight"), pl.col("gated_out")))
            .alias("contribution"),
            # CONTRACT 4: "score_as_graded is the same computation with the record's own
            # weights and stored subscores (gate still applied)".
            pl.when(scored)
            .then(
                contribution(
                    pl.col("stored_subscore").fill_null(0.0),
                    pl.col("weight_as_graded").fill_null(0.0),
                    gated_out_as_graded,
                )
            )
            .alias("contribution_as_graded"),
        )
    )
    # The row key orders like (run_id, component), so the names are looked up after it.
    return with_component_names(scored_rows.sort(ROW_KEY), codes).select(
        "run_id", "rubric_id", "component", *_COMPONENT_SCORE_TAIL
    )
