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

from pipeline.compare.names import ALL_ENV_TYPES
from pipeline.core.jsonwalk import walk_json
from pipeline.core.sql import connect, in_batches, run_sql
from pipeline.tasks.fields import (
    INTEGER_TYPES,
    NUMBER_TYPES,
    TASK_FIELDS,
    Field,
    Kind,
)

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


def _given(column: str, *allowed: str) -> pl.Expr:
    """The field is there, and its JSON type is neither null nor one of ``allowed``."""
    kind = pl.col(f"{column}__type")
    return kind.is_not_null() & ~kind.is_in([*allowed, "NULL"])


def _wrong(label: str, what: str, column: str) -> pl.Expr:
    return pl.format(f"field `{{}}` must be {what}, got {{}}", pl.lit(label), _type_name(column))


def _missing(label: str) -> pl.Expr:
    return pl.format("missing required field `{}`", pl.lit(label))


def _string_rules(f: Field) -> list[pl.Expr]:
    kind, value = pl.col(f"{f.name}__type"), pl.col(f.name)
    rules: list[pl.Expr]
    if f.required:
        rules = [
            pl.when(kind.is_null())
            .then(_missing(f.path))
            .when(kind != "VARCHAR")
            .then(_wrong(f.path, "a string", f.name))
        ]
    else:
        rules = [
            pl.when(_given(f.name, "VARCHAR")).then(_wrong(f.path, "a string when given", f.name))
        ]
    if f.max_chars is not None:
        chars = value.str.len_chars()
        rules.append(
            pl.when((kind == "VARCHAR") & ~chars.is_between(1, f.max_chars)).then(
                pl.format(
                    "field `{}` must have 1 to {} characters, got {}",
                    pl.lit(f.path),
                    pl.lit(f.max_chars),
                    chars,
                )
            )
        )
    return rules


def _timestamp_rule(f: Field) -> pl.Expr:
    # parse_lines.sql reads it with the session's rfc3339_instant: null unless it is one.
    kind = pl.col(f"{f.name}__type")
    return pl.when((kind == "VARCHAR") & pl.col(f.name).is_null()).then(
        pl.format(
            "field `{}` must be an RFC 3339 timestamp with offset "
            "(hh:mm:ss with hh 00-23, a real date, an offset within +/-23:59, "
            "a year 0001-9999 in UTC), got {}",
            pl.lit(f.path),
            pl.col(f"{f.name}_text"),
        )
    )


def _number_rule(f: Field) -> pl.Expr:
    kind, value = pl.col(f"{f.name}__type"), pl.col(f.name)
    rule = (
        pl.when(_given(f.name, *NUMBER_TYPES))
        .then(_wrong(f.path, "a number", f.name))
        .when(kind.is_in(NUMBER_TYPES) & ~value.is_finite())
        .then(pl.format("field `{}` is not a finite number", pl.lit(f.path)))
    )
    if f.bound is None:
        return rule
    outside = value <= f.gt if f.gt is not None else value < f.ge
    return rule.when(kind.is_in(NUMBER_TYPES) & outside).then(
        pl.format("field `{}` must be {}, got {}", pl.lit(f.path), pl.lit(f.bound), value)
    )


def _integer_rules(f: Field) -> list[pl.Expr]:
    kind, value = pl.col(f"{f.name}__type"), pl.col(f.name)
    rules: list[pl.Expr] = [
        pl.when(_given(f.name, *INTEGER_TYPES)).then(_wrong(f.path, "an integer", f.name))
    ]
    if f.ge is not None:
        rules.append(
            pl.when((kind == "BIGINT") & (value < f.ge)).then(
                pl.format(
                    "field `{}` must be {}, got {}",
                    pl.lit(f.path),
                    pl.lit(f.bound),
                    value.cast(pl.Int64),
                )
            )
        )
    return rules


def _object_rule(f: Field) -> pl.Expr:
    kind = pl.col(f"{f.name}__type")
    wrong = _wrong(f.path, "an object", f.name)
    if f.required:
        return pl.when(kind.is_null()).then(_missing(f.path)).when(kind != "OBJECT").then(wrong)
    return pl.when(_given(f.name, "OBJECT")).then(wrong)


def _fraction_rule(f: Field) -> pl.Expr:
    """When given, a number in [0, 1]. (An audit missing one lands, flagged
    ``audit_unverified`` by scoring: its subscore cannot be checked.)"""
    kind, value = pl.col(f"{f.name}__type"), pl.col(f.name)
    return (
        pl.when(_given(f.name, *NUMBER_TYPES))
        .then(pl.format("field `{}` must be a number in [0, 1], got {}", pl.lit(f.path), kind))
        .when(kind.is_in(NUMBER_TYPES) & ~value.is_between(0.0, 1.0))
        .then(pl.format("field `{}` must lie in [0, 1], got {}", pl.lit(f.path), value))
    )


def _rules_of(f: Field) -> list[pl.Expr]:
    """The reasons (or nulls) of one field, from its declaration."""
    match f.kind:
        case Kind.STRING:
            return _string_rules(f)
        case Kind.TIMESTAMP:
            return [*_string_rules(f), _timestamp_rule(f)]
        case Kind.INTEGER:
            return _integer_rules(f)
        case Kind.NUMBER:
            return [_number_rule(f)]
        case Kind.FRACTION:
            return [_fraction_rule(f)]
        case Kind.BOOL:
            return [
                pl.when(_given(f.name, "BOOLEAN")).then(_wrong(f.path, "true or false", f.name))
            ]
        case Kind.STRINGS:
            return [
                pl.when(_given(f.name, "ARRAY")).then(_wrong(f.path, "a list of strings", f.name))
            ]
        case Kind.DEFECT_IDS:
            wrong = _wrong(f.path, "a list of defect ids", f.name)
            return [pl.when(_given(f.name, "ARRAY")).then(wrong)]
        case Kind.OBJECT | Kind.FRAGMENT:
            return [_object_rule(f)]


def _for_env(f: Field, rule: pl.Expr) -> pl.Expr:
    """``rule``, on the records of the field's env type only (all when it names none)."""
    if f.env_type is None:
        return rule
    return pl.when(pl.col("env_type") == f.env_type).then(rule)


def toml_key(name: pl.Expr) -> pl.Expr:
    """``name`` as a TOML key: bare when it may be (letters, digits, _ and -), else quoted."""
    quoted = name.str.replace_all("\\", "\\\\", literal=True).str.replace_all(
        '"', '\\"', literal=True
    )
    return (
        pl.when(name.str.contains(r"^[A-Za-z0-9_-]+$"))
        .then(name)
        .otherwise(pl.format('"{}"', quoted))
    )


def _env_type_rule(known: Sequence[str]) -> pl.Expr:
    unknown = (pl.col("env_type__type") == "VARCHAR") & ~pl.col("env_type").is_in(known)
    return (
        pl.when(unknown & (pl.col("env_type") == ALL_ENV_TYPES))
        .then(
            pl.lit(
                f"env_type '{ALL_ENV_TYPES}' is the name compare, history and "
                "version_regressions give every env type together, so no rubric can accept "
                "it: the grader must name the env type otherwise"
            )
        )
        .when(unknown)
        .then(
            pl.format(
                "unknown env_type '{}': expected one of {}; to accept it, add a [task.{}] "
                "table (gate, weights) to the rubric, then run replay-quarantine",
                pl.col("env_type"),
                pl.lit(", ".join(known)),
                toml_key(pl.col("env_type")),
            )
        )
    )


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
    """CONTRACT section 2: one expression per rule, each a reason or null, in the order of
    the declared fields (``fields.TASK_FIELDS``)."""
    rules = [
        repeated_keys("top_keys", "the record"),
        repeated_keys("grade_keys", "grade"),
        # Below grade only the keys scoring reads (parse_lines.sql lists only those).
        repeated_keys("metadata_scored_keys", "grade.metadata"),
        repeated_keys("minimization_scored_keys", "grade.metadata.minimization"),
    ]
    for f in TASK_FIELDS:
        rules += [_for_env(f, rule) for rule in _rules_of(f)]
        if f.name == "env_type":
            # Which env types are known is the rubric's, not the field's.
            rules.append(_env_type_rule(sorted(env_types)))
    return rules


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


# run_metadata holds a list's whole JSON text on its own row (README: handy for membership
# tests) up to this size; a larger one's value is null (its items have rows of their own, and
# the record keeps it whole). Each list of a nest holds all below it: a 15 MB string 60
# lists deep had made 915 MB of values from one line, and three such lines had passed the
# 2 GiB a column of text can hold, which quarantined their whole file.
LIST_VALUE_MAX_BYTES = 1024**2


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
        documents = fields.select("row_nr", doc="metadata_json")
        metadata = walk_json(
            in_batches(documents), "ingest/run_metadata.sql", active, [LIST_VALUE_MAX_BYTES]
        )
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
