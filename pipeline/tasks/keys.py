"""What task scoring reads and how its rows are keyed: the input columns, the rubric
as frames, integer keys for runs and components, and each run's context."""

from __future__ import annotations

import polars as pl

from pipeline.rubric import Rubric

RUN_COLUMNS = (
    "run_id",
    "env_type",
    "env_internal_failure",
    "allow_unbounded",
    "minimization_final_size",
    "minimization_minimal_size",
    "audit_recall",
    "audit_precision",
)
COMPONENT_COLUMNS = ("run_id", "component", "stored_subscore", "record_weight")
PENALTY_COLUMNS = ("run_id", "penalty", "value")

RUBRIC_WEIGHTS_SCHEMA = pl.Schema(
    {"env_type": pl.String, "component": pl.String, "weight": pl.Float64, "is_gate": pl.Boolean}
)
ENV_GATES_SCHEMA = pl.Schema(
    {"env_type": pl.String, "gate_component": pl.String, "env_known": pl.Boolean}
)


# --- rubric as frames -------------------------------------------------------------------------


def rubric_weights_frame(rubric: Rubric) -> pl.LazyFrame:
    """One row per (env_type, component) the rubric weighs, marking the env's gate."""
    rows = [
        (env_type, component, float(weight), component == env.gate)
        for env_type, env in rubric.task.envs.items()
        for component, weight in env.weights.items()
    ]
    return pl.LazyFrame(rows, schema=RUBRIC_WEIGHTS_SCHEMA, orient="row")


def env_gates_frame(rubric: Rubric) -> pl.LazyFrame:
    """One row per env type the rubric knows, with its gate component (null: ungated).

    CONTRACT 4: "exploit and detect are gated on defect_matching, patch on
    patch_verified, audit has none" -- as the rubric says, per env.
    """
    rows = [(env_type, env.gate, True) for env_type, env in rubric.task.envs.items()]
    return pl.LazyFrame(rows, schema=ENV_GATES_SCHEMA, orient="row")


# --- keys -------------------------------------------------------------------------------------
# Joins, group_bys and sorts on one integer column are several times cheaper than on
# strings, and every string column a join carries is copied into its output. So run_id
# is matched once, to number the runs, and component names once, to number them; the
# rows carry the numbers, and the names come back only where they are shown.

RUN_KEY = "run_key"
COMPONENT_CODE = "component_code"
ROW_KEY = "row_key"
# A row key packs (run_key, component_code), two UInt32, into one UInt64.
_ROW_KEY_SHIFT = pl.lit(1 << 32, dtype=pl.UInt64)


def run_key(run_id: pl.Expr) -> pl.Expr:
    """The run's rank among the distinct run_ids: equal run_ids share a key and keys
    ascend with run_id, so joining or sorting on it is the same as on run_id."""
    return run_id.rank("dense").cast(pl.UInt32)


def row_key(run: pl.Expr, component_code: pl.Expr) -> pl.Expr:
    """(run_key, component_code) as one UInt64, ordered like the pair: joining or sorting
    on it is the same as on (run_id, component)."""
    return run.cast(pl.UInt64) * _ROW_KEY_SHIFT + component_code.cast(pl.UInt64)


def component_codes(components: pl.LazyFrame, rubric: Rubric) -> pl.LazyFrame:
    """Every component name of the records or the rubric, numbered in sorted order (codes
    ascend with the names)."""
    names = pl.concat(
        [components.select("component"), rubric_weights_frame(rubric).select("component")]
    ).unique()
    return names.sort("component").with_columns(
        pl.int_range(pl.len(), dtype=pl.UInt32).alias(COMPONENT_CODE)
    )


def with_component_names(frame: pl.LazyFrame, codes: pl.LazyFrame) -> pl.LazyFrame:
    """``frame`` with the ``component`` name of its ``component_code``, in frame order."""
    return frame.join(codes, on=COMPONENT_CODE, how="left", maintain_order="left")


# --- each run's context --------------------------------------------------------------------


def run_context(runs: pl.LazyFrame, rubric: Rubric) -> pl.LazyFrame:
    """The run columns scoring needs, with the run's key, the env's gate and whether the
    rubric knows the env."""
    return (
        runs.select(RUN_COLUMNS)
        .with_columns(run_key(pl.col("run_id")).alias(RUN_KEY))
        .join(env_gates_frame(rubric), on="env_type", how="left")
        .with_columns(
            pl.col("env_known").fill_null(False),
            pl.col("gate_component").is_not_null().alias("has_gate"),
        )
    )
