"""Is the candidate version of an agent better or worse than the baseline, where, and why?

Pure: functions from Polars frames (runs, components, metadata in the shape of the
warehouse views ``task_runs``, ``task_components`` and ``run_metadata``) to a
result, so tests feed tiny in-memory frames; :mod:`pipeline.compare.fetch` reads
them from the warehouse.

Decisions (also in the README):

- The unit is the problem, keyed by ``(problem_id, env_type)``. Trials of one
  problem are averaged first; only problems both versions have a score for
  are paired; grader errors are excluded and counted; problems only one
  version has are counted as unpaired.
- The reported interval is the paired t interval over problems (Miller 2024:
  clustered by problem, ``SE = sd(d) / sqrt(n)``). A percentile bootstrap over
  problems with a fixed seed is reported beside it as a cross-check.
- A problem *passes* for a version when at least half its scored trials
  passed (``mean(passed) >= 0.5``): a majority vote, ties counted as passing.
- Fewer than 5 pairs: the interval and verdict are still computed by the
  contract's rule, but ``insufficient_data`` is true and the message says so;
  fewer than 2 pairs: no interval, verdict ``no_change``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
import polars as pl

from pipeline.compare import documents as docs
from pipeline.compare import gate, stats
from pipeline.compare.pairing import (
    COMPONENT_COLUMNS,
    KEY,
    RUN_COLUMNS,
    component_grid,
    component_split,
    paired_problems,
    require,
)
from pipeline.compare.reasons import failure_reasons, regressed_problems
from pipeline.compare.text import delta
from pipeline.core import repeatable
from pipeline.core.jsonsafe import json_safe


@dataclass(frozen=True)
class CompareSettings:
    """The constants of a comparison, in one place."""

    confidence: float = stats.DEFAULT_CONFIDENCE
    min_pairs: int = stats.MIN_PAIRS_TO_CONCLUDE
    top_regressed: int = 10
    bootstrap_resamples: int = stats.DEFAULT_BOOTSTRAP_RESAMPLES
    bootstrap_seed: int = stats.DEFAULT_BOOTSTRAP_SEED


DEFAULT_SETTINGS: Final = CompareSettings()
SIDES: Final = ("baseline", "candidate")


@dataclass(frozen=True)
class Comparison:
    """``report`` is the JSON document; ``pairs`` one row per paired problem (for charts)."""

    report: dict[str, Any]
    pairs: pl.DataFrame
    regressed: pl.DataFrame = field(repr=False)


def _interval_message(n: int, settings: CompareSettings) -> str | None:
    if n == 0:
        return "no problem has a score from both versions: nothing to compare"
    if n < stats.MIN_PAIRS_FOR_INTERVAL:
        return f"only {n} paired problem: no interval can be computed; verdict no_change"
    if n < settings.min_pairs:
        return (
            f"only {n} paired problems (fewer than {settings.min_pairs}): too few to conclude "
            "anything; the interval is shown but should not be relied on"
        )
    return None


def _decomposition(pairs: pl.DataFrame, split: pl.DataFrame) -> dict[str, Any]:
    """The change in mean score as weighted sum − penalties + the effect of clamping."""
    means = pairs.select(
        d=repeatable.mean("diff"),
        d_weighted=repeatable.mean(pl.col("c_weighted") - pl.col("b_weighted")),
        d_penalty=repeatable.mean(pl.col("c_penalty") - pl.col("b_penalty")),
    ).row(0, named=True)
    change, d_weighted, d_penalty = (
        docs.finite(means[k]) for k in ("d", "d_weighted", "d_penalty")
    )
    clamp_effect = (
        None
        if change is None or d_weighted is None or d_penalty is None
        else change - (d_weighted - d_penalty)
    )
    return {
        "delta_weighted": d_weighted,
        "components_sum": float(split.select(repeatable.total("delta")).item())
        if split.height
        else 0.0,
        "delta_penalty": d_penalty,
        "clamp_effect": clamp_effect,
    }


def _components(split: pl.DataFrame) -> list[dict[str, Any]]:
    return [
        {
            "component": row["component"],
            "is_gate": bool(row["is_gate"]),
            "baseline": docs.finite(row["baseline"]),
            "candidate": docs.finite(row["candidate"]),
            "delta": docs.finite(row["delta"]),
        }
        for row in split.to_dicts()
    ]


def _why(
    mine: pl.LazyFrame,
    comps: pl.LazyFrame,
    metadata: pl.LazyFrame | pl.DataFrame | None,
    pairs: pl.DataFrame,
    names: tuple[str, str],
    settings: CompareSettings,
) -> tuple[dict[str, Any], pl.DataFrame]:
    """The component split, the decomposition and the regressed problems with reasons."""
    baseline, candidate = names
    grid = component_grid(mine, comps, pairs.lazy(), baseline, candidate)
    split = component_split(grid, pairs.height)
    regressed = regressed_problems(pairs.lazy(), grid, settings.top_regressed)
    if metadata is not None:
        regressed = failure_reasons(regressed, metadata.lazy())
    else:
        regressed = regressed.with_columns(failing_reason=pl.lit(None, dtype=pl.String))
    why = {
        "components": _components(split),
        "decomposition": _decomposition(pairs, split),
        "regressed_problems": [json_safe(row) for row in regressed.to_dicts()],
    }
    return why, regressed


def _bootstrap(pairs: pl.DataFrame, settings: CompareSettings) -> dict[str, Any]:
    low, high = stats.bootstrap_interval(
        pairs["diff"].to_numpy().astype(np.float64),
        resamples=settings.bootstrap_resamples,
        seed=settings.bootstrap_seed,
        confidence=settings.confidence,
    )
    return {
        "method": stats.METHOD_BOOTSTRAP,
        "ci_low": docs.finite(low),
        "ci_high": docs.finite(high),
        "resamples": settings.bootstrap_resamples,
        "seed": settings.bootstrap_seed,
    }


def _message(
    overall: dict[str, Any], gate_message: str, names: tuple[str, str], settings: CompareSettings
) -> str:
    """The headline, the gate's decision, and a warning when the result says little."""
    n = int(overall["paired_problems"])
    notes = [m for m in [_interval_message(n, settings)] if m]
    if names[0] == names[1]:
        notes.append(
            "baseline and candidate are the same version: the difference is 0 by construction"
        )
    headline = (
        f"{n} paired problems; candidate − baseline mean score = {delta(overall['delta'])} "
        f"({round(settings.confidence * 100)}% paired t interval {delta(overall['ci_low'])} to "
        f"{delta(overall['ci_high'])}): {overall['verdict']}"
    )
    return "; ".join([headline, gate_message, *notes])


def _gate(pairs: pl.DataFrame, names: tuple[str, str], confidence: float) -> dict[str, Any]:
    """The gate's decision on the pairs: the same function history and the lake's
    version_regressions table use."""
    baseline, candidate = names
    steps = gate.step_table(
        pairs.with_columns(baseline=pl.lit(baseline), candidate=pl.lit(candidate)), confidence
    )
    return docs.gate_document(steps, confidence)


def compare_versions(
    runs: pl.LazyFrame | pl.DataFrame,
    components: pl.LazyFrame | pl.DataFrame,
    metadata: pl.LazyFrame | pl.DataFrame | None,
    *,
    agent: str,
    baseline: str,
    candidate: str,
    settings: CompareSettings = DEFAULT_SETTINGS,
) -> Comparison:
    """Compare ``candidate`` against ``baseline`` for one agent, from warehouse-shaped frames."""
    runs_lf, comps_lf = runs.lazy(), components.lazy()
    require(runs_lf, RUN_COLUMNS, "task_runs")
    require(comps_lf, COMPONENT_COLUMNS, "task_components")
    names = (baseline, candidate)
    mine = runs_lf.filter(
        (pl.col("agent") == agent) & pl.col("agent_version").is_in(list(names))
    ).select(*RUN_COLUMNS)
    pairs = paired_problems(mine, baseline, candidate).collect()
    decision = _gate(pairs, names, settings.confidence)
    overall = decision["overall"]
    why, regressed = _why(mine, comps_lf, metadata, pairs, names, settings)
    documents = docs.version_documents(mine, settings.confidence)
    report: dict[str, Any] = {
        "agent": agent,
        "baseline": baseline,
        "candidate": candidate,
        "method": stats.METHOD_PAIRED_T,
        "confidence": settings.confidence,
        **{k: overall[k] for k in docs.GATE_FIELDS if k not in ("holm_family", "p_value_holm")},
        "regressed_env_types": decision["regressed_env_types"],
        "gate": decision["gate"],
        "message": _message(overall, decision["gate"]["message"], names, settings),
        "bootstrap": _bootstrap(pairs, settings),
        **docs.counts(mine, baseline, candidate, pairs.height),
        "per_env_type": decision["per_env_type"],
        "versions": {
            side: docs.version_document(documents, v) for side, v in zip(SIDES, names, strict=True)
        },
        "pass_rate_problems_paired": docs.paired_pass_rate(pairs),
        **why,
        "cost": docs.cost(mine, pairs.lazy(), baseline, candidate),
    }
    chart_pairs = pairs.select(
        *KEY,
        pl.col("b_score").alias("baseline_score"),
        pl.col("c_score").alias("candidate_score"),
        pl.col("diff").alias("delta"),
    )
    return Comparison(report=report, pairs=chart_pairs, regressed=regressed)


def _step(steps: pl.DataFrame, previous: str, version: str, confidence: float) -> dict[str, Any]:
    """The gate's comparison of ``version`` against the one before it."""
    mine = steps.filter((pl.col("baseline") == previous) & (pl.col("candidate") == version))
    decision = docs.gate_document(mine, confidence)
    return {
        "previous_version": previous,
        **decision["overall"],
        "regressed_env_types": decision["regressed_env_types"],
        "gate": decision["gate"],
        "per_env_type": decision["per_env_type"],
    }


def version_history(
    runs: pl.LazyFrame | pl.DataFrame,
    *,
    agent: str,
    settings: CompareSettings = DEFAULT_SETTINGS,
) -> list[dict[str, Any]]:
    """Every version with its metrics (:mod:`pipeline.compare.metrics`) and its step.

    Each step is the gate's comparison against the previous version (the same
    pairing, interval and Holm correction as ``compare``).
    """
    runs_lf = runs.lazy()
    require(runs_lf, RUN_COLUMNS, "task_runs")
    mine = runs_lf.filter(pl.col("agent") == agent).select(*RUN_COLUMNS)
    order = gate.version_order(mine).collect()
    steps = gate.step_table(gate.consecutive_pairs(mine).collect(), settings.confidence)
    documents = docs.version_documents(mine, settings.confidence)
    versions = order["agent_version"].to_list()
    # One document per version (a handful), never per run.
    return [
        {
            "agent": agent,
            "agent_version": version,
            "first_graded_at": None if first is None else str(first),
            **docs.version_document(documents, version),
            "step": None if i == 0 else _step(steps, versions[i - 1], version, settings.confidence),
        }
        for i, (version, first) in enumerate(
            order.select("agent_version", "first_graded_at").rows()
        )
    ]


def history_document(agent: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """``history --json``: the agent, the method of each step, every version."""
    return {"agent": agent, "method": stats.METHOD_PAIRED_T, "versions": rows}
