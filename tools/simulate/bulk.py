"""Bulk task records for benchmarks, scale and comparison tests."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from tools.simulate.flat import write_flat_file
from tools.simulate.tasks import (
    CWES,
    ENV_GATES,
    ENV_TYPES,
    ENV_WEIGHTS,
    PROJECTS,
    Floats,
    Ints,
    build_task_flat,
    graded_at,
    known_ids,
    run_draws,
    run_id,
    skilled_runs,
)

BULK_AGENTS = ("bench-a", "bench-b", "bench-c")
BULK_VERSIONS = ("1.0.0", "1.1.0")
BULK_OFFSETS = ("+00:00", "+02:00", "-07:00")
# Each bulk problem is attempted this many times (agents x versions x trials).
BULK_ATTEMPTS_PER_PROBLEM = 12


def _pick(options: Sequence[str], index: Ints) -> pl.Series:
    return pl.Series(list(options), dtype=pl.String).gather(pl.Series(index))


def _bulk_problems(
    per_env: int, rng: np.random.Generator, env_types: Sequence[str] = ENV_TYPES
) -> pl.DataFrame:
    """``per_env`` problems of every env type of ``env_types``, in env-major order."""
    k = np.tile(np.arange(per_env, dtype=np.int64), len(env_types))
    env_index = np.repeat(np.arange(len(env_types), dtype=np.int64), per_env)
    frame = pl.DataFrame(
        {
            "env_type": _pick(env_types, env_index),
            "project": _pick(PROJECTS, k % len(PROJECTS)),
            "k": k,
            "difficulty": rng.uniform(-0.15, 0.15, k.size),
            "known": 5 + k % 6,
            "ref_bytes": rng.integers(64, 2048, k.size),
        }
    )
    audit = pl.col("env_type") == "audit"
    code = pl.col("k").cast(pl.String).str.zfill(6)
    frame = frame.with_columns(
        pl.format("{}-{}-{}", "env_type", "project", code).alias("problem_id"),
        pl.when(~audit).then(pl.format("{}-{}", "project", code)).alias("defect_id"),
        pl.when(~audit).then(_pick(CWES, k % len(CWES))).alias("cwe"),
    )
    known = known_ids(pl.col("project"), pl.format("a{}", code), pl.col("known"), frame)
    return frame.with_columns(known.alias("known_ids"))


def _bulk_base(n: int, seed: int, env_types: Sequence[str]) -> pl.DataFrame:
    """Driver columns for ``n`` runs: row i is env i % len(env_types), then problem,
    then (agent, version), then trial, so every (run_id) is unique."""
    rng = np.random.default_rng([seed, 3])
    envs = len(env_types)
    per_env = max(1, -(-n // (envs * BULK_ATTEMPTS_PER_PROBLEM)))
    problems = _bulk_problems(per_env, rng, env_types)
    i = np.arange(n, dtype=np.int64)
    env_index, slot = i % envs, i // envs
    combos = len(BULK_AGENTS) * len(BULK_VERSIONS)
    problem = slot % per_env
    combo = (slot // per_env) % combos
    agent_index, version_index = combo // len(BULK_VERSIONS), combo % len(BULK_VERSIONS)
    skills = rng.uniform(0.3, 0.85, (len(BULK_AGENTS), len(BULK_VERSIONS), envs))
    runs = problems[env_index * per_env + problem].with_columns(
        pl.Series("agent", _pick(BULK_AGENTS, agent_index)),
        pl.Series("agent_version", _pick(BULK_VERSIONS, version_index)),
        pl.Series("trial", slot // (per_env * combos)),
        pl.Series("skill", skills[agent_index, version_index, env_index]),
        pl.Series("utc_offset", _pick(BULK_OFFSETS, agent_index)),
        pl.Series("seconds", version_index * 21 * 86_400 + rng.integers(0, 86_400 * 14, n)),
        *[pl.Series(name, rng.uniform(0.0, 1.0, n)) for name in _CRN_NAMES],
        *[pl.Series(f"spread_{k}", rng.uniform(-0.15, 0.15, n)) for k in range(3)],
        *run_draws(rng, n),
    )
    return skilled_runs(runs, pl.col("seconds"))


_CRN_NAMES = ("gate_u", "quality_u", "recall_u", "dup_u", "nc_u")


def generate_task_frame(n: int, seed: int, env_types: Sequence[str] = ENV_TYPES) -> pl.DataFrame:
    """``n`` valid contract records as one flat frame: dotted column names
    (``grade.subscores.pov_quality``), null meaning the key is absent.

    Three agents x two versions, the env types of ``env_types`` in turn (all four
    by default: 3.25 components per run on average; without audit, whose records
    carry one component, 4), penalties, minimization sizes and audit metadata;
    ``write_flat_ndjson`` turns it into JSON Lines.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    unknown = sorted(set(env_types) - set(ENV_TYPES))
    if unknown or not env_types:
        raise ValueError(f"env_types must be some of {list(ENV_TYPES)}, got {list(env_types)}")
    return build_task_flat(_bulk_base(n, seed, tuple(env_types)))


def write_task_jsonl(path: Path, n: int, seed: int) -> Path:
    """Write ``n`` generated records to ``path`` (``.gz`` suffix: gzipped)."""
    return write_flat_file(path, generate_task_frame(n, seed))


def _non_gate_weight(env: str) -> float:
    gate = ENV_GATES[env]
    return math.fsum(w for name, w in ENV_WEIGHTS[env].items() if name != gate)


def _version_shift(
    env_index: Ints, effect: Mapping[str, float], noise: Floats
) -> tuple[Floats, float]:
    """Per problem, how far the candidate moves every non-gate subscore so that
    its score moves by effect[env] + noise, the noise centred to mean 0 within
    each env type (the per-env mean difference is exactly the effect)."""
    per_env_effect = np.array([effect.get(env, 0.0) for env in ENV_TYPES])
    per_env_weight = np.array([_non_gate_weight(env) for env in ENV_TYPES])
    counts = np.bincount(env_index, minlength=len(ENV_TYPES))
    noise_mean = np.bincount(env_index, weights=noise, minlength=len(ENV_TYPES)) / np.maximum(
        counts, 1
    )
    delta = per_env_effect[env_index] + noise - noise_mean[env_index]
    shift: Floats = delta / per_env_weight[env_index]
    return shift, float(np.max(np.abs(shift), initial=0.0))


def generate_versions(
    n_problems: int,
    effect: Mapping[str, float],
    seed: int,
    *,
    agent: str = "bench-agent",
    baseline: str = "1.0.0",
    candidate: str = "1.1.0",
    trials: int = 1,
    noise: float = 0.02,
) -> pl.DataFrame:
    """Two versions of one agent over the same problems with a known difference.

    Under the default rubric the candidate's mean score minus the baseline's,
    over the problems of one env type (trials averaged per problem first), is
    exactly ``effect[env]`` (0 for an env type not given), up to float
    rounding. Every gate passes and nothing is penalised, so the difference
    comes from the non-gate subscores alone. Flat frame as generate_task_frame.
    """
    unknown = sorted(set(effect) - set(ENV_TYPES))
    if unknown:
        raise ValueError(f"effect names unknown env types {unknown}; known: {list(ENV_TYPES)}")
    if n_problems < len(ENV_TYPES) or trials < 1:
        raise ValueError(f"need n_problems >= {len(ENV_TYPES)} and trials >= 1")
    rng = np.random.default_rng([seed, 4])
    p = np.arange(n_problems, dtype=np.int64)
    env_index = p % len(ENV_TYPES)
    shift, largest = _version_shift(env_index, effect, rng.uniform(-noise, noise, n_problems))
    margin = largest + 0.01
    if margin >= 0.5:
        raise ValueError(
            f"effect {dict(effect)} needs subscores to move by {largest:.3f}; "
            "at most 0.49 fits in [0, 1]"
        )
    base_quality = rng.uniform(margin, 1.0 - margin, n_problems)
    per_env = -(-n_problems // len(ENV_TYPES))
    problems = _bulk_problems(per_env, rng)[env_index * per_env + p // len(ENV_TYPES)]
    frames = []
    for version_index, (version, sign) in enumerate(((baseline, 0.0), (candidate, 1.0))):
        runs = pl.concat([problems] * trials).with_columns(
            pl.Series("trial", np.repeat(np.arange(trials, dtype=np.int64), n_problems)),
            pl.Series("quality", np.tile(base_quality + sign * shift, trials)),
        )
        n = runs.height
        frames.append(
            runs.with_columns(
                pl.lit(agent).alias("agent"),
                pl.lit(version).alias("agent_version"),
                pl.lit(True).alias("gate"),
                *[pl.lit(0.0).alias(f"spread_{k}") for k in range(3)],
                *run_draws(rng, n),
                pl.lit(1.0).alias("precision"),
                pl.col("quality").alias("recall"),
                (pl.col("known") * pl.col("quality")).floor().cast(pl.Int64).alias("audit_found"),
                pl.lit(0, dtype=pl.Int64).alias("audit_duplicates"),
                pl.lit(0, dtype=pl.Int64).alias("audit_non_crashers"),
            ).with_columns(
                pl.col("audit_found").alias("audit_submissions"),
                run_id(),
                graded_at(
                    version_index * 21 * 86_400 + pl.col("trial") * 3_600 + pl.col("k"),
                    pl.lit("+00:00"),
                ).alias("graded_at"),
            )
        )
    return build_task_flat(
        pl.concat(frames), decimals=None, minimization_rate=0.0, penalty_rate=0.0
    )


def write_versions_jsonl(
    path: Path,
    n_problems: int,
    effect: Mapping[str, float],
    seed: int,
    **options: Any,
) -> Path:
    """Write ``generate_versions(n_problems, effect, seed, **options)`` as JSON Lines."""
    flat = generate_versions(n_problems, effect, seed, **options)
    return write_flat_file(path, flat)
