"""What every command reads of the lake before its work (storage/parts.py survey): the same
small amount on the 300th night as on the first. A landed file whose size and mtime are as
its manifest records is not opened; only the scores of the rubric the command works under
are read. `check` still reads everything."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from pipeline.jobs import commands as jobs
from pipeline.jobs.check import check_lake
from pipeline.rubric import parse_rubric
from pipeline.storage import lake as lk
from pipeline.storage import parts
from tests.clirunner import pipeline
from tests.crash import damage_first_page
from tests.strategies import task_record

DEFAULT = parse_rubric({})
HALF = parse_rubric({"rubric_id": "half", "task": {"penalty_scale": 0.5}})


def nights(tmp_path: Path, count: int) -> Path:
    """A lake of ``count`` ingests (parts), each of two runs, scored under the defaults."""
    lake = tmp_path / "lake"
    for night in range(count):
        source = tmp_path / f"night-{night}.jsonl"
        records = [task_record(random.Random(night * 2 + i), f"n{night}-{i}") for i in range(2)]
        source.write_text("".join(json.dumps(r) + "\n" for r in records))
        jobs.run([source], lake, DEFAULT)
    return lake


@pytest.fixture
def read_footers(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every Parquet footer the survey reads, in order."""
    read: list[Path] = []
    rows, columns = parts._rows, parts._missing_columns

    def counted_rows(path: Path) -> int | None:
        read.append(path)
        return rows(path)

    def counted_columns(path: Path) -> list[str]:
        read.append(path)
        return columns(path)

    monkeypatch.setattr(parts, "_rows", counted_rows)
    monkeypatch.setattr(parts, "_missing_columns", counted_columns)
    return read


@pytest.mark.slow
def test_a_survey_opens_no_landed_file_its_manifest_vouches_for(
    tmp_path: Path, read_footers: list[Path]
) -> None:
    lake = nights(tmp_path, 3)
    jobs.score(lake, HALF)  # a second rubric's scores, which the defaults' commands skip
    jobs.score(lake, DEFAULT)
    read_footers.clear()
    found = parts.survey(lake, rubrics=[DEFAULT.rubric_id])
    assert not found.broken and not found.orphans and not found.unreadable_scores
    # Score files of the rubric worked under, two tables a part; no landed file, no "half".
    default_scores = lake / "scores" / lk.rubric_key(DEFAULT.rubric_id)
    assert read_footers, "the current rubric's score files are read"
    assert all(path.is_relative_to(default_scores) for path in read_footers), read_footers
    # Deep (check): every landed file is hashed, every rubric's scores read.
    read_footers.clear()
    parts.survey(lake, deep=True)
    half_scores = lake / "scores" / lk.rubric_key(HALF.rubric_id)
    assert any(path.is_relative_to(half_scores) for path in read_footers)


@pytest.mark.slow
def test_a_damaged_old_rubrics_score_file_waits_for_check_and_a_rescore_under_it(
    tmp_path: Path,
) -> None:
    lake = nights(tmp_path, 2)
    jobs.score(lake, HALF)
    jobs.score(lake, DEFAULT)
    half_scores = lake / "scores" / lk.rubric_key(HALF.rubric_id) / "task_scores"
    half_file = sorted(half_scores.glob("*.parquet"))[0]
    half_file.write_bytes(b"not parquet")
    # A command under the defaults neither reads nor mends it...
    assert jobs.score(lake).notes == []
    assert half_file.read_bytes() == b"not parquet"
    # ...check names it...
    violations = check_lake(lake).violations
    assert any(
        f"{half_file} is not a readable Parquet file: `python -m pipeline score --lake {lake}` "
        "scores it again (for another rubric than the lake's, --rubric FILE" in v
        for v in violations
    ), violations
    # ...rescore-diff says which file to look for instead of a Polars error...
    done = pipeline(
        "rescore-diff", "--from", HALF.rubric_id, "--to", DEFAULT.rubric_id, "--lake", lake
    )
    assert done.returncode == 1
    assert "a score file of half or" in done.stderr and "cannot be read" in done.stderr
    assert f"`python -m pipeline check --lake {lake}` names it" in " ".join(done.stderr.split())
    # ...and scoring under its rubric again replaces it.
    jobs.score(lake, HALF)
    assert half_file.read_bytes().startswith(b"PAR1")
    assert check_lake(lake).violations == []


@pytest.mark.slow
def test_a_damaged_page_of_a_score_file_is_found_by_check_and_mended_by_score(
    tmp_path: Path,
) -> None:
    """Score files have no recorded hash; their footers read fine with a page damaged, so
    check passed while rescore-diff and a nightly failed on the file."""
    lake = nights(tmp_path, 2)
    scores = lake / "scores" / lk.rubric_key(DEFAULT.rubric_id) / "task_scores"
    damaged = sorted(scores.glob("*.parquet"))[0]
    damage_first_page(damaged)
    assert parts._rows(damaged) is not None  # the footer still reads
    violations = check_lake(lake).violations
    assert any(
        f"{damaged} is not a readable Parquet file: `python -m pipeline score --lake {lake}`" in v
        for v in violations
    ), violations
    jobs.score(lake)
    assert check_lake(lake).violations == []
