"""The formulas of CONTRACT section 4 as named Polars expressions, and the anomalies a
scored run is flagged with; ``score_tasks`` (``components``, ``totals``, ``anomalies``)
applies them to the landed tables.
"""

from __future__ import annotations

import polars as pl

from pipeline.core.expr import clamp, lerp01
from pipeline.tasks.fields import AUDIT_ENV

STATUS_SCORED = "scored"
STATUS_GRADER_ERROR = "grader_error"
# A run whose totals are not finite (finite parts, a sum or product past a double) or so
# large that a mean over many runs could overflow has no score: like a grader error it is
# kept out of every mean and rate, and flagged.
STATUS_OUT_OF_RANGE = "total_out_of_range"
# The totals a run stores; each must be finite and within ±TOTAL_LIMIT (a score is a
# fraction; only allow_unbounded with huge penalties comes near it).
TOTAL_COLUMNS = ("weighted", "penalty_total", "score", "weighted_as_graded", "score_as_graded")
TOTAL_LIMIT = 1e12

# CONTRACT 2: "A patch record may carry, in metadata.minimization, the raw sizes".
MINIMIZATION_COMPONENT = "minimization"
# CONTRACT 2: "Audit records carry one component, named audit".
AUDIT_COMPONENT = "audit"

# CONTRACT 4: "record weights not summing to 1 (±1e-6)".
RECORD_WEIGHT_SUM_TOLERANCE = 1e-6
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
ANOMALY_TOTAL_OUT_OF_RANGE = "total_out_of_range"
ANOMALY_AUDIT_UNVERIFIED = "audit_unverified"


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
    return anomaly(ANOMALY_WEIGHTS_SUM, total, (total - 1.0).abs() > RECORD_WEIGHT_SUM_TOLERANCE)


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


def audit_unverified_anomaly(
    env_type: pl.Expr, env_internal_failure: pl.Expr, recall: pl.Expr, precision: pl.Expr
) -> pl.Expr:
    """An audit whose metadata lacks recall or precision (CONTRACT 2 says it has both): its
    subscore cannot be checked against their product; the detail names what is missing."""
    missing = pl.concat_list(
        [
            pl.when(recall.is_null()).then(pl.lit("recall")),
            pl.when(precision.is_null()).then(pl.lit("precision")),
        ]
    ).list.drop_nulls()
    condition = (env_type == AUDIT_ENV) & ~env_internal_failure & (missing.list.len() > 0)
    return anomaly(ANOMALY_AUDIT_UNVERIFIED, missing.list.join(","), condition)


def component_anomaly(component: pl.Expr, in_record: pl.Expr, in_rubric: pl.Expr) -> pl.Expr:
    """CONTRACT 4: "A rubric component missing from the record ... a record component
    missing from the rubric ... Both are flagged"."""
    return (
        pl.when(~in_rubric)
        .then(pl.concat_str([pl.lit(f"{ANOMALY_UNKNOWN_COMPONENT}:"), component]))
        .when(~in_record)
        .then(pl.concat_str([pl.lit(f"{ANOMALY_MISSING_COMPONENT}:"), component]))
    )


def out_of_range_totals() -> pl.Expr:
    """The names of a run's TOTAL_COLUMNS that are not finite (NaN or ±inf) or beyond
    ±TOTAL_LIMIT, joined by commas; null when every one is in range (or null)."""
    names = pl.concat_list(
        [
            pl.when(~pl.col(c).is_finite() | (pl.col(c).abs() > TOTAL_LIMIT)).then(pl.lit(c))
            for c in TOTAL_COLUMNS
        ]
    ).list.drop_nulls()
    return pl.when(names.list.len() > 0).then(names.list.join(","))


def with_out_of_range_anomaly(anomalies: pl.Expr) -> pl.Expr:
    """``anomalies`` (sorted) with ``total_out_of_range:<columns>`` added where a total is
    out of range (``out_of_range_totals`` as column ``out_of_range``)."""
    bad = pl.col("out_of_range")
    flagged = anomalies.list.concat(
        pl.concat_list(anomaly(ANOMALY_TOTAL_OUT_OF_RANGE, bad, bad.is_not_null()))
    ).list.sort()
    return pl.when(bad.is_not_null()).then(flagged).otherwise(anomalies)


def unknown_env_type_anomaly(env_type: pl.Expr, env_known: pl.Expr) -> pl.Expr:
    """A run whose env type the rubric has no weights for: every weight is 0, flagged."""
    return anomaly(ANOMALY_UNKNOWN_ENV_TYPE, env_type, ~env_known)
