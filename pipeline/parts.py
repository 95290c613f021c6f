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
from schemas import polars_schema
from schemas.registry import SCORED

MANIFESTS = "_parts"
LEDGER = "ledger"
# Schema-only files earlier warehouses wrote into the lake so globs matched; not parts.
EMPTY_STEM = "empty"
# The landed tables whose rows name the input file they came from.
SOURCED_TABLES = ("task_runs", "surface_runs", "quarantine")


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


def _missing_columns(path: Path) -> list[str]:
    """Columns the score table's model has and the file lacks (none for an unknown table)."""
    model = SCORED.get(path.parent.name)
    if model is None:
        return []
    try:
        present = set(pq.read_schema(path).names)
    except (OSError, ValueError, pa.ArrowException):
        return []
    return [name for name in polars_schema(model) if name not in present]


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


@dataclass
class Survey:
    """What is wrong with the lake's parts, found without changing anything."""

    manifests: dict[str, dict[str, Any] | None]
    broken: dict[str, str]
    # Landed files of parts that have no manifest at all (deleted by hand, say).
    orphans: dict[str, list[Path]]
    # Landed files of broken parts, and score files of no part that is whole.
    strays: list[Path]
    unreadable_scores: list[Path]
    # Score files an older version wrote, lacking columns the views now read.
    outdated_scores: list[tuple[Path, list[str]]] = field(default_factory=list)


def _rebuilt_manifest(files: list[Path]) -> dict[str, Any] | None:
    """The manifest of an orphaned part, read back from its files; None if one is unreadable."""
    tables: dict[str, int] = {}
    sources: set[str] = set()
    for path in files:
        rows = _rows(path)
        if rows is None:
            return None
        tables[path.parent.name] = rows
        if path.parent.name in SOURCED_TABLES:
            column = pq.read_table(path, columns=["source"]).column("source")
            sources.update(str(s) for s in column.unique().to_pylist())
    return manifest(tables, sorted(sources))


def survey(lake: Path) -> Survey:
    directory = lake / MANIFESTS
    manifests: dict[str, dict[str, Any] | None] = (
        {path.stem: lk.read_json(path, None) for path in sorted(directory.glob("*.json"))}
        if directory.is_dir()
        else {}
    )
    broken: dict[str, str] = {}
    for part, document in manifests.items():
        problem = _part_problem(lake, part, document) if document else f"part {part}: bad manifest"
        if problem:
            broken[part] = problem
    orphans: dict[str, list[Path]] = {}
    strays: list[Path] = []
    for table in lk.LANDED_TABLES:
        for path in lk.parquet_files(lk.table_dir(lake, table)):
            if path.stem == EMPTY_STEM or (path.stem in manifests and path.stem not in broken):
                continue
            if path.stem in broken:
                strays.append(path)
            else:
                orphans.setdefault(path.stem, []).append(path)
    whole = (set(manifests) - set(broken)) | set(orphans)
    unreadable: list[Path] = []
    outdated: list[tuple[Path, list[str]]] = []
    for path in _score_files(lake):
        if path.stem == EMPTY_STEM:
            continue
        # Per-part score tables follow their part; a per-rubric table (version_regressions)
        # has no part and is rebuilt with the rubric's scores, so only its readability counts.
        if path.parent.name not in lk.RUBRIC_TABLES and path.stem not in whole:
            strays.append(path)
        elif _rows(path) is None:
            unreadable.append(path)
        elif missing := _missing_columns(path):
            outdated.append((path, missing))
    return Survey(manifests, broken, orphans, strays, unreadable, outdated)


def part_problems(lake: Path) -> list[str]:
    """Every problem ``check_and_repair`` would mend, as lines, changing nothing."""
    found = survey(lake)
    return (
        list(found.broken.values())
        + [
            f"part {part} has no manifest ({len(files)} files)"
            for part, files in found.orphans.items()
        ]
        + [f"{path} belongs to no whole part" for path in found.strays]
        + [f"{path} is not a readable Parquet file" for path in found.unreadable_scores]
        + [f"{path} lacks {', '.join(missing)}" for path, missing in found.outdated_scores]
    )


def check_and_repair(lake: Path) -> Repair:
    """Mend what ``survey`` finds; see the module docstring. Every change gets a note."""
    repair = Repair()
    found = survey(lake)
    broken = dict(found.broken)
    rebuilt: dict[str, dict[str, Any]] = {}
    lost_sources: set[str] = set()
    doomed = found.strays + found.unreadable_scores + [path for path, _ in found.outdated_scores]
    for part, files in found.orphans.items():
        document = _rebuilt_manifest(files)
        if document is None:
            broken[part] = f"part {part} has no manifest and a file that cannot be read"
            doomed.extend(files)
        else:
            rebuilt[part] = document
            repair.problems.append(
                f"part {part} had no manifest; rebuilt from its {len(files)} files "
                f"({sum(document['tables'].values())} rows)"
            )
    repair.problems.extend(
        f"{path} is not a readable Parquet file; it is scored again"
        for path in found.unreadable_scores
    )
    # Written before the score table gained columns: the views would lack them.
    repair.problems.extend(
        f"{path} lacks {', '.join(missing)} (an older version wrote it); it is scored again"
        for path, missing in found.outdated_scores
    )
    if not broken and not doomed and not rebuilt:
        return repair
    for part in broken:
        lost_sources.update((found.manifests.get(part) or {}).get("sources", []))
    ledger: dict[str, dict[str, Any]] = lk.read_json(lk.state_path(lake, LEDGER), {})
    with lk.Transaction(lake) as tx:
        for path in doomed:
            tx.delete(path)
        for part in broken:
            tx.delete(manifest_path(lake, part))
        for part, document in rebuilt.items():
            tx.write_json(manifest_path(lake, part), document)
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
