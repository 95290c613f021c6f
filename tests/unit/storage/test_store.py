"""LakeStore: the one object that reads and writes the lake (pipeline/storage/store.py),
and the engine chosen as a type by the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from pipeline.engines import LocalEngine, SparkEngine
from pipeline.storage import lake as lk
from pipeline.storage.parts import manifest_path, part_problems
from pipeline.storage.store import LakeStore
from schemas import polars_schema
from schemas.registry import LANDED, SCORED


def resolved(*lines: int) -> pl.DataFrame:
    rows = {
        "source": ["a.jsonl"] * len(lines),
        "line": list(lines),
        "raw": [f"line {n}" for n in lines],
        "run_id": [f"r{n}" for n in lines],
        "outcome": ["landed"] * len(lines),
        "batch_id": ["b1"] * len(lines),
    }
    return pl.DataFrame(rows, schema=polars_schema(LANDED["quarantine_resolved"]))


def test_a_part_is_written_once_with_its_manifest_and_read_back(tmp_path: Path) -> None:
    store = LakeStore(tmp_path)
    with lk.Transaction(tmp_path) as tx:
        written = store.write_part(
            tx,
            "b1-p00000",
            {"quarantine_resolved": resolved(1, 2), "quarantine": resolved()},
            ["a.jsonl"],
        )
        # Before the commit only the transaction's own reads see the staged file.
        assert store.landed("quarantine_resolved").collect().height == 0
        assert store.landed("quarantine_resolved", tx).collect().height == 2
    assert written == {"quarantine_resolved": 2}  # the empty table writes no file
    assert store.landed_parts("quarantine_resolved") == ["b1-p00000"]
    assert store.landed_parts("quarantine") == []
    assert store.has_part("quarantine_resolved", "b1-p00000")
    assert store.part("quarantine_resolved", "b1-p00000").collect().equals(resolved(1, 2))
    # A part a table does not hold reads as an empty frame of that table's schema.
    empty = store.part("quarantine", "b1-p00000").collect()
    assert empty.height == 0 and empty.schema == polars_schema(LANDED["quarantine"])
    document = json.loads(manifest_path(tmp_path, "b1-p00000").read_text())
    assert document["tables"] == {"quarantine_resolved": 2}
    assert document["sources"] == ["a.jsonl"]
    assert part_problems(tmp_path) == []


def test_nothing_to_write_writes_no_part(tmp_path: Path) -> None:
    store = LakeStore(tmp_path)
    with lk.Transaction(tmp_path) as tx:
        assert store.write_part(tx, "b1-p00000", {"quarantine_resolved": resolved()}, []) == {}
    assert store.landed_parts("quarantine_resolved") == []
    assert not manifest_path(tmp_path, "b1-p00000").exists()


def test_a_score_file_written_again_with_its_rows_is_left_as_it_was(tmp_path: Path) -> None:
    store = LakeStore(tmp_path)
    scores = pl.DataFrame(
        {"run_id": ["r1"], "score": [0.5]}, schema={"run_id": pl.String, "score": pl.Float64}
    )
    with lk.Transaction(tmp_path) as tx:
        store.write_scores(tx, "default", "p1", "task_scores", scores)
    (path,) = lk.parquet_files(lk.score_dir(tmp_path, "default", "task_scores"))
    before = path.stat()
    with lk.Transaction(tmp_path) as tx:
        store.write_scores(tx, "default", "p1", "task_scores", scores)
        assert tx.moves == []  # nothing staged to move
        assert tx.files_after(path.parent) == [path]
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    # Other bytes replace it, as before.
    with lk.Transaction(tmp_path) as tx:
        store.write_scores(tx, "default", "p1", "task_scores", scores.with_columns(score=1.0))
    assert pl.read_parquet(path)["score"].to_list() == [1.0]
    assert path.stat().st_ino != before.st_ino
    assert not any(lk.staging_dir(tmp_path).iterdir())


HELD = pl.DataFrame(
    {
        "run_id": ["r1", "r2", "r3"],
        "score": [0.0, float("nan"), None],
        "anomalies": [["a"], [], None],
    },
    schema={"run_id": pl.String, "score": pl.Float64, "anomalies": pl.List(pl.String)},
)


@pytest.mark.parametrize(
    ("again", "kept"),
    [
        (HELD, True),  # the same rows, NaN and nulls included
        (HELD.with_columns(score=pl.Series([-0.0, float("nan"), None])), False),  # 0.0 is not -0.0
        (HELD.reverse(), False),  # the same rows in another order
        (HELD.with_columns(pl.col("score").cast(pl.Float32)), False),  # another schema
        (HELD.head(2), False),
        (HELD.with_columns(anomalies=pl.Series([["b"], [], None])), False),
    ],
)
def test_what_a_score_file_must_hold_to_be_kept(
    tmp_path: Path, again: pl.DataFrame, kept: bool
) -> None:
    """Kept when it holds the frame's rows in its order, floats bit for bit; else replaced."""
    store = LakeStore(tmp_path)
    with lk.Transaction(tmp_path) as tx:
        store.write_scores(tx, "default", "p1", "task_scores", HELD)
    (path,) = lk.parquet_files(lk.score_dir(tmp_path, "default", "task_scores"))
    inode = path.stat().st_ino
    with lk.Transaction(tmp_path) as tx:
        store.write_scores(tx, "default", "p1", "task_scores", again)
    assert (path.stat().st_ino == inode) is kept
    held = pl.read_parquet(path)
    assert held.schema == again.schema and held.height == again.height
    assert held.select(pl.col(pl.Float64, pl.Float32).is_nan()).equals(
        again.select(pl.col(pl.Float64, pl.Float32).is_nan())
    )


def test_a_damaged_or_missing_score_file_is_written_whole(tmp_path: Path) -> None:
    store = LakeStore(tmp_path)
    target = lk.score_dir(tmp_path, "default", "task_scores") / "p1.parquet"
    target.parent.mkdir(parents=True)
    target.write_bytes(b"PAR1 not a parquet file PAR1")
    with lk.Transaction(tmp_path) as tx:
        store.write_scores(tx, "default", "p1", "task_scores", HELD)
    assert pl.read_parquet(target).height == 3
    target.unlink()
    with lk.Transaction(tmp_path) as tx:
        store.write_scores(tx, "default", "p1", "task_scores", HELD)
    assert pl.read_parquet(target).height == 3


def test_scores_are_filed_by_rubric_and_dropped_for_parts_not_kept(tmp_path: Path) -> None:
    store = LakeStore(tmp_path)
    scores = pl.DataFrame(schema=polars_schema(SCORED["task_scores"]))
    with lk.Transaction(tmp_path) as tx:
        for part in ("p1", "p2"):
            store.write_scores(tx, "default", part, "task_scores", scores)
    assert store.scored_parts("default", "task_scores") == ["p1", "p2"]
    assert store.scored_parts("other", "task_scores") == []
    with lk.Transaction(tmp_path) as tx:
        store.drop_scores_except(tx, "default", ["task_scores"], keep=["p2"])
    assert store.scored_parts("default", "task_scores") == ["p2"]


def test_state_documents_are_written_in_the_transaction(tmp_path: Path) -> None:
    store = LakeStore(tmp_path)
    assert store.read_state("ledger", {}) == {}
    with pytest.raises(RuntimeError), lk.Transaction(tmp_path) as tx:
        store.stage_state(tx, "ledger", {"x": 1})
        raise RuntimeError("crash before the commit")
    assert store.read_state("ledger", {}) == {}
    with lk.Transaction(tmp_path) as tx:
        store.stage_state(tx, "ledger", {"x": 1})
    assert store.read_state("ledger", {}) == {"x": 1}


def test_the_engine_is_chosen_once_as_a_type() -> None:
    from pipeline.cli.options import Engine
    from pipeline.cli.options import engine_or_exit as _engine_or_exit

    assert _engine_or_exit(Engine.local, None) == LocalEngine()
    assert _engine_or_exit(Engine.spark, None) == SparkEngine("local[2]")
    assert _engine_or_exit(Engine.spark, "spark://h:7077") == SparkEngine("spark://h:7077")


def test_a_store_over_an_open_transaction_reads_the_lake_it_will_leave(tmp_path: Path) -> None:
    # p1 landed before; the open transaction lands p2, rewrites p1's scores, deletes p0's
    committed = LakeStore(tmp_path)
    scores = pl.DataFrame(schema=polars_schema(SCORED["task_scores"]))
    with lk.Transaction(tmp_path) as tx:
        committed.write_part(tx, "b1-p00001", {"quarantine_resolved": resolved(1)}, ["a.jsonl"])
        for part in ("p0", "p1"):
            committed.write_scores(tx, "default", part, "task_scores", scores)
    with pytest.raises(RuntimeError), lk.Transaction(tmp_path) as tx:
        committed.write_part(tx, "b2-p00000", {"quarantine_resolved": resolved(2, 3)}, ["b.jsonl"])
        committed.write_scores(tx, "default", "p1", "task_scores", HELD)
        tx.delete(lk.score_dir(tmp_path, "default", "task_scores") / "p0.parquet")
        pending = LakeStore(tmp_path, tx)
        table = "quarantine_resolved"
        assert pending.landed_parts(table) == ["b1-p00001", "b2-p00000"]
        assert committed.landed_parts(table) == ["b1-p00001"]
        assert pending.has_part(table, "b2-p00000") and not committed.has_part(table, "b2-p00000")
        assert pending.part(table, "b2-p00000").collect()["line"].to_list() == [2, 3]
        assert committed.part(table, "b2-p00000").collect().height == 0
        (staged,) = pending.part_paths(table, ["b2-p00000"])
        assert staged.parent == tx.stage
        assert pending.scored_parts("default", "task_scores") == ["p1"]
        assert committed.scored_parts("default", "task_scores") == ["p0", "p1"]
        # a rewrite is read from its staged file; a target written twice, from the last
        rewritten = tx.file_after(lk.score_dir(tmp_path, "default", "task_scores") / "p1.parquet")
        assert rewritten is not None and pl.read_parquet(rewritten).height == HELD.height
        assert tx.file_after(tmp_path / "nowhere.parquet") is None
        raise RuntimeError("aborted: nothing of it lands")
    assert committed.landed_parts("quarantine_resolved") == ["b1-p00001"]
