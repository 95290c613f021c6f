"""`python -m pipeline` as a real process: help and usage errors start without the data
stack (imports are deferred to the commands that need them), and say things on one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("pandera", "polars", "duckdb", "scipy", "numpy", "pyarrow", "pyspark")


def _pipeline(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "pipeline", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


def _imported(stderr: str) -> set[str]:
    """Top-level packages named by -X importtime (``import time: self | cumulative | name``)."""
    rows = [line.split("|")[-1].strip() for line in stderr.splitlines() if "import time:" in line]
    return {name.split(".")[0] for name in rows}


@pytest.mark.parametrize("args", [("--help",), ("compare", "--help")])
def test_help_imports_none_of_the_data_stack(tmp_path: Path, args: tuple[str, ...]) -> None:
    done = _pipeline(tmp_path, *args)
    assert done.returncode == 0, done.stderr
    assert "pipeline" in _imported(done.stderr)
    assert not _imported(done.stderr) & set(HEAVY)
    assert "Usage:" in done.stdout
    # Flags take no value, and help says none.
    assert "<bool>" not in done.stdout


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("compare", "--agent", "a"), "Missing option '--baseline'"),
        (("run", "--max-depth", "0"), "--max-depth"),
    ],
)
def test_a_usage_error_exits_2_on_one_line_before_any_import(
    tmp_path: Path, args: tuple[str, ...], says: str
) -> None:
    done = _pipeline(tmp_path, *args)
    assert done.returncode == 2
    said = [line for line in done.stderr.splitlines() if "import time:" not in line]
    assert len(said) == 1 and says in said[0], said
    assert said[0].startswith("usage:")
    assert not _imported(done.stderr) & set(HEAVY)
    assert not any(tmp_path.iterdir()), "a usage error wrote something"


@pytest.mark.slow
def test_a_lake_that_is_a_file_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "lake").write_text("not a folder")
    done = _pipeline(tmp_path, "query", "select 1", "--lake", "lake")
    said = [line for line in done.stderr.splitlines() if "import time:" not in line]
    assert done.returncode == 2
    assert len(said) == 1 and "--lake" in said[0] and "is a file" in said[0], said


def test_the_score_path_imports_no_other_command(tmp_path: Path) -> None:
    """What `score` imports (its job, its printing) leaves out what only ingest, nightly,
    check and compare run: ~0.1 s of start-up a rescore would pay for nothing."""
    code = "import pipeline.cli.lake, pipeline.cli.printing, pipeline.jobs.commands"
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    rows = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    others = {
        "pipeline.jobs.ingest",
        # What landing reads and parses: mending the lake (prepare) names its tables only.
        "pipeline.jobs.earlier",
        "pipeline.ingest.batch",
        "pipeline.ingest.dedupe",
        "pipeline.sources.lines",
        "pipeline.jobs.nightly",
        "pipeline.jobs.check",
        "pipeline.compare.fetch",
        "pipeline.compare.render",
        "pipeline.compare.html",
    }
    assert "pipeline.jobs.score" in rows
    assert not rows & others, rows & others


def test_a_rescore_that_changes_nothing_starts_without_the_heavy_libraries(
    tmp_path: Path,
) -> None:
    """`score` reads footers and the warehouse's file list through Polars and the Arrow
    stream (pyarrow would add ~0.06 s to every rescore's start); its options are parsed
    without pydantic (typer 0.29's TypeAdapters took ~0.1 s of each command); the version
    gate's table is left alone without numpy, and the warehouse, whose record says it holds
    the lake already, without DuckDB (warehouse/build.py HELD_RECORD)."""
    from pipeline.jobs import commands as jobs
    from tests.paths import SAMPLE

    lake = tmp_path / "lake"
    jobs.run([SAMPLE / "tasks" / "atlas.jsonl"], lake)  # task grades: nothing parses a report
    done = _pipeline(tmp_path, "score", "--lake", str(lake))
    assert done.returncode == 0, done.stderr
    assert "pipeline" in _imported(done.stderr)
    heavy = {"pyarrow", "pydantic", "pandera", "numpy", "scipy", "duckdb"}
    assert not _imported(done.stderr) & heavy


def test_the_process_ends_with_its_objects_frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    """``main`` freezes the collector's objects as the command ends, so the interpreter's
    collections at exit skip them (~0.1 s of a 1.6 s rescore of 300k runs)."""
    import gc

    from pipeline.cli import entry

    monkeypatch.setattr(sys, "argv", ["pipeline", "--help"])
    frozen_before = gc.get_freeze_count()
    try:
        with pytest.raises(SystemExit) as ended:
            entry.main()
        assert ended.value.code == 0
        assert gc.get_freeze_count() > frozen_before
    finally:
        gc.unfreeze()
