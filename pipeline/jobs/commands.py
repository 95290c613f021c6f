"""The pipeline definition: stages wired together, with the lake's I/O at the edges.

ingest: files -> line chunks -> records -> landed parts (one transaction per ingest)
score:  landed parts -> scores under one rubric, part by part (one transaction)
run:    ingest, then score what is not scored yet, then the warehouse's views

A *part* is one chunk of one ingest: ``<table>/<batch_id>-pNNNNN.parquet`` in
every landed table, holding whole runs with all their components. Scores are
written per part (``scores/<rubric_key>/<table>/<part>.parquet``), so scoring
holds one part in memory at a time, and "what is new" is the parts that have
no score file under the current rubric yet.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
from rich.console import Console
from rich.table import Table

from pipeline import surface
from pipeline.cli.progress import progress, timed
from pipeline.cli.tables import print_table
from pipeline.compare import regressions as version_regressions
from pipeline.core.sql import sql_text
from pipeline.ingest import evolution
from pipeline.ingest.batch import (
    Batch,
    Deduped,
    FileFailure,
    build_batch,
    compact_quarantine,
    dedupe,
    dedupe_failed,
    failed_block,
    guarded,
    keep_bad_lines_setting,
    landed_frames,
    quarantined_lines,
    row_lines,
    unterminated_notes,
)
from pipeline.jobs.lineage import RescoreDiff, rescore_diff
from pipeline.rubric import Rubric, parse_rubric
from pipeline.sources.files import DEFAULT_CHUNK_BYTES, Limits, Lines, iter_line_chunks, scan_inputs
from pipeline.storage import lake as lk
from pipeline.storage.landed_index import LandedIndex, run_id_hash
from pipeline.storage.parts import (
    check_and_repair,
    file_facts,
    manifest,
    manifest_path,
)
from pipeline.storage.state import repair_state
from pipeline.tasks import score as task_score
from pipeline.warehouse import (
    build_warehouse,
    connect_read_only,
    open_commands,
    warehouse_path,
)
from schemas import checked, checked_by_plan, polars_schema
from schemas.registry import LANDED, SCORED
from schemas.tasks import Quarantine, QuarantineResolved

CURRENT_RUBRIC = "current_rubric"
RUBRICS = "rubrics"
FIRST_QUERY = "select * from by_agent order by agent, agent_version, env_type;"
PROVENANCE = ["run_id", "content_hash", "source", "line"]
RUN_TABLES = ("task_runs", "surface_runs")
SCORE_FAMILIES = lk.SCORE_FAMILIES
# Schema-only files earlier warehouses wrote into the lake so globs matched; not parts.
EMPTY_STEM = "empty"


@dataclass
class IngestReport:
    batch_id: str
    files: int
    lines_read: int
    landed_task_runs: int
    landed_surface_runs: int
    quarantined: int
    skipped_duplicates: int
    skipped_blank: int
    already_quarantined: int
    parts: list[str]
    seconds: float
    # Files that could not be read as they are, and repairs made before the work.
    notes: list[str] = field(default_factory=list)
    # The scoring of what landed (the ingest command scores it under the lake's rubric).
    scored: ScoreResult | None = None
    # What landed that the lake never held before, by kind (evolution.NEWS).
    schema_news: dict[str, list[str]] = field(default_factory=dict)

    @property
    def accounted(self) -> int:
        return (
            self.landed_task_runs
            + self.landed_surface_runs
            + self.quarantined
            + self.skipped_duplicates
            + self.skipped_blank
            + self.already_quarantined
        )


@dataclass
class ScoreResult:
    rubric_id: str
    task_runs: int
    surface_runs: int
    parts: int
    full: bool
    seconds: float
    notes: list[str] = field(default_factory=list)
    # Where the seconds went (local engine): plan (the Polars scoring), checks (the
    # pandera models), writes (Parquet files into the transaction); the rest is commit.
    stages: dict[str, float] = field(default_factory=dict)
    # The lake's rubric before this scoring (None: a new lake).
    rubric_before: str | None = None

    @property
    def rubric_changed(self) -> bool:
        return self.rubric_before != self.rubric_id


@dataclass
class RunSummary:
    ingest: IngestReport
    score: ScoreResult
    warehouse: Path


def current_rubric(lake: Path) -> Rubric | None:
    """The rubric the lake was last scored with, from its state."""
    document = lk.read_json(lk.state_path(lake, CURRENT_RUBRIC), None)
    if document is None:
        return None
    return parse_rubric({"rubric_id": document["rubric_id"], **document["resolved"]})


def lake_rubric(lake: Path, explicit: Rubric | None = None) -> Rubric:
    """The rubric a command works under: the one given, else the lake's, else the defaults.

    Only an explicit rubric changes the lake's; a command given none keeps it.
    """
    return explicit or current_rubric(lake) or parse_rubric({})


def rubric_conflict(lake: Path, rubric: Rubric) -> str | None:
    """Why ``rubric`` cannot be used in ``lake``: its id already names other content there.

    Scores are filed by rubric_id, so one id with two contents would mix them.
    """
    known = known_rubrics(lake).get(rubric.rubric_id)
    if known is None:
        return None
    given = json.loads(json.dumps(dict(rubric.resolved), sort_keys=True, default=str))
    if given == known:
        return None
    return (
        f"rubric_id {rubric.rubric_id!r} already names a different rubric in the lake {lake}; "
        "give the changed rubric its own rubric_id (or none, for a content hash)"
    )


def known_rubrics(lake: Path) -> dict[str, dict[str, object]]:
    """Every rubric the lake holds scores for, by rubric_id (lineage)."""
    known: dict[str, dict[str, object]] = lk.read_json(lk.state_path(lake, RUBRICS), {})
    return known


def _part_file(lake: Path, table: str, part: str) -> pl.LazyFrame:
    path = lk.table_dir(lake, table) / f"{part}.parquet"
    schema = polars_schema(LANDED[table])
    return pl.scan_parquet(path, schema=schema) if path.exists() else pl.LazyFrame(schema=schema)


def _landed_and_staged(lake: Path, table: str, tx: lk.Transaction | None) -> pl.LazyFrame:
    """A landed table, with the files ``tx`` has staged for it (earlier chunks of an ingest)."""
    directory = lk.table_dir(lake, table)
    staged = tx.staged_parquet(directory) if tx else []
    return lk.scan_files(lk.parquet_files(directory) + staged, polars_schema(LANDED[table]))


def landed_index(lake: Path) -> dict[str, LandedIndex]:
    """Per runs table, the index of the run_ids the lake holds."""
    return {
        table: LandedIndex(
            _landed_and_staged(lake, table, None)
            .select(run_id_hash(pl.col("run_id")))
            .collect(engine="streaming")
            .to_series()
            .to_numpy()
        )
        for table in RUN_TABLES
    }


def earlier_runs(
    lake: Path,
    batch: Batch,
    tx: lk.Transaction | None = None,
    index: dict[str, LandedIndex] | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """What ``dedupe`` compares ``batch``'s runs with: the task and surface runs already
    landed (or staged by ``tx``) under a run_id of the batch.

    The scans filter as they read, so an ingest holds what matches one chunk, never the
    whole history: at 10M landed runs their provenance alone is ~1.4 GiB. With an
    ``index`` of what has landed, only the run_ids it may hold are looked for, and a
    chunk of new runs reads nothing.
    """

    def runs(table: str) -> pl.DataFrame:
        run_ids = batch.tables[table]["run_id"].unique()
        if index is not None:
            run_ids = index[table].may_hold(run_ids)
        if run_ids.is_empty():
            return pl.DataFrame(schema=polars_schema(LANDED[table])).select(PROVENANCE)
        return (
            _landed_and_staged(lake, table, tx)
            .select(PROVENANCE)
            .filter(pl.col("run_id").is_in(run_ids.implode()))
            .collect()
        )

    return runs("task_runs"), runs("surface_runs")


def earlier_quarantine(lake: Path, batch: Batch, tx: lk.Transaction) -> pl.DataFrame:
    """The quarantine rows (source, line, raw) of ``batch``'s source files, landed or staged:
    a bad line read again from the same place is counted as seen, not quarantined twice."""
    sources = (
        pl.concat(
            [batch.quarantine.select("source")]
            + [batch.tables[table].select("source") for table in RUN_TABLES]
        )
        .get_column("source")
        .unique()
        .implode()
    )
    return (
        _landed_and_staged(lake, "quarantine", tx)
        .select("source", "line", "line_end", "raw")
        .filter(pl.col("source").is_in(sources))
        .collect()
    )


def superseded_quarantine(
    frames: dict[str, pl.DataFrame], held: pl.DataFrame, batch_id: str
) -> pl.DataFrame:
    """Quarantine rows whose place (source, line) this batch has read anew.

    A line once refused and now accepted (read again under a rubric that knows its
    env type, or a file first read while still being written) is one line in one
    place: its old quarantine row is resolved by the run it became, as a replay does
    (outcome ``landed``). A place quarantined again with other text (the file changed)
    keeps only the newer row: the older one is ``superseded``.
    """
    earlier = held.filter(pl.col("line") > 0).select("source", "line", "raw")
    landed = pl.concat([frames[table].select("run_id", "source", "line") for table in RUN_TABLES])
    relanded = earlier.join(landed, on=["source", "line"]).with_columns(outcome=pl.lit("landed"))
    requarantined = (
        earlier.join(
            frames["quarantine"].select("source", "line", new_raw="raw"), on=["source", "line"]
        )
        .filter(pl.col("raw").ne_missing(pl.col("new_raw")))
        .select(
            "source", "line", "raw", run_id=pl.lit(None, pl.String), outcome=pl.lit("superseded")
        )
    )
    rows = (
        pl.concat([relanded.select("source", "line", "raw", "run_id", "outcome"), requarantined])
        .with_columns(raw=pl.col("raw").fill_null(""), batch_id=pl.lit(batch_id))
        .unique(maintain_order=True)
    )
    return checked(QuarantineResolved, rows)


def earlier_landed_lines(lake: Path, batch: Batch, tx: lk.Transaction) -> pl.DataFrame:
    """The landed runs (source, line, raw) at the places of ``batch``'s rejected lines.

    Read only when the batch rejects a line, and filtered by place as it is read.
    """
    places = batch.quarantine.select("source", "line").unique()
    if places.is_empty():
        return pl.DataFrame(schema={"source": pl.String, "line": pl.Int64, "raw": pl.String})
    return pl.concat(
        [
            _landed_and_staged(lake, table, tx)
            .select("source", "line", raw="record")
            .filter(
                pl.col("source").is_in(places["source"].unique().implode())
                & pl.col("line").is_in(places["line"].unique().implode())
            )
            .join(places.lazy(), on=["source", "line"], how="semi")
            .collect()
            for table in RUN_TABLES
        ]
    )


def landed_parts(lake: Path, table: str) -> list[str]:
    return [p.stem for p in lk.parquet_files(lk.table_dir(lake, table)) if p.stem != EMPTY_STEM]


def scored_parts(lake: Path, rubric_id: str, table: str) -> list[str]:
    return [p.stem for p in lk.parquet_files(lk.score_dir(lake, rubric_id, table))]


@dataclass
class _Lander:
    """Lands line chunks into ``tx``, one part each; a file whose lines fail stays alone.

    Anything that goes wrong while one file's lines are turned into tables (a DuckDB
    error, a MemoryError, a bug) quarantines that file as one block with the error as
    its reason, and the rest of the chunk lands. The lake's own reads and writes are
    outside the guard: their failure stops the run and the transaction undoes it.
    """

    lake: Path
    tx: lk.Transaction
    env_types: list[str]
    batch_id: str
    landed: dict[str, LandedIndex]
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
    # Per input file, the bad lines kept with their raw text so far (the rest are blocks).
    kept: dict[str, int] = field(default_factory=dict)
    keep_bad_lines: int = field(default_factory=keep_bad_lines_setting)
    next_part: int = 0

    def land(self, lines: Lines) -> None:
        sources = lines.frame.get_column("source").unique(maintain_order=True).to_list()
        earlier_failed = [s for s in sources if s in self.failed]
        if earlier_failed:
            # The rest of a file that failed in an earlier chunk follows it into quarantine.
            self._split(lines, sources)
            return
        try:
            self._write(lines, *self._frames(lines))
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

    def _frames(self, lines: Lines) -> tuple[Batch, Deduped, dict[str, pl.DataFrame]]:
        batch = guarded(build_batch, lines, self.env_types, self.batch_id)
        earlier = earlier_runs(self.lake, batch, self.tx, self.landed)
        held = earlier_quarantine(self.lake, batch, self.tx)
        again = earlier_landed_lines(self.lake, batch, self.tx)
        result = guarded(dedupe, batch, *earlier, held, again)
        result.batch.quarantine = guarded(
            compact_quarantine, result.batch.quarantine, self._kept(), self.keep_bad_lines
        )
        frames = guarded(landed_frames, result.batch)
        frames["quarantine_resolved"] = superseded_quarantine(frames, held, self.batch_id)
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
        held = earlier_quarantine(self.lake, batch, self.tx)
        result = dedupe_failed(batch, held)
        tables["quarantine"] = checked(Quarantine, result.batch.quarantine.drop("row_nr"))
        return batch, result, tables

    def _write(
        self, lines: Lines, batch: Batch, result: Deduped, frames: dict[str, pl.DataFrame]
    ) -> None:
        part = f"{self.batch_id}-p{self.next_part:05d}"
        self.next_part += 1
        written = {name: frame.height for name, frame in frames.items() if frame.height}
        facts = {
            name: file_facts(
                self.tx.write(lk.table_dir(self.lake, name) / f"{part}.parquet", frames[name])
            )
            for name in written
        }
        if written:
            self.tx.write_json(
                manifest_path(self.lake, part), manifest(written, lines.files, facts)
            )
        if frames["task_runs"].height or frames["surface_runs"].height:
            self.parts.append(part)
        for table in RUN_TABLES:
            self.landed[table].add(frames[table].get_column("run_id"))
        self.outcomes.append(file_outcomes(frames))
        in_full = frames["quarantine"].filter(pl.col("raw").is_not_null())
        # One entry per input file of the chunk (not per line): kept-in-full counts so far.
        per_file = in_full.group_by("source").len()
        for source, count in zip(per_file["source"], per_file["len"], strict=True):
            self.kept[source] = self.kept.get(source, 0) + count
        self.totals["lines"] += batch.lines_read
        self.totals["task"] += frames["task_runs"].height
        self.totals["surface"] += frames["surface_runs"].height
        self.totals["quarantined"] += quarantined_lines(frames["quarantine"])
        self.totals["duplicates"] += result.skipped_duplicates
        self.totals["blank"] += batch.blank_lines
        self.totals["seen"] += result.already_quarantined
        self.totals["resolved"] += frames.get("quarantine_resolved", pl.DataFrame()).height
        evolution.merge(self.found, evolution.names_of(frames, result.batch.task_keys))


def ingest_locked(
    inputs: Sequence[Path],
    lake: Path,
    rubric: Rubric | None = None,
    *,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    limits: Limits | None = None,
    extra_documents: dict[Path, object] | None = None,
    refresh_regressions: bool = False,
) -> IngestReport:
    """ingest(), for a caller that already holds the lake's lock.

    With ``refresh_regressions`` (an ingest that no scoring follows) the lake's
    version_regressions table is rebuilt in the same transaction: new runs can
    add a version and so change which versions are consecutive.
    """
    started = time.perf_counter()
    env_rubric = rubric or current_rubric(lake) or parse_rubric({})
    batch_id = lk.new_batch_id()
    scanned = scan_inputs(inputs, lake)
    files = scanned.files
    known = evolution.known_names(lake)
    with lk.Transaction(lake) as tx:
        lander = _Lander(lake, tx, sorted(env_rubric.task.envs), batch_id, landed_index(lake))
        chunks = iter_line_chunks(
            files, chunk_bytes=chunk_bytes, limits=limits, inspect=env_rubric.inspect
        )
        for lines in progress(chunks, "ingesting"):
            lander.land(lines)
        if any(lander.found.values()):
            evolution.remember(tx, lake, lander.found, known)
        for target, document in (extra_documents or {}).items():
            tx.write_json(target, document)
        scored_under = current_rubric(lake) if refresh_regressions else None
        if scored_under is not None:
            version_regressions.stage(lake, scored_under.rubric_id, tx)
    totals = lander.totals
    failures = [
        f"{source}: could not be read or landed, quarantined whole: {reason}"
        for source, reason in lander.failed.items()
    ]
    resolved = (
        [
            f"{totals['resolved']} earlier quarantine row(s) resolved: their lines were read "
            "again (same file and line) and landed, or were quarantined with other text"
        ]
        if totals["resolved"]
        else []
    )
    return IngestReport(
        batch_id=batch_id,
        files=len(files),
        lines_read=totals["lines"],
        landed_task_runs=totals["task"],
        landed_surface_runs=totals["surface"],
        quarantined=totals["quarantined"],
        skipped_duplicates=totals["duplicates"],
        skipped_blank=totals["blank"],
        already_quarantined=totals["seen"],
        parts=lander.parts,
        seconds=time.perf_counter() - started,
        notes=unterminated_notes(files)
        + scanned.skipped
        + failures
        + file_notes(lander.outcomes, exclude=set(lander.failed))
        + resolved,
        schema_news=evolution.news_of(lander.found, known),
    )


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
    note, and none when a line of it landed in another chunk.
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


def ingest(
    inputs: Sequence[Path],
    lake: Path,
    rubric: Rubric | None = None,
    limits: Limits | None = None,
) -> IngestReport:
    """Land every readable record of ``inputs``; account for every line.

    What lands is scored under the lake's rubric and shown by the warehouse at
    once, so the lake never holds a run without a current score (`pipeline
    check`); the rubric itself changes only through an explicit ``--rubric``.
    """
    with lk.lake_lock(lake):
        notes = prepare(lake)
        chosen = lake_rubric(lake, rubric)
        report = ingest_locked(inputs, lake, chosen, limits=limits)
        report.notes = notes + report.notes
        report.scored = score_locked(lake, chosen, full=False)
        build_warehouse(lake, chosen.rubric_id)
        return report


def score_part(
    lake: Path, part: str, rubric: Rubric, seconds: dict[str, float] | None = None
) -> dict[str, pl.DataFrame]:
    """One landed part scored under ``rubric``, each table checked by its model.

    Only the families the part holds are scored: a part of surface grades
    alone writes no (empty) task score files, and the other way round. The
    seconds of the plan and of the checks are added to ``seconds``.
    """
    seconds = {} if seconds is None else seconds
    lazy: dict[str, pl.LazyFrame] = {}
    if part in landed_parts(lake, "task_runs"):
        tasks = task_score.score_tasks(
            _part_file(lake, "task_runs", part),
            _part_file(lake, "task_components", part),
            _part_file(lake, "task_penalties", part),
            rubric,
        )
        lazy |= {"task_scores": tasks.runs, "task_component_scores": tasks.components}
    if part in landed_parts(lake, "surface_runs"):
        surfaces = surface.score_surfaces(
            _part_file(lake, "surface_runs", part),
            _part_file(lake, "surface_findings", part),
            rubric,
        )
        lazy |= {
            "surface_scores": surfaces.runs,
            "surface_finding_scores": surfaces.findings,
            "surface_phase_scores": surfaces.phases,
        }
    with timed(seconds, "plan"):
        collected = pl.collect_all(list(lazy.values()), engine="streaming")
    with timed(seconds, "checks"):
        return {
            name: (checked_by_plan if name in task_score.PLAN_CHECKED else checked)(
                SCORED[name], frame
            )
            for name, frame in zip(lazy, collected, strict=True)
        }


def all_parts(lake: Path) -> list[str]:
    return sorted(set(landed_parts(lake, "task_runs")) | set(landed_parts(lake, "surface_runs")))


def pending_parts(lake: Path, rubric: Rubric) -> list[str]:
    """Landed parts missing any of their score files under ``rubric``."""
    pending: set[str] = set()
    for runs, tables in SCORE_FAMILIES.items():
        landed = set(landed_parts(lake, runs))
        for table in tables:
            pending |= landed - set(scored_parts(lake, rubric.rubric_id, table))
    return sorted(pending)


# What an ingest (and a replay) reads of every landed part to dedupe against it. Their
# files are hashed against the manifest on every read, since a byte flipped with the
# mtime kept looks unchanged; a cache by (size, mtime, inode) would miss exactly that.
INGEST_READS = (*RUN_TABLES, "quarantine", "quarantine_resolved")


def prepare(lake: Path) -> list[str]:
    """Before any work, under the lock: finish or undo a dead run, rebuild broken state
    files, then mend broken parts (a corrupt file that ingest reads counts as broken)."""
    notes = [f"recovered: {done}" for done in lk.recover(lake)]
    notes += repair_state(lake)
    return notes + check_and_repair(lake, hashed=INGEST_READS).problems


def score_locked(
    lake: Path,
    rubric: Rubric,
    *,
    full: bool,
    engine: str = "local",
    spark_master: str = "local[2]",
) -> ScoreResult:
    """Score every part (full) or only the parts not yet scored under ``rubric``.

    The rubric becomes the lake's current one in the same transaction, so the
    warehouse never shows a mix of two rubrics' scores.
    """
    started = time.perf_counter()
    before = current_rubric(lake)
    # A different rubric means the whole history is rescored under it.
    full = full or before is None or before.rubric_id != rubric.rubric_id
    parts = all_parts(lake) if full else pending_parts(lake, rubric)
    # Every file about to be read is hashed against its manifest first: a corrupt part is
    # removed whole (its inputs will be read again) instead of scored.
    verified = check_and_repair(lake, deep=parts)
    parts = [part for part in parts if part not in verified.removed_parts]
    counts = {"task_scores": 0, "surface_scores": 0}
    seconds: dict[str, float] = {}
    with lk.Transaction(lake) as tx:
        if engine == "spark":
            # Imported here: PySpark is an optional extra.
            from pipeline.engines.spark import score_with_spark

            written = score_with_spark(lake, rubric, parts, tx, master=spark_master)
            for name in counts:
                counts[name] += written.get(name, 0)
        else:
            for part in progress(parts, f"scoring under {rubric.rubric_id}", total=len(parts)):
                for name, frame in score_part(lake, part, rubric, seconds).items():
                    target = lk.score_dir(lake, rubric.rubric_id, name) / f"{part}.parquet"
                    with timed(seconds, "writes"):
                        tx.write(target, frame)
                    if name in counts:
                        counts[name] += frame.height
        if full:
            # Scores of parts that are no longer landed (removed by hand) go too.
            for name in SCORED:
                for path in lk.parquet_files(lk.score_dir(lake, rubric.rubric_id, name)):
                    if path.stem not in parts:
                        tx.delete(path)
        # The gate's table follows the scores it is computed from, in the same commit.
        version_regressions.stage(lake, rubric.rubric_id, tx)
        tx.write_json(
            lk.state_path(lake, CURRENT_RUBRIC),
            {"rubric_id": rubric.rubric_id, "resolved": rubric.resolved},
        )
        tx.write_json(
            lk.state_path(lake, RUBRICS),
            {**known_rubrics(lake), rubric.rubric_id: dict(rubric.resolved)},
        )
    return ScoreResult(
        rubric_id=rubric.rubric_id,
        task_runs=counts["task_scores"],
        surface_runs=counts["surface_scores"],
        parts=len(parts),
        full=full,
        seconds=time.perf_counter() - started,
        notes=verified.problems,
        stages=seconds,
        rubric_before=before.rubric_id if before else None,
    )


def score(
    lake: Path,
    rubric: Rubric | None = None,
    *,
    engine: str = "local",
    spark_master: str = "local[2]",
) -> ScoreResult:
    """Rescore everything under ``rubric`` (None: the lake's), make it current, refresh
    the warehouse."""
    with lk.lake_lock(lake):
        notes = prepare(lake)
        chosen = lake_rubric(lake, rubric)
        result = score_locked(lake, chosen, full=True, engine=engine, spark_master=spark_master)
        result.notes = notes + result.notes
        build_warehouse(lake, chosen.rubric_id)
        return result


def dry_run(lake: Path, rubric: Rubric | None = None) -> RescoreDiff:
    """Score every part under ``rubric`` in memory and diff it against the current scores."""
    with lk.lake_lock(lake):
        prepare(lake)
        before = current_rubric(lake)
        rubric = lake_rubric(lake, rubric)
        if before is None:
            raise lk.InputError(f"the lake {lake} has no scores yet to compare a rubric against")
        scored = [score_part(lake, part, rubric) for part in all_parts(lake)]

        def after(table: str) -> pl.LazyFrame:
            frames = [tables[table] for tables in scored if table in tables]
            empty = pl.DataFrame(schema=polars_schema(SCORED[table]))
            return (pl.concat(frames) if frames else empty).lazy()

        return rescore_diff(
            lake,
            before.rubric_id,
            rubric.rubric_id,
            after=after("task_scores"),
            surface_after=after("surface_scores"),
        )


def run(
    inputs: Sequence[Path],
    lake: Path,
    rubric: Rubric | None = None,
    limits: Limits | None = None,
) -> RunSummary:
    """Ingest, score what is new (everything, when the rubric changed), refresh the views.

    Without a rubric the lake's own is used, so a plain run never undoes a rubric change.
    """
    with lk.lake_lock(lake):
        notes = prepare(lake)
        chosen = lake_rubric(lake, rubric)
        report = ingest_locked(inputs, lake, chosen, limits=limits)
        report.notes = notes + report.notes
        result = score_locked(lake, chosen, full=False)
        build_warehouse(lake, chosen.rubric_id)
    return RunSummary(ingest=report, score=result, warehouse=warehouse_path(lake))


def print_ingest_report(console: Console, report: IngestReport) -> None:
    table = Table(title=f"ingest {report.batch_id}", show_header=True)
    table.caption = (
        "landed = task + surface; skipped = duplicates + blank + seen "
        "(bad lines quarantined before)"
    )
    columns = (
        "files",
        "lines",
        "task",
        "surface",
        "quarantined",
        "duplicates",
        "blank",
        "seen",
        "s",
    )
    for column in columns:
        table.add_column(column, justify="right")
    table.add_row(
        str(report.files),
        str(report.lines_read),
        str(report.landed_task_runs),
        str(report.landed_surface_runs),
        str(report.quarantined),
        str(report.skipped_duplicates),
        str(report.skipped_blank),
        str(report.already_quarantined),
        f"{report.seconds:.2f}",
    )
    print_table(console, table)
    for line in news_lines(report.schema_news):
        console.print(line, highlight=False, markup=False)
    for note in report.notes:
        console.print(f"note: {note}", highlight=False, markup=False)


def news_lines(news: dict[str, list[str]]) -> list[str]:
    """One line per kind of name the lake had never held (nothing when there is none)."""
    return [
        f"new {evolution.NEWS_LABELS[key]}: {', '.join(names)}"
        for key, names in news.items()
        if names
    ]


def rubric_change_line(before: str | None, after: str, runs_rescored: int) -> str | None:
    """What an explicit rubric changed, in one line (None when it changed nothing)."""
    if before == after:
        return None
    if before is None:
        return f"rubric: the lake starts with {after}"
    return f"rubric changed: {before} -> {after}; {runs_rescored} run(s) rescored"


def print_score_result(console: Console, result: ScoreResult) -> None:
    change = rubric_change_line(
        result.rubric_before, result.rubric_id, result.task_runs + result.surface_runs
    )
    if change:
        console.print(change, highlight=False, markup=False)
    console.print(
        f"scored {result.task_runs} task runs and {result.surface_runs} surface grades "
        f"({'all' if result.full else 'new'} parts: {result.parts}) "
        f"under rubric {result.rubric_id} in {result.seconds:.2f}s",
        highlight=False,
    )
    for note in result.notes:
        console.print(f"note: {note}", highlight=False, markup=False)


def print_run_summary(console: Console, summary: RunSummary, lake: Path) -> None:
    print_ingest_report(console, summary.ingest)
    print_score_result(console, summary.score)
    con = connect_read_only(lake)
    try:
        rows = con.execute(sql_text("queries/summary_by_version.sql")).fetchall()
        servers = con.execute(sql_text("queries/summary_by_server.sql")).fetchall()
    finally:
        con.close()
    table = Table(title="runs and mean score by agent and version")
    for column in (
        "agent",
        "version",
        "runs",
        "grader errors",
        "mean_score_runs",
        "pass_rate_runs",
    ):
        table.add_column(column, justify="right" if column not in ("agent", "version") else "left")
    for agent, version, runs, errors_, mean, rate in rows:
        table.add_row(
            str(agent),
            str(version),
            str(runs),
            str(errors_),
            "-" if mean is None else f"{mean:.3f}",
            "-" if rate is None else f"{rate:.1%}",
        )
    print_table(console, table)
    if servers:
        grades = Table(title="surface grades: each server's latest version")
        for column in ("server", "version", "versions", "overall", "letter", "since previous"):
            grades.add_column(
                column, justify="left" if column in ("server", "version") else "right"
            )
        for server, version, versions, overall, letter, delta in servers:
            grades.add_row(
                str(server),
                str(version),
                str(versions),
                "-" if overall is None else f"{overall:.1f}",
                letter or "-",
                "-" if delta is None else f"{delta:+.1f}",
            )
        print_table(console, grades)
    print_open_commands(console, lake)


def print_open_commands(console: Console, lake: Path) -> None:
    """How to read the warehouse: the pipeline's query command, and DuckDB's own shell."""
    commands = open_commands(lake, FIRST_QUERY)
    lines = [
        f"warehouse: {warehouse_path(lake)} (one self-contained file: copy or move it "
        f"anywhere; {commands['readers']} opens it)",
        f"query it:  {commands['query']}",
        f"or open it in DuckDB's shell:  {commands['shell']}",
    ]
    if "shell_install" in commands:
        lines.append(f"  (no duckdb command? {commands['shell_install']})")
    for line in lines:
        # Commands stay on one line however narrow the terminal, so they paste whole.
        console.print(line, highlight=False, markup=False, soft_wrap=True)
