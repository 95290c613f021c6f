"""A small vectorized simulator of two (or more) agent versions, for the compare tests.

Each problem has a true score shared by every version (that is what makes
pairing worth it); a version adds its effect (per env type); each trial adds
independent noise. Runs and components come out in the shape of the
warehouse views. Scores are not clamped, so the true difference is exactly
the injected effect.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

import numpy as np
import polars as pl

ENVS = ("exploit", "detect", "patch", "audit")
# Two components per env type whose contributions sum to the weighted score.
SPLIT = {
    "exploit": (("defect_matching", 0.6, True), ("pov_quality", 0.4, False)),
    "detect": (("defect_matching", 0.6, True), ("summary_quality", 0.4, False)),
    "patch": (("patch_verified", 0.5, True), ("size_of_patch", 0.5, False)),
    "audit": (("audit", 1.0, False),),
}


def simulate(
    *,
    seed: int,
    n_problems: int = 60,
    trials: int = 3,
    versions: Mapping[str, Mapping[str, float] | float] | None = None,
    noise: float = 0.05,
    agent: str = "sim-agent",
    start: datetime = datetime(2026, 1, 1, tzinfo=UTC),
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``versions`` maps version -> effect (a float, or per env type); returns (runs, components).

    Versions are graded one day apart in the mapping's order.
    """
    versions = versions or {"1.0": 0.0, "1.1": 0.0}
    rng = np.random.default_rng(seed)
    problem_ids = np.array([f"p{i:04d}" for i in range(n_problems)])
    env = np.array(ENVS)[np.arange(n_problems) % len(ENVS)]
    true = rng.uniform(0.3, 0.6, n_problems)
    frames = []
    for v_index, (version, effect) in enumerate(versions.items()):
        if isinstance(effect, Mapping):
            shift = np.array([float(effect.get(e, 0.0)) for e in env])
        else:
            shift = np.full(n_problems, float(effect))
        score = (true + shift)[:, None] + rng.normal(0.0, noise, (n_problems, trials))
        trial = np.broadcast_to(np.arange(trials), (n_problems, trials))
        frames.append(
            pl.DataFrame(
                {
                    "problem_id": np.repeat(problem_ids, trials),
                    "env_type": np.repeat(env, trials),
                    "trial": trial.ravel(),
                    "score": score.ravel(),
                    "cost_usd": rng.uniform(0.1, 0.2, n_problems * trials) + 0.05 * v_index,
                }
            ).with_columns(
                agent_version=pl.lit(version),
                graded_at=pl.lit(start + timedelta(days=v_index)),
            )
        )
    runs = pl.concat(frames).with_columns(
        run_id=pl.format("{}-{}-{}-{}", pl.lit(agent), "agent_version", "problem_id", "trial"),
        agent=pl.lit(agent),
        status=pl.lit("scored"),
        weighted=pl.col("score"),
        penalty_total=pl.lit(0.0),
        gate_passed=pl.lit(True),
        passed=pl.col("score") >= 0.5,
        tokens=pl.col("cost_usd") * 10_000,
        wall_seconds=pl.col("cost_usd") * 100,
    )
    comps = []
    for env_type, parts in SPLIT.items():
        for component, share, is_gate in parts:
            comps.append(
                runs.filter(pl.col("env_type") == env_type).select(
                    "run_id",
                    component=pl.lit(component),
                    contribution=pl.col("weighted") * share,
                    is_gate=pl.lit(is_gate),
                )
            )
    return runs, pl.concat(comps)


def empty_metadata() -> pl.DataFrame:
    return pl.DataFrame(schema={"run_id": pl.String, "key": pl.String, "value": pl.String})
