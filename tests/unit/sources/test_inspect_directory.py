"""What a .eval log's ZIP directory says before any member is decompressed: the bytes read
with its header, and each sample member's size (the last of a name wins)."""

from __future__ import annotations

import warnings
import zipfile
from pathlib import Path

from pipeline.sources.inspect.table import Directory, sample_member


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
    assert Directory.of(log) == Directory(
        10 + 20, {"samples/a_epoch_1.json": 45, "samples/b_epoch_2.json": 1}
    )


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
    assert Directory.of(log) == Directory(30 + 7 + 3, {"samples/a_epoch_1.json": 40})


def test_a_sample_member_is_named_as_inspect_names_it() -> None:
    assert sample_member("ex-1", 2) == "samples/ex-1_epoch_2.json"
    assert sample_member(7, 1) == "samples/7_epoch_1.json"
