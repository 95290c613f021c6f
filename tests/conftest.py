"""Shared test helpers: raw contract records and the landed frames they become.

``task_frames`` is a deliberately tiny stand-in for ingest (no validation), so
scoring tests do not depend on the ingest module: it maps a raw CONTRACT
section 2 record onto the TaskRun / TaskComponent / TaskPenalty schemas.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import typer.testing
from hypothesis import settings

from schemas import polars_schema
from schemas.tasks import TaskComponent, TaskPenalty, TaskRun
from tests.examples import FAST_EXAMPLES, SOAK_EXAMPLES, SOAK_PROFILE
from tests.paths import SAMPLE

# bench/ is not an installed package; `pytest` (unlike `python -m pytest`) does not
# put the repo root on sys.path.
REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

# `make test-fast` selects this profile: every property test runs a tenth of its examples
# (tests/examples.py); `make test` keeps the default profile and the full counts;
# `make test-soak` runs four times them, and the larger generated inputs.
settings.register_profile("fast", max_examples=FAST_EXAMPLES)
settings.register_profile(SOAK_PROFILE, max_examples=SOAK_EXAMPLES)
from tools.simulate import records  # noqa: E402  (needs the repo root on sys.path)

# The tests' scratch (tmp_path, tempfile, and through TMPDIR the processes they start) goes to
# memory when the machine has a tmpfs with room for it: every lake write ends in fsync(2),
# which on a disk costs milliseconds (5 ms here, ~40 per small `run`) and on tmpfs nothing, so
# a suite that writes a few thousand small lakes spends a fifth of its time waiting on the
# disk. The code paths are the same (fsync is still called); no test checks what survives a
# power cut. A TMPDIR set by the caller is kept; a whole run's scratch is about 120 MB.
SCRATCH_IN_MEMORY = Path("/dev/shm")
SCRATCH_ROOM = 4 * 1024**3


def _scratch_in_memory() -> None:
    if os.environ.get("TMPDIR") or not os.access(SCRATCH_IN_MEMORY, os.W_OK):
        return
    if shutil.disk_usage(SCRATCH_IN_MEMORY).free < SCRATCH_ROOM:
        return
    os.environ["TMPDIR"] = str(SCRATCH_IN_MEMORY)
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again


_scratch_in_memory()

# typer's CliRunner builds the click command from the app at every invoke, reading every
# parameter's signature again (~0.02 s); the app does not change while the tests run.
typer.testing._get_command = cache(typer.testing._get_command)

TEST_BATCH = "test-batch"


@dataclass(frozen=True)
class TaskFrames:
    runs: pl.LazyFrame
    components: pl.LazyFrame
    penalties: pl.LazyFrame


def make_task_record(
    run_id: str,
    env_type: str,
    subscores: Mapping[str, float],
    weights: Mapping[str, float] | None = None,
    **grade: Any,
) -> dict[str, Any]:
    """A raw contract record built by ``tools.simulate.records``; ``weights`` default to an
    even split, ``grade`` adds its optional fields (penalties, metadata, ...)."""
    if weights is None:
        weights = {name: 1.0 / len(subscores) for name in subscores} if subscores else {}
    return records.task_record(
        run_id=run_id,
        agent="agent-a",
        agent_version="1.0.0",
        problem_id=f"problem-{run_id}",
        env_type=env_type,
        graded_at="2026-01-02T03:04:05+00:00",
        subscores=subscores,
        weights=weights,
        **grade,
    )


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def records_to_task_frames(records: Sequence[Mapping[str, Any]]) -> TaskFrames:
    runs: list[dict[str, Any]] = []
    components: list[dict[str, Any]] = []
    penalties: list[dict[str, Any]] = []
    for line, record in enumerate(records, start=1):
        grade = record["grade"]
        metadata = grade.get("metadata") or {}
        minimization = metadata.get("minimization") or {}
        runs.append(
            {
                "run_id": record["run_id"],
                "agent": record["agent"],
                "agent_version": record["agent_version"],
                "problem_id": record["problem_id"],
                "env_type": record["env_type"],
                "graded_at": datetime.fromisoformat(record["graded_at"]).astimezone(UTC),
                "defect_id": record.get("defect_id"),
                "cwe": record.get("cwe"),
                "project": record.get("project"),
                "trial": record.get("trial", 0),
                "cost_usd": record.get("cost_usd"),
                "tokens": record.get("tokens"),
                "wall_seconds": record.get("wall_seconds"),
                "env_internal_failure": bool(grade.get("env_internal_failure", False)),
                "allow_unbounded": bool(grade.get("allow_unbounded", False)),
                "failure_logs": list(grade.get("env_internal_failure_logs") or []),
                "minimization_final_size": _number(minimization.get("final_size")),
                "minimization_minimal_size": _number(minimization.get("minimal_size")),
                "audit_recall": _number(metadata.get("recall")),
                "audit_precision": _number(metadata.get("precision")),
                "record": repr(record),
                "source": "test.jsonl",
                "line": line,
                "batch_id": TEST_BATCH,
                "content_hash": f"hash-{line}",
            }
        )
        for name, value in grade["subscores"].items():
            components.append(
                {
                    "run_id": record["run_id"],
                    "component": name,
                    "stored_subscore": float(value),
                    "record_weight": float(grade["weights"][name]),
                    "batch_id": TEST_BATCH,
                }
            )
        for name, value in (grade.get("penalties") or {}).items():
            penalties.append(
                {
                    "run_id": record["run_id"],
                    "penalty": name,
                    "value": float(value),
                    "batch_id": TEST_BATCH,
                }
            )
    return TaskFrames(
        runs=pl.LazyFrame(runs, schema=polars_schema(TaskRun)),
        components=pl.LazyFrame(components, schema=polars_schema(TaskComponent)),
        penalties=pl.LazyFrame(penalties, schema=polars_schema(TaskPenalty)),
    )


@pytest.fixture(scope="session")
def task_record() -> Callable[..., dict[str, Any]]:
    """Build a raw contract task record: ``task_record(run_id, env_type, subscores, ...)``."""
    return make_task_record


@pytest.fixture(scope="session")
def task_frames() -> Callable[[Sequence[Mapping[str, Any]]], TaskFrames]:
    """Turn raw contract task records into the landed runs/components/penalties frames."""
    return records_to_task_frames


def _fingerprint(root: Path) -> dict[str, str]:
    """Every file under ``root`` with a hash of its bytes: a new, lost or changed file shows."""
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


@pytest.fixture(scope="session")
def sample_lake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The committed sample (data/sample: tasks, surface reports, bad lines) after ``pipeline
    run`` with the default rubric, built once per session (per xdist worker) and shared by
    every test that only reads it. A test that writes takes ``sample_lake_copy``; one that
    wrote here anyway fails this fixture's teardown, naming the files it changed."""
    from tests.clirunner import pipeline

    lake = tmp_path_factory.mktemp("sample") / "lake"
    done = pipeline("run", SAMPLE, "--lake", lake)
    assert done.returncode == 0, done.stdout + done.stderr
    before = _fingerprint(lake.parent)
    yield lake
    after = _fingerprint(lake.parent)
    changed = sorted(
        name for name in before.keys() | after.keys() if before.get(name) != after.get(name)
    )
    assert not changed, f"a test changed the shared sample lake (use sample_lake_copy): {changed}"


@pytest.fixture
def sample_lake_copy(sample_lake: Path, tmp_path: Path) -> Path:
    """A private copy of the shared sample lake (mtimes kept) for a test that writes to it."""
    return Path(shutil.copytree(sample_lake, tmp_path / "lake"))
