"""``checked_by_plan``: the task scores' check before a write, without pandera's value rules
(the plan guarantees them) but with the schema, nulls and uniqueness; whatever fails there is
sent to pandera, so the error is pandera's own."""

from __future__ import annotations

import pandera.errors
import polars as pl
import pytest

from pipeline.rubric import parse_rubric
from pipeline.tasks.score import PLAN_CHECKED, score_tasks
from schemas import checked, checked_by_plan, unique_keys
from schemas.registry import SCORED
from schemas.tasks import TaskComponentScore, TaskScore


def scored() -> tuple[pl.DataFrame, pl.DataFrame]:
    runs = pl.LazyFrame(
        {
            "run_id": ["b", "a", "c"],
            "env_type": ["exploit", "audit", "patch"],
            "env_internal_failure": [False, False, True],
            "allow_unbounded": [False, False, False],
            "minimization_final_size": [None, None, 4.0],
            "minimization_minimal_size": [None, None, 2.0],
            "audit_recall": [None, 0.5, None],
            "audit_precision": [None, 0.5, None],
        }
    )
    components = pl.LazyFrame(
        {
            "run_id": ["b", "b", "a", "c"],
            "component": ["defect_matching", "pov_quality", "audit", "minimization"],
            "stored_subscore": [1.0, 0.5, 0.25, 0.5],
            "record_weight": [0.6, 0.4, 1.0, 1.0],
        }
    )
    penalties = pl.LazyFrame(
        {"run_id": ["b"], "penalty": ["slow"], "value": [0.1]},
        schema={"run_id": pl.String, "penalty": pl.String, "value": pl.Float64},
    )
    tasks = score_tasks(runs, components, penalties, parse_rubric({}))
    run_frame, component_frame = pl.collect_all([tasks.runs, tasks.components])
    return run_frame, component_frame


def test_the_plan_checked_tables_are_the_task_scores() -> None:
    assert {SCORED[name] for name in PLAN_CHECKED} == {TaskScore, TaskComponentScore}
    assert unique_keys(TaskScore) == ["run_id"]
    assert unique_keys(TaskComponentScore) == ["run_id", "component"]


def test_scored_frames_pass_and_equal_what_pandera_passes() -> None:
    runs, components = scored()
    assert checked_by_plan(TaskScore, runs).equals(checked(TaskScore, runs))
    assert checked_by_plan(TaskComponentScore, components).equals(
        checked(TaskComponentScore, components)
    )


def test_duplicate_keys_are_refused_by_pandera() -> None:
    runs, components = scored()
    with pytest.raises(pandera.errors.SchemaErrors, match="run_id"):
        checked_by_plan(TaskScore, pl.concat([runs, runs.head(1)]).sort("run_id"))
    twice = pl.concat([components, components.tail(1)]).sort("run_id", "component")
    with pytest.raises(pandera.errors.SchemaErrors):
        checked_by_plan(TaskComponentScore, twice)


def test_unique_rows_out_of_order_pass_through_pandera() -> None:
    runs, components = scored()
    assert checked_by_plan(TaskScore, runs.reverse()).equals(runs.reverse())
    # Same run_id, components descending: unique as a pair, only not in order.
    flipped = components.sort("run_id", "component", descending=[False, True])
    assert checked_by_plan(TaskComponentScore, flipped).height == components.height


def test_a_null_where_none_is_allowed_or_a_wrong_type_is_refused() -> None:
    runs, components = scored()
    with pytest.raises(pandera.errors.SchemaErrors):
        checked_by_plan(TaskScore, runs.with_columns(pl.lit(None, pl.String).alias("status")))
    with pytest.raises(pandera.errors.SchemaErrors):
        checked_by_plan(
            TaskComponentScore, components.with_columns(pl.col("weight").cast(pl.Int64))
        )
