"""The lake: layout, atomic writes, transactions, part manifests, state files, and
``LakeStore``, the one object stages read and write the lake through.

Names load on first use: the CLI imports ``pipeline.storage.lake`` for its errors and
default lake, and ``--help`` must not pay for Polars.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.core.lazy import by_name, lazy_getattr

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

_HOMES = by_name(
    {
        "lake": ("InputError", "LakeBusyError", "Transaction", "lake_lock", "new_batch_id"),
        "landed_index": ("LandedIndex",),
        "parts": ("check_and_repair",),
        "rubrics": (
            "current_rubric",
            "known_rubrics",
            "lake_rubric",
            "rubric_conflict",
            "stage_rubric",
        ),
        "state": ("repair_state",),
        "store": ("LakeStore",),
    }
)

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
