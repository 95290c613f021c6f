"""Inspect tasks of one env type whose samples share ids. A problem is (problem_id,
env_type) and problem_id is the sample's id, so their samples are the same problems to
``compare`` and the views: worth a note when an ingest lands them, also when the other
task landed in an earlier ingest.
"""

from __future__ import annotations

import polars as pl

from pipeline.sources.inspect.columns import RUN_ID_PREFIX, TASK_KEY

# Tasks and problem ids named in a note, at most.
SHOWN = 3
PROBLEMS = pl.Schema({"env_type": pl.String, "problem_id": pl.String})
TASK_PROBLEMS = pl.Schema([*PROBLEMS.items(), ("task", pl.String())])


def inspect_problems(task_runs: pl.DataFrame) -> pl.DataFrame:
    """(env_type, problem_id) of the Inspect runs among landed task_runs."""
    inspect = task_runs.filter(pl.col("run_id").str.starts_with(RUN_ID_PREFIX))
    return inspect.select(*PROBLEMS).unique()


def task_problems(task_runs: pl.LazyFrame, run_metadata: pl.LazyFrame) -> pl.LazyFrame:
    """(env_type, problem_id, task) of the Inspect runs among ``task_runs``, their task
    read from ``run_metadata`` (a task that is not a string, which a .jsonl record may
    give, names none)."""
    value = pl.col("value")
    tasks = run_metadata.filter(
        (pl.col("key") == TASK_KEY)
        & pl.col("run_id").str.starts_with(RUN_ID_PREFIX)
        & value.str.starts_with('"')
    ).select("run_id", task=value.str.json_decode(pl.String))
    return (
        task_runs.select("run_id", "env_type", "problem_id")
        .join(tasks, on="run_id")
        .select("env_type", "problem_id", "task")
        .unique()
    )


def shared_problem_notes(found: pl.DataFrame) -> list[str]:
    """One note per env type whose problem ids samples of two or more tasks share (found:
    ``task_problems``)."""
    shared = (
        found.unique()
        .group_by("env_type", "problem_id")
        .agg(pl.col("task").sort())
        .filter(pl.col("task").list.len() > 1)
        .sort("env_type", "problem_id")
        .group_by("env_type", maintain_order=True)
        .agg(
            problems=pl.len(),
            examples=pl.col("problem_id").head(SHOWN).str.join(", "),
            tasks=pl.col("task")
            .list.explode(keep_nulls=False, empty_as_null=False)
            .unique()
            .sort()
            .head(SHOWN)
            .str.join(", "),
        )
    )
    notes = shared.select(
        pl.format(
            "Inspect tasks of env type {} share sample ids ({} of them, e.g. {}; tasks {}): "
            "compare and the views take their samples as the same problems; give samples "
            "ids unique across the tasks of an env type",
            "env_type",
            "problems",
            "examples",
            "tasks",
        )
    )
    return notes.to_series().to_list()
