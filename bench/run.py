"""``make bench``: N generated task runs through ingest and rescoring, against their floors.

    python -m bench.run --n 100000 [--seed 1] [--sample 20000] [--engine local|spark]
                        [--workdir DIR] [--keep] [--out bench/out]

Every stage runs in its own process (``bench.stages``), in this order, on the
same files: generate the JSON Lines; Polars' bare ``read_ndjson`` of them; the
hand-written DuckDB peer (``bench/peers/duckdb_run.py``); ``jobs.ingest`` into a
fresh lake (what ``pipeline run`` does: ingest, score, warehouse); a bare DuckDB
scan of the Parquet columns scoring reads; the hand-written Polars rescoring
(``bench/peers/polars_rescore.py``); ``jobs.score`` (a full rescore, warehouse
included); the plain-Python scorer on a sample, extrapolated to N; then
``python -m pipeline --help`` against ``python -c "import polars, duckdb"``. ``score`` and
the Polars peer are also timed as whole commands, under the same rubric and under one
whose penalty scale is halved (``score`` on a fresh copy of the lake each time).
Two tables come out, the stages and the issue-16 goals against the peers, on the
terminal and as ``<out>/results-<N>.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.tables import Column, fill_table, markdown_table
from pipeline.core.stages import AWAITED
from tools.simulate import ENV_TYPES

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO_ROOT / "bench" / "out"
MIN_N, MAX_N = 10_000, 10_000_000
# Goals from issue 5: "rescoring within 2x of the bare scan, ingest within 2x of the bare read".
INGEST_GOAL_RATIO = 2.0
RESCORE_GOAL_RATIO = 2.0
# Issue 5: "10 million task runs ... rescore with peak memory under 4 GiB".
RESCORE_PEAK_GOAL_BYTES = 4 * 1024**3
GIB = 1024**3
MB = 1_000_000
# Issue 16: "run within 1.2x of a hand-written DuckDB script", "score within 1.2x of a
# hand-written Polars rescoring", "python -m pipeline --help under 0.5 s".
RUN_PEER_GOAL_RATIO = 1.2
SCORE_PEER_GOAL_RATIO = 1.2
HELP_GOAL_SECONDS = 0.5
# Start-up times are a second or less and the machine is shared: the median of a few.
STARTUP_REPEATS = 5
HELP_COMMAND = ("-m", "pipeline", "--help")
IMPORT_COMMAND = ("-c", "import polars, duckdb")


@dataclass
class Row:
    stage: str
    what: str
    seconds: float
    mb_per_s: float | None
    runs_per_s: float | None
    versus: str
    ratio: float | None
    goal: str
    peak_rss_gib: float


def run_stage(stage: str, params: dict[str, Any]) -> dict[str, Any]:
    """Run one stage in a fresh interpreter; its last stdout line is its result."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    env.pop("FORCE_COLOR", None)
    completed = subprocess.run(
        [sys.executable, "-m", "bench.stages", stage, json.dumps(params)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        raise RuntimeError(
            f"bench stage {stage} failed (exit {completed.returncode}):\n{completed.stderr[-4000:]}"
        )
    lines = completed.stdout.strip().splitlines()
    result: dict[str, Any] = json.loads(lines[-1])
    return result


# Whole commands are timed a few times, alternating with their peer: a second or two each.
COMMAND_REPEATS = 3


def time_alternating(
    commands: dict[str, tuple[str, ...]],
    repeats: int = COMMAND_REPEATS,
    prepare: dict[str, Callable[[], object]] | None = None,
) -> dict[str, dict[str, Any]]:
    """The median wall time of each ``python ARGS`` as a whole process (start-up, imports
    and exit included, as a user's shell times it), run in turn so that a change in the
    machine's load falls on each alike. ``prepare[name]``, untimed, runs before each of that
    command's runs (a fresh copy of what the command changes)."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeats):
        for name, args in commands.items():
            (prepare or {}).get(name, lambda: None)()
            started = time.perf_counter()
            subprocess.run(
                [sys.executable, *args], cwd=REPO_ROOT, env=env, capture_output=True, check=True
            )
            times[name].append(time.perf_counter() - started)
    return {
        name: {"seconds": statistics.median(spent), "all_seconds": spent, "peak_rss": 0}
        for name, spent in times.items()
    }


# The rubric change a nightly meets (every score moves, so every score file is rewritten and
# the warehouse reloads them): the penalty scale of the rubric the bench ran under, halved.
PENALTY_SCALE_LINE = re.compile(r"^(penalty_scale\s*=\s*)(\S+)", re.MULTILINE)


def changed_rubric(base: Path, out: Path) -> Path:
    """``base`` (a complete rubric file, as rubrics/default.toml) with its penalty scale
    halved, written to ``out``."""
    text = base.read_text()
    found = PENALTY_SCALE_LINE.search(text)
    if found is None:
        raise ValueError(f"{base}: no penalty_scale line to change")
    halved = float(found.group(2)) / 2
    out.write_text(PENALTY_SCALE_LINE.sub(lambda m: f"{m.group(1)}{halved!r}", text, count=1))
    return out


def score_commands(
    lake: Path, landed: Path, peer_out: Path, rubric: Path | None, suffix: str
) -> dict[str, tuple[str, ...]]:
    """``pipeline score`` over ``lake`` and the Polars peer over ``landed``'s tables, both
    under ``rubric`` (None: the lake's), named ``score_<suffix>`` and
    ``polars_peer_<suffix>``."""
    chosen = ("--rubric", str(rubric)) if rubric else ()
    return {
        f"score_{suffix}": ("-m", "pipeline", "score", "--lake", str(lake), *chosen),
        f"polars_peer_{suffix}": (
            *("-m", "bench.peers.polars_rescore", str(landed), str(peer_out)),
            *chosen,
        ),
    }


def fresh_copy(source: Path, target: Path) -> Callable[[], None]:
    """A ``prepare`` step: ``target`` made a new copy of ``source``."""

    def copy() -> None:
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(source, target)

    return copy


@dataclass
class PeerRow:
    work: str
    pipeline: str
    pipeline_seconds: float
    pipeline_peak_gib: float | None
    peer: str
    peer_seconds: float
    peer_peak_gib: float | None
    ratio: float | None
    goal: str


def _ratio(ours: float, theirs: float) -> float | None:
    return ours / theirs if theirs > 0 else None


def _versus(
    work: str, ours: tuple[str, dict[str, Any]], peer: tuple[str, dict[str, Any]], limit: float
) -> PeerRow:
    """One goal's row: (name, stage result) of the pipeline and of its peer; a stage timed
    as a whole command has no peak (``peak_rss`` 0)."""

    def peak(result: dict[str, Any]) -> float | None:
        return result["peak_rss"] / GIB if result["peak_rss"] else None

    ratio = _ratio(ours[1]["seconds"], peer[1]["seconds"])
    return PeerRow(
        work,
        ours[0],
        ours[1]["seconds"],
        peak(ours[1]),
        peer[0],
        peer[1]["seconds"],
        peak(peer[1]),
        ratio,
        _goal(ratio, limit),
    )


def peer_rows(ingested: int, results: dict[str, dict[str, Any]]) -> list[PeerRow]:
    """Issue 16's goals: each pipeline command next to the hand-written script it must
    stay near, measured in the same bench run."""
    # (what, the pipeline's stage and name, the peer's stage and name, the goal's ratio)
    goals = (
        (
            f"ingest + score, {ingested:,} runs",
            ("ingest", "pipeline run (jobs.ingest)"),
            ("duckdb_peer", "DuckDB read_json script"),
            RUN_PEER_GOAL_RATIO,
        ),
        (
            "rescore every landed run",
            ("rescore", "pipeline score (jobs.score)"),
            ("polars_peer", "Polars rescoring script"),
            SCORE_PEER_GOAL_RATIO,
        ),
        (
            f"the same as commands (whole processes, median of {COMMAND_REPEATS})",
            ("score_command", "python -m pipeline score"),
            ("polars_peer_command", "python -m bench.peers.polars_rescore"),
            SCORE_PEER_GOAL_RATIO,
        ),
        (
            # PENALTY_SCALE_LINE: every score file rewritten, the warehouse's scores reloaded.
            "rescore under a changed rubric, as commands",
            ("score_rubric_change", "python -m pipeline score --rubric CHANGED"),
            ("polars_peer_rubric_change", "python -m bench.peers.polars_rescore --rubric CHANGED"),
            SCORE_PEER_GOAL_RATIO,
        ),
    )
    rows = [
        _versus(work, (ours, results[our_stage]), (peer, results[peer_stage]), limit)
        for work, (our_stage, ours), (peer_stage, peer), limit in goals
        if our_stage in results and peer_stage in results
    ]
    if "help" in results and "import" in results:
        help_s, import_s = results["help"]["seconds"], results["import"]["seconds"]
        met = "met" if help_s < HELP_GOAL_SECONDS else "missed"
        rows.append(
            PeerRow(
                "start-up",
                "python -m pipeline --help",
                help_s,
                None,
                'python -c "import polars, duckdb"',
                import_s,
                None,
                _ratio(help_s, import_s),
                f"{met} (<{HELP_GOAL_SECONDS:g} s)",
            )
        )
    return rows


PEER_COLUMNS = (
    Column("work", "work"),
    Column("pipeline", "pipeline"),
    Column("s", "pipeline_seconds", ".2f"),
    Column("peak GiB", "pipeline_peak_gib", ".2f"),
    Column("peer", "peer"),
    Column("s", "peer_seconds", ".2f"),
    Column("peak GiB", "peer_peak_gib", ".2f"),
    Column("ratio", "ratio", ".2f", "x"),
    Column("goal", "goal"),
)


def peer_markdown(rows: list[PeerRow]) -> list[str]:
    if not rows:
        return []
    return [
        "Against the hand-written peers (issue 16), same run:",
        "",
        *markdown_table(PEER_COLUMNS, rows),
        "",
    ]


def _rate(amount: float, seconds: float) -> float | None:
    return amount / seconds if seconds > 0 else None


def _goal(ratio: float | None, limit: float) -> str:
    if ratio is None:
        return "-"
    return f"{'met' if ratio <= limit else 'missed'} (≤{limit:g}x)"


def build_rows(
    n: int, ingested: int, size_bytes: int, results: dict[str, dict[str, Any]]
) -> list[Row]:
    """The one table: each measured stage next to the floor it is compared with."""
    read, ingest = results["polars_read"], results["ingest"]
    scan, rescore, python = results["duckdb_scan"], results["rescore"], results["python_scorer"]
    mb = size_bytes / MB
    ingest_ratio = ingest["seconds"] / read["seconds"] if read["seconds"] else None
    rescore_ratio = rescore["seconds"] / scan["seconds"] if scan["seconds"] else None
    python_total = python["seconds"] * n / max(python["sample"], 1)
    python_ratio = python_total / rescore["seconds"] if rescore["seconds"] else None
    rescore_peak_ok = rescore["peak_rss"] < RESCORE_PEAK_GOAL_BYTES
    return [
        Row(
            "ingest",
            "jobs.ingest" + ("" if ingested == n else f", {ingested:,} runs"),
            ingest["seconds"],
            _rate(mb, ingest["seconds"]),
            _rate(ingested, ingest["seconds"]),
            "bare read",
            ingest_ratio,
            _goal(ingest_ratio, INGEST_GOAL_RATIO),
            ingest["peak_rss"] / GIB,
        ),
        Row(
            "bare read",
            ("pl.scan_ndjson, batches" if read.get("batched") else "pl.read_ndjson")
            + ("" if ingested == n else f", {ingested:,} runs"),
            read["seconds"],
            _rate(mb, read["seconds"]),
            _rate(ingested, read["seconds"]),
            "-",
            None,
            "-",
            read["peak_rss"] / GIB,
        ),
        Row(
            "rescore",
            f"jobs.score full, {rescore.get('engine', 'local')}",
            rescore["seconds"],
            None,
            _rate(n, rescore["seconds"]),
            "bare scan",
            rescore_ratio,
            _goal(rescore_ratio, RESCORE_GOAL_RATIO)
            + f", peak {'<' if rescore_peak_ok else '≥'}4 GiB",
            rescore["peak_rss"] / GIB,
        ),
        Row(
            "bare scan",
            "DuckDB scan, same columns",
            scan["seconds"],
            None,
            _rate(n, scan["seconds"]),
            "-",
            None,
            "-",
            scan["peak_rss"] / GIB,
        ),
        Row(
            "python",
            f"score_record x {python['sample']:,}, scaled",
            python_total,
            None,
            _rate(n, python_total),
            "rescore",
            python_ratio,
            "-",
            python["peak_rss"] / GIB,
        ),
        *(
            [
                Row(
                    "query",
                    "by_agent, warehouse read-only",
                    query["seconds"],
                    None,
                    _rate(n, query["seconds"]),
                    "-",
                    None,
                    "-",
                    query["peak_rss"] / GIB,
                )
            ]
            if (query := results.get("query"))
            else []
        ),
    ]


def rescore_breakdown(rescore: dict[str, Any]) -> str:
    """The local engine's rescoring seconds by stage; the rest is the transaction's
    commit, the lock, the repair check and the warehouse.

    Parts are scored side by side in workers (``pipeline.engines.local``): their plan and
    checks seconds are added up over the workers, and the caller's wall time is the
    seconds it awaited scores, its writes and the rest."""
    stages: dict[str, float] = dict(rescore.get("score_stages") or {})
    if not stages:
        return ""
    awaited = stages.pop(AWAITED, None)
    if awaited is None:
        rest = rescore["seconds"] - sum(stages.values())
        shown = {**stages, "rest": rest}
    else:
        rest = rescore["seconds"] - awaited - stages.get("writes", 0.0)
        workers = {name: value for name, value in stages.items() if name != "writes"}
        shown = {**workers, AWAITED: awaited, "writes": stages.get("writes", 0.0), "rest": rest}
    return ", ".join(f"{name} {value:.2f} s" for name, value in shown.items())


COLUMNS = (
    Column("stage", "stage"),
    Column("what", "what"),
    Column("s", "seconds", ".2f"),
    Column("MB/s", "mb_per_s", ".1f"),
    Column("runs/s", "runs_per_s", ",.0f"),
    Column("vs", "versus"),
    Column("ratio", "ratio", ".1f", "x"),
    Column("goal", "goal"),
    Column("peak RSS GiB", "peak_rss_gib", ".2f"),
)


def markdown(rows: list[Row], meta: dict[str, Any], peers: list[PeerRow] | None = None) -> str:
    ingested = (
        ""
        if meta["replicate"] == 1
        else f"; {meta['ingested']:,} ingested, the lake's parts then copied "
        f"{meta['replicate']}x (run ids prefixed)"
    )
    lines = [
        f"### N = {meta['n']:,} task runs ({meta['jsonl_mb']:.1f} MB of JSON Lines read, "
        f"{meta['components']:,} component rows scored{ingested}; env types "
        f"{', '.join(meta['env_types'])})",
        "",
        *markdown_table(COLUMNS, rows),
    ]
    lines += [
        "",
        *peer_markdown(peers or []),
        *(
            [f"Rescore, where the time went: {meta['rescore_breakdown']}.", ""]
            if meta.get("rescore_breakdown")
            else []
        ),
        f"Command: `{meta['command']}`; {meta['machine']}; {meta['when']}; "
        f"generating the file took {meta['generate_seconds']:.1f} s, the whole run "
        f"{meta['total_seconds']:.0f} s; load average {meta['load_average'][0]} before, "
        f"{meta['load_average'][1]} after.",
        "",
    ]
    return "\n".join(lines)


def print_peer_table(console: Console, rows: list[PeerRow]) -> None:
    table = Table(title="issue 16: the pipeline against hand-written peers, same run")
    console.print(fill_table(table, PEER_COLUMNS, rows))


def print_table(console: Console, rows: list[Row], meta: dict[str, Any]) -> None:
    table = Table(
        title=f"bench: N = {meta['n']:,} task runs, {meta['jsonl_mb']:.1f} MB JSON Lines",
        caption=f"peak RSS per stage process; {meta['machine']}",
    )
    console.print(fill_table(table, COLUMNS, rows))
    if meta.get("rescore_breakdown"):
        console.print(f"rescore: {meta['rescore_breakdown']}", highlight=False)


def _load() -> float:
    """The 1-minute load average: other work on the machine slows every stage."""
    return round(os.getloadavg()[0], 2)


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.run", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--n", type=int, default=100_000, help=f"task runs ({MIN_N:,}..{MAX_N:,})")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sample", type=int, default=20_000, help="records for the Python scorer")
    parser.add_argument("--engine", choices=("local", "spark"), default="local")
    parser.add_argument("--master", default="local[2]", help="Spark master URL (--engine spark)")
    parser.add_argument(
        "--replicate",
        type=int,
        default=1,
        metavar="K",
        help="generate and ingest N/K runs, then copy the landed parts K times "
        "(scan, rescore and Python scorer see N runs; ingest and bare read N/K)",
    )
    parser.add_argument(
        "--envs",
        default=",".join(ENV_TYPES),
        help="env types of the generated runs, in turn (default all four: 3.25 component "
        "rows per run; exploit,detect,patch: 4)",
    )
    parser.add_argument("--rubric", type=Path, default=None)
    parser.add_argument("--workdir", type=Path, default=None, help="default: a temp dir")
    parser.add_argument("--keep", action="store_true", help="keep the generated files and lake")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    if not MIN_N <= args.n <= MAX_N:
        parser.error(f"--n {args.n}: expected {MIN_N:,} to {MAX_N:,}")
    if args.replicate < 1 or args.n % args.replicate:
        parser.error(f"--replicate {args.replicate}: expected a divisor of --n {args.n}")
    args.env_types = [env for env in args.envs.split(",") if env]
    unknown = sorted(set(args.env_types) - set(ENV_TYPES))
    if unknown or not args.env_types:
        parser.error(f"--envs {args.envs}: expected some of {','.join(ENV_TYPES)}")
    if args.sample < 1:
        parser.error(f"--sample {args.sample}: expected at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    # Wide enough for the table in a pipe or CI log, where rich assumes 80 columns.
    console = Console(width=max(Console().width, 132))
    started = time.perf_counter()
    load_before = _load()
    workdir = Path(tempfile.mkdtemp(prefix="bench-", dir=args.workdir))
    try:
        jsonl, lake = workdir / "runs.jsonl", workdir / "lake"
        common: dict[str, Any] = {
            "jsonl": str(jsonl),
            "lake": str(lake),
            "peer_out": str(workdir / "peers"),
        }
        if args.rubric:
            common["rubric"] = str(args.rubric.resolve())
        results: dict[str, dict[str, Any]] = {}
        ingested = args.n // args.replicate
        plan: list[tuple[str, dict[str, Any]]] = [
            ("generate", {"n": ingested, "seed": args.seed, "env_types": args.env_types}),
            ("polars_read", {}),
            ("duckdb_peer", {}),
            ("ingest", {}),
            *([("replicate", {"copies": args.replicate})] if args.replicate > 1 else []),
            ("duckdb_scan", {}),
            ("polars_peer", {}),
            ("rescore", {"engine": args.engine, "master": args.master}),
            ("query", {}),
            ("python_scorer", {"sample": min(args.sample, ingested)}),
        ]
        for stage, extra in plan:
            console.print(f"[dim]bench: {stage} ...[/]", highlight=False)
            results[stage] = run_stage(stage, {**common, **extra})
            console.print(
                f"[dim]bench: {stage} {results[stage]['seconds']:.2f} s, "
                f"peak {results[stage]['peak_rss'] / GIB:.2f} GiB[/]",
                highlight=False,
            )
        if args.engine == "local":
            console.print("[dim]bench: score and its peer as commands ...[/]", highlight=False)
            rubric = Path(common["rubric"]) if "rubric" in common else None
            results |= time_alternating(
                score_commands(lake, lake, workdir / "peers" / "polars", rubric, "command")
            )
            console.print("[dim]bench: score under a changed rubric ...[/]", highlight=False)
            base = rubric or REPO_ROOT / "rubrics" / "default.toml"
            changed = changed_rubric(base, workdir / "changed.toml")
            copy = workdir / "lake-rubric-change"
            results |= time_alternating(
                score_commands(
                    copy, lake, workdir / "peers" / "polars-changed", changed, "rubric_change"
                ),
                # A lake of copies (10M runs) is copied once: each copy is gigabytes.
                repeats=1 if args.replicate > 1 else COMMAND_REPEATS,
                prepare={"score_rubric_change": fresh_copy(lake, copy)},
            )
            shutil.rmtree(copy, ignore_errors=True)
        console.print("[dim]bench: start-up times ...[/]", highlight=False)
        results |= time_alternating(
            {"help": HELP_COMMAND, "import": IMPORT_COMMAND}, repeats=STARTUP_REPEATS
        )
        results["rescore"]["engine"] = args.engine
        size = int(results["generate"]["bytes"])
        meta = {
            "n": args.n,
            "seed": args.seed,
            "sample": args.sample,
            "engine": args.engine,
            "jsonl_mb": size / MB,
            "components": int(results["duckdb_scan"]["task_components"]),
            "generate_seconds": results["generate"]["seconds"],
            "command": "python -m bench.run "
            + " ".join(argv if argv is not None else sys.argv[1:]),
            "machine": f"{os.cpu_count()} cores, {platform.python_implementation()} "
            f"{platform.python_version()}",
            "when": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "total_seconds": time.perf_counter() - started,
            "ingested": ingested,
            "replicate": args.replicate,
            "env_types": args.env_types,
            "load_average": [load_before, _load()],
        }
        meta["rescore_breakdown"] = rescore_breakdown(results["rescore"])
        rows = build_rows(args.n, ingested, size, results)
        peers = peer_rows(ingested, results)
        print_table(console, rows, meta)
        print_peer_table(console, peers)
        args.out.mkdir(parents=True, exist_ok=True)
        suffix = "" if args.engine == "local" else f"-{args.engine}"
        if args.env_types != list(ENV_TYPES):
            suffix += "-" + "-".join(args.env_types)
        md_path = args.out / f"results-{args.n}{suffix}.md"
        json_path = args.out / f"results-{args.n}{suffix}.json"
        md_path.write_text(markdown(rows, meta, peers))
        json_path.write_text(
            json.dumps(
                {
                    "meta": meta,
                    "rows": [asdict(r) for r in rows],
                    "peers": [asdict(r) for r in peers],
                    "stages": results,
                },
                indent=2,
            )
            + "\n"
        )
        console.print(f"wrote {md_path} and {json_path}", highlight=False)
    finally:
        if args.keep:
            console.print(f"kept {workdir}", highlight=False)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
