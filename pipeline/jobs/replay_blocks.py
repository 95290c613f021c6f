"""replay-quarantine for counted blocks: quarantine rows that stand for lines kept without
their text, read again from their source file by line range.

Such rows are written for a file's bad lines past its first N (``line``..``line_end``), for
a file that failed whole, and for the rest of a compressed file past the expansion limit
(``line`` onwards). Their lines are read again from the source (gzip included), through the
same limits, validation and dedupe as any input, in chunks, so a block of millions of lines
is replayed in bounded memory.

A block is all or nothing, as a single row is: when none of its lines lands now, nothing is
written and the block stays as it was (replaying again changes nothing). When any does, the
block is resolved whole (a ``quarantine_resolved`` row at its first line, without text,
outcome ``reread``), what lands is written with its file and line, and every line that
still fails is quarantined again with its reason (the first N in full, the rest as blocks),
so each line of the block is in exactly one place. A source that is gone, or is no longer
a regular file, keeps its blocks unresolved. The source is trusted to hold the lines it
held: a file rewritten in place since is read as it is now.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from pipeline.core.settings import current_settings
from pipeline.ingest.batch import build_batch, landed_frames
from pipeline.ingest.classify import is_blank
from pipeline.ingest.dedupe import dedupe
from pipeline.ingest.quarantine import compact_quarantine, row_lines
from pipeline.jobs.earlier import Landed, earlier_runs
from pipeline.sources.chunks import iter_line_chunks
from pipeline.sources.lines import Lines
from pipeline.storage import lake as lk
from pipeline.storage.store import LakeStore
from schemas import checked, polars_schema
from schemas.tasks import Quarantine, QuarantineResolved

# The reason of the row standing for the rest of a file past the expansion limit: its
# block runs from its line to the end of the file.
REST_OF_FILE = "decompressed past the limit"
TO_THE_END = 2**62


def is_block() -> pl.Expr:
    """Quarantine rows that stand for lines whose text was not kept."""
    counted = pl.col("line_end").is_not_null() & pl.col("raw").is_null()
    return (pl.col("line") > 0) & (counted | pl.col("reason").str.starts_with(REST_OF_FILE))


def block_ranges(held: pl.DataFrame) -> pl.DataFrame:
    """The blocks among unresolved quarantine rows: source, line, raw (null but for the rest
    of a file, which keeps its first KiB), end (inclusive)."""
    return (
        held.filter(is_block())
        .select(
            "source",
            "line",
            "raw",
            end=pl.when(pl.col("reason").str.starts_with(REST_OF_FILE))
            .then(pl.lit(TO_THE_END, pl.Int64))
            .otherwise(pl.col("line_end")),
        )
        .unique(["source", "line"])
        .sort("source", "line")
    )


def in_blocks(frame: pl.DataFrame, blocks: pl.DataFrame) -> pl.DataFrame:
    """Rows of ``frame`` (source, line, ...) inside a block, with the block's first line."""
    placed = frame.sort("source", "line").join_asof(
        blocks.select("source", block="line", end="end").sort("source", "block"),
        left_on="line",
        right_on="block",
        by="source",
        strategy="backward",
        check_sortedness=False,
    )
    return placed.filter(pl.col("line") <= pl.col("end")).drop("end")


def readable_sources(blocks: pl.DataFrame) -> list[Path]:
    paths = (Path(s) for s in blocks.get_column("source").unique().sort().to_list())
    return [p for p in paths if not p.is_symlink() and p.is_file()]


@dataclass
class BlockReplay:
    """Replays ``blocks`` into ``tx``, one part per chunk of lines that landed."""

    store: LakeStore
    tx: lk.Transaction
    env_types: list[str]
    batch_id: str
    blocks: pl.DataFrame
    next_part: int
    landed: Landed
    # Per source, the still-failing lines kept with their text so far (the rest are blocks).
    kept: dict[str, int] = field(default_factory=dict)
    # Per block (source, block): lines that landed now or repeated a run already there.
    released: list[pl.DataFrame] = field(default_factory=list)
    # Lines still failing, as compacted quarantine rows, written only if their block resolves.
    failing: list[pl.DataFrame] = field(default_factory=list)
    counts: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(("task", "surface", "duplicates", "lines"), 0)
    )

    def chunks(self) -> Iterator[Lines]:
        for path in readable_sources(self.blocks):
            for lines in iter_line_chunks([path]):
                inside = in_blocks(lines.frame, self.blocks)
                if inside.height:
                    yield Lines(frame=inside, files=lines.files)

    def replay_chunk(self, lines: Lines) -> None:
        where = lines.frame.select("row_nr", "source", "line", "block")
        batch = build_batch(
            Lines(frame=lines.frame.drop("block"), files=lines.files),
            self.env_types,
            self.batch_id,
        )
        earlier = earlier_runs(self.store, batch, self.tx, self.landed.runs)
        nothing_held = pl.DataFrame(schema=polars_schema(Quarantine)).select(
            "source", "line", "line_end", "raw"
        )
        attempts = self.landed.attempts.earlier(batch)
        result = dedupe(batch, *earlier, nothing_held, attempts=attempts)
        refused = result.batch.quarantine.select("row_nr")
        blank = lines.frame.filter(is_blank(pl.col("raw")))
        self.released.append(
            where.join(refused, on="row_nr", how="anti")
            .join(blank.select("row_nr"), on="row_nr", how="anti")
            .select("source", "block")
            .unique()
        )
        kept = pl.DataFrame(
            {"source": list(self.kept), "kept": list(self.kept.values())},
            schema={"source": pl.String, "kept": pl.Int64},
        )
        failing = compact_quarantine(
            result.batch.quarantine, kept, current_settings().keep_bad_lines
        )
        per_file = failing.filter(pl.col("raw").is_not_null()).group_by("source").len()
        for source, count in zip(per_file["source"], per_file["len"], strict=True):
            self.kept[source] = self.kept.get(source, 0) + count
        self.failing.append(failing)
        frames = landed_frames(result.batch)
        frames["quarantine"] = frames["quarantine"].clear()
        self.write(frames, lines.files)
        self.counts["lines"] += lines.frame.height
        self.counts["task"] += frames["task_runs"].height
        self.counts["surface"] += frames["surface_runs"].height
        self.counts["duplicates"] += result.skipped_duplicates

    def write(self, frames: dict[str, pl.DataFrame], sources: list[str]) -> None:
        written = {name: frame.height for name, frame in frames.items() if frame.height}
        if not written:
            return
        part = f"{self.batch_id}-p{self.next_part:05d}"
        self.next_part += 1
        self.store.write_part(self.tx, part, frames, sources)
        self.landed.add(frames)

    def finish(self) -> tuple[int, int]:
        """Resolves every block a line of which was released; returns (blocks resolved,
        lines quarantined again)."""
        released = pl.concat(
            [pl.DataFrame(schema={"source": pl.String, "block": pl.Int64}), *self.released]
        ).unique()
        if released.is_empty():
            return 0, 0
        failing = pl.concat(self.failing) if self.failing else pl.DataFrame()
        again = (
            in_blocks(failing, self.blocks)
            .join(released, on=["source", "block"], how="semi")
            .sort("source", "line")
            .drop("block", "row_nr")
            if failing.height
            else pl.DataFrame(schema=polars_schema(Quarantine))
        )
        resolved = released.join(
            self.blocks.select("source", block="line", raw="raw"), on=["source", "block"]
        ).select(
            "source",
            line="block",
            raw="raw",
            run_id=pl.lit(None, pl.String),
            outcome=pl.lit("reread"),
            batch_id=pl.lit(self.batch_id),
        )
        frames = {
            "quarantine": checked(Quarantine, again),
            "quarantine_resolved": checked(QuarantineResolved, resolved),
        }
        self.write(frames, sorted(released.get_column("source").unique().to_list()))
        lines_again = int(again.select(row_lines().sum()).item() or 0)
        return released.height, lines_again
