"""The lake's version_regressions table is rebuilt only when what it is computed from changed."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pipeline.compare import regressions
from pipeline.jobs import commands as jobs
from pipeline.rubric import parse_rubric
from pipeline.storage import lake as lk
from pipeline.storage.rubrics import current_rubric

DEFAULT = parse_rubric({})


def _gate_file(lake: Path) -> Path:
    return lk.score_dir(lake, DEFAULT.rubric_id, regressions.TABLE) / regressions.FILE_NAME


def _fresh(lake: Path) -> pl.DataFrame:
    """The table built from scratch from the lake as committed."""
    tx = lk.Transaction(lake)
    frame = regressions.build(
        regressions.runs_after(lake, DEFAULT.rubric_id, tx), DEFAULT.rubric_id
    )
    tx.abort()
    return frame


def test_a_rescore_that_changes_no_score_leaves_the_table_as_it_is(sample_lake_copy: Path) -> None:
    lake = sample_lake_copy
    assert current_rubric(lake) == DEFAULT
    table = _gate_file(lake)
    before = (table.stat().st_mtime_ns, table.read_bytes())

    jobs.score(lake, DEFAULT)  # every score file rewritten with the same bytes

    assert (table.stat().st_mtime_ns, table.read_bytes()) == before
    assert_frame_equal(pl.read_parquet(table), _fresh(lake))


def test_changed_scores_a_damaged_table_or_a_lost_record_rebuild_it(
    sample_lake_copy: Path,
) -> None:
    lake = sample_lake_copy
    table = _gate_file(lake)
    tx = lk.Transaction(lake)
    assert regressions.stage(lake, DEFAULT.rubric_id, tx) is None
    tx.abort()
    # A score file with other bytes (a run's score moved): the table follows it.
    scores = lk.parquet_files(lk.score_dir(lake, DEFAULT.rubric_id, "task_scores"))[0]
    frame = pl.read_parquet(scores)
    tx = lk.Transaction(lake)
    tx.write(scores, frame.with_columns(score=pl.col("score") * 0.5))
    assert regressions.stage(lake, DEFAULT.rubric_id, tx) == _fresh(lake).height
    tx.abort()
    # The table's own bytes changed by hand, or the record of its inputs gone: rebuilt.
    lk.write_parquet_atomic(pl.read_parquet(table).head(0), table)
    with lk.Transaction(lake) as tx:
        assert regressions.stage(lake, DEFAULT.rubric_id, tx) == _fresh(lake).height
    assert_frame_equal(pl.read_parquet(table), _fresh(lake))
    (table.parent / regressions.INPUTS_NAME).write_text("not json")
    with lk.Transaction(lake) as tx:
        assert regressions.stage(lake, DEFAULT.rubric_id, tx) is not None
    tx = lk.Transaction(lake)
    assert regressions.stage(lake, DEFAULT.rubric_id, tx) is None
    tx.abort()


def test_the_code_digest_follows_scipy_without_importing_it() -> None:
    """A score whose table is unchanged never imports SciPy (~0.5 s of start-up), nor numpy
    (~0.05 s), which the modules the numbers come from use."""
    code = (
        "import sys; from pipeline.compare import regressions; "
        "digest = regressions._code_digest(); "
        "assert not {'scipy', 'numpy'} & set(sys.modules), sorted(sys.modules); "
        "assert len(digest) == 64"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


def test_warm_imports_what_a_rebuild_needs_on_its_own_thread() -> None:
    code = (
        "import sys, threading; from pipeline.compare import regressions; "
        "thread = regressions.warm(); "
        "assert thread is not threading.main_thread() and not thread.daemon; "
        "thread.join(); "
        "missing = set(regressions.REBUILD_IMPORTS) - set(sys.modules); "
        "assert not missing, missing"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


def test_a_score_warms_the_rebuild_only_when_its_scores_are_new(
    sample_lake_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new rubric rebuilds the table, so its imports start beside the scoring; a rescore
    under the same rubric leaves the table alone (above) and imports none of it."""
    warmed: list[str] = []
    real = regressions.warm

    def counted() -> threading.Thread:
        warmed.append("warm")
        return real()

    monkeypatch.setattr(regressions, "warm", counted)
    lake = sample_lake_copy
    jobs.score(lake, DEFAULT)
    assert warmed == []
    halved = parse_rubric({"task": {"penalty_scale": 0.5}})
    jobs.score(lake, halved)
    assert warmed == ["warm"]
    tx = lk.Transaction(lake)
    assert regressions.stage(lake, halved.rubric_id, tx) is None  # built at the end of that score
    tx.abort()
