"""The command line (CONTRACT section 7): thin commands over the stage modules.

Exit codes: 0 done (quarantined records are not an error); 2 bad usage or a
refused rubric, before any work; 1 anything else that failed.
"""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from pipeline.lake import DEFAULT_LAKE, InputError, LakeBusyError
from pipeline.rubric import Rubric, RubricError, load_rubric
from pipeline.warehouse import WarehouseError

if TYPE_CHECKING:
    import polars as pl


def _flags_show_no_type() -> None:
    """typer 0.29 shows ``<bool>`` beside a flag (--json, --help) as if it took a value."""
    from typer.core import TyperOption

    shown = getattr(TyperOption, "display_type_rich", None)
    if shown is None:  # a typer without the quirk
        return

    def display_type_rich(self: TyperOption, ctx: Any) -> str | None:
        return None if self.is_flag else shown(self, ctx)

    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


def _usage_errors_on_one_line() -> None:
    """typer draws a usage error as a five-line panel; a script's log wants one line.

    Its error path, taken without rich (and without importing typer.rich_utils, which
    costs start-up time on every command), calls the exception's ``show``: that is
    replaced by one line. Help keeps its rich layout (only errors are affected).
    """
    from typer import core
    from typer._click.exceptions import NoArgsIsHelpError, UsageError

    run = getattr(core, "_main", None)
    if run is None:  # a typer laid out differently: keep its own messages
        return

    def plain_errors(*args: Any, **kwargs: Any) -> Any:
        return run(*args, **{**kwargs, "rich_markup_mode": None})

    def one_line(exc: UsageError, file: Any = None) -> None:
        if isinstance(exc, NoArgsIsHelpError):  # rich printed the help already
            return
        hint = f" (see {exc.ctx.command_path} --help)" if exc.ctx is not None else ""
        message = " ".join(exc.format_message().split())
        errors.print(f"[bold red]usage:[/] {escape(message + hint)}", highlight=False)

    core._main = plain_errors
    UsageError.show = NoArgsIsHelpError.show = one_line  # type: ignore[assignment,method-assign]


_flags_show_no_type()

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Graded agent runs and mcp-xray surface grades into a DuckDB warehouse.",
)
console = Console(soft_wrap=True)
errors = Console(stderr=True, soft_wrap=True)
_usage_errors_on_one_line()

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
DEFAULT_SAMPLE = Path("data/sample")


class Engine(StrEnum):
    local = "local"
    spark = "spark"


LakeOption = Annotated[
    Path, typer.Option("--lake", help="Folder where everything lands, as Parquet.")
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
SparkMasterOption = Annotated[
    str,
    typer.Option(
        "--spark-master", help="Spark master URL for --engine spark (e.g. spark://host:7077)."
    ),
]
RubricOption = Annotated[
    Path | None, typer.Option("--rubric", help="Rubric TOML file; defaults apply to keys it omits.")
]


def _rubric_or_exit(path: Path | None) -> Rubric:
    """Refuse a bad rubric before anything is read or written (exit 2)."""
    try:
        return load_rubric(path)
    except RubricError as exc:
        errors.print(f"[bold red]refused rubric:[/] {exc}", highlight=False)
        raise typer.Exit(EXIT_USAGE) from exc


def _inputs_or_exit(inputs: list[Path]) -> list[Path]:
    missing = [str(p) for p in inputs if not p.exists()]
    if missing:
        errors.print(f"[bold red]no such input:[/] {', '.join(missing)}", highlight=False)
        raise typer.Exit(EXIT_USAGE)
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
    chosen = _rubric_or_exit(rubric)
    paths = _inputs_or_exit(inputs or [DEFAULT_SAMPLE])
    from pipeline import jobs
    from pipeline.reader import Limits

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
    from pipeline import jobs
    from pipeline.reader import Limits

    paths = _inputs_or_exit(inputs)
    report = jobs.ingest(paths, lake, limits=Limits(max_record_bytes, max_depth))
    jobs.print_ingest_report(console, report)


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
    spark_master: SparkMasterOption = "local[2]",
) -> None:
    """Rescore everything landed under the rubric and refresh the warehouse."""
    chosen = _rubric_or_exit(rubric)
    from pipeline import jobs

    if dry_run:
        from pipeline import lineage

        diff = jobs.dry_run(lake, chosen)
        lineage.print_diff(console, diff, as_json=as_json)
        return
    result = jobs.score(lake, chosen, engine=engine.value, spark_master=spark_master)
    jobs.print_score_result(console, result)


@app.command()
def nightly(
    inbox: Annotated[Path, typer.Option("--inbox", help="Folder where new graded runs arrive.")],
    lake: LakeOption = DEFAULT_LAKE,
    rubric: RubricOption = None,
    engine: EngineOption = Engine.local,
    spark_master: SparkMasterOption = "local[2]",
) -> None:
    """Land new inbox files, score them, rescore all history when the rubric changed."""
    chosen = _rubric_or_exit(rubric)
    _inputs_or_exit([inbox])
    from pipeline import nightly as job

    summary = job.nightly(inbox, lake, chosen, engine=engine.value, spark_master=spark_master)
    job.print_summary(console, summary)


@app.command("rescore-diff")
def rescore_diff(
    rubric_from: Annotated[str, typer.Option("--from", help="rubric_id before.")],
    rubric_to: Annotated[str, typer.Option("--to", help="rubric_id after.")],
    lake: LakeOption = DEFAULT_LAKE,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """What a rubric change did: changed scores and pass/fail by env type, ranking moves."""
    from pipeline import jobs, lineage

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


@app.command()
def simulate(
    out: Annotated[Path, typer.Option("--out", help="Folder to write.")] = DEFAULT_SAMPLE,
    seed: Annotated[int, typer.Option("--seed")] = 7,
) -> None:
    """Write the deterministic sample data (task grades, mcp-xray reports, bad lines)."""
    from pipeline import simulate as sim

    written = sim.write_sample(out, seed=seed)
    for path in written:
        console.print(f"wrote {path}", highlight=False)


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
        bool, typer.Option("--fail-on-regression", help="Exit 1 when the verdict is regression.")
    ] = False,
) -> None:
    """Is the candidate version better or worse than the baseline, where, and why?"""
    from pipeline import compare as cmp

    code = cmp.run_compare(
        lake=lake,
        agent=agent,
        baseline=baseline,
        candidate=candidate,
        as_json=as_json,
        html=html,
        fail_on_regression=fail_on_regression,
        console=console,
    )
    raise typer.Exit(code)


@app.command()
def history(
    agent: Annotated[str, typer.Option("--agent")],
    lake: LakeOption = DEFAULT_LAKE,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Every version of an agent in order, each step's verdict against the one before."""
    from pipeline import compare as cmp

    raise typer.Exit(cmp.run_history(lake=lake, agent=agent, as_json=as_json, console=console))


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

    from pipeline import query as q
    from pipeline.tables import print_table

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
        int,
        typer.Option("--max-rows", min=1, help="Rows in a table or markdown (CSV, JSON: all)."),
    ] = 1000,
) -> None:
    """Read the warehouse views; a statement that would write is refused (exit 2)."""
    from pipeline import query as q

    chosen = _query_format(output, as_json, as_csv)
    try:
        results = list(q.run_query(lake, sql))
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
        print_query_result(result.frame, chosen, max_rows)


@app.command("replay-quarantine")
def replay_quarantine(
    lake: LakeOption = DEFAULT_LAKE,
    rubric: RubricOption = None,
) -> None:
    """Re-ingest quarantined lines (e.g. after adding an env type to the rubric)."""
    chosen = _rubric_or_exit(rubric) if rubric is not None else None
    from pipeline import replay

    report = replay.replay_quarantine(lake, chosen)
    console.print(
        f"replayed {report.tried} of {report.held} quarantined line(s) under rubric "
        f"{report.rubric_id}: {report.landed_task_runs} task and {report.landed_surface_runs} "
        f"surface run(s) landed, {report.skipped_duplicates} already landed, "
        f"{report.still_quarantined} still quarantined, {report.not_replayable} not replayable "
        f"(text not kept whole) in {report.seconds:.2f}s",
        highlight=False,
    )


def main() -> None:
    """Typer reports usage errors itself (exit 2); anything else that fails exits 1."""
    try:
        app()
    except LakeBusyError as exc:
        errors.print(f"[bold red]busy:[/] {exc}", highlight=False)
        sys.exit(EXIT_FAILED)
    except (InputError, WarehouseError) as exc:
        errors.print(f"[bold red]failed:[/] {exc}", highlight=False)
        sys.exit(EXIT_FAILED)
    except Exception as exc:
        errors.print(f"[bold red]failed:[/] {type(exc).__name__}: {exc}", highlight=False)
        sys.exit(EXIT_FAILED)
