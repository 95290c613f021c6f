"""The parts of a comparison's JSON document: the gate's decision, each version's metrics,
the paired pass rate, cost, and the counts of what was and was not paired.

Every float is finite or null here (JSON has no NaN or inf).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

import polars as pl

from pipeline.compare import gate, metrics, stats
from pipeline.compare.names import ALL_ENV_TYPES
from pipeline.compare.pairing import KEY, per_problem
from pipeline.compare.text import holm_family
from pipeline.core import repeatable
from pipeline.core.jsonsafe import json_safe
from pipeline.tasks.formulas import STATUS_GRADER_ERROR, STATUS_SCORED


def finite(value: Any) -> float | None:
    """JSON-safe float: NaN, ±inf and None become null."""
    if value is None:
        return None
    out = float(value)
    return out if math.isfinite(out) else None


def _count(frame: pl.LazyFrame) -> int:
    return int(frame.select(pl.len()).collect().item())


# The gate's numbers of a comparison with no paired problem at all.
_NO_PAIRS: Final[Mapping[str, Any]] = {
    "paired_problems": 0,
    "baseline_mean": None,
    "candidate_mean": None,
    "delta": None,
    "se": None,
    "ci_low": None,
    "ci_high": None,
    "p_value": None,
    "verdict": stats.NO_CHANGE,
    "insufficient_data": True,
    "holm_family": 1,
    "p_value_holm": None,
    "gate_verdict": stats.NO_CHANGE,
}
GATE_FIELDS: Final = tuple(_NO_PAIRS)


def gate_document(table: pl.DataFrame, confidence: float) -> dict[str, Any]:
    """One comparison's gate rows as JSON: the overall numbers, per env type, the decision.

    ``table`` is :func:`pipeline.compare.gate.step_table` for one (agent, baseline, candidate).
    """
    overall_rows = table.filter(pl.col("env_type") == ALL_ENV_TYPES)
    overall = json_safe(overall_rows.row(0, named=True)) if overall_rows.height else _NO_PAIRS
    envs = [
        json_safe({k: row[k] for k in ("env_type", *GATE_FIELDS)})
        for row in table.filter(pl.col("env_type") != ALL_ENV_TYPES).to_dicts()
    ]
    regressed = gate.regressed_env_types(table)
    k = sum(1 for row in envs if row["p_value"] is not None)
    overall_regression = overall["verdict"] == stats.REGRESSION
    # A gate does not pass what it cannot measure: fewer paired problems than an interval
    # needs (none: a candidate whose every run was a grader error) fails it.
    unmeasured = (overall["paired_problems"] or 0) < stats.MIN_PAIRS_FOR_INTERVAL
    fails = overall_regression or bool(regressed) or unmeasured
    alpha = round(1.0 - confidence, 10)
    if unmeasured:
        said = (
            f"nothing measured: {overall['paired_problems'] or 0} paired problem(s), an interval "
            f"needs {stats.MIN_PAIRS_FOR_INTERVAL}"
        )
    elif regressed:
        said = f"env type(s) regressed after {holm_family(k)}: {', '.join(regressed)}"
    else:
        said = f"no env type regressed after {holm_family(k)} (alpha {alpha})"
    return {
        "overall": {k_: overall[k_] for k_ in GATE_FIELDS if k_ != "holm_family"},
        "per_env_type": envs,
        "regressed_env_types": regressed,
        "gate": {
            "fails": fails,
            "rule": "fail when the overall verdict is regression, when an env type's "
            "Holm-adjusted p-value is below alpha with a negative delta, or when fewer "
            f"than {stats.MIN_PAIRS_FOR_INTERVAL} problems are paired (nothing measured)",
            "correction": gate.HOLM,
            "holm_env_types": k,
            "alpha": alpha,
            "overall_verdict": overall["verdict"],
            "regressed_env_types": regressed,
            "message": (
                f"gate {'FAILS' if fails else 'passes'}: overall {overall['verdict']}; {said}"
            ),
        },
    }


def version_documents(runs: pl.LazyFrame, confidence: float) -> dict[str, dict[str, Any]]:
    """Per version: the metrics of :mod:`~pipeline.compare.metrics` over all runs and per env."""
    whole = metrics.version_metrics(runs, ["agent_version"], confidence)
    per_env = metrics.version_metrics(runs, ["agent_version", "env_type"], confidence)
    out: dict[str, dict[str, Any]] = {}
    for doc in metrics.as_documents(whole, ["agent_version"]):
        version = str(doc["agent_version"])
        envs = per_env.filter(pl.col("agent_version") == version).drop("agent_version")
        out[version] = {**doc, "per_env_type": metrics.as_documents(envs, ["env_type"])}
    return out


def version_document(documents: Mapping[str, dict[str, Any]], version: str) -> dict[str, Any]:
    found = documents.get(version)
    if found is not None:
        return found
    empty = metrics.metric_document(pl.DataFrame(), ["agent_version"], agent_version=version)
    return {**empty, "per_env_type": []}


def _row_of(frame: pl.DataFrame, version: str) -> dict[str, Any]:
    """The row of ``version`` in a frame with one row per agent_version ({} when none)."""
    hit = frame.filter(pl.col("agent_version") == version)
    return hit.row(0, named=True) if hit.height else {}


def paired_pass_rate(pairs: pl.DataFrame) -> dict[str, Any]:
    """Problem-level pass rate over the paired problems, tested with exact McNemar."""
    passes = pairs.select(
        baseline=repeatable.share("b_passes"),
        candidate=repeatable.share("c_passes"),
        baseline_only=(pl.col("b_passes") & ~pl.col("c_passes")).sum(),
        candidate_only=(~pl.col("b_passes") & pl.col("c_passes")).sum(),
    ).row(0, named=True)
    baseline_only = int(passes["baseline_only"] or 0)
    candidate_only = int(passes["candidate_only"] or 0)
    base, cand = finite(passes["baseline"]), finite(passes["candidate"])
    return {
        "metric": "pass_rate_problems",
        "over": "paired problems",
        "definition": (
            "a problem passes when mean(passed) over its scored trials >= "
            f"{metrics.PROBLEM_PASS_THRESHOLD}"
        ),
        "method": "exact_mcnemar",
        "baseline": base,
        "candidate": cand,
        "delta": None if base is None or cand is None else cand - base,
        "discordant": baseline_only + candidate_only,
        "baseline_only": baseline_only,
        "candidate_only": candidate_only,
        "p_value": stats.mcnemar_exact(baseline_only, candidate_only),
    }


def cost(mine: pl.LazyFrame, pairs: pl.LazyFrame, baseline: str, candidate: str) -> dict[str, Any]:
    """Mean cost per run, over the scored runs of the paired problems."""
    per_version = (
        mine.filter(pl.col("status") == STATUS_SCORED)
        .join(pairs.select(*KEY), on=list(KEY), how="semi")
        .group_by("agent_version")
        .agg(
            runs=pl.len(),
            runs_with_cost=pl.col("cost_usd").is_not_null().sum(),
            cost_usd=repeatable.mean("cost_usd"),
            tokens=repeatable.mean("tokens"),
            wall_seconds=repeatable.mean("wall_seconds"),
            score=repeatable.mean("score"),
        )
        .collect()
    )

    def cost_for(version: str) -> dict[str, Any]:
        row = _row_of(per_version, version)
        return {
            "runs": int(row.get("runs", 0)),
            "runs_with_cost": int(row.get("runs_with_cost", 0)),
            "cost_usd": finite(row.get("cost_usd")),
            "tokens": finite(row.get("tokens")),
            "wall_seconds": finite(row.get("wall_seconds")),
            "score_per_run": finite(row.get("score")),
        }

    cost_b, cost_c = cost_for(baseline), cost_for(candidate)
    delta = (
        None
        if cost_b["cost_usd"] is None or cost_c["cost_usd"] is None
        else cost_c["cost_usd"] - cost_b["cost_usd"]
    )
    return {"baseline": cost_b, "candidate": cost_c, "delta_cost_usd": delta}


def counts(mine: pl.LazyFrame, baseline: str, candidate: str, n: int) -> dict[str, Any]:
    """Runs, grader errors, unpaired problems and problems without any score, per side."""
    problems = per_problem(mine)
    per_version = (
        mine.group_by("agent_version")
        .agg(
            runs=pl.len(),
            grader_errors=(pl.col("status") == STATUS_GRADER_ERROR).sum(),
            problems=pl.struct(*KEY).n_unique(),
        )
        .collect()
    )

    def count_for(version: str, column: str) -> int:
        return int(_row_of(per_version, version).get(column, 0))

    scored = {
        side: _count(problems.filter(pl.col("agent_version") == version).select(*KEY))
        for side, version in (("baseline", baseline), ("candidate", candidate))
    }
    sides = (("baseline", baseline), ("candidate", candidate))
    return {
        "n_unpaired_baseline": scored["baseline"] - n,
        "n_unpaired_candidate": scored["candidate"] - n,
        "runs": {side: count_for(v, "runs") for side, v in sides},
        "grader_errors": {side: count_for(v, "grader_errors") for side, v in sides},
        "problems_without_score": {
            side: count_for(v, "problems") - scored[side] for side, v in sides
        },
    }
