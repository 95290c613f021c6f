"""The scoring stage both engines run, on three runs of each kind (``conftest``)."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pipeline.engines.arrow_stages import SORT_KEYS
from pipeline.engines.engine import LocalEngine
from pipeline.engines.local import score_part
from pipeline.engines.stage import FAMILIES, TASKS, Family, score_tables
from pipeline.rubric import parse_rubric
from pipeline.storage import lake as lk
from pipeline.storage.store import LakeStore

DEFAULT = parse_rubric({})


def _lazy(
    landed: Mapping[str, pl.DataFrame], tables: Mapping[str, object]
) -> dict[str, pl.LazyFrame]:
    return {table: landed[table].lazy() for table in tables}


@pytest.mark.parametrize("family", FAMILIES, ids=["tasks", "surfaces"])
def test_a_batch_of_one_kind_gives_only_its_score_tables(
    landed: Mapping[str, pl.DataFrame], family: Family
) -> None:
    scored = score_tables(_lazy(landed, family.landed), DEFAULT)
    assert list(scored) == list(family.scores)
    assert all(scored[name].height >= 3 for name in scored)


def test_nothing_landed_gives_no_tables_and_counts_its_seconds() -> None:
    seconds: dict[str, float] = {}
    assert score_tables({}, DEFAULT, seconds) == {}
    assert sorted(seconds) == ["checks", "plan"]


def test_the_task_scores_are_the_hand_computed_ones(landed: Mapping[str, pl.DataFrame]) -> None:
    scores = score_tables(_lazy(landed, TASKS.landed), DEFAULT)["task_scores"]
    # exploit: gate defect_matching 1.0 passes; 0.6*1 + 0.2*0.5 + 0.1*0.25 = 0.725, less the
    # 0.1 penalty = 0.625. patch: gate patch_verified 1.0 passes, 0.25 each; minimization
    # rescored from sizes 20/10 (ratio 2, halfway from 1 to the default multiple 3: 0.5,
    # not the stored 0.2): 0.25*(1 + 0.5 + 0.7) = 0.55. audit: weight 1.0 * 0.75.
    rows = dict(scores.select("run_id", pl.col("score").round(12)).rows())
    assert rows == {"r-audit": 0.75, "r-exploit": 0.625, "r-patch": 0.55}


def test_the_local_engine_writes_each_table_of_a_part_and_counts_its_rows(
    lake: Path, tmp_path: Path
) -> None:
    lake = Path(shutil.copytree(lake, tmp_path / "lake"))
    store = LakeStore(lake)
    (part,) = store.all_parts()
    expected = score_part(store, part, DEFAULT)
    seconds: dict[str, float] = {}
    with lk.lake_lock(lake), lk.Transaction(lake) as tx:
        counts = LocalEngine().score(store, DEFAULT, [part], tx, seconds)
    assert counts == {name: frame.height for name, frame in expected.items()}
    assert {"plan", "checks", "writes"} <= set(seconds)
    for name, frame in expected.items():
        written = pl.read_parquet(lk.score_dir(lake, DEFAULT.rubric_id, name) / f"{part}.parquet")
        assert_frame_equal(written, frame)


def _written_scores(lake: Path, copy: Path) -> dict[str, pl.DataFrame]:
    """Each score table the local engine writes for a fresh copy of ``lake``'s one part."""
    lake = Path(shutil.copytree(lake, copy))
    store = LakeStore(lake)
    (part,) = store.all_parts()
    with lk.lake_lock(lake), lk.Transaction(lake) as tx:
        LocalEngine().score(store, DEFAULT, [part], tx, {})
    return {
        name: pl.read_parquet(lk.score_dir(lake, DEFAULT.rubric_id, name) / f"{part}.parquet")
        for family in FAMILIES
        for name in family.scores
    }


def test_scoring_a_part_twice_writes_the_same_rows_in_key_order(lake: Path, tmp_path: Path) -> None:
    first = _written_scores(lake, tmp_path / "first")
    second = _written_scores(lake, tmp_path / "second")
    for name, frame in first.items():
        assert_frame_equal(second[name], frame)
        assert frame.height >= 3
        assert_frame_equal(frame, frame.sort(SORT_KEYS[name]))
