"""The scoring stage both engines run, on three runs of each kind (``conftest``)."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Mapping
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pipeline.engines import local as local_engine
from pipeline.engines.arrow_stages import SORT_KEYS
from pipeline.engines.engine import LocalEngine
from pipeline.engines.local import score_part, score_parts
from pipeline.engines.stage import FAMILIES, TASKS, Family, score_tables
from pipeline.rubric import Rubric, parse_rubric
from pipeline.storage import lake as lk
from pipeline.storage.store import LakeStore
from tests.unit.engines.conftest import PART

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


def _parts_of(lake: Path, copies: int, tmp_path: Path) -> tuple[LakeStore, list[str]]:
    """The conftest lake with its one part copied ``copies`` times under other names."""
    root = Path(shutil.copytree(lake, tmp_path / "many"))
    for path in list(root.rglob(f"{PART}.parquet")):
        for index in range(copies):
            shutil.copy2(path, path.with_name(f"p-{index + 2:04d}.parquet"))
    store = LakeStore(root)
    return store, store.all_parts()


def test_parts_scored_side_by_side_come_in_order_and_equal_one_at_a_time(
    lake: Path, tmp_path: Path
) -> None:
    store, parts = _parts_of(lake, 4, tmp_path)
    assert len(parts) == 5
    alone: dict[str, float] = {}
    side: dict[str, float] = {}
    serial = list(score_parts(store, DEFAULT, parts, alone, scorers=1))
    ahead = list(score_parts(store, DEFAULT, parts, side, scorers=2))
    assert [part for part, _ in ahead] == parts == [part for part, _ in serial]
    for (_, left), (_, right) in zip(serial, ahead, strict=True):
        assert list(left) == list(right)
        for name in left:
            assert_frame_equal(left[name], right[name])
    # Every part's stage seconds are counted, on the caller's dict.
    assert sorted(side) == sorted(alone) == ["awaited", "checks", "plan"]


def test_a_part_that_fails_ahead_stops_the_scoring_and_leaves_no_worker(
    lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, parts = _parts_of(lake, 3, tmp_path)
    real = local_engine.score_part

    def fails_on_the_third(
        store: LakeStore, part: str, rubric: Rubric, seconds: dict[str, float] | None = None
    ) -> dict[str, pl.DataFrame]:
        if part == parts[2]:
            raise RuntimeError(f"scoring {part} failed")
        return real(store, part, rubric, seconds)

    monkeypatch.setattr(local_engine, "score_part", fails_on_the_third)
    got = []
    with pytest.raises(RuntimeError, match=f"scoring {parts[2]} failed"):
        for part, _ in score_parts(store, DEFAULT, parts, {}, scorers=2):
            got.append(part)
    assert got == parts[:2]
    assert not [t for t in threading.enumerate() if t.name.startswith("score")]


def test_parts_are_written_in_order_and_a_failed_write_stops_the_scoring(
    lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, parts = _parts_of(lake, 3, tmp_path)
    order: list[str] = []
    failing: set[str] = set()  # parts whose write fails
    real = LakeStore.write_scores

    def recorded(
        self: LakeStore,
        tx: lk.Transaction,
        rubric_id: str,
        part: str,
        table: str,
        frame: pl.DataFrame,
    ) -> None:
        if part in failing:
            raise OSError(f"disk full writing {part}")
        order.append(part)
        real(self, tx, rubric_id, part, table, frame)

    monkeypatch.setattr(LakeStore, "write_scores", recorded)
    with lk.lake_lock(store.root), lk.Transaction(store.root) as tx:
        LocalEngine().score(store, DEFAULT, parts, tx, {})
    # Each part's tables together, the parts in their order.
    assert list(dict.fromkeys(order)) == parts
    tables = sum(len(family.scores) for family in FAMILIES)
    assert [order.count(part) for part in parts] == [tables] * len(parts)

    failing.add(parts[1])
    with (
        pytest.raises(OSError, match=f"disk full writing {parts[1]}"),
        lk.lake_lock(store.root),
        lk.Transaction(store.root) as tx,
    ):
        LocalEngine().score(store, DEFAULT, parts, tx, {})
    assert not [t for t in threading.enumerate() if t.name.startswith("score")]
