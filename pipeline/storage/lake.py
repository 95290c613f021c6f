"""The lake: where every table lands, as Parquet, and how it is written safely.

Layout (``<lake>/``):

- ``<table>/<batch_id>.parquet``: landed tables, one file per ingest batch
  (task_runs, task_components, task_penalties, run_metadata, surface_runs,
  surface_findings, quarantine).
- ``scores/<rubric_key>/<table>/<batch_id>.parquet``: scores under one rubric
  (task_scores, task_component_scores, surface_scores, surface_finding_scores,
  surface_phase_scores); ``rubric_key`` is a hash of the rubric_id, so a
  rubric's name never becomes a path.
- ``_state/``: small JSON documents (current rubric, ledger of ingested files).
- ``warehouse.duckdb``: the lake's tables and the views over them, one
  self-contained file (see ``pipeline/warehouse/build.py``).

Every file is written to a hidden temporary name and renamed into place, so a
reader (or a DuckDB glob) never sees half a file: ``*.parquet`` globs do not
match ``.*.tmp``.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import itertools
import json
import os
import secrets
import shlex
import shutil
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.core.settings import CRASH_AT_ENV

# polars is imported where a frame is built, so that `python -m pipeline --help` (which
# imports this module for its errors and default lake) starts without it.
if TYPE_CHECKING:
    import polars as pl

DEFAULT_LAKE = Path("data/lake")

LANDED_TABLES = (
    "task_runs",
    "task_components",
    "task_penalties",
    "run_metadata",
    "surface_runs",
    "surface_findings",
    "quarantine",
    "quarantine_resolved",
)
SCORE_TABLES = (
    "task_scores",
    "task_component_scores",
    "surface_scores",
    "surface_finding_scores",
    "surface_phase_scores",
)
# Which score tables each kind of landed run has, per part.
SCORE_FAMILIES = {
    "task_runs": ("task_scores", "task_component_scores"),
    "surface_runs": ("surface_scores", "surface_finding_scores", "surface_phase_scores"),
}
# The landed tables with one row per run, each the head of a score family.
RUN_TABLES = tuple(SCORE_FAMILIES)
# Score tables of a whole rubric, not of a part: rebuilt whenever that rubric's scores change.
VERSION_REGRESSIONS = "version_regressions"
RUBRIC_TABLES = (VERSION_REGRESSIONS,)


# Fault injection for the crash tests: with PIPELINE_CRASH_AT=N the process
# kills itself (SIGKILL, as kill -9 would) at the N-th file write or move.
_io_steps = itertools.count(1)


def _crash_point() -> None:
    target = os.environ.get(CRASH_AT_ENV)
    if target and next(_io_steps) == int(target):
        os.kill(os.getpid(), signal.SIGKILL)


class LakeBusyError(RuntimeError):
    """Another pipeline process holds the lake."""


class InputError(ValueError):
    """An input path the pipeline cannot read at all."""


# Written when a lake is created: what tells a lake from any other folder.
LAKE_MARKER = Path("_state") / "lake.json"
# What a lake made before the marker existed holds (any one of them): every command that
# landed or scored wrote one of them.
LEGACY_SIGNS = ("_parts", "_state")
WAREHOUSE_FILE = "warehouse.duckdb"


def lake_sign(path: Path) -> str | None:
    """What makes ``path`` a lake, as a message names it (None: it is not one).

    A warehouse.duckdb alone is no sign: it is one self-contained file, copied anywhere to be
    read, and a folder holding only such a copy has no lake behind it (a command that writes
    would build a new warehouse over it). Beside a landed table's folder it is a lake the
    pipeline made before the other signs existed.
    """
    try:
        return _sign(path)
    except OSError:
        # A folder the system will not let us look into is no lake we know of: a folder
        # walk says it could not list it (a nightly must not fail on it every night).
        return None


def _sign(path: Path) -> str | None:
    if not path.is_dir():
        return None
    if (path / LAKE_MARKER).is_file():
        return str(LAKE_MARKER)
    beside = (path / ".lock").is_file() or any((path / t).is_dir() for t in LANDED_TABLES)
    for sign in LEGACY_SIGNS:
        # The folder as the pipeline wrote it: holding manifests or state files, or beside
        # the lock or a landed table's folder (an older lake whose every part was removed
        # keeps an empty _parts/). Not any folder of that name: an input folder may hold an
        # empty _state/ of its own.
        if (path / sign).is_dir() and (
            beside
            or any(entry.suffix == ".json" and entry.is_file() for entry in (path / sign).iterdir())
        ):
            return f"{sign}/"
    if (path / WAREHOUSE_FILE).is_file():
        for table in LANDED_TABLES:
            if (path / table).is_dir():
                return f"{WAREHOUSE_FILE} and {table}/"
    return None


def is_lake(path: Path) -> bool:
    return lake_sign(path) is not None


def is_copied_warehouse(path: Path) -> bool:
    """A folder holding a warehouse.duckdb and no lake: a copy of a lake's warehouse, which
    can be read but not written to (its rows are in no lake here)."""
    return (path / WAREHOUSE_FILE).is_file() and not is_lake(path)


# Characters DuckDB's read_parquet expands as a glob even in a list of paths: a lake path
# holding one would make the warehouse build read other folders' files.
GLOB_CHARACTERS = frozenset("*?[]{}")


def lake_path_problem(path: Path) -> str | None:
    """Why no lake can live at ``path`` whatever it holds (None when one can)."""
    root = str(path.resolve())
    if GLOB_CHARACTERS & set(root) or "\x00" in root:
        return (
            f"the lake path {root!r} holds glob characters ({''.join(sorted(GLOB_CHARACTERS))}),"
            " which the warehouse's reader takes as a pattern; choose another folder"
        )
    return None


def command_on(lake: Path, words: str) -> str:
    """A pipeline command on ``lake`` as it can be pasted: a message's advice acts on the lake
    the user named, not on the default one."""
    return f"`python -m pipeline {words} --lake {shlex.quote(str(lake))}`"


def copied_warehouse_problem(path: Path, *, may_create: bool = False) -> str:
    """Why a command that needs the lake refuses a folder holding only a copied warehouse."""
    new_lake = ", or a new or empty folder for a new lake" if may_create else ""
    query = command_on(path, 'query "SQL"')
    return (
        f"--lake {path} holds a {WAREHOUSE_FILE} but no lake (no {LAKE_MARKER}, _parts/ or "
        "_state/ of manifests or state files, no landed table's folder): a copied warehouse, "
        "read as it is by query, compare, history and "
        f"surface-diff ({query}); this command needs the lake "
        f"itself: give the lake's folder or a copy of all of it{new_lake} (a command that "
        "writes would build a new warehouse over this one)"
    )


def not_a_lake(path: Path, *, may_create: bool, warehouse_will_do: bool = False) -> str | None:
    """Why ``path`` cannot serve as a lake (None when it can).

    A command that only reads or rescores needs a lake that exists; run and
    ingest may create one, in a new or empty folder, never inside a folder
    that holds other things. A folder holding a copied warehouse and no lake serves only
    the commands that read the warehouse alone (``warehouse_will_do``): any other would
    check, rescore or build over rows no lake here holds.
    """
    problem = lake_path_problem(path)
    if problem:
        return problem
    if is_lake(path):
        return None
    if is_copied_warehouse(path):
        return None if warehouse_will_do else copied_warehouse_problem(path, may_create=may_create)
    if path.exists() and not path.is_dir():
        return f"--lake {path} is a file, not a lake folder"
    if not may_create:
        if path.exists() and any(path.iterdir()):
            return f"--lake {path} holds no lake ({LAKE_MARKER}) and other files: give a lake"
        what = "does not exist" if not path.exists() else f"holds no lake ({LAKE_MARKER})"
        # Not `run`: without an INPUT it lands the sample data, which a lake of real runs
        # must not hold.
        return f"--lake {path} {what}; create it by landing the first files: " + command_on(
            path, "ingest FILE ..."
        )
    if path.exists() and any(path.iterdir()):
        return (
            f"--lake {path} is a folder that is not a lake (no {LAKE_MARKER}) and not empty; "
            "give a new or empty folder"
        )
    return None


def _mark_lake(lake: Path) -> None:
    """Write the marker of a new lake (no crash point: it holds no data)."""
    marker = lake / LAKE_MARKER
    if marker.is_file():
        return
    marker.parent.mkdir(parents=True, exist_ok=True)
    tmp = marker.with_name(f".{marker.name}.{secrets.token_hex(4)}.tmp")
    tmp.write_text(json.dumps({"lake": 1}) + "\n")
    os.replace(tmp, marker)


class StateFileError(RuntimeError):
    """A state or manifest file of the lake that cannot be read: the message names it."""


def new_batch_id() -> str:
    """Sortable by time, unique across processes: ``20261202T154733Z-1a2b3c4d``."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return f"{stamp}-{secrets.token_hex(4)}"


def rubric_key(rubric_id: str) -> str:
    return hashlib.sha256(rubric_id.encode()).hexdigest()[:16]


def table_dir(lake: Path, table: str) -> Path:
    return lake / table


def score_dir(lake: Path, rubric_id: str, table: str) -> Path:
    return lake / "scores" / rubric_key(rubric_id) / table


def parquet_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.parquet")) if directory.is_dir() else []


def fsync_path(path: Path) -> None:
    """Flush a file, or a folder's entries (a rename into it), to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_atomic(path: Path, write: Callable[[Path], object]) -> Path:
    """``write`` a temporary file beside ``path``, then rename it into place, so that the
    file is either whole or absent."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        write(tmp)
        _crash_point()
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, path)
        fsync_path(path.parent)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def write_parquet_atomic(frame: pl.DataFrame, path: Path) -> Path:
    """Write ``frame`` to ``path`` so that the file is either whole or absent."""

    def write(tmp: Path) -> None:
        frame.write_parquet(tmp, compression="zstd", statistics=True)
        _whole_parquet(tmp, path)

    return _write_atomic(path, write)


PARQUET_MAGIC = b"PAR1"


def _whole_parquet(written: Path, meant: Path) -> None:
    """A Parquet file ends with its magic: a disk that filled up part way can leave a cut
    file behind without the writer saying so, which a later read calls "Invalid thrift"."""
    size = written.stat().st_size
    with open(written, "rb") as handle:
        handle.seek(max(size - len(PARQUET_MAGIC), 0))
        whole = size >= 2 * len(PARQUET_MAGIC) and handle.read() == PARQUET_MAGIC
    if not whole:
        free = shutil.disk_usage(written.parent).free
        raise OSError(
            errno.ENOSPC,
            f"{meant} was written cut short ({size} bytes, no Parquet footer): is the disk "
            f"full? {free} bytes are free there",
            str(meant),
        )


def write_json_atomic(document: Any, path: Path) -> Path:
    text = json.dumps(document, indent=2, sort_keys=True, default=str) + "\n"
    return write_text_atomic(text, path)


def write_text_atomic(text: str, path: Path) -> Path:
    """Write ``text`` (UTF-8) to ``path`` so that the file is either whole or absent."""
    return _write_atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def read_json(path: Path, default: Any) -> Any:
    """The JSON document in ``path`` (``default`` when there is none); StateFileError names
    the file when it is not JSON (a 0-byte file, a cut write, an edit by hand)."""
    if not path.exists():
        return default
    try:
        data = path.read_bytes()
    except OSError as exc:
        # A folder in its place, or no permission: no command can mend that by itself.
        raise StateFileError(
            f"{path} cannot be read ({exc.strerror or exc}): make it a file this user can "
            "read and write again (or remove it), or restore it from a backup"
        ) from exc
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise StateFileError(
            f"{path} is not valid JSON ({exc}); `run`, `score` or `nightly` repairs it from "
            "what the lake holds, or restore it from a backup"
        ) from exc


def state_path(lake: Path, name: str) -> Path:
    return lake / "_state" / f"{name}.json"


def scan_file(path: Path) -> pl.LazyFrame:
    """One Parquet file, its path taken as written: no glob, no hive folders."""
    import polars as pl

    return pl.scan_parquet(path, glob=False, hive_partitioning=False)


def scan_files(files: list[Path], schema: pl.Schema) -> pl.LazyFrame:
    """Parquet files of one table, or an empty frame of its schema."""
    import polars as pl

    if not files:
        return pl.LazyFrame(schema=schema)
    return pl.scan_parquet(files, missing_columns="insert", extra_columns="ignore", schema=schema)


@contextlib.contextmanager
def lake_lock(lake: Path) -> Iterator[None]:
    """One writer at a time: a second run refuses at once instead of waiting."""
    if is_copied_warehouse(lake):
        # Marked, it would pass for a new lake, and the next build would replace the copy.
        raise InputError(copied_warehouse_problem(lake))
    lake.mkdir(parents=True, exist_ok=True)
    _mark_lake(lake)
    lock_file = lake / ".lock"
    with open(lock_file, "a+") as handle:
        _take(handle, lake, fcntl.LOCK_EX)
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}")
        handle.flush()
        try:
            yield
        finally:
            handle.seek(0)
            handle.truncate()
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


@contextlib.contextmanager
def reading_lock(lake: Path) -> Iterator[None]:
    """For a command that only reads (``check``): no writer is half way while it looks, and
    it writes nothing, not even the lock, so a lake on a read-only mount can be checked. A
    lake without a lock file (none can be made there) has no writer to wait for."""
    try:
        handle = open(lake / ".lock")  # noqa: SIM115 (closed below, after the unlock)
    except OSError:
        handle = None
    if handle is None:
        yield
        return
    with handle:
        _take(handle, lake, fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _take(handle: Any, lake: Path, kind: int) -> None:
    """``kind`` of lock on the lake's lock file, at once or LakeBusyError naming the holder
    (whose pid the writer keeps in the file)."""
    try:
        fcntl.flock(handle.fileno(), kind | fcntl.LOCK_NB)
    except BlockingIOError as exc:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        raise LakeBusyError(
            f"the lake {lake} is in use by {holder}; wait for it to finish "
            "(a second run never writes beside a running one)"
        ) from exc


def staging_dir(lake: Path) -> Path:
    return lake / "_staging"


# How a commit journal names its files: relative to the lake's root.
JOURNAL_PATHS = "lake-relative"
# The journal a commit writes into its staging folder before it moves a file.
JOURNAL_NAME = "COMMIT.json"


class Transaction:
    """Several files written and others deleted as one unit.

    Files are written whole into a staging folder as they come (so a large
    rescore never holds every table in memory), then a journal naming every
    move is written, then the moves happen. A crash before the journal leaves
    the lake as it was (``recover`` discards the staging folder); a crash after
    it is completed by ``recover``. Either way no reader sees part of a file,
    and a batch is never left half-landed.
    """

    def __init__(self, lake: Path) -> None:
        self.lake = lake
        self.stage = staging_dir(lake) / new_batch_id()
        self.stage.mkdir(parents=True)
        self.moves: list[dict[str, str]] = []
        self.deletes: list[str] = []
        # The last staged file of each target, and the targets to delete, by path: looked up
        # once per part read while the transaction is open (``file_after``).
        self._staged: dict[str, str] = {}
        self._deleted: set[str] = set()

    def write(self, target: Path, frame: pl.DataFrame, *, unless_held: bool = False) -> Path:
        """Stage ``frame`` to land at ``target``; returns the staged file (whose bytes, and
        mtime, are the landed file's: a rename keeps both).

        With ``unless_held``, a ``target`` that already holds ``frame``'s rows (``_holds``)
        is left as it is, mtime included, and returned: a rescore under the same rubric gives
        every score file the rows it has, and readers that track files by size and mtime (the
        warehouse) then see nothing to reload. Reading the file costs less than encoding the
        frame again: at 10M runs, 280 score files took 14.8 s of writes."""
        if unless_held and _holds(target, frame):
            return target
        staged = write_parquet_atomic(frame, self.stage / f"{len(self.moves):06d}.parquet")
        self._move(staged, target)
        return staged

    def write_json(self, target: Path, document: Any) -> None:
        staged = write_json_atomic(document, self.stage / f"{len(self.moves):06d}.json")
        self._move(staged, target)

    def _move(self, staged: Path, target: Path) -> None:
        self.moves.append({"from": str(staged), "to": str(target)})
        self._staged[str(target)] = str(staged)

    def delete(self, target: Path) -> None:
        self.deletes.append(str(target))
        self._deleted.add(str(target))

    def file_after(self, target: Path) -> Path | None:
        """The file that holds ``target``'s bytes once this transaction commits, to read
        before it does: the staged one (a rewrite wins over a delete, as in ``commit``), else
        ``target`` itself unless deleted or absent."""
        staged = self._staged.get(str(target))
        if staged is not None:
            return Path(staged)
        if str(target) in self._deleted or not target.exists():
            return None
        return target

    def staged_parquet(self, directory: Path) -> list[Path]:
        """The Parquet files staged so far to land in ``directory``."""
        return [
            Path(move["from"])
            for move in self.moves
            if Path(move["to"]).parent == directory and move["to"].endswith(".parquet")
        ]

    def after(self, directory: Path) -> dict[str, Path]:
        """Each Parquet file ``directory`` will hold once this transaction commits, by its
        name there, with the file that holds its bytes now: the staged one in place of
        what it replaces; deleted ones gone. Landed files first, then staged, each by name."""
        staged = {
            Path(target).name: Path(source)
            for target, source in self._staged.items()
            if Path(target).parent == directory and target.endswith(".parquet")
        }
        kept = {
            path.name: path
            for path in parquet_files(directory)
            if path.name not in staged and str(path) not in self._deleted
        }
        return kept | {name: staged[name] for name in sorted(staged)}

    def files_after(self, directory: Path) -> list[Path]:
        """The Parquet files ``directory`` will hold once this transaction commits, to read
        before the commit."""
        return list(self.after(directory).values())

    def commit(self) -> None:
        # A file both rewritten and listed for deletion is kept: the rewrite wins.
        written = {move["to"] for move in self.moves}
        root = os.path.abspath(self.lake)

        def inside(path: str) -> str:
            # Relative to the lake, not to where the command ran: the run that finishes a
            # crashed commit may start elsewhere, or find the lake moved or copied.
            return os.path.relpath(os.path.abspath(path), root)

        journal = {
            "paths": JOURNAL_PATHS,
            "moves": [{"from": inside(m["from"]), "to": inside(m["to"])} for m in self.moves],
            "deletes": [inside(d) for d in self.deletes if d not in written],
        }
        write_json_atomic(journal, self.stage / JOURNAL_NAME)
        _apply(self.stage)

    def abort(self) -> None:
        _discard(self.stage)

    def __enter__(self) -> Transaction:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is None:
            self.commit()
        else:
            self.abort()


def _holds(target: Path, frame: pl.DataFrame) -> bool:
    """``target`` is a Parquet file of ``frame``'s schema holding its rows in its order, each
    float column bit for bit (0.0 is not -0.0); a file that is missing or cannot be read
    holds nothing."""
    if not target.is_file():  # a new part, a new rubric: nothing to keep
        return False
    import polars as pl

    try:
        held = scan_file(target).collect()
    except (OSError, pl.exceptions.PolarsError, pl.exceptions.PanicException):
        return False  # a damaged page can make Polars panic: rewritten
    return held.schema == frame.schema and _float_bits(held).equals(
        _float_bits(frame), null_equal=True
    )


def _float_bits(frame: pl.DataFrame) -> pl.DataFrame:
    import polars as pl

    return frame.with_columns(
        pl.col(pl.Float64).reinterpret(dtype=pl.UInt64),
        pl.col(pl.Float32).reinterpret(dtype=pl.UInt32),
    )


def _discard(stage: Path) -> None:
    if stage.is_dir():
        for leftover in stage.iterdir():
            leftover.unlink()
        stage.rmdir()


def _journal(stage: Path) -> dict[str, Any] | None:
    """The stage's COMMIT.json, or None when it is not a journal (not JSON, wrong shape)."""
    try:
        journal = json.loads((stage / JOURNAL_NAME).read_bytes())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    shaped = (
        isinstance(journal, dict)
        and isinstance(journal.get("moves"), list)
        and isinstance(journal.get("deletes"), list)
        and all(
            isinstance(m, dict) and isinstance(m.get("from"), str) and isinstance(m.get("to"), str)
            for m in journal["moves"]
        )
        and all(isinstance(d, str) for d in journal["deletes"])
    )
    return journal if shaped else None


def _apply(stage: Path, journal: dict[str, Any] | None = None) -> None:
    journal = journal or json.loads((stage / JOURNAL_NAME).read_text())
    place = _placer(stage, journal)
    for move in journal["moves"]:
        source, target = place(move["from"]), place(move["to"])
        if source is not None and target is not None and source.exists():
            _crash_point()
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(source, target)
            fsync_path(target.parent)
    for doomed in journal["deletes"]:
        if (path := place(doomed)) is not None:
            path.unlink(missing_ok=True)
    (stage / JOURNAL_NAME).unlink()
    _discard(stage)


def _placer(stage: Path, journal: dict[str, Any]) -> Callable[[str], Path | None]:
    """Where a journal's path is in the lake the stage is in (<lake>/_staging/<batch>),
    wherever the lake is now; None for a path outside it.

    A journal written before its paths were the lake's names them as that command was
    given the lake (absolute, or relative to where it ran): the lake then is what comes
    before the stage's own folder in its moves' sources, and each path is taken from there
    into the lake as it is now. Applied as written, a moved lake's commit found no staged
    file, and a copy's moved files into the original."""
    lake = stage.parent.parent
    if journal.get("paths") == JOURNAL_PATHS:
        return lambda path: lake / path
    marker = os.path.join(stage.parent.name, stage.name) + os.sep
    roots = {
        move["from"][: move["from"].find(marker)]
        for move in journal["moves"]
        if marker in move["from"]
    }
    if len(roots) != 1:
        # Nothing staged says where the lake was: only paths inside it as it is now.
        here = lake.resolve()
        return lambda path: Path(path) if Path(path).resolve().is_relative_to(here) else None
    (root,) = roots

    def place(path: str) -> Path | None:
        return lake / path[len(root) :] if path.startswith(root) else None

    return place


def recover(lake: Path) -> list[str]:
    """Finish committed work and discard uncommitted work of a run that died."""
    done: list[str] = []
    root = staging_dir(lake)
    if not root.is_dir():
        return done
    for stage in sorted(root.iterdir()):
        if (stage / JOURNAL_NAME).exists():
            journal = _journal(stage)
            if journal is None:
                # The journal is written whole before any move, so a broken one was damaged
                # afterwards: which moves it named is unknown. The staged files are dropped;
                # the part checks that follow mend any part they had half-landed.
                done.append(
                    f"{stage / JOURNAL_NAME} is not a valid commit journal: its staged "
                    f"files were discarded, the lake kept as last committed"
                )
                _discard(stage)
                continue
            _apply(stage, journal)
            done.append(f"completed {stage.name}")
        else:
            _discard(stage)
            done.append(f"discarded {stage.name}")
    for stray in lake.rglob(".*.tmp"):
        stray.unlink(missing_ok=True)
    return done
