"""replay-quarantine: quarantined lines read again, once a rubric (or a limit) allows them.

The lines come from the lake's quarantine table, where their raw text is kept,
and go through the same reading limits, validation and dedupe as any input,
keeping their original source file and line number. In one lake transaction,
what now lands is written, and every released line is marked resolved
(``quarantine_resolved``: source, line, raw, the run_id it became), which takes
it out of the ``quarantine`` view; what still fails stays unresolved, its
first reason kept. The quarantine rows themselves are never rewritten, so the
same line read again from its file is "seen", not quarantined twice. Replaying
twice lands nothing new: a resolved line is not tried again.

Not replayed, since their kept text is not the line that arrived: lines that
were not UTF-8 (bad bytes shown as escapes), records over the size limit (cut
to 1 KiB), the last line of a cut gzip stream, and whole-file problems.

Counted blocks (bad lines past a file's first N, a file that failed whole, the
rest of a file past the expansion limit) have no text: they are read again from
their source file by line range (pipeline/jobs/replay_blocks.py).
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path

import polars as pl

from pipeline.core.settings import Settings, current_settings, use_settings
from pipeline.ingest import evolution
from pipeline.ingest.batch import Batch, build_batch, landed_frames
from pipeline.ingest.dedupe import Deduped, dedupe
from pipeline.jobs.earlier import (
    Landed,
    batch_attempts,
    earlier_runs,
    lake_task_problems,
    resolved_before,
    still_open,
)
from pipeline.jobs.prepare import prepare
from pipeline.jobs.replay_blocks import BlockReplay, block_ranges
from pipeline.jobs.results import ScoreResult
from pipeline.jobs.rubric_names import stored_gap_notes
from pipeline.jobs.score import score_locked, verify_landed
from pipeline.rubric import Rubric
from pipeline.sources.blocks import UNREADABLE
from pipeline.sources.inspect.shared import shared_problem_notes
from pipeline.sources.lines import EMPTY_REPORT, LINE_SCHEMA
from pipeline.sources.problems import lines_of_text
from pipeline.storage import lake as lk
from pipeline.storage.rubrics import lake_rubric
from pipeline.storage.store import LakeStore
from pipeline.warehouse import build_warehouse
from schemas import checked
from schemas.tasks import QuarantineResolved

# Reasons (sources/lines.py, sources/problems.py) whose kept raw text is not the original line,
# or (an empty report file) holds no record to read again.
NOT_REPLAYABLE = (
    EMPTY_REPORT,
    "line is not valid UTF-8",
    "record is ",
    "report is ",
    "gzip stream ends early",
    "not a readable gzip file",
    "decompressed past the limit",
    "trailing bytes after the end of the gzip data",
    UNREADABLE,
)


@dataclass(frozen=True)
class ReplayReport:
    batch_id: str
    rubric_id: str
    held: int  # quarantined lines before the replay
    not_replayable: int
    tried: int
    landed_task_runs: int
    landed_surface_runs: int
    skipped_duplicates: int
    still_quarantined: int
    seconds: float
    # Counted blocks (no text kept) read again from their source files (replay_blocks).
    blocks: int = 0
    block_lines_read: int = 0
    block_task_runs: int = 0
    block_surface_runs: int = 0
    block_duplicates: int = 0
    blocks_resolved: int = 0
    block_lines_quarantined_again: int = 0
    # The scoring that followed (replay_quarantine with rescore), for what it changed.
    scored: ScoreResult | None = None
    # Inspect tasks of one env type whose samples share ids, among what landed (shared.py).
    notes: list[str] = field(default_factory=list)

    @property
    def block_lines_released(self) -> int:
        return self.block_task_runs + self.block_surface_runs + self.block_duplicates

    @property
    def released(self) -> int:
        return self.landed_task_runs + self.landed_surface_runs + self.skipped_duplicates

    @property
    def accounted(self) -> int:
        return self.released + self.still_quarantined


def unresolved(lake: Path) -> pl.DataFrame:
    """Every quarantined line no replay has released yet (the ``quarantine`` view's rows)."""
    store = LakeStore(lake)
    return still_open(store.landed("quarantine").collect(), resolved_before(store))


def replayable() -> pl.Expr:
    cut = pl.any_horizontal(pl.col("reason").str.starts_with(p) for p in NOT_REPLAYABLE)
    return pl.col("raw").is_not_null() & (pl.col("line") > 0) & ~cut


def _resolved_rows(
    candidates: pl.DataFrame, batch: Batch, result: Deduped, batch_id: str
) -> pl.DataFrame:
    """The released candidates as QuarantineResolved rows: the run_id each line carries
    (of the run it repeats, for a duplicate: a sample a retry carried over is a copy of the
    run it first landed as), and whether it landed now or repeated a run already there."""
    kept = result.batch
    runs = pl.concat([batch.tables[t].select("row_nr", "run_id") for t in lk.RUN_TABLES])
    repeated = result.duplicate_rows.select("row_nr", repeated="run_id")
    runs = runs.join(repeated, on="row_nr", how="left").select(
        "row_nr", run_id=pl.coalesce("repeated", "run_id")
    )
    landed = pl.concat([kept.tables[t].select("row_nr") for t in lk.RUN_TABLES])
    released = candidates.join(kept.quarantine.select("row_nr"), on="row_nr", how="anti")
    # A line identical to another of the chunk is parsed once (ingest.build_batch) and
    # shares its fate: it carries the run_id of its twin's text.
    by_text = candidates.join(runs, on="row_nr").select("raw", "run_id").unique("raw")
    return released.join(by_text, on="raw").select(
        "source",
        "line",
        "raw",
        "run_id",
        outcome=pl.when(pl.col("row_nr").is_in(landed["row_nr"].implode()))
        .then(pl.lit("landed"))
        .otherwise(pl.lit("duplicate")),
        batch_id=pl.lit(batch_id),
    )


def replay_locked(
    lake: Path, rubric: Rubric | None = None, tx: lk.Transaction | None = None
) -> ReplayReport:
    """replay_quarantine(), for a caller that already holds the lake's lock; given ``tx``,
    what lands is written in it and the caller commits."""
    started = time.perf_counter()
    chosen = lake_rubric(lake, rubric)
    batch_id = lk.new_batch_id()
    held = unresolved(lake)
    candidates = held.filter(replayable()).with_row_index("row_nr")
    raw = candidates.select(
        "source",
        "line",
        "raw",
        not_utf8=pl.lit(False),
        file_problem=pl.lit(None, dtype=pl.String),
    ).cast(LINE_SCHEMA)  # type: ignore[arg-type]
    lines = lines_of_text(raw, candidates["source"].unique().sort().to_list())
    batch = build_batch(lines, sorted(chosen.task.envs), batch_id)
    store = LakeStore(lake)
    landed_tasks, landed_surfaces = earlier_runs(store, batch)
    # Against an empty quarantine, so every line that fails again is listed (it stays put).
    nothing_held = pl.DataFrame(
        schema={"source": pl.String, "line": pl.Int64, "line_end": pl.Int64, "raw": pl.String}
    )
    attempts = batch_attempts(store, batch)
    result = dedupe(batch, landed_tasks, landed_surfaces, nothing_held, attempts=attempts)
    frames = landed_frames(result.batch)
    frames["quarantine_resolved"] = checked(
        QuarantineResolved, _resolved_rows(candidates, batch, result, batch_id)
    )
    part = f"{batch_id}-p00000"
    known = evolution.known_names(lake)
    found = evolution.names_of(frames, result.batch.task_keys)
    with lk.Transaction(lake) if tx is None else nullcontext(tx) as tx:
        landed = Landed.of(store, tx)
        landed.add(frames)
        blocks = BlockReplay(
            store, tx, sorted(chosen.task.envs), batch_id, block_ranges(held), 1, landed
        )
        if any(found.values()):
            evolution.remember(tx, lake, found, known)
        # Appended, never rewritten: the quarantine rows stay as they were, and a line
        # is resolved exactly when this part (whole, by its manifest) lists it.
        landing = {name: frame for name, frame in frames.items() if name != "quarantine"}
        sources = frames["quarantine_resolved"]["source"].unique().to_list()
        store.write_part(tx, part, landing, sources)
        for lines in blocks.chunks():
            blocks.replay_chunk(lines)
        blocks_resolved, block_lines_again = blocks.finish()
        notes = shared_problem_notes(lake_task_problems(store, tx, landed.inspect_problems))
    return ReplayReport(
        batch_id=batch_id,
        rubric_id=chosen.rubric_id,
        held=held.height,
        not_replayable=held.height - candidates.height - blocks.blocks.height,
        tried=candidates.height,
        landed_task_runs=frames["task_runs"].height,
        landed_surface_runs=frames["surface_runs"].height,
        skipped_duplicates=result.skipped_duplicates,
        still_quarantined=result.batch.quarantine.height,
        seconds=time.perf_counter() - started,
        blocks=blocks.blocks.height,
        block_lines_read=blocks.counts["lines"],
        block_task_runs=blocks.counts["task"],
        block_surface_runs=blocks.counts["surface"],
        block_duplicates=blocks.counts["duplicates"],
        blocks_resolved=blocks_resolved,
        block_lines_quarantined_again=block_lines_again,
        notes=notes,
    )


def replay_quarantine(
    lake: Path,
    rubric: Rubric | None = None,
    *,
    rescore: bool = True,
    settings: Settings | None = None,
) -> ReplayReport:
    """Re-ingest quarantined lines under ``rubric`` (else the lake's current one).

    With ``rescore``, what landed is scored and the warehouse refreshed, so
    the views show it at once.
    """
    with use_settings(settings or current_settings()), lk.lake_lock(lake):
        prepare(lake)
        if not rescore:
            return replay_locked(lake, rubric)
        chosen = lake_rubric(lake, rubric)
        verified = verify_landed(lake, chosen)
        # Landed and scored in one transaction: a crash leaves no run without its score.
        with lk.Transaction(lake) as tx:
            report = replay_locked(lake, rubric, tx=tx)
            scored = score_locked(lake, chosen, full=False, tx=tx, verified=verified)
        notes = report.notes
        if rubric is not None:
            # An explicit rubric: which of its names no landed run carries, and the other way.
            notes = [*notes, *stored_gap_notes(lake, chosen)]
        build_warehouse(lake, chosen.rubric_id)
        return replace(report, scored=scored, notes=notes)
