"""The Spark engine scores exactly like the local engine, through the same Arrow stages.

Without Spark: the pure ``Arrow table -> Arrow table`` stages of
``pipeline.engines.arrow_stages`` give, part by part, what the local engine's
``score_part`` gives, however the runs are split into batches. With Spark (``local[2]``, one
session for the whole test run): ``score_with_spark`` writes, through a
Transaction, the same score files at the same paths as ``jobs.score``, every
column equal after sorting by keys, for the default rubric and a changed one;
the warehouse views read them as usual; an aborted transaction leaves nothing.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pytest
from polars.testing import assert_frame_equal

from pipeline.engines import arrow_stages as stages
from pipeline.engines.local import score_part
from pipeline.engines.stage import SURFACES, TASKS
from pipeline.jobs import commands as jobs
from pipeline.jobs.ingest import ingest_locked
from pipeline.rubric import Rubric, parse_rubric
from pipeline.storage import lake as lk
from pipeline.storage.store import EMPTY_STEM, LakeStore
from pipeline.warehouse import build_warehouse, connect_read_only
from tests.paths import REAL_REPORTS
from tools import simulate as sim

KEYS = {
    "task_scores": ["run_id"],
    "task_component_scores": ["run_id", "component"],
    "surface_scores": ["run_id"],
    "surface_finding_scores": ["run_id", "finding_index"],
    "surface_phase_scores": ["run_id", "finding_index"],
}
# Small chunks, so the lake holds several parts (one score file each per table).
CHUNK_BYTES = 500_000
BULK_RUNS = 400
CHANGED_RUBRIC: dict[str, Any] = {
    "rubric_id": "spark-test-changed",
    "task": {
        "minimization_multiple": 2.0,
        "failure_threshold": 0.5,
        "penalty_scale": 2.0,
        "exploit": {"weights": {"defect_matching": 0.5, "pov_quality": 0.3}},
    },
    "surface": {"weights": {"context_efficiency": 10}},
}


def _java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    return shutil.which("java")


def _spark_missing() -> str | None:
    for module, extra in (("pyspark", "pyspark"), ("pandas", "pandas (pyspark[sql])")):
        if importlib.util.find_spec(module) is None:
            return f"{extra} is not installed: pip install '.[spark]'"
    if _java() is None:
        return (
            "no Java runtime (java on PATH or JAVA_HOME): apt-get install openjdk-17-jre-headless"
        )
    return None


SPARK_MISSING = _spark_missing()
# The slow tier; `make test` (--dist loadfile) runs this file on one worker: one lake, one JVM.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local[2] session for every Spark test; small Arrow batches, so that every
    partition is handed to the stages in several batches."""
    if SPARK_MISSING is not None:
        pytest.skip(SPARK_MISSING)
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = (
        SparkSession.builder.master("local[2]")
        .appName("test_spark")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "500")
        # A JVM that lives for a minute: the client compiler only and the serial collector
        # start it and run these small jobs in about half the time of the server defaults.
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def landed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lake with the sample (every special record), bulk runs and the real reports."""
    root = tmp_path_factory.mktemp("spark")
    sim.write_sample(root / "sample", seed=7)
    sim.write_task_jsonl(root / "bulk.jsonl", BULK_RUNS, seed=5)
    lake = root / "lake"
    with lk.lake_lock(lake):
        report = ingest_locked(
            [root / "sample", root / "bulk.jsonl", REAL_REPORTS], lake, chunk_bytes=CHUNK_BYTES
        )
    assert len(report.parts) >= 3, report.parts
    assert report.landed_surface_runs > 0
    return lake


def _copy(lake: Path, tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    shutil.copytree(lake, target)
    return target


def _parts(lake: Path) -> list[str]:
    tasks = set(LakeStore(lake).landed_parts("task_runs"))
    return sorted(tasks | set(LakeStore(lake).landed_parts("surface_runs")))


def _nested_tasks(lake: Path, part: str) -> pa.Table:
    """A part as a task batch: runs with components and penalties nested (what Spark builds);
    a part with no penalty file (no run of it has a penalty) gets empty lists, as in Spark."""
    runs = pl.read_parquet(lk.table_dir(lake, "task_runs") / f"{part}.parquet")
    batch = runs.select(TASKS.landed["task_runs"])
    for table, column, fields in (
        ("task_components", stages.COMPONENTS, stages.child_fields(TASKS, "task_components")),
        ("task_penalties", stages.PENALTIES, stages.child_fields(TASKS, "task_penalties")),
    ):
        path = lk.table_dir(lake, table) / f"{part}.parquet"
        if path.exists():
            nested = pl.read_parquet(path).group_by("run_id").agg(pl.struct(fields).alias(column))
            batch = batch.join(nested, on="run_id", how="left")
        else:
            dtype = stages.input_schema(TASKS)[column]
            batch = batch.with_columns(pl.lit([], dtype=dtype).alias(column))
    return batch.to_arrow()


def _nested_surfaces(lake: Path, part: str) -> pa.Table:
    runs = pl.read_parquet(lk.table_dir(lake, "surface_runs") / f"{part}.parquet")
    findings = pl.read_parquet(lk.table_dir(lake, "surface_findings") / f"{part}.parquet")
    nested = findings.group_by("run_id").agg(
        pl.struct(stages.child_fields(SURFACES, "surface_findings")).alias(stages.FINDINGS)
    )
    return (
        runs.select(SURFACES.landed["surface_runs"])
        .join(nested, on="run_id", how="left")
        .to_arrow()
    )


def _sorted(frame: pl.DataFrame, table: str) -> pl.DataFrame:
    return frame.sort(KEYS[table])


def _score_files(lake: Path, rubric: Rubric) -> dict[str, Path]:
    """Every per-part score file of one rubric, by path below the lake (the warehouse's
    schema-only placeholders are not scores; version_regressions is the rubric's, not an
    engine's)."""
    root = lake / "scores" / lk.rubric_key(rubric.rubric_id)
    return {
        str(path.relative_to(lake)): path
        for path in sorted(root.rglob("*.parquet"))
        if path.stem != EMPTY_STEM and path.parent.name in lk.SCORE_TABLES
    }


# --- the stages themselves (no Spark needed) --------------------------------------------------


def test_arrow_stages_give_what_score_part_gives(landed: Path) -> None:
    rubric = parse_rubric({})
    compared = 0
    for part in _parts(landed):
        local = score_part(LakeStore(landed), part, rubric)
        tables = stages.empty_tables()
        if (lk.table_dir(landed, "task_runs") / f"{part}.parquet").exists():
            scored = stages.score_batch(TASKS, _nested_tasks(landed, part), rubric)
            tables.update(stages.unnest_scores(TASKS, pl.from_arrow(scored)))  # type: ignore[arg-type]
        if (lk.table_dir(landed, "surface_runs") / f"{part}.parquet").exists():
            scored = stages.score_batch(SURFACES, _nested_surfaces(landed, part), rubric)
            tables.update(stages.unnest_scores(SURFACES, pl.from_arrow(scored)))  # type: ignore[arg-type]
        for table, frame in local.items():
            assert_frame_equal(_sorted(tables[table], table), _sorted(frame, table))
            compared += frame.height
    assert compared > BULK_RUNS


def test_task_batches_may_split_runs_anywhere(landed: Path) -> None:
    # Scoring is per run, so three batches give what one batch gives.
    rubric = parse_rubric(CHANGED_RUBRIC)
    part = LakeStore(landed).landed_parts("task_runs")[0]
    whole = _nested_tasks(landed, part)
    one = pl.from_arrow(stages.score_batch(TASKS, whole, rubric))
    third = whole.num_rows // 3
    pieces = [whole.slice(0, third), whole.slice(third, third), whole.slice(2 * third)]
    split = pl.concat([pl.from_arrow(stages.score_batch(TASKS, p, rubric)) for p in pieces])  # type: ignore[misc]
    assert isinstance(one, pl.DataFrame)
    for table, frame in stages.unnest_scores(TASKS, one).items():
        assert_frame_equal(stages.unnest_scores(TASKS, split)[table], frame)


def test_carry_columns_pass_through_per_run(landed: Path) -> None:
    part = LakeStore(landed).landed_parts("task_runs")[0]
    batch = pl.from_arrow(_nested_tasks(landed, part))
    assert isinstance(batch, pl.DataFrame)
    batch = batch.with_columns(part=pl.concat_str(pl.lit("p-"), pl.col("run_id")))
    out = pl.from_arrow(stages.score_batch(TASKS, batch.to_arrow(), parse_rubric({}), ("part",)))
    assert isinstance(out, pl.DataFrame)
    expected = pl.concat_str(pl.lit("p-"), pl.col("run_id"))
    assert out.height == batch.height
    assert out.select((pl.col("part") == expected).all()).item()


def test_a_batch_without_a_needed_column_is_refused_by_name(landed: Path) -> None:
    part = LakeStore(landed).landed_parts("task_runs")[0]
    batch = _nested_tasks(landed, part).drop_columns([stages.PENALTIES])
    with pytest.raises(stages.ArrowStageError, match=r"lacks column.*penalties"):
        stages.score_batch(TASKS, batch, parse_rubric({}))


# --- Spark ------------------------------------------------------------------------------------


def _score_on_spark(lake: Path, rubric: Rubric, session: Any) -> dict[str, int]:
    from pipeline.engines.spark import score_with_spark

    with lk.lake_lock(lake), lk.Transaction(lake) as tx:
        return score_with_spark(lake, rubric, _parts(lake), tx, spark=session)


@pytest.mark.parametrize("rubric_doc", [{}, CHANGED_RUBRIC], ids=["default", "changed"])
@pytest.mark.spark
@pytest.mark.skipif(SPARK_MISSING is not None, reason=SPARK_MISSING or "")
def test_spark_writes_what_the_local_engine_writes(
    landed: Path, tmp_path: Path, spark: Any, rubric_doc: dict[str, Any]
) -> None:
    rubric = parse_rubric(rubric_doc)
    local, remote = _copy(landed, tmp_path, "local"), _copy(landed, tmp_path, "spark")
    jobs.score(local, rubric)
    counts = _score_on_spark(remote, rubric, spark)

    local_files, spark_files = _score_files(local, rubric), _score_files(remote, rubric)
    # One file per landed part and table, at the local engine's paths.
    assert sorted(spark_files) == sorted(local_files)
    families = {"task_runs": 2, "surface_runs": 3}
    expected = sum(len(LakeStore(landed).landed_parts(runs)) * n for runs, n in families.items())
    assert len(spark_files) == expected
    for relative, path in local_files.items():
        table = Path(relative).parent.name
        assert_frame_equal(
            _sorted(pl.read_parquet(spark_files[relative]), table),
            _sorted(pl.read_parquet(path), table),
        )
    local_counts = {
        t: sum(
            pl.read_parquet(p).height
            for p in lk.parquet_files(lk.score_dir(local, rubric.rubric_id, t))
            if p.stem != EMPTY_STEM
        )
        for t in KEYS
    }
    assert counts == local_counts
    assert not (remote / "_spark").exists()

    # The views read Spark's files as usual.
    build_warehouse(remote, rubric.rubric_id)
    views = {}
    for lake in (local, remote):
        con = connect_read_only(lake)
        try:
            views[lake] = [con.table(v).pl().sort("run_id") for v in ("task_runs", "surface_runs")]
        finally:
            con.close()
    for left, right in zip(views[local], views[remote], strict=True):
        assert left.height > 0
        assert_frame_equal(left, right)


@pytest.mark.spark
@pytest.mark.skipif(SPARK_MISSING is not None, reason=SPARK_MISSING or "")
def test_an_aborted_spark_scoring_leaves_the_lake_as_it_was(
    landed: Path, tmp_path: Path, spark: Any
) -> None:
    from pipeline.engines.spark import score_with_spark

    lake = _copy(landed, tmp_path, "aborted")
    rubric = parse_rubric({})
    before = sorted(str(p.relative_to(lake)) for p in lake.rglob("*") if p.is_file())

    class Crash(RuntimeError):
        pass

    with pytest.raises(Crash), lk.lake_lock(lake), lk.Transaction(lake) as tx:
        # One part is enough to have staged files the abort must discard.
        score_with_spark(lake, rubric, _parts(lake)[:1], tx, spark=spark)
        assert any(tx.stage.iterdir())
        raise Crash("killed before the commit")
    after = sorted(str(p.relative_to(lake)) for p in lake.rglob("*") if p.is_file())
    assert after == before
    assert _score_files(lake, rubric) == {}


@pytest.mark.spark
@pytest.mark.skipif(SPARK_MISSING is not None, reason=SPARK_MISSING or "")
def test_spark_scores_the_parts_its_own_transaction_lands(tmp_path: Path, spark: Any) -> None:
    # ingest, run and nightly land and score in one transaction: Spark reads the parts it
    # stages (files named by the transaction, not by their part), before they are in the lake
    from pipeline.engines.spark import score_with_spark

    source = tmp_path / "runs.jsonl"
    sim.write_task_jsonl(source, 1_200, seed=11)  # past CHUNK_BYTES: several parts
    rubric = parse_rubric({})
    lake, local = tmp_path / "lake", tmp_path / "local"
    with lk.lake_lock(lake), lk.Transaction(lake) as tx:
        report = ingest_locked([source], lake, chunk_bytes=CHUNK_BYTES, tx=tx)
        parts = LakeStore(lake, tx).all_parts()
        assert parts == report.parts and len(parts) >= 2
        assert LakeStore(lake).all_parts() == []  # staged, not landed yet
        counts = score_with_spark(lake, rubric, parts, tx, spark=spark)
    assert counts["task_scores"] == report.landed_task_runs
    jobs.ingest([source], local, rubric)
    for table in ("task_scores", "task_component_scores"):
        assert_frame_equal(
            _sorted(_scores_of(lake, rubric, table), table),
            _sorted(_scores_of(local, rubric, table), table),
        )


def _scores_of(lake: Path, rubric: Rubric, table: str) -> pl.DataFrame:
    files = lk.parquet_files(lk.score_dir(lake, rubric.rubric_id, table))
    return pl.concat([pl.read_parquet(p) for p in files if p.stem != EMPTY_STEM])
