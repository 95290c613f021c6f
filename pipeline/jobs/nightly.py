"""The nightly job: land what is new in the inbox, score it, rescore on a rubric change.

Safe to rerun: a ledger of ingested files by content hash is written in the
same transaction as the lines it landed, so a file is either ingested and in
the ledger, or neither; a file that changed has a new hash and is read again
(its old lines are then exact duplicates, skipped). Run twice in a row, the
second run finds nothing new and says so.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console
from rich.table import Table

from pipeline.cli.progress import timed
from pipeline.cli.tables import print_table
from pipeline.jobs import commands as jobs
from pipeline.jobs.check import check_lake_locked
from pipeline.rubric import Rubric
from pipeline.sources.files import scan_inputs
from pipeline.storage import lake as lk
from pipeline.warehouse import build_warehouse, built_rubric_id

LEDGER = "ledger"
HASH_BLOCK_BYTES = 1 << 20


@dataclass
class NightlySummary:
    started_at: str
    inbox: str
    files_in_inbox: int
    files_new: int
    lines_read: int = 0
    landed_task_runs: int = 0
    landed_surface_runs: int = 0
    quarantined: int = 0
    skipped_duplicates: int = 0
    skipped_blank: int = 0
    already_quarantined: int = 0
    runs_scored: int = 0
    full_rescore: bool = False
    rubric_before: str | None = None
    rubric_after: str | None = None
    nothing_to_do: bool = False
    # What landed that the lake never held before (evolution.NEWS keys).
    schema_news: dict[str, list[str]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    summary_file: str | None = None
    # The lake checker's verdict on the lake this run left (pipeline/jobs/check.py).
    check_ok: bool | None = None
    check_violations: list[str] = field(default_factory=list)


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(HASH_BLOCK_BYTES):
            digest.update(block)
    return digest.hexdigest()


def read_ledger(lake: Path) -> dict[str, dict[str, object]]:
    ledger: dict[str, dict[str, object]] = lk.read_json(lk.state_path(lake, LEDGER), {})
    return ledger


def nightly(
    inbox: Path,
    lake: Path,
    rubric: Rubric | None = None,
    *,
    engine: str = "local",
    spark_master: str = "local[2]",
) -> NightlySummary:
    """One nightly pass over ``inbox`` under ``rubric`` (None: the lake's own, so a nightly
    job never undoes an analyst's rubric change); see the module docstring."""
    started = datetime.now(UTC)
    seconds: dict[str, float] = {}
    with lk.lake_lock(lake):
        notes = jobs.prepare(lake)
        with timed(seconds, "scan"):
            scanned = scan_inputs([inbox], lake)
            files = scanned.files
            notes.extend(scanned.skipped)
            digests = {path: file_digest(path) for path in files}
            ledger = read_ledger(lake)
            new = [path for path in files if digests[path] not in ledger]
        before = jobs.current_rubric(lake)
        rubric = jobs.lake_rubric(lake, rubric)
        summary = NightlySummary(
            started_at=started.isoformat(),
            inbox=str(inbox),
            files_in_inbox=len(files),
            files_new=len(new),
            rubric_before=before.rubric_id if before else None,
            rubric_after=rubric.rubric_id,
        )
        rubric_changed = before is None or before.rubric_id != rubric.rubric_id
        pending = jobs.pending_parts(lake, rubric)
        if not new and not rubric_changed and not pending:
            summary.nothing_to_do = True
            # A run killed after scoring but before the views leaves a stale file.
            if built_rubric_id(lake) != rubric.rubric_id:
                with timed(seconds, "warehouse"):
                    build_warehouse(lake, rubric.rubric_id)
        else:
            if new:
                entries = {
                    digests[path]: {
                        "path": str(path),
                        "size": path.stat().st_size,
                        "first_seen": started.isoformat(),
                    }
                    for path in new
                }
                with timed(seconds, "ingest"):
                    report = jobs.ingest_locked(
                        new,
                        lake,
                        rubric,
                        extra_documents={lk.state_path(lake, LEDGER): {**ledger, **entries}},
                    )
                summary.lines_read = report.lines_read
                summary.landed_task_runs = report.landed_task_runs
                summary.landed_surface_runs = report.landed_surface_runs
                summary.quarantined = report.quarantined
                summary.skipped_duplicates = report.skipped_duplicates
                summary.skipped_blank = report.skipped_blank
                summary.already_quarantined = report.already_quarantined
                summary.schema_news = report.schema_news
                notes.extend(report.notes)
            with timed(seconds, "score"):
                result = jobs.score_locked(
                    lake, rubric, full=False, engine=engine, spark_master=spark_master
                )
            seconds |= {f"score: {stage}": value for stage, value in result.stages.items()}
            summary.runs_scored = result.task_runs + result.surface_runs
            summary.full_rescore = result.full
            with timed(seconds, "warehouse"):
                build_warehouse(lake, rubric.rubric_id)
        with timed(seconds, "check"):
            verdict = check_lake_locked(lake)
        summary.check_ok = verdict.ok
        summary.check_violations = verdict.violations
        summary.seconds = seconds
        summary.notes = notes
        stamp = started.strftime("%Y%m%dT%H%M%S%fZ")
        path = lk.write_json_atomic(asdict(summary), lake / "_runs" / f"nightly-{stamp}.json")
        summary.summary_file = str(path)
    return summary


def print_summary(console: Console, summary: NightlySummary) -> None:
    if summary.nothing_to_do:
        console.print(
            f"nothing to do: no new files in {summary.inbox} and the lake is already scored "
            f"under rubric {summary.rubric_after}",
            highlight=False,
        )
    table = Table(title="nightly run", show_header=False)
    table.add_column("what")
    table.add_column("value", justify="right")
    rows: list[tuple[str, object]] = [
        ("files in inbox", summary.files_in_inbox),
        ("new files", summary.files_new),
        ("lines read", summary.lines_read),
        ("landed (task runs)", summary.landed_task_runs),
        ("landed (surface grades)", summary.landed_surface_runs),
        ("quarantined", summary.quarantined),
        ("skipped (duplicates)", summary.skipped_duplicates),
        ("skipped (blank)", summary.skipped_blank),
        ("skipped (seen bad lines)", summary.already_quarantined),
        ("runs scored", summary.runs_scored),
        ("full rescore", "yes" if summary.full_rescore else "no"),
        ("rubric before", summary.rubric_before or "-"),
        ("rubric after", summary.rubric_after or "-"),
        *((f"seconds: {stage}", f"{value:.3f}") for stage, value in summary.seconds.items()),
    ]
    for what, value in rows:
        table.add_row(what, str(value))
    print_table(console, table)
    for line in jobs.news_lines(summary.schema_news):
        console.print(line, highlight=False, markup=False)
    change = jobs.rubric_change_line(
        summary.rubric_before, summary.rubric_after or "", summary.runs_scored
    )
    if change:
        console.print(change, highlight=False, markup=False)
    for note in summary.notes:
        console.print(f"note: {note}", highlight=False, markup=False)
    for violation in summary.check_violations:
        console.print(f"check: {violation}", highlight=False, markup=False)
    verdict = "all invariants hold" if summary.check_ok else "VIOLATIONS (see above)"
    console.print(f"lake check: {verdict}", highlight=False)
    console.print(f"summary: {summary.summary_file}", highlight=False)
