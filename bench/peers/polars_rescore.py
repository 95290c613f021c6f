"""The hand-written Polars peer of ``pipeline score`` (issue 16): what a team would write to
rescore the landed tables. It reads the lake's task_runs, task_components and task_penalties
Parquet (the files ``score`` reads), scores every run by docs/scoring.md (rubric weights,
gates, minimization, penalties, clamp, as graded, passed) and writes the scores to Parquet.
No checks, no transaction, no warehouse: that is the pipeline's extra work.

    python -m bench.peers.polars_rescore LAKE OUT_DIR [--rubric FILE]

Writes OUT_DIR/runs.parquet and OUT_DIR/components.parquet.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from bench.peers.rubric import PeerRubric, peer_main

RUNS = [
    "run_id",
    "env_type",
    "env_internal_failure",
    "allow_unbounded",
    "minimization_final_size",
    "minimization_minimal_size",
]


def clamp01(x: pl.Expr) -> pl.Expr:
    return x.clip(0.0, 1.0)


def components(runs: pl.LazyFrame, stored: pl.LazyFrame, rubric: PeerRubric) -> pl.LazyFrame:
    """Every component of the record or of the rubric for its env type, rescored and gated."""
    weights = pl.LazyFrame(
        rubric.weights, schema=["env_type", "component", "weight", "is_gate"], orient="row"
    )
    expected = runs.select("run_id", "env_type").join(weights, on="env_type")
    recorded = stored.select(
        "run_id", "component", "stored_subscore", pl.col("record_weight").alias("weight_as_graded")
    ).with_columns(in_record=pl.lit(True))
    ratio = pl.col("minimization_final_size") / pl.col("minimization_minimal_size")
    multiple = rubric.minimization_multiple
    rows = (
        recorded.join(
            expected.drop("env_type").with_columns(in_rubric=pl.lit(True)),
            on=["run_id", "component"],
            how="full",
            coalesce=True,
        )
        .join(runs, on="run_id")
        .with_columns(
            pl.col("weight", "weight_as_graded").fill_null(0.0).name.keep(),
            pl.col("is_gate", "in_record", "in_rubric").fill_null(False),
            subscore=pl.when((pl.col("component") == "minimization") & ratio.is_not_null())
            .then(
                pl.when(ratio <= 1)
                .then(1.0)
                .when(ratio >= multiple)
                .then(0.0)
                .otherwise(1 - (ratio - 1) / (multiple - 1))
            )
            .otherwise(pl.col("stored_subscore").fill_null(0.0)),
        )
    )
    gate_envs = {env for env, _, _, is_gate in rubric.weights if is_gate}
    gates = rows.group_by("run_id").agg(
        gate_ok=pl.col("subscore").filter("is_gate").max().fill_null(0.0) > 0,
        stored_gate_ok=pl.col("stored_subscore").filter("is_gate").max().fill_null(0.0) > 0,
    )
    scored = ~pl.col("env_internal_failure")
    has_gate = pl.col("env_type").is_in(list(gate_envs))
    gated_out = has_gate & ~pl.col("gate_ok") & ~pl.col("is_gate")
    gated_out_as_graded = has_gate & ~pl.col("stored_gate_ok") & ~pl.col("is_gate")
    return rows.join(gates, on="run_id").with_columns(
        has_gate=has_gate,
        gated_out=scored & gated_out,
        contribution=pl.when(scored).then(
            pl.when(gated_out).then(0.0).otherwise(pl.col("subscore") * pl.col("weight"))
        ),
        contribution_as_graded=pl.when(scored).then(
            pl.when(gated_out_as_graded)
            .then(0.0)
            .otherwise(pl.col("stored_subscore").fill_null(0.0) * pl.col("weight_as_graded"))
        ),
    )


def run_scores(
    runs: pl.LazyFrame, rows: pl.LazyFrame, penalties: pl.LazyFrame, rubric: PeerRubric
) -> pl.LazyFrame:
    totals = rows.group_by("run_id").agg(
        pl.col("contribution", "contribution_as_graded").sum(),
        pl.col("has_gate", "gate_ok").first(),
    )
    penalty = penalties.group_by("run_id").agg(penalty_sum=pl.col("value").sum())
    scored = ~pl.col("env_internal_failure")

    def score(weighted: str) -> pl.Expr:
        raw = pl.col(weighted) - pl.col("penalty_total")
        return pl.when(pl.col("allow_unbounded")).then(raw).otherwise(clamp01(raw))

    gate_part = ~pl.col("has_gate") | pl.col("gate_ok")
    threshold = rubric.failure_threshold
    passes = (
        pl.col("score") >= threshold
        if threshold is not None
        else pl.col("has_gate") | (pl.col("score") > 0)
    )
    return (
        runs.join(totals, on="run_id", how="left")
        .join(penalty, on="run_id", how="left")
        .with_columns(
            weighted=pl.when(scored).then(pl.col("contribution").fill_null(0.0)),
            weighted_as_graded=pl.when(scored).then(
                pl.col("contribution_as_graded").fill_null(0.0)
            ),
            penalty_total=pl.when(scored).then(
                pl.col("penalty_sum").fill_null(0.0) * rubric.penalty_scale
            ),
            has_gate=pl.col("has_gate").fill_null(False),
            gate_ok=pl.col("gate_ok").fill_null(False),
        )
        .with_columns(score=score("weighted"), score_as_graded=score("weighted_as_graded"))
        .select(
            "run_id",
            status=pl.when(scored).then(pl.lit("scored")).otherwise(pl.lit("grader_error")),
            gate_passed=pl.when(scored & pl.col("has_gate")).then(pl.col("gate_ok")),
            gated_out=pl.when(scored).then(pl.col("has_gate") & ~pl.col("gate_ok")),
            weighted=pl.col("weighted"),
            penalty_total=pl.col("penalty_total"),
            score=pl.col("score"),
            weighted_as_graded=pl.col("weighted_as_graded"),
            score_as_graded=pl.col("score_as_graded"),
            passed=pl.when(scored).then(gate_part & passes),
        )
    )


def rescore(lake: Path, out: Path, rubric: PeerRubric) -> None:
    runs = pl.scan_parquet(lake / "task_runs" / "*.parquet").select(RUNS)
    stored = pl.scan_parquet(lake / "task_components" / "*.parquet")
    penalties = pl.scan_parquet(lake / "task_penalties" / "*.parquet")
    rows = components(runs, stored, rubric).collect()
    out.mkdir(parents=True, exist_ok=True)
    rows.drop(RUNS[1:], "has_gate", "gate_ok", "stored_gate_ok").write_parquet(
        out / "components.parquet"
    )
    run_scores(runs, rows.lazy(), penalties, rubric).collect().write_parquet(out / "runs.parquet")


def main(argv: list[str] | None = None) -> int:
    return peer_main("python -m bench.peers.polars_rescore", "lake", rescore, argv)


if __name__ == "__main__":
    raise SystemExit(main())
