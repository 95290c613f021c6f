"""The lake's ``version_regressions`` table: the release gate for every consecutive pair of
versions of every agent, under the current rubric.

The numbers are those ``compare`` gates on (:func:`pipeline.compare.gate.step_table`, paired t with
scipy's t quantile and Holm over env types), so an analyst reads them with one select
instead of re-deriving a t quantile in SQL. They depend on the landed runs and on the
rubric's scores, so the table is rebuilt inside every transaction that changes either
(scoring, and a bare ingest), from the files that transaction will leave in place: the
table never describes scores the lake does not hold.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import polars as pl

from pipeline.compare import gate, stats
from pipeline.storage import lake as lk
from pipeline.storage.store import LakeStore
from schemas import checked
from schemas.registry import SCORED

TABLE: Final = lk.VERSION_REGRESSIONS
# One file per rubric, named so it can never collide with a part's name.
FILE_NAME: Final = "all-versions.parquet"
RUN_COLUMNS: Final = ("run_id", "agent", "agent_version", "problem_id", "env_type", "graded_at")
SCORE_COLUMNS: Final = ("run_id", "status", "score", "passed")


def runs_after(lake: Path, rubric_id: str, tx: lk.Transaction) -> pl.LazyFrame:
    """Every landed task run with its score under ``rubric_id``, as ``tx`` will leave them."""
    store = LakeStore(lake)
    landed = store.landed_after("task_runs", tx).select(RUN_COLUMNS)
    scores = store.scores_after(rubric_id, "task_scores", tx).select(SCORE_COLUMNS)
    return landed.join(scores, on="run_id", how="left")


def build(
    runs: pl.LazyFrame, rubric_id: str, confidence: float = stats.DEFAULT_CONFIDENCE
) -> pl.DataFrame:
    """The table's rows (checked by its model) from warehouse-shaped runs."""
    table = gate.version_regressions(runs, confidence).with_columns(rubric_id=pl.lit(rubric_id))
    return checked(SCORED[TABLE], table)


def stage(lake: Path, rubric_id: str, tx: lk.Transaction) -> int:
    """Rebuild the table for ``rubric_id`` inside ``tx``; the number of rows written."""
    frame = build(runs_after(lake, rubric_id, tx), rubric_id)
    LakeStore(lake).write_rubric_table(tx, rubric_id, TABLE, FILE_NAME, frame)
    return frame.height
