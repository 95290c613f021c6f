"""The command line (CONTRACT section 7): thin commands over the stage modules.

Exit codes: 0 done (quarantined records are not an error); 2 bad usage or a
refused rubric, before any work; 1 anything else that failed.
"""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from pipeline.lake import DEFAULT_LAKE, InputError, LakeBusyError
from pipeline.rubric import Rubric, RubricError, load_rubric
from pipeline.warehouse import WarehouseError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Graded agent runs and mcp-xray surface grades into a DuckDB warehouse.",
)
console = Console(soft_wrap=True)
errors = Console(stderr=True, soft_wrap=True)

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


@app.command()
def query(
    sql: Annotated[str, typer.Argument(help="SQL: SELECT, FROM, WITH, DESCRIBE, SHOW, EXPLAIN.")],
    lake: LakeOption = DEFAULT_LAKE,
    as_json: Annotated[bool, typer.Option("--json", help="Rows as a JSON array.")] = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Rows as CSV with a header.")] = False,
    max_rows: Annotated[
        int,
        typer.Option(
            "--max-rows",
            min=0,
            help="Rows fetched per statement (streamed; the rest are not computed).",
        ),
    ] = 1000,
) -> None:
    """Read the warehouse views; a statement that would write is refused (exit 2)."""
    from rich.table import Table

    from pipeline import query as q

    if as_json and as_csv:
        errors.print("[bold red]refused:[/] choose one of --json and --csv", highlight=False)
        raise typer.Exit(EXIT_USAGE)
    try:
        results = list(q.run_query(lake, sql, q.QueryLimits(max_rows=max_rows)))
    except q.QueryRefused as exc:
        errors.print(f"[bold red]refused:[/] {exc}", highlight=False)
        raise typer.Exit(EXIT_USAGE) from exc
    except q.QueryError as exc:
        errors.print(f"[bold red]query failed:[/] {exc}", highlight=False)
        raise typer.Exit(EXIT_FAILED) from exc
    for result in results:
        if result.truncated:
            errors.print(
                f"note: only the first {max_rows} rows were fetched (--max-rows)", highlight=False
            )
        if as_json:
            sys.stdout.write(q.as_json(result.frame) + "\n")
            continue
        if as_csv:
            sys.stdout.write(q.as_csv(result.frame))
            continue
        shown = q.flat(result.frame)
        more = "+" if result.truncated else ""
        table = Table(caption=f"{result.frame.height}{more} row(s)")
        for column in shown.columns:
            table.add_column(column, overflow="fold")
        for row in shown.rows():
            table.add_row(*("∅" if v is None else str(v) for v in row))
        console.print(table, highlight=False, markup=False)


@app.command()
def check(
    lake: LakeOption = DEFAULT_LAKE,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Verify the lake's invariants: exit 0 when all hold, 1 listing each violation."""
    if not lake.is_dir() or not (lake / "_state").is_dir():
        errors.print(
            f"[bold red]usage:[/] {lake} is not a lake (no _state/ folder)", highlight=False
        )
        raise typer.Exit(EXIT_USAGE)
    from pipeline.check import check_lake

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
