"""The lake's lock: one writer at a time, and readers (check, a dry run on a read-only
mount) share it, so neither sees the other half way; each refusal names the holder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipeline.storage import lake as lk


def test_a_reader_waits_for_no_writer_and_a_writer_for_no_reader(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    with (
        lk.lake_lock(lake),
        pytest.raises(lk.LakeBusyError, match=f"in use by pid {os.getpid()}"),
        lk.reading_lock(lake),
    ):
        pass
    with lk.reading_lock(lake):
        with lk.reading_lock(lake):  # readers share it
            pass
        with pytest.raises(lk.LakeBusyError, match="in use by"), lk.lake_lock(lake):
            pass


def test_a_reader_of_a_lake_without_a_lock_file_writes_none(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    lake.mkdir()
    with lk.reading_lock(lake):
        pass
    assert list(lake.iterdir()) == []
