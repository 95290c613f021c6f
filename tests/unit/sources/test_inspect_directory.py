"""What a .eval log's ZIP directory says before any member is decompressed: the bytes read
with its header, and each sample member's size (the last of a name wins)."""

from __future__ import annotations

import warnings
import zipfile
from pathlib import Path

import pytest

from pipeline.sources.inspect import members
from pipeline.sources.inspect.members import Directory, sample_member
from tests.ziplogs import CRC_AT, recorded, understated


def _log(path: Path, members: list[tuple[str, int]]) -> Path:
    with zipfile.ZipFile(path, "w") as archive, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # zipfile's "Duplicate name"
        for name, size in members:
            archive.writestr(name, b"x" * size)
    return path


def test_an_ended_log_reads_its_header_and_reductions(tmp_path: Path) -> None:
    log = _log(
        tmp_path / "a.eval",
        [
            ("_journal/start.json", 30),
            ("samples/a_epoch_1.json", 40),
            ("samples/a_epoch_1.json", 45),  # written again by a retry: the last is read
            ("samples/b_epoch_2.json", 1),
            ("_journal/summaries/1.json", 50),
            ("summaries.json", 50),
            ("reductions.json", 20),
            ("header.json", 10),
        ],
    )
    directory = Directory.of(log)
    assert (directory.header_bytes, directory.header) == (
        10 + 20,
        ("reductions.json", "header.json"),
    )
    assert directory.samples == {"samples/a_epoch_1.json": 45, "samples/b_epoch_2.json": 1}
    assert directory.damaged([*directory.header, *directory.samples]) == []


def test_a_running_log_reads_its_start_journal_and_config_updates(tmp_path: Path) -> None:
    log = _log(
        tmp_path / "a.eval",
        [
            ("_journal/start.json", 30),
            ("_journal/config_updates/1.json", 7),
            ("_journal/config_updates/2.json", 3),
            ("samples/a_epoch_1.json", 40),
        ],
    )
    directory = Directory.of(log)
    assert directory.header_bytes == 30 + 7 + 3
    assert directory.samples == {"samples/a_epoch_1.json": 40}


def test_a_sample_member_is_named_as_inspect_names_it() -> None:
    assert sample_member("ex-1", 2) == "samples/ex-1_epoch_2.json"
    assert sample_member(7, 1) == "samples/7_epoch_1.json"


@pytest.mark.parametrize("method", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_a_member_whose_bytes_are_not_what_its_directory_records_is_damaged(
    tmp_path: Path, method: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "a.eval"
    with zipfile.ZipFile(log, "w", method) as archive:
        archive.writestr("header.json", b"h" * 100)
        archive.writestr("samples/a_epoch_1.json", b"a" * 5000)
        archive.writestr("samples/b_epoch_1.json", b"b" * 5000)
    understated(log, "samples/a_epoch_1.json", 4999)
    understated(log, "header.json", 101)
    recorded(log, "samples/b_epoch_1.json", CRC_AT, 12345)
    directory = Directory.of(log)
    assert directory.samples["samples/a_epoch_1.json"] == 4999
    names = [*directory.header, *directory.samples]
    assert directory.damaged(names) == [
        ("header.json", "holds 100 bytes, not the 101"),
        ("samples/a_epoch_1.json", "holds more than the 4999 bytes"),
        ("samples/b_epoch_1.json", "does not match the CRC-32"),
    ]
    # Counted a block at a time up to the cap (one byte past the recorded size): a bomb is
    # never decompressed whole.
    monkeypatch.setattr(members, "COUNT_BLOCK", 64)
    with open(log, "rb") as handle:
        blocks = members._decompressed(handle, directory.infos["samples/b_epoch_1.json"], 100)
        assert blocks is not None and 100 <= sum(map(len, blocks)) < 100 + 64
