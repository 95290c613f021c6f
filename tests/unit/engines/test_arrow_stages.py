"""The Spark adapter's stage gives what the local engine gives, on three runs of each kind.

No Spark here: a batch is nested with Polars as Spark nests it (a row per run, its children
as ``list<struct>``), handed to ``arrow_stages.score_batch`` as Arrow, and unnested again;
the local engine scores the same runs landed as one part of a lake (``conftest``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pipeline.engines import arrow_stages as stages
from pipeline.engines.local import score_part
from pipeline.engines.stage import SURFACES, TASKS, Family
from pipeline.rubric import parse_rubric
from pipeline.storage.store import LakeStore

DEFAULT = parse_rubric({})
# Other weights, multiple, threshold and penalty scale, so a rescoring shows.
TASK_CHANGES = {"minimization_multiple": 2.0, "failure_threshold": 0.5, "penalty_scale": 2.0}
EXPLOIT_WEIGHTS = {"defect_matching": 0.5, "pov_quality": 0.3}
CHANGED = parse_rubric(
    {
        "rubric_id": "changed",
        "task": {**TASK_CHANGES, "exploit": {"weights": EXPLOIT_WEIGHTS}},
        "surface": {"weights": {"schema_hygiene": 3}},
    }
)


def _nested(family: Family, landed: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """The runs of ``family`` as Spark's batch: a row per run, children nested."""
    batch = landed[family.runs].select(family.landed[family.runs])
    for table in family.children:
        fields = stages.child_fields(family, table)
        column = stages.NESTED[table]
        nested = landed[table].group_by("run_id").agg(pl.struct(fields).alias(column))
        batch = batch.join(nested, on="run_id", how="left")
    return batch


def _adapter_tables(family: Family, batch: pl.DataFrame, rubric: Any) -> dict[str, pl.DataFrame]:
    scored = pl.from_arrow(stages.score_batch(family, batch.to_arrow(), rubric))
    assert isinstance(scored, pl.DataFrame)
    return stages.unnest_scores(family, scored)


def _sorted(frame: pl.DataFrame, table: str) -> pl.DataFrame:
    return frame.sort(stages.SORT_KEYS[table])


@pytest.mark.parametrize("rubric", [DEFAULT, CHANGED], ids=["default", "changed"])
def test_the_adapter_gives_what_the_local_engine_gives(
    lake: Path, landed: Mapping[str, pl.DataFrame], rubric: Any
) -> None:
    store = LakeStore(lake)
    local = score_part(store, store.all_parts()[0], rubric)
    assert sorted(local) == sorted((*TASKS.scores, *SURFACES.scores))
    for family in (TASKS, SURFACES):
        adapter = _adapter_tables(family, _nested(family, landed), rubric)
        for table in family.scores:
            assert local[table].height >= 3
            assert_frame_equal(_sorted(adapter[table], table), _sorted(local[table], table))


def test_batches_may_split_runs_anywhere(landed: Mapping[str, pl.DataFrame]) -> None:
    batch = _nested(TASKS, landed)
    whole = _adapter_tables(TASKS, batch, CHANGED)
    pieces = [_adapter_tables(TASKS, batch.slice(i, 1), CHANGED) for i in range(batch.height)]
    for table, frame in whole.items():
        split = pl.concat([piece[table] for piece in pieces])
        assert_frame_equal(_sorted(split, table), frame)


# Each landed table's unique key, to compare a table row by row.
KEYS = {
    "task_runs": ["run_id"],
    "task_components": ["run_id", "component"],
    "task_penalties": ["run_id", "penalty"],
    "surface_runs": ["run_id"],
    "surface_findings": ["run_id", "finding_index"],
}


@pytest.mark.parametrize("family", [TASKS, SURFACES], ids=["tasks", "surfaces"])
def test_nesting_and_unnesting_a_batch_loses_nothing(
    landed: Mapping[str, pl.DataFrame], family: Family
) -> None:
    # Two task runs have no penalty: their lists are null, and give no rows back.
    flat = stages.unnest_batch(family, _nested(family, landed))
    for table, columns in family.landed.items():
        expected = landed[table].select(columns).sort(KEYS[table])
        assert_frame_equal(flat[table].sort(KEYS[table]), expected)


def test_carry_columns_pass_through_per_run(landed: Mapping[str, pl.DataFrame]) -> None:
    batch = _nested(TASKS, landed).with_columns(part=pl.concat_str(pl.lit("p-"), "run_id"))
    out = pl.from_arrow(stages.score_batch(TASKS, batch.to_arrow(), DEFAULT, ("part",)))
    assert isinstance(out, pl.DataFrame)
    assert out.columns == list(stages.output_schema(TASKS, pl.Schema({"part": pl.String})))
    assert out.select("run_id", "part").sort("run_id").rows() == [
        ("r-audit", "p-r-audit"),
        ("r-exploit", "p-r-exploit"),
        ("r-patch", "p-r-patch"),
    ]


def test_a_batch_without_a_needed_column_is_refused_by_name(
    landed: Mapping[str, pl.DataFrame],
) -> None:
    batch = _nested(SURFACES, landed).drop("findings").to_arrow()
    with pytest.raises(stages.ArrowStageError, match=r"surface_runs.*lacks column.*findings"):
        stages.score_batch(SURFACES, batch, DEFAULT)
