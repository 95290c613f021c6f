"""The sample's task grades: three agents, their versions' skills, and special records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from tools.simulate.flat import write_flat_file
from tools.simulate.tasks import (
    CWES,
    ENV_TYPES,
    FUNCTIONAL_TESTS_TOTAL,
    PROBLEMS_PER_ENV,
    PROJECTS,
    build_task_flat,
    known_ids,
    run_draws,
    skilled_runs,
)

# Each agent's UTC offset, its graded_at times are written in; its files in this order.
AGENT_UTC_OFFSETS = {"atlas": "+00:00", "borealis": "-05:00", "cinder": "+05:30"}
# Every agent version, oldest first, with its probability-like skill per env type (it
# drives gate pass rate and quality): agent, version, then ENV_TYPES' exploit, detect,
# patch, audit.
SAMPLE_AGENTS: tuple[tuple[str, str, float, float, float, float], ...] = (
    ("atlas", "1.3.0", 0.50, 0.55, 0.70, 0.50),
    # Better at exploit and detect, worse at patch, audit unchanged.
    ("atlas", "1.4.0", 0.90, 0.90, 0.25, 0.50),
    ("borealis", "2025-01-15", 0.45, 0.55, 0.45, 0.35),
    ("borealis", "2025-02-20", 0.50, 0.60, 0.50, 0.40),
    # Much better at audit, much worse at detect.
    ("borealis", "2025-03-28", 0.55, 0.15, 0.55, 0.90),
    ("cinder", "3f9c2e1", 0.75, 0.60, 0.35, 0.55),
    # Better at patch, worse at exploit.
    ("cinder", "a47b0d9", 0.30, 0.60, 0.85, 0.55),
)
GZIPPED_AGENT = "cinder"
MAX_TRIALS = 3
GRADER_ERRORS = 6
GRADER_ERROR_LOGS = [
    "sandbox: container exited with code 137 (out of memory)",
    "grader: retry 1/1 failed; giving up",
]


def _sample_problems(rng: np.random.Generator) -> pl.DataFrame:
    """40 problems: defect k is the target of exploit, detect and patch problem k."""
    k = np.arange(PROBLEMS_PER_ENV)
    project = np.array(PROJECTS)[k % len(PROJECTS)]
    defect_number = 100 + k * 7
    frames = []
    for env_index, env in enumerate(ENV_TYPES):
        frame = pl.DataFrame(
            {
                "env_type": env,
                "project": project,
                "problem_id": [f"{env}-{p}-{i:02d}" for p, i in zip(project, k, strict=True)],
                "defect_id": None
                if env == "audit"
                else [f"{p}-{d:04d}" for p, d in zip(project, defect_number, strict=True)],
                "cwe": None if env == "audit" else np.array(CWES)[k % len(CWES)],
                "difficulty": rng.uniform(-0.15, 0.15, PROBLEMS_PER_ENV),
                "known": rng.integers(5, 11, PROBLEMS_PER_ENV),
                "ref_bytes": rng.integers(64, 2048, PROBLEMS_PER_ENV),
                "problem_index": k + env_index * PROBLEMS_PER_ENV,
            },
            schema_overrides={"defect_id": pl.String, "cwe": pl.String},
        )
        frames.append(frame)
    problems = pl.concat(frames)
    return problems.with_columns(
        known_ids(
            pl.col("project"), pl.format("a{}", pl.col("problem_index")), pl.col("known"), problems
        ).alias("known_ids")
    )


def _sample_versions() -> pl.DataFrame:
    skills = [f"skill_{env}" for env in ENV_TYPES]
    versions = pl.DataFrame(SAMPLE_AGENTS, schema=["agent", "agent_version", *skills], orient="row")
    agents = list(AGENT_UTC_OFFSETS)
    return versions.select(
        "agent",
        pl.col("agent").replace_strict(agents, range(len(agents))).alias("agent_index"),
        "agent_version",
        pl.int_range(pl.len()).over("agent").alias("version_index"),
        pl.col("agent").replace_strict(AGENT_UTC_OFFSETS).alias("utc_offset"),
        *skills,
    )


def _sample_base(seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    problems = _sample_problems(rng)
    versions = _sample_versions()
    n_agents, n_problems = len(AGENT_UTC_OFFSETS), problems.height
    # Common random numbers: one draw per (agent, problem, trial), shared by
    # all versions of the agent, so a skill change moves outcomes one way.
    trials = rng.integers(1, MAX_TRIALS + 1, (n_agents, n_problems))
    crn = {
        name: rng.uniform(0.0, 1.0, (n_agents, n_problems, MAX_TRIALS))
        for name in ("gate_u", "quality_u", "s0", "s1", "s2", "recall_u", "dup_u", "nc_u")
    }
    runs = (
        versions.join(problems, how="cross")
        .with_columns(
            pl.Series(
                "n_trials",
                trials[
                    versions["agent_index"].to_numpy().repeat(n_problems),
                    np.tile(np.arange(n_problems), versions.height),
                ],
            )
        )
        .with_columns(pl.int_ranges(0, pl.col("n_trials")).alias("trial"))
        .explode("trial")
    )
    a = runs["agent_index"].to_numpy()
    p = runs["problem_index"].to_numpy()
    t = runs["trial"].to_numpy()
    draws = {name: values[a, p, t] for name, values in crn.items()}
    n = runs.height
    skill = pl.coalesce(
        [pl.when(pl.col("env_type") == env).then(pl.col(f"skill_{env}")) for env in ENV_TYPES]
    )
    version_days = pl.col("version_index") * 21 + pl.col("agent_index") * 2
    runs = runs.with_columns(
        pl.Series("gate_u", draws["gate_u"]),
        pl.Series("quality_u", draws["quality_u"]),
        *[pl.Series(f"spread_{k}", (draws[f"s{k}"] - 0.5) * 0.3) for k in range(3)],
        pl.Series("recall_u", draws["recall_u"]),
        pl.Series("dup_u", draws["dup_u"]),
        pl.Series("nc_u", draws["nc_u"]),
        skill.alias("skill"),
        pl.Series("order_s", rng.integers(0, 86_400 * 14, n)),
        *run_draws(rng, n),
    )
    return skilled_runs(runs, version_days * 86_400 + pl.col("order_s")).sort(
        "agent_index", "version_index", "problem_index", "trial"
    )


# Special records: (role, which rows qualify, how many). Each role's rows are
# the qualifying rows with the smallest random pick not already given a role.
SPECIAL_ROLES: tuple[tuple[str, pl.Expr, int], ...] = (
    (
        "anchor",
        (pl.col("env_type") == "exploit") & pl.col("gate") & (pl.col("agent") == "atlas"),
        1,
    ),
    ("weights_off", (pl.col("env_type") == "exploit") & pl.col("gate"), 1),
    ("gate_leak", (pl.col("env_type") == "detect") & ~pl.col("gate"), 1),
    ("gate_nonbinary", (pl.col("env_type") == "patch") & pl.col("gate"), 1),
    (
        "audit_mismatch",
        (pl.col("env_type") == "audit") & (pl.col("recall") * pl.col("precision") < 0.8),
        1,
    ),
    ("missing_component", (pl.col("env_type") == "exploit") & pl.col("gate"), 1),
    ("unknown_component", (pl.col("env_type") == "detect") & pl.col("gate"), 1),
    ("unbounded", (pl.col("env_type") == "patch") & pl.col("gate"), 1),
    ("grader_error", pl.lit(True), GRADER_ERRORS),
)


def _assign_roles(base: pl.DataFrame, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng([seed, 1])
    frame = base.with_columns(
        pl.Series("pick", rng.permutation(base.height)), pl.lit(None, dtype=pl.String).alias("role")
    )
    for role, qualifies, count in SPECIAL_ROLES:
        candidate = qualifies & pl.col("role").is_null()
        chosen = candidate & pl.col("pick").is_in(
            pl.col("pick").filter(candidate).sort().head(count).implode()
        )
        frame = frame.with_columns(
            pl.when(chosen).then(pl.lit(role)).otherwise(pl.col("role")).alias("role")
        )
    return frame


def _override(column: str, role: str, value: pl.Expr | Any) -> pl.Expr:
    new = value if isinstance(value, pl.Expr) else pl.lit(value)
    return pl.when(pl.col("role") == role).then(new).otherwise(pl.col(column)).alias(column)


def _null_for(column: str, role: str) -> pl.Expr:
    return pl.when(pl.col("role") == role).then(None).otherwise(pl.col(column)).alias(column)


def _apply_roles(flat: pl.DataFrame) -> pl.DataFrame:
    """The anomalies of CONTRACT section 4 and grader errors, each on its own run."""
    sub, wt = "grade.subscores.", "grade.weights."
    error = pl.col("role") == "grader_error"
    score_columns = [name for name in flat.columns if name.startswith(sub)]
    flat = flat.with_columns(
        # Record weights sum to 1.1.
        _override(f"{wt}summary_quality", "weights_off", 0.2),
        # The gate failed, yet the grader stored non-zero quality.
        _override(f"{sub}pov_quality", "gate_leak", 0.42),
        _override(f"{sub}summary_quality", "gate_leak", 0.3),
        _override(f"{sub}patch_verified", "gate_nonbinary", 0.5),
        _override(f"{sub}audit", "audit_mismatch", (pl.col(f"{sub}audit") + 0.1).round(3)),
        # target_calls is missing; its weight moved to the gate so weights still sum to 1.
        _null_for(f"{sub}target_calls", "missing_component"),
        _null_for(f"{wt}target_calls", "missing_component"),
        _null_for("grade.metadata.target_calls.reason", "missing_component"),
        _override(f"{wt}defect_matching", "missing_component", 0.7),
        pl.when(pl.col("role") == "unknown_component")
        .then(pl.lit(1.0))
        .alias(f"{sub}crash_uniqueness"),
        pl.when(pl.col("role") == "unknown_component")
        .then(pl.lit(0.0))
        .alias(f"{wt}crash_uniqueness"),
        # Unclamped: a large functionality loss drives the score below zero.
        pl.when(pl.col("role") == "unbounded").then(pl.lit(True)).alias("grade.allow_unbounded"),
        _override("grade.penalties.functionality_loss", "unbounded", 0.95),
        _override("grade.metadata.functionality_loss.tests_failed", "unbounded", 114),
        _override(
            "grade.metadata.functionality_loss.tests_total", "unbounded", FUNCTIONAL_TESTS_TOTAL
        ),
        _override(
            "grade.metadata.functionality_loss.reason",
            "unbounded",
            f"114 of {FUNCTIONAL_TESTS_TOTAL} functional tests regressed",
        ),
        pl.when(error).then(pl.lit(True)).alias("grade.env_internal_failure"),
        pl.when(error)
        .then(pl.lit(GRADER_ERROR_LOGS, dtype=pl.List(pl.String)))
        .alias("grade.env_internal_failure_logs"),
    )
    # A broken grader reports nothing it measured.
    return flat.with_columns(
        [
            pl.when(error).then(pl.col(name) * 0.0).otherwise(pl.col(name)).alias(name)
            for name in score_columns
        ]
    )


def sample_task_flat(seed: int) -> pl.DataFrame:
    """The sample's task records as a flat frame, plus its ``role`` column."""
    base = _assign_roles(_sample_base(seed), seed)
    flat = build_task_flat(base.with_columns(pl.col("ref_bytes").cast(pl.Int64)))
    flat = flat.with_columns(base["role"], base["agent"].alias("__agent"))
    return _apply_roles(flat)


def write_tasks(out: Path, flat: pl.DataFrame) -> list[Path]:
    written = []
    for agent in AGENT_UTC_OFFSETS:
        records = flat.filter(pl.col("__agent") == agent).drop("role", "__agent")
        suffix = ".jsonl.gz" if agent == GZIPPED_AGENT else ".jsonl"
        written.append(write_flat_file(out / "tasks" / f"{agent}{suffix}", records))
    return written
