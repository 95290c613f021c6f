"""Is the candidate version of an agent better or worse than the baseline, where, and why?

The core is pure: functions from Polars frames (runs, components, metadata in
the shape of the warehouse views ``task_runs``, ``task_components`` and
``run_metadata``) to a result, so tests feed tiny in-memory frames. Only
:func:`run_compare` and :func:`run_history` open the warehouse (read-only,
through the parameterised queries in ``sql/queries/compare_*.sql``).

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

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import numpy as np
import polars as pl
from rich.console import Console
from rich.table import Table

from pipeline import gate, jsonsafe, metrics, stats
from pipeline.tables import print_table

KEY: Final = ("problem_id", "env_type")
SQL_QUERIES: Final = Path(__file__).resolve().parent / "sql" / "queries"

RUN_COLUMNS: Final = (
    "run_id",
    "agent",
    "agent_version",
    "problem_id",
    "env_type",
    "graded_at",
    "status",
    "score",
    "weighted",
    "penalty_total",
    "gate_passed",
    "passed",
    "cost_usd",
    "tokens",
    "wall_seconds",
)
COMPONENT_COLUMNS: Final = ("run_id", "component", "contribution", "is_gate")
METADATA_COLUMNS: Final = ("run_id", "key", "value")

# Metadata leaf names that carry the grader's own words, best first. The seed
# (000): "metadata carries the grader's reasoning — what matched, what was
# skipped and why"; these are the names such reasoning is found under.
REASON_LEAVES: Final = (
    "reason",
    "why",
    "explanation",
    "message",
    "detail",
    "details",
    "skipped",
    "skip_reason",
    "error",
    "status",
    "note",
    "notes",
)
# When no single reason exists, the entries are listed with the most telling
# first: for audit, the seed's "recall, precision, which known defects were
# found and missed, how many submissions were made, and how many were
# duplicates or non-crashers".
SUMMARY_FIRST: Final = (
    "recall",
    "precision",
    "missed",
    "found",
    "submissions",
    "duplicates",
    "non_crashers",
)
REASON_MAX_CHARS: Final = 300
KIND_GATE: Final = "gate"
KIND_COMPONENT: Final = "component"
KIND_PENALTY: Final = "penalty"


class CompareInputError(ValueError):
    """A frame handed to the comparison lacks what it needs; the message names it."""


@dataclass(frozen=True)
class CompareSettings:
    """The constants of a comparison, in one place."""

    confidence: float = stats.DEFAULT_CONFIDENCE
    min_pairs: int = stats.MIN_PAIRS_TO_CONCLUDE
    top_regressed: int = 10
    bootstrap_resamples: int = stats.DEFAULT_BOOTSTRAP_RESAMPLES
    bootstrap_seed: int = stats.DEFAULT_BOOTSTRAP_SEED


DEFAULT_SETTINGS: Final = CompareSettings()


@dataclass(frozen=True)
class Comparison:
    """``report`` is the JSON document; ``pairs`` one row per paired problem (for charts)."""

    report: dict[str, Any]
    pairs: pl.DataFrame
    regressed: pl.DataFrame = field(repr=False)


# --------------------------------------------------------------------------- checks


def _require(frame: pl.LazyFrame, columns: Sequence[str], what: str) -> None:
    present = set(frame.collect_schema().names())
    missing = [c for c in columns if c not in present]
    if missing:
        raise CompareInputError(
            f"{what} is missing column(s) {', '.join(missing)}; it has {', '.join(sorted(present))}"
        )


# --------------------------------------------------------------------------- per-problem


def problem_score(col: str) -> pl.Expr:
    """Issue 4: "trials averaged within a problem first" — the per-problem mean of a run column."""
    return pl.col(col).cast(pl.Float64).mean()


SIDE_COLUMNS: Final = (
    "trials",
    "score",
    "weighted",
    "penalty",
    "passed_share",
    "passes",
    "gate_passed",
    "worst_run_id",
)


def per_problem(runs: pl.LazyFrame) -> pl.LazyFrame:
    """Scored runs averaged per (agent, agent_version, problem_id, env_type).

    Score and pass come from :func:`pipeline.metrics.problem_outcomes`, the one
    definition every command and view shares.
    """
    return metrics.problem_outcomes(
        runs,
        ["agent", "agent_version"],
        weighted=problem_score("weighted"),
        penalty=problem_score("penalty_total"),
        gate_passed=problem_score("gate_passed"),
        # The trial that did worst is where the reason for a drop is read.
        worst_run_id=pl.col("run_id").sort_by(["score", "run_id"]).first(),
    )


def _side(problems: pl.LazyFrame, version: str, prefix: str) -> pl.LazyFrame:
    return (
        problems.filter(pl.col("agent_version") == version)
        .drop("agent_version")
        .rename({c: f"{prefix}{c}" for c in SIDE_COLUMNS})
    )


def paired_problems(runs: pl.LazyFrame, baseline: str, candidate: str) -> pl.LazyFrame:
    """Problems both versions have a score for, side by side, with ``diff = c_score - b_score``."""
    problems = per_problem(runs)
    base = _side(problems, baseline, "b_")
    cand = _side(problems, candidate, "c_")
    return (
        base.join(cand, on=["agent", *KEY], how="inner")
        .with_columns(diff=pl.col("c_score") - pl.col("b_score"))
        .sort(["agent", *KEY])
    )


# --------------------------------------------------------------------------- components


def component_means(
    runs: pl.LazyFrame, components: pl.LazyFrame, version: str, prefix: str
) -> pl.LazyFrame:
    """Per problem and component: Σ contribution over scored trials / number of scored trials.

    Dividing by the problem's trial count (not by the rows present) counts a
    component missing from a trial as 0, so per problem Σ_c mean contribution
    = mean over trials of Σ_c contribution = mean weighted, exactly.
    """
    scored = runs.filter((pl.col("status") == "scored") & (pl.col("agent_version") == version))
    trials = scored.group_by(*KEY).agg(trials=pl.len())
    return (
        components.join(scored.select("run_id", *KEY), on="run_id", how="inner")
        .group_by(*KEY, "component")
        .agg(total=pl.col("contribution").fill_null(0.0).sum(), gate=pl.col("is_gate").any())
        .join(trials, on=list(KEY), how="inner")
        .select(
            *KEY,
            "component",
            (pl.col("total") / pl.col("trials")).alias(f"{prefix}contribution"),
            pl.col("gate").alias(f"{prefix}is_gate"),
        )
    )


def component_grid(
    runs: pl.LazyFrame,
    components: pl.LazyFrame,
    pairs: pl.LazyFrame,
    baseline: str,
    candidate: str,
) -> pl.LazyFrame:
    """Paired problem × component, both versions' mean contributions (absent = 0)."""
    base = component_means(runs, components, baseline, "b_")
    cand = component_means(runs, components, candidate, "c_")
    return (
        base.join(cand, on=[*KEY, "component"], how="full", coalesce=True)
        .join(pairs.select(*KEY), on=list(KEY), how="semi")
        .with_columns(
            pl.col("b_contribution").fill_null(0.0),
            pl.col("c_contribution").fill_null(0.0),
            is_gate=pl.col("b_is_gate").fill_null(False) | pl.col("c_is_gate").fill_null(False),
        )
        .with_columns(drop=pl.col("b_contribution") - pl.col("c_contribution"))
    )


def component_split(grid: pl.LazyFrame, n_pairs: int) -> pl.DataFrame:
    """Issue 4: "the change in score split by component": Σ over pairs of (c − b) / n.

    Divided by all paired problems (a problem without the component adds 0),
    so the parts add up to the change in the mean weighted sum.
    """
    denominator = float(max(n_pairs, 1))
    return (
        grid.group_by("component")
        .agg(
            baseline=pl.col("b_contribution").sum() / denominator,
            candidate=pl.col("c_contribution").sum() / denominator,
            delta=(pl.col("c_contribution") - pl.col("b_contribution")).sum() / denominator,
            is_gate=pl.col("is_gate").any(),
            problems=pl.len(),
        )
        .sort("delta", "component")
        .collect()
    )


# --------------------------------------------------------------------------- regressions


def regressed_problems(
    pairs: pl.LazyFrame, grid: pl.LazyFrame, settings: CompareSettings
) -> pl.DataFrame:
    """The problems that dropped most, each with the component that failed it.

    The failing component is the gate when the candidate's gate pass rate on the
    problem fell (seed 000: a failed gate "scores zero on all four"), else the
    component whose mean contribution fell most; when no component fell the
    drop came from penalties.
    """
    gates = (
        grid.filter(pl.col("is_gate"))
        .group_by(*KEY)
        .agg(
            gate_component=pl.col("component").sort().first(),
            gate_b=pl.col("b_contribution").sort_by("component").first(),
            gate_c=pl.col("c_contribution").sort_by("component").first(),
        )
    )
    biggest_drop = grid.group_by(*KEY).agg(
        drop_component=pl.col("component")
        .sort_by(["drop", "component"], descending=[True, False])
        .first(),
        drop=pl.col("drop").max(),
        drop_b=pl.col("b_contribution")
        .sort_by(["drop", "component"], descending=[True, False])
        .first(),
        drop_c=pl.col("c_contribution")
        .sort_by(["drop", "component"], descending=[True, False])
        .first(),
    )
    gate_fell = pl.col("c_gate_passed").fill_null(1.0) < pl.col("b_gate_passed").fill_null(1.0)
    gate_fell = gate_fell & pl.col("gate_component").is_not_null()
    component_fell = pl.col("drop").fill_null(0.0) > 0
    return (
        pairs.filter(pl.col("diff") < 0)
        .sort(["diff", *KEY])
        .head(settings.top_regressed)
        .join(gates, on=list(KEY), how="left")
        .join(biggest_drop, on=list(KEY), how="left")
        .with_columns(
            failing_kind=pl.when(gate_fell)
            .then(pl.lit(KIND_GATE))
            .when(component_fell)
            .then(pl.lit(KIND_COMPONENT))
            .otherwise(pl.lit(KIND_PENALTY)),
        )
        .with_columns(
            failing_component=pl.when(pl.col("failing_kind") == KIND_GATE)
            .then(pl.col("gate_component"))
            .when(pl.col("failing_kind") == KIND_COMPONENT)
            .then(pl.col("drop_component"))
            .otherwise(pl.lit(None, dtype=pl.String)),
            baseline_contribution=pl.when(pl.col("failing_kind") == KIND_GATE)
            .then(pl.col("gate_b"))
            .when(pl.col("failing_kind") == KIND_COMPONENT)
            .then(pl.col("drop_b"))
            .otherwise(pl.lit(None, dtype=pl.Float64)),
            candidate_contribution=pl.when(pl.col("failing_kind") == KIND_GATE)
            .then(pl.col("gate_c"))
            .when(pl.col("failing_kind") == KIND_COMPONENT)
            .then(pl.col("drop_c"))
            .otherwise(pl.lit(None, dtype=pl.Float64)),
        )
        .select(
            *KEY,
            pl.col("b_score").alias("baseline_score"),
            pl.col("c_score").alias("candidate_score"),
            pl.col("diff").alias("delta"),
            "failing_kind",
            "failing_component",
            "baseline_contribution",
            "candidate_contribution",
            pl.col("b_penalty").alias("baseline_penalty"),
            pl.col("c_penalty").alias("candidate_penalty"),
            pl.col("b_trials").alias("baseline_trials"),
            pl.col("c_trials").alias("candidate_trials"),
            pl.col("c_worst_run_id").alias("candidate_run_id"),
        )
        .sort(["delta", *KEY])
        .collect()
    )


def _json_text(value: pl.Expr) -> pl.Expr:
    """A JSON string value as its text; any other JSON value as written."""
    decoded = (
        pl.concat_str([pl.lit('{"v":'), value, pl.lit("}")])
        .str.json_decode(pl.Struct({"v": pl.String}))
        .struct.field("v")
    )
    return pl.when(value.str.starts_with('"')).then(decoded).otherwise(value)


def _leaf(key: pl.Expr) -> pl.Expr:
    return key.str.split(".").list.last().str.replace(r"\[\d+\]$", "")


def failure_reasons(regressed: pl.DataFrame, metadata: pl.LazyFrame) -> pl.DataFrame:
    """``regressed`` with ``failing_reason``: the failing component's metadata, best text first.

    Read from the candidate's worst trial. In order: a key under the component
    (``<component>.<leaf>``) whose leaf is a reason-like name (REASON_LEAVES,
    best first); else every entry under the component as ``key=value``; else
    (audit keeps its diagnosis at the top: recall, precision, missed, ...)
    every top-level entry as ``key=value``. For a penalty drop, the penalty
    totals.
    """
    _require(metadata, METADATA_COLUMNS, "run_metadata")
    targets = regressed.lazy().select(
        pl.col("candidate_run_id").alias("run_id"), pl.col("failing_component").alias("component")
    )
    rank = {leaf: i for i, leaf in enumerate(REASON_LEAVES)}
    entries = (
        metadata.select(*METADATA_COLUMNS)
        .join(targets.filter(pl.col("component").is_not_null()), on="run_id", how="inner")
        .with_columns(
            text=_json_text(pl.col("value")).fill_null("null"),
            under=pl.col("key").str.starts_with(pl.col("component") + "."),
            top=~pl.col("key").str.contains(".", literal=True),
        )
        .with_columns(
            rank=pl.when(pl.col("under"))
            .then(_leaf(pl.col("key")).replace_strict(rank, default=None, return_dtype=pl.Int64))
            .otherwise(pl.lit(None, dtype=pl.Int64)),
            pair=pl.concat_str(
                [
                    pl.when(pl.col("under"))
                    .then(pl.col("key").str.slice(pl.col("component").str.len_chars() + 1))
                    .otherwise(pl.col("key")),
                    pl.lit("="),
                    pl.col("text"),
                ]
            ),
        )
    )
    keys = ["run_id", "component"]
    # A list kept whole (``missed``) and also item by item (``missed[0]``): say it once.
    items_of_kept_lists = (
        entries.filter(pl.col("key").str.contains("[", literal=True))
        .with_columns(parent=pl.col("key").str.replace(r"\[\d+\].*$", ""))
        .join(
            entries.select(*keys, pl.col("key").alias("parent")),
            on=[*keys, "parent"],
            how="semi",
        )
        .select(*keys, "key")
    )
    entries = entries.join(items_of_kept_lists, on=[*keys, "key"], how="anti").with_columns(
        order=_leaf(pl.col("key")).replace_strict(
            {leaf: i for i, leaf in enumerate(SUMMARY_FIRST)},
            default=len(SUMMARY_FIRST),
            return_dtype=pl.Int64,
        )
    )
    best = (
        entries.filter(pl.col("rank").is_not_null())
        .group_by(keys)
        .agg(best=pl.col("text").sort_by(["rank", "key"]).first())
    )
    under = (
        entries.filter(pl.col("under"))
        .group_by(keys)
        .agg(under_text=pl.col("pair").sort_by(["order", "key"]).str.join("; "))
    )
    top = (
        entries.filter(pl.col("top"))
        .group_by(keys)
        .agg(top_text=pl.col("pair").sort_by(["order", "key"]).str.join("; "))
    )
    found = (
        targets.join(best, on=keys, how="left")
        .join(under, on=keys, how="left")
        .join(top, on=keys, how="left")
        .select(*keys, found=pl.coalesce("best", "under_text", "top_text"))
        .unique(keys)
    )
    penalty_text = pl.format(
        "penalty_total rose from {} to {}",
        pl.col("baseline_penalty").round(4),
        pl.col("candidate_penalty").round(4),
    )
    return (
        regressed.lazy()
        .with_row_index("_order")
        .join(
            found,
            left_on=["candidate_run_id", "failing_component"],
            right_on=keys,
            how="left",
            nulls_equal=False,
        )
        .with_columns(
            failing_reason=pl.when(pl.col("failing_kind") == KIND_PENALTY)
            .then(penalty_text)
            .otherwise(pl.col("found").str.slice(0, REASON_MAX_CHARS))
        )
        .sort("_order")
        .drop("found", "_order")
        .collect()
    )


# --------------------------------------------------------------------------- the comparison


def _f(value: Any) -> float | None:
    """JSON-safe float: NaN, ±inf and None become null."""
    if value is None:
        return None
    out = float(value)
    return out if math.isfinite(out) else None


def _json_row(row: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (_f(v) if isinstance(v, float) else v) for k, v in row.items()}


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
_GATE_FIELDS: Final = tuple(_NO_PAIRS)


def gate_document(table: pl.DataFrame, confidence: float) -> dict[str, Any]:
    """One comparison's gate rows as JSON: the overall numbers, per env type, the decision.

    ``table`` is :func:`pipeline.gate.step_table` for one (agent, baseline, candidate).
    """
    overall_rows = table.filter(pl.col("env_type") == gate.ALL_ENV_TYPES)
    overall = _json_row(overall_rows.row(0, named=True)) if overall_rows.height else _NO_PAIRS
    envs = [
        _json_row({k: row[k] for k in ("env_type", *_GATE_FIELDS)})
        for row in table.filter(pl.col("env_type") != gate.ALL_ENV_TYPES).to_dicts()
    ]
    regressed = gate.regressed_env_types(table)
    k = sum(1 for row in envs if row["p_value"] is not None)
    overall_regression = overall["verdict"] == stats.REGRESSION
    fails = overall_regression or bool(regressed)
    alpha = round(1.0 - confidence, 10)
    if regressed:
        said = f"env type(s) regressed after Holm over {k} env types: {', '.join(regressed)}"
    else:
        said = f"no env type regressed after Holm over {k} env types (alpha {alpha})"
    return {
        "overall": {k_: overall[k_] for k_ in _GATE_FIELDS if k_ != "holm_family"},
        "per_env_type": envs,
        "regressed_env_types": regressed,
        "gate": {
            "fails": fails,
            "rule": "fail when the overall verdict is regression, or when an env type's "
            "Holm-adjusted p-value is below alpha with a negative delta",
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
    """Per version: the metrics of :mod:`pipeline.metrics` over all its runs, and per env type."""
    whole = metrics.version_metrics(runs, ["agent_version"], confidence)
    per_env = metrics.version_metrics(runs, ["agent_version", "env_type"], confidence)
    out: dict[str, dict[str, Any]] = {}
    for doc in metrics.as_documents(whole, ["agent_version"]):
        version = str(doc["agent_version"])
        envs = per_env.filter(pl.col("agent_version") == version).drop("agent_version")
        out[version] = {**doc, "per_env_type": metrics.as_documents(envs, ["env_type"])}
    return out


def _version_document(documents: Mapping[str, dict[str, Any]], version: str) -> dict[str, Any]:
    found = documents.get(version)
    if found is not None:
        return found
    empty = metrics.metric_document(pl.DataFrame(), ["agent_version"], agent_version=version)
    return {**empty, "per_env_type": []}


def _paired_pass_rate(pairs: pl.DataFrame) -> dict[str, Any]:
    """Problem-level pass rate over the paired problems, tested with exact McNemar."""
    passes = pairs.select(
        baseline=pl.col("b_passes").cast(pl.Float64).mean(),
        candidate=pl.col("c_passes").cast(pl.Float64).mean(),
        baseline_only=(pl.col("b_passes") & ~pl.col("c_passes")).sum(),
        candidate_only=(~pl.col("b_passes") & pl.col("c_passes")).sum(),
    ).row(0, named=True)
    baseline_only = int(passes["baseline_only"] or 0)
    candidate_only = int(passes["candidate_only"] or 0)
    base, cand = _f(passes["baseline"]), _f(passes["candidate"])
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


def _cost(mine: pl.LazyFrame, pairs: pl.LazyFrame, baseline: str, candidate: str) -> dict[str, Any]:
    """Mean cost per run, over the scored runs of the paired problems."""
    cost = (
        mine.filter(pl.col("status") == metrics.STATUS_SCORED)
        .join(pairs.select(*KEY), on=list(KEY), how="semi")
        .group_by("agent_version")
        .agg(
            runs=pl.len(),
            runs_with_cost=pl.col("cost_usd").is_not_null().sum(),
            cost_usd=pl.col("cost_usd").cast(pl.Float64).mean(),
            tokens=pl.col("tokens").cast(pl.Float64).mean(),
            wall_seconds=pl.col("wall_seconds").cast(pl.Float64).mean(),
            score=pl.col("score").cast(pl.Float64).mean(),
        )
        .collect()
    )

    def cost_for(version: str) -> dict[str, Any]:
        hit = cost.filter(pl.col("agent_version") == version)
        row = hit.row(0, named=True) if hit.height else {}
        return {
            "runs": int(row.get("runs", 0)),
            "runs_with_cost": int(row.get("runs_with_cost", 0)),
            "cost_usd": _f(row.get("cost_usd")),
            "tokens": _f(row.get("tokens")),
            "wall_seconds": _f(row.get("wall_seconds")),
            "score_per_run": _f(row.get("score")),
        }

    cost_b, cost_c = cost_for(baseline), cost_for(candidate)
    delta = (
        None
        if cost_b["cost_usd"] is None or cost_c["cost_usd"] is None
        else cost_c["cost_usd"] - cost_b["cost_usd"]
    )
    return {"baseline": cost_b, "candidate": cost_c, "delta_cost_usd": delta}


def _counts(mine: pl.LazyFrame, baseline: str, candidate: str, n: int) -> dict[str, Any]:
    """Runs, grader errors, unpaired problems and problems without any score, per side."""
    problems = per_problem(mine)
    counts = (
        mine.group_by("agent_version")
        .agg(
            runs=pl.len(),
            grader_errors=(pl.col("status") == metrics.STATUS_GRADER_ERROR).sum(),
            problems=pl.struct(*KEY).n_unique(),
        )
        .collect()
    )

    def count_for(version: str, column: str) -> int:
        hit = counts.filter(pl.col("agent_version") == version)
        return int(hit[column].item()) if hit.height else 0

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


def _why(
    mine: pl.LazyFrame,
    comps: pl.LazyFrame,
    metadata: pl.LazyFrame | pl.DataFrame | None,
    pairs: pl.DataFrame,
    names: tuple[str, str],
    settings: CompareSettings,
) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, Any]]:
    """The component split, the regressed problems with reasons, and the decomposition."""
    baseline, candidate = names
    grid = component_grid(mine, comps, pairs.lazy(), baseline, candidate)
    split = component_split(grid, pairs.height)
    regressed = regressed_problems(pairs.lazy(), grid, settings)
    if metadata is not None:
        regressed = failure_reasons(regressed, metadata.lazy())
    else:
        regressed = regressed.with_columns(failing_reason=pl.lit(None, dtype=pl.String))
    means = pairs.select(
        d=pl.col("diff").mean(),
        d_weighted=(pl.col("c_weighted") - pl.col("b_weighted")).mean(),
        d_penalty=(pl.col("c_penalty") - pl.col("b_penalty")).mean(),
    ).row(0, named=True)
    delta, d_weighted, d_penalty = (_f(means[k]) for k in ("d", "d_weighted", "d_penalty"))
    clamp_effect = (
        None
        if delta is None or d_weighted is None or d_penalty is None
        else delta - (d_weighted - d_penalty)
    )
    decomposition = {
        "delta_weighted": d_weighted,
        "components_sum": float(split["delta"].sum()) if split.height else 0.0,
        "delta_penalty": d_penalty,
        "clamp_effect": clamp_effect,
    }
    return split, regressed, decomposition


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
    runs_lf = runs.lazy()
    comps_lf = components.lazy()
    _require(runs_lf, RUN_COLUMNS, "task_runs")
    _require(comps_lf, COMPONENT_COLUMNS, "task_components")
    mine = runs_lf.filter(
        (pl.col("agent") == agent) & pl.col("agent_version").is_in([baseline, candidate])
    ).select(*RUN_COLUMNS)

    pairs = paired_problems(mine, baseline, candidate).collect()
    n = pairs.height
    # The same function the history and the lake's version_regressions table use.
    steps = gate.step_table(
        pairs.with_columns(baseline=pl.lit(baseline), candidate=pl.lit(candidate)),
        settings.confidence,
    )
    decision = gate_document(steps, settings.confidence)
    overall = decision["overall"]
    boot_low, boot_high = stats.bootstrap_interval(
        pairs["diff"].to_numpy().astype(np.float64),
        resamples=settings.bootstrap_resamples,
        seed=settings.bootstrap_seed,
        confidence=settings.confidence,
    )
    split, regressed, decomposition = _why(
        mine, comps_lf, metadata, pairs, (baseline, candidate), settings
    )
    documents = version_documents(mine, settings.confidence)

    notes = [m for m in [_interval_message(n, settings)] if m]
    if baseline == candidate:
        notes.append(
            "baseline and candidate are the same version: the difference is 0 by construction"
        )
    headline = (
        f"{n} paired problems; candidate − baseline mean score = {_fmt(overall['delta'])} "
        f"({round(settings.confidence * 100)}% paired t interval {_fmt(overall['ci_low'])} to "
        f"{_fmt(overall['ci_high'])}): {overall['verdict']}"
    )
    report: dict[str, Any] = {
        "agent": agent,
        "baseline": baseline,
        "candidate": candidate,
        "method": stats.METHOD_PAIRED_T,
        "confidence": settings.confidence,
        **{k: overall[k] for k in _GATE_FIELDS if k not in ("holm_family", "p_value_holm")},
        "regressed_env_types": decision["regressed_env_types"],
        "gate": decision["gate"],
        "message": "; ".join([headline, decision["gate"]["message"], *notes]),
        "bootstrap": {
            "method": stats.METHOD_BOOTSTRAP,
            "ci_low": _f(boot_low),
            "ci_high": _f(boot_high),
            "resamples": settings.bootstrap_resamples,
            "seed": settings.bootstrap_seed,
        },
        **_counts(mine, baseline, candidate, n),
        "per_env_type": decision["per_env_type"],
        "versions": {
            "baseline": _version_document(documents, baseline),
            "candidate": _version_document(documents, candidate),
        },
        "pass_rate_problems_paired": _paired_pass_rate(pairs),
        "components": [
            {
                "component": row["component"],
                "is_gate": bool(row["is_gate"]),
                "baseline": _f(row["baseline"]),
                "candidate": _f(row["candidate"]),
                "delta": _f(row["delta"]),
            }
            for row in split.to_dicts()
        ],
        "decomposition": decomposition,
        "regressed_problems": [_json_row(row) for row in regressed.to_dicts()],
        "cost": _cost(mine, pairs.lazy(), baseline, candidate),
    }
    chart_pairs = pairs.select(
        *KEY,
        pl.col("b_score").alias("baseline_score"),
        pl.col("c_score").alias("candidate_score"),
        pl.col("diff").alias("delta"),
    )
    return Comparison(report=report, pairs=chart_pairs, regressed=regressed)


def _fmt(value: float | None, digits: int = 4) -> str:
    return "n/a" if value is None else f"{value:+.{digits}f}"


# --------------------------------------------------------------------------- history


def version_history(
    runs: pl.LazyFrame | pl.DataFrame,
    *,
    agent: str,
    settings: CompareSettings = DEFAULT_SETTINGS,
) -> list[dict[str, Any]]:
    """Every version with its metrics (:mod:`pipeline.metrics`) and its step.

    Each step is the gate's comparison against the previous version (the same
    pairing, interval and Holm correction as ``compare``).
    """
    runs_lf = runs.lazy()
    _require(runs_lf, RUN_COLUMNS, "task_runs")
    mine = runs_lf.filter(pl.col("agent") == agent).select(*RUN_COLUMNS)
    order = gate.version_order(mine).collect()
    steps = gate.step_table(gate.consecutive_pairs(mine).collect(), settings.confidence)
    documents = version_documents(mine, settings.confidence)
    versions = order["agent_version"].to_list()
    out: list[dict[str, Any]] = []
    # One document per version (a handful), never per run.
    for i, row in enumerate(order.to_dicts()):
        version, first = row["agent_version"], row["first_graded_at"]
        step: dict[str, Any] | None = None
        if i > 0:
            mine_step = steps.filter(
                (pl.col("baseline") == versions[i - 1]) & (pl.col("candidate") == version)
            )
            decision = gate_document(mine_step, settings.confidence)
            step = {
                "previous_version": versions[i - 1],
                **decision["overall"],
                "regressed_env_types": decision["regressed_env_types"],
                "gate": decision["gate"],
                "per_env_type": decision["per_env_type"],
            }
        out.append(
            {
                "agent": agent,
                "agent_version": version,
                "first_graded_at": None if first is None else str(first),
                **_version_document(documents, version),
                "step": step,
            }
        )
    return out


# --------------------------------------------------------------------------- warehouse


class WarehouseError(RuntimeError):
    """The warehouse is missing or cannot be read."""


def load_query(name: str) -> str:
    """The text of ``sql/queries/<name>.sql``."""
    return (SQL_QUERIES / f"{name}.sql").read_text()


def _warehouse(lake: Path) -> Any:
    import duckdb

    path = lake / "warehouse.duckdb"
    if not path.is_file():
        raise WarehouseError(
            f"no warehouse at {path}: run `python -m pipeline run --lake {lake}` first"
        )
    try:
        return duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        raise WarehouseError(f"cannot open {path} read-only: {exc}") from exc


def _query(con: Any, name: str, params: Sequence[Any]) -> pl.DataFrame:
    frame = con.sql(load_query(name), params=list(params)).pl()
    assert isinstance(frame, pl.DataFrame)
    return frame


_errors = Console(stderr=True)


def _known_versions(con: Any, agent: str) -> pl.DataFrame:
    return _query(con, "compare_versions", [agent])


def fetch_comparison(
    lake: Path,
    *,
    agent: str,
    baseline: str,
    candidate: str,
    settings: CompareSettings = DEFAULT_SETTINGS,
) -> Comparison:
    """Run the comparison on the warehouse: fetch runs and components, then reasons."""
    con = _warehouse(lake)
    try:
        versions = [baseline, candidate]
        runs = _query(con, "compare_runs", [agent, versions])
        comps = _query(con, "compare_components", [agent, versions])
        result = compare_versions(
            runs,
            comps,
            None,
            agent=agent,
            baseline=baseline,
            candidate=candidate,
            settings=settings,
        )
        run_ids = [r for r in result.regressed["candidate_run_id"].to_list() if r is not None]
        if run_ids:
            metadata = _query(con, "compare_metadata", [run_ids])
            regressed = failure_reasons(result.regressed.drop("failing_reason"), metadata.lazy())
            report = dict(result.report)
            report["regressed_problems"] = [
                {k: (_f(v) if isinstance(v, float) else v) for k, v in row.items()}
                for row in regressed.to_dicts()
            ]
            result = Comparison(report=report, pairs=result.pairs, regressed=regressed)
        return result
    finally:
        con.close()


def _check_versions(lake: Path, agent: str, wanted: Sequence[str]) -> list[str] | str:
    """The agent's known versions, or a message naming what is unknown."""
    con = _warehouse(lake)
    try:
        known = _known_versions(con, agent)["agent_version"].to_list()
    finally:
        con.close()
    if not known:
        return f"no runs of agent {agent!r} in the warehouse at {lake}"
    missing = [v for v in wanted if v not in known]
    if missing:
        return (
            f"agent {agent!r} has no runs of version(s) {', '.join(map(repr, missing))}; "
            f"known versions: {', '.join(map(str, known))}"
        )
    return [str(v) for v in known]


def _dump(document: Any) -> str:
    # At the output edge: a non-finite float becomes null (JSON has no NaN or inf).
    return jsonsafe.dumps(document)


def run_compare(
    *,
    lake: Path,
    agent: str,
    baseline: str,
    candidate: str,
    as_json: bool,
    html: Path | None,
    fail_on_regression: bool,
    console: Console,
) -> int:
    """``python -m pipeline compare``: 0 done, 1 regression under --fail-on-regression or a
    failure, 2 an unknown agent or version."""
    try:
        checked = _check_versions(lake, agent, [baseline, candidate])
        if isinstance(checked, str):
            _errors.print(f"[bold red]usage:[/] {checked}", highlight=False)
            return 2
        result = fetch_comparison(lake, agent=agent, baseline=baseline, candidate=candidate)
    except (WarehouseError, CompareInputError) as exc:
        _errors.print(f"[bold red]failed:[/] {exc}", highlight=False)
        return 1
    if as_json:
        console.print_json(_dump(result.report)) if console.is_terminal else console.out(
            _dump(result.report), highlight=False
        )
    else:
        print_comparison(console, result.report)
    if html is not None:
        from pipeline.report_html import render_comparison

        html.parent.mkdir(parents=True, exist_ok=True)
        html.write_text(render_comparison(result.report, result.pairs), encoding="utf-8")
        if not as_json:
            console.print(f"wrote {html}", highlight=False)
    if fail_on_regression and result.report["gate"]["fails"]:
        return 1
    return 0


def run_history(*, lake: Path, agent: str, as_json: bool, console: Console) -> int:
    """``python -m pipeline history``: every version, each step's paired verdict."""
    try:
        checked = _check_versions(lake, agent, [])
        if isinstance(checked, str):
            _errors.print(f"[bold red]usage:[/] {checked}", highlight=False)
            return 2
        con = _warehouse(lake)
        try:
            runs = _query(con, "compare_runs", [agent, checked])
        finally:
            con.close()
        rows = version_history(runs, agent=agent)
    except (WarehouseError, CompareInputError) as exc:
        _errors.print(f"[bold red]failed:[/] {exc}", highlight=False)
        return 1
    if as_json:
        console.out(
            _dump({"agent": agent, "method": stats.METHOD_PAIRED_T, "versions": rows}),
            highlight=False,
        )
    else:
        print_history(console, agent, rows)
    return 0


# --------------------------------------------------------------------------- terminal


def _n(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _interval(low: Any, high: Any, *, signed: bool = True) -> str:
    if low is None or high is None:
        return "–"
    return f"[{low:+.3f}, {high:+.3f}]" if signed else f"[{low:.3f}, {high:.3f}]"


_VERDICT_STYLE: Final[Mapping[str, str]] = {
    stats.REGRESSION: "bold red",
    stats.IMPROVEMENT: "bold green",
    stats.NO_CHANGE: "yellow",
}


def _verdict_text(verdict: str) -> str:
    style = _VERDICT_STYLE.get(verdict, "")
    return f"[{style}]{verdict}[/]" if style else verdict


def print_comparison(console: Console, report: Mapping[str, Any]) -> None:
    """Readable tables: headline and gate, per env type, versions, components, regressions, cost."""
    from rich.markup import escape

    title = (
        f"{escape(report['agent'])}: {escape(report['candidate'])} vs "
        f"{escape(report['baseline'])} (method: {report['method']}, "
        f"{round(report['confidence'] * 100)}% interval)"
    )
    head = Table(title=title, show_header=True)
    for col in ("paired", "baseline", "candidate", "delta", "interval", "p", "verdict", "env"):
        head.add_column(col, justify="right", no_wrap=col in {"interval", "verdict"})
    regressed = report["regressed_env_types"]
    head.add_row(
        str(report["paired_problems"]),
        _n(report["baseline_mean"]),
        _n(report["candidate_mean"]),
        _fmt(report["delta"], 3),
        _interval(report["ci_low"], report["ci_high"]),
        _n(report["p_value"], 4),
        _verdict_text(report["verdict"]),
        _verdict_text(stats.REGRESSION) + ": " + escape(", ".join(regressed))
        if regressed
        else "none regressed",
    )
    print_table(console, head)
    gate_ = report["gate"]
    style = "bold red" if gate_["fails"] else "green"
    console.print(f"[{style}]{escape(gate_['message'])}[/]", highlight=False)
    console.print(escape(report["message"]), highlight=False)
    errors_ = report["grader_errors"]
    boot = report["bootstrap"]
    console.print(
        f"unpaired problems: baseline {report['n_unpaired_baseline']}, candidate "
        f"{report['n_unpaired_candidate']}; grader errors excluded: baseline "
        f"{errors_['baseline']}, candidate {errors_['candidate']}; "
        f"bootstrap interval {_interval(boot['ci_low'], boot['ci_high'])}",
        highlight=False,
    )

    env = Table(title=f"per env type (gate: Holm over {gate_['holm_env_types']} env types)")
    columns = ("env_type", "paired", "baseline", "candidate", "delta", "interval", "p", "p Holm")
    for col in (*columns, "verdict", "gate"):
        env.add_column(col, justify="right", no_wrap=col in {"env_type", "interval", "verdict"})
    for row in report["per_env_type"]:
        env.add_row(
            escape(row["env_type"]),
            str(row["paired_problems"]) + (" (few)" if row["insufficient_data"] else ""),
            _n(row["baseline_mean"]),
            _n(row["candidate_mean"]),
            _fmt(row["delta"], 3),
            _interval(row["ci_low"], row["ci_high"]),
            _n(row["p_value"], 4),
            _n(row["p_value_holm"], 4),
            _verdict_text(row["verdict"]),
            _verdict_text(row["gate_verdict"]),
        )
    print_table(console, env)
    print_version_metrics(
        console,
        "each version over all its scored runs and problems",
        [report["versions"]["baseline"], report["versions"]["candidate"]],
    )

    pr = report["pass_rate_problems_paired"]
    console.print(
        f"pass_rate_problems over paired problems: baseline {_n(pr['baseline'])}, candidate "
        f"{_n(pr['candidate'])}; discordant {pr['discordant']} (baseline only "
        f"{pr['baseline_only']}, candidate only {pr['candidate_only']}), exact McNemar p = "
        f"{_n(pr['p_value'], 4)}",
        highlight=False,
    )
    _print_why(console, report)


def print_version_metrics(console: Console, title: str, rows: Sequence[Mapping[str, Any]]) -> None:
    """The metrics of :mod:`pipeline.metrics`, one line per version, named for what they are."""
    from rich.markup import escape

    table = Table(
        title=title,
        caption="*_runs: over scored runs; *_problems: over problems (trials averaged, a "
        "problem passes on a majority of its trials); rates: Wilson 95%; mean_score_runs: "
        "normal 95%; mean_score_problems: t 95%",
    )
    for col in ("version", "runs", "grader errors", "problems", *metrics.METRICS):
        table.add_column(col, justify="right", no_wrap=col == "version")
    for row in rows:
        table.add_row(
            escape(str(row["agent_version"])),
            str(row["runs"]),
            str(row["grader_errors"]),
            str(row["problems"]),
            *(
                f"{_n(row[m])}\n{_interval(row[f'{m}_ci_low'], row[f'{m}_ci_high'], signed=False)}"
                for m in metrics.METRICS
            ),
        )
    print_table(console, table)


def _print_why(console: Console, report: Mapping[str, Any]) -> None:
    from rich.markup import escape

    comp = Table(title="change in mean score by component (contribution)")
    for col in ("component", "baseline", "candidate", "delta"):
        comp.add_column(col, justify="right")
    for row in report["components"]:
        name = escape(row["component"]) + (" (gate)" if row["is_gate"] else "")
        comp.add_row(name, _n(row["baseline"]), _n(row["candidate"]), _fmt(row["delta"], 3))
    dec = report["decomposition"]
    comp.add_row("= weighted", "", "", _fmt(dec["delta_weighted"], 3))
    comp.add_row("− penalties", "", "", _fmt(dec["delta_penalty"], 3))
    comp.add_row("clamping", "", "", _fmt(dec["clamp_effect"], 3))
    print_table(console, comp)

    reg = Table(title="problems that regressed most")
    for col in ("problem", "env", "baseline", "candidate", "delta", "failing", "reason"):
        reg.add_column(col)
    for row in report["regressed_problems"]:
        reg.add_row(
            escape(str(row["problem_id"])),
            escape(str(row["env_type"])),
            _n(row["baseline_score"]),
            _n(row["candidate_score"]),
            _fmt(row["delta"], 3),
            escape(str(row["failing_component"] or row["failing_kind"])),
            escape(str(row["failing_reason"] or "")),
        )
    print_table(console, reg)

    cost = Table(title="cost per run (scored runs of paired problems)")
    for col in ("version", "runs", "mean score", "cost_usd", "tokens", "wall_seconds"):
        cost.add_column(col, justify="right")
    for label in ("baseline", "candidate"):
        c = report["cost"][label]
        cost.add_row(
            escape(report[label]),
            str(c["runs"]),
            _n(c["score_per_run"]),
            _n(c["cost_usd"], 4),
            _n(c["tokens"], 0),
            _n(c["wall_seconds"], 1),
        )
    print_table(console, cost)


def print_history(console: Console, agent: str, rows: Sequence[Mapping[str, Any]]) -> None:
    from rich.markup import escape

    table = Table(
        title=f"{escape(agent)}: versions in order of first graded run",
        caption="mean_score_problems: mean over problems (trials averaged first), 95% t; "
        "pass_rate_problems: share of problems passing on a majority of trials, 95% Wilson; "
        "step = paired comparison with the previous version; env regressions after Holm "
        "over the env types",
    )
    table.add_column("version", no_wrap=True)
    table.add_column("first graded", min_width=10)
    table.add_column("runs", justify="right", min_width=4)
    table.add_column("problems", justify="right", min_width=4)
    table.add_column("mean_score_problems", min_width=14)
    table.add_column("pass_rate_problems", min_width=14)
    table.add_column("step Δ", min_width=16)
    table.add_column("verdict", no_wrap=True)
    table.add_column("env regressions (Holm)")
    for row in rows:
        step = row["step"]
        first = row["first_graded_at"]
        score_ci = _interval(
            row["mean_score_problems_ci_low"], row["mean_score_problems_ci_high"], signed=False
        )
        pass_ci = _interval(
            row["pass_rate_problems_ci_low"], row["pass_rate_problems_ci_high"], signed=False
        )
        step_text, envs = "", ""
        if step is not None:
            step_text = f"{_fmt(step['delta'], 3)}\n{_interval(step['ci_low'], step['ci_high'])}"
            step_text += "\n(few pairs)" if step["insufficient_data"] else ""
            regressed = step["regressed_env_types"]
            envs = (
                f"[bold red]{escape(', '.join(regressed))}[/]"
                if regressed
                else f"none of {step['gate']['holm_env_types']}"
            )
        table.add_row(
            escape(str(row["agent_version"])),
            "" if first is None else escape(str(first)[:16]),
            str(row["runs"]),
            str(row["problems"]),
            f"{_n(row['mean_score_problems'])}\n{score_ci}",
            f"{_n(row['pass_rate_problems'])}\n{pass_ci}",
            step_text,
            "" if step is None else _verdict_text(step["verdict"]),
            envs,
        )
    print_table(console, table)
