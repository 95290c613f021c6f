"""Landing line chunks: each chunk becomes one part of the lake, written once, here.

A *part* is one chunk of one ingest: ``<table>/<batch_id>-pNNNNN.parquet`` in
every landed table, holding whole runs with all their components, with a manifest.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from contextvars import copy_context
from dataclasses import dataclass, field

import polars as pl

from pipeline.core.settings import current_settings
from pipeline.ingest import evolution
from pipeline.ingest.batch import Batch, build_batch, landed_frames
from pipeline.ingest.dedupe import Deduped, dedupe, dedupe_failed
from pipeline.ingest.quarantine import (
    FileFailure,
    compact_quarantine,
    failed_block,
    guarded,
    quarantined_lines,
    row_lines,
)
from pipeline.jobs.earlier import (
    Landed,
    Retries,
    earlier_landed_lines,
    earlier_quarantine,
    earlier_runs,
    lacking_retried,
    read_again,
    repeated_places,
    resolved_before,
    still_open,
    superseded_quarantine,
    unread_before,
)
from pipeline.sources.blocks import NOTED_BY_READER
from pipeline.sources.inspect.retries import lacking_retried_note
from pipeline.sources.lines import Lines
from pipeline.storage import lake as lk
from pipeline.storage.store import LakeStore
from schemas import checked, polars_schema
from schemas.registry import LANDED
from schemas.tasks import Quarantine, QuarantineResolved

# Batches built at once: two keep both cores busy (a build alone leaves one mostly idle)
# and hold two chunks, the bound of memory.
BUILDERS = 2


@dataclass
class Lander:
    """Lands line chunks into ``tx``, one part each; a file whose lines fail stays alone.

    Anything that goes wrong while one file's lines are turned into tables (a DuckDB
    error, a MemoryError, a bug) quarantines that file as one block with the error as
    its reason, and the rest of the chunk lands. The lake's own reads and writes are
    outside the guard: their failure stops the run and the transaction undoes it.
    """

    store: LakeStore
    tx: lk.Transaction
    env_types: list[str]
    batch_id: str
    landed: Landed
    totals: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(
            ("lines", "task", "surface", "quarantined", "duplicates", "blank", "seen", "resolved"),
            0,
        )
    )
    parts: list[str] = field(default_factory=list)
    # Names (fields, components, kinds) the batch holds, for schema news.
    found: dict[str, set[str]] = field(default_factory=dict)
    outcomes: list[pl.DataFrame] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    # What the reader said about files as a whole (sources.lines.Lines.notes).
    notes: list[str] = field(default_factory=list)
    # The lake's whole-file rows a later reading resolves (``READ_AGAIN``), and the places
    # resolved already, read at the first chunk that needs them.
    unread: pl.DataFrame | None = None
    resolved: pl.DataFrame | None = None
    # Per input file, the bad lines kept with their raw text so far (the rest are blocks).
    kept: dict[str, int] = field(default_factory=dict)
    keep_bad_lines: int = field(default_factory=lambda: current_settings().keep_bad_lines)
    next_part: int = 0
    # Inspect logs left at "started" whose eval the reader found retried (they give no lines).
    retries: Retries | None = None

    def unread_sources(self) -> set[str]:
        """The input files quarantined whole (line 0) in this run for a reason after which
        reading them again may land them (``READ_AGAIN``): the nightly leaves them out of its
        ledger, so a later night reads them again, changed or not."""
        if not self.outcomes:
            return set()
        whole = pl.concat(self.outcomes).filter(pl.col("whole") & read_again())
        return set(whole["source"].to_list())

    def land_all(self, chunks: Iterable[Lines], builders: int = BUILDERS) -> None:
        """Land ``chunks`` in their order, each as ``land`` would.

        A chunk's batch is built (parsed, validated: DuckDB and Polars, which release the
        GIL) in a worker while the chunk before it is checked against the lake and
        written here, and the next one is read. At most two chunks are held at a time;
        everything that depends on what landed before (dedupe, quarantine, the part
        number) stays here, in order.
        """
        pool = ThreadPoolExecutor(max_workers=builders, thread_name_prefix="build")
        try:
            ahead: tuple[Lines, Future[Batch]] | None = None
            for lines in chunks:
                self.notes.extend(lines.notes)
                # The worker runs under the caller's settings (DuckDB's memory, threads).
                built = pool.submit(copy_context().run, self._build, lines)
                if ahead is not None:
                    self.land(*ahead)
                ahead = (lines, built)
            if ahead is not None:
                self.land(*ahead)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        if any(problems.height for problems in self.landed.inspect_problems):
            self._settle_lacking()

    def _settle_lacking(self) -> None:
        """Resolve the entries of Inspect logs counting samples they lacked (an eval stopped
        early) whose retry has landed them (``earlier.lacking_retried``), in a part of their
        own: outcome ``retried``, the retry's first run. Only Inspect runs landing can
        make good such an entry (the log's own name its task; a retry's land the samples)."""
        rows = lacking_retried(self.store, self.tx)
        if rows.is_empty():
            return
        resolved = checked(QuarantineResolved, self._retried_rows(rows))
        frames = {name: pl.DataFrame(schema=polars_schema(LANDED[name])) for name in LANDED}
        frames["quarantine_resolved"] = resolved
        self.store.write_part(self.tx, self._new_part(), frames, sorted(set(rows["source"])))
        self.totals["resolved"] += resolved.height
        self.notes.extend(rows.select(lacking_retried_note()).to_series().to_list())

    def _build(self, lines: Lines) -> Batch:
        return guarded(build_batch, lines, self.env_types, self.batch_id)

    def land(self, lines: Lines, built: Future[Batch] | None = None) -> None:
        """Land one chunk as one part (``built``: its batch, built ahead)."""
        sources = lines.frame.get_column("source").unique(maintain_order=True).to_list()
        earlier_failed = [s for s in sources if s in self.failed]
        if earlier_failed:
            # The rest of a file that failed in an earlier chunk follows it into quarantine.
            self._split(lines, sources)
            return
        try:
            self._write(lines, *self._frames(lines, built))
        except FileFailure as failure:
            if len(sources) > 1:
                self._split(lines, sources)
                return
            for source in sources:
                self.failed[source] = str(failure)
            self._write(lines, *self._failed(lines, failure))

    def _split(self, lines: Lines, sources: list[str]) -> None:
        for index, source in enumerate(sources):
            files = lines.files if index == 0 else [source]
            own = Lines(frame=lines.frame.filter(pl.col("source") == source), files=files)
            if source in self.failed:
                self._write(own, *self._failed(own, FileFailure(RuntimeError(self.failed[source]))))
            else:
                self.land(own)

    def _frames(
        self, lines: Lines, built: Future[Batch] | None
    ) -> tuple[Batch, Deduped, dict[str, pl.DataFrame]]:
        batch = built.result() if built is not None else self._build(lines)
        if batch.blank_lines == batch.lines_read:
            # Blank lines only: nothing to compare with the lake, nothing to land.
            empty = {
                name: pl.DataFrame(schema=polars_schema(model)) for name, model in LANDED.items()
            }
            return batch, Deduped(batch, 0, 0), empty
        earlier = earlier_runs(self.store, batch, self.tx, self.landed.runs)
        held = earlier_quarantine(self.store, batch, self.tx)
        again = earlier_landed_lines(self.store, batch, self.tx)
        attempts = self.landed.attempts.earlier(batch)
        result = guarded(dedupe, batch, *earlier, held, again, attempts)
        result.batch.quarantine = guarded(
            compact_quarantine, result.batch.quarantine, self._kept(), self.keep_bad_lines
        )
        frames = guarded(landed_frames, result.batch)
        if self.unread is None:
            self.unread = unread_before(self.store)
        if self.resolved is None:
            self.resolved = resolved_before(self.store)
        repeated = repeated_places(batch, result)
        resolved = superseded_quarantine(
            frames, held, self.batch_id, self.unread, repeated, self.resolved
        )
        frames["quarantine_resolved"] = resolved
        # Resolved once: a file read over several chunks does not resolve its row again.
        self.unread = self.unread.join(
            resolved.filter(pl.col("line") == 0).select("source"), on="source", how="anti"
        )
        return batch, result, frames

    def _kept(self) -> pl.DataFrame:
        return pl.DataFrame(
            {"source": list(self.kept), "kept": list(self.kept.values())},
            schema={"source": pl.String, "kept": pl.Int64},
        )

    def _failed(
        self, lines: Lines, failure: FileFailure
    ) -> tuple[Batch, Deduped, dict[str, pl.DataFrame]]:
        rows = failed_block(lines.frame, failure, self.batch_id)
        tables = {name: pl.DataFrame(schema=polars_schema(LANDED[name])) for name in LANDED}
        batch = Batch(self.batch_id, tables, rows, lines.frame.height, 0, lines.files)
        held = earlier_quarantine(self.store, batch, self.tx)
        result = dedupe_failed(batch, held)
        tables["quarantine"] = checked(Quarantine, result.batch.quarantine.drop("row_nr"))
        return batch, result, tables

    def _write(
        self, lines: Lines, batch: Batch, result: Deduped, frames: dict[str, pl.DataFrame]
    ) -> None:
        part = self._new_part()
        logs, retried = self._retried(lines.files)
        if retried.height:
            frames["quarantine_resolved"] = pl.concat(
                [frames["quarantine_resolved"], retried], how="vertical_relaxed"
            )
        self.store.write_part(self.tx, part, frames, lines.files)
        if frames["task_runs"].height or frames["surface_runs"].height:
            self.parts.append(part)
        self.landed.add(frames)
        self.outcomes.append(file_outcomes(frames))
        # A file whose runs were in the lake already is not one none of whose lines landed.
        repeated = (
            lines.frame.join(result.duplicate_rows, on="row_nr", how="semi")
            .select("source")
            .unique()
        )
        if repeated.height:
            self.outcomes.append(
                repeated.select(
                    "source",
                    lines=pl.lit(0, pl.Int64),
                    whole=pl.lit(False),
                    reason=pl.lit(None, pl.String),
                    landed=pl.lit(True),
                )
            )
        in_full = frames["quarantine"].filter(pl.col("raw").is_not_null())
        # One entry per input file of the chunk (not per line): kept-in-full counts so far.
        per_file = in_full.group_by("source").len()
        for source, count in zip(per_file["source"], per_file["len"], strict=True):
            self.kept[source] = self.kept.get(source, 0) + count
        # A retried log is one entry, a copy of its retry: counted as a duplicate.
        self.totals["lines"] += batch.lines_read + logs
        self.totals["task"] += frames["task_runs"].height
        self.totals["surface"] += frames["surface_runs"].height
        self.totals["quarantined"] += quarantined_lines(frames["quarantine"])
        self.totals["duplicates"] += result.skipped_duplicates + logs
        self.totals["blank"] += batch.blank_lines
        self.totals["seen"] += result.already_quarantined
        self.totals["resolved"] += frames.get("quarantine_resolved", pl.DataFrame()).height
        evolution.merge(self.found, evolution.names_of(frames, result.batch.task_keys))

    def _retried(self, files: list[str]) -> tuple[int, pl.DataFrame]:
        """How many logs among ``files`` the reader found retried, and their open whole-file
        rows (an eval still running), resolved by the retry's first run (``retried``)."""
        found = {} if self.retries is None else self.retries.found
        logs = [source for source in files if source in found]
        if not logs:
            return 0, pl.DataFrame(schema=polars_schema(QuarantineResolved))
        if self.unread is None:
            self.unread = unread_before(self.store)
        if self.resolved is None:
            self.resolved = resolved_before(self.store)
        runs = pl.DataFrame(
            {"source": logs, "run_id": [found.pop(source) for source in logs]},
            schema={"source": pl.String, "run_id": pl.String},
        )
        rows = still_open(self.unread, self.resolved).join(runs, on="source")
        self.unread = self.unread.join(runs, on="source", how="anti")
        return len(logs), self._retried_rows(rows)

    def _retried_rows(self, rows: pl.DataFrame) -> pl.DataFrame:
        """Open quarantine ``rows`` (source, line, raw) resolved by a retry's first run
        (``run_id``), as quarantine_resolved holds them."""
        return rows.select(
            "source",
            "line",
            "raw",
            "run_id",
            outcome=pl.lit("retried"),
            batch_id=pl.lit(self.batch_id),
        )

    def _new_part(self) -> str:
        part = f"{self.batch_id}-p{self.next_part:05d}"
        self.next_part += 1
        return part


def file_outcomes(frames: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """Per input file of one chunk: lines quarantined, whether it was unreadable, the first
    reason, and whether any of its lines landed (source, lines, whole, reason, landed)."""
    landed = pl.concat(
        [frames["task_runs"].select("source"), frames["surface_runs"].select("source")]
    ).unique()
    quarantined = (
        frames["quarantine"]
        .group_by("source")
        .agg(
            lines=row_lines().sum().cast(pl.Int64),
            whole=(pl.col("line") == 0).any(),
            reason=pl.col("reason").first(),
        )
        .with_columns(landed=False)
    )
    return pl.concat(
        [
            quarantined,
            landed.select(
                "source",
                lines=pl.lit(0, pl.Int64),
                whole=False,
                reason=pl.lit(None, pl.String),
                landed=True,
            ),
        ]
    )


def file_notes(outcomes: list[pl.DataFrame], exclude: set[str] | None = None) -> list[str]:
    """Input files named by what went wrong with them as a whole.

    A file that could not be read at all, or none of whose lines landed, is
    worth a line of its own in the summary, beside the per-line quarantine.
    Judged over every chunk, so a big file read in several chunks gets one
    note, and none when a line of it landed in another chunk. A file quarantined whole
    for a reason ``NOTED_BY_READER`` gets none here: its reader's note says so on every
    read, with what to do.
    """
    if not outcomes:
        return []
    per_file = (
        pl.concat(outcomes)
        .group_by("source", maintain_order=True)
        .agg(
            pl.col("lines").sum(),
            pl.col("whole").any(),
            pl.col("reason").drop_nulls().first(),
            pl.col("landed").any(),
        )
        .filter(
            ~pl.col("landed")
            & (pl.col("lines") > 0)
            & ~pl.col("source").is_in(sorted(exclude or ()))
            & ~(
                pl.col("whole")
                & pl.any_horizontal(pl.col("reason").str.starts_with(r) for r in NOTED_BY_READER)
            )
        )
        .sort("source")
        .select(
            pl.when(pl.col("whole"))
            .then(pl.format("{}: {}", pl.col("source"), pl.col("reason")))
            .otherwise(
                pl.format(
                    "{}: none of its lines landed ({} quarantined; first reason: {})",
                    pl.col("source"),
                    pl.col("lines"),
                    pl.col("reason"),
                )
            )
        )
    )
    return per_file.to_series().to_list()
