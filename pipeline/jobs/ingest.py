"""The ingest job, for a caller holding the lake's lock: input files read in line chunks,
each chunk landed as one part, all in one transaction; every line accounted for."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from pathlib import Path

from pipeline.compare import regressions as version_regressions
from pipeline.core.settings import Settings, current_settings
from pipeline.core.stages import progress
from pipeline.ingest import evolution
from pipeline.ingest.batch import unterminated_notes
from pipeline.jobs.earlier import Landed, Retries, lake_task_problems
from pipeline.jobs.land import Lander, file_notes
from pipeline.jobs.results import IngestReport
from pipeline.rubric import Rubric
from pipeline.sources.chunks import iter_line_chunks
from pipeline.sources.discover import scan_inputs
from pipeline.sources.inspect.shared import shared_problem_notes
from pipeline.sources.limits import DEFAULT_CHUNK_BYTES
from pipeline.storage import lake as lk
from pipeline.storage.rubrics import current_rubric, lake_rubric
from pipeline.storage.store import LakeStore


def ingest_locked(
    inputs: Sequence[Path],
    lake: Path,
    rubric: Rubric | None = None,
    *,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    settings: Settings | None = None,
    extra_state: Callable[[set[str]], dict[str, object]] | None = None,
    refresh_regressions: bool = False,
    discovered: bool = False,
    tx: lk.Transaction | None = None,
) -> IngestReport:
    """ingest(), for a caller that already holds the lake's lock.

    ``extra_state`` gives state documents written in the same transaction (the nightly
    ledger), so they hold exactly when the lines landed; it is given the input files
    (source names) the system would not let us read, which are not done with.

    With ``refresh_regressions`` (an ingest that no scoring follows) the lake's
    version_regressions table is rebuilt in the same transaction: new runs can
    add a version and so change which versions are consecutive.

    ``discovered`` inputs were found by the caller's own scan (``scan_inputs``): one gone
    since is quarantined whole as unreadable instead of refusing the whole ingest.

    Given ``tx``, the lines land in it and the caller commits (after scoring them in it).
    """
    started = time.perf_counter()
    chosen = settings or current_settings()
    env_rubric = lake_rubric(lake, rubric)
    store = LakeStore(lake)
    batch_id = lk.new_batch_id()
    scanned = scan_inputs(inputs, lake, discovered=discovered)
    files = scanned.files
    known = evolution.known_names(lake)
    with lk.Transaction(lake) if tx is None else nullcontext(tx) as tx:
        envs = sorted(env_rubric.task.envs)
        retries = Retries(store)
        lander = Lander(
            store,
            tx,
            envs,
            batch_id,
            Landed.of(store, tx),
            keep_bad_lines=chosen.keep_bad_lines,
            retries=retries,
        )
        chunks = iter_line_chunks(
            files,
            chunk_bytes=chunk_bytes,
            settings=chosen,
            inspect=env_rubric.inspect,
            find_retry=retries.find,
        )
        lander.land_all(progress(chunks, "ingesting"))
        shared = shared_problem_notes(lake_task_problems(store, tx, lander.landed.inspect_problems))
        if any(lander.found.values()):
            evolution.remember(tx, lake, lander.found, known)
        if extra_state is not None:
            for name, document in extra_state(lander.unread_sources()).items():
                store.stage_state(tx, name, document)
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
            f"{totals['resolved']} earlier quarantine row(s) resolved: their places were read "
            "again (same file and line) and landed, were copies of runs landed before, or were "
            "quarantined with other text; or their whole file, unreadable or still running "
            "then, was read, or was an Inspect eval's log whose retry landed; or they counted "
            "samples an Inspect log lacked, which its retry landed "
            "(quarantine_resolved has each, with its outcome)"
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
        + lander.notes
        + scanned.skipped
        + failures
        + file_notes(lander.outcomes, exclude=set(lander.failed))
        + shared
        + resolved,
        schema_news=evolution.news_of(lander.found, known),
    )
