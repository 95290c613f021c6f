"""One object that owns the lake's reads and writes, as an IOManager owns persistence.

Stages ask the store for a table (landed, or scored under a rubric), a part, or a
state document, and hand it frames to write; only the store (with pipeline/storage/lake.py
for the layout and pipeline/storage/parts.py for manifests) knows where files live.
Writes go through a ``Transaction``, so nothing is half-written on a crash.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.storage import lake as lk

if TYPE_CHECKING:
    import polars as pl

# Schema-only files earlier warehouses wrote into the lake so globs matched; not parts.
EMPTY_STEM = "empty"


def _schema(table: str) -> pl.Schema:
    from schemas import polars_schema
    from schemas.registry import LANDED, SCORED

    return polars_schema(LANDED[table] if table in LANDED else SCORED[table])


@dataclass(frozen=True)
class LakeStore:
    """The lake at ``root``: its landed tables, its scores by rubric, its state files.

    With ``pending``, which parts exist and each part's files (``landed_parts``,
    ``scored_parts``, ``all_parts``, ``has_part``, ``part``, ``part_paths``) are read as the
    lake will be once that transaction commits: a command that lands and scores in one
    transaction scores what it has not committed yet. The whole-table reads (``landed``,
    ``scores``, ``files``) take a transaction of their own, or read what is committed.
    """

    root: Path
    pending: lk.Transaction | None = None

    def _landed_dir(self, table: str) -> Path:
        return lk.table_dir(self.root, table)

    def _score_dir(self, rubric_id: str, table: str) -> Path:
        return lk.score_dir(self.root, rubric_id, table)

    def _files(self, directory: Path) -> dict[str, Path]:
        """The Parquet files of ``directory`` by name, with the file holding each one's bytes."""
        if self.pending is not None:
            return self.pending.after(directory)
        return {path.name: path for path in lk.parquet_files(directory)}

    # Parts: which exist.

    def landed_parts(self, table: str) -> list[str]:
        """The parts a landed table holds (their file stems), sorted."""
        stems = (Path(name).stem for name in self._files(self._landed_dir(table)))
        return sorted(stem for stem in stems if stem != EMPTY_STEM)

    def scored_parts(self, rubric_id: str, table: str) -> list[str]:
        return sorted(Path(name).stem for name in self._files(self._score_dir(rubric_id, table)))

    def all_parts(self) -> list[str]:
        """Every part that landed runs of either kind."""
        runs = set(self.landed_parts("task_runs")) | set(self.landed_parts("surface_runs"))
        return sorted(runs)

    def _part_file(self, table: str, part: str) -> Path | None:
        path = self._landed_dir(table) / f"{part}.parquet"
        if self.pending is not None:
            return self.pending.file_after(path)
        return path if path.exists() else None

    def has_part(self, table: str, part: str) -> bool:
        return self._part_file(table, part) is not None

    def part_paths(self, table: str, parts: list[str]) -> list[Path]:
        """The files of ``parts`` in a landed table, for an engine with its own reader."""
        directory = self._landed_dir(table)
        return [self._part_file(table, part) or directory / f"{part}.parquet" for part in parts]

    def files(self, table: str, rubric_id: str | None = None) -> list[Path]:
        """Every file of a landed table (``rubric_id`` None) or of a score table under
        ``rubric_id``, schema-only ones included: for a reader that takes files (the
        warehouse copies them whole)."""
        directory = (
            self._landed_dir(table) if rubric_id is None else self._score_dir(rubric_id, table)
        )
        return lk.parquet_files(directory)

    # Reads.

    def landed(self, table: str, tx: lk.Transaction | None = None) -> pl.LazyFrame:
        """A landed table, with the files ``tx`` has staged for it (earlier chunks)."""
        directory = self._landed_dir(table)
        staged = tx.staged_parquet(directory) if tx else []
        return lk.scan_files(lk.parquet_files(directory) + staged, _schema(table))

    def landed_parts_only(self, table: str) -> pl.LazyFrame:
        """A landed table's parts, without schema-only files (the lake checker's view)."""
        files = self.part_paths(table, self.landed_parts(table))
        return lk.scan_files(files, _schema(table))

    def part(self, table: str, part: str) -> pl.LazyFrame:
        """One part of a landed table (an empty frame when the part has none of it)."""
        import polars as pl

        path = self._part_file(table, part)
        schema = _schema(table)
        return (
            pl.scan_parquet(path, schema=schema)
            if path is not None
            else pl.LazyFrame(schema=schema)
        )

    def scores(self, rubric_id: str, table: str) -> pl.LazyFrame:
        """A score table under ``rubric_id`` (every part's file)."""
        return lk.scan_files(lk.parquet_files(self._score_dir(rubric_id, table)), _schema(table))

    def scored_part(self, rubric_id: str, table: str, part: str) -> pl.LazyFrame:
        """One part's file of a score table under ``rubric_id`` (empty when it has none)."""
        path = self._score_dir(rubric_id, table) / f"{part}.parquet"
        if self.pending is not None:
            found = self.pending.file_after(path)
        else:
            found = path if path.exists() else None
        return lk.scan_files([found] if found is not None else [], _schema(table))

    def landed_after(self, table: str, tx: lk.Transaction) -> pl.LazyFrame:
        """A landed table as it will be once ``tx`` commits."""
        return lk.scan_files(tx.files_after(self._landed_dir(table)), _schema(table))

    def scores_after(self, rubric_id: str, table: str, tx: lk.Transaction) -> pl.LazyFrame:
        """A score table under ``rubric_id`` as it will be once ``tx`` commits."""
        files = tx.files_after(self._score_dir(rubric_id, table))
        return lk.scan_files(files, _schema(table))

    def leftover_stages(self) -> list[Path]:
        """Staging folders of transactions that neither committed nor aborted (a crash)."""
        staging = lk.staging_dir(self.root)
        return sorted(staging.iterdir()) if staging.is_dir() else []

    def read_state(self, name: str, default: Any) -> Any:
        return lk.read_json(lk.state_path(self.root, name), default)

    # Writes, all into a transaction.

    def write_part(
        self,
        tx: lk.Transaction,
        part: str,
        frames: dict[str, pl.DataFrame],
        sources: list[str],
    ) -> dict[str, int]:
        """Stage one part: a file per table with rows, and the part's manifest naming them
        (its rows, its input files, each file's facts). Returns rows written per table."""
        from pipeline.storage.parts import file_facts, manifest, manifest_path

        written = {name: frame.height for name, frame in frames.items() if frame.height}
        facts = {
            name: file_facts(tx.write(self._landed_dir(name) / f"{part}.parquet", frames[name]))
            for name in written
        }
        if written:
            tx.write_json(manifest_path(self.root, part), manifest(written, sources, facts))
        return written

    def write_scores(
        self, tx: lk.Transaction, rubric_id: str, part: str, table: str, frame: pl.DataFrame
    ) -> None:
        # A rescore under the same rubric mostly gives the rows the lake holds: kept as
        # they are, the warehouse has nothing to reload.
        tx.write(self._score_dir(rubric_id, table) / f"{part}.parquet", frame, unless_held=True)

    def write_rubric_table(
        self, tx: lk.Transaction, rubric_id: str, table: str, name: str, frame: pl.DataFrame
    ) -> Path:
        """A score table of a whole rubric, not of a part (e.g. version_regressions); the
        staged file."""
        return tx.write(self._score_dir(rubric_id, table) / name, frame)

    def drop_scores_except(
        self, tx: lk.Transaction, rubric_id: str, tables: list[str], keep: list[str]
    ) -> None:
        """Delete the score files under ``rubric_id`` of parts not in ``keep``."""
        kept = set(keep)
        for table in tables:
            for path in lk.parquet_files(self._score_dir(rubric_id, table)):
                if path.stem not in kept:
                    tx.delete(path)

    def stage_state(self, tx: lk.Transaction, name: str, document: object) -> None:
        tx.write_json(lk.state_path(self.root, name), document)

    def run_record_path(self, name: str) -> Path:
        return self.root / "_runs" / f"{name}.json"

    def write_run_record(self, name: str, document: object) -> Path:
        """A record of one command's run (``_runs/<name>.json``), outside any transaction:
        it describes the run, it is not part of the lake's data."""
        return lk.write_json_atomic(document, self.run_record_path(name))
