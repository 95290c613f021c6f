"""The engine a scoring runs on, as a type chosen once (by the CLI) and passed down.

Each engine turns parts into score tables by the same stage (``stage.score_tables``),
and one writer writes them through the caller's transaction, so what the lake holds
does not depend on which one ran.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import polars as pl

    from pipeline.rubric import Rubric
    from pipeline.storage.lake import Transaction
    from pipeline.storage.store import LakeStore

DEFAULT_SPARK_MASTER = "local[2]"

ScoredParts = Iterator[tuple[str, dict[str, "pl.DataFrame"]]]
# (store, rubric, parts, seconds) -> each part with its score tables, as they are scored.
PartScorer = Callable[["LakeStore", "Rubric", list[str], dict[str, float]], ScoredParts]


def write_scores(
    store: LakeStore,
    rubric: Rubric,
    scored: Iterable[tuple[str, dict[str, pl.DataFrame]]],
    tx: Transaction,
    seconds: dict[str, float],
    total: int,
) -> dict[str, int]:
    """Write each part's score tables through ``tx`` as they come; rows written per table."""
    from pipeline.core.stages import progress, timed

    counts: dict[str, int] = {}
    try:
        for part, tables in progress(scored, f"scoring under {rubric.rubric_id}", total=total):
            for name, frame in tables.items():
                with timed(seconds, "writes"):
                    store.write_scores(tx, rubric.rubric_id, part, name, frame)
                counts[name] = counts.get(name, 0) + frame.height
    finally:
        # On a failure, the parts still being scored ahead are stopped before the
        # transaction aborts (a generator's close ends its workers).
        close = getattr(scored, "close", None)
        if close is not None:
            close()
    return counts


class _Scoring:
    """What every engine does with its parts' score tables: write them through ``tx``."""

    def scorer(self) -> PartScorer:
        raise NotImplementedError

    def score(
        self,
        store: LakeStore,
        rubric: Rubric,
        parts: list[str],
        tx: Transaction,
        seconds: dict[str, float],
    ) -> dict[str, int]:
        """Write every score table of ``parts`` through ``tx``; rows written per table."""
        scored = self.scorer()(store, rubric, parts, seconds)
        return write_scores(store, rubric, scored, tx, seconds, len(parts))


@dataclass(frozen=True)
class LocalEngine(_Scoring):
    """Score here, two parts at a time (the default)."""

    def scorer(self) -> PartScorer:
        from pipeline.engines.local import score_parts

        return score_parts


@dataclass(frozen=True)
class SparkEngine(_Scoring):
    """Score on Apache Spark at ``master`` (PySpark is an optional extra)."""

    master: str = DEFAULT_SPARK_MASTER

    def scorer(self) -> PartScorer:
        # Imported here: PySpark is an optional extra.
        from pipeline.engines.spark import scored_parts

        def run(
            store: LakeStore, rubric: Rubric, parts: list[str], seconds: dict[str, float]
        ) -> ScoredParts:
            return scored_parts(store, rubric, parts, self.master)

        return run


Engine = LocalEngine | SparkEngine
