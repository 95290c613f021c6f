"""Deterministic synthetic data: the sample in ``data/sample/`` and bulk runs for benchmarks.

Everything is derived from one integer seed (no wall clock, no global random
state): the same seed writes byte-identical files. JSON keys are sorted, gzip
headers carry no time stamp.

What ``write_sample(out, seed)`` writes
---------------------------------------
- ``tasks/<agent>.jsonl`` (``tasks/cinder.jsonl.gz`` gzipped): task grades
  (CONTRACT section 2) of three agents with two or three versions each over 40
  problems (10 per env type, five projects, defects with CWE ids) and one to
  three trials per problem. ``SAMPLE_AGENTS`` holds each version's skill per
  env type: the newest version of every agent is better on some env types and
  worse on others. Gate outcomes and qualities use common random numbers per
  (agent, problem, trial), so a version's change of skill moves every paired
  problem the same way and a paired comparison detects it.
  Special records (``SPECIAL_ROLES``): grader errors, record weights not
  summing to 1, a failed gate with other stored subscores > 0, a non-binary
  gate subscore, an audit subscore that is not recall x precision, a missing
  component, an unknown component, and an unbounded (unclamped) patch.
- ``bad/malformed.jsonl``: quarantine at work (CONTRACT section 8), in order:
    1. a copy of a good task record from ``tasks/`` (lands, or is skipped when
       ``tasks/`` landed first);
    2. the same line again: an exact duplicate, always skipped;
    3. not JSON (a truncated object);
    4. a required field missing (``graded_at``);
    5. a wrong type (``trial`` is a string);
    6. a subscore outside [0, 1];
    7. a non-finite number (``cost_usd`` is ``1e999``);
    8. a negative weight;
    9. a negative penalty;
    10. subscores and weights with different keys;
    11. an unknown env_type;
    12. line 1's run_id again with different content (always quarantined,
        whichever of line 1 and its copy in ``tasks/`` landed).
  So ingesting this file alone lands 1 line, skips 1, quarantines 10.
- ``surface/<server>-<version>/report.json``: mcp-xray-shaped reports
  (CONTRACT section 3) of five servers over two or three versions, phased and
  unphased, with and without the ``noise`` probe, labeled and proxy-only
  selection, every finding kind. Their ``grade`` is computed with mcp-xray's
  own arithmetic (rounding as it goes), so a regrade must agree within 0.1.
- ``surface/extra.jsonl``: two more reports, one per line (one carries its own
  ``run_id``).

Bulk generation (benchmarks, scale and comparison tests)
--------------------------------------------------------
``generate_task_frame(n, seed)`` builds ``n`` valid records as one flat frame
(dotted column names, null meaning "absent"); ``write_task_jsonl`` writes them
as JSON Lines; ``generate_versions`` / ``write_versions_jsonl`` produce two
versions of one agent whose mean score per env type differs by exactly the
injected ``effect`` under the default rubric. Records are built with numpy and
Polars expressions, one nested frame per shape of record (``write_flat_ndjson``),
never one Python dict per record.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any, cast

import numpy as np
import numpy.typing as npt
import polars as pl

from pipeline.rubric import DEFAULT_RUBRIC

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


@dataclass(frozen=True)
class VersionSpec:
    version: str
    # Probability-like skill per env type; drives gate pass rate and quality.
    skill: Mapping[str, float]


@dataclass(frozen=True)
class AgentSpec:
    name: str
    utc_offset: str
    versions: tuple[VersionSpec, ...]


def _skill(exploit: float, detect: float, patch: float, audit: float) -> dict[str, float]:
    return {"exploit": exploit, "detect": detect, "patch": patch, "audit": audit}


SAMPLE_AGENTS: tuple[AgentSpec, ...] = (
    AgentSpec(
        "atlas",
        "+00:00",
        (
            VersionSpec("1.3.0", _skill(0.50, 0.55, 0.70, 0.50)),
            # Better at exploit and detect, worse at patch, audit unchanged.
            VersionSpec("1.4.0", _skill(0.90, 0.90, 0.25, 0.50)),
        ),
    ),
    AgentSpec(
        "borealis",
        "-05:00",
        (
            VersionSpec("2025-01-15", _skill(0.45, 0.55, 0.45, 0.35)),
            VersionSpec("2025-02-20", _skill(0.50, 0.60, 0.50, 0.40)),
            # Much better at audit, much worse at detect.
            VersionSpec("2025-03-28", _skill(0.55, 0.15, 0.55, 0.90)),
        ),
    ),
    AgentSpec(
        "cinder",
        "+05:30",
        (
            VersionSpec("3f9c2e1", _skill(0.75, 0.60, 0.35, 0.55)),
            # Better at patch, worse at exploit.
            VersionSpec("a47b0d9", _skill(0.30, 0.60, 0.85, 0.55)),
        ),
    ),
)
GZIPPED_AGENT = "cinder"
MAX_TRIALS = 3
GRADER_ERRORS = 6
GRADER_ERROR_LOGS = [
    "sandbox: container exited with code 137 (out of memory)",
    "grader: retry 1/1 failed; giving up",
]
EPOCH = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)


# ---------------------------------------------------------------------------
# Flat frame -> nested JSON Lines (absent = null column, never a JSON null).
# ---------------------------------------------------------------------------
_Tree = dict[str, Any]


def _tree(columns: Sequence[str]) -> _Tree:
    root: _Tree = {}
    for column in columns:
        node = root
        *parents, leaf = column.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = column
    return root


def _node_expr(name: str, node: Any) -> pl.Expr:
    if isinstance(node, str):
        return pl.col(node).alias(name)
    return pl.struct([_node_expr(key, node[key]) for key in sorted(node)]).alias(name)


def nested_exprs(columns: Sequence[str]) -> list[pl.Expr]:
    """Struct expressions that nest dotted column names, keys in sorted order."""
    tree = _tree(columns)
    return [_node_expr(key, tree[key]) for key in sorted(tree)]


def _shapes(flat: pl.DataFrame) -> list[pl.DataFrame]:
    """Split rows by which columns are null: each part has one set of present keys."""
    nullable = [name for name in flat.columns if flat[name].null_count() > 0]
    if not nullable:
        return [flat]
    keys = [f"__null_{k}" for k in range(len(nullable))]
    flags = [pl.col(name).is_null().alias(key) for name, key in zip(nullable, keys, strict=True)]
    return flat.with_columns(flags).partition_by(keys, maintain_order=True, include_key=False)


def write_flat_ndjson(flat: pl.DataFrame, out: IO[bytes]) -> None:
    """Write a flat frame as nested JSON Lines; a null cell means the key is absent."""
    for part in _shapes(flat):
        present = [name for name in part.columns if part[name].null_count() == 0]
        part.select(nested_exprs(present)).write_ndjson(out)


def flat_ndjson_bytes(flat: pl.DataFrame) -> bytes:
    buffer = io.BytesIO()
    write_flat_ndjson(flat, buffer)
    return buffer.getvalue()


def write_flat_file(path: Path, flat: pl.DataFrame) -> Path:
    """``write_flat_ndjson`` into ``path`` (gzipped, without a time stamp, for ``.gz``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as raw:
        if path.name.endswith(".gz"):
            with gzip.GzipFile(
                filename="", mode="wb", fileobj=raw, compresslevel=6, mtime=0
            ) as zipped:
                write_flat_ndjson(flat, cast(IO[bytes], zipped))
        else:
            write_flat_ndjson(flat, raw)
    return path


def _write_bytes(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.name.endswith(".gz"):
        # mtime=0 and no file name in the header: the same bytes every time.
        data = gzip.compress(data, compresslevel=9, mtime=0)
    path.write_bytes(data)
    return path


# ---------------------------------------------------------------------------
# Task records: one vectorized builder shared by the sample and the bulk paths.
# ---------------------------------------------------------------------------
def _in_envs(*envs: str) -> pl.Expr:
    return pl.col("env_type").is_in(list(envs))


def _gated(envs: Sequence[str]) -> list[str]:
    return [env for env in envs if ENV_GATES[env] is not None]


def _clip01(expr: pl.Expr) -> pl.Expr:
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
            value = pl.coalesce(pl.col("_minimization_from_sizes"), _clip01(pl.col("quality")))
            value = value * pl.col("gate").cast(pl.Float64)
        else:
            spread = pl.col(f"spread_{_spread_slot(component)}")
            value = _clip01(pl.col("quality") + spread) * pl.col("gate").cast(pl.Float64)
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
    quality = _clip01(pl.col("quality"))
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
    ratio = 1.0 + (1.0 - _clip01(pl.col("quality"))) * (MINIMIZATION_MULTIPLE - 1.0) * 1.2
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
    return _clip01(lerp01).alias("_minimization_from_sizes")


def _minimization_ratio_text() -> pl.Expr:
    """The ratio the minimization reason quotes: from the raw sizes when given."""
    sizes = pl.col("grade.metadata.minimization.final_size") / pl.col(
        "grade.metadata.minimization.minimal_size"
    )
    estimate = 1.0 + (1.0 - _clip01(pl.col("quality"))) * (MINIMIZATION_MULTIPLE - 1.0)
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


RUN_COLUMNS = (
    "run_id",
    "agent",
    "agent_version",
    "problem_id",
    "env_type",
    "project",
    "defect_id",
    "cwe",
    "trial",
    "graded_at",
    "cost_usd",
    "tokens",
    "wall_seconds",
)


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


def _graded_at(seconds: pl.Expr, offset: pl.Expr) -> pl.Expr:
    """RFC 3339 with an offset: local wall time plus the "+hh:mm" it is in."""
    sign = pl.when(offset.str.slice(0, 1) == "-").then(-1).otherwise(1)
    offset_minutes = sign * (
        offset.str.slice(1, 2).cast(pl.Int64) * 60 + offset.str.slice(4, 2).cast(pl.Int64)
    )
    local = pl.lit(EPOCH.replace(tzinfo=None)) + pl.duration(
        seconds=seconds.cast(pl.Int64) + offset_minutes * 60
    )
    return pl.concat_str([local.dt.to_string("%Y-%m-%dT%H:%M:%S"), offset])


def _cost_columns(rng: np.random.Generator, n: int) -> dict[str, Any]:
    tokens = rng.integers(20_000, 400_000, n)
    return {
        "tokens": tokens,
        "cost_usd": np.round(tokens * 3.0e-6 + rng.uniform(0, 0.05, n), 4),
        "wall_seconds": np.round(rng.uniform(30, 3600, n), 1),
    }


def _uniform_columns(rng: np.random.Generator, n: int) -> dict[str, Floats]:
    return {f"u{k}": rng.uniform(0.0, 1.0, n) for k in range(1, 6)}


# ---------------------------------------------------------------------------
# The sample's task grades.
# ---------------------------------------------------------------------------
def _known_ids(project: pl.Expr, tag: pl.Expr, count: pl.Expr, frame: pl.DataFrame) -> pl.Series:
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
        _known_ids(
            pl.col("project"), pl.format("a{}", pl.col("problem_index")), pl.col("known"), problems
        ).alias("known_ids")
    )


def _sample_versions() -> pl.DataFrame:
    rows = [
        {
            "agent": agent.name,
            "agent_index": agent_index,
            "agent_version": version.version,
            "version_index": version_index,
            "utc_offset": agent.utc_offset,
            **{f"skill_{env}": version.skill[env] for env in ENV_TYPES},
        }
        for agent_index, agent in enumerate(SAMPLE_AGENTS)
        for version_index, version in enumerate(agent.versions)
    ]
    return pl.DataFrame(rows)


def _skill_drivers() -> list[pl.Expr]:
    """Outcomes from skill: the gate passes when its draw falls under skill minus
    difficulty; quality and audit recall rise with skill."""
    skill = pl.col("skill")
    return [
        (pl.col("gate_u") < (skill - pl.col("difficulty")).clip(0.03, 0.97)).alias("gate"),
        _clip01(0.25 + 0.6 * skill + 0.3 * (pl.col("quality_u") - 0.5)).alias("quality"),
        (pl.col("known") * _clip01(skill + 0.4 * (pl.col("recall_u") - 0.5)))
        .floor()
        .cast(pl.Int64)
        .alias("audit_found"),
        (pl.col("dup_u") * 3).floor().cast(pl.Int64).alias("audit_duplicates"),
        (pl.col("nc_u") * 5 * (1.2 - skill)).floor().cast(pl.Int64).alias("audit_non_crashers"),
    ]


def _audit_drivers() -> list[pl.Expr]:
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


def _sample_base(seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    problems = _sample_problems(rng)
    versions = _sample_versions()
    n_agents, n_problems = len(SAMPLE_AGENTS), problems.height
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
        *pl.DataFrame(_uniform_columns(rng, n)).get_columns(),
        *pl.DataFrame(_cost_columns(rng, n)).get_columns(),
    ).with_columns(
        *_skill_drivers(),
        pl.format("{}-{}-{}-t{}", "agent", "agent_version", "problem_id", "trial").alias("run_id"),
        _graded_at(version_days * 86_400 + pl.col("order_s"), pl.col("utc_offset")).alias(
            "graded_at"
        ),
    )
    return runs.with_columns(*_audit_drivers()).sort(
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


def _write_tasks(out: Path, flat: pl.DataFrame) -> list[Path]:
    written = []
    for agent in SAMPLE_AGENTS:
        records = flat.filter(pl.col("__agent") == agent.name).drop("role", "__agent")
        suffix = ".jsonl.gz" if agent.name == GZIPPED_AGENT else ".jsonl"
        written.append(write_flat_file(out / "tasks" / f"{agent.name}{suffix}", records))
    return written


# ---------------------------------------------------------------------------
# The quarantine demonstration file.
# ---------------------------------------------------------------------------
_NON_FINITE = "__non_finite__"


def _dump(record: Mapping[str, Any]) -> str:
    return json.dumps(record, sort_keys=True, separators=(",", ":")).replace(
        f'"{_NON_FINITE}"', "1e999"
    )


def _variant(anchor: Mapping[str, Any], run_id: str) -> dict[str, Any]:
    record: dict[str, Any] = json.loads(json.dumps(anchor))
    record["run_id"] = run_id
    return record


def bad_lines(anchor_line: str) -> list[str]:
    """One line per bad-input class of CONTRACT section 8 (see the module docstring)."""
    anchor: dict[str, Any] = json.loads(anchor_line)
    rid = anchor["run_id"]

    missing = _variant(anchor, "bad-missing-graded-at")
    del missing["graded_at"]
    wrong_type = _variant(anchor, "bad-wrong-type-trial")
    wrong_type["trial"] = "two"
    out_of_range = _variant(anchor, "bad-subscore-out-of-range")
    out_of_range["grade"]["subscores"]["pov_quality"] = 1.5
    non_finite = _variant(anchor, "bad-non-finite-cost")
    non_finite["cost_usd"] = _NON_FINITE
    negative_weight = _variant(anchor, "bad-negative-weight")
    negative_weight["grade"]["weights"].update(summary_quality=-0.1, target_calls=0.3)
    negative_penalty = _variant(anchor, "bad-negative-penalty")
    negative_penalty["grade"]["penalties"] = {"functionality_loss": -0.2}
    key_mismatch = _variant(anchor, "bad-keys-differ")
    key_mismatch["grade"]["weights"]["pov_size"] = key_mismatch["grade"]["weights"].pop(
        "pov_quality"
    )
    unknown_env = _variant(anchor, "bad-unknown-env-type")
    unknown_env["env_type"] = "fuzz"
    conflict = _variant(anchor, rid)
    conflict["grade"]["subscores"]["pov_quality"] = 0.0
    conflict["cost_usd"] = round(float(conflict.get("cost_usd", 0.0)) + 1.0, 4)
    truncated = _dump(_variant(anchor, "bad-not-json"))[:90]
    return [
        anchor_line,
        anchor_line,
        truncated,
        _dump(missing),
        _dump(wrong_type),
        _dump(out_of_range),
        _dump(non_finite),
        _dump(negative_weight),
        _dump(negative_penalty),
        _dump(key_mismatch),
        _dump(unknown_env),
        _dump(conflict),
    ]


def _write_bad(out: Path, flat: pl.DataFrame) -> Path:
    anchor = flat.filter(pl.col("role") == "anchor").drop("role", "__agent")
    anchor_line = flat_ndjson_bytes(anchor).decode().rstrip("\n")
    text = "\n".join(bad_lines(anchor_line)) + "\n"
    return _write_bytes(out / "bad" / "malformed.jsonl", text.encode())


# ---------------------------------------------------------------------------
# Surface grades: mcp-xray's arithmetic, ported (it rounds as it goes).
# ---------------------------------------------------------------------------
_XRAY_SMELLS = {
    "missing_description": 0.9,
    "tiny_description": 0.7,
    "short_description": 0.4,
    "vague_description": 0.45,
    "deep_nesting": 0.6,
    "enum_bloat": 0.55,
    "wide_schema": 0.5,
}
_XRAY_DESC = {"missing_description", "tiny_description", "short_description", "vague_description"}
_XRAY_WEIGHTS = {
    "context_efficiency": 0.30,
    "surface_redundancy": 0.15,
    "schema_hygiene": 0.15,
    "description_quality": 0.15,
    "selection_robustness": 0.25,
}
_XRAY_BANDS = (
    (97, "A+"),
    (93, "A"),
    (90, "A-"),
    (87, "B+"),
    (83, "B"),
    (80, "B-"),
    (77, "C+"),
    (73, "C"),
    (70, "C-"),
    (67, "D+"),
    (63, "D"),
    (60, "D-"),
)


def _xc(x: float) -> float:
    return max(0.0, min(1.0, x))


def _xlerp(value: float, good: float, bad: float) -> float:
    if value <= good:
        return 100.0
    if value >= bad:
        return 0.0
    return round(100.0 * (1 - (value - good) / (bad - good)), 1)


def _xletter(score: float) -> str:
    return next((letter for cutoff, letter in _XRAY_BANDS if score >= cutoff), "F")


def _xseverity(f: Mapping[str, Any]) -> float:
    m, kind = f["measurement"], f["kind"]
    if kind == "token_cost":
        if m.get("scope") == "surface":
            return round(1 - _xlerp(m.get("tokens_per_tool_avg", 0), 150, 600) / 100, 3)
        return round(_xc(m.get("share", 0) * 3), 3)
    if kind == "schema_smell":
        return _XRAY_SMELLS.get(m.get("smell", ""), 0.4)
    if kind == "merge_candidate":
        base = 0.4 + _xc(m.get("tokens_saved_est", 0) / 800) * 0.4
        base *= 0.7 if m.get("wide_union") else 1.0
        base *= 0.6 if m.get("mixes_read_write") else 1.0
        return round(_xc(base), 3)
    fixed = {"duplicate": 0.6, "resource_candidate": 0.3}
    if kind in fixed:
        return fixed[kind]
    if kind == "selection_error":
        return round(_xc(1 - m.get("pass_rate", 1.0)), 3)
    if kind == "distraction":
        return round(_xc(m.get("fire_rate", 0)), 3)
    if kind == "hidden_injector":
        return round(_xc(m.get("tokens_est", 0) / 1000), 3)
    if kind == "jit_candidate":
        return 0.5 if m.get("recommend_jit") else 0.1
    return 0.0


def _sub(score: float | None, dim: str, rationale: str, count: int = 0) -> dict[str, Any]:
    return {
        "score": score,
        "measured": score is not None,
        "weight": _XRAY_WEIGHTS[dim],
        "rationale": rationale,
        "finding_count": count,
    }


def _of(
    findings: Sequence[Mapping[str, Any]], finding_kind: str, /, **where: Any
) -> list[Mapping[str, Any]]:
    """The findings of one kind whose measurement matches ``where``."""
    return [
        f
        for f in findings
        if f["kind"] == finding_kind and all(f["measurement"].get(k) == v for k, v in where.items())
    ]


def _xray_grade(findings: list[dict[str, Any]], ran: Sequence[str]) -> dict[str, Any]:
    """mcp-xray's Grader.grade (grade.py), rounding exactly where it rounds."""
    for f in findings:
        f["severity"] = _xseverity(f)
    surface = next(iter(_of(findings, "token_cost", scope="surface")), None)
    n = (
        surface["measurement"]["tool_count"]
        if surface
        else len(
            {
                f["target"]
                for f in _of(findings, "token_cost", scope="tool")
                if isinstance(f["target"], str)
            }
        )
    )
    subs: dict[str, dict[str, Any]] = {}
    if surface is None:
        subs["context_efficiency"] = _sub(None, "context_efficiency", "no token data")
    else:
        m = surface["measurement"]
        score = round(
            0.6 * _xlerp(m["tokens_per_tool_avg"], 150, 600)
            + 0.4 * _xlerp(m["tokens"], 1500, 12000),
            1,
        )
        inj = sum(
            f["measurement"].get("tokens_est", 0)
            for f in _of(findings, "hidden_injector", kind="instructions")
        )
        if inj:
            score = round(max(0.0, score - _xc(inj / 2000) * 10), 1)
        subs["context_efficiency"] = _sub(
            score, "context_efficiency", f"{m['tokens']} surface tokens", 1
        )
    items = _of(findings, "merge_candidate") + _of(findings, "duplicate")
    if "consolidate" not in ran:
        subs["surface_redundancy"] = _sub(None, "surface_redundancy", "consolidate probe not run")
    else:
        score = round(max(0.0, 100 - _xc(sum(f["severity"] for f in items) / 4) * 100), 1)
        subs["surface_redundancy"] = _sub(
            score, "surface_redundancy", f"{len(items)} merge/duplicate", len(items)
        )
    smells = _of(findings, "schema_smell")
    structural = [f for f in smells if f["measurement"].get("smell") not in _XRAY_DESC]
    desc = [f for f in smells if f["measurement"].get("smell") in _XRAY_DESC]
    proxy = _of(findings, "selection_error", mode="confusability_proxy")
    if n == 0:
        subs["schema_hygiene"] = _sub(None, "schema_hygiene", "no tools")
        subs["description_quality"] = _sub(None, "description_quality", "no tools")
    else:
        hygiene = round(
            max(0.0, 100 - _xc(sum(f["severity"] for f in structural) / max(1, n)) * 100), 1
        )
        subs["schema_hygiene"] = _sub(
            hygiene,
            "schema_hygiene",
            f"{len(structural)} structural smell(s) over {n} tools",
            len(structural),
        )
        bad = sum(f["severity"] for f in desc) + sum(f["severity"] for f in proxy)
        quality = round(max(0.0, 100 - _xc(bad / max(1, n)) * 100), 1)
        subs["description_quality"] = _sub(
            quality,
            "description_quality",
            f"{len(desc)} description smell(s)",
            len(desc) + len(proxy),
        )
    if "noise" not in ran:
        subs["selection_robustness"] = _sub(
            None, "selection_robustness", "behavioral probe not run (no LLM)"
        )
    else:
        labeled = _of(findings, "selection_error", mode="labeled")
        distractions = _of(findings, "distraction")
        if labeled:
            base = sum(f["measurement"].get("pass_rate", 1.0) for f in labeled) / len(labeled) * 100
        else:
            base = max(0.0, 100 - _xc(len(proxy) / (n or 1)) * 60)
        penalty = _xc(sum(f["measurement"].get("fire_rate", 0) for f in distractions) / 2) * 40
        score = round(max(0.0, base - penalty), 1)
        subs["selection_robustness"] = _sub(
            score,
            "selection_robustness",
            f"{len(labeled)} labeled, {len(distractions)} distraction failure(s)",
            len(labeled) + len(distractions),
        )
    measured = [s for s in subs.values() if s["measured"]]
    total_weight = sum(s["weight"] for s in measured) or 1.0
    overall = round(sum(s["score"] * s["weight"] for s in measured) / total_weight, 1)
    return {"overall": overall, "letter": _xletter(overall), "subscores": subs}


# ---------------------------------------------------------------------------
# Surface grades: synthetic mcp-xray reports.
# ---------------------------------------------------------------------------
ALL_TOOLS = "*"


@dataclass(frozen=True)
class FindingSpec:
    """One probe finding; a tuple value in ``measurement`` gives one value per version."""

    probe: str
    kind: str
    target: str | tuple[str, ...]
    measurement: Mapping[str, Any]
    versions: tuple[int, ...] | None = None
    confidence: float = 0.8
    detail: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class ServerSpec:
    name: str
    versions: tuple[str, ...]
    transport: str
    tools: tuple[str, ...]
    # phase -> its tools; None for a server that loads every tool at once.
    phases: Mapping[str, tuple[str, ...]] | None
    noise: bool
    tokens_per_tool: tuple[int, int]
    growth: float
    findings: tuple[FindingSpec, ...]
    not_run: Mapping[int, tuple[str, ...]] | None = None
    run_id: Mapping[int, str] | None = None


def _smell(
    target: str, smell: str, versions: tuple[int, ...] | None = None, **extra: Any
) -> FindingSpec:
    return FindingSpec(
        "static_hygiene", "schema_smell", target, {"smell": smell, **extra}, versions, 0.8
    )


def _merge(
    targets: tuple[str, ...],
    saved: int | tuple[int, ...],
    *,
    wide: bool = False,
    mixes: bool = False,
    versions: tuple[int, ...] | None = None,
) -> FindingSpec:
    measurement = {
        "lens": "capability",
        "action": "merge",
        "tokens_saved_est": saved,
        "union_width": len(targets),
        "wide_union": wide,
        "mixes_read_write": mixes,
    }
    detail = {"proposal": f"manage({'/'.join(targets)})", "mixes_read_write": mixes}
    return FindingSpec(
        "consolidate", "merge_candidate", targets, measurement, versions, 0.8, detail
    )


def _labeled(query: str, expected: str, pass_rate: tuple[float, ...]) -> FindingSpec:
    measurement = {
        "mode": "labeled",
        "pass_rate": pass_rate,
        "samples": 5,
        "errors": 0,
        "expected": [expected],
    }
    return FindingSpec(
        "noise", "selection_error", (expected,), measurement, None, 0.85, {"query": query}
    )


def _proxy(
    tool: str, pass_rate: tuple[float, ...], versions: tuple[int, ...] | None = None
) -> FindingSpec:
    measurement = {"mode": "confusability_proxy", "pass_rate": pass_rate, "samples": 5, "errors": 0}
    return FindingSpec("noise", "selection_error", tool, measurement, versions, 0.7)


def _distraction(task: str, fired: tuple[str, ...], fire_rate: tuple[float, ...]) -> FindingSpec:
    measurement = {"fire_rate": fire_rate, "samples": 5, "errors": 0}
    return FindingSpec(
        "noise", "distraction", fired, measurement, None, 0.8, {"off_domain_task": task}
    )


def _injector(
    kind: str, tokens: int | tuple[int, ...], versions: tuple[int, ...] | None = None
) -> FindingSpec:
    return FindingSpec(
        "static_hygiene",
        "hidden_injector",
        f"server.{kind}",
        {"kind": kind, "tokens_est": tokens},
        versions,
        0.6,
    )


def _jit(recommend: bool, **extra: Any) -> FindingSpec:
    measurement = {
        "tool_count": ALL_TOOLS,
        "looks_dynamic": recommend,
        "recommend_jit": recommend,
        "threshold": 15,
    }
    return FindingSpec(
        "consolidate", "jit_candidate", ALL_TOOLS, {**measurement, **extra}, None, 0.5
    )


def _resource(tool: str, versions: tuple[int, ...] | None = None) -> FindingSpec:
    measurement = {"lens": "behavioral", "action": "resource", "verb": tool.split("_")[0]}
    return FindingSpec("consolidate", "resource_candidate", tool, measurement, versions, 0.55)


PAY_TOOLS = tuple(
    f"{resource}_{verb}"
    for resource, verbs in (
        ("charges", ("create", "get", "list")),
        ("refunds", ("create", "get")),
        ("customers", ("create", "get", "update", "delete")),
        ("invoices", ("create", "get", "list")),
        ("payouts", ("get", "list")),
        ("disputes", ("list", "update")),
        ("balance", ("get",)),
        ("webhooks", ("list",)),
    )
    for verb in verbs
)
REPO_PHASES = {
    "issues": ("create_issue", "get_issue", "list_issues", "update_issue", "search_issues"),
    "pulls": (
        "create_pull_request",
        "get_pull",
        "list_pulls",
        "merge_pull",
        "update_pull",
        "review_pull",
    ),
    "repos": (
        "create_file",
        "delete_file",
        "get_file",
        "list_branches",
        "list_tags",
        "search_code",
        "update_repo",
        "fork_repo",
    ),
}
SHELL_PHASES = {
    "files": ("read_file", "write_file", "list_dir", "move_file"),
    "process": ("run_command", "kill_process", "list_processes"),
}

SAMPLE_SERVERS: tuple[ServerSpec, ...] = (
    ServerSpec(
        name="weather-kit",
        versions=("1.0.0", "1.1.0", "1.2.0"),
        transport="tools-json",
        tools=(
            "get_forecast",
            "get_current",
            "get_alerts",
            "search_location",
            "get_history",
            "get_air_quality",
        ),
        phases=None,
        noise=False,
        tokens_per_tool=(110, 240),
        growth=1.15,
        findings=(
            _smell("get_alerts", "tiny_description", (0,), words=1),
            _smell("get_history", "missing_description", (0, 1), words=0),
            _smell("search_location", "short_description", words=4),
            _merge(("get_forecast", "get_current"), (140, 150, 160)),
            _resource("get_air_quality", (1, 2)),
            _jit(False),
        ),
    ),
    ServerSpec(
        name="repo-forge",
        versions=("2.0.0", "2.1.0"),
        transport="phases",
        tools=tuple(tool for tools in REPO_PHASES.values() for tool in tools),
        phases=REPO_PHASES,
        noise=False,
        tokens_per_tool=(180, 520),
        growth=1.1,
        findings=(
            _smell("list_issues", "enum_bloat", enum_sizes=[40], max=40),
            _smell("create_pull_request", "deep_nesting", depth=5),
            _smell("update_repo", "wide_schema", (1,), property_count=24),
            _smell("search_code", "vague_description", terms=["various"]),
            _merge(("get_issue", "get_pull"), 260, wide=True),
            _merge(("create_file", "delete_file", "get_file"), (420, 380), mixes=True),
            _merge(
                ("update_issue", "update_pull", "update_repo"),
                700,
                wide=True,
                mixes=True,
                versions=(0,),
            ),
            _resource("list_branches"),
            _resource("list_tags"),
            _jit(False, phase_count=3, progressive=True),
        ),
    ),
    ServerSpec(
        name="notes-vault",
        versions=("0.3.0", "0.4.0"),
        transport="stdio",
        tools=(
            "create_note",
            "get_note",
            "update_note",
            "delete_note",
            "search_notes",
            "list_tags",
            "export_notes",
        ),
        phases=None,
        noise=True,
        tokens_per_tool=(150, 330),
        growth=0.95,
        findings=(
            _smell("list_tags", "short_description", words=3),
            _labeled("find my notes about the offsite", "search_notes", (0.6, 0.8)),
            _labeled("save this as a new note", "create_note", (1.0, 1.0)),
            _labeled("fix the typo in yesterday's note", "update_note", (0.4, 0.8)),
            _labeled("download everything as markdown", "export_notes", (0.8, 1.0)),
            _distraction("what is the capital of Peru?", ("search_notes",), (0.4, 0.2)),
            _injector("instructions", (900, 400)),
            _injector("prompts", 120),
            _injector("resources", 300),
            FindingSpec(
                "mcp_checkup",
                "duplicate",
                ("get_note", "export_notes"),
                {"source": "mcp-checkup"},
                (0,),
                0.6,
            ),
            FindingSpec(
                "result_size",
                "result_size",
                "get_note",
                {"tool": "get_note", "chars": 5400, "bytes": 5400},
                None,
                0.9,
            ),
            FindingSpec(
                "result_size",
                "result_size",
                "export_notes",
                {"tool": "export_notes", "error": "timeout"},
                None,
                0.9,
            ),
            _jit(False),
        ),
    ),
    ServerSpec(
        name="pay-gateway",
        versions=("1.0.0", "2.0.0"),
        transport="http",
        tools=PAY_TOOLS,
        phases=None,
        noise=True,
        tokens_per_tool=(260, 720),
        growth=1.3,
        findings=(
            _smell("charges_list", "vague_description", terms=["various", "stuff"]),
            _smell("webhooks_list", "unbounded_array", field="events"),
            _smell("customers_update", "wide_schema", property_count=31),
            _proxy("charges_get", (0.6, 0.4)),
            _proxy("refunds_get", (0.8, 0.6)),
            _proxy("customers_get", (0.8, 0.8), (1,)),
            _distraction("write me a haiku about autumn", ("balance_get",), (0.2, 0.6)),
            _injector("instructions", (1500, 2400)),
            _merge(("customers_create", "customers_update", "customers_delete"), 520, mixes=True),
            _merge(
                ("charges_list", "invoices_list", "payouts_list", "disputes_list"), 900, wide=True
            ),
            _jit(True),
            FindingSpec(
                "auth_audit", "auth_scope", "customers_delete", {"scope": "write:all"}, (1,), 0.5
            ),
        ),
    ),
    ServerSpec(
        name="shell-tools",
        versions=("0.9.0", "1.0.0", "1.1.0"),
        transport="phases",
        tools=tuple(tool for tools in SHELL_PHASES.values() for tool in tools),
        phases=SHELL_PHASES,
        noise=True,
        tokens_per_tool=(160, 420),
        growth=0.9,
        findings=(
            _smell("kill_process", "missing_description", (0,), words=0),
            _smell("run_command", "deep_nesting", depth=4),
            _labeled("show me what is in /tmp", "list_dir", (0.6, 0.8, 1.0)),
            _labeled("stop the runaway job", "kill_process", (0.4, 0.6, 0.8)),
            _distraction("translate 'hello' into French", ("run_command",), (0.6, 0.4, 0.2)),
            _injector("resources", 450),
            FindingSpec(
                "mcp_checkup",
                "duplicate",
                ("list_dir", "list_processes"),
                {"source": "mcp-checkup"},
                (1, 2),
                0.6,
            ),
            _merge(("read_file", "write_file"), 210, mixes=True),
            _jit(False),
        ),
        # The first version was graded without the consolidate probe.
        not_run={0: ("consolidate",)},
    ),
)
EXTRA_SERVERS: tuple[ServerSpec, ...] = (
    ServerSpec(
        name="calc-lite",
        versions=("1.0.0", "1.1.0"),
        transport="tools-json",
        tools=("add", "multiply", "evaluate"),
        phases=None,
        noise=False,
        tokens_per_tool=(60, 140),
        growth=1.0,
        findings=(_smell("evaluate", "tiny_description", (0,), words=1), _jit(False)),
        run_id={1: "calc-lite-1.1.0-rerun"},
    ),
)
XRAY_TOOL_VERSION = "1.5.0"
INPUT_PRICE_PER_MTOK = 3.0
NOISE_MODEL = "claude-sonnet-4-5"


def _resolve(value: Any, version: int, tools: Sequence[str]) -> Any:
    if isinstance(value, tuple):
        return value[version]
    if value == ALL_TOOLS:
        return len(tools)
    return value


def _spec_findings(spec: ServerSpec, version: int, ran: Sequence[str]) -> list[dict[str, Any]]:
    findings = []
    for item in spec.findings:
        if (item.versions is not None and version not in item.versions) or (
            item.probe in {"consolidate", "noise", "mcp_checkup", "result_size"}
            and item.probe not in ran
        ):
            continue
        target: Any = (
            list(spec.tools)
            if item.target == ALL_TOOLS
            else list(item.target)
            if isinstance(item.target, tuple)
            else item.target
        )
        findings.append(
            {
                "probe": item.probe,
                "kind": item.kind,
                "target": target,
                "measurement": {
                    key: _resolve(value, version, spec.tools)
                    for key, value in item.measurement.items()
                },
                "severity": 0.0,
                "confidence": item.confidence,
                "detail": dict(item.detail or {}),
            }
        )
    return findings


def _tool_tokens(spec: ServerSpec, version: int, seed: int, server_index: int) -> dict[str, int]:
    rng = np.random.default_rng([seed, 2, server_index])
    low, high = spec.tokens_per_tool
    base = rng.integers(low, high, len(spec.tools))
    scaled = np.round(base * spec.growth**version).astype(np.int64)
    return dict(zip(spec.tools, (int(v) for v in scaled), strict=True))


def _token_findings(
    spec: ServerSpec,
    tokens: Mapping[str, int],
    authoritative: bool,
    backend: str,
    model: str | None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Surface, phase and per-tool token_cost findings, and the headline's phase fields."""
    union_total = sum(tokens.values())
    tools = [
        {
            "probe": "static_hygiene",
            "kind": "token_cost",
            "target": name,
            "measurement": {
                "scope": "tool",
                "tokens": count,
                "share": round(count / union_total, 3),
                "authoritative": authoritative,
                "backend": backend,
                **(
                    {"phases": [p for p, ts in spec.phases.items() if name in ts]}
                    if spec.phases
                    else {}
                ),
            },
            "severity": 0.0,
            "confidence": 0.7,
            "detail": {},
        }
        for name, count in tokens.items()
    ]
    common = {"authoritative": authoritative, "backend": backend}
    if spec.phases is None:
        surface = {
            "probe": "static_hygiene",
            "kind": "token_cost",
            "target": list(spec.tools),
            "measurement": {
                "scope": "surface",
                "tokens": union_total,
                "tool_count": len(spec.tools),
                "tokens_per_tool_avg": round(union_total / len(spec.tools), 1),
                **common,
                "model": model,
            },
            "severity": 0.0,
            "confidence": 0.7,
            "detail": {"empty_baseline": 3, "full": union_total + 3},
        }
        headline: dict[str, Any] = {
            "phased": False,
            "worst_phase": None,
            "phase_tokens": None,
            "union_tool_count": None,
            "carried_tools": None,
        }
        return [surface, *tools], headline
    phase_tokens = {phase: sum(tokens[t] for t in ts) for phase, ts in spec.phases.items()}
    worst = max(phase_tokens, key=lambda phase: phase_tokens[phase])
    phases = [
        {
            "probe": "phase_surface",
            "kind": "token_cost",
            "target": list(ts),
            "measurement": {
                "scope": "phase",
                "phase": phase,
                "tokens": phase_tokens[phase],
                "tool_count": len(ts),
                "tokens_per_tool_avg": round(phase_tokens[phase] / len(ts), 1),
                **common,
            },
            "severity": 0.0,
            "confidence": 0.7,
            "detail": {},
        }
        for phase, ts in spec.phases.items()
    ]
    worst_tools = spec.phases[worst]
    surface = {
        "probe": "phase_surface",
        "kind": "token_cost",
        "target": sorted(worst_tools),
        "measurement": {
            "scope": "surface",
            "tokens": phase_tokens[worst],
            "tool_count": len(worst_tools),
            "tokens_per_tool_avg": round(phase_tokens[worst] / len(worst_tools), 1),
            **common,
            "model": model,
            "phased": True,
            "worst_phase": worst,
        },
        "severity": 0.0,
        "confidence": 0.7,
        "detail": {
            "phases": phase_tokens,
            "note": "per-turn tax = worst phase; union never co-loaded",
        },
    }
    headline = {
        "phased": True,
        "worst_phase": worst,
        "phase_tokens": phase_tokens,
        "union_tool_count": len(spec.tools),
        "carried_tools": [],
    }
    return [surface, *phases, *tools], headline


def _coverage(spec: ServerSpec, version: int) -> tuple[list[str], list[dict[str, Any]]]:
    probes = {
        item.probe for item in spec.findings if item.versions is None or version in item.versions
    }
    ran = ["static_hygiene", "consolidate"]
    ran += ["noise"] if spec.noise else []
    ran += [probe for probe in ("mcp_checkup", "result_size") if probe in probes]
    not_run = set((spec.not_run or {}).get(version, ()))
    ran = [probe for probe in ran if probe not in not_run]
    skipped: list[dict[str, Any]] = [
        {"probe": probe, "missing": ["disabled"]} for probe in sorted(not_run)
    ]
    if not spec.noise:
        skipped.append({"probe": "noise", "missing": ["api_key", "llm"]})
    skipped += [
        {"probe": probe, "missing": ["config_path"]}
        for probe in ("mcp_checkup", "token_analyzer")
        if probe not in ran
    ]
    return ran, skipped


def build_report(spec: ServerSpec, version: int, seed: int, server_index: int) -> dict[str, Any]:
    """One mcp-xray report.json for one version of a server, graded as mcp-xray grades."""
    name, server_version = spec.name, spec.versions[version]
    backend = "anthropic" if spec.noise else "offline"
    model = NOISE_MODEL if spec.noise else None
    ran, skipped = _coverage(spec, version)
    tokens = _tool_tokens(spec, version, seed, server_index)
    token_findings, phase_headline = _token_findings(spec, tokens, spec.noise, backend, model)
    findings = token_findings + _spec_findings(spec, version, ran)
    grade = _xray_grade(findings, ran)
    per_turn = token_findings[0]["measurement"]["tokens"]
    generated = EPOCH + timedelta(
        days=(seed % 50) + server_index * 3 + version * 30, minutes=17 * server_index
    )
    report: dict[str, Any] = {
        "tool": "mcp-xray",
        "version": XRAY_TOOL_VERSION,
        "generated_at": generated.isoformat(),
        "server": {
            "name": name,
            "version": server_version,
            "transport": spec.transport,
            "source": "+".join(spec.phases) if spec.phases else f"servers/{name}.json",
            "fingerprint": hashlib.sha256(f"{seed}:{name}@{server_version}".encode()).hexdigest()[
                :16
            ],
            "tool_count": len(spec.tools),
        },
        "grade": grade,
        "headline": {
            "surface_tokens_per_turn": per_turn,
            "est_cost_per_1k_turns_usd": round(per_turn * INPUT_PRICE_PER_MTOK / 1000, 2),
            "input_price_per_mtok": INPUT_PRICE_PER_MTOK,
            "input_price_known": False,
            "price_source": "built-in",
            "authoritative": spec.noise,
            "token_backend": backend,
            "model": model,
            **phase_headline,
        },
        "coverage": {"ran": ran, "skipped": skipped, "available": ["inventory"]},
        "llm": {
            "model": model,
            "token_backend": backend,
            "behavioral_probe": spec.noise,
            "samples": 5 if spec.noise else None,
        },
        "findings": findings,
    }
    if spec.run_id and version in spec.run_id:
        report["run_id"] = spec.run_id[version]
    return report


def sample_reports(seed: int) -> list[dict[str, Any]]:
    return [
        build_report(spec, version, seed, index)
        for index, spec in enumerate(SAMPLE_SERVERS)
        for version in range(len(spec.versions))
    ]


def extra_reports(seed: int) -> list[dict[str, Any]]:
    offset = len(SAMPLE_SERVERS)
    return [
        build_report(spec, version, seed, offset + index)
        for index, spec in enumerate(EXTRA_SERVERS)
        for version in range(len(spec.versions))
    ]


def _write_surface(out: Path, seed: int) -> list[Path]:
    written = []
    for report in sample_reports(seed):
        folder = f"{report['server']['name']}-{report['server']['version']}"
        text = json.dumps(report, indent=2, sort_keys=True) + "\n"
        written.append(_write_bytes(out / "surface" / folder / "report.json", text.encode()))
    lines = [
        json.dumps(report, sort_keys=True, separators=(",", ":")) for report in extra_reports(seed)
    ]
    written.append(
        _write_bytes(out / "surface" / "extra.jsonl", ("\n".join(lines) + "\n").encode())
    )
    return written


def write_sample(out: Path, seed: int = 7) -> list[Path]:
    """Write the whole deterministic sample under ``out``; returns the files written."""
    flat = sample_task_flat(seed)
    return [*_write_tasks(out, flat), _write_bad(out, flat), *_write_surface(out, seed)]


# ---------------------------------------------------------------------------
# Bulk generation for benchmarks, scale and comparison tests.
# ---------------------------------------------------------------------------
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
    known = _known_ids(pl.col("project"), pl.format("a{}", code), pl.col("known"), frame)
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
        *pl.DataFrame(_uniform_columns(rng, n)).get_columns(),
        *pl.DataFrame(_cost_columns(rng, n)).get_columns(),
    )
    return runs.with_columns(
        *_skill_drivers(),
        pl.format("{}-{}-{}-t{}", "agent", "agent_version", "problem_id", "trial").alias("run_id"),
        _graded_at(pl.col("seconds"), pl.col("utc_offset")).alias("graded_at"),
    ).with_columns(*_audit_drivers())


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
                *pl.DataFrame(_uniform_columns(rng, n)).get_columns(),
                *pl.DataFrame(_cost_columns(rng, n)).get_columns(),
                pl.lit(1.0).alias("precision"),
                pl.col("quality").alias("recall"),
                (pl.col("known") * pl.col("quality")).floor().cast(pl.Int64).alias("audit_found"),
                pl.lit(0, dtype=pl.Int64).alias("audit_duplicates"),
                pl.lit(0, dtype=pl.Int64).alias("audit_non_crashers"),
            ).with_columns(
                pl.col("audit_found").alias("audit_submissions"),
                pl.format("{}-{}-{}-t{}", "agent", "agent_version", "problem_id", "trial").alias(
                    "run_id"
                ),
                _graded_at(
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
