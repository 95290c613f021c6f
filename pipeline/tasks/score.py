"""Task-grade scoring: CONTRACT section 4, as lazy Polars over the whole table.

Seed 000: "There is no single overall score field. The score is the sum of
each subscore multiplied by its weight, with any penalties applied." So every
total here is recomputed from the stored parts under a rubric; the record's
own weights are only used for ``*_as_graded``, to make a rescoring visible.

The plan is joins and group_by aggregations only (no window functions, no
``collect``), so the caller can run it with ``collect(engine="streaming")``
over tens of millions of component rows. Rows are keyed by integers standing for
run_id and (run_id, component) (see "keys"), and every sum adds its terms in a
fixed order, so both engines give the same bits on every run. Outputs are sorted
by their keys so that rescoring the same input under the same rubric writes
identical files.

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

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import polars as pl

from pipeline.rubric import Rubric
from pipeline.tasks.formulas import (
    AUDIT_COMPONENT,
    STATUS_GRADER_ERROR,
    STATUS_OUT_OF_RANGE,
    STATUS_SCORED,
    TOTAL_COLUMNS,
    audit_mismatch_anomaly,
    audit_unverified_anomaly,
    component_anomaly,
    component_gated_out,
    contribution,
    gate_failed_with_nonzero_anomaly,
    gate_passed,
    non_binary_gate_anomaly,
    out_of_range_totals,
    penalty_total,
    rescored_subscore,
    task_passed,
    task_score,
    unknown_env_type_anomaly,
    weights_sum_anomaly,
    with_out_of_range_anomaly,
)

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
# The score tables whose value rules (status, weights and penalty totals >= 0) follow from
# the landed tables' checks and the rubric's, and which come out sorted by their unique
# keys: before a write they need only ``schemas.checked_by_plan``.
PLAN_CHECKED = frozenset({"task_scores", "task_component_scores"})


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


# --- frames -----------------------------------------------------------------------------------


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


# A compare-exchange network that sorts four values (Knuth, TAOCP vol. 3, 5.3.4).
_SORT_FOUR = ((0, 1), (2, 3), (0, 2), (1, 3), (1, 2))
_NETWORK_WIDTH = 4


def repeatable_sum(values: pl.Expr) -> pl.Expr:
    """Σ of a list's values (nulls skipped), added in ascending order.

    Float addition is not associative, and neither a hash join's output order nor a
    streaming group_by's arrival order is fixed: a plain ``sum`` can differ in the last
    bit between two runs of the same plan. Adding the few terms of each run in ascending
    order makes a rescoring bit-for-bit repeatable. ``with_repeatable_sums`` computes the
    same floats for whole columns, cheaply.
    """
    return values.list.sort().list.sum()


def with_repeatable_sums(frame: pl.LazyFrame, columns: Sequence[str]) -> pl.LazyFrame:
    """Each list column of ``columns`` replaced by its ``repeatable_sum``, bit for bit.

    Sorting 200k short lists one by one costs more than everything else in the totals,
    so only the lists that need it are sorted:

    - two terms or fewer need no order (a + b == b + a);
    - nor do terms that are all zeros (their sum is a zero in any order);
    - three or four terms, without nulls or NaN, are put in order by a sorting network
      of min/max over their elements, one column per element (a three-term list gets
      +inf as its fourth). Each min or max returns one of its inputs, so the order is the
      sort's and the sum the same float; min and max may both return the same one of
      0.0 and -0.0, but swapping the signs of zero terms can only change a zero sum,
      and one with a nonzero term is +0.0 either way.

    The rest (longer lists, or with nulls or NaN, where min/max and sorting disagree)
    are sorted. Only the sign of a zero sum may differ, and only with -0.0 terms or an
    empty list: ``list.sum`` itself starts from -0.0 or 0.0 depending on whether the
    column holds nulls anywhere, so that sign was never a property of the run.
    """
    width = _NETWORK_WIDTH
    slots = {column: [f"_{column}_{index}" for index in range(width)] for column in columns}
    staged: list[pl.Expr] = []
    for column, names in slots.items():
        values, length = pl.col(column), pl.col(column).list.len()
        items = [values.list.get(index, null_on_oob=True) for index in range(width)]
        pad = pl.when(length == width - 1).then(pl.lit(float("inf"))).otherwise(items[-1])
        staged += [item.alias(name) for item, name in zip([*items[:-1], pad], names, strict=True)]
        in_any_order = (length <= 2) | ((values.list.min() == 0.0) & (values.list.max() == 0.0))
        networked = (
            length.is_between(width - 1, width)
            & pl.all_horizontal(item.is_not_null() for item in items[:-1])
            & ((length == width - 1) | items[-1].is_not_null())
            & ~values.list.sum().is_nan()
        )
        staged += [
            in_any_order.fill_null(False).alias(f"_{column}_any_order"),
            networked.alias(f"_{column}_networked"),
        ]
    frame = frame.with_columns(staged)
    for low, high in _SORT_FOUR:
        frame = frame.with_columns(
            exchanged
            for names in slots.values()
            for exchanged in (
                pl.min_horizontal(names[low], names[high]).alias(names[low]),
                pl.max_horizontal(names[low], names[high]).alias(names[high]),
            )
        )
    sums: list[pl.Expr] = []
    flags: list[str] = []
    for column, names in slots.items():
        values, length = pl.col(column), pl.col(column).list.len()
        any_order, networked = pl.col(f"_{column}_any_order"), pl.col(f"_{column}_networked")
        first, second, third, fourth = (pl.col(name) for name in names)
        # x + -0.0 == x for every float x: a three-term list adds nothing as its fourth.
        last = pl.when(length == width).then(fourth).otherwise(pl.lit(-0.0))
        sums.append(
            pl.when(any_order)
            .then(values.list.sum())
            .when(networked)
            .then(((first + second) + third) + last)
            .otherwise(repeatable_sum(pl.when(~any_order & ~networked).then(values)))
            .alias(column)
        )
        flags += [f"_{column}_any_order", f"_{column}_networked"]
    temporary = [name for names in slots.values() for name in names]
    return frame.with_columns(sums).drop(*temporary, *flags)


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
        .pipe(with_repeatable_sums, sums)
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
        .pipe(with_repeatable_sums, ["penalty_sum"])
    )


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


def _scored(expr: pl.Expr) -> pl.Expr:
    # CONTRACT 4: a grader error has "no score, excluded from every rate and mean".
    return pl.when(~pl.col("env_internal_failure")).then(expr)


def _finite(expr: pl.Expr) -> pl.Expr:
    return pl.when(pl.col("out_of_range").is_null()).then(expr)


def _run_anomaly_rules() -> list[pl.Expr]:
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
    anomalies = anomaly_lists(with_totals, rescored, codes, _run_anomaly_rules())
    return (
        _with_totals(with_totals.join(anomalies, on=RUN_KEY, how="left"), rubric)
        .select(_score_row(rubric))
        .sort(RUN_KEY)
        .drop(RUN_KEY)
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
    # Each of these feeds several branches that read different columns, which hides the
    # common subplans from the optimiser: cached explicitly, each is computed once.
    context = run_context(runs, rubric).cache()
    codes = component_codes(components, rubric).cache()
    rescored = scored_components(context, components, codes, rubric).cache()
    gates = run_gates(context, rescored).cache()
    return TaskScoring(
        runs=run_scores(gates, rescored, codes, penalties.select(PENALTY_COLUMNS), rubric),
        components=component_scores(rescored, gates, codes, rubric),
    )
