"""A part is whole or it is not there.

Each ingested chunk ("part") writes one file per landed table and a manifest
(``_parts/<part>.json``: every file it wrote, with its row count, and the
input files its rows came from) in the same transaction. Before any work the
pipeline checks every part against its manifest: a part with a file deleted
or corrupted by hand is removed whole (its scores under every rubric too), and
its input files are dropped from the nightly ledger, so the next run lands
them again completely instead of beside half of them. Score files are checked
too; a bad one is removed and scored again as new.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline import lake as lk

MANIFESTS = "_parts"
LEDGER = "ledger"
# The schema-only files the warehouse keeps so globs match; not parts.
EMPTY_STEM = "empty"


@dataclass
class Repair:
    removed_parts: list[str] = field(default_factory=list)
    removed_files: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def manifest_path(lake: Path, part: str) -> Path:
    return lake / MANIFESTS / f"{part}.json"


def manifest(tables: dict[str, int], sources: list[str]) -> dict[str, Any]:
    return {"tables": tables, "sources": sorted(set(sources))}


def _rows(path: Path) -> int | None:
    """Rows in a Parquet file by its footer, or None when it cannot be read."""
    try:
        rows: int = pq.read_metadata(path).num_rows
    except (OSError, ValueError, pa.ArrowException):
        return None
    return rows


def _part_problem(lake: Path, part: str, document: dict[str, Any]) -> str | None:
    for table, rows in document["tables"].items():
        path = lk.table_dir(lake, table) / f"{part}.parquet"
        if not path.exists():
            return f"part {part}: {path} is missing"
        found = _rows(path)
        if found is None:
            return f"part {part}: {path} is not a readable Parquet file"
        if found != rows:
            return f"part {part}: {path} holds {found} rows, its manifest says {rows}"
    return None


def _score_files(lake: Path) -> list[Path]:
    root = lake / "scores"
    return sorted(root.glob("*/*/*.parquet")) if root.is_dir() else []


def check_and_repair(lake: Path) -> Repair:
    """Remove broken parts and unreadable score files; see the module docstring."""
    repair = Repair()
    manifests = {
        path.stem: lk.read_json(path, None)
        for path in sorted((lake / MANIFESTS).glob("*.json"))
        if (lake / MANIFESTS).is_dir()
    }
    broken: dict[str, str] = {}
    for part, document in manifests.items():
        problem = _part_problem(lake, part, document) if document else f"part {part}: bad manifest"
        if problem:
            broken[part] = problem
    whole = set(manifests) - set(broken)
    doomed: list[Path] = []
    for table in lk.LANDED_TABLES:
        for path in lk.parquet_files(lk.table_dir(lake, table)):
            if path.stem != EMPTY_STEM and path.stem not in whole:
                doomed.append(path)
    for path in _score_files(lake):
        if path.stem == EMPTY_STEM:
            continue
        # Per-part score tables follow their part; a per-rubric table (version_regressions)
        # has no part and is rebuilt with the rubric's scores, so only its readability counts.
        if path.parent.name not in lk.RUBRIC_TABLES and path.stem not in whole:
            doomed.append(path)
        elif _rows(path) is None:
            doomed.append(path)
            repair.problems.append(f"{path} is not a readable Parquet file; it is scored again")
    if not broken and not doomed:
        return repair
    ledger: dict[str, dict[str, Any]] = lk.read_json(lk.state_path(lake, LEDGER), {})
    lost_sources = {s for part in broken for s in (manifests[part] or {}).get("sources", [])}
    with lk.Transaction(lake) as tx:
        for path in doomed:
            tx.delete(path)
        for part in broken:
            tx.delete(manifest_path(lake, part))
        if lost_sources and ledger:
            kept = {k: v for k, v in ledger.items() if v.get("path") not in lost_sources}
            tx.write_json(lk.state_path(lake, LEDGER), kept)
    repair.removed_parts = sorted(broken)
    repair.removed_files = [str(p) for p in doomed]
    repair.problems.extend(
        f"{problem}; the part was removed whole and its input files will be read again"
        for problem in broken.values()
    )
    return repair
