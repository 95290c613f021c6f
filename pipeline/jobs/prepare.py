"""Before any command's work, under the lake's lock: the lake made whole again."""

from __future__ import annotations

from pathlib import Path

from pipeline.storage import lake as lk
from pipeline.storage.parts import check_and_repair
from pipeline.storage.rubrics import current_rubric
from pipeline.storage.state import repair_state

# What an ingest (and a replay) reads of every landed part to dedupe against it. Their
# files are hashed against the manifest on every read, since a byte flipped with the
# mtime kept looks unchanged; a cache by (size, mtime, inode) would miss exactly that.
INGEST_READS = (*lk.RUN_TABLES, "quarantine", "quarantine_resolved")


def prepare(lake: Path, *, reads: tuple[str, ...] = INGEST_READS) -> list[str]:
    """Before any work, under the lock: finish or undo a dead run, rebuild broken state
    files, then mend broken parts (a corrupt file of the tables the command ``reads``, by
    default what ingest reads, counts as broken). A command that hashes what it reads
    itself (a full rescore hashes every part it scores) passes fewer tables. Score files
    are read under the lake's current rubric only: the others' wait for `check`."""
    notes = [f"recovered: {done}" for done in lk.recover(lake)]
    notes += repair_state(lake)
    current = current_rubric(lake)
    rubrics = [] if current is None else [current.rubric_id]
    return notes + check_and_repair(lake, hashed=reads, rubrics=rubrics).problems
