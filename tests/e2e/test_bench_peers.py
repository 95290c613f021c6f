"""The hand-written peers ``make bench`` times the pipeline against (issue 16) must compute
the pipeline's scores: each peer's score columns equal ``score``'s to 1e-9 per run and per
component, on a few thousand generated runs with grader errors, unbounded runs, missing and
unknown components mixed in, under the default rubric and one that changes every constant."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest

from bench.peers import duckdb_run, polars_rescore
from bench.peers import rubric as peer_rubric
from pipeline.jobs import commands as jobs
from pipeline.rubric import load_rubric
from pipeline.storage import lake as lk
from pipeline.storage.rubrics import current_rubric
from tools import simulate as sim

RUNS = 3_000
TOLERANCE = 1e-9
RUN_FLOATS = ("weighted", "penalty_total", "score", "weighted_as_graded", "score_as_graded")
RUN_FLAGS = ("status", "gate_passed", "gated_out", "passed")
COMPONENT_FLOATS = ("subscore", "weight", "contribution", "contribution_as_graded")
COMPONENT_FLAGS = ("is_gate", "in_record", "in_rubric", "gated_out")
CUSTOM_RUBRIC = """
[task]
minimization_multiple = 2.0
penalty_scale = 2.5
failure_threshold = 0.4
[task.exploit]
gate = "defect_matching"
weights = { defect_matching = 0.4, pov_quality = 0.3, summary_quality = 0.2, target_calls = 0.1 }
[task.detect]
gate = "pov_quality"
weights = { defect_matching = 0.5, pov_quality = 0.3, summary_quality = 0.1, target_calls = 0.1 }
[task.patch]
gate = "minimization"
weights.patch_verified = 0.4
weights.number_of_attempts = 0.1
weights.size_of_patch = 0.1
weights.minimization = 0.4
[task.audit]
weights = { audit = 1.0 }
"""


def varied_runs(n: int) -> pl.DataFrame:
    """Generated runs, with every kth one turned into a case the scoring formula branches on."""
    flat = sim.generate_task_frame(n, seed=7).with_row_index("i")

    def each(k: int, offset: int = 0) -> pl.Expr:
        return (pl.col("i") + offset) % k == 0

    unbounded = each(23, 5)
    return flat.with_columns(
        pl.when(each(31)).then(True).alias("grade.env_internal_failure"),
        pl.when(unbounded).then(True).alias("grade.allow_unbounded"),
        # An unbounded run with a large penalty goes below zero.
        pl.when(unbounded)
        .then(0.9)
        .otherwise(pl.col("grade.penalties.functionality_loss"))
        .alias("grade.penalties.functionality_loss"),
        # A component the rubric does not know ...
        pl.when(each(17, 3)).then(0.5).alias("grade.subscores.style"),
        pl.when(each(17, 3)).then(0.05).alias("grade.weights.style"),
        # ... and one the rubric wants but the record lacks.
        *(
            pl.when(each(13, 1)).then(None).otherwise(pl.col(name)).alias(name)
            for name in ("grade.subscores.target_calls", "grade.weights.target_calls")
        ),
    ).drop("i")


@pytest.fixture(scope="module")
def landed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("peers")
    jsonl = sim.write_flat_file(root / "runs.jsonl", varied_runs(RUNS))
    report = jobs.ingest([jsonl], root / "lake")
    assert report.landed_task_runs == RUNS and report.quarantined == 0
    return jsonl, root / "lake"


def pipeline_scores(lake: Path, rubric_id: str, table: str) -> pl.DataFrame:
    return pl.read_parquet(lk.score_dir(lake, rubric_id, table) / "*.parquet")


def assert_equal_scores(lake: Path, rubric_id: str, peer_out: Path) -> None:
    for table, peer, keys, floats, flags in (
        ("task_scores", "runs", ["run_id"], RUN_FLOATS, RUN_FLAGS),
        (
            "task_component_scores",
            "components",
            ["run_id", "component"],
            COMPONENT_FLOATS,
            COMPONENT_FLAGS,
        ),
    ):
        ours = pipeline_scores(lake, rubric_id, table)
        theirs = pl.read_parquet(peer_out / f"{peer}.parquet")
        assert theirs.height == ours.height
        both = ours.join(theirs, on=keys, how="full", suffix="_peer", coalesce=True)
        assert both.height == ours.height, f"{peer}: keys differ from {table}"
        for column in floats:
            ours_col, peer_col = pl.col(column), pl.col(f"{column}_peer")
            wrong = both.filter(
                (ours_col.is_null() != peer_col.is_null())
                | ((ours_col - peer_col).abs() > TOLERANCE)
            )
            assert wrong.is_empty(), (
                f"{peer}.{column}:\n{wrong.select(*keys, column, f'{column}_peer')}"
            )
        for column in flags:
            wrong = both.filter(pl.col(column).ne_missing(pl.col(f"{column}_peer")))
            assert wrong.is_empty(), (
                f"{peer}.{column}:\n{wrong.select(*keys, column, f'{column}_peer')}"
            )


@pytest.mark.slow
def test_the_varied_runs_reach_every_branch(landed: tuple[Path, Path]) -> None:
    _, lake = landed
    runs = pipeline_scores(lake, current_rubric(lake).rubric_id, "task_scores")
    anomalies = runs["anomalies"].explode().drop_nulls().str.extract(r"^(\w+):").unique()
    assert {"unknown_component", "missing_component"} <= set(anomalies)
    assert (runs["status"] == "grader_error").any()
    assert (runs["score"] < 0).any(), "an unbounded run below zero"
    assert runs["passed"].any() and not runs["passed"].drop_nulls().all()


def test_duckdb_peer_scores_equal_the_pipelines(landed: tuple[Path, Path], tmp_path: Path) -> None:
    jsonl, lake = landed
    duckdb_run.run(jsonl, tmp_path, peer_rubric.load())
    assert_equal_scores(lake, current_rubric(lake).rubric_id, tmp_path)


def test_polars_peer_scores_equal_the_pipelines(landed: tuple[Path, Path], tmp_path: Path) -> None:
    _, lake = landed
    polars_rescore.rescore(lake, tmp_path, peer_rubric.load())
    assert_equal_scores(lake, current_rubric(lake).rubric_id, tmp_path)


def test_both_peers_follow_a_rubric_that_changes_every_constant(
    landed: tuple[Path, Path], tmp_path: Path
) -> None:
    jsonl, lake = landed
    path = tmp_path / "custom.toml"
    path.write_text(CUSTOM_RUBRIC)
    # A copy of the lake: the module's other tests read its default-rubric scores.
    copy = tmp_path / "lake"
    shutil.copytree(lake, copy)
    rubric = load_rubric(path)
    jobs.score(copy, rubric)
    for name, run_peer in (
        ("duckdb", lambda out: duckdb_run.run(jsonl, out, peer_rubric.load(path))),
        ("polars", lambda out: polars_rescore.rescore(copy, out, peer_rubric.load(path))),
    ):
        run_peer(tmp_path / name)
        assert_equal_scores(copy, rubric.rubric_id, tmp_path / name)
