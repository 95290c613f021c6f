"""kill -9 at a seeded write, in-process: the lake a killed process leaves, without a process.

``PIPELINE_CRASH_AT=N`` makes ``python -m pipeline`` kill itself at its N-th file write or
move (pipeline/storage/lake.py); a process costs seconds of start-up. Inside ``killed_at``,
the N-th write instead renames the lake folder away whole (files, inodes and mtimes as they
were at that instant) and raises ``Killed``; the command unwinds against a lake that is gone,
whatever it removes or writes by path lands nowhere, and the folder comes back. On disk that is
what kill -9 leaves (the same files, compared at writes across a `run`). What only a real kill
shows, a process that dies holding the lake's lock and open files, still needs a process.
"""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

from pipeline.storage import lake as lake_module


class Killed(BaseException):
    """Not an Exception, so no handler in the command takes it for a failure to report."""


@dataclass
class Kill:
    fired: bool = False


@contextmanager
def killed_at(lake: Path, crash_at: int) -> Iterator[Kill]:
    """Leave ``lake`` as a kill -9 at write ``crash_at`` of the command inside would; the
    yielded ``Kill`` says whether the command got that far."""
    taken = lake.with_name(f".{lake.name}-killed")
    writes = itertools.count(1)
    kill = Kill()

    def crash_point() -> None:
        if next(writes) == crash_at:
            os.rename(lake, taken)
            kill.fired = True
            raise Killed

    try:
        with mock.patch.object(lake_module, "_crash_point", crash_point):
            yield kill
    except Killed:
        pass
    if kill.fired:
        shutil.rmtree(lake, ignore_errors=True)
        os.rename(taken, lake)


def damage_first_page(path: Path) -> None:
    """Overwrite the header of the first page of a Parquet file's first column, so that
    decoding it fails while its footer still reads (a score file has no recorded hash)."""
    import pyarrow.parquet as pq

    column = pq.ParquetFile(path).metadata.row_group(0).column(0)
    start = column.dictionary_page_offset or column.data_page_offset
    data = bytearray(path.read_bytes())
    data[start : start + 16] = b"\xff" * 16
    path.write_bytes(bytes(data))
