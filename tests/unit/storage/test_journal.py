"""Where a commit journal's paths are: in the lake the stage is in, wherever it is now.
A journal an older version wrote names them as its command was given the lake."""

from __future__ import annotations

import json
from pathlib import Path

from pipeline.storage import lake as lk


def _stage(lake: Path, journal: dict[str, object]) -> Path:
    stage = lk.staging_dir(lake) / "B"
    stage.mkdir(parents=True)
    (stage / lk.JOURNAL_NAME).write_text(json.dumps(journal))
    return stage


def test_an_older_journal_is_placed_from_where_its_stage_was(tmp_path: Path) -> None:
    stage = _stage(tmp_path / "now", {})
    journal = {"moves": [{"from": "/old/lake/_staging/B/t/a.parquet", "to": "/old/lake/t/a"}]}
    place = lk._placer(stage, journal)
    assert place("/old/lake/_staging/B/t/a.parquet") == tmp_path / "now/_staging/B/t/a.parquet"
    assert place("/old/lake/t/a") == tmp_path / "now/t/a"
    assert place("/elsewhere/t/a") is None
    # Given relative to where its command ran; the lake itself (".") too.
    relative = {"moves": [{"from": "lake/_staging/B/x", "to": "lake/x"}]}
    assert lk._placer(stage, relative)("lake/x") == tmp_path / "now/x"
    here = {"moves": [{"from": "_staging/B/x", "to": "x"}]}
    assert lk._placer(stage, here)("x") == tmp_path / "now/x"
    assert lk._placer(stage, {"paths": lk.JOURNAL_PATHS})("t/a") == tmp_path / "now/t/a"


def test_an_older_journal_without_moves_deletes_only_inside_the_lake(tmp_path: Path) -> None:
    lake, other = tmp_path / "lake", tmp_path / "other"
    other.mkdir()
    (outside := other / "old.parquet").write_bytes(b"x")
    lake.mkdir()
    (inside := lake / "old.parquet").write_bytes(b"x")
    _stage(lake, {"moves": [], "deletes": [str(inside), str(outside)]})
    assert lk.recover(lake) == ["completed B"]
    assert not inside.exists() and outside.exists()
