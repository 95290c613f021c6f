"""Which run_ids may have landed already: 8 bytes a run instead of the history itself.

Dedupe compares a chunk's runs with the landed runs that share their run_ids.
Reading the history's run_ids for every chunk costs a scan of the whole lake
per chunk (~1 s at 10M runs, and an ingest of 10M runs has ~140 chunks);
holding the history's provenance costs ~1.4 GiB at 10M runs. Instead an
ingest keeps the 64-bit hashes of every run_id landed so far, sorted, and
reads the history only for the run_ids whose hash it finds there (none, for
new data). A hash that matches by chance only costs that read: the exact
comparison is still made on the rows it returns.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import polars as pl

# Hashes are compared within one process only, so any fixed seed will do.
_SEED = 0x5EED

Hashes = npt.NDArray[np.uint64]


def run_id_hash(run_id: pl.Expr) -> pl.Expr:
    """A run_id's 64-bit hash; in a scan, so the history's run_ids are never held at once."""
    return run_id.hash(seed=_SEED)


def run_id_hashes(run_ids: pl.Series) -> Hashes:
    hashes: Hashes = run_ids.to_frame().select(run_id_hash(pl.first())).to_series().to_numpy()
    return hashes


class LandedIndex:
    """The sorted hashes of the run_ids landed (or staged) so far."""

    def __init__(self, hashes: Hashes) -> None:
        self._sorted: Hashes = np.sort(hashes)

    @classmethod
    def of(cls, run_ids: pl.Series) -> LandedIndex:
        return cls(run_id_hashes(run_ids))

    def __len__(self) -> int:
        return int(self._sorted.size)

    def may_hold(self, run_ids: pl.Series) -> pl.Series:
        """The run_ids whose hash is in the index (every run_id that has landed is)."""
        hashes = run_id_hashes(run_ids)
        if not self._sorted.size or not hashes.size:
            return run_ids.clear()
        at = np.minimum(np.searchsorted(self._sorted, hashes), self._sorted.size - 1)
        return run_ids.filter(pl.Series(self._sorted[at] == hashes))

    def add(self, run_ids: pl.Series) -> None:
        """Take in run_ids that landed: merged into place, one copy of the index."""
        fresh = np.sort(run_id_hashes(run_ids))
        self._sorted = np.insert(self._sorted, np.searchsorted(self._sorted, fresh), fresh)
