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

import hashlib
import json
from collections.abc import Collection
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.storage import lake as lk
from schemas import polars_schema
from schemas.registry import SCORED

MANIFESTS = "_parts"
LEDGER = "ledger"
# Schema-only files earlier warehouses wrote into the lake so globs matched; not parts.
EMPTY_STEM = "empty"
# The landed tables whose rows name the input file they came from.
SOURCED_TABLES = (*lk.RUN_TABLES, "quarantine")


@dataclass
class Repair:
    removed_parts: list[str] = field(default_factory=list)
    removed_files: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def manifest_path(lake: Path, part: str) -> Path:
    return lake / MANIFESTS / f"{part}.json"


def manifest(
    tables: dict[str, int], sources: list[str], files: dict[str, dict[str, Any]] | None = None
) -> dict[str, Any]:
    """A part's manifest: rows per table, the input files its rows came from, and per table
    the landed file's ``file_facts`` (so corruption inside a file is found)."""
    document: dict[str, Any] = {"tables": tables, "sources": sorted(set(sources))}
    if files:
        document["files"] = files
    return document


def file_facts(path: Path) -> dict[str, Any]:
    """What a manifest records of one landed file: its bytes' SHA-256, size and mtime."""
    with open(path, "rb") as handle:
        digest = hashlib.file_digest(handle, "sha256")
    stat = path.stat()
    return {"sha256": digest.hexdigest(), "bytes": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def _facts_problem(path: Path, facts: dict[str, Any], *, deep: bool) -> str | None:
    """How ``path`` differs from its manifest's facts. A file whose size and mtime are as
    landed is hashed only when ``deep`` (check, and before scoring reads it). A file whose
    only change is its mtime (a copied lake) gets the new mtime in ``facts``, so that it is
    hashed once, not on every run."""
    stat = path.stat()
    if stat.st_size != facts.get("bytes"):
        return f"{path} holds {stat.st_size} bytes, its manifest says {facts.get('bytes')}"
    if not deep and stat.st_mtime_ns == facts.get("mtime_ns"):
        return None
    if file_facts(path)["sha256"] != facts.get("sha256"):
        return f"{path} does not match its manifest's SHA-256 (its bytes changed after landing)"
    facts["mtime_ns"] = stat.st_mtime_ns
    return None


def read_manifest(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """A manifest, or None and why it cannot be used (not JSON, or not a manifest's shape)."""
    try:
        document = lk.read_json(path, None)
    except lk.StateFileError as exc:
        return None, f"{path} is not valid JSON ({exc.__cause__})"
    shaped = (
        isinstance(document, dict)
        and isinstance(document.get("tables"), dict)
        and isinstance(document.get("sources", []), list)
        and isinstance(document.get("files", {}), dict)
    )
    return (document, None) if shaped else (None, f"{path} is not a part manifest")


# What reading a damaged or missing file raises. Footers are read by Polars, not pyarrow:
# every command reads them here, and pyarrow (with numpy) would add ~0.06 s to its start.
# A damaged page can make Polars panic (a BaseException) instead of raising its error.
UNREADABLE = (OSError, pl.exceptions.PolarsError, pl.exceptions.PanicException)


def _rows(path: Path) -> int | None:
    """Rows in a Parquet file by its footer, or None when it cannot be read."""
    try:
        rows: int = lk.scan_file(path).select(pl.len()).collect().item()
    except UNREADABLE:
        return None
    return rows


def _decodes(path: Path) -> bool:
    """Whether every page of a Parquet file decodes (its values read and dropped)."""
    try:
        lk.scan_file(path).collect(engine="streaming")
    except UNREADABLE:
        return False
    return True


def _missing_columns(path: Path) -> list[str]:
    """Columns the score table's model has and the file lacks (none for an unknown table)."""
    model = SCORED.get(path.parent.name)
    if model is None:
        return []
    try:
        present = set(lk.scan_file(path).collect_schema().names())
    except UNREADABLE:
        return []
    return [name for name in polars_schema(model) if name not in present]


def _part_problem(
    lake: Path,
    part: str,
    document: dict[str, Any],
    *,
    deep: bool,
    hashed: Collection[str] = (),
) -> str | None:
    """What is wrong with a part, or None (``document`` may get refreshed mtimes); the
    files of ``hashed`` tables are hashed even when the part is not ``deep``."""
    facts: dict[str, dict[str, Any]] = document.get("files", {})
    for table, rows in document["tables"].items():
        path = lk.table_dir(lake, table) / f"{part}.parquet"
        if not path.exists():
            return f"part {part}: {path} is missing"
        if table in facts:
            changed = _facts_problem(path, facts[table], deep=deep or table in hashed)
            if changed:
                return f"part {part}: {changed}"
            # Its bytes are those that landed (by size and mtime, or by hash): so are its
            # rows. A footer read per file had made every command's survey grow with the
            # nights the lake holds (378 parts: 2.4 s before any work); `check` (deep) still
            # reads them, beside the hashing that costs more.
            if not deep:
                continue
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

    manifests: dict[str, dict[str, Any]]
    # Manifests that cannot be read (not JSON, wrong shape): their parts' files are orphans.
    unreadable: dict[str, str]
    broken: dict[str, str]
    # Landed files of parts that have no manifest at all (deleted by hand, say).
    orphans: dict[str, list[Path]]
    # Landed files of broken parts, and score files of no part that is whole.
    strays: list[Path]
    unreadable_scores: list[Path]
    # Score files an older version wrote, lacking columns the views now read.
    outdated_scores: list[tuple[Path, list[str]]] = field(default_factory=list)
    # Whole parts whose files were hashed for a changed mtime and matched: new mtimes.
    refreshed: dict[str, dict[str, Any]] = field(default_factory=dict)


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
            try:
                column = lk.scan_file(path).select(pl.col("source").unique()).collect()["source"]
            except UNREADABLE:
                return None
            sources.update(str(s) for s in column.to_list())
    # The files are trusted as they are now: nothing recorded says otherwise.
    facts = {path.parent.name: file_facts(path) for path in files}
    return manifest(tables, sorted(sources), facts)


def survey(
    lake: Path,
    deep: Collection[str] | bool = False,
    hashed: Collection[str] = (),
    rubrics: Collection[str] | None = None,
    decoded: Collection[str] | None = None,
) -> Survey:
    """What is wrong with the parts; ``deep`` (all, or these parts) hashes every file, and
    every part's files of the ``hashed`` tables are hashed too. Score files are read only
    under the ``rubrics`` given (None, or ``deep`` True: every rubric's): a command reads
    the scores of the rubric it works under, and a rubric it goes back to is scored anew.
    A deep survey decodes score files whole, under the ``decoded`` rubrics only when given
    (the others' footers are read): decoding every rubric's grew with the rubrics used."""
    directory = lake / MANIFESTS
    manifests: dict[str, dict[str, Any]] = {}
    unreadable: dict[str, str] = {}
    for path in sorted(directory.glob("*.json")) if directory.is_dir() else []:
        document, why = read_manifest(path)
        if document is None:
            unreadable[path.stem] = why or f"{path} is not a part manifest"
        else:
            manifests[path.stem] = document
    broken: dict[str, str] = {}
    refreshed: dict[str, dict[str, Any]] = {}

    def check(item: tuple[str, dict[str, Any]]) -> tuple[str | None, bool]:
        part, document = item
        thorough = deep if isinstance(deep, bool) else part in deep
        before = json.dumps(document, sort_keys=True)
        problem = _part_problem(lake, part, document, deep=thorough, hashed=hashed)
        return problem, json.dumps(document, sort_keys=True) != before

    # Parts side by side: hashing and footer reads release the GIL, and every command
    # waits for this before its work (a full rescore of 300k runs: ~0.1 s on one core).
    with ThreadPoolExecutor() as pool:
        checked = list(pool.map(check, manifests.items()))
    for (part, document), (problem, changed) in zip(manifests.items(), checked, strict=True):
        if problem:
            broken[part] = problem
        elif changed:
            refreshed[part] = document
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
    unreadable_scores: list[Path] = []
    outdated: list[tuple[Path, list[str]]] = []
    kept: list[Path] = []
    read = None if rubrics is None or deep is True else {lk.rubric_key(r) for r in rubrics}
    for path in _score_files(lake):
        if path.stem == EMPTY_STEM:
            continue
        # Per-part score tables follow their part; a per-rubric table (version_regressions)
        # has no part and is rebuilt with the rubric's scores, so only its readability counts.
        if path.parent.name not in lk.RUBRIC_TABLES and path.stem not in whole:
            strays.append(path)
        elif read is None or path.parent.parent.name in read:
            kept.append(path)

    decoded_keys = None if decoded is None else {lk.rubric_key(r) for r in decoded}

    def readable(path: Path) -> tuple[bool, list[str]]:
        # Score files have no recorded hash: a deep survey (check) decodes them whole, which
        # finds a damaged page its footer does not show (a rescore-diff had failed on one
        # that check passed).
        # A rescore (deep: the parts it scores) decodes each file it may keep anyway, in
        # Transaction.write's comparison, and writes a damaged one again.
        whole = deep is True and (decoded_keys is None or path.parent.parent.name in decoded_keys)
        return (_decodes(path) if whole else _rows(path) is not None), _missing_columns(path)

    with ThreadPoolExecutor() as pool:
        for path, (ok, missing) in zip(kept, pool.map(readable, kept), strict=True):
            if not ok:
                unreadable_scores.append(path)
            elif missing:
                outdated.append((path, missing))
    return Survey(
        manifests, unreadable, broken, orphans, strays, unreadable_scores, outdated, refreshed
    )


def _orphan_problem(found: Survey, part: str, files: list[Path]) -> str:
    if part in found.unreadable:
        return f"part {part}: {found.unreadable[part]} ({len(files)} files)"
    return f"part {part} has no manifest ({len(files)} files)"


def part_problems(lake: Path, current: str | None = None) -> list[str]:
    """Every problem ``check_and_repair`` would mend, as lines, changing nothing; every
    landed file is hashed against its manifest, and the score files of the ``current``
    rubric (None: of every rubric) are decoded whole."""
    found = survey(lake, deep=True, decoded=None if current is None else [current])
    return (
        list(found.broken.values())
        + [_orphan_problem(found, part, files) for part, files in found.orphans.items()]
        + [f"{path} belongs to no whole part" for path in found.strays]
        + [
            f"{path} is not a readable Parquet file: {lk.command_on(lake, 'score')} scores it "
            "again (for another rubric than the lake's, --rubric FILE, which makes that rubric "
            "the lake's and rescores every run); one of a rubric no longer used can be removed "
            "(rescore-diff then counts its runs as unscored)"
            for path in found.unreadable_scores
        ]
        + [f"{path} lacks {', '.join(missing)}" for path, missing in found.outdated_scores]
    )


def check_and_repair(
    lake: Path,
    deep: Collection[str] | bool = False,
    hashed: Collection[str] = (),
    rubrics: Collection[str] | None = None,
) -> Repair:
    """Mend what ``survey`` finds; see the module docstring. Every change gets a note.

    ``deep`` parts (all with True) have every file hashed against their manifest, and
    every part its files of the ``hashed`` tables; the others only when a file's size or
    mtime is not what landed. Score files are read under ``rubrics`` only (see survey)."""
    repair = Repair()
    found = survey(lake, deep, hashed, rubrics)
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
            why = f": {found.unreadable[part]}" if part in found.unreadable else " had no manifest"
            repair.problems.append(
                f"part {part}{why}; rebuilt from its {len(files)} files "
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
    if not broken and not doomed and not rebuilt and not found.refreshed:
        return repair
    for part in broken:
        lost_sources.update((found.manifests.get(part) or {}).get("sources", []))
    ledger: dict[str, dict[str, Any]] = lk.read_json(lk.state_path(lake, LEDGER), {})
    with lk.Transaction(lake) as tx:
        for path in doomed:
            tx.delete(path)
        for part in broken:
            tx.delete(manifest_path(lake, part))
        for part, document in (found.refreshed | rebuilt).items():
            tx.write_json(manifest_path(lake, part), document)
        if lost_sources and ledger:
            kept = {k: v for k, v in ledger.items() if v.get("path") not in lost_sources}
            tx.write_json(lk.state_path(lake, LEDGER), kept)
    repair.removed_parts = sorted(broken)
    repair.removed_files = [str(p) for p in doomed]
    nightly_reads = {entry.get("path") for entry in ledger.values()}
    repair.problems.extend(
        f"{problem}; {_lost_part(lake, found.manifests.get(part), nightly_reads)}"
        for part, problem in broken.items()
    )
    return repair


def _lost_part(
    lake: Path, manifest: dict[str, Any] | None, nightly_reads: Collection[object]
) -> str:
    """What removing a broken part lost and what lands it again: its input files ingested
    again (the nightly reads again, by itself, the inbox files its ledger held)."""
    document = manifest or {}
    tables = document.get("tables") or {}
    held = ", ".join(f"{tables[name]} {name}" for name in lk.RUN_TABLES if tables.get(name))
    lost = f"the part was removed whole ({held})" if held else "the part was removed whole"
    sources = sorted(str(source) for source in document.get("sources", []))
    if not sources:
        return f"{lost}; which input files it came from is not known"
    by_hand = [source for source in sources if source not in nightly_reads]
    if not by_hand:
        return (
            f"{lost}; the nightly reads its inbox files again (this one, when it removed the "
            f"part; else the next): {', '.join(sources)}"
        )
    return (
        f"{lost}; ingest again what it came from to land its runs again "
        f"({lk.command_on(lake, 'ingest FILE ...')}): {', '.join(sources)}"
    )
