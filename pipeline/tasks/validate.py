"""Task-grade records checked against CONTRACT sections 2 and 8.

Each rule is one Polars expression yielding a reason (or null) per record; a
record lands only when every rule yields null, and a quarantined record
carries every reason it failed, so one fix-up pass is enough.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import duckdb
import polars as pl

from pipeline.core.sql import connect, in_batches, run_sql

NUMBER_TYPES = ("UBIGINT", "BIGINT", "DOUBLE")
RUN_ID_MAX_CHARS = 256
AUDIT_ENV = "audit"
# Above this, a sum of a record's parts could overflow a double: only records holding such
# a value have their parts summed (any sum of values below it stays finite).
HUGE_PART_VALUE = 1e290


@dataclass(frozen=True)
class TaskRecords:
    """Records that passed, in landing shape, and the reasons of those that did not."""

    fields: pl.DataFrame  # one row per accepted record (row_nr + typed fields)
    parts: pl.DataFrame  # row_nr, part, name, value for accepted records
    metadata: pl.DataFrame  # row_nr, key, value, value_num for accepted records
    rejected: pl.DataFrame  # row_nr, reason


def _type_name(column: str) -> pl.Expr:
    return pl.col(f"{column}__type").fill_null("missing")


def _required_string(column: str) -> pl.Expr:
    kind = pl.col(f"{column}__type")
    return (
        pl.when(kind.is_null())
        .then(pl.lit(f"missing required field `{column}`"))
        .when(kind != "VARCHAR")
        .then(pl.format("field `{}` must be a string, got {}", pl.lit(column), _type_name(column)))
    )


def _optional_string(column: str) -> pl.Expr:
    kind = pl.col(f"{column}__type")
    return pl.when(kind.is_not_null() & ~kind.is_in(["VARCHAR", "NULL"])).then(
        pl.format(
            "field `{}` must be a string when given, got {}", pl.lit(column), _type_name(column)
        )
    )


def _optional_number(column: str, label: str, *, positive: bool = False) -> pl.Expr:
    kind = pl.col(f"{column}__type")
    value = pl.col(column)
    bound = value <= 0 if positive else value < 0
    rule = "> 0" if positive else ">= 0"
    return (
        pl.when(kind.is_not_null() & ~kind.is_in([*NUMBER_TYPES, "NULL"]))
        .then(pl.format("field `{}` must be a number, got {}", pl.lit(label), _type_name(column)))
        .when(kind.is_in(NUMBER_TYPES) & ~value.is_finite())
        .then(pl.format("field `{}` is not a finite number", pl.lit(label)))
        .when(kind.is_in(NUMBER_TYPES) & bound)
        .then(pl.format("field `{}` must be {}, got {}", pl.lit(label), pl.lit(rule), value))
    )


def _optional_bool(column: str, label: str) -> pl.Expr:
    kind = pl.col(f"{column}__type")
    return pl.when(kind.is_not_null() & ~kind.is_in(["BOOLEAN", "NULL"])).then(
        pl.format("field `{}` must be true or false, got {}", pl.lit(label), _type_name(column))
    )


def _object(column: str, label: str, *, required: bool) -> pl.Expr:
    kind = pl.col(f"{column}__type")
    missing = pl.format("missing required field `{}`", pl.lit(label))
    wrong = pl.format("field `{}` must be an object, got {}", pl.lit(label), _type_name(column))
    if required:
        return pl.when(kind.is_null()).then(missing).when(kind != "OBJECT").then(wrong)
    return pl.when(kind.is_not_null() & ~kind.is_in(["OBJECT", "NULL"])).then(wrong)


def repeated_keys(column: str, where: str | pl.Expr) -> pl.Expr:
    """A reason when the key list ``column`` names a key twice, else null; ``where`` names
    the object (text, or an expression per row)."""
    keys = pl.col(column)
    repeated = keys.list.eval(pl.element().filter(pl.element().is_duplicated())).list.unique()
    return pl.when(keys.list.len() != keys.list.n_unique()).then(
        pl.format(
            "{} names the key {} more than once, so which value is meant is ambiguous",
            pl.lit(where) if isinstance(where, str) else where,
            repeated.list.sort().list.join(", "),
        )
    )


def field_rules(env_types: Sequence[str]) -> list[pl.Expr]:
    """CONTRACT section 2: one expression per rule, each a reason or null."""
    known = sorted(env_types)
    return [
        repeated_keys("top_keys", "the record"),
        repeated_keys("grade_keys", "grade"),
        # Below grade only the keys scoring reads (parse_lines.sql lists only those).
        repeated_keys("metadata_scored_keys", "grade.metadata"),
        repeated_keys("minimization_scored_keys", "grade.metadata.minimization"),
        _required_string("run_id"),
        pl.when(
            (pl.col("run_id__type") == "VARCHAR")
            & ~pl.col("run_id").str.len_chars().is_between(1, RUN_ID_MAX_CHARS)
        ).then(
            pl.format(
                "field `run_id` must have 1 to {} characters, got {}",
                pl.lit(RUN_ID_MAX_CHARS),
                pl.col("run_id").str.len_chars(),
            )
        ),
        _required_string("agent"),
        _required_string("agent_version"),
        _required_string("problem_id"),
        _required_string("env_type"),
        pl.when((pl.col("env_type__type") == "VARCHAR") & ~pl.col("env_type").is_in(known)).then(
            pl.format(
                "unknown env_type '{}': expected one of {}; to accept it, add a [task.{}] table "
                "(gate, weights) to the rubric, then run replay-quarantine",
                pl.col("env_type"),
                pl.lit(", ".join(known)),
                pl.col("env_type"),
            )
        ),
        _required_string("graded_at"),
        # parse_lines.sql reads it with the session's rfc3339_instant: null unless it is one.
        pl.when((pl.col("graded_at__type") == "VARCHAR") & pl.col("graded_at").is_null()).then(
            pl.format(
                "field `graded_at` must be an RFC 3339 timestamp with offset "
                "(hh:mm:ss with hh 00-23, a real date, an offset within +/-23:59, "
                "a year 0001-9999 in UTC), got {}",
                pl.col("graded_at_text"),
            )
        ),
        _optional_string("defect_id"),
        _optional_string("cwe"),
        _optional_string("project"),
        pl.when(
            pl.col("trial__type").is_not_null()
            & ~pl.col("trial__type").is_in(["UBIGINT", "BIGINT", "NULL"])
        ).then(pl.format("field `trial` must be an integer, got {}", _type_name("trial"))),
        pl.when((pl.col("trial__type") == "BIGINT") & (pl.col("trial") < 0)).then(
            pl.format("field `trial` must be >= 0, got {}", pl.col("trial").cast(pl.Int64))
        ),
        _optional_number("cost_usd", "cost_usd"),
        _optional_number("tokens", "tokens"),
        _optional_number("wall_seconds", "wall_seconds"),
        _object("grade", "grade", required=True),
        _object("subscores", "grade.subscores", required=True),
        _object("weights", "grade.weights", required=True),
        _object("metadata", "grade.metadata", required=False),
        _object("penalties", "grade.penalties", required=False),
        _optional_bool("env_internal_failure", "grade.env_internal_failure"),
        _optional_bool("allow_unbounded", "grade.allow_unbounded"),
        pl.when(
            pl.col("failure_logs__type").is_not_null()
            & ~pl.col("failure_logs__type").is_in(["ARRAY", "NULL"])
        ).then(
            pl.format(
                "field `grade.env_internal_failure_logs` must be a list of strings, got {}",
                _type_name("failure_logs"),
            )
        ),
        _optional_number(
            "minimization_final_size", "grade.metadata.minimization.final_size", positive=True
        ),
        _optional_number(
            "minimization_minimal_size", "grade.metadata.minimization.minimal_size", positive=True
        ),
        *audit_rules(),
    ]


def _audit_fraction(column: str, label: str) -> pl.Expr:
    """CONTRACT 2: an audit's metadata has recall and precision, and its subscore is their
    product: each, when given, must be a number in [0, 1]. (One missing lands, flagged
    ``audit_unverified`` by scoring: the subscore cannot be checked.)"""
    kind, value = pl.col(f"{column}__type"), pl.col(column)
    audit = pl.col("env_type") == AUDIT_ENV
    return (
        pl.when(audit & kind.is_not_null() & ~kind.is_in([*NUMBER_TYPES, "NULL"]))
        .then(pl.format("field `{}` must be a number in [0, 1], got {}", pl.lit(label), kind))
        .when(audit & kind.is_in(NUMBER_TYPES) & ~value.is_between(0.0, 1.0))
        .then(pl.format("field `{}` must lie in [0, 1], got {}", pl.lit(label), value))
    )


def _audit_list(column: str, label: str) -> pl.Expr:
    kind = pl.col(f"{column}__type")
    return pl.when(
        (pl.col("env_type") == AUDIT_ENV) & kind.is_not_null() & ~kind.is_in(["ARRAY", "NULL"])
    ).then(pl.format("field `{}` must be a list of defect ids, got {}", pl.lit(label), kind))


def audit_rules() -> list[pl.Expr]:
    return [
        _audit_fraction("audit_recall", "grade.metadata.recall"),
        _audit_fraction("audit_precision", "grade.metadata.precision"),
        _audit_list("audit_found", "grade.metadata.found"),
        _audit_list("audit_missed", "grade.metadata.missed"),
    ]


def part_rules() -> pl.Expr:
    """CONTRACT section 8 on subscores, weights and penalties: a reason per part or null."""
    part, name, value = pl.col("part"), pl.col("name"), pl.col("value")
    where = pl.format("grade.{}.{}", part, name)
    return (
        pl.when(~pl.col("value_type").is_in(NUMBER_TYPES))
        .then(pl.format("{} must be a number, got {}", where, pl.col("value_type")))
        .when(~value.is_finite())
        .then(pl.format("{} is not a finite number", where))
        .when((part == "subscores") & ~value.is_between(0.0, 1.0))
        .then(pl.format("{} must lie in [0, 1], got {}", where, value))
        .when((part != "subscores") & (value < 0))
        .then(pl.format("{} must be >= 0, got {}", where, value))
    )


def _joined_reasons(rules: Iterable[pl.Expr]) -> pl.Expr:
    return pl.concat_list(list(rules)).list.drop_nulls()


def overflowing_sums(parts: pl.LazyFrame) -> pl.LazyFrame:
    """Records whose weights or penalties, each finite, sum past a double (row_nr, reason):
    their totals (score_as_graded, penalty_total) could not be stored. Only records holding a
    huge value are summed, so a batch of ordinary records pays one filter."""
    huge = parts.filter(pl.col("value") > HUGE_PART_VALUE).select("row_nr").unique()
    return (
        parts.join(huge, on="row_nr", how="semi")
        .filter((pl.col("part") != "subscores") & pl.col("value").is_finite())
        .group_by("row_nr", "part")
        .agg(total=pl.col("value").sum())
        .filter(~pl.col("total").is_finite())
        .select(
            "row_nr",
            reason=pl.format(
                "grade.{} add up to {} (each is finite, their sum is not): "
                "no score can be computed from them",
                pl.col("part"),
                pl.col("total"),
            ),
        )
    )


def check_parts(parts: pl.DataFrame, plain_rows: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per record: every reason its subscores, weights and penalties give (row_nr, reasons).

    ``plain_rows`` (row_nr) are records known to name each key once and the same keys in
    subscores and weights (parse_lines.sql's part_keys_plain): only the others' parts are
    grouped by key, which is most of the cost on a batch of good records.
    """
    value_reasons = (
        parts.lazy()
        .with_columns(reason=part_rules())
        .filter(pl.col("reason").is_not_null())
        .select("row_nr", "reason")
    )
    keyed_parts = (
        parts.lazy()
        if plain_rows is None
        else parts.lazy().join(plain_rows.lazy(), on="row_nr", how="anti")
    )
    duplicate_keys = (
        keyed_parts.group_by("row_nr", "part", "name")
        .len()
        .filter(pl.col("len") > 1)
        .select(
            "row_nr",
            reason=pl.format(
                "grade.{} has the key {} more than once", pl.col("part"), pl.col("name")
            ),
        )
    )
    keyed = keyed_parts.filter(pl.col("part").is_in(["subscores", "weights"]))
    sub = keyed.filter(pl.col("part") == "subscores").select("row_nr", "name").unique()
    wei = keyed.filter(pl.col("part") == "weights").select("row_nr", "name").unique()
    only_sub = sub.join(wei, on=["row_nr", "name"], how="anti").with_columns(side=pl.lit("weights"))
    only_wei = wei.join(sub, on=["row_nr", "name"], how="anti").with_columns(
        side=pl.lit("subscores")
    )
    mismatched = (
        pl.concat([only_sub, only_wei])
        .group_by("row_nr", "side")
        .agg(pl.col("name").sort().str.join(", "))
        .select(
            "row_nr",
            reason=pl.format(
                "grade.subscores and grade.weights have different keys: {} missing from {}",
                pl.col("name"),
                pl.col("side"),
            ),
        )
    )
    return (
        pl.concat([value_reasons, duplicate_keys, mismatched, overflowing_sums(parts.lazy())])
        .group_by("row_nr")
        .agg(pl.col("reason").sort())
        .rename({"reason": "reasons"})
        .collect()
    )


def validate_task_records(
    fields: pl.DataFrame,
    env_types: Sequence[str],
    con: duckdb.DuckDBPyConnection | None = None,
) -> TaskRecords:
    """Split parsed task records (sql/ingest/parse_lines.sql's columns) into accepted and rejected.

    The fragments are read by DuckDB in batches, so its threads share the work.
    """
    active = connect() if con is None else con
    try:
        fragments = {"fields": in_batches(fields.select(pl.col("row_nr"), pl.col("^.*_json$")))}
        parts = run_sql("ingest/task_parts.sql", fragments, con=active)
        metadata = run_sql("ingest/run_metadata.sql", fragments, con=active)
    finally:
        if con is None:
            active.close()
    field_reasons = fields.select("row_nr", reasons=_joined_reasons(field_rules(env_types))).filter(
        pl.col("reasons").list.len() > 0
    )
    reasons = (
        pl.concat(
            [field_reasons, check_parts(parts, fields.filter("part_keys_plain").select("row_nr"))]
        )
        .group_by("row_nr")
        .agg(pl.col("reasons").list.explode(keep_nulls=False, empty_as_null=False))
        .select("row_nr", reason=pl.col("reasons").list.join("; "))
    )
    if reasons.height == 0:
        # The usual batch: nothing to take out of three wide or long frames.
        return TaskRecords(fields=fields, parts=parts, metadata=metadata, rejected=reasons)
    rejected = pl.col("row_nr").is_in(reasons["row_nr"].implode())
    return TaskRecords(
        fields=fields.filter(~rejected),
        parts=parts.filter(~rejected),
        metadata=metadata.filter(~rejected),
        rejected=reasons,
    )
