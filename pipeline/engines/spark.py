"""The Spark engine: the same scoring, run by Apache Spark over the lake's Parquet.

Spark reads the landed parts, nests each run's components and penalties (each
report's findings) into one row, and ``mapInArrow`` hands every Arrow batch to
``pipeline.engines.arrow_stages``, which unnests it and runs the stage the local
engine runs (``stage.score_tables``). The scored rows are repartitioned by part and
written with ``partitionBy("part")`` into a scratch folder, so each part's
scores are one file; the driver then splits each file into the lake's score
tables, part by part, for the engine's writer (``engine.write_scores``), which
writes them through the caller's ``Transaction`` to exactly the paths the local
engine uses (``scores/<rubric_key>/<table>/<part>.parquet``).
Until the transaction commits nothing is visible to the views; the scratch
folder (``<lake>/_spark/``) is never globbed by them and is removed afterwards
(or by the next Spark run, if a crash left it).

On a cluster, the lake must be on storage every executor and the driver see at
the same path (see the README); PySpark is an optional extra
(``pip install .[spark]``) and needs a JVM.
"""

from __future__ import annotations

import os
import shutil
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructType

from pipeline.engines import arrow_stages as stages
from pipeline.engines.engine import DEFAULT_SPARK_MASTER, write_scores
from pipeline.engines.stage import FAMILIES, Family
from pipeline.rubric import Rubric, parse_rubric
from pipeline.storage import lake as lk
from pipeline.storage.store import LakeStore

PART = "part"
# What each batch carries through the stage per run: the part it was landed in.
CARRY = pl.Schema({PART: pl.String})
SCRATCH = "_spark"
APP_NAME = "agent-grades-scoring"
# Runs per Arrow batch handed to a stage: Polars' fixed cost per call is paid
# once per batch, so batches are larger than Spark's default of 10,000 rows.
DEFAULT_BATCH_ROWS = 100_000
# Spark's default of 200 shuffle partitions is for clusters; on one machine each
# is a task with a fixed cost, for a few parts.
LOCAL_SHUFFLE_PARTITIONS = 4

ArrowMapper = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


def _spark_schema(schema: pl.Schema) -> StructType:
    """The Spark type of a Polars schema, via the classic (non-large) Arrow types."""
    arrow = pl.DataFrame(schema=schema).to_arrow(compat_level=stages.COMPAT).schema
    small = pa.schema([_small_field(field) for field in arrow])
    result: StructType = from_arrow_schema(small, prefer_timestamp_ntz=False)
    return result


def _small_type(dtype: pa.DataType) -> pa.DataType:
    if pa.types.is_large_string(dtype):
        return pa.string()
    if pa.types.is_large_list(dtype) or pa.types.is_list(dtype):
        return pa.list_(_small_field(dtype.value_field))
    if pa.types.is_struct(dtype):
        return pa.struct([_small_field(dtype.field(i)) for i in range(dtype.num_fields)])
    return dtype


def _small_field(field: pa.Field) -> pa.Field:
    return pa.field(field.name, _small_type(field.type), nullable=True)


def _rubric_document(rubric: Rubric) -> dict[str, Any]:
    # A plain document crosses to the Python workers; the rubric is rebuilt there.
    return {"rubric_id": rubric.rubric_id, **rubric.resolved}


def _mapper(family: Family, rubric_document: dict[str, Any], output: StructType) -> ArrowMapper:
    """What mapInArrow runs on an executor: every batch through the scoring stage."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        rubric = parse_rubric(rubric_document)
        arrow_output = to_arrow_schema(output)
        for batch in batches:
            table = pa.Table.from_batches([batch])
            scored = stages.score_batch(family, table, rubric, (PART,))
            yield from scored.cast(arrow_output).to_batches()

    return run


def _files(store: LakeStore, table: str, parts: list[str]) -> dict[str, str]:
    """Each file of ``parts`` in a landed table (the one an open transaction staged for a
    part it lands, else the lake's) as a file:// URI, with its part. URIs: on a cluster
    whose default filesystem is HDFS, a bare path would name a different file; the lake is a
    POSIX path every node mounts."""
    paths = store.part_paths(table, parts)
    return {
        path.resolve().as_uri(): part
        for path, part in zip(paths, parts, strict=True)
        if path.exists()
    }


def _with_part(frame: DataFrame, files: dict[str, str]) -> DataFrame:
    """The landed part a row came from, by its file's name (Spark's hidden file metadata):
    a staged file is named by its transaction, not by its part, so the name is looked up."""
    parts = {Path(uri).name: part for uri, part in files.items()}
    names = F.create_map(*[F.lit(item) for pair in parts.items() for item in pair])
    return frame.withColumn(PART, names[F.col("_metadata.file_name")])


def _nested(
    spark: SparkSession, files: list[str], column: str, fields: tuple[str, ...]
) -> DataFrame | None:
    if not files:
        return None
    children = spark.read.parquet(*files).select("run_id", *fields)
    return children.groupBy("run_id").agg(
        F.collect_list(F.struct(*[F.col(f) for f in fields])).alias(column)
    )


def _empty_list(spark: SparkSession, schema: StructType, column: str) -> Any:
    return F.lit(None).cast(schema[column].dataType)


def _input(
    spark: SparkSession, store: LakeStore, parts: list[str], family: Family
) -> DataFrame | None:
    """The batches of ``family``: a row per run of ``parts``, its children nested."""
    run_files = _files(store, family.runs, parts)
    if not run_files:
        return None
    schema = _spark_schema(stages.input_schema(family, CARRY))
    run_columns = family.landed[family.runs]
    runs = _with_part(spark.read.parquet(*run_files), run_files).select(*run_columns, PART)
    for table in family.children:
        column = stages.NESTED[table]
        nested = _nested(
            spark, list(_files(store, table, parts)), column, stages.child_fields(family, table)
        )
        runs = (
            runs.join(nested, on="run_id", how="left")
            if nested is not None
            else runs.withColumn(column, _empty_list(spark, schema, column))
        )
    return runs.select(*schema.fieldNames())


def _score_to_scratch(frame: DataFrame, family: Family, rubric: Rubric, target: Path) -> None:
    output = _spark_schema(stages.output_schema(family, CARRY))
    scored = frame.repartition(PART).mapInArrow(
        _mapper(family, _rubric_document(rubric), output), output
    )
    # One partition per part (repartition by part) and partitionBy: one file per part.
    scored.write.mode("overwrite").partitionBy(PART).parquet(target.resolve().as_uri())


def _part_files(scratch: Path, part: str) -> list[Path]:
    return sorted((scratch / f"{PART}={part}").glob("*.parquet"))


@contextmanager
def _session(master: str, spark: SparkSession | None) -> Iterator[SparkSession]:
    """The caller's session, the active one, or a new one on ``master`` (stopped after)."""
    active = spark or SparkSession.getActiveSession()
    if active is not None:
        yield active
        return
    builder = (
        SparkSession.builder.master(master)
        .appName(APP_NAME)
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(DEFAULT_BATCH_ROWS))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.showConsoleProgress", "false")
    )
    if master.startswith("local"):
        # Local workers run this interpreter (the venv with the pipeline installed)
        # unless PYSPARK_PYTHON says otherwise; on a cluster the executors'
        # environment decides (README: "Running on a cluster").
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = builder.config("spark.sql.shuffle.partitions", str(LOCAL_SHUFFLE_PARTITIONS))
    session = builder.getOrCreate()
    try:
        yield session
    finally:
        session.stop()


def scored_parts(
    store: LakeStore,
    rubric: Rubric,
    parts: list[str],
    master: str = DEFAULT_SPARK_MASTER,
    *,
    spark: SparkSession | None = None,
) -> Iterator[tuple[str, dict[str, pl.DataFrame]]]:
    """Score ``parts`` under ``rubric`` on Spark; then each part with its score tables.

    The caller holds the lake's lock (as around ``jobs.score_locked``), so the scratch
    folder is ours; it is removed once every part has been read back, or on failure.
    """
    if not parts:
        return
    root = store.root / SCRATCH
    # We hold the lock, so anything here is a dead run's leftover.
    shutil.rmtree(root, ignore_errors=True)
    scratch = root / uuid.uuid4().hex
    try:
        with _session(master, spark) as session:
            for family in FAMILIES:
                frame = _input(session, store, parts, family)
                if frame is not None:
                    _score_to_scratch(frame, family, rubric, scratch / family.runs)
        for part in parts:
            yield part, _part_tables(store, scratch, part)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _part_tables(store: LakeStore, scratch: Path, part: str) -> dict[str, pl.DataFrame]:
    """A part's score tables, read back from the scratch folder.

    As the local engine: a part gets the score files of the families it holds (a landed
    part whose runs all scored nothing still gets empty files).
    """
    tables: dict[str, pl.DataFrame] = {}
    empty = stages.empty_tables()
    for family in FAMILIES:
        if store.has_part(family.runs, part):
            files = _part_files(scratch / family.runs, part)
            scored = stages.unnest_scores(family, pl.read_parquet(files)) if files else empty
            tables |= {name: scored[name] for name in family.scores}
    return tables


def score_with_spark(
    lake: Path,
    rubric: Rubric,
    parts: list[str],
    tx: lk.Transaction,
    master: str = DEFAULT_SPARK_MASTER,
    *,
    spark: SparkSession | None = None,
) -> dict[str, int]:
    """Score ``parts`` under ``rubric`` on Spark; write every score table of every part
    through ``tx``, where the local engine would; return row counts per table (every
    task and surface table, 0 where none was written).

    The caller holds the lake's lock (as around ``jobs.score_locked``); ``tx``
    commits or aborts the result as one unit.
    """
    counts = dict.fromkeys((name for family in FAMILIES for name in family.scores), 0)
    store = LakeStore(lake, tx)
    scored = scored_parts(store, rubric, parts, master, spark=spark)
    return counts | write_scores(store, rubric, scored, tx, {}, len(parts))
