"""The engine a scoring runs on, as a type chosen once (by the CLI) and passed down.

Both engines write the same score files through the caller's transaction, so what
the lake holds does not depend on which one ran.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pipeline.rubric import Rubric
    from pipeline.storage.lake import Transaction
    from pipeline.storage.store import LakeStore

DEFAULT_SPARK_MASTER = "local[2]"


@dataclass(frozen=True)
class LocalEngine:
    """Score here, one part at a time (the default)."""

    def score(
        self,
        store: LakeStore,
        rubric: Rubric,
        parts: list[str],
        tx: Transaction,
        seconds: dict[str, float],
    ) -> dict[str, int]:
        """Write every score table of ``parts`` through ``tx``; rows written per table."""
        from pipeline.core.stages import progress, timed
        from pipeline.engines.local import score_parts

        counts: dict[str, int] = {}
        scored = score_parts(store, rubric, parts, seconds)
        for part, tables in progress(scored, f"scoring under {rubric.rubric_id}", total=len(parts)):
            for name, frame in tables.items():
                with timed(seconds, "writes"):
                    store.write_scores(tx, rubric.rubric_id, part, name, frame)
                counts[name] = counts.get(name, 0) + frame.height
        return counts


@dataclass(frozen=True)
class SparkEngine:
    """Score on Apache Spark at ``master`` (PySpark is an optional extra)."""

    master: str = DEFAULT_SPARK_MASTER

    def score(
        self,
        store: LakeStore,
        rubric: Rubric,
        parts: list[str],
        tx: Transaction,
        seconds: dict[str, float],
    ) -> dict[str, int]:
        # Imported here: PySpark is an optional extra.
        from pipeline.engines.spark import score_with_spark

        return score_with_spark(store.root, rubric, parts, tx, master=self.master)


Engine = LocalEngine | SparkEngine
