"""replay-quarantine: quarantined lines read again, once a rubric (or a limit) allows them.

The lines come from the lake's quarantine table, where their raw text is kept,
and go through the same reading limits, validation and dedupe as any input,
keeping their original source file and line number. In one lake transaction,
what now lands is written and removed from the quarantine; what still fails
stays in the quarantine as it was (its first reason kept). Replaying twice
lands nothing new: a landed line is no longer in the quarantine, and a line
whose run_id already landed with the same content is an exact duplicate.

Not replayed, since their kept text is not the line that arrived: lines that
were not UTF-8 (bad bytes shown as escapes), records over the size limit (cut
to 1 KiB), the last line of a cut gzip stream, and whole-file problems.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from pipeline import jobs
from pipeline import lake as lk
from pipeline.ingest import build_batch, dedupe, landed_frames
from pipeline.parts import manifest, manifest_path
from pipeline.reader import LINE_SCHEMA, lines_of_text
from pipeline.rubric import Rubric, parse_rubric
from pipeline.warehouse import build_warehouse
from schemas import polars_schema
from schemas.tasks import Quarantine

# Reasons (from pipeline/reader.py) whose kept raw text is not the original line.
NOT_REPLAYABLE = (
    "line is not valid UTF-8",
    "record is ",
    "report is ",
    "gzip stream ends early",
    "not a readable gzip file",
    "decompressed past the limit",
    "trailing bytes after the end of the gzip data",
    "could not read the file",
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

    @property
    def released(self) -> int:
        return self.landed_task_runs + self.landed_surface_runs + self.skipped_duplicates

    @property
    def accounted(self) -> int:
        return self.released + self.still_quarantined


def _held(lake: Path) -> pl.DataFrame:
    """Every quarantined line, with the file that holds it and its row in that file."""
    files = lk.parquet_files(lk.table_dir(lake, "quarantine"))
    schema = polars_schema(Quarantine)
    if not files:
        return pl.DataFrame(schema={**schema, "file": pl.String, "file_row": pl.Int64})
    return (
        pl.scan_parquet(
            files,
            schema=schema,
            missing_columns="insert",
            extra_columns="ignore",
            include_file_paths="file",
        )
        .with_columns(file_row=pl.int_range(pl.len(), dtype=pl.Int64).over("file"))
        .collect()
    )


def replayable() -> pl.Expr:
    cut = pl.any_horizontal(pl.col("reason").str.starts_with(p) for p in NOT_REPLAYABLE)
    return pl.col("raw").is_not_null() & (pl.col("line") > 0) & ~cut


def replay_locked(lake: Path, rubric: Rubric | None = None) -> ReplayReport:
    """replay_quarantine(), for a caller that already holds the lake's lock."""
    started = time.perf_counter()
    chosen = rubric or jobs.current_rubric(lake) or parse_rubric({})
    batch_id = lk.new_batch_id()
    held = _held(lake)
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
    landed_tasks, landed_surfaces = jobs.earlier_runs(lake, batch)
    # Against an empty quarantine, so every line that fails again is listed (it stays put).
    nothing_held = pl.DataFrame(
        schema={"source": pl.String, "line": pl.Int64, "line_end": pl.Int64, "raw": pl.String}
    )
    result = dedupe(batch, landed_tasks, landed_surfaces, nothing_held)
    frames = landed_frames(result.batch)
    still = result.batch.quarantine.select("row_nr")
    released = candidates.join(still, on="row_nr", how="anti")
    part = f"{batch_id}-p00000"
    with lk.Transaction(lake) as tx:
        written = {
            name: frame.height
            for name, frame in frames.items()
            if name != "quarantine" and frame.height
        }
        for name in written:
            tx.write(lk.table_dir(lake, name) / f"{part}.parquet", frames[name])
        if written:
            sources = released["source"].unique().to_list()
            tx.write_json(manifest_path(lake, part), manifest(written, sources))
        touched = released.select("file").unique()["file"].to_list()
        for file in touched:
            kept = held.filter(pl.col("file") == file).join(
                released.select("file", "file_row"), on=["file", "file_row"], how="anti"
            )
            # The quarantine file belongs to a part: its manifest follows the new count.
            owner = manifest_path(lake, Path(file).stem)
            document = lk.read_json(owner, None)
            if kept.height:
                tx.write(Path(file), kept.drop("file", "file_row"))
                if document is not None:
                    document["tables"]["quarantine"] = kept.height
            else:
                tx.delete(Path(file))
                if document is not None:
                    document["tables"].pop("quarantine", None)
            if document is not None:
                tx.write_json(owner, document)
    return ReplayReport(
        batch_id=batch_id,
        rubric_id=chosen.rubric_id,
        held=held.height,
        not_replayable=held.height - candidates.height,
        tried=candidates.height,
        landed_task_runs=frames["task_runs"].height,
        landed_surface_runs=frames["surface_runs"].height,
        skipped_duplicates=result.skipped_duplicates,
        still_quarantined=still.height,
        seconds=time.perf_counter() - started,
    )


def replay_quarantine(
    lake: Path, rubric: Rubric | None = None, *, rescore: bool = True
) -> ReplayReport:
    """Re-ingest quarantined lines under ``rubric`` (else the lake's current one).

    With ``rescore``, what landed is scored and the warehouse refreshed, so
    the views show it at once.
    """
    with lk.lake_lock(lake):
        jobs.prepare(lake)
        report = replay_locked(lake, rubric)
        if rescore:
            chosen = rubric or jobs.current_rubric(lake) or parse_rubric({})
            jobs.score_locked(lake, chosen, full=False)
            build_warehouse(lake, chosen.rubric_id)
    return report
