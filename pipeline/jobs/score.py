"""The score job, for a caller holding the lake's lock: landed parts scored under one
rubric by the chosen engine, written per part in one transaction with the rubric state.

Scores are written per part, so "what is new" is the parts that have no score file
under the current rubric yet.
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from pathlib import Path

from pipeline.compare import regressions as version_regressions
from pipeline.engines import Engine, LocalEngine
from pipeline.jobs.results import ScoreResult
from pipeline.rubric import Rubric
from pipeline.storage import lake as lk
from pipeline.storage.parts import Repair, check_and_repair
from pipeline.storage.rubrics import current_rubric, stage_rubric
from pipeline.storage.store import LakeStore
from schemas.registry import SCORED


def pending_parts(store: LakeStore, rubric: Rubric) -> list[str]:
    """Landed parts missing any of their score files under ``rubric``."""
    pending: set[str] = set()
    for runs, tables in lk.SCORE_FAMILIES.items():
        landed = set(store.landed_parts(runs))
        for table in tables:
            pending |= landed - set(store.scored_parts(rubric.rubric_id, table))
    return sorted(pending)


def _to_score(
    store: LakeStore, rubric: Rubric, full: bool
) -> tuple[list[str], bool, Rubric | None]:
    """The parts a scoring under ``rubric`` reads, whether it is full, and the lake's
    rubric before it: a different rubric means the whole history is rescored under it."""
    before = current_rubric(store.root)
    full = full or before is None or before.rubric_id != rubric.rubric_id
    return (store.all_parts() if full else pending_parts(store, rubric)), full, before


def verify_landed(lake: Path, rubric: Rubric) -> Repair:
    """Every landed file a scoring under ``rubric`` will read, hashed against its manifest:
    a corrupt part is removed whole (its inputs will be read again) instead of scored.
    Run before a transaction that lands parts and scores them (``score_locked``'s ``tx``):
    a repair is a transaction of its own, and the parts that one stages are its own."""
    parts, _, _ = _to_score(LakeStore(lake), rubric, False)
    if not parts:
        return Repair()  # nothing landed to hash (``prepare`` has surveyed the lake)
    return check_and_repair(lake, deep=parts, rubrics=[rubric.rubric_id])


def score_locked(
    lake: Path,
    rubric: Rubric,
    *,
    full: bool,
    engine: Engine | None = None,
    tx: lk.Transaction | None = None,
    verified: Repair | None = None,
) -> ScoreResult:
    """Score every part (full) or only the parts not yet scored under ``rubric``.

    The rubric becomes the lake's current one in the same transaction, so the
    warehouse never shows a mix of two rubrics' scores. Given ``tx`` (a command that
    landed parts in it), the scores are written in it too and the parts read as it
    will leave them, so a crash leaves no run landed without its score; the caller
    commits, and has verified the landed parts before it opened ``tx`` (``verified``).
    """
    started = time.perf_counter()
    if (tx is None) != (verified is None):
        raise ValueError(
            "score_locked verifies the parts itself, or is given a transaction and what "
            "verify_landed found before it was opened"
        )
    store = LakeStore(lake, tx)
    parts, full, before = _to_score(store, rubric, full)
    changed = before is None or before.rubric_id != rubric.rubric_id
    if parts and (changed or not full):
        # New scores: the version table will be rebuilt from them at the end.
        version_regressions.warm()
    if verified is None:
        verified = check_and_repair(lake, deep=parts, rubrics=[rubric.rubric_id])
    parts = [part for part in parts if part not in verified.removed_parts]
    seconds: dict[str, float] = {}
    with lk.Transaction(lake) if tx is None else nullcontext(tx) as tx:
        counts = (engine or LocalEngine()).score(store, rubric, parts, tx, seconds)
        if full:
            # Scores of parts that are no longer landed (removed by hand) go too; a table
            # of the whole rubric has no part and is left to its own rebuild below.
            per_part = [table for table in SCORED if table not in lk.RUBRIC_TABLES]
            store.drop_scores_except(tx, rubric.rubric_id, per_part, parts)
        # The gate's table follows the scores it is computed from, in the same commit.
        version_regressions.stage(lake, rubric.rubric_id, tx)
        stage_rubric(tx, lake, rubric)
    return ScoreResult(
        rubric_id=rubric.rubric_id,
        task_runs=counts.get("task_scores", 0),
        surface_runs=counts.get("surface_scores", 0),
        parts=len(parts),
        full=full,
        seconds=time.perf_counter() - started,
        notes=verified.problems,
        stages=seconds,
        rubric_before=before.rubric_id if before else None,
    )
