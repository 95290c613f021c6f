"""The command line (CONTRACT section 7): thin commands over the stage modules.

Exit codes: 0 done (quarantined records are not an error); 2 bad usage or a
refused rubric, before any work; 1 anything else that failed.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

# typer vendors click; its usage errors are not re-exported under a public name.
from typer._click.exceptions import NoArgsIsHelpError, UsageError
from typer.core import TyperGroup

from pipeline.rubric import Rubric, RubricError, load_rubric
from pipeline.storage.lake import (
    DEFAULT_LAKE,
    InputError,
    LakeBusyError,
    StateFileError,
    is_lake,
    not_a_lake,
)

if TYPE_CHECKING:
    import polars as pl

console = Console(soft_wrap=True)
errors = Console(stderr=True, soft_wrap=True)

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
DEFAULT_SAMPLE = Path("data/sample")
DEFAULT_MAX_ROWS = 1000


class Commands(TyperGroup):
    """Every way in (``python -m pipeline`` and typer's CliRunner alike) gets the same exit
    codes and one-line errors: a usage error exits 2, anything else that fails exits 1."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        try:
            code = super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        except Exception as exc:
            code = _failure_code(exc)
        if not standalone_mode:
            return code
        sys.exit(code or EXIT_OK)


def _failure_code(exc: Exception) -> int:
    """Say what failed on one line; the exit code for it."""
    if isinstance(exc, NoArgsIsHelpError):
        # The help asked for by giving nothing goes where --help goes: standard output.
        sys.stdout.write(exc.ctx.get_help() + "\n" if exc.ctx is not None else exc.format_message())
        return EXIT_USAGE
    if isinstance(exc, UsageError):
        hint = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx is not None else ""
        errors.print(f"[bold red]usage:[/] {escape(exc.format_message())}{hint}", highlight=False)
        return EXIT_USAGE
    if isinstance(exc, typer.Abort):
        errors.print("[bold red]aborted[/]", highlight=False)
        return EXIT_FAILED
    if isinstance(exc, LakeBusyError):
        errors.print(f"[bold red]busy:[/] {escape(str(exc))}", highlight=False)
        return EXIT_FAILED
    # Imported here, not at the top: the warehouse module pulls in DuckDB and Polars,
    # which `--help` and usage errors never need.
    from pipeline.warehouse import WarehouseError

    named = (
        ""
        if isinstance(exc, InputError | WarehouseError | StateFileError)
        else f"{type(exc).__name__}: "
    )
    errors.print(f"[bold red]failed:[/] {named}{escape(str(exc))}", highlight=False)
    return EXIT_FAILED


# Plain (not rich) help: rich help shows a `<bool>` value on flags that take none.
app = typer.Typer(
    cls=Commands,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="Graded agent runs and mcp-xray surface grades into a DuckDB warehouse.",
)


class Engine(StrEnum):
    local = "local"
    spark = "spark"


LakeOption = Annotated[
    Path,
    typer.Option("--lake", help="Folder where everything lands, as Parquet."),
]
MaxBytesOption = Annotated[
    int | None,
    typer.Option(
        "--max-record-bytes",
        min=1,
        help="Quarantine a record over this many bytes "
        "(default $PIPELINE_MAX_RECORD_BYTES or 16 MiB).",
    ),
]
MaxDepthOption = Annotated[
    int | None,
    typer.Option(
        "--max-depth",
        min=1,
        help="Quarantine a record nested deeper than this (default $PIPELINE_MAX_DEPTH or 64).",
    ),
]
EngineOption = Annotated[
    Engine,
    typer.Option("--engine", help="Where scoring runs: here (local) or on Apache Spark."),
]
# The word that names the built-in rubric; a file of that name is given as ./default.
DEFAULT_RUBRIC_WORD = "default"
RubricOption = Annotated[
    str | None,
    typer.Option(
        "--rubric",
        help="Rubric TOML file (defaults apply to keys it omits), or 'default' for the "
        "built-in rubric. Without it the lake's current rubric is used; given, it becomes "
        "the lake's.",
    ),
]


def _usage_error(message: str) -> typer.Exit:
    errors.print(f"[bold red]usage:[/] {message}", highlight=False)
    return typer.Exit(EXIT_USAGE)


def _rubric_or_exit(given: str | None, lake: Path) -> Rubric | None:
    """The rubric asked for (None: the lake's own); a bad one is refused before any work."""
    if given is None:
        return None
    try:
        rubric = load_rubric(None if given == DEFAULT_RUBRIC_WORD else Path(given))
    except RubricError as exc:
        errors.print(f"[bold red]refused rubric:[/] {exc}", highlight=False)
        raise typer.Exit(EXIT_USAGE) from exc
    from pipeline.jobs.commands import rubric_conflict

    conflict = rubric_conflict(lake, rubric) if is_lake(lake) else None
    if conflict:
        errors.print(f"[bold red]refused rubric:[/] {conflict}", highlight=False)
        raise typer.Exit(EXIT_USAGE)
    return rubric


def _lake_or_exit(lake: Path, *, may_create: bool = False) -> Path:
    """A lake that exists (or, for run and ingest, may be created there), else exit 2."""
    problem = not_a_lake(lake, may_create=may_create)
    if problem:
        raise _usage_error(problem)
    return lake


def _inputs_or_exit(inputs: list[Path], lake: Path) -> list[Path]:
    """Every INPUT exists and names at least one input file, else exit 2 naming it."""
    from pipeline.sources.files import INPUT_SUFFIXES, expand_inputs

    missing = [str(p) for p in inputs if not p.exists()]
    if missing:
        errors.print(f"[bold red]no such input:[/] {', '.join(missing)}", highlight=False)
        raise typer.Exit(EXIT_USAGE)
    empty = [str(p) for p in inputs if not expand_inputs([p], lake)]
    if empty:
        raise _usage_error(
            f"no input files ({', '.join('*' + s for s in INPUT_SUFFIXES)}) in {', '.join(empty)}"
        )
    return inputs


@app.command()
def run(
    inputs: Annotated[list[Path] | None, typer.Argument(help="Files or directories.")] = None,
    lake: LakeOption = DEFAULT_LAKE,
    rubric: RubricOption = None,
    max_record_bytes: MaxBytesOption = None,
    max_depth: MaxDepthOption = None,
) -> None:
    """Ingest, score and refresh the warehouse (no INPUT: data/sample/)."""
    _lake_or_exit(lake, may_create=True)
    chosen = _rubric_or_exit(rubric, lake)
    paths = _inputs_or_exit(inputs or [DEFAULT_SAMPLE], lake)
    from pipeline.jobs import commands as jobs
    from pipeline.sources.files import Limits

    summary = jobs.run(paths, lake, chosen, Limits(max_record_bytes, max_depth))
    jobs.print_run_summary(console, summary, lake)


@app.command()
def ingest(
    inputs: Annotated[list[Path], typer.Argument(help="Files or directories.")],
    lake: LakeOption = DEFAULT_LAKE,
    max_record_bytes: MaxBytesOption = None,
    max_depth: MaxDepthOption = None,
) -> None:
    """Validate and land graded runs; quarantine what is malformed."""
    from pipeline.jobs import commands as jobs
    from pipeline.sources.files import Limits

    _lake_or_exit(lake, may_create=True)
    paths = _inputs_or_exit(inputs, lake)
    report = jobs.ingest(paths, lake, limits=Limits(max_record_bytes, max_depth))
    jobs.print_ingest_report(console, report)
    if report.scored is not None:
        jobs.print_score_result(console, report.scored)


SparkMasterOption = Annotated[
    str | None,
    typer.Option(
        "--spark-master",
        help="Spark master URL for --engine spark (default local[2]; e.g. spark://host:7077).",
    ),
]
DEFAULT_SPARK_MASTER = "local[2]"


def _spark_master_or_exit(engine: Engine, spark_master: str | None) -> str:
    """--spark-master means something only with --engine spark; elsewhere it is refused."""
    if spark_master is not None and engine is not Engine.spark:
        raise _usage_error("--spark-master needs --engine spark")
    return spark_master or DEFAULT_SPARK_MASTER


@app.command()
def score(
    lake: LakeOption = DEFAULT_LAKE,
    rubric: RubricOption = None,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Score in memory and show the diff; replace nothing."),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="With --dry-run: print JSON.")] = False,
    engine: EngineOption = Engine.local,
    spark_master: SparkMasterOption = None,
) -> None:
    """Rescore everything landed under the rubric and refresh the warehouse."""
    if as_json and not dry_run:
        raise _usage_error("--json needs --dry-run (a real rescoring prints its summary)")
    if dry_run and engine is not Engine.local:
        raise _usage_error("--dry-run scores here; it does not take --engine spark")
    master = _spark_master_or_exit(engine, spark_master)
    _lake_or_exit(lake)
    chosen = _rubric_or_exit(rubric, lake)
    from pipeline.jobs import commands as jobs

    if dry_run:
        from pipeline.jobs import lineage

        diff = jobs.dry_run(lake, chosen)
        lineage.print_diff(console, diff, as_json=as_json)
        return
    result = jobs.score(lake, chosen, engine=engine.value, spark_master=master)
    jobs.print_score_result(console, result)


@app.command()
def nightly(
    inbox: Annotated[Path, typer.Option("--inbox", help="Folder where new graded runs arrive.")],
    lake: LakeOption = DEFAULT_LAKE,
    rubric: RubricOption = None,
    engine: EngineOption = Engine.local,
    spark_master: SparkMasterOption = None,
) -> None:
    """Land new inbox files, score them, rescore all history when the rubric changed."""
    master = _spark_master_or_exit(engine, spark_master)
    _lake_or_exit(lake)
    chosen = _rubric_or_exit(rubric, lake)
    _inputs_or_exit([inbox], lake)
    from pipeline.jobs import nightly as job

    summary = job.nightly(inbox, lake, chosen, engine=engine.value, spark_master=master)
    job.print_summary(console, summary)


@app.command("rescore-diff")
def rescore_diff(
    rubric_from: Annotated[str, typer.Option("--from", help="rubric_id before.")],
    rubric_to: Annotated[str, typer.Option("--to", help="rubric_id after.")],
    lake: LakeOption = DEFAULT_LAKE,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """What a rubric change did: changed scores and pass/fail by env type, ranking moves."""
    _lake_or_exit(lake)
    from pipeline.jobs import commands as jobs
    from pipeline.jobs import lineage

    known = jobs.known_rubrics(lake)
    unknown = [r for r in (rubric_from, rubric_to) if r not in known]
    if unknown:
        errors.print(
            f"[bold red]usage:[/] no scores under rubric {', '.join(unknown)}; "
            f"the lake holds: {', '.join(sorted(known)) or 'none'}",
            highlight=False,
        )
        raise typer.Exit(EXIT_USAGE)
    lineage.print_diff(console, lineage.rescore_diff(lake, rubric_from, rubric_to), as_json=as_json)


@app.command("surface-diff")
def surface_diff(
    server: Annotated[str, typer.Option("--server", help="server.name (else its fingerprint).")],
    from_version: Annotated[
        str | None, typer.Option("--from", help="Earlier version (default: the second latest).")
    ] = None,
    to_version: Annotated[
        str | None, typer.Option("--to", help="Later version (default: the latest).")
    ] = None,
    lake: LakeOption = DEFAULT_LAKE,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    fail_on_new: Annotated[
        str | None,
        typer.Option(
            "--fail-on-new",
            help="Exit 1 when a new or worse finding reaches this severity: "
            "low, medium (>= 0.4), high (>= 0.7) or a number in [0, 1].",
        ),
    ] = None,
    sarif: Annotated[
        Path | None, typer.Option("--sarif", help="Write the findings as SARIF 2.1.0.")
    ] = None,
) -> None:
    """Findings new, resolved, worse or better between two versions of an MCP server."""
    from pipeline.surface import diff as sd

    try:
        code = sd.run_surface_diff(
            lake=lake,
            server=server,
            from_version=from_version,
            to_version=to_version,
            as_json=as_json,
            fail_on_new=fail_on_new,
            sarif=sarif,
            console=console,
        )
    except sd.DiffUsageError as exc:
        errors.print(f"[bold red]usage:[/] {exc}", highlight=False)
        raise typer.Exit(EXIT_USAGE) from exc
    raise typer.Exit(code)


@app.command()
def compare(
    agent: Annotated[str, typer.Option("--agent")],
    baseline: Annotated[str, typer.Option("--baseline")],
    candidate: Annotated[str, typer.Option("--candidate")],
    lake: LakeOption = DEFAULT_LAKE,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    html: Annotated[
        Path | None, typer.Option("--html", help="Write a self-contained page.")
    ] = None,
    fail_on_regression: Annotated[
        bool,
        typer.Option(
            "--fail-on-regression",
            help="Exit 1 when the overall verdict is regression, or any env type's after a "
            "Holm correction over the env types.",
        ),
    ] = False,
) -> None:
    """Is the candidate version better or worse than the baseline, where, and why?"""
    _lake_or_exit(lake)
    from pipeline import compare as cmp

    _versions_or_exit(cmp.check_versions(lake, agent, [baseline, candidate]))
    result = cmp.fetch_comparison(lake, agent=agent, baseline=baseline, candidate=candidate)
    if as_json:
        _print_json(result.report, pretty=console.is_terminal)
    else:
        _print_blocks(cmp.render.comparison(result.report))
    if html is not None:
        html.parent.mkdir(parents=True, exist_ok=True)
        html.write_text(cmp.render_comparison(result.report, result.pairs), encoding="utf-8")
        if not as_json:
            console.print(f"wrote {html}", highlight=False)
    failed = fail_on_regression and result.report["gate"]["fails"]
    raise typer.Exit(EXIT_FAILED if failed else EXIT_OK)


@app.command()
def history(
    agent: Annotated[str, typer.Option("--agent")],
    lake: LakeOption = DEFAULT_LAKE,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Every version of an agent in order, each step's verdict against the one before."""
    _lake_or_exit(lake)
    from pipeline import compare as cmp

    rows = cmp.fetch_history(lake, agent, _versions_or_exit(cmp.check_versions(lake, agent, [])))
    if as_json:
        _print_json(cmp.history_document(agent, rows), pretty=False)
    else:
        _print_blocks(cmp.render.history(agent, rows))


def _versions_or_exit(checked: list[str] | str) -> list[str]:
    """The agent's versions, or exit 2 saying which agent or version is unknown."""
    if isinstance(checked, str):
        raise _usage_error(checked)
    return checked


def _print_json(document: Any, *, pretty: bool) -> None:
    from pipeline.core.jsonsafe import dumps

    text = dumps(document)
    console.print_json(text) if pretty else console.out(text, highlight=False)


def _print_blocks(blocks: Sequence[Any]) -> None:
    """Tables fitted to the console's width (numbers never cut), lines as markup."""
    from rich.table import Table

    from pipeline.cli.tables import print_table

    for block in blocks:
        if isinstance(block, Table):
            print_table(console, block)
        else:
            console.print(block, highlight=False)


class OutputFormat(StrEnum):
    table = "table"
    csv = "csv"
    json = "json"
    markdown = "markdown"


def _query_format(chosen: OutputFormat | None, as_json: bool, as_csv: bool) -> OutputFormat:
    """--json and --csv are short for --format json / csv; two different choices are refused."""
    asked = {f for f, on in ((OutputFormat.json, as_json), (OutputFormat.csv, as_csv)) if on}
    if chosen is not None:
        asked.add(chosen)
    if len(asked) > 1:
        names = " and ".join(sorted(f.value for f in asked))
        errors.print(f"[bold red]usage:[/] choose one output format, not {names}", highlight=False)
        raise typer.Exit(EXIT_USAGE)
    return asked.pop() if asked else OutputFormat.table


def _one_line(exc: Exception) -> str:
    """An error as one line of escaped text (DuckDB's messages span several)."""
    return escape(" ".join(str(exc).split()))


def print_query_result(frame: pl.DataFrame, output: OutputFormat, max_rows: int) -> None:
    from rich.table import Table
    from rich.text import Text

    from pipeline.cli.tables import print_table
    from pipeline.warehouse import query as q

    if output is OutputFormat.json:
        sys.stdout.write(q.as_json(frame) + "\n")
    elif output is OutputFormat.csv:
        sys.stdout.write(q.as_csv(frame))
    elif output is OutputFormat.markdown:
        sys.stdout.write(q.as_markdown(frame.head(max_rows)))
    elif frame.columns == list(q.EXPLAIN_COLUMNS):
        # A query plan is a drawing: as text, never squeezed into a table cell.
        for key, plan in frame.rows():
            sys.stdout.write(f"{key}:\n{plan}\n")
    else:
        shown = q.readable(frame.head(max_rows))
        more = f", the first {max_rows} shown" if frame.height > max_rows else ""
        table = Table(caption=f"{frame.height} row(s){more}")
        for name, dtype in frame.schema.items():
            table.add_column(name, justify="right" if dtype.is_numeric() else "left")
        for row in shown.rows():
            table.add_row(*(Text(value) for value in row))
        print_table(console, table, highlight=False)


@app.command()
def query(
    sql: Annotated[str, typer.Argument(help="SQL: SELECT, FROM, WITH, DESCRIBE, SHOW, EXPLAIN.")],
    lake: LakeOption = DEFAULT_LAKE,
    output: Annotated[
        OutputFormat | None,
        typer.Option(
            "--format",
            help="table (numbers rounded for reading, default), csv or json "
            "(every digit), markdown (rounded).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Same as --format json.")] = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Same as --format csv.")] = False,
    max_rows: Annotated[
        int | None,
        typer.Option(
            "--max-rows",
            min=1,
            help="Rows fetched per statement, in every format (default 1000; streamed: the "
            "rest are not computed).",
        ),
    ] = None,
) -> None:
    """Read the warehouse views; a statement that would write is refused (exit 2)."""
    from pipeline.warehouse import WarehouseError
    from pipeline.warehouse import query as q

    chosen = _query_format(output, as_json, as_csv)
    rows = max_rows or DEFAULT_MAX_ROWS
    _lake_or_exit(lake)
    try:
        results = list(q.run_query(lake, sql, q.QueryLimits(max_rows=rows)))
    except WarehouseError as exc:
        # No warehouse there (or --lake names a file): the --lake given is not a lake.
        errors.print(f"[bold red]usage:[/] {_one_line(exc)}", highlight=False)
        raise typer.Exit(EXIT_USAGE) from exc
    except q.QueryRefused as exc:
        errors.print(f"[bold red]refused:[/] {_one_line(exc)}", highlight=False)
        raise typer.Exit(EXIT_USAGE) from exc
    except q.QueryError as exc:
        errors.print(f"[bold red]query failed:[/] {_one_line(exc)}", highlight=False)
        raise typer.Exit(EXIT_FAILED) from exc
    for result in results:
        if result.truncated:
            errors.print(
                f"note: only the first {rows} rows were fetched (--max-rows)", highlight=False
            )
        print_query_result(result.frame, chosen, rows)


@app.command()
def check(
    lake: LakeOption = DEFAULT_LAKE,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Verify the lake's invariants: exit 0 when all hold, 1 listing each violation."""
    _lake_or_exit(lake)
    from pipeline.jobs.check import check_lake

    report = check_lake(lake)
    if as_json:
        import json

        sys.stdout.write(
            json.dumps(
                {
                    "lake": report.lake,
                    "ok": report.ok,
                    "checked": report.checked,
                    "violations": report.violations,
                },
                indent=2,
            )
            + "\n"
        )
    else:
        for violation in report.violations:
            console.print(f"violation: {violation}", highlight=False, markup=False)
        verdict = "all invariants hold" if report.ok else f"{len(report.violations)} violation(s)"
        console.print(f"{lake}: {verdict} ({', '.join(report.checked)})", highlight=False)
    raise typer.Exit(EXIT_OK if report.ok else EXIT_FAILED)


@app.command("replay-quarantine")
def replay_quarantine(
    lake: LakeOption = DEFAULT_LAKE,
    rubric: RubricOption = None,
) -> None:
    """Re-ingest quarantined lines (e.g. after adding an env type to the rubric)."""
    _lake_or_exit(lake)
    chosen = _rubric_or_exit(rubric, lake)
    from pipeline.jobs import commands as jobs
    from pipeline.jobs import replay

    report = replay.replay_quarantine(lake, chosen)
    if report.scored is not None:
        change = jobs.rubric_change_line(
            report.scored.rubric_before,
            report.scored.rubric_id,
            report.scored.task_runs + report.scored.surface_runs,
        )
        if change:
            console.print(change, highlight=False, markup=False)
    console.print(
        f"replayed {report.tried} of {report.held} quarantined line(s) under rubric "
        f"{report.rubric_id}: {report.landed_task_runs} task and {report.landed_surface_runs} "
        f"surface run(s) landed, {report.skipped_duplicates} already landed, "
        f"{report.still_quarantined} still quarantined, {report.not_replayable} not replayable "
        f"(text not kept whole) in {report.seconds:.2f}s",
        highlight=False,
    )
    if report.blocks:
        console.print(
            f"read again from their source files: {report.block_lines_read} line(s) of "
            f"{report.blocks} counted block(s); {report.block_task_runs} task and "
            f"{report.block_surface_runs} surface run(s) landed, {report.block_duplicates} "
            f"already landed; {report.blocks_resolved} block(s) resolved, their "
            f"{report.block_lines_quarantined_again} failing line(s) quarantined again "
            "(a block where nothing lands stays as it was)",
            highlight=False,
        )


def main() -> None:
    """``python -m pipeline``: exit codes come from ``Commands.main``."""
    app()
