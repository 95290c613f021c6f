"""Task-grade scoring: CONTRACT section 4, as lazy Polars over the whole table.

Seed 000: "There is no single overall score field. The score is the sum of
each subscore multiplied by its weight, with any penalties applied." So every
total here is recomputed from the stored parts under a rubric; the record's
own weights are only used for ``*_as_graded``, to make a rescoring visible.

The plan is joins and group_by aggregations only (no window functions, no
``collect``), so the caller can run it with ``collect(engine="streaming")``
over tens of millions of component rows. Outputs are sorted by their keys so
that rescoring the same input under the same rubric writes identical files.

Decisions where CONTRACT is silent (also in the README):

- When a record carries ``metadata.minimization`` sizes, the ``minimization``
  subscore is recomputed from them even if the stored subscore is missing
  (the raw sizes are the stored part); the missing component is still flagged.
- A grader error keeps its component rows (subscores shown) but nothing
  contributes and nothing is gated out: its grader broke, so there is no gate
  decision to report.
- A component of an env type the rubric does not know is also flagged
  ``unknown_component``: it has no rubric weight, like any unknown component.
- ``gate_failed_with_nonzero`` and ``non_binary_gate`` describe the record, so
  they look at the stored gate subscore.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import polars as pl

from pipeline.expr import clamp, lerp01
from pipeline.rubric import Rubric

STATUS_SCORED = "scored"
STATUS_GRADER_ERROR = "grader_error"

# CONTRACT 2: "A patch record may carry, in metadata.minimization, the raw sizes".
MINIMIZATION_COMPONENT = "minimization"
# CONTRACT 2: "Audit records carry one component, named audit".
AUDIT_ENV = "audit"
AUDIT_COMPONENT = "audit"

# CONTRACT 4: "record weights not summing to 1 (±1e-6)".
WEIGHT_SUM_TOLERANCE = 1e-6
# CONTRACT 4: "an audit subscore ≠ recall × precision (±1e-6)".
AUDIT_TOLERANCE = 1e-6
# CONTRACT 4: "a non-binary gate subscore": the gate is all or nothing.
BINARY_GATE_VALUES = (0.0, 1.0)

# Anomaly codes: stable short names, detail after a colon.
ANOMALY_WEIGHTS_SUM = "weights_sum"
ANOMALY_GATE_FAILED_WITH_NONZERO = "gate_failed_with_nonzero"
ANOMALY_NON_BINARY_GATE = "non_binary_gate"
ANOMALY_AUDIT_MISMATCH = "audit_mismatch"
ANOMALY_MISSING_COMPONENT = "missing_component"
ANOMALY_UNKNOWN_COMPONENT = "unknown_component"
ANOMALY_UNKNOWN_ENV_TYPE = "unknown_env_type"

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
_EMPTY_ANOMALIES = pl.lit([], dtype=pl.List(pl.String))


@dataclass(frozen=True)
class TaskScoring:
    """Scores under one rubric: ``runs`` is TaskScore, ``components`` TaskComponentScore."""

    runs: pl.LazyFrame
    components: pl.LazyFrame


class ScoringInputError(ValueError):
    """An input frame lacks a column scoring needs."""


def _require_columns(frame: pl.LazyFrame, name: str, columns: Iterable[str]) -> None:
    present = set(frame.collect_schema().names())
    missing = [column for column in columns if column not in present]
    if missing:
        raise ScoringInputError(f"score_tasks: {name} frame lacks column(s) {', '.join(missing)}")


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


# --- formulas ---------------------------------------------------------------------------------


def minimization_subscore(final: pl.Expr, minimal: pl.Expr, multiple: float) -> pl.Expr:
    """CONTRACT 4: "the rescored minimization subscore is
    lerp01(final_size / minimal_size, 1, minimization_multiple)"."""
    return lerp01(final / minimal, 1.0, multiple)


def rescored_subscore(
    component: pl.Expr,
    stored_subscore: pl.Expr,
    final: pl.Expr,
    minimal: pl.Expr,
    multiple: float,
) -> pl.Expr:
    """CONTRACT 4: "when metadata.minimization has final_size and minimal_size, the
    rescored minimization subscore is lerp01(...); otherwise the stored subscore is
    used" and "A rubric component missing from the record counts as subscore 0"."""
    has_sizes = final.is_not_null() & minimal.is_not_null()
    return (
        pl.when((component == MINIMIZATION_COMPONENT) & has_sizes)
        .then(minimization_subscore(final, minimal, multiple))
        .otherwise(stored_subscore.fill_null(0.0))
    )


def gate_passed(gate_subscore: pl.Expr) -> pl.Expr:
    """CONTRACT 4: "The gate passes when its subscore > 0" (a missing gate counts as 0)."""
    return gate_subscore.fill_null(0.0) > 0.0


def component_gated_out(is_gate: pl.Expr, has_gate: pl.Expr, gate_ok: pl.Expr) -> pl.Expr:
    """Seed 000: "The last three are gated on the first: an input that does not
    trigger the defect scores zero on all four"; CONTRACT 4: "When it fails, every
    other component contributes 0 (gated_out = true)"."""
    return has_gate & ~gate_ok & ~is_gate


def contribution(subscore: pl.Expr, weight: pl.Expr, gated_out: pl.Expr) -> pl.Expr:
    """CONTRACT 4: "weighted = Σ subscore × rubric weight (after gating)": one term."""
    return pl.when(gated_out).then(pl.lit(0.0)).otherwise(subscore * weight)


def penalty_total(penalty_sum: pl.Expr, penalty_scale: float) -> pl.Expr:
    """CONTRACT 4: "penalty_total = Σ penalties × penalty_scale"."""
    return penalty_sum.fill_null(0.0) * penalty_scale


def task_score(weighted: pl.Expr, penalty: pl.Expr, allow_unbounded: pl.Expr) -> pl.Expr:
    """CONTRACT 4: "score = clamp(weighted − penalty_total), unclamped when allow_unbounded"."""
    raw = weighted - penalty
    return pl.when(allow_unbounded).then(raw).otherwise(clamp(raw))


def task_passed(
    score: pl.Expr, has_gate: pl.Expr, gate_ok: pl.Expr, failure_threshold: float | None
) -> pl.Expr:
    """CONTRACT 4: "passed: the gate passed (where there is one) and, when the rubric
    sets failure_threshold, score ≥ failure_threshold; for audit without a threshold,
    score > 0" (any ungated env is treated like audit)."""
    gate_part = ~has_gate | gate_ok
    if failure_threshold is not None:
        return gate_part & (score >= failure_threshold)
    return gate_part & (has_gate | (score > 0.0))


def anomaly(code: str, detail: pl.Expr, condition: pl.Expr) -> pl.Expr:
    """``code:detail`` where ``condition`` holds, else null (dropped from the list)."""
    return pl.when(condition).then(pl.concat_str([pl.lit(f"{code}:"), detail.cast(pl.String)]))


def weights_sum_anomaly(record_weight_sum: pl.Expr) -> pl.Expr:
    """CONTRACT 4: "record weights not summing to 1 (±1e-6)"."""
    total = record_weight_sum.fill_null(0.0)
    return anomaly(ANOMALY_WEIGHTS_SUM, total, (total - 1.0).abs() > WEIGHT_SUM_TOLERANCE)


def gate_failed_with_nonzero_anomaly(
    has_gate: pl.Expr, stored_gate_ok: pl.Expr, nonzero_others: pl.Expr
) -> pl.Expr:
    """CONTRACT 4: "a gate that failed while other stored subscores are > 0";
    ``nonzero_others`` is the list of those components' names."""
    names = nonzero_others.list.sort().list.join(",").fill_null("")
    return anomaly(
        ANOMALY_GATE_FAILED_WITH_NONZERO, names, has_gate & ~stored_gate_ok & (names != "")
    )


def non_binary_gate_anomaly(has_gate: pl.Expr, gate_stored_subscore: pl.Expr) -> pl.Expr:
    """CONTRACT 4: "a non-binary gate subscore" (seed 000: defect_matching is "All or nothing")."""
    condition = (
        has_gate
        & gate_stored_subscore.is_not_null()
        & ~gate_stored_subscore.is_in(list(BINARY_GATE_VALUES))
    )
    return anomaly(ANOMALY_NON_BINARY_GATE, gate_stored_subscore, condition)


def audit_mismatch_anomaly(
    env_type: pl.Expr, audit_subscore: pl.Expr, recall: pl.Expr, precision: pl.Expr
) -> pl.Expr:
    """CONTRACT 4: "an audit subscore ≠ recall × precision (±1e-6)"; seed 000: audit
    reports "a single component: recall multiplied by precision"."""
    expected = recall * precision
    condition = (
        (env_type == AUDIT_ENV)
        & audit_subscore.is_not_null()
        & expected.is_not_null()
        & ((audit_subscore - expected).abs() > AUDIT_TOLERANCE)
    )
    detail = pl.concat_str(
        [audit_subscore.cast(pl.String), pl.lit(" vs "), expected.cast(pl.String)]
    )
    return anomaly(ANOMALY_AUDIT_MISMATCH, detail, condition)


def component_anomaly(component: pl.Expr, in_record: pl.Expr, in_rubric: pl.Expr) -> pl.Expr:
    """CONTRACT 4: "A rubric component missing from the record ... a record component
    missing from the rubric ... Both are flagged"."""
    return (
        pl.when(~in_rubric)
        .then(pl.concat_str([pl.lit(f"{ANOMALY_UNKNOWN_COMPONENT}:"), component]))
        .when(~in_record)
        .then(pl.concat_str([pl.lit(f"{ANOMALY_MISSING_COMPONENT}:"), component]))
    )


def unknown_env_type_anomaly(env_type: pl.Expr, env_known: pl.Expr) -> pl.Expr:
    """A run whose env type the rubric has no weights for: every weight is 0, flagged."""
    return anomaly(ANOMALY_UNKNOWN_ENV_TYPE, env_type, ~env_known)


# --- frames -----------------------------------------------------------------------------------


def run_context(runs: pl.LazyFrame, rubric: Rubric) -> pl.LazyFrame:
    """The run columns scoring needs, with the env's gate and whether the rubric knows the env."""
    return (
        runs.select(RUN_COLUMNS)
        .join(env_gates_frame(rubric), on="env_type", how="left")
        .with_columns(
            pl.col("env_known").fill_null(False),
            pl.col("gate_component").is_not_null().alias("has_gate"),
        )
    )


_UNION_KEYS = ["run_id", "env_type", "component"]
_SIZES = ["minimization_final_size", "minimization_minimal_size"]


def component_union(
    context: pl.LazyFrame, components: pl.LazyFrame, rubric: Rubric
) -> pl.LazyFrame:
    """Per run, the union of the record's components and the rubric's for its env type.

    CONTRACT 4: "A rubric component missing from the record counts as subscore 0; a
    record component missing from the rubric gets weight 0". The raw minimization
    sizes ride along on both sides so no second join with the runs is needed.
    Components whose run_id is not in the runs are left out: ingest lands a run and
    its components together.
    """
    keys = context.select("run_id", "env_type", *_SIZES)
    recorded = components.select(COMPONENT_COLUMNS).join(keys, on="run_id", how="inner")
    weighed = keys.join(rubric_weights_frame(rubric), on="env_type", how="inner")
    return (
        recorded.with_columns(pl.lit(True).alias("in_record"))
        .join(
            weighed.with_columns(pl.lit(True).alias("in_rubric")),
            on=_UNION_KEYS,
            how="full",
            coalesce=True,
        )
        .with_columns(
            *(pl.coalesce(size, f"{size}_right").alias(size) for size in _SIZES),
            pl.col("in_record").fill_null(False),
            pl.col("in_rubric").fill_null(False),
            pl.col("is_gate").fill_null(False),
            pl.col("weight").fill_null(0.0),
        )
    )


def scored_components(
    context: pl.LazyFrame, components: pl.LazyFrame, rubric: Rubric
) -> pl.LazyFrame:
    """Component rows with rescored subscores, before gating."""
    return component_union(context, components, rubric).select(
        "run_id",
        "component",
        rescored_subscore(
            pl.col("component"),
            pl.col("stored_subscore"),
            pl.col("minimization_final_size"),
            pl.col("minimization_minimal_size"),
            rubric.task.minimization_multiple,
        ).alias("subscore"),
        "stored_subscore",
        "weight",
        pl.col("record_weight").alias("weight_as_graded"),
        "is_gate",
        "in_record",
        "in_rubric",
    )


def gate_decisions(context: pl.LazyFrame, gate_subscore: str, stored: str) -> pl.LazyFrame:
    """Whether each run's gate passed, under the rubric (rescored gate subscore) and as
    graded (stored gate subscore); both false for an ungated run."""
    return context.with_columns(
        (pl.col("has_gate") & gate_passed(pl.col(gate_subscore))).alias("gate_ok"),
        (pl.col("has_gate") & gate_passed(pl.col(stored))).alias("stored_gate_ok"),
    )


def component_scores(rescored: pl.LazyFrame, context: pl.LazyFrame, rubric: Rubric) -> pl.LazyFrame:
    """TaskComponentScore rows: each component gated or not, and what it contributed."""
    gates = rescored.filter(pl.col("is_gate")).select(
        "run_id",
        pl.col("subscore").alias("gate_subscore"),
        pl.col("stored_subscore").alias("gate_stored_subscore"),
    )
    gate_flags = gate_decisions(
        context.join(gates, on="run_id", how="left"), "gate_subscore", "gate_stored_subscore"
    ).select("run_id", "has_gate", "gate_ok", "stored_gate_ok", "env_internal_failure")
    scored = ~pl.col("env_internal_failure")
    # A grader error has no gate decision to report: nothing of it is gated out.
    gated_out = scored & component_gated_out(
        pl.col("is_gate"), pl.col("has_gate"), pl.col("gate_ok")
    )
    gated_out_as_graded = component_gated_out(
        pl.col("is_gate"), pl.col("has_gate"), pl.col("stored_gate_ok")
    )
    return (
        rescored.join(gate_flags, on="run_id", how="left")
        .with_columns(gated_out.alias("gated_out"))
        .select(
            "run_id",
            pl.lit(rubric.rubric_id).alias("rubric_id"),
            "component",
            "subscore",
            "stored_subscore",
            "weight",
            "weight_as_graded",
            "is_gate",
            "in_record",
            "in_rubric",
            "gated_out",
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


def repeatable_sum(values: pl.Expr) -> pl.Expr:
    """Σ of a group's values (nulls skipped, 0 when none), added in ascending order.

    Float addition is not associative, and neither a hash join's output order nor a
    streaming group_by's arrival order is fixed: a plain ``sum`` can differ in the last
    bit between two runs of the same plan. Sorting the few terms of each run first makes
    a rescoring bit-for-bit repeatable (a plain ``sort().sum()`` would be optimised away).
    """
    return values.implode().list.sort().list.sum()


def component_totals(rescored: pl.LazyFrame) -> pl.LazyFrame:
    """Per run, from the rows before gating: the gate's subscores, the gate's term and the
    sum of the other terms (so gating is applied per run, without joining the gate back
    onto every row), and what the run-level anomalies need."""
    gate = pl.col("is_gate")
    term = pl.col("subscore") * pl.col("weight")
    term_as_graded = pl.col("stored_subscore").fill_null(0.0) * pl.col(
        "weight_as_graded"
    ).fill_null(0.0)
    other_nonzero = ~gate & (pl.col("stored_subscore") > 0.0)
    return rescored.group_by("run_id").agg(
        pl.col("subscore").filter(gate).first().alias("gate_subscore"),
        pl.col("stored_subscore").filter(gate).first().alias("gate_stored_subscore"),
        term.filter(gate).first().alias("gate_term"),
        repeatable_sum(term.filter(~gate)).alias("other_terms"),
        term_as_graded.filter(gate).first().alias("gate_term_as_graded"),
        repeatable_sum(term_as_graded.filter(~gate)).alias("other_terms_as_graded"),
        repeatable_sum(pl.col("weight_as_graded")).alias("record_weight_sum"),
        # Sorted and joined per run later, on lists: far cheaper than inside the group_by.
        pl.col("component").filter(other_nonzero).alias("nonzero_others"),
        pl.col("stored_subscore")
        .filter(pl.col("component") == AUDIT_COMPONENT)
        .first()
        .alias("audit_stored_subscore"),
        component_anomaly(pl.col("component"), pl.col("in_record"), pl.col("in_rubric"))
        .drop_nulls()
        .alias("component_anomalies"),
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
    return penalties.group_by("run_id").agg(repeatable_sum(pl.col("value")).alias("penalty_sum"))


def run_scores(
    context: pl.LazyFrame,
    totals: pl.LazyFrame,
    penalties: pl.LazyFrame,
    rubric: Rubric,
) -> pl.LazyFrame:
    """TaskScore rows: totals, gate, score, passed and anomalies per run."""
    scored = ~pl.col("env_internal_failure")
    penalty = pl.col("penalty_total")

    def when_scored(expr: pl.Expr) -> pl.Expr:
        # CONTRACT 4: a grader error has "no score, excluded from every rate and mean".
        return pl.when(scored).then(expr)

    run_anomalies = pl.concat_list(
        unknown_env_type_anomaly(pl.col("env_type"), pl.col("env_known")),
        weights_sum_anomaly(pl.col("record_weight_sum")),
        gate_failed_with_nonzero_anomaly(
            pl.col("has_gate"), pl.col("stored_gate_ok"), pl.col("nonzero_others")
        ),
        non_binary_gate_anomaly(pl.col("has_gate"), pl.col("gate_stored_subscore")),
        audit_mismatch_anomaly(
            pl.col("env_type"),
            pl.col("audit_stored_subscore"),
            pl.col("audit_recall"),
            pl.col("audit_precision"),
        ),
        pl.col("component_anomalies").fill_null(_EMPTY_ANOMALIES),
    )
    with_totals = context.join(totals, on="run_id", how="left").join(
        penalty_sums(penalties), on="run_id", how="left"
    )
    return (
        gate_decisions(with_totals, "gate_subscore", "gate_stored_subscore")
        .with_columns(
            when_scored(
                gated_weighted(
                    pl.col("gate_term"),
                    pl.col("other_terms"),
                    pl.col("has_gate"),
                    pl.col("gate_ok"),
                )
            ).alias("weighted"),
            when_scored(
                gated_weighted(
                    pl.col("gate_term_as_graded"),
                    pl.col("other_terms_as_graded"),
                    pl.col("has_gate"),
                    pl.col("stored_gate_ok"),
                )
            ).alias("weighted_as_graded"),
            when_scored(penalty_total(pl.col("penalty_sum"), rubric.task.penalty_scale)).alias(
                "penalty_total"
            ),
        )
        .with_columns(
            task_score(pl.col("weighted"), penalty, pl.col("allow_unbounded")).alias("score"),
            task_score(pl.col("weighted_as_graded"), penalty, pl.col("allow_unbounded")).alias(
                "score_as_graded"
            ),
        )
        .select(
            "run_id",
            pl.lit(rubric.rubric_id).alias("rubric_id"),
            pl.when(pl.col("env_internal_failure"))
            .then(pl.lit(STATUS_GRADER_ERROR))
            .otherwise(pl.lit(STATUS_SCORED))
            .alias("status"),
            "gate_component",
            when_scored(pl.when(pl.col("has_gate")).then(pl.col("gate_ok"))).alias("gate_passed"),
            when_scored(pl.col("has_gate") & ~pl.col("gate_ok")).alias("gated_out"),
            "weighted",
            "penalty_total",
            "score",
            "weighted_as_graded",
            "score_as_graded",
            when_scored(
                task_passed(
                    pl.col("score"),
                    pl.col("has_gate"),
                    pl.col("gate_ok"),
                    rubric.task.failure_threshold,
                )
            ).alias("passed"),
            run_anomalies.list.drop_nulls().list.sort().alias("anomalies"),
        )
    )


def score_tasks(
    runs: pl.LazyFrame,
    components: pl.LazyFrame,
    penalties: pl.LazyFrame,
    rubric: Rubric,
) -> TaskScoring:
    """Score every run under ``rubric`` (CONTRACT section 4); nothing is collected here.

    ``runs`` and ``components`` share the rescored component rows: collect them
    together (``pl.collect_all``) to compute those once.
    """
    _require_columns(runs, "runs", RUN_COLUMNS)
    _require_columns(components, "components", COMPONENT_COLUMNS)
    _require_columns(penalties, "penalties", PENALTY_COLUMNS)
    context = run_context(runs, rubric)
    rescored = scored_components(context, components, rubric)
    run_rows = run_scores(
        context, component_totals(rescored), penalties.select(PENALTY_COLUMNS), rubric
    )
    return TaskScoring(
        runs=run_rows.sort("run_id"),
        components=component_scores(rescored, context, rubric).sort("run_id", "component"),
    )
