"""A Parquet file written cut short (a disk that filled part way, silently) is refused as it
is written, with what probably happened, instead of being read later as "Invalid thrift"."""

from __future__ import annotations

import errno
from pathlib import Path

import polars as pl
import pytest

from pipeline.storage import lake as lk


def test_a_whole_file_lands(tmp_path: Path) -> None:
    target = tmp_path / "t" / "a.parquet"
    lk.write_parquet_atomic(pl.DataFrame({"x": [1, 2]}), target)
    assert pl.read_parquet(target)["x"].to_list() == [1, 2]


def test_a_cut_file_is_refused_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def cut_short(self: pl.DataFrame, file: Path, **_: object) -> None:
        Path(file).write_bytes(b"PAR1\x15\x00\x15")  # the header and a little, no footer

    monkeypatch.setattr(pl.DataFrame, "write_parquet", cut_short)
    target = tmp_path / "t" / "a.parquet"
    with pytest.raises(OSError, match=r"written cut short \(7 bytes, no Parquet footer\)") as err:
        lk.write_parquet_atomic(pl.DataFrame({"x": [1]}), target)
    assert err.value.errno == errno.ENOSPC
    assert "is the disk full?" in str(err.value)
    assert list((tmp_path / "t").iterdir()) == []


def test_a_file_whose_decoding_panics_is_unreadable_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A damaged page can make Polars panic (a BaseException): check had died on it.
    from pipeline.storage import parts

    class Panicking:
        def collect(self, **_: object) -> None:
            raise pl.exceptions.PanicException("assertion failed: num_values <= values.len()")

    monkeypatch.setattr(lk, "scan_file", lambda path: Panicking())
    damaged = tmp_path / "x.parquet"
    damaged.write_bytes(b"PAR1 damaged PAR1")
    assert parts._decodes(damaged) is False
    assert lk._holds(damaged, pl.DataFrame()) is False
