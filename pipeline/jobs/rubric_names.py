"""Component names a rubric and the landed runs do not share, told when a rubric is applied.

A ``[task.<env>] weights`` key merges onto the defaults, so a typo (``number_of_attempt``)
is a new component: every run of that env scores it 0 (its ``missing_component`` anomaly)
and the component meant keeps its old weight. That is legal (a grader may send the
component later), so it is a note, not a refusal: each weighted component that no landed
run of its env type carries, with the closest name those runs do carry, and each component
they carry that the rubric gives no weight (``unknown_component``).

Read from the score rows a scoring just wrote (TaskComponentScore: ``in_record``,
``in_rubric``), each with its run's env type: one part at a time, reduced to a row per env
type and component, so the work is a join and a group_by per part.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path

import polars as pl

from pipeline.storage.store import LakeStore

USAGE_SCHEMA = pl.Schema(
    {
        "env_type": pl.String,
        "component": pl.String,
        # Some run of the env type carries the component in its record.
        "in_record": pl.Boolean,
        # The rubric's [task.<env>] weights name it.
        "in_rubric": pl.Boolean,
    }
)
GAP_SCHEMA = pl.Schema(
    {
        "env_type": pl.String(),
        "component": pl.String(),
        # True: the rubric weighs it and no landed run carries it; False: the other way round.
        "in_rubric": pl.Boolean(),
        # The env's landed components, for the closest name to one the rubric gives.
        "landed": pl.List(pl.String()),
    }
)
# A note lists at most this many components a rubric leaves unweighted (a record may carry
# thousands); the rest are counted.
NOTE_NAMES_MAX = 10
# difflib's own default: how alike a landed name must be to be offered as the one meant.
CLOSE_NAME_CUTOFF = 0.6


def component_usage(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Per env type and component, whether any of ``rows`` (USAGE_SCHEMA's columns, one per
    score row or already reduced) has it in a record and in the rubric. Its output is valid
    input, so parts are reduced one by one and their results once more."""
    return rows.group_by("env_type", "component").agg(
        pl.col("in_record").any(), pl.col("in_rubric").any()
    )


def part_usage(runs: pl.LazyFrame, component_scores: pl.LazyFrame) -> pl.LazyFrame:
    """``component_usage`` of one part: its TaskComponentScore rows with their runs' env type."""
    return component_usage(
        component_scores.select("run_id", "component", "in_record", "in_rubric").join(
            runs.select("run_id", "env_type"), on="run_id", how="inner"
        )
    )


def name_gaps(usage: pl.LazyFrame) -> pl.LazyFrame:
    """The (env type, component) pairs of ``usage`` in the rubric or the records but not both
    (GAP_SCHEMA), sorted. An env type the rubric does not weigh at all is left out: its runs
    are flagged ``unknown_env_type``, and no ``[task.<env>]`` table has a name to fix."""
    usage = component_usage(usage)
    per_env = usage.group_by("env_type").agg(
        pl.col("in_rubric").any().alias("env_known"),
        pl.col("component").filter(pl.col("in_record")).sort().alias("landed"),
    )
    return (
        usage.filter(pl.col("in_record") != pl.col("in_rubric"))
        .join(per_env.filter(pl.col("env_known")), on="env_type", how="inner")
        .select(list(GAP_SCHEMA))
        .cast(GAP_SCHEMA)
        .sort("env_type", "in_rubric", "component", descending=[False, True, False])
    )


def closest_name(name: str, landed: list[str]) -> str | None:
    matches = difflib.get_close_matches(name, landed, n=1, cutoff=CLOSE_NAME_CUTOFF)
    return matches[0] if matches else None


def gap_notes(rubric_id: str, gaps: pl.DataFrame) -> list[str]:
    """One note per component a rubric names that no landed run of its env type carries, and
    one per env type whose landed runs carry components the rubric gives no weight."""
    notes: list[str] = []
    # One row per name the rubric file gives: bounded by the rubric, not by the runs.
    named = gaps.filter(pl.col("in_rubric"))
    for env_type, component, landed in named.select("env_type", "component", "landed").rows():
        closest = closest_name(component, landed)
        hint = f" (the closest landed component: {closest})" if closest else ""
        notes.append(
            f"rubric {rubric_id}: [task.{env_type}] weights name {component}, which no landed "
            f"{env_type} run carries{hint}; every {env_type} run scores it 0 "
            "(anomaly missing_component)"
        )
    unweighted = (
        gaps.filter(~pl.col("in_rubric"))
        .group_by("env_type", maintain_order=True)
        .agg(pl.col("component").head(NOTE_NAMES_MAX).alias("shown"), pl.len().alias("count"))
    )
    # One row per env type.
    for env_type, shown, count in unweighted.rows():
        more = f" and {count - len(shown)} more" if count > len(shown) else ""
        notes.append(
            f"rubric {rubric_id}: landed {env_type} runs carry {', '.join(shown)}{more}, "
            f"which [task.{env_type}] weights give no weight; they count 0 in every score "
            "(anomaly unknown_component)"
        )
    return notes


def scored_name_gaps(parts: Iterable[pl.LazyFrame]) -> pl.DataFrame:
    """``name_gaps`` of the ``part_usage`` of each part."""
    plans = list(parts)
    usage = pl.concat(plans) if plans else pl.LazyFrame(schema=USAGE_SCHEMA)
    return name_gaps(usage).collect()


def stored_gap_notes(lake: Path, rubric_id: str) -> list[str]:
    """``gap_notes`` of the task runs scored under ``rubric_id`` in ``lake``, part by part."""
    store = LakeStore(lake)
    table = "task_component_scores"
    parts = (
        part_usage(store.part("task_runs", part), store.scored_part(rubric_id, table, part))
        for part in store.scored_parts(rubric_id, table)
    )
    return gap_notes(rubric_id, scored_name_gaps(parts))
