"""The local engine: each landed part scored in this process by the scoring stage, one
part in memory at a time, its tables read as lazy scans (nothing is nested)."""

from __future__ import annotations

from collections.abc import Iterator

import polars as pl

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


def score_parts(
    store: LakeStore, rubric: Rubric, parts: list[str], seconds: dict[str, float]
) -> Iterator[tuple[str, dict[str, pl.DataFrame]]]:
    """Each part with its score tables, scored as it is asked for."""
    for part in parts:
        yield part, score_part(store, part, rubric, seconds)
