"""What the lake commands return: data for the CLI to print, nothing printed here."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

# The CLI imports these types; Polars is imported by the jobs that fill them.
if TYPE_CHECKING:
    import polars as pl


@dataclass(kw_only=True)
class IngestCounts:
    """Where the lines an ingest read went (CONTRACT 8: each lands, is quarantined or is
    skipped); zero until an ingest has run."""

    lines_read: int = 0
    landed_task_runs: int = 0
    landed_surface_runs: int = 0
    quarantined: int = 0
    skipped_duplicates: int = 0
    skipped_blank: int = 0
    already_quarantined: int = 0
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
class IngestReport(IngestCounts):
    batch_id: str
    files: int
    parts: list[str]
    seconds: float
    # Files that could not be read as they are, and repairs made before the work.
    notes: list[str] = field(default_factory=list)
    # The scoring of what landed (the ingest command scores it under the lake's rubric).
    scored: ScoreResult | None = None


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
    # The warehouse's closing tables (sql/queries/summary_by_*.sql): task runs by agent and
    # version, and each server's latest surface grade.
    by_version: pl.DataFrame
    by_server: pl.DataFrame
