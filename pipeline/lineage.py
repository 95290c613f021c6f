"""Rubric lineage: what a rubric change did to the scores.

Scores are kept per rubric_id, so two rubrics' scores of the same runs can be
set side by side: how many runs changed score or pass/fail, by env type, and
how the order of agent versions by mean score moved.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl
from rich.console import Console
from rich.table import Table

from pipeline import jsonsafe
from pipeline import lake as lk
from schemas import polars_schema
from schemas.registry import LANDED, SCORED

# Two scores closer than this are the same score (float noise of a re-sum).
SCORE_TOLERANCE = 1e-12


@dataclass(frozen=True)
class RescoreDiff:
    rubric_from: str
    rubric_to: str
    by_env_type: pl.DataFrame
    ranking: pl.DataFrame

    def to_dict(self) -> dict[str, object]:
        return {
            "from": self.rubric_from,
            "to": self.rubric_to,
            "by_env_type": self.by_env_type.to_dicts(),
            "ranking": self.ranking.to_dicts(),
        }


def scores_of(lake: Path, rubric_id: str) -> pl.LazyFrame:
    return lk.scan_table(
        lk.score_dir(lake, rubric_id, "task_scores"), polars_schema(SCORED["task_scores"])
    )


def diff_by_env_type(runs: pl.LazyFrame, before: pl.LazyFrame, after: pl.LazyFrame) -> pl.LazyFrame:
    """Per env type: runs compared, runs whose score or pass/fail changed, mean change."""
    paired = _paired(runs, before, after)
    changed = (pl.col("score_to") - pl.col("score_from")).abs() > SCORE_TOLERANCE
    flipped = pl.col("passed_from") != pl.col("passed_to")
    return (
        paired.group_by("env_type")
        .agg(
            runs=pl.len(),
            score_changed=changed.sum(),
            pass_flipped=flipped.sum(),
            now_passing=(flipped & pl.col("passed_to")).sum(),
            now_failing=(flipped & pl.col("passed_from")).sum(),
            mean_score_from=pl.col("score_from").mean(),
            mean_score_to=pl.col("score_to").mean(),
            mean_change=(pl.col("score_to") - pl.col("score_from")).mean(),
        )
        .sort("env_type")
    )


def ranking_moves(runs: pl.LazyFrame, before: pl.LazyFrame, after: pl.LazyFrame) -> pl.LazyFrame:
    """Agent versions ranked by mean score under each rubric, and how far each moved."""
    paired = _paired(runs, before, after)
    means = paired.group_by("agent", "agent_version").agg(
        mean_from=pl.col("score_from").mean(), mean_to=pl.col("score_to").mean()
    )
    return (
        means.with_columns(
            rank_from=pl.col("mean_from").rank("min", descending=True).cast(pl.Int64),
            rank_to=pl.col("mean_to").rank("min", descending=True).cast(pl.Int64),
        )
        .with_columns(moved=pl.col("rank_from") - pl.col("rank_to"))
        .sort("rank_to", "agent", "agent_version")
    )


def _paired(runs: pl.LazyFrame, before: pl.LazyFrame, after: pl.LazyFrame) -> pl.LazyFrame:
    """Scored runs present under both rubrics (grader errors have no score to compare)."""
    keep = ["run_id", "score", "passed"]
    scored = pl.col("status") == "scored"
    return (
        runs.select("run_id", "agent", "agent_version", "env_type")
        .join(before.filter(scored).select(keep), on="run_id")
        .join(after.filter(scored).select(keep), on="run_id", suffix="_to")
        .rename({"score": "score_from", "passed": "passed_from"})
    )


def rescore_diff(
    lake: Path, rubric_from: str, rubric_to: str, after: pl.LazyFrame | None = None
) -> RescoreDiff:
    """The diff between two rubrics' stored scores (or ``after``, for a dry run)."""
    runs = lk.scan_table(lk.table_dir(lake, "task_runs"), polars_schema(LANDED["task_runs"]))
    before = scores_of(lake, rubric_from)
    target = after if after is not None else scores_of(lake, rubric_to)
    by_env, ranking = pl.collect_all(
        [diff_by_env_type(runs, before, target), ranking_moves(runs, before, target)]
    )
    return RescoreDiff(rubric_from, rubric_to, by_env, ranking)


def print_diff(console: Console, diff: RescoreDiff, *, as_json: bool) -> None:
    if as_json:
        console.print_json(jsonsafe.dumps(diff.to_dict()))
        return
    table = Table(title=f"rescore {diff.rubric_from} -> {diff.rubric_to}, by env type")
    for column in diff.by_env_type.columns:
        table.add_column(column, justify="left" if column == "env_type" else "right")
    for row in diff.by_env_type.rows():
        table.add_row(*(_cell(value) for value in row))
    console.print(table)
    moves = Table(title="agent versions by mean score")
    for column in diff.ranking.columns:
        moves.add_column(column, justify="left" if column.startswith("agent") else "right")
    for row in diff.ranking.rows():
        moves.add_row(*(_cell(value) for value in row))
    console.print(moves)


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    return "-" if value is None else str(value)
