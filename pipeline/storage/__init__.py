"""The lake: layout, atomic writes, transactions, part manifests, state files, and
``LakeStore``, the one object stages read and write the lake through.

Names load on first use: the CLI imports ``pipeline.storage.lake`` for its errors and
default lake, and ``--help`` must not pay for Polars.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.core.lazy import lazy_getattr

if TYPE_CHECKING:
    from pipeline.storage.lake import (
        InputError,
        LakeBusyError,
        Transaction,
        lake_lock,
        new_batch_id,
    )
    from pipeline.storage.landed_index import LandedIndex
    from pipeline.storage.parts import check_and_repair
    from pipeline.storage.rubrics import (
        current_rubric,
        known_rubrics,
        lake_rubric,
        rubric_conflict,
        stage_rubric,
    )
    from pipeline.storage.state import repair_state
    from pipeline.storage.store import LakeStore

_HOMES = {
    "InputError": "lake",
    "LakeBusyError": "lake",
    "Transaction": "lake",
    "lake_lock": "lake",
    "new_batch_id": "lake",
    "LandedIndex": "landed_index",
    "check_and_repair": "parts",
    "current_rubric": "rubrics",
    "known_rubrics": "rubrics",
    "lake_rubric": "rubrics",
    "rubric_conflict": "rubrics",
    "stage_rubric": "rubrics",
    "repair_state": "state",
    "LakeStore": "store",
}

__all__ = [
    "InputError",
    "LakeBusyError",
    "LakeStore",
    "LandedIndex",
    "Transaction",
    "check_and_repair",
    "current_rubric",
    "known_rubrics",
    "lake_lock",
    "lake_rubric",
    "new_batch_id",
    "repair_state",
    "rubric_conflict",
    "stage_rubric",
]


__getattr__ = lazy_getattr(__name__, _HOMES)
