"""The nightly job: land what is new in the inbox, score it, rescore on a rubric change.

Safe to rerun: a ledger of ingested files by content hash is written in the
same transaction as the lines it landed, so a file is either ingested and in
the ledger, or neither; a file that changed has a new hash and is read again
(its old lines are then exact duplicates, skipped). Run twice in a row, the
second run finds nothing new and says so.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path

from pipeline.core.settings import Settings, current_settings, use_settings
from pipeline.core.stages import timed
from pipeline.engines import Engine
from pipeline.jobs.check import check_lake_locked
from pipeline.jobs.ingest import ingest_locked
from pipeline.jobs.prepare import prepare
from pipeline.jobs.results import IngestCounts, IngestReport
from pipeline.jobs.rubric_names import stored_gap_notes
from pipeline.jobs.score import pending_parts, score_locked, verify_landed
from pipeline.rubric import Rubric
from pipeline.sources.discover import scan_inputs, source_name
from pipeline.storage import lake as lk
from pipeline.storage.rubrics import current_rubric, lake_rubric
from pipeline.storage.store import LakeStore
from pipeline.warehouse import build_warehouse

LEDGER = "ledger"


@dataclass
class NightlySummary(IngestCounts):
    """A nightly pass: its own facts, and its ingest's counts (zero when nothing landed)."""

    started_at: str
    inbox: str
    files_in_inbox: int
    files_new: int
    runs_scored: int = 0
    task_runs_scored: int = 0
    surface_grades_scored: int = 0
    full_rescore: bool = False
    rubric_before: str | None = None
    rubric_after: str | None = None
    nothing_to_do: bool = False
    seconds: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    summary_file: str | None = None
    # The lake checker's verdict on the lake this run left (pipeline/jobs/check.py).
    check_ok: bool | None = None
    check_violations: list[str] = field(default_factory=list)
    check_notes: list[str] = field(default_factory=list)


def file_digest(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _digest_or_none(path: Path) -> str | None:
    try:
        return file_digest(path)
    except OSError:
        return None


def read_ledger(lake: Path) -> dict[str, dict[str, object]]:
    ledger: dict[str, dict[str, object]] = LakeStore(lake).read_state(LEDGER, {})
    return ledger


def _ledger_entry(path: Path, started: datetime) -> dict[str, object]:
    try:
        size: int | None = path.stat().st_size
    except OSError:  # read whole, then removed: its lines are in; its size is not known
        size = None
    return {"path": str(path), "size": size, "first_seen": started.isoformat()}


def _add_ingest(summary: NightlySummary, report: IngestReport) -> None:
    """The ingest's counts, copied into the nightly summary."""
    for count in fields(IngestCounts):
        setattr(summary, count.name, getattr(report, count.name))


def nightly(
    inbox: Path,
    lake: Path,
    rubric: Rubric | None = None,
    *,
    engine: Engine | None = None,
    settings: Settings | None = None,
) -> NightlySummary:
    """One nightly pass over ``inbox`` under ``rubric`` (None: the lake's own, so a nightly
    job never undoes an analyst's rubric change); see the module docstring."""
    started = datetime.now(UTC)
    seconds: dict[str, float] = {}
    with use_settings(settings or current_settings()), lk.lake_lock(lake):
        notes = prepare(lake)
        before = current_rubric(lake)
        rubric = lake_rubric(lake, rubric)
        # Before the ledger is read: a part this removes takes its inbox files out of the
        # ledger, so they count as new tonight (the ingest writes the ledger it read back).
        verified = verify_landed(lake, rubric)
        notes.extend(verified.problems)
        with timed(seconds, "scan"):
            scanned = scan_inputs([inbox], lake)
            files = scanned.files
            notes.extend(scanned.skipped)
            digests = {path: _digest_or_none(path) for path in files}
            ledger = read_ledger(lake)
            # A file that cannot be read now is ingested (quarantined whole, with why) and
            # left out of the ledger, so a later night reads it again.
            new = [path for path in files if digests[path] is None or digests[path] not in ledger]
        summary = NightlySummary(
            started_at=started.isoformat(),
            inbox=str(inbox),
            files_in_inbox=len(files),
            files_new=len(new),
            rubric_before=before.rubric_id if before else None,
            rubric_after=rubric.rubric_id,
        )
        rubric_changed = before is None or before.rubric_id != rubric.rubric_id
        pending = pending_parts(LakeStore(lake), rubric)
        if not new and not rubric_changed and not pending:
            summary.nothing_to_do = True
            # The file can still be stale: a run killed after scoring but before the views,
            # or a file another version of the pipeline built. A build that finds nothing
            # to change reads its own record and writes nothing.
            with timed(seconds, "warehouse"):
                built = build_warehouse(lake, rubric.rubric_id)
            if built.written:
                how = (
                    f"{built.files_loaded} lake file(s) loaded, {built.files_dropped} dropped"
                    if built.incremental
                    else "built again from nothing"
                )
                notes.append(f"the warehouse was behind the lake and is brought up to date ({how})")
        else:
            if new:
                read = {path: digest for path, digest in digests.items() if digest is not None}

                def ledger_after(unread: set[str]) -> dict[str, object]:
                    """The ledger with every new file read whole; one the system would not
                    let the ingest read (gone or locked since it was hashed) stays out."""
                    entries = {
                        read[path]: _ledger_entry(path, started)
                        for path in new
                        if path in read and source_name(path) not in unread
                    }
                    return {LEDGER: {**ledger, **entries}}

            # Landed and scored in one transaction: a crash leaves no run without its score.
            with lk.Transaction(lake) as tx:
                if new:
                    with timed(seconds, "ingest"):
                        report = ingest_locked(
                            new, lake, rubric, extra_state=ledger_after, discovered=True, tx=tx
                        )
                    _add_ingest(summary, report)
                    notes.extend(report.notes)
                with timed(seconds, "score"):
                    result = score_locked(
                        lake, rubric, full=False, engine=engine, tx=tx, verified=verified
                    )
            seconds |= {f"score: {stage}": value for stage, value in result.stages.items()}
            summary.runs_scored = result.task_runs + result.surface_runs
            summary.task_runs_scored = result.task_runs
            summary.surface_grades_scored = result.surface_runs
            summary.full_rescore = result.full
            if rubric_changed:
                # The night applied a rubric: which of its names no landed run carries.
                notes.extend(stored_gap_notes(lake, rubric))
            with timed(seconds, "warehouse"):
                build_warehouse(lake, rubric.rubric_id)
        with timed(seconds, "check"):
            verdict = check_lake_locked(lake)
        summary.check_ok = verdict.ok
        summary.check_violations = verdict.violations
        summary.check_notes = verdict.notes
        summary.seconds = seconds
        summary.notes = notes
        name = f"nightly-{started.strftime('%Y%m%dT%H%M%S%fZ')}"
        store = LakeStore(lake)
        # The record names itself, as the printed summary names it.
        summary.summary_file = str(store.run_record_path(name))
        store.write_run_record(name, asdict(summary))
    return summary
