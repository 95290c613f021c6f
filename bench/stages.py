"""One benchmark stage per process: ``python -m bench.stages STAGE PARAMS_JSON``.

Each stage runs in a fresh interpreter so that its peak memory is its own: the
child reads its high-water mark (``VmHWM`` in ``/proc/self/status``, else
``ru_maxrss``) after the work and prints one JSON object as its last line.
Imports happen before the clock starts, so ``seconds`` is the work alone.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from collections.abc import Callable
from itertools import islice
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from pipeline.cli import printing
from pipeline.jobs import commands as jobs
from pipeline.rubric import Rubric, load_rubric, parse_rubric
from pipeline.storage import lake as lk
from pipeline.storage import parts
from pipeline.storage.store import LakeStore
from pipeline.tasks import keys as task_keys
from pipeline.warehouse import connect_read_only
from tools import simulate as sim

# Generating 10 million records in one frame would itself need ~20 GiB: the
# file is written in slices of this many runs, each with its own seed.
GENERATE_SLICE_RUNS = 1_000_000
# Above this, the bare read goes in batches (see polars_read).
BATCHED_READ_BYTES = 2 * 1024**3
SCAN_SQL = Path(__file__).resolve().parent / "scan_columns.sql"
# The landed tables and columns score_tasks reads: the bare scan reads exactly these.
SCANNED_COLUMNS = {
    "task_runs": task_keys.RUN_COLUMNS,
    "task_components": task_keys.COMPONENT_COLUMNS,
    "task_penalties": task_keys.PENALTY_COLUMNS,
}


def peak_rss_bytes() -> int:
    """This process's peak resident set size (VmHWM), in bytes."""
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    # Linux reports ru_maxrss in KiB.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _rubric(params: dict[str, Any]) -> Rubric:
    path = params.get("rubric")
    return load_rubric(Path(path)) if path else parse_rubric({})


def generate(params: dict[str, Any]) -> dict[str, Any]:
    """N valid task records as JSON Lines, written slice by slice (bounded memory)."""
    n, seed, path = int(params["n"]), int(params["seed"]), Path(params["jsonl"])
    env_types = tuple(params.get("env_types", sim.ENV_TYPES))
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as out:
        for index, start in enumerate(range(0, n, GENERATE_SLICE_RUNS)):
            size = min(GENERATE_SLICE_RUNS, n - start)
            flat = sim.generate_task_frame(size, seed + index, env_types)
            # Run ids repeat across slices (they name agent, version, problem,
            # trial): a slice prefix keeps every run id unique.
            flat = flat.with_columns(
                pl.format("s{}-{}", pl.lit(index), pl.col("run_id")).alias("run_id")
            )
            sim.write_flat_ndjson(flat, out)
            del flat
    return {"bytes": path.stat().st_size, "runs": n}


def polars_read(params: dict[str, Any]) -> dict[str, Any]:
    """Polars' bare ``read_ndjson`` of the same file: the floor for ingest.

    A file over ``BATCHED_READ_BYTES`` is read by the same reader in batches
    (``scan_ndjson(...).collect_batches()``, every column parsed), each dropped
    when counted: read whole, 10 million runs would need ~19 GiB.
    """
    path = Path(params["jsonl"])
    if path.stat().st_size <= BATCHED_READ_BYTES:
        return {"rows": pl.read_ndjson(path).height, "batched": False}
    rows = sum(batch.height for batch in pl.scan_ndjson(path).collect_batches())
    return {"rows": rows, "batched": True}


def ingest(params: dict[str, Any]) -> dict[str, Any]:
    report = jobs.ingest([Path(params["jsonl"])], Path(params["lake"]))
    return {
        "landed_task_runs": report.landed_task_runs,
        "quarantined": report.quarantined,
        "parts": len(report.parts),
    }


def duckdb_peer(params: dict[str, Any]) -> dict[str, Any]:
    """The hand-written DuckDB script (``bench/peers/duckdb_run.py``) on the same file."""
    from bench.peers import duckdb_run
    from bench.peers.rubric import DEFAULT_RUBRIC, load

    out = Path(params["peer_out"]) / "duckdb"
    duckdb_run.run(Path(params["jsonl"]), out, load(Path(params.get("rubric", DEFAULT_RUBRIC))))
    return {"runs": pl.scan_parquet(out / "runs.parquet").select(pl.len()).collect().item()}


def polars_peer(params: dict[str, Any]) -> dict[str, Any]:
    """The hand-written Polars rescoring (``bench/peers/polars_rescore.py``) of the lake."""
    from bench.peers import polars_rescore
    from bench.peers.rubric import DEFAULT_RUBRIC, load

    out = Path(params["peer_out"]) / "polars"
    polars_rescore.rescore(
        Path(params["lake"]), out, load(Path(params.get("rubric", DEFAULT_RUBRIC)))
    )
    return {"runs": pl.scan_parquet(out / "runs.parquet").select(pl.len()).collect().item()}


def replicate(params: dict[str, Any]) -> dict[str, Any]:
    """Copy every landed part ``copies - 1`` more times, run ids prefixed, manifests too.

    Ingesting 10 million runs takes about an hour on two cores; rescoring them
    is what must stay under 4 GiB. A lake of N runs is built from N / copies
    ingested ones, file by file, without changing what a part holds.
    """
    lake, copies = Path(params["lake"]), int(params["copies"])
    manifests = lake / parts.MANIFESTS
    originals = [p.stem for p in sorted(manifests.glob("*.json"))]
    written = 0
    for copy in range(1, copies):
        for part in originals:
            twin = f"{part}-r{copy:03d}"
            facts: dict[str, Any] = {}
            for table in lk.LANDED_TABLES:
                source = lk.table_dir(lake, table) / f"{part}.parquet"
                if not source.exists():
                    continue
                frame = pl.read_parquet(source)
                if "run_id" in frame.columns:
                    frame = frame.with_columns(
                        pl.format("r{}-{}", pl.lit(copy), pl.col("run_id")).alias("run_id")
                    )
                target = lk.table_dir(lake, table) / f"{twin}.parquet"
                lk.write_parquet_atomic(frame, target)
                facts[table] = parts.file_facts(target)
                written += 1
                del frame
            # The twin's own files' facts (hash, size, mtime): with the original's, every
            # twin fails its manifest check and is removed whole before scoring reads it.
            document = lk.read_json(manifests / f"{part}.json", None)
            if "files" in document:
                document = {**document, "files": facts}
            lk.write_json_atomic(document, manifests / f"{twin}.json")
    return {"files": written, "parts": len(originals) * copies}


def duckdb_scan(params: dict[str, Any]) -> dict[str, Any]:
    """A bare DuckDB scan of the Parquet columns scoring reads: the floor for rescoring.

    Every value of every column is hashed, so no column can be skipped or
    answered from the files' statistics.
    """
    lake = Path(params["lake"])
    files = {
        table: [str(p) for p in lk.parquet_files(lk.table_dir(lake, table))]
        for table in SCANNED_COLUMNS
    }
    con = duckdb.connect()
    try:
        con.execute(f"set threads = {int(params.get('threads', 2))}")
        row = con.execute(
            SCAN_SQL.read_text(),
            [files["task_runs"], files["task_components"], files["task_penalties"]],
        ).fetchone()
    finally:
        con.close()
    if row is None:
        raise RuntimeError("the scan query returned no row")
    return {"task_runs": row[0], "task_components": row[1], "task_penalties": row[2]}


def rescore(params: dict[str, Any]) -> dict[str, Any]:
    """``jobs.score``: a full rescore of every landed part, then the warehouse."""
    lake, rubric = Path(params["lake"]), _rubric(params)
    engine = params.get("engine", "local")
    if engine == "spark":
        return _rescore_spark(lake, rubric, str(params.get("master", "local[2]")))
    result = jobs.score(lake, rubric)
    return {
        "task_runs": result.task_runs,
        "parts": result.parts,
        "score_seconds": result.seconds,
        "score_stages": result.stages,
    }


def _rescore_spark(lake: Path, rubric: Rubric, master: str) -> dict[str, Any]:
    from pipeline.engines.spark import score_with_spark

    with lk.lake_lock(lake):
        lk.recover(lake)
        parts = LakeStore(lake).landed_parts("task_runs")
        with lk.Transaction(lake) as tx:
            counts = score_with_spark(lake, rubric, parts, tx, master=master)
    return {"task_runs": counts.get("task_scores", 0), "parts": len(parts)}


def python_scorer(params: dict[str, Any]) -> dict[str, Any]:
    """The plain-Python row-by-row scorer on the first ``sample`` records.

    Records are parsed before the clock starts: the pipeline's rescoring reads
    Parquet, not JSON, so only the scoring itself is compared.
    """
    from bench.python_scorer import score_records

    rubric = _rubric(params)
    with Path(params["jsonl"]).open("rb") as handle:
        # The baseline is row-by-row by definition; this loop is what it costs.
        records = [json.loads(line) for line in islice(handle, int(params["sample"]))]
    started = time.perf_counter()
    scored = score_records(records, rubric)
    return {"sample": len(scored), "score_seconds_inner": time.perf_counter() - started}


def query(params: dict[str, Any]) -> dict[str, Any]:
    """An analyst's first query (``make run`` suggests it) on the warehouse just built:
    by_agent aggregates every current score through the staging views."""
    with connect_read_only(Path(params["lake"])) as con:
        rows = con.execute(printing.FIRST_QUERY).fetchall()
    return {"rows": len(rows)}


STAGES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "generate": generate,
    "polars_read": polars_read,
    "ingest": ingest,
    "duckdb_peer": duckdb_peer,
    "polars_peer": polars_peer,
    "replicate": replicate,
    "duckdb_scan": duckdb_scan,
    "rescore": rescore,
    "python_scorer": python_scorer,
    "query": query,
}


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in STAGES:
        print(f"usage: python -m bench.stages {{{','.join(STAGES)}}} PARAMS_JSON", file=sys.stderr)
        return 2
    params: dict[str, Any] = json.loads(argv[1])
    started = time.perf_counter()
    result = STAGES[argv[0]](params)
    seconds = time.perf_counter() - started
    # python_scorer times its scoring only (parsing the sample is not scoring).
    seconds = float(result.pop("score_seconds_inner", seconds))
    # A stage's own children (Spark's JVM, once reaped) count too: the larger peak.
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    peak = max(peak_rss_bytes(), children)
    print(json.dumps({"stage": argv[0], "seconds": seconds, "peak_rss": peak, **result}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
