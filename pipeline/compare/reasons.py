"""Why a version dropped: the problems that regressed most, and the grader's own words.

Each regressed problem names its failing component (the gate when the gate's pass
rate fell, else the component whose contribution fell most, else penalties) and the
reason read from the grader's metadata of the candidate's worst trial.
"""

from __future__ import annotations

from typing import Final

import polars as pl

from pipeline.compare.pairing import KEY, METADATA_COLUMNS, require
from pipeline.core.sql import run_sql

# Metadata leaf names that carry the grader's own words, best first. The seed
# (000): "metadata carries the grader's reasoning — what matched, what was
# skipped and why"; these are the names such reasoning is found under.
REASON_LEAVES: Final = (
    "reason",
    "why",
    "explanation",
    "message",
    "detail",
    "details",
    "skipped",
    "skip_reason",
    "error",
    "status",
    "note",
    "notes",
)
# When no single reason exists, the entries are listed with the most telling
# first: for audit, the seed's "recall, precision, which known defects were
# found and missed, how many submissions were made, and how many were
# duplicates or non-crashers".
SUMMARY_FIRST: Final = (
    "recall",
    "precision",
    "missed",
    "found",
    "submissions",
    "duplicates",
    "non_crashers",
)
REASON_MAX_CHARS: Final = 300
KIND_GATE: Final = "gate"
KIND_COMPONENT: Final = "component"
KIND_PENALTY: Final = "penalty"

# The columns a regressed problem is reported with, from the paired frame.
_REGRESSED_COLUMNS: Final = {
    "b_score": "baseline_score",
    "c_score": "candidate_score",
    "diff": "delta",
}
_SIDE_COLUMNS: Final = {
    "b_penalty": "baseline_penalty",
    "c_penalty": "candidate_penalty",
    "b_trials": "baseline_trials",
    "c_trials": "candidate_trials",
    "c_worst_run_id": "candidate_run_id",
}


def _gates(grid: pl.LazyFrame) -> pl.LazyFrame:
    """Per problem: its gate component and both versions' contributions from it."""
    return (
        grid.filter(pl.col("is_gate"))
        .group_by(*KEY)
        .agg(
            gate_component=pl.col("component").sort().first(),
            gate_b=pl.col("b_contribution").sort_by("component").first(),
            gate_c=pl.col("c_contribution").sort_by("component").first(),
        )
    )


def _biggest_drop(grid: pl.LazyFrame) -> pl.LazyFrame:
    """Per problem: the component whose mean contribution fell most (ties by name)."""

    def at_drop(column: str) -> pl.Expr:
        return pl.col(column).sort_by(["drop", "component"], descending=[True, False]).first()

    return grid.group_by(*KEY).agg(
        drop_component=at_drop("component"),
        drop=pl.col("drop").max(),
        drop_b=at_drop("b_contribution"),
        drop_c=at_drop("c_contribution"),
    )


def _by_kind(gate: str, component: str, dtype: pl.DataType) -> pl.Expr:
    """The gate's column for a gate failure, the dropped component's for a component one."""
    kind = pl.col("failing_kind")
    return (
        pl.when(kind == KIND_GATE)
        .then(pl.col(gate))
        .when(kind == KIND_COMPONENT)
        .then(pl.col(component))
        .otherwise(pl.lit(None, dtype=dtype))
    )


def regressed_problems(pairs: pl.LazyFrame, grid: pl.LazyFrame, top: int) -> pl.DataFrame:
    """The ``top`` problems that dropped most, each with the component that failed it.

    The failing component is the gate when the candidate's gate pass rate on the
    problem fell (seed 000: a failed gate "scores zero on all four"), else the
    component whose mean contribution fell most; when no component fell the
    drop came from penalties.
    """
    gate_fell = pl.col("c_gate_passed").fill_null(1.0) < pl.col("b_gate_passed").fill_null(1.0)
    gate_fell = gate_fell & pl.col("gate_component").is_not_null()
    component_fell = pl.col("drop").fill_null(0.0) > 0
    return (
        pairs.filter(pl.col("diff") < 0)
        .sort(["diff", *KEY])
        .head(top)
        .join(_gates(grid), on=list(KEY), how="left")
        .join(_biggest_drop(grid), on=list(KEY), how="left")
        .with_columns(
            failing_kind=pl.when(gate_fell)
            .then(pl.lit(KIND_GATE))
            .when(component_fell)
            .then(pl.lit(KIND_COMPONENT))
            .otherwise(pl.lit(KIND_PENALTY)),
        )
        .with_columns(
            failing_component=_by_kind("gate_component", "drop_component", pl.String()),
            baseline_contribution=_by_kind("gate_b", "drop_b", pl.Float64()),
            candidate_contribution=_by_kind("gate_c", "drop_c", pl.Float64()),
        )
        .select(
            *KEY,
            *(pl.col(c).alias(name) for c, name in _REGRESSED_COLUMNS.items()),
            "failing_kind",
            "failing_component",
            "baseline_contribution",
            "candidate_contribution",
            *(pl.col(c).alias(name) for c, name in _SIDE_COLUMNS.items()),
        )
        .sort(["delta", *KEY])
        .collect()
    )


def _json_text(value: pl.Expr) -> pl.Expr:
    """A JSON string value as its text; any other JSON value as written."""
    decoded = (
        pl.concat_str([pl.lit('{"v":'), value, pl.lit("}")])
        .str.json_decode(pl.Struct({"v": pl.String}))
        .struct.field("v")
    )
    return pl.when(value.str.starts_with('"')).then(decoded).otherwise(value)


def _leaf(key: pl.Expr) -> pl.Expr:
    return key.str.split(".").list.last().str.replace(r"\[\d+\]$", "")


_ENTRY_KEYS: Final = ["run_id", "component"]


def _key_prefixes(targets: pl.LazyFrame) -> pl.LazyFrame:
    """Each target component with how run_metadata's keys below it begin: quoted as the keys
    are when the name is not a plain identifier ("crash-check".reason)."""
    components = targets.select("component").drop_nulls().unique().collect()
    return run_sql("queries/metadata_key_prefix.sql", {"components": components}).lazy()


def _entries(metadata: pl.LazyFrame, targets: pl.LazyFrame) -> pl.LazyFrame:
    """The target runs' metadata entries, each as text, ranked as a reason and ordered."""
    rank = {leaf: i for i, leaf in enumerate(REASON_LEAVES)}
    entries = (
        # A list over run_metadata's limit has no text (null): its items, rows of their own,
        # say what it held.
        metadata.select(*METADATA_COLUMNS)
        .filter(pl.col("value").is_not_null())
        .join(
            targets.filter(pl.col("component").is_not_null()).join(
                _key_prefixes(targets), on="component", how="left"
            ),
            on="run_id",
            how="inner",
        )
        .with_columns(
            text=_json_text(pl.col("value")).fill_null("null"),
            under=pl.col("key").str.starts_with(pl.col("prefix")),
            top=~pl.col("key").str.contains(".", literal=True),
        )
        .with_columns(
            rank=pl.when(pl.col("under"))
            .then(_leaf(pl.col("key")).replace_strict(rank, default=None, return_dtype=pl.Int64))
            .otherwise(pl.lit(None, dtype=pl.Int64)),
            pair=pl.concat_str(
                [
                    pl.when(pl.col("under"))
                    .then(pl.col("key").str.slice(pl.col("prefix").str.len_chars()))
                    .otherwise(pl.col("key")),
                    pl.lit("="),
                    pl.col("text"),
                ]
            ),
        )
    )
    keys = _ENTRY_KEYS
    # A list kept whole (``missed``) and also item by item (``missed[0]``): say it once. An
    # entry is checked against the list it is nearest below (the key cut before its last
    # [i]): a list holding that one is longer, so when the nearest has no text (over the
    # limit), none above it has, and the entry stands for what it is in.
    items_of_kept_lists = (
        entries.filter(pl.col("key").str.contains("[", literal=True))
        .with_columns(parent=pl.col("key").str.replace(r"^(.*)\[\d+\].*$", "${1}"))
        .join(
            entries.select(*keys, pl.col("key").alias("parent")),
            on=[*keys, "parent"],
            how="semi",
        )
        .select(*keys, "key")
    )
    return entries.join(items_of_kept_lists, on=[*keys, "key"], how="anti").with_columns(
        order=_leaf(pl.col("key")).replace_strict(
            {leaf: i for i, leaf in enumerate(SUMMARY_FIRST)},
            default=len(SUMMARY_FIRST),
            return_dtype=pl.Int64,
        )
    )


def _found(entries: pl.LazyFrame, targets: pl.LazyFrame) -> pl.LazyFrame:
    """Per target: the best reason, else the entries under the component, else the top ones."""
    keys = _ENTRY_KEYS

    def joined(which: str, name: str) -> pl.LazyFrame:
        return (
            entries.filter(pl.col(which))
            .group_by(keys)
            .agg(pl.col("pair").sort_by(["order", "key"]).str.join("; ").alias(name))
        )

    best = (
        entries.filter(pl.col("rank").is_not_null())
        .group_by(keys)
        .agg(best=pl.col("text").sort_by(["rank", "key"]).first())
    )
    return (
        targets.join(best, on=keys, how="left")
        .join(joined("under", "under_text"), on=keys, how="left")
        .join(joined("top", "top_text"), on=keys, how="left")
        .select(*keys, found=pl.coalesce("best", "under_text", "top_text"))
        .unique(keys)
    )


def failure_reasons(regressed: pl.DataFrame, metadata: pl.LazyFrame) -> pl.DataFrame:
    """``regressed`` with ``failing_reason``: the failing component's metadata, best text first.

    Read from the candidate's worst trial. In order: a key under the component
    (``<component>.<leaf>``) whose leaf is a reason-like name (REASON_LEAVES,
    best first); else every entry under the component as ``key=value``; else
    (audit keeps its diagnosis at the top: recall, precision, missed, ...)
    every top-level entry as ``key=value``. For a penalty drop, the penalty
    totals.
    """
    require(metadata, METADATA_COLUMNS, "run_metadata")
    targets = regressed.lazy().select(
        pl.col("candidate_run_id").alias("run_id"), pl.col("failing_component").alias("component")
    )
    found = _found(_entries(metadata, targets), targets)
    penalty_text = pl.format(
        "penalty_total rose from {} to {}",
        pl.col("baseline_penalty").round(4),
        pl.col("candidate_penalty").round(4),
    )
    return (
        regressed.lazy()
        .with_row_index("_order")
        .join(
            found,
            left_on=["candidate_run_id", "failing_component"],
            right_on=_ENTRY_KEYS,
            how="left",
            nulls_equal=False,
        )
        .with_columns(
            failing_reason=pl.when(pl.col("failing_kind") == KIND_PENALTY)
            .then(penalty_text)
            .otherwise(pl.col("found").str.slice(0, REASON_MAX_CHARS))
        )
        .sort("_order")
        .drop("found", "_order")
        .collect()
    )
