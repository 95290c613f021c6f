"""Component names a rubric and the landed runs do not share, told when a rubric is applied.

A ``[task.<env>] weights`` key merges onto the defaults, so a typo (``number_of_attempt``)
is a new component: every run of that env scores it 0 (its ``missing_component`` anomaly)
and the component meant keeps its old weight. That is legal (a grader may send the
component later), so it is a note, not a refusal: each weighted component that no landed
run of its env type carries, with the closest name those runs do carry, and each component
they carry that the rubric gives no weight (``unknown_component``).

Read from the score rows a scoring just wrote (TaskComponentScore). Scoring gives every
run a row for each component of its env's weights (``in_rubric``) and of its record
(``in_record``), so a weighted component no run of the env carries is one whose rows out of
the record number the env's runs. Only the rows outside the rubric or the record (few, unless
a rubric names something nobody sends) meet their runs' env type, part by part.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import polars as pl

from pipeline.rubric import Rubric, closest_name
from pipeline.storage.store import LakeStore
from pipeline.tasks.keys import rubric_weights_frame

# Score rows outside the rubric or the record, counted by env type and component.
OUTSIDE_SCHEMA = pl.Schema(
    {"env_type": pl.String, "component": pl.String, "in_rubric": pl.Boolean, "rows": pl.UInt32}
)
RUNS_SCHEMA = pl.Schema({"env_type": pl.String, "runs": pl.UInt32})
GAP_SCHEMA = pl.Schema(
    {
        "env_type": pl.String(),
        "component": pl.String(),
        # True: the rubric weighs it and no landed run carries it; False: the other way round.
        "in_rubric": pl.Boolean(),
        # The components the env's landed runs carry, for the name closest to one the rubric
        # gives.
        "landed": pl.List(pl.String()),
    }
)
# A note lists at most this many components a rubric leaves unweighted (a record may carry
# thousands); the rest are counted.
NOTE_NAMES_MAX = 10


def part_counts(
    runs: pl.LazyFrame, component_scores: pl.LazyFrame
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """One part's runs by env type (RUNS_SCHEMA), and its TaskComponentScore rows outside the
    rubric or the record, with their runs' env type, counted (OUTSIDE_SCHEMA)."""
    env = runs.select("run_id", "env_type")
    outside = (
        component_scores.filter(pl.col("in_record") != pl.col("in_rubric"))
        .select("run_id", "component", "in_rubric")
        .join(env, on="run_id", how="inner")
    )
    return (
        _counted_runs(env.select("env_type", pl.lit(1, pl.UInt32).alias("runs"))),
        _counted_outside(outside.with_columns(pl.lit(1, pl.UInt32).alias("rows"))),
    )


def _counted_runs(runs: pl.LazyFrame) -> pl.LazyFrame:
    return runs.group_by("env_type").agg(pl.col("runs").sum())


def _counted_outside(outside: pl.LazyFrame) -> pl.LazyFrame:
    # in_rubric is the same in every row of an env type and component: its weights decide it.
    return outside.group_by("env_type", "component").agg(
        pl.col("in_rubric").first(), pl.col("rows").sum()
    )


def name_gaps(runs: pl.LazyFrame, outside: pl.LazyFrame, weights: pl.LazyFrame) -> pl.LazyFrame:
    """The (env type, component) pairs in the rubric's ``weights`` (env_type, component) or in
    landed records but not both (GAP_SCHEMA), sorted, from ``runs`` and ``outside`` (one or
    more parts' ``part_counts``, added up here). An env type with no landed run is left out,
    and so is one the rubric does not weigh at all: its runs are flagged ``unknown_env_type``,
    and no ``[task.<env>]`` table has a name to fix."""
    runs, outside = _counted_runs(runs), _counted_outside(outside)
    weighed = weights.select("env_type", "component").join(runs, on="env_type", how="inner")
    unlanded = (
        outside.filter(pl.col("in_rubric"))
        .join(runs, on="env_type", how="inner")
        .filter(pl.col("rows") == pl.col("runs"))
        .select("env_type", "component", "in_rubric")
    )
    unweighted = (
        outside.filter(~pl.col("in_rubric"))
        .join(weighed.select("env_type").unique(), on="env_type", how="semi")
        .select("env_type", "component", "in_rubric")
    )
    # The weighed components some run carries, and those the rubric does not weigh.
    carried = pl.concat(
        [
            weighed.join(unlanded, on=["env_type", "component"], how="anti").select(
                "env_type", "component"
            ),
            unweighted.select("env_type", "component"),
        ]
    )
    landed = carried.group_by("env_type").agg(pl.col("component").sort().alias("landed"))
    return (
        pl.concat([unlanded, unweighted])
        .join(landed, on="env_type", how="left")
        .with_columns(pl.col("landed").fill_null([]))
        .select(list(GAP_SCHEMA))
        .cast(GAP_SCHEMA)
        .sort("env_type", "in_rubric", "component", descending=[False, True, False])
    )


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


def scored_gap_notes(
    rubric: Rubric, parts: Iterable[tuple[pl.LazyFrame, pl.LazyFrame]]
) -> list[str]:
    """``gap_notes`` of the task runs and TaskComponentScore rows of each part, under
    ``rubric``."""
    counted = [part_counts(runs, scores) for runs, scores in parts]
    runs = pl.concat([c[0] for c in counted]) if counted else pl.LazyFrame(schema=RUNS_SCHEMA)
    outside = pl.concat([c[1] for c in counted]) if counted else pl.LazyFrame(schema=OUTSIDE_SCHEMA)
    gaps = name_gaps(runs, outside, rubric_weights_frame(rubric)).collect()
    return gap_notes(rubric.rubric_id, gaps)


def stored_gap_notes(lake: Path, rubric: Rubric) -> list[str]:
    """``gap_notes`` of the task runs scored under ``rubric`` in ``lake``."""
    store = LakeStore(lake)
    table = "task_component_scores"
    parts = (
        (store.part("task_runs", part), store.scored_part(rubric.rubric_id, table, part))
        for part in store.scored_parts(rubric.rubric_id, table)
    )
    return scored_gap_notes(rubric, parts)
