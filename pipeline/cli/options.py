"""What every command shares: the consoles, the exit codes, the options, and the checks
that turn bad usage into one line on stderr and exit 2 before any work.

Nothing here imports the data stack (polars, duckdb, pandera): ``--help`` and usage
errors start without it (tests/unit/cli/test_cli_startup.py).
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from pipeline.core.settings import MAXIMA, SettingError, Settings, declared
from pipeline.core.visible import visible
from pipeline.rubric import Rubric, RubricError, load_rubric
from pipeline.storage.lake import is_lake, not_a_lake

if TYPE_CHECKING:
    from pipeline import engines

# No emoji: a ":skull:" in a name from data is shown as written, markup or not.
console = Console(soft_wrap=True, emoji=False)
errors = Console(stderr=True, soft_wrap=True, emoji=False)

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
DEFAULT_SAMPLE = Path("data/sample")
# The word that names the built-in rubric; a file of that name is given as ./default.
DEFAULT_RUBRIC_WORD = "default"


class Engine(StrEnum):
    local = "local"
    spark = "spark"


LakeOption = Annotated[
    Path,
    typer.Option("--lake", help="Folder where everything lands, as Parquet."),
]


def _setting_option(name: str, help: str) -> Any:  # typer's OptionInfo
    """The flag of the setting ``name``: its flag, variable, default and range as Settings
    declares them (pipeline/core/settings.py)."""
    setting = next(d for d in declared() if d.name == name)
    return typer.Option(
        setting.flag,
        min=1,
        max=MAXIMA[setting.unit],
        help=f"{help} (default ${setting.env} or {setting.default}).",
    )


MaxBytesOption = Annotated[
    int | None, _setting_option("max_record_bytes", "Quarantine a record over this many bytes")
]
MaxDepthOption = Annotated[
    int | None, _setting_option("max_depth", "Quarantine a record nested deeper than this")
]
EngineOption = Annotated[
    Engine,
    typer.Option("--engine", help="Where scoring runs: here (local) or on Apache Spark."),
]
SparkMasterOption = Annotated[
    str | None,
    typer.Option(
        "--spark-master",
        help="Spark master URL for --engine spark (default local[2]; e.g. spark://host:7077).",
    ),
]
RubricOption = Annotated[
    str | None,
    typer.Option(
        "--rubric",
        help="Rubric TOML file (defaults apply to keys it omits), or 'default' for the "
        "built-in rubric. Without it the lake's current rubric is used; given, it becomes "
        "the lake's.",
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]


def usage_error(message: str, *, label: str = "usage") -> typer.Exit:
    """Say ``message`` on one line of stderr (as written: a path or an extra's name in
    brackets is not markup); the exit (code 2) to raise. A newline from data (a version
    name listed in the message) is written ``\\n``: the message is one line."""
    one_line = visible(message).replace("\n", "\\n")
    errors.print(f"[bold red]{label}:[/] {escape(one_line)}", highlight=False)
    return typer.Exit(EXIT_USAGE)


def rubric_or_exit(given: str | None, lake: Path) -> Rubric | None:
    """The rubric asked for (None: the lake's own); a bad one is refused before any work."""
    if given is None:
        return None
    try:
        rubric = load_rubric(None if given == DEFAULT_RUBRIC_WORD else Path(given))
    except RubricError as exc:
        raise usage_error(str(exc), label="refused rubric") from exc
    from pipeline.storage.rubrics import rubric_conflict

    conflict = rubric_conflict(lake, rubric) if is_lake(lake) else None
    if conflict:
        raise usage_error(conflict, label="refused rubric")
    return rubric


def settings_or_exit(**flags: int | None) -> Settings:
    """The command's settings: the environment's, with the flags given on the command line;
    a bad PIPELINE_* value exits 2 naming it, before any work."""
    try:
        return Settings.from_env().with_flags(**flags)
    except SettingError as exc:
        raise usage_error(str(exc), label="bad setting") from exc


def lake_or_exit(lake: Path, *, may_create: bool = False, warehouse_will_do: bool = False) -> Path:
    """A lake that exists (or, for run and ingest, may be created there; for a command that
    reads only the warehouse, a folder holding a copied warehouse.duckdb), else exit 2."""
    problem = not_a_lake(lake, may_create=may_create, warehouse_will_do=warehouse_will_do)
    if problem:
        raise usage_error(problem)
    return lake


def warehouse_or_exit(lake: Path) -> Path:
    """A lake with a warehouse to read, else exit 2 (as ``query`` does), saying what builds
    it. A folder holding a copied warehouse.duckdb alone will do."""
    lake_or_exit(lake, warehouse_will_do=True)
    from pipeline.warehouse import WarehouseError, existing_warehouse

    try:
        existing_warehouse(lake)
    except WarehouseError as exc:
        raise usage_error(str(exc)) from exc
    return lake


def inputs_or_exit(inputs: list[Path], lake: Path) -> list[Path]:
    """Every INPUT exists and names at least one input file, else exit 2 naming it (and why
    an input given was not read: a symbolic link, not a regular file, a lake)."""
    from importlib.util import find_spec

    from pipeline.sources.discover import (
        INPUT_SUFFIXES,
        LAKE_SKIPPED,
        own_lake_note,
        scan_inputs,
    )
    from pipeline.sources.inspect.columns import MISSING_EXTRA
    from pipeline.sources.inspect.extract import is_inspect_log

    missing = [str(p) for p in inputs if not p.exists() and not p.is_symlink()]
    if missing:
        raise usage_error(f"no such input: {', '.join(missing)}")
    for given in inputs:
        scanned = scan_inputs([given], lake)
        if not scanned.files:
            suffixes = ", ".join("*" + s for s in INPUT_SUFFIXES)
            # The input's own note, and the lakes below it (a folder holding only a lake).
            why = [
                note
                for note in scanned.skipped
                if note.startswith(f"{given}: ") or note.endswith(LAKE_SKIPPED)
            ]
            walked = given.is_dir() and not given.is_symlink()
            inside = lake.resolve().is_relative_to(given.resolve())
            if walked and inside and lake.resolve() != given.resolve() and is_lake(lake):
                # Left out without a note (an inbox holding its lake would hear it nightly).
                why.append(own_lake_note(lake))
            raise usage_error(
                f"no input files ({suffixes}) in {given}" + "".join(f"; {w}" for w in why)
            )
        # Before a lake is made for them: a log no installed reader can open is refused here.
        if find_spec("inspect_ai") is None and any(map(is_inspect_log, scanned.files)):
            raise usage_error(MISSING_EXTRA)
    return inputs


def engine_or_exit(engine: Engine, spark_master: str | None) -> engines.Engine:
    """The engine scoring runs on, chosen here once; --spark-master means something only
    with --engine spark, elsewhere it is refused."""
    from pipeline.engines import DEFAULT_SPARK_MASTER, LocalEngine, SparkEngine

    if spark_master is not None and engine is not Engine.spark:
        raise usage_error("--spark-master needs --engine spark")
    if engine is Engine.spark:
        return SparkEngine(spark_master or DEFAULT_SPARK_MASTER)
    return LocalEngine()
