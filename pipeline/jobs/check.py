"""The lake checker: the invariants every command must leave true, verified from the lake.

``check_lake`` reads and never writes, not even a lock file (it shares the lake's lock, so
that it sees no run half-applied, and works on a read-only mount) and returns every violation
as data, one line each:

- state: the nightly ledger and the schema names read as JSON of their shape;
- parts: every landed file belongs to a part whose manifest lists it, with the
  row count its footer says; no interrupted run is waiting to be finished;
- lines: every source line is in exactly one place: a run_id lands once, a line (its
  source, number and text: a rewritten file's place holds other text) is not both landed
  and quarantined, nor a place quarantined twice (and a note names Inspect attempts a
  version before 2026-12-05 landed under two run_ids);
- rubric: the current rubric parses to the same content and id, and lineage
  holds the same content under that id;
- scores: every landed run has a score under the current rubric, and no score
  belongs to a run that is not landed;
- warehouse: the file opens, was built under the current rubric by this version of
  the pipeline (its views and tables), holds exactly the lake files a build would load
  now (a command killed between the lake's commit and the warehouse's leaves it behind),
  has the pipeline's tables, views and macros as its build defines them, every view
  answers (is run to its end, every row and column computed, within DuckDB's memory limit
  and VIEW_SECONDS; one stopped at that time or past that memory is a note), and every
  table's values read back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from pipeline.storage import lake as lk
from pipeline.storage.parts import part_problems
from pipeline.storage.store import LakeStore

if TYPE_CHECKING:
    import duckdb

# How many offending keys a violation names before it says "and N more".
SHOWN = 5
# How long check runs one view before it stops it, unfinished (a note, not a violation): a
# view fails on a row only when run to its end, which grows with the lake (the slowest views
# of a 1M-run lake took 2-4 s each), and a view whose cost grows faster (the surface
# pairs are quadratic in a server's versions) must not hold the nightly's check for hours.
VIEW_SECONDS = 60


@dataclass
class CheckReport:
    lake: str
    checked: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    # What holds, yet is worth knowing (data an older version landed), not a violation.
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations


@dataclass
class Found:
    """What one check found, when it has notes to give beside its violations."""

    violations: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _some(values: pl.Series) -> str:
    shown = ", ".join(str(v) for v in values.head(SHOWN).to_list())
    more = values.len() - SHOWN
    return shown + (f" and {more} more" if more > 0 else "")


def _landed(lake: Path, table: str, columns: list[str]) -> pl.DataFrame:
    return LakeStore(lake).landed_parts_only(table).select(columns).collect()


def check_parts(lake: Path) -> list[str]:
    from pipeline.rubric import RubricError
    from pipeline.storage.rubrics import current_rubric

    try:
        current = current_rubric(lake)
    except RubricError:
        current = None  # check_rubric names it; every rubric's score files are decoded
    problems = part_problems(lake, None if current is None else current.rubric_id)
    return problems + [_leftover(stage) for stage in LakeStore(lake).leftover_stages()]


def _leftover(stage: Path) -> str:
    """A dead run's staging folder: cut short before its commit (the lake is as it was), or
    midway through its moves, when other lines of the check may be that half-moved state."""
    if (stage / lk.JOURNAL_NAME).exists():
        return (
            f"a commit was cut short midway: {stage} holds its journal, and the lake is between "
            "two states until the next run, score or nightly completes it (other lines here may "
            "be that state)"
        )
    return (
        f"an interrupted run left {stage}, never committed (the lake is as it was); the next "
        "run, score or nightly discards it"
    )


def check_lines(lake: Path) -> list[str]:
    problems: list[str] = []
    runs = pl.concat(
        [
            _landed(lake, "task_runs", ["run_id", "source", "line"]),
            _landed(lake, "surface_runs", ["run_id", "source", "line"]),
        ]
    )
    twice = runs.filter(pl.col("run_id").is_duplicated())["run_id"].unique().sort()
    if twice.len():
        problems.append(f"run_id landed more than once: {_some(twice)}")
    quarantined = unresolved_quarantine(lake)
    # One place of a file can hold other text after the file changed (a rewritten inbox file):
    # a line is the same line only with the same text. A counted block keeps no text: its
    # place alone decides.
    both = runs.join(quarantined, on=["source", "line"], how="semi")
    if both.height:
        # Their text read only for the places in question: a lake's records are most of it.
        texts = pl.concat(
            LakeStore(lake)
            .landed_parts_only(table)
            .select("source", "line", "record")
            .join(both.lazy().select("source", "line"), on=["source", "line"], how="semi")
            .collect()
            for table in lk.RUN_TABLES
        )
        both = texts.join(quarantined, on=["source", "line"]).filter(
            pl.col("raw").is_null() | (pl.col("raw") == pl.col("record"))
        )
    if both.height:
        where = both.select(pl.format("{}:{}", "source", "line")).to_series().sort()
        problems.append(f"line both landed and quarantined: {_some(where)}")
    again = (
        quarantined.filter(pl.struct("source", "line").is_duplicated())
        .select(pl.format("{}:{}", "source", "line"))
        .to_series()
        .unique()
        .sort()
    )
    if again.len():
        problems.append(f"line quarantined more than once: {_some(again)}")
    return problems


def attempts_landed_twice(lake: Path) -> list[str]:
    """Inspect attempts (sample uuids) the lake holds under more than one run_id. A version
    before 2026-12-05 landed a sample a retry carried over twice, from the first log and
    from the retry's; nothing removes them, and every run_id is its own, so it is a note."""
    from pipeline.sources.inspect.attempts import attempt_rows

    runs = (
        LakeStore(lake)
        .landed_parts_only("run_metadata")
        .filter(attempt_rows())
        .group_by("value")
        .agg(pl.col("run_id").sort())
        .filter(pl.col("run_id").list.len() > 1)
        .sort("value")
        .collect()
    )
    if runs.is_empty():
        return []
    examples = runs.head(SHOWN).select(pl.col("run_id").list.join(" and ")).to_series()
    more = runs.height - SHOWN
    return [
        f"{runs.height} Inspect attempt(s) (sample uuids) landed under more than one run_id: "
        f"{'; '.join(examples)}{f' and {more} more' if more > 0 else ''}. A version before "
        "2026-12-05 landed a sample an Inspect retry carried over from both logs, so each "
        "counts more than once in the views, compare and history; a lake built again from "
        "its inputs lands each once"
    ]


def unresolved_quarantine(lake: Path) -> pl.DataFrame:
    """Quarantined lines (source, line, raw) still waiting for a fix (whole-file rows
    excluded)."""
    from pipeline.jobs.replay import unresolved

    return unresolved(lake).select("source", "line", "raw").filter(pl.col("line") > 0)


def check_rubric(lake: Path) -> list[str]:
    from pipeline.rubric import CONTENT_ID_PREFIX, RubricError, parse_rubric
    from pipeline.storage.rubrics import known_rubrics
    from pipeline.storage.state import CURRENT_RUBRIC

    document = LakeStore(lake).read_state(CURRENT_RUBRIC, None)
    if document is None:
        has_runs = bool(_landed(lake, "task_runs", ["run_id"]).height) or bool(
            _landed(lake, "surface_runs", ["run_id"]).height
        )
        missing = (
            "runs have landed but the lake has no current rubric; the next run, score or "
            "nightly restores it from the warehouse's rubric (or, with none, scores under the "
            "rubric it is given)"
        )
        return [missing] if has_runs else []
    path = lk.state_path(lake, CURRENT_RUBRIC)
    if not (isinstance(document, dict) and isinstance(document.get("resolved"), dict)):
        return [
            f"{path} is not a valid current rubric document; the next run, score or nightly "
            "restores it from the warehouse's rubric"
        ]
    stored_id, resolved = document.get("rubric_id"), document.get("resolved")
    try:
        # Named by its content: an edit of the content leaves the id naming other content.
        if str(stored_id).startswith(CONTENT_ID_PREFIX):
            content_id = parse_rubric(dict(resolved or {})).rubric_id
            if content_id != stored_id:
                return [f"the stored rubric's id {stored_id} is not its content's {content_id}"]
        parsed = parse_rubric({"rubric_id": stored_id, **(resolved or {})})
    except RubricError as exc:
        return [f"the stored current rubric does not parse: {exc}"]
    problems: list[str] = []
    if dict(parsed.resolved) != resolved:
        problems.append(f"the stored rubric {stored_id} is not in its resolved form")
    known = known_rubrics(lake).get(str(stored_id))
    if known != resolved:
        problems.append(
            f"lineage holds other content (or none) for rubric {stored_id}; the next run, "
            "score or nightly records the current rubric there"
        )
    return problems


def _rescored(lake: Path) -> str:
    return f"{lk.command_on(lake, 'score')} scores every landed run again"


def check_scores(lake: Path) -> list[str]:
    from pipeline.storage.rubrics import current_rubric

    rubric = current_rubric(lake)
    if rubric is None:
        return []
    problems: list[str] = []
    for runs_table, scores_table in (
        ("task_runs", "task_scores"),
        ("surface_runs", "surface_scores"),
    ):
        landed = _landed(lake, runs_table, ["run_id"])
        scored = (
            LakeStore(lake)
            .scores(rubric.rubric_id, scores_table)
            .select("run_id", "rubric_id")
            .collect()
        )
        unscored = landed.join(scored, on="run_id", how="anti")["run_id"].sort()
        if unscored.len():
            problems.append(
                f"{unscored.len()} {runs_table} without a score under the current rubric "
                f"{rubric.rubric_id}: {_some(unscored)}; {_rescored(lake)}"
            )
        orphans = scored.join(landed, on="run_id", how="anti")["run_id"].sort()
        if orphans.len():
            problems.append(
                f"{scores_table} for runs that are not landed: {_some(orphans)}; {_rescored(lake)}"
            )
        other = scored.filter(pl.col("rubric_id") != rubric.rubric_id)["rubric_id"].unique()
        if other.len():
            problems.append(
                f"{scores_table} of rubric {rubric.rubric_id} say {_some(other)}; {_rescored(lake)}"
            )
    return problems


def _first(files: pl.DataFrame) -> str:
    return str(files["path"].sort().first()) if files.height else "none"


def check_warehouse(lake: Path) -> Found:
    from pipeline.storage.rubrics import current_rubric
    from pipeline.warehouse import warehouse_path
    from pipeline.warehouse.build import (
        built_by_this_version,
        foreign_objects,
        leftovers,
        other_version,
        unheld,
    )
    from pipeline.warehouse.file import meta_value, read_if_usable

    path = warehouse_path(lake)
    if not path.exists():
        return Found([f"no warehouse at {path}: {lk.command_on(lake, 'score')} builds it"])
    rubric = current_rubric(lake)

    def problems(con: duckdb.DuckDBPyConnection) -> Found | None:
        """The file's problems, read in one opening of it; None: no build record."""
        built = meta_value(con, "rubric_id")
        if built is None:
            return None
        found = Found()
        if rubric is not None and built != rubric.rubric_id:
            found.violations.append(
                f"the warehouse shows rubric {built}, the lake's current is {rubric.rubric_id}"
            )
        if built_by_this_version(con) is False:
            found.violations.append(other_version(lake))  # its views differ by design
            return found
        found.violations.extend(
            f"{problem}: remove {path} and run {lk.command_on(lake, 'score')}, which builds it "
            "from nothing"
            for problem in sorted(foreign_objects(con))
        )
        if rubric is not None and built == rubric.rubric_id:
            changes = unheld(con, lake, rubric.rubric_id)
            if changes.load.height or changes.drop.height:
                found.violations.append(
                    f"the warehouse does not show the lake as it is: {changes.load.height} "
                    f"lake file(s) not in it (e.g. {_first(changes.load)}), "
                    f"{changes.drop.height} it holds no longer in the lake; "
                    f"{lk.command_on(lake, 'score')} (or any command that writes) "
                    "brings it up to date"
                )
        unreadable = unreadable_tables(con, path, lake)
        # A view over a table that cannot be read fails with it: the table's line says what
        # mends both.
        views = Found() if unreadable else unanswered_views(path)
        found.violations.extend(unreadable + views.violations)
        found.notes.extend(views.notes)
        return found

    # A build killed mid-way leaves its copy of the file (as large as the warehouse); reading
    # commands never remove it.
    strays = [
        f"{stray} ({stray.stat().st_size} bytes) is left by a build that died: the next "
        f"command that writes removes it ({lk.command_on(lake, 'score')})"
        for stray in leftovers(lake)
    ]
    found = read_if_usable(path, problems)
    if found is None:
        found = Found(
            [
                f"the warehouse {path} cannot be opened or has no build record: "
                f"{lk.command_on(lake, 'score')} builds it again"
            ]
        )
    return Found(strays + found.violations, found.notes)


def _first_line(exc: Exception) -> str:
    return next((line.strip() for line in str(exc).splitlines() if line.strip()), repr(exc))


def _confined(path: Path) -> duckdb.DuckDBPyConnection:
    """The file at ``path`` read-only in a DuckDB instance of its own, with the pipeline's
    memory and threads, then bounded as an analyst's query is (no spilling to disk, no file
    read, settings locked). Attached to an in-memory instance: a connection made to the
    path would be refused while the process holds one to it under other settings (a library
    user's connect_read_only)."""
    import duckdb

    from pipeline.core.sql import duckdb_config
    from pipeline.warehouse.query import CONFINED

    con = duckdb.connect(config=duckdb_config())
    try:
        con.execute("attach ? as warehouse (read_only)", [str(path)])
        con.execute("use warehouse")
        # Names ours, values bound; the lock last, or it refuses the settings after it.
        for setting, value in sorted(CONFINED.items(), key=lambda s: s[0] == "lock_configuration"):
            con.execute(f"set {setting} = ?", [value])
    except BaseException:
        con.close()
        raise
    return con


def unanswered_views(path: Path) -> Found:
    """Every view of the file at ``path`` run to its end, each alone, so that one failing
    view hides no other: a view fails on a row only when that row is computed (planning it
    had passed cost_per_solved's cast of a sum to BIGINT, which failed every query of it once
    a run reported 2^63-1 tokens). Within DuckDB's memory limit, without spilling
    (``_confined``); a view is stopped after VIEW_SECONDS."""
    import threading

    import duckdb

    from pipeline.core.settings import DUCKDB_MEMORY_ENV, current_settings
    from pipeline.core.sql import quoted, sql_text
    from pipeline.warehouse.build import object_name
    from pipeline.warehouse.models import project_models

    ours = set(project_models())
    limit = current_settings().duckdb_memory_bytes
    found = Found()
    con = _confined(path)
    try:
        listed = con.execute(sql_text("queries/warehouse_views.sql")).fetchall()
        for schema, view in listed:
            name = object_name(schema, view)
            timer = threading.Timer(VIEW_SECONDS, con.interrupt)
            timer.start()
            try:
                whole = f"{quoted(schema)}.{quoted(view)}"
                con.execute(sql_text("queries/view_answers.sql"), [whole]).fetchall()
            except duckdb.InterruptException:
                found.notes.append(
                    f"view {name} was stopped after {VIEW_SECONDS} s, not run to its end: "
                    "a row it fails on would not be seen (check gives each view that long)"
                )
            except duckdb.OutOfMemoryException:
                # Like a view out of time, a bound met, not something found wrong: a view
                # over every pair of a server's versions outgrows any limit as versions add up.
                found.notes.append(
                    f"view {name} needs more than DuckDB's memory limit of {limit} bytes "
                    f"({DUCKDB_MEMORY_ENV}) to run to its end, and a query of it whole as "
                    f"much: raise {DUCKDB_MEMORY_ENV} to check it"
                )
            except duckdb.Error as exc:
                found.violations.append(
                    f"view {name} does not answer: {_first_line(exc)}; "
                    + (
                        "the pipeline's view fails on a row of this lake, and so does any "
                        "query that reads that row: report it with this line"
                        if name in ours
                        else "it is not one of the pipeline's views: mend it (create or "
                        "replace view) or drop it"
                    )
                )
                if isinstance(exc, duckdb.FatalException | duckdb.InternalException):
                    # DuckDB invalidates the instance: every later view had failed with it.
                    con.close()
                    con = _confined(path)
            finally:
                timer.cancel()
    finally:
        con.close()
    return found


def unreadable_tables(con: duckdb.DuckDBPyConnection, path: Path, lake: Path) -> list[str]:
    """The file's tables whose every value cannot be read back: each column hashed in one
    scan a table (planning the views reads no block, and a block whose checksum fails had
    passed; the counting it replaced had found it, at the cost of running every view)."""
    import duckdb

    from pipeline.core.sql import quoted, sql_text
    from pipeline.warehouse.build import object_name

    columns: dict[tuple[str, str], list[str]] = {}
    for schema, table, column in con.execute(sql_text("queries/warehouse_columns.sql")).fetchall():
        columns.setdefault((schema, table), []).append(column)
    found = []
    for (schema, table), names in columns.items():
        hashed = ", ".join(f"bit_xor(hash({quoted(name)}))" for name in names)
        whole = f"{quoted(schema)}.{quoted(table)}"
        try:
            con.execute(f"select {hashed} from {whole}").fetchall()  # noqa: S608
        except duckdb.Error as exc:
            found.append(
                f"table {object_name(schema, table)} cannot be read "
                f"({' '.join(str(exc).split())}): remove {path} and run "
                f"{lk.command_on(lake, 'score')}, which builds it from nothing"
            )
    return found


def check_state(lake: Path) -> list[str]:
    """The ledger and the schema names (the rubric's files are check_rubric's)."""
    from pipeline.storage.state import LEDGER, SCHEMA, needed_repairs

    return [
        f"{finding.why}; the next run, score or nightly mends it ({finding.action})"
        for finding in needed_repairs(lake).found
        if finding.name in (LEDGER, SCHEMA)
    ]


CHECKS: dict[str, Callable[[Path], list[str] | Found]] = {
    "state": check_state,
    "parts": check_parts,
    "lines": check_lines,
    "rubric": check_rubric,
    "scores": check_scores,
    "warehouse": check_warehouse,
}


def check_lake_locked(lake: Path) -> CheckReport:
    """check_lake(), for a caller that already holds the lake's lock (the nightly job)."""
    report = CheckReport(lake=str(lake))
    for name, check in CHECKS.items():
        report.checked.append(name)
        try:
            found = check(lake)
        except Exception as exc:  # a check that cannot even read is itself a violation
            found = [f"could not be checked ({type(exc).__name__}: {exc})"]
        if isinstance(found, Found):
            report.notes.extend(f"{name}: {note}" for note in found.notes)
            found = found.violations
        report.violations.extend(f"{name}: {problem}" for problem in found)
    try:
        report.notes.extend(f"lines: {note}" for note in attempts_landed_twice(lake))
    except Exception as exc:  # as a check that cannot read
        report.violations.append(f"lines: could not be checked ({type(exc).__name__}: {exc})")
    return report


def check_lake(lake: Path) -> CheckReport:
    """Every invariant of the lake, read under its lock; see the module docstring."""
    with lk.reading_lock(lake):
        return check_lake_locked(lake)


__all__ = ["CHECKS", "CheckReport", "Found", "check_lake", "check_lake_locked"]
