"""The local engine: each landed part scored in this process by the scoring stage, two
parts side by side (``SCORERS``), their tables read as lazy scans (nothing is nested)."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextvars import copy_context

import polars as pl

from pipeline.core.stages import AWAITED, timed
from pipeline.engines.stage import FAMILIES, score_tables
from pipeline.rubric import Rubric
from pipeline.storage.store import LakeStore


def score_part(
    store: LakeStore, part: str, rubric: Rubric, seconds: dict[str, float] | None = None
) -> dict[str, pl.DataFrame]:
    """One landed part scored under ``rubric``, each table checked by its model.

    The part is the stage's batch: a part of surface grades alone writes no (empty)
    task score files, and the other way round.
    """
    landed = {
        table: store.part(table, part)
        for family in FAMILIES
        if store.has_part(family.runs, part)
        for table in family.landed
    }
    return score_tables(landed, rubric, seconds)


# Parts scored at a time. One part's plan keeps about 1.3 of the 2 cores busy (measured
# 2026-12-04: 2.0 s of CPU in 1.6 s at 100k runs), and its writes one; two parts side by
# side, with the part before them being written, keep both busy. Each part holds its landed
# rows and score tables only, so memory is bounded by three parts at once.
SCORERS = 2


def score_parts(
    store: LakeStore,
    rubric: Rubric,
    parts: list[str],
    seconds: dict[str, float],
    scorers: int | None = None,
) -> Iterator[tuple[str, dict[str, pl.DataFrame]]]:
    """Each part with its score tables, in the order of ``parts``: up to ``scorers``
    (default ``SCORERS``) parts are scored ahead in workers while the caller writes the
    one before."""
    scorers = SCORERS if scorers is None else scorers
    if scorers <= 1 or len(parts) <= 1:
        for part in parts:
            with timed(seconds, AWAITED):
                tables = score_part(store, part, rubric, seconds)
            yield part, tables
        return
    pool = ThreadPoolExecutor(max_workers=scorers, thread_name_prefix="score")
    try:
        pending = iter(parts)
        ahead: deque[tuple[str, dict[str, float], Future[dict[str, pl.DataFrame]]]] = deque()

        def submit() -> None:
            part = next(pending, None)
            if part is not None:
                # The worker runs under the caller's settings (context variables) and
                # times its stages apart; they are added here, on one thread.
                own: dict[str, float] = {}
                job = pool.submit(copy_context().run, score_part, store, part, rubric, own)
                ahead.append((part, own, job))

        for _ in range(scorers):
            submit()
        while ahead:
            part, own, job = ahead.popleft()
            with timed(seconds, AWAITED):
                tables = job.result()
            for stage, spent in own.items():
                seconds[stage] = seconds.get(stage, 0.0) + spent
            submit()
            yield part, tables
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
