"""The lake's ``version_regressions`` table: the release gate for every consecutive pair of
versions of every agent, under the current rubric.

The numbers are those ``compare`` gates on (:func:`pipeline.compare.gate.step_table`, paired t with
scipy's t quantile and Holm over env types), so an analyst reads them with one select
instead of re-deriving a t quantile in SQL. They depend on the landed runs and on the
rubric's scores, so the table is rebuilt inside every transaction that changes either
(scoring, and a bare ingest), from the files that transaction will leave in place: the
table never describes scores the lake does not hold.

Beside the table, a small JSON file records what it was built from (a digest of its
inputs) and its own bytes' SHA-256. A transaction whose inputs digest to the same value,
while the table on disk still has the recorded bytes, leaves both alone: a rescore under
the same rubric leaves every score file that holds its rows as it was, and building the
table again (numpy's and SciPy's imports and a plan over every run: ~0.5 s at 300k runs,
1.1 s at 1M) would give the same bytes.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import threading
from functools import cache
from importlib.util import find_spec
from pathlib import Path
from typing import Any, Final

import polars as pl

from pipeline.storage import lake as lk
from pipeline.storage.store import LakeStore
from schemas import checked
from schemas.registry import SCORED

TABLE: Final = lk.VERSION_REGRESSIONS
# One file per rubric, named so it can never collide with a part's name.
FILE_NAME: Final = "all-versions.parquet"
# What the table was built from, beside it (not Parquet, so no reader takes it for a table).
INPUTS_NAME: Final = "all-versions.inputs.json"
RUN_COLUMNS: Final = ("run_id", "agent", "agent_version", "problem_id", "env_type", "graded_at")
SCORE_COLUMNS: Final = ("run_id", "status", "score", "passed")
# The modules the table's numbers come from (with SciPy): numpy's, imported only when the
# table is rebuilt, so that a rescore that leaves it alone starts without numpy (~0.05 s).
NUMBER_MODULES: Final = (
    *(f"pipeline.compare.{name}" for name in ("gate", "metrics", "stats")),
    "pipeline.core.repeatable",
)
# What a rebuild imports before its first row: the modules above, numpy and SciPy's quantiles.
REBUILD_IMPORTS: Final = (*NUMBER_MODULES, "scipy.special")


def warm() -> threading.Thread:
    """Import what a rebuild needs on a thread of its own, for a caller about to score parts
    whose new scores will make the table be rebuilt (a new rubric, new parts).

    The imports (~0.2 s, half of a rebuild at 300k runs) then overlap the scoring, whose
    Polars plans run outside the GIL, instead of following it. Not a daemon: the process
    waits for an import under way before it exits, instead of tearing one down half done.
    """

    def load() -> None:
        try:
            for name in REBUILD_IMPORTS:
                importlib.import_module(name)
        except ImportError:
            return  # the rebuild imports them again and reports what is missing

    thread = threading.Thread(target=load, name="regressions-warm")
    thread.start()
    return thread


def runs_after(lake: Path, rubric_id: str, tx: lk.Transaction) -> pl.LazyFrame:
    """Every landed task run with its score under ``rubric_id``, as ``tx`` will leave them."""
    store = LakeStore(lake)
    landed = store.landed_after("task_runs", tx).select(RUN_COLUMNS)
    scores = store.scores_after(rubric_id, "task_scores", tx).select(SCORE_COLUMNS)
    return landed.join(scores, on="run_id", how="left")


def build(runs: pl.LazyFrame, rubric_id: str, confidence: float | None = None) -> pl.DataFrame:
    """The table's rows (checked by its model) from warehouse-shaped runs, at ``confidence``
    (None: ``stats.DEFAULT_CONFIDENCE``, what ``compare`` gates on)."""
    from pipeline.compare import gate, stats

    level = stats.DEFAULT_CONFIDENCE if confidence is None else confidence
    table = gate.version_regressions(runs, level).with_columns(rubric_id=pl.lit(rubric_id))
    return checked(SCORED[TABLE], table)


def _sha256(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


@cache  # the code and the library a process runs do not change while it runs
def _code_digest() -> str:
    """The code and library the table's numbers come from: a change to either rebuilds it."""
    # SciPy's version file (its version and git revision), found without importing SciPy
    # and read instead of its package metadata, whose parsing costs ~0.04 s of each score.
    scipy = find_spec("scipy")
    if scipy is None or scipy.origin is None:
        raise ModuleNotFoundError("SciPy, which the table's t quantiles come from, is missing")
    digest = hashlib.sha256(Path(scipy.origin).with_name("version.py").read_bytes())
    # Their sources found, not imported; stats' holds the confidence the table is built at.
    for name in NUMBER_MODULES:
        module = find_spec(name)
        if module is None or module.origin is None:
            raise ModuleNotFoundError(f"{name}, which the table's numbers come from, is missing")
        digest.update(Path(module.origin).read_bytes())
    digest.update(Path(__file__).read_bytes() + repr(SCORED[TABLE].columns).encode())
    return digest.hexdigest()


def inputs_digest(lake: Path, rubric_id: str, tx: lk.Transaction) -> str:
    """A digest of everything the table is computed from, as ``tx`` will leave it.

    Landed files count by size and mtime (a rename keeps both; the lake trusts them the same
    way between deep checks); score files by their bytes, which a rescore rewrites.
    """
    runs = tx.files_after(lk.table_dir(lake, "task_runs"))
    scores = tx.files_after(lk.score_dir(lake, rubric_id, "task_scores"))
    landed = sorted(f"{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in runs)
    scored = sorted(_sha256(path) for path in scores)
    document = [_code_digest(), rubric_id, landed, scored]
    return hashlib.sha256(json.dumps(document).encode()).hexdigest()


def _unchanged(directory: Path, digest: str) -> bool:
    """The committed table was built from inputs with ``digest`` and still has its bytes."""
    try:
        recorded: Any = lk.read_json(directory / INPUTS_NAME, None)
    except lk.StateFileError:
        return False  # a damaged record only costs a rebuild, which rewrites it
    table = directory / FILE_NAME
    return (
        isinstance(recorded, dict)
        and recorded.get("inputs") == digest
        and table.is_file()
        and recorded.get("table_sha256") == _sha256(table)
    )


def stage(lake: Path, rubric_id: str, tx: lk.Transaction) -> int | None:
    """Rebuild the table for ``rubric_id`` inside ``tx``; the number of rows written, None
    when its inputs are those it was built from (the table is left as it is)."""
    digest = inputs_digest(lake, rubric_id, tx)
    directory = lk.score_dir(lake, rubric_id, TABLE)
    if _unchanged(directory, digest):
        return None
    frame = build(runs_after(lake, rubric_id, tx), rubric_id)
    staged = LakeStore(lake).write_rubric_table(tx, rubric_id, TABLE, FILE_NAME, frame)
    tx.write_json(directory / INPUTS_NAME, {"inputs": digest, "table_sha256": _sha256(staged)})
    return frame.height
