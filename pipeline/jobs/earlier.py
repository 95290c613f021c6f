"""What an ingest reads of the lake to dedupe a chunk: the runs, quarantine rows and
landed lines already there (or staged by its transaction) at the chunk's run_ids and places.

The reads filter as they scan, so an ingest holds what matches one chunk, never the
whole history.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta

import polars as pl

from pipeline.ingest.batch import Batch
from pipeline.ingest.dedupe import LANDED_ATTEMPTS_SCHEMA, Attempts, Deduped, touching
from pipeline.sources.blocks import READ_AGAIN
from pipeline.sources.inspect.attempts import attempt_rows, run_attempts
from pipeline.sources.inspect.columns import RUN_ID_PREFIX
from pipeline.sources.inspect.retries import (
    first_runs,
    inspect_task_runs,
    is_lacking,
    retried_lacking,
)
from pipeline.sources.inspect.shared import (
    PROBLEMS,
    TASK_PROBLEMS,
    inspect_problems,
    task_problems,
)
from pipeline.sources.inspect.table import RunningEval
from pipeline.storage import lake as lk
from pipeline.storage.landed_index import LandedIndex, run_id_hash
from pipeline.storage.store import LakeStore
from schemas import checked, polars_schema
from schemas.registry import LANDED
from schemas.tasks import QuarantineResolved

PROVENANCE = ["run_id", "content_hash", "source", "line"]


def landed_index(store: LakeStore) -> dict[str, LandedIndex]:
    """Per runs table, the index of the run_ids the lake holds."""
    return {table: _hash_index(store.landed(table).select("run_id")) for table in lk.RUN_TABLES}


def earlier_runs(
    store: LakeStore,
    batch: Batch,
    tx: lk.Transaction | None = None,
    index: dict[str, LandedIndex] | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """What ``dedupe`` compares ``batch``'s runs with: the task and surface runs already
    landed (or staged by ``tx``) under a run_id of the batch, of either kind (a run_id is
    one run's, whether a task grade or a report).

    The scans filter as they read, so an ingest holds what matches one chunk, never the
    whole history: at 10M landed runs their provenance alone is ~1.4 GiB. With an
    ``index`` of what has landed, only the run_ids it may hold are looked for, and a
    chunk of new runs reads nothing.
    """

    wanted = pl.concat(
        [batch.tables[table]["run_id"] for table in ("task_runs", "surface_runs")]
    ).unique()

    def runs(table: str) -> pl.DataFrame:
        run_ids = wanted
        if index is not None:
            run_ids = index[table].may_hold(run_ids)
        if run_ids.is_empty():
            return pl.DataFrame(schema=polars_schema(LANDED[table])).select(PROVENANCE)
        return (
            store.landed(table, tx)
            .select(PROVENANCE)
            .filter(pl.col("run_id").is_in(run_ids.implode()))
            .collect()
        )

    return runs("task_runs"), runs("surface_runs")


def _hash_index(keys: pl.LazyFrame) -> LandedIndex:
    """The index of the one string column of ``keys``, hashed as it is scanned (the
    history's keys are never held at once)."""
    hashes = keys.select(run_id_hash(pl.first())).collect(engine="streaming")
    return LandedIndex(hashes.to_series().to_numpy())


def _landed_attempts(store: LakeStore, tx: lk.Transaction | None) -> pl.LazyFrame:
    return store.landed("run_metadata", tx).filter(attempt_rows())


@dataclass
class AttemptIndex:
    """The hashes of the attempts landed (or staged in ``tx``) so far, read at the first
    batch that holds any; after it, a batch of new attempts reads nothing more of the lake
    (uuids are random: no file statistics can skip a scan, ~0.4 s at 3M landed runs)."""

    store: LakeStore
    tx: lk.Transaction | None = None
    index: LandedIndex | None = None

    def earlier(self, batch: Batch) -> Attempts:
        """The attempts ``batch``'s task runs are, and the lake's runs of them."""
        found = run_attempts(batch.tables["run_metadata"])
        wanted = found["attempt"].unique()
        if wanted.is_empty():
            return Attempts(found, pl.DataFrame(schema=LANDED_ATTEMPTS_SCHEMA))
        if self.index is None:
            self.index = _hash_index(_landed_attempts(self.store, self.tx).select("value"))
        return Attempts(found, earlier_attempts(self.store, self.index.may_hold(wanted), self.tx))

    def add(self, run_metadata: pl.DataFrame) -> None:
        """Take in the attempts of runs that landed (a part's run_metadata)."""
        if self.index is not None:
            self.index.add(run_metadata.filter(attempt_rows()).get_column("value"))


@dataclass
class Landed:
    """What an ingest or a replay has landed so far, held between its chunks: the run_ids
    and attempts (to dedupe the next chunk without reading the whole history) and the
    problems of its Inspect runs (for inspect/shared.py's note). Every part it writes is
    taken in by ``add``."""

    runs: dict[str, LandedIndex]
    attempts: AttemptIndex
    inspect_problems: list[pl.DataFrame] = field(default_factory=list)

    @classmethod
    def of(cls, store: LakeStore, tx: lk.Transaction) -> Landed:
        return cls(landed_index(store), AttemptIndex(store, tx))

    def add(self, frames: dict[str, pl.DataFrame]) -> None:
        """Take in a part's landed tables (those it has)."""
        for table in lk.RUN_TABLES:
            if table in frames:
                self.runs[table].add(frames[table].get_column("run_id"))
        if "run_metadata" in frames:
            self.attempts.add(frames["run_metadata"])
        if "task_runs" in frames:
            self.inspect_problems.append(inspect_problems(frames["task_runs"]))


def batch_attempts(store: LakeStore, batch: Batch) -> Attempts:
    """``AttemptIndex.earlier`` for one batch alone (a replay's): the lake read once."""
    found = run_attempts(batch.tables["run_metadata"])
    return Attempts(found, earlier_attempts(store, found["attempt"].unique()))


def earlier_attempts(
    store: LakeStore, wanted: pl.Series, tx: lk.Transaction | None = None
) -> pl.DataFrame:
    """The lake's runs (attempt, run_id, batch_id) of the ``wanted`` attempts."""
    if wanted.is_empty():
        return pl.DataFrame(schema=LANDED_ATTEMPTS_SCHEMA)
    return (
        _landed_attempts(store, tx)
        .filter(pl.col("value").is_in(wanted.implode()))
        .select("run_id", "batch_id", attempt="value")
        .collect()
        .select(*LANDED_ATTEMPTS_SCHEMA)
    )


def lake_task_problems(
    store: LakeStore, tx: lk.Transaction, landed: Sequence[pl.DataFrame]
) -> pl.DataFrame:
    """(env_type, problem_id, task) of every Inspect run the lake holds, with what ``tx``
    has staged, at the problems (env_type, problem_id) of ``landed``; read only when an
    ingest landed any."""
    wanted = pl.concat([pl.DataFrame(schema=PROBLEMS), *landed]).unique()
    if wanted.is_empty():
        return pl.DataFrame(schema=TASK_PROBLEMS)
    runs = store.landed("task_runs", tx).join(
        wanted.lazy(), on=["env_type", "problem_id"], how="semi"
    )
    return task_problems(runs, store.landed("run_metadata", tx)).collect()


def earlier_quarantine(store: LakeStore, batch: Batch, tx: lk.Transaction) -> pl.DataFrame:
    """The quarantine rows (source, line, raw) of ``batch``'s source files, landed or staged,
    that touch its lines: a bad line read again from the same place is counted as seen,
    not quarantined twice."""
    held = store.landed("quarantine", tx).select("source", "line", "line_end", "raw")
    return touching(held, batch).collect()


def read_again() -> pl.Expr:
    """A quarantine row's reason is one after which reading its file again may land it."""
    return pl.any_horizontal(pl.col("reason").str.starts_with(reason) for reason in READ_AGAIN)


def unread_before(store: LakeStore) -> pl.DataFrame:
    """The lake's whole-file quarantine rows (source, line 0, raw) that say reading the file
    again may land it (the system would not let it be read; an Inspect eval still running):
    a later reading of the file resolves them. Read once an ingest (its own batch reads each
    file once), not once a chunk."""
    return (
        store.landed("quarantine")
        .filter((pl.col("line") == 0) & read_again())
        .select("source", "line", "raw")
        .collect()
    )


def repeated_places(batch: Batch, deduped: Deduped) -> pl.DataFrame:
    """Each place (source, line) of ``batch`` whose line is an exact copy of a run, with that
    run's id: of a run landed before or earlier in the chunk (dedupe), or of the same text
    earlier in the chunk (found while parsing), whether that one landed now or was itself a
    copy."""
    runs = pl.concat(
        [deduped.batch.tables[table].select("row_nr", "run_id") for table in lk.RUN_TABLES]
        + [deduped.duplicate_rows.select("row_nr", "run_id")]
    )
    copied = batch.copies.join(runs, left_on="first_row", right_on="row_nr")
    return pl.concat(
        [
            deduped.duplicate_rows.select("source", "line", "run_id"),
            copied.select("source", "line", "run_id"),
        ]
    )


def _text() -> pl.Expr:
    # A row without text is resolved by one without text; lakes written before 2026-12-05
    # stored such a resolution's text as "" (sql/marts/quarantine.sql reads them alike).
    return pl.col("raw").fill_null("").alias("text")


def resolved_before(store: LakeStore) -> pl.DataFrame:
    """The places (source, line, text) whose quarantine rows are resolved already: not
    resolved again. Read once an ingest, as ``unread_before``."""
    return store.landed("quarantine_resolved").select("source", "line", _text()).unique().collect()


def still_open(rows: pl.DataFrame, resolved: pl.DataFrame | None) -> pl.DataFrame:
    """The quarantine ``rows`` (source, line, raw, ...) that no ``resolved`` place resolves."""
    if resolved is None:
        return rows
    on = ["source", "line", "text"]
    return rows.with_columns(_text()).join(resolved, on=on, how="anti").drop("text")


def superseded_quarantine(
    frames: dict[str, pl.DataFrame],
    held: pl.DataFrame,
    batch_id: str,
    unread: pl.DataFrame | None = None,
    repeated: pl.DataFrame | None = None,
    resolved: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Quarantine rows whose place (source, line) this batch has read anew.

    A line once refused and now accepted (read again under a rubric that knows its
    env type, or a file first read while still being written) is one line in one
    place: its old quarantine row is resolved by the run it became, as a replay does
    (outcome ``landed``). A place quarantined again with other text (the file changed)
    keeps only the newer row: the older one is ``superseded``, and so is an ``unread``
    row (a file that could not be read) once this batch has read lines of its file. A row
    without text (a sample that could not be read) whose place now holds an exact copy of a
    run landed before (``repeated``: source, line, run_id) is resolved as a ``duplicate`` of
    that run. A row ``resolved`` before (source, line, text) is left as it is.
    """
    earlier = still_open(held.filter(pl.col("line") > 0).select("source", "line", "raw"), resolved)
    landed = pl.concat(
        [frames[table].select("run_id", "source", "line") for table in lk.RUN_TABLES]
    )
    copies = (
        pl.DataFrame(schema={"source": pl.String, "line": pl.Int64, "run_id": pl.String})
        if repeated is None
        else repeated.select("source", "line", "run_id")
    )
    relanded = pl.concat(
        [
            earlier.join(landed, on=["source", "line"]).with_columns(outcome=pl.lit("landed")),
            # A row with text stays unless that text is read again: its place holds other text.
            earlier.filter(pl.col("raw").is_null())
            .join(copies, on=["source", "line"])
            .with_columns(outcome=pl.lit("duplicate")),
        ]
    )
    requarantined = (
        earlier.join(
            frames["quarantine"].select("source", "line", new_raw="raw"), on=["source", "line"]
        )
        .filter(pl.col("raw").ne_missing(pl.col("new_raw")))
        .select(
            "source", "line", "raw", run_id=pl.lit(None, pl.String), outcome=pl.lit("superseded")
        )
    )
    read = pl.concat(
        [frames[table].select("source") for table in lk.RUN_TABLES]
        + [frames["quarantine"].filter((pl.col("line") > 0) | ~read_again()).select("source")]
        + [copies.select("source")]
    )
    reread = (
        pl.DataFrame(schema={"source": pl.String, "line": pl.Int64, "raw": pl.String})
        if unread is None
        else still_open(unread, resolved).join(read.unique(), on="source", how="semi")
    ).select("source", "line", "raw", run_id=pl.lit(None, pl.String), outcome=pl.lit("superseded"))
    rows = (
        pl.concat(
            [
                relanded.select("source", "line", "raw", "run_id", "outcome"),
                requarantined,
                reread,
            ]
        )
        .with_columns(batch_id=pl.lit(batch_id))
        .unique(maintain_order=True)
    )
    return checked(QuarantineResolved, rows)


def earlier_landed_lines(store: LakeStore, batch: Batch, tx: lk.Transaction) -> pl.DataFrame:
    """The landed runs (source, line, raw) at the places of ``batch``'s rejected lines.

    Read only when the batch rejects a line, and filtered by place as it is read.
    """
    places = batch.quarantine.select("source", "line").unique()
    if places.is_empty():
        return pl.DataFrame(schema={"source": pl.String, "line": pl.Int64, "raw": pl.String})
    return pl.concat(
        [
            store.landed(table, tx)
            .select("source", "line", raw="record")
            .filter(
                pl.col("source").is_in(places["source"].unique().implode())
                & pl.col("line").is_in(places["line"].unique().implode())
            )
            .join(places.lazy(), on=["source", "line"], how="semi")
            .collect()
            for table in lk.RUN_TABLES
        ]
    )


# How finely Inspect's eval.created tells when an eval began.
CREATED_PRECISION = timedelta(seconds=1)


@dataclass
class Retries:
    """Inspect logs left at "started" whose eval the lake holds a retry of: runs of the
    same task id, of another eval, graded after the log began. It looks in the lake as
    committed, as the ingest began: what it finds does not depend on how its input was cut
    into chunks, and a killed log and its retry read together are told apart by the next one.
    Inspect writes when an eval began to the second, and eval_set retries a failed eval at
    once: runs graded within that second may be the failed attempt's own. ``found`` names,
    per log, the retry's first run. The lake's Inspect runs are read once, at the first
    such log, and held sorted by task id: each log after it reads nothing, and finds its
    task's runs by binary search (a frame per task id cost ~1 s at 30,000 of them)."""

    store: LakeStore
    found: dict[str, str] = field(default_factory=dict)
    by_task: pl.DataFrame | None = None

    def _runs(self, task_id: str) -> pl.DataFrame | None:
        if self.by_task is None:
            self.by_task = (
                inspect_task_runs(self.store.landed("task_runs"), self.store.landed("run_metadata"))
                .drop("source")
                .drop_nulls("task_id")
                .sort("task_id")
                .collect()
            )
        ids = self.by_task.get_column("task_id")
        start = int(ids.search_sorted(task_id, side="left"))
        end = int(ids.search_sorted(task_id, side="right"))
        return self.by_task.slice(start, end - start) if end > start else None

    def find(self, running: RunningEval) -> str | None:
        """The retry's eval id, else None (the reader's FindRetry)."""
        runs = self._runs(running.task_id)
        if runs is None:
            return None
        log = pl.DataFrame(
            {
                "source": [running.source],
                "task_id": [running.task_id],
                "eval_id": [running.eval_id],
                "after": [running.created + CREATED_PRECISION],
            },
            schema_overrides={"after": pl.Datetime("us", "UTC")},
        )
        first = first_runs(log, runs, ["source"])
        if first.is_empty():
            return None
        run_id = str(first["run_id"].item())
        self.found[running.source] = run_id
        return run_id.removeprefix(RUN_ID_PREFIX).split("/")[0]


def lacking_retried(store: LakeStore, tx: lk.Transaction) -> pl.DataFrame:
    """The open entries of Inspect logs counting the samples they lack (an eval stopped
    early) that a retry landed since (``retries.retried_lacking``), with the retry's first
    run, from the lake with what ``tx`` staged, so that a log and its retry land in either
    order, or together. Read once an ingest that landed Inspect runs: the quarantine rows
    of such entries first, then, only when one is open, the runs of their tasks."""
    quarantine = store.landed("quarantine", tx).select("source", "line", "raw", "reason")
    resolved = store.landed("quarantine_resolved", tx).select("source", "line", _text())

    def open_rows(rows: pl.LazyFrame) -> pl.DataFrame:
        found = rows.drop("reason").collect()
        at = resolved.join(found.lazy().select("source").unique(), on="source", how="semi")
        return still_open(found, at.unique().collect())

    lacking = open_rows(quarantine.filter((pl.col("line") > 0) & is_lacking()))
    if lacking.is_empty():
        return lacking.with_columns(run_id=pl.lit(None, pl.String))
    runs = inspect_task_runs(store.landed("task_runs", tx), store.landed("run_metadata", tx))
    tasks = runs.join(lacking.lazy().select("source").unique(), on="source").select("task_id")
    runs_of_tasks = runs.join(tasks.unique(), on="task_id", how="semi").collect()
    sources = runs_of_tasks.get_column("source").unique()
    unfinished = open_rows(quarantine.filter(pl.col("source").is_in(sources.implode())))
    return retried_lacking(lacking, runs_of_tasks, unfinished.get_column("source").unique())
