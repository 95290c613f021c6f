"""Rubric lineage: what a rubric change did to the scores.

Scores are kept per rubric_id, so two rubrics' scores of the same runs can be
set side by side: how many runs changed score or pass/fail, by env type, and
how the order of agent versions by mean score moved; for surface grades, which
servers' overall or letter moved and how the fleet's letter distribution moved.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from pipeline.core import repeatable
from pipeline.jobs.rubric_names import stored_gap_notes
from pipeline.storage.rubrics import stored_rubric
from pipeline.storage.store import LakeStore
from pipeline.tasks.formulas import STATUS_SCORED

# Two scores closer than this are the same score (float noise of a re-sum).
SCORE_TOLERANCE = 1e-12


def _empty(schema: pl.Schema) -> pl.DataFrame:
    return pl.DataFrame(schema=schema)


# The surface tables of a diff: each server's latest version whose overall or letter moved,
# and the fleet's letter counts under each rubric.
SURFACE_CHANGE_SCHEMA = pl.Schema(
    {
        "server": pl.String,
        "server_version": pl.String,
        "overall_from": pl.Float64,
        "overall_to": pl.Float64,
        "overall_change": pl.Float64,
        "letter_from": pl.String,
        "letter_to": pl.String,
    }
)
LETTER_SCHEMA = pl.Schema(
    {"letter": pl.String, "servers_from": pl.Int64, "servers_to": pl.Int64, "moved": pl.Int64}
)


@dataclass(frozen=True)
class RescoreDiff:
    rubric_from: str
    rubric_to: str
    by_env_type: pl.DataFrame
    ranking: pl.DataFrame
    surface_changes: pl.DataFrame = field(default_factory=lambda: _empty(SURFACE_CHANGE_SCHEMA))
    letter_distribution: pl.DataFrame = field(default_factory=lambda: _empty(LETTER_SCHEMA))
    # Landed task runs, and servers (their latest report, what the surface tables compare),
    # and how many have no score under each rubric (landed after it was replaced, or its
    # score files removed): left out above.
    coverage: dict[str, int] = field(default_factory=dict)
    # The component names the "to" rubric and the landed runs do not share (rubric_names).
    notes: list[str] = field(default_factory=list)

    def unscored_notes(self) -> list[str]:
        """What the diff could not compare, one line per rubric and kind that lacks scores."""
        notes = []
        for kind, total in (
            ("landed task run(s) have", "task_runs"),
            ("server(s) have a latest report with", "servers"),
        ):
            for side, rubric in (("from", self.rubric_from), ("to", self.rubric_to)):
                missing = self.coverage.get(f"{total}_unscored_{side}", 0)
                if missing:
                    notes.append(
                        f"{missing} of {self.coverage[total]} {kind} no score under {rubric} "
                        "(landed after it was replaced, or its score files removed): left out "
                        "of the comparison"
                    )
        return notes

    def to_dict(self) -> dict[str, object]:
        return {
            "from": self.rubric_from,
            "to": self.rubric_to,
            "coverage": self.coverage,
            "notes": self.notes,
            "by_env_type": self.by_env_type.to_dicts(),
            "ranking": self.ranking.to_dicts(),
            "surface_changes": self.surface_changes.to_dicts(),
            "letter_distribution": self.letter_distribution.to_dicts(),
        }


def scores_of(lake: Path, rubric_id: str) -> pl.LazyFrame:
    return LakeStore(lake).scores(rubric_id, "task_scores")


def diff_by_env_type(runs: pl.LazyFrame, before: pl.LazyFrame, after: pl.LazyFrame) -> pl.LazyFrame:
    """Per env type: runs compared, runs whose score or pass/fail changed, mean change."""
    paired = _paired(runs, before, after)
    changed = (pl.col("score_to") - pl.col("score_from")).abs() > SCORE_TOLERANCE
    flipped = pl.col("passed_from") != pl.col("passed_to")
    return (
        paired.group_by("env_type")
        .agg(
            runs=pl.len(),
            score_changed=changed.sum(),
            pass_flipped=flipped.sum(),
            now_passing=(flipped & pl.col("passed_to")).sum(),
            now_failing=(flipped & pl.col("passed_from")).sum(),
            mean_score_from=repeatable.mean("score_from"),
            mean_score_to=repeatable.mean("score_to"),
            mean_change=repeatable.mean(pl.col("score_to") - pl.col("score_from")),
        )
        .sort("env_type")
    )


def ranking_moves(runs: pl.LazyFrame, before: pl.LazyFrame, after: pl.LazyFrame) -> pl.LazyFrame:
    """Agent versions ranked by mean score under each rubric, and how far each moved."""
    paired = _paired(runs, before, after)
    means = paired.group_by("agent", "agent_version").agg(
        mean_from=repeatable.mean("score_from"), mean_to=repeatable.mean("score_to")
    )
    return (
        means.with_columns(
            rank_from=pl.col("mean_from").rank("min", descending=True).cast(pl.Int64),
            rank_to=pl.col("mean_to").rank("min", descending=True).cast(pl.Int64),
        )
        .with_columns(moved=pl.col("rank_from") - pl.col("rank_to"))
        .sort("rank_to", "agent", "agent_version")
    )


def _paired(runs: pl.LazyFrame, before: pl.LazyFrame, after: pl.LazyFrame) -> pl.LazyFrame:
    """Scored runs present under both rubrics (grader errors have no score to compare)."""
    keep = ["run_id", "score", "passed"]
    scored = pl.col("status") == STATUS_SCORED
    return (
        runs.select("run_id", "agent", "agent_version", "env_type")
        .join(before.filter(scored).select(keep), on="run_id")
        .join(after.filter(scored).select(keep), on="run_id", suffix="_to")
        .rename({"score": "score_from", "passed": "passed_from"})
    )


def surface_scores_of(lake: Path, rubric_id: str) -> pl.LazyFrame:
    return LakeStore(lake).scores(rubric_id, "surface_scores")


def latest_versions(surface_runs: pl.LazyFrame) -> pl.LazyFrame:
    """Each server's latest version and the report standing for it, the fleet a surface rubric
    change is judged on: by_server's rule (marts/surface_versions.sql). A version's newest
    report stands for it (generated_at, then batch_id, then run_id), and the latest version is
    the one first reported last (its first report's generated_at, then the least batch_id of
    its reports, then the standing run_id): a re-probe of 1.0 after 2.0 leaves 2.0 the latest.
    """
    version = ["server", "server_version"]
    reports = surface_runs.select("run_id", *version, "generated_at", "batch_id")
    standing = (
        reports.sort(["generated_at", "batch_id", "run_id"], descending=True, nulls_last=True)
        .group_by(version, maintain_order=True)
        .first()
        .select("run_id", *version)
    )
    first = reports.group_by(version).agg(
        first_generated_at=pl.col("generated_at").min(), first_batch_id=pl.col("batch_id").min()
    )
    return (
        standing.join(first, on=version, nulls_equal=True)
        .sort(["first_generated_at", "first_batch_id", "run_id"], descending=True, nulls_last=True)
        .group_by("server", maintain_order=True)
        .first()
        .select("run_id", "server", "server_version")
    )


def _surface_paired(
    surface_runs: pl.LazyFrame, before: pl.LazyFrame, after: pl.LazyFrame
) -> pl.LazyFrame:
    keep = ["run_id", "overall_display", "letter"]
    return (
        latest_versions(surface_runs)
        .join(before.select(keep), on="run_id")
        .join(after.select(keep), on="run_id", suffix="_to")
        .rename({"overall_display": "overall_from", "letter": "letter_from"})
        .rename({"overall_display_to": "overall_to"})
    )


def surface_grade_changes(
    surface_runs: pl.LazyFrame, before: pl.LazyFrame, after: pl.LazyFrame
) -> pl.LazyFrame:
    """Servers (latest version) whose shown overall or letter differs between the rubrics,
    by how much (shown overall, to minus from), the largest moves first."""
    paired = _surface_paired(surface_runs, before, after)
    moved = (pl.col("overall_to") != pl.col("overall_from")) | (
        pl.col("letter_to") != pl.col("letter_from")
    )
    return (
        paired.filter(moved)
        .with_columns(overall_change=(pl.col("overall_to") - pl.col("overall_from")).round(1))
        .sort([pl.col("overall_change").abs(), "server"], descending=[True, False])
        .select(list(SURFACE_CHANGE_SCHEMA))
        .cast(SURFACE_CHANGE_SCHEMA)
    )


def letter_distribution(
    surface_runs: pl.LazyFrame,
    before: pl.LazyFrame,
    after: pl.LazyFrame,
    letters: list[str],
) -> pl.LazyFrame:
    """How many servers (latest version) hold each letter under each rubric, best first."""
    paired = _surface_paired(surface_runs, before, after).with_columns(
        pl.col("letter_from", "letter_to").cast(pl.String)
    )
    counts = [
        paired.group_by(pl.col(column).alias("letter")).agg(pl.len().cast(pl.Int64).alias(name))
        for column, name in (("letter_from", "servers_from"), ("letter_to", "servers_to"))
    ]
    order = pl.LazyFrame(
        {"letter": letters, "rank": list(range(len(letters)))},
        schema={"letter": pl.String, "rank": pl.Int64},
    )
    return (
        order.join(counts[0], on="letter", how="left")
        .join(counts[1], on="letter", how="left")
        .with_columns(pl.col("servers_from", "servers_to").fill_null(0))
        .filter((pl.col("servers_from") > 0) | (pl.col("servers_to") > 0))
        .with_columns(moved=pl.col("servers_to") - pl.col("servers_from"))
        .sort("rank")
        .select(list(LETTER_SCHEMA))
        .cast(LETTER_SCHEMA)
    )


def rescore_diff(
    lake: Path,
    rubric_from: str,
    rubric_to: str,
    after: pl.LazyFrame | None = None,
    surface_after: pl.LazyFrame | None = None,
    letters: list[str] | None = None,
) -> RescoreDiff:
    """The diff between two rubrics' stored scores (or ``after`` and ``surface_after``, the
    task and surface scores of a dry run). ``letters``: the letters, best first (by default
    the letters either rubric gave, in alphabetical order, which is best first too)."""
    store = LakeStore(lake)
    runs, surface_runs = store.landed("task_runs"), store.landed("surface_runs")
    before = scores_of(lake, rubric_from)
    target = after if after is not None else scores_of(lake, rubric_to)
    surface_before = surface_scores_of(lake, rubric_from)
    surface_target = (
        surface_after if surface_after is not None else surface_scores_of(lake, rubric_to)
    )
    order = letters if letters is not None else _letters_seen(surface_before, surface_target)
    by_env, ranking, surface, distribution, task_cover, surface_cover = pl.collect_all(
        [
            diff_by_env_type(runs, before, target),
            ranking_moves(runs, before, target),
            surface_grade_changes(surface_runs, surface_before, surface_target),
            letter_distribution(surface_runs, surface_before, surface_target, order),
            _coverage(runs, before, target, "task_runs"),
            _coverage(latest_versions(surface_runs), surface_before, surface_target, "servers"),
        ]
    )
    coverage = {**task_cover.row(0, named=True), **surface_cover.row(0, named=True)}
    # A dry run's scores are in memory: its caller tells their names.
    stored = stored_rubric(lake, rubric_to) if after is None else None
    notes = stored_gap_notes(lake, stored) if stored is not None else []
    return RescoreDiff(
        rubric_from, rubric_to, by_env, ranking, surface, distribution, coverage, notes
    )


def _coverage(
    landed: pl.LazyFrame, before: pl.LazyFrame, after: pl.LazyFrame, name: str
) -> pl.LazyFrame:
    """One row: the landed runs, and how many have no score row under each side."""
    ids = landed.select("run_id")
    return pl.concat(
        [
            ids.select(pl.len().alias(name)),
            ids.join(before.select("run_id"), on="run_id", how="anti").select(
                pl.len().alias(f"{name}_unscored_from")
            ),
            ids.join(after.select("run_id"), on="run_id", how="anti").select(
                pl.len().alias(f"{name}_unscored_to")
            ),
        ],
        how="horizontal",
    ).cast(pl.Int64)


def _letters_seen(before: pl.LazyFrame, after: pl.LazyFrame) -> list[str]:
    """A+ < A < A- < B+ ... < F in the order letters sort with '+' before '-' (ASCII)."""
    seen = pl.concat([before.select("letter"), after.select("letter")]).unique().collect()
    return sorted(seen["letter"].drop_nulls().to_list(), key=_letter_key)


def _letter_key(letter: str) -> tuple[str, int]:
    return letter[:1], {"+": 0, "": 1, "-": 2}.get(letter[1:], 3)
