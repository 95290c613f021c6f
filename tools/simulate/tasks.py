"""Task records (CONTRACT section 2) as one vectorized flat frame, from driver columns.

``build_task_flat`` is shared by the sample (``sample_tasks``) and the bulk runs
(``bulk``): dotted column names (``grade.subscores.pov_quality``), a null cell
meaning the key is absent; ``flat.write_flat_ndjson`` nests them into JSON Lines.
``RUN_COLUMNS`` is ``records.TASK_FIELDS``, the one list of a record's top-level fields
that the tests' single-record builders use too.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from pipeline.rubric import DEFAULT_RUBRIC
from tools.simulate.records import TASK_FIELDS

ENV_TYPES = ("exploit", "detect", "patch", "audit")
Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]

# ---------------------------------------------------------------------------
# Configuration: the seed's components and the default weights they carry.
# ---------------------------------------------------------------------------
_TASK_RUBRIC: Mapping[str, Any] = DEFAULT_RUBRIC["task"]
ENV_WEIGHTS: Mapping[str, Mapping[str, float]] = {
    env: dict(_TASK_RUBRIC[env]["weights"]) for env in ENV_TYPES
}
ENV_GATES: Mapping[str, str | None] = {env: _TASK_RUBRIC[env].get("gate") for env in ENV_TYPES}
MINIMIZATION_MULTIPLE: float = float(_TASK_RUBRIC["minimization_multiple"])

# Seed 000: "When a component is skipped for this reason, metadata says so."
GATE_PASS_REASON = {
    "defect_matching": "crash stack matched target frame",
    "patch_verified": "patch builds and the PoV no longer crashes",
}
GATE_FAIL_REASONS = {
    "defect_matching": ("crash stack did not match target frame", "input did not crash the target"),
    "patch_verified": ("verification failed: PoV still crashes", "patch does not build"),
}
TOP_FRAMES = (
    "png_read_row",
    "ssl3_read_bytes",
    "sqlite3VdbeExec",
    "xmlParseCharRef",
    "av_read_frame",
)
HARNESS = {"name": "cyberbench", "build": "2025.3.1"}
GRADER_VERSION = "3.2.1"
FUNCTIONAL_TESTS_TOTAL = 240

PROJECTS = ("libpng", "openssl", "sqlite", "libxml2", "ffmpeg")
CWES = (
    "CWE-787",
    "CWE-125",
    "CWE-416",
    "CWE-476",
    "CWE-190",
    "CWE-122",
    "CWE-415",
    "CWE-369",
    "CWE-400",
    "CWE-20",
)
PROBLEMS_PER_ENV = 10

EPOCH = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)


# ---------------------------------------------------------------------------
# Task records: one vectorized builder shared by the sample and the bulk paths.
# ---------------------------------------------------------------------------
def _in_envs(*envs: str) -> pl.Expr:
    return pl.col("env_type").is_in(list(envs))


def clip01(expr: pl.Expr) -> pl.Expr:
    return expr.clip(0.0, 1.0)


def _rounded(expr: pl.Expr, decimals: int | None) -> pl.Expr:
    return expr if decimals is None else expr.round(decimals)


def _component_columns(decimals: int | None) -> list[pl.Expr]:
    """Subscores, weights and the grader's per-component reasoning.

    Seed 000: "an input that does not trigger the defect scores zero on all
    four"; the non-gate components are quality +/- a per-component spread.
    """
    exprs: list[pl.Expr] = []
    columns: dict[str, list[str]] = {}
    for env in ENV_TYPES:
        for component in ENV_WEIGHTS[env]:
            columns.setdefault(component, []).append(env)
    for component, envs in columns.items():
        in_env = _in_envs(*envs)
        weight = pl.coalesce(
            [
                pl.when(pl.col("env_type") == env).then(pl.lit(ENV_WEIGHTS[env][component]))
                for env in envs
            ]
        )
        exprs.append(weight.alias(f"grade.weights.{component}"))
        gate_names = {ENV_GATES[env] for env in envs}
        if component in gate_names:
            value = pl.col("gate").cast(pl.Float64)
        elif component == "audit":
            value = pl.col("recall") * pl.col("precision")
        elif component == "minimization":
            value = pl.coalesce(pl.col("_minimization_from_sizes"), clip01(pl.col("quality")))
            value = value * pl.col("gate").cast(pl.Float64)
        else:
            spread = pl.col(f"spread_{_spread_slot(component)}")
            value = clip01(pl.col("quality") + spread) * pl.col("gate").cast(pl.Float64)
        # Audit stays unrounded: it must equal recall x precision to 1e-6.
        stored = value if component == "audit" else _rounded(value, decimals)
        exprs.append(pl.when(in_env).then(stored).alias(f"grade.subscores.{component}"))
    return exprs


def _spread_slot(component: str) -> int:
    slots = {
        "pov_quality": 0,
        "summary_quality": 1,
        "target_calls": 2,
        "number_of_attempts": 0,
        "size_of_patch": 1,
    }
    return slots[component]


def _reason_columns() -> list[pl.Expr]:
    """metadata.<component>.reason: what matched, what was skipped and why."""
    exprs: list[pl.Expr] = []
    gate_envs: tuple[tuple[str, tuple[str, ...]], ...] = (
        ("defect_matching", ("exploit", "detect")),
        ("patch_verified", ("patch",)),
    )
    for gate, envs in gate_envs:
        first, second = GATE_FAIL_REASONS[gate]
        reason = (
            pl.when(pl.col("gate"))
            .then(pl.lit(GATE_PASS_REASON[gate]))
            .when(pl.col("u1") < 0.7)
            .then(pl.lit(first))
            .otherwise(pl.lit(second))
        )
        exprs.append(pl.when(_in_envs(*envs)).then(reason).alias(f"grade.metadata.{gate}.reason"))
    explained: dict[str, tuple[tuple[str, ...], str, tuple[str, ...]]] = {
        "pov_quality": (
            ("exploit", "detect"),
            "pov {} bytes vs reference {} bytes",
            ("pov_bytes", "ref_bytes"),
        ),
        "summary_quality": (
            ("exploit", "detect"),
            "fault located {} frames from the target",
            ("frames_off",),
        ),
        "target_calls": (
            ("exploit", "detect"),
            "{} non-crashing attempts before the crash",
            ("non_crashing",),
        ),
        "number_of_attempts": (("patch",), "{} patch attempts", ("attempts",)),
        "size_of_patch": (("patch",), "{} lines changed", ("patch_lines",)),
        "minimization": (("patch",), "final change within {}x of minimal", ("min_ratio_text",)),
    }
    for component, (envs, template, args) in explained.items():
        gate_name = ENV_GATES[envs[0]]
        reason = (
            pl.when(pl.col("gate"))
            .then(pl.format(template, *[pl.col(arg) for arg in args]))
            .otherwise(pl.lit(f"skipped: gated on {gate_name}"))
        )
        exprs.append(
            pl.when(_in_envs(*envs)).then(reason).alias(f"grade.metadata.{component}.reason")
        )
    return exprs


def _detail_numbers() -> list[pl.Expr]:
    """Numbers the reason strings quote, derived from the subscores' drivers."""
    quality = clip01(pl.col("quality"))
    return [
        (pl.col("ref_bytes") / (quality + 0.25) * 1.25).round(0).cast(pl.Int64).alias("pov_bytes"),
        ((1.0 - quality) * 6).round(0).cast(pl.Int64).alias("frames_off"),
        ((1.0 - quality) * 10).round(0).cast(pl.Int64).alias("non_crashing"),
        (1 + (1.0 - quality) * 8).round(0).cast(pl.Int64).alias("attempts"),
        (1 + (1.0 - quality) * 120).round(0).cast(pl.Int64).alias("patch_lines"),
    ]


def _minimization_inputs(minimization_rate: float) -> list[pl.Expr]:
    """Raw sizes on some verified patches; CONTRACT 4: lerp01(final/minimal, 1, multiple)."""
    has_sizes = (
        (pl.col("env_type") == "patch") & pl.col("gate") & (pl.col("u2") < minimization_rate)
    )
    minimal = (3 + pl.col("u5") * 40).floor().cast(pl.Int64)
    ratio = 1.0 + (1.0 - clip01(pl.col("quality"))) * (MINIMIZATION_MULTIPLE - 1.0) * 1.2
    final = (minimal * ratio).round(0).cast(pl.Int64)
    return [
        pl.when(has_sizes).then(final).alias("grade.metadata.minimization.final_size"),
        pl.when(has_sizes).then(minimal).alias("grade.metadata.minimization.minimal_size"),
    ]


def _minimization_from_sizes() -> pl.Expr:
    final = pl.col("grade.metadata.minimization.final_size")
    minimal = pl.col("grade.metadata.minimization.minimal_size")
    ratio = final / minimal
    lerp01 = 1.0 - (ratio - 1.0) / (MINIMIZATION_MULTIPLE - 1.0)
    return clip01(lerp01).alias("_minimization_from_sizes")


def _minimization_ratio_text() -> pl.Expr:
    """The ratio the minimization reason quotes: from the raw sizes when given."""
    sizes = pl.col("grade.metadata.minimization.final_size") / pl.col(
        "grade.metadata.minimization.minimal_size"
    )
    estimate = 1.0 + (1.0 - clip01(pl.col("quality"))) * (MINIMIZATION_MULTIPLE - 1.0)
    return pl.coalesce(sizes, estimate).round(2).cast(pl.String).alias("min_ratio_text")


def _penalty_columns(penalty_rate: float) -> list[pl.Expr]:
    """Seed 000: a verified patch that costs functionality "attracts a penalty
    proportional to the loss"."""
    penalised = (pl.col("env_type") == "patch") & pl.col("gate") & (pl.col("u3") < penalty_rate)
    failed = (1 + pl.col("u4") * 24).floor().cast(pl.Int64)
    return [
        pl.when(penalised)
        .then((failed / FUNCTIONAL_TESTS_TOTAL * 2.0).round(4))
        .alias("grade.penalties.functionality_loss"),
        pl.when(penalised).then(failed).alias("grade.metadata.functionality_loss.tests_failed"),
        pl.when(penalised)
        .then(pl.lit(FUNCTIONAL_TESTS_TOTAL))
        .alias("grade.metadata.functionality_loss.tests_total"),
        pl.when(penalised)
        .then(
            pl.format("{} of {} functional tests regressed", failed, pl.lit(FUNCTIONAL_TESTS_TOTAL))
        )
        .alias("grade.metadata.functionality_loss.reason"),
    ]


def _audit_columns() -> list[pl.Expr]:
    """CONTRACT 2: audit metadata breaks out recall, precision, found, missed, counts."""
    audit = pl.col("env_type") == "audit"
    found_n = pl.col("audit_found")
    return [
        pl.when(audit).then(pl.col("recall")).alias("grade.metadata.recall"),
        pl.when(audit).then(pl.col("precision")).alias("grade.metadata.precision"),
        pl.when(audit)
        .then(pl.col("known_ids").list.slice(0, found_n))
        .alias("grade.metadata.found"),
        pl.when(audit).then(pl.col("known_ids").list.slice(found_n)).alias("grade.metadata.missed"),
        pl.when(audit).then(pl.col("audit_submissions")).alias("grade.metadata.submissions"),
        pl.when(audit).then(pl.col("audit_duplicates")).alias("grade.metadata.duplicates"),
        pl.when(audit).then(pl.col("audit_non_crashers")).alias("grade.metadata.non_crashers"),
    ]


def _informational_columns() -> list[pl.Expr]:
    """Fields no contract names, at several depths: they must be kept, never rejected."""
    frames = pl.Series(TOP_FRAMES)
    frame_index = (
        (pl.col("u5") * len(TOP_FRAMES)).floor().cast(pl.Int64).clip(0, len(TOP_FRAMES) - 1)
    )
    exploit_detect = _in_envs("exploit", "detect")
    return [
        pl.lit(HARNESS["name"]).alias("harness.name"),
        pl.lit(HARNESS["build"]).alias("harness.build"),
        pl.lit(GRADER_VERSION).alias("grade.grader_version"),
        pl.when(exploit_detect)
        .then(pl.lit(frames).gather(frame_index))
        .alias("grade.metadata.defect_matching.trace.top_frame"),
        pl.when(exploit_detect)
        .then(3 + (pl.col("u4") * 9).floor().cast(pl.Int64))
        .alias("grade.metadata.defect_matching.trace.depth"),
        pl.when(exploit_detect)
        .then(pl.col("ref_bytes"))
        .alias("grade.metadata.pov_quality.reference_bytes"),
    ]


# The record's top-level fields; everything else sits under grade (or is informational).
RUN_COLUMNS = TASK_FIELDS


def build_task_flat(
    base: pl.DataFrame,
    *,
    decimals: int | None = 3,
    minimization_rate: float = 0.6,
    penalty_rate: float = 0.3,
) -> pl.DataFrame:
    """Contract records as a flat frame (dotted names; null = absent) from driver columns.

    ``base`` holds RUN_COLUMNS plus the drivers: ``gate`` (bool), ``quality``
    and ``spread_0..2`` (floats), ``u1..u5`` (uniforms in [0, 1)),
    ``ref_bytes`` (int), ``recall``/``precision`` (floats), ``known_ids``
    (list of defect ids), ``audit_found``/``audit_submissions``/
    ``audit_duplicates``/``audit_non_crashers`` (ints).
    """
    drivers = (
        base.with_columns(*_detail_numbers())
        .with_columns(_minimization_inputs(minimization_rate))
        .with_columns(_minimization_from_sizes())
        .with_columns(_minimization_ratio_text())
    )
    flat = drivers.select(
        *RUN_COLUMNS,
        *_component_columns(decimals),
        *_reason_columns(),
        *_minimization_columns_passthrough(),
        *_penalty_columns(penalty_rate),
        *_audit_columns(),
        *_informational_columns(),
    )
    return flat


def _minimization_columns_passthrough() -> list[pl.Expr]:
    return [
        pl.col("grade.metadata.minimization.final_size"),
        pl.col("grade.metadata.minimization.minimal_size"),
    ]


def graded_at(seconds: pl.Expr, offset: pl.Expr) -> pl.Expr:
    """RFC 3339 with an offset: local wall time plus the "+hh:mm" it is in."""
    sign = pl.when(offset.str.slice(0, 1) == "-").then(-1).otherwise(1)
    offset_minutes = sign * (
        offset.str.slice(1, 2).cast(pl.Int64) * 60 + offset.str.slice(4, 2).cast(pl.Int64)
    )
    local = pl.lit(EPOCH.replace(tzinfo=None)) + pl.duration(
        seconds=seconds.cast(pl.Int64) + offset_minutes * 60
    )
    return pl.concat_str([local.dt.to_string("%Y-%m-%dT%H:%M:%S"), offset])


def cost_columns(rng: np.random.Generator, n: int) -> dict[str, Any]:
    tokens = rng.integers(20_000, 400_000, n)
    return {
        "tokens": tokens,
        "cost_usd": np.round(tokens * 3.0e-6 + rng.uniform(0, 0.05, n), 4),
        "wall_seconds": np.round(rng.uniform(30, 3600, n), 1),
    }


def uniform_columns(rng: np.random.Generator, n: int) -> dict[str, Floats]:
    return {f"u{k}": rng.uniform(0.0, 1.0, n) for k in range(1, 6)}


def run_draws(rng: np.random.Generator, n: int) -> list[pl.Series]:
    """Per run, the uniform draws (uniform_columns), then the costs (cost_columns)."""
    return [
        *pl.DataFrame(uniform_columns(rng, n)).get_columns(),
        *pl.DataFrame(cost_columns(rng, n)).get_columns(),
    ]


def run_id() -> pl.Expr:
    return pl.format("{}-{}-{}-t{}", "agent", "agent_version", "problem_id", "trial").alias(
        "run_id"
    )


def known_ids(project: pl.Expr, tag: pl.Expr, count: pl.Expr, frame: pl.DataFrame) -> pl.Series:
    """Per row: ``<project>-<tag>-dNN`` for NN in 0..count-1 (audit's known defects)."""
    exploded = (
        frame.with_row_index("__row")
        .select("__row", project.alias("p"), tag.alias("t"), pl.int_ranges(0, count).alias("k"))
        .explode("k")
        .with_columns(
            pl.format("{}-{}-d{}", "p", "t", pl.col("k").cast(pl.String).str.zfill(2)).alias("id")
        )
        .group_by("__row", maintain_order=True)
        .agg(pl.col("id").drop_nulls())
    )
    return exploded["id"]


def skill_drivers() -> list[pl.Expr]:
    """Outcomes from skill: the gate passes when its draw falls under skill minus
    difficulty; quality and audit recall rise with skill."""
    skill = pl.col("skill")
    return [
        (pl.col("gate_u") < (skill - pl.col("difficulty")).clip(0.03, 0.97)).alias("gate"),
        clip01(0.25 + 0.6 * skill + 0.3 * (pl.col("quality_u") - 0.5)).alias("quality"),
        (pl.col("known") * clip01(skill + 0.4 * (pl.col("recall_u") - 0.5)))
        .floor()
        .cast(pl.Int64)
        .alias("audit_found"),
        (pl.col("dup_u") * 3).floor().cast(pl.Int64).alias("audit_duplicates"),
        (pl.col("nc_u") * 5 * (1.2 - skill)).floor().cast(pl.Int64).alias("audit_non_crashers"),
    ]


def audit_drivers() -> list[pl.Expr]:
    """Seed 000: audit is recall x precision; recall = found / known defects,
    precision = found / submissions."""
    submissions = pl.col("audit_found") + pl.col("audit_duplicates") + pl.col("audit_non_crashers")
    return [
        submissions.alias("audit_submissions"),
        (pl.col("audit_found") / pl.col("known")).alias("recall"),
        pl.when(submissions > 0)
        .then(pl.col("audit_found") / submissions)
        .otherwise(0.0)
        .alias("precision"),
    ]


def skilled_runs(runs: pl.DataFrame, seconds: pl.Expr) -> pl.DataFrame:
    """``runs`` with their outcomes drawn from skill (skill_drivers, then audit_drivers),
    run_id, and graded_at ``seconds`` after EPOCH in each run's utc_offset."""
    return runs.with_columns(
        *skill_drivers(),
        run_id(),
        graded_at(seconds, pl.col("utc_offset")).alias("graded_at"),
    ).with_columns(*audit_drivers())
