"""Terminal output of the lake commands: the tables and lines a user reads.

The jobs return data (pipeline/jobs/); turning it into text happens here only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from pipeline.cli.tables import print_table
from pipeline.core import jsonsafe
from pipeline.core.visible import visible
from pipeline.jobs.results import IngestReport, RunSummary, ScoreResult

if TYPE_CHECKING:
    import polars as pl

    from pipeline.jobs.lineage import RescoreDiff
    from pipeline.jobs.nightly import NightlySummary

# The warehouse, the ingest's schema news and the jobs' summaries are imported by the
# functions that print them: `score` prints one line, and needs none of them (nor PyArrow
# and NumPy, which `pipeline.jobs.nightly` brings in through the lake check).

FIRST_QUERY = "select * from by_agent order by agent, agent_version, env_type;"


def print_ingest_report(console: Console, report: IngestReport) -> None:
    table = Table(title=f"ingest {report.batch_id}", show_header=True)
    table.caption = (
        "landed = task + surface; skipped = duplicates + blank + seen "
        "(bad lines quarantined before)"
    )
    columns = (
        "files",
        "lines",
        "task",
        "surface",
        "quarantined",
        "duplicates",
        "blank",
        "seen",
        "s",
    )
    for column in columns:
        table.add_column(column, justify="right")
    table.add_row(
        str(report.files),
        str(report.lines_read),
        str(report.landed_task_runs),
        str(report.landed_surface_runs),
        str(report.quarantined),
        str(report.skipped_duplicates),
        str(report.skipped_blank),
        str(report.already_quarantined),
        f"{report.seconds:.2f}",
    )
    print_table(console, table)
    for line in news_lines(report.schema_news):
        console.print(line, highlight=False, markup=False)
    for note in report.notes:
        console.print(f"note: {visible(note)}", highlight=False, markup=False)


def news_lines(news: dict[str, list[str]]) -> list[str]:
    """One line per kind of name the lake had never held (nothing when there is none)."""
    from pipeline.ingest import evolution

    return [
        f"new {evolution.NEWS_LABELS[key]}: {', '.join(map(_shown_name, names))}"
        for key, names in news.items()
        if names
    ]


def _shown_name(name: str) -> str:
    """A name from data as a reader can see it: quoted (JSON) when it is empty, has spaces,
    commas or characters that do not print."""
    plain = name and name.isprintable() and not any(c.isspace() or c in ',"' for c in name)
    return name if plain else json.dumps(name)


def rubric_change_line(
    before: str | None, after: str, task_runs: int, surface_grades: int
) -> str | None:
    """What an explicit rubric changed, in one line (None when it changed nothing)."""
    if before == after:
        return None
    if before is None:
        return f"rubric: the lake starts with {visible(after)}"
    return (
        f"rubric changed: {visible(before)} -> {visible(after)}; {task_runs} task run(s) and "
        f"{surface_grades} surface grade(s) rescored"
    )


def print_score_result(console: Console, result: ScoreResult) -> None:
    change = rubric_change_line(
        result.rubric_before, result.rubric_id, result.task_runs, result.surface_runs
    )
    if change:
        console.print(change, highlight=False, markup=False)
    console.print(
        f"scored {result.task_runs} task runs and {result.surface_runs} surface grades "
        f"({'all' if result.full else 'new'} parts: {result.parts}) "
        f"under rubric {visible(result.rubric_id)} in {result.seconds:.2f}s",
        highlight=False,
        markup=False,
    )
    for note in result.notes:
        console.print(f"note: {visible(note)}", highlight=False, markup=False)


def print_run_summary(console: Console, summary: RunSummary, lake: Path) -> None:
    print_ingest_report(console, summary.ingest)
    print_score_result(console, summary.score)
    table = Table(title="runs and mean score by agent and version")
    for column in (
        "agent",
        "version",
        "runs",
        "grader errors",
        "mean_score_runs",
        "pass_rate_runs",
    ):
        table.add_column(column, justify="right" if column not in ("agent", "version") else "left")
    for agent, version, runs, errors_, mean, rate in summary.by_version.iter_rows():
        table.add_row(
            str(agent),
            str(version),
            str(runs),
            str(errors_),
            "-" if mean is None else f"{mean:.3f}",
            "-" if rate is None else f"{rate:.1%}",
        )
    print_table(console, table)
    if summary.by_server.height:
        grades = Table(title="surface grades: each server's latest version")
        for column in ("server", "version", "versions", "overall", "letter", "since previous"):
            grades.add_column(
                column, justify="left" if column in ("server", "version") else "right"
            )
        for server, version, versions, overall, letter, delta in summary.by_server.iter_rows():
            grades.add_row(
                str(server),
                str(version),
                str(versions),
                "-" if overall is None else f"{overall:.1f}",
                letter or "-",
                "-" if delta is None else f"{delta:+.1f}",
            )
        print_table(console, grades)
    print_open_commands(console, lake)


def print_open_commands(console: Console, lake: Path) -> None:
    """How to read the warehouse: the pipeline's query command, and DuckDB's own shell."""
    from pipeline.warehouse import open_commands, warehouse_path

    commands = open_commands(lake, FIRST_QUERY)
    lines = [
        f"warehouse: {warehouse_path(lake)} (one self-contained file: copy or move it "
        f"anywhere; {commands['readers']} opens it)",
        f"query it:  {commands['query']}",
        f"or open it in DuckDB's shell:  {commands['shell']}",
    ]
    if "shell_install" in commands:
        lines.append(f"  (no duckdb command? {commands['shell_install']})")
    for line in lines:
        # Commands stay on one line however narrow the terminal, so they paste whole.
        console.print(line, highlight=False, markup=False, soft_wrap=True)


def print_nightly_summary(console: Console, summary: NightlySummary) -> None:
    if summary.nothing_to_do:
        console.print(
            visible(
                f"nothing to do: no new files in {summary.inbox} and the lake is already "
                f"scored under rubric {summary.rubric_after}"
            ),
            highlight=False,
            markup=False,
        )
    table = Table(title="nightly run", show_header=False)
    table.add_column("what")
    table.add_column("value", justify="right")
    rows: list[tuple[str, object]] = [
        ("files in inbox", summary.files_in_inbox),
        ("new files", summary.files_new),
        ("lines read", summary.lines_read),
        ("landed (task runs)", summary.landed_task_runs),
        ("landed (surface grades)", summary.landed_surface_runs),
        ("quarantined", summary.quarantined),
        ("skipped (duplicates)", summary.skipped_duplicates),
        ("skipped (blank)", summary.skipped_blank),
        ("skipped (seen bad lines)", summary.already_quarantined),
        ("scored (task runs)", summary.task_runs_scored),
        ("scored (surface grades)", summary.surface_grades_scored),
        ("full rescore", "yes" if summary.full_rescore else "no"),
        ("rubric before", summary.rubric_before or "-"),
        ("rubric after", summary.rubric_after or "-"),
        *((f"seconds: {stage}", f"{value:.3f}") for stage, value in summary.seconds.items()),
    ]
    for what, value in rows:
        table.add_row(what, str(value))
    print_table(console, table)
    for line in news_lines(summary.schema_news):
        console.print(line, highlight=False, markup=False)
    change = rubric_change_line(
        summary.rubric_before,
        summary.rubric_after or "",
        summary.task_runs_scored,
        summary.surface_grades_scored,
    )
    if change:
        console.print(change, highlight=False, markup=False)
    for note in summary.notes:
        console.print(f"note: {visible(note)}", highlight=False, markup=False)
    for violation in summary.check_violations:
        console.print(f"check: {visible(violation)}", highlight=False, markup=False)
    for note in summary.check_notes:
        console.print(f"check note: {visible(note)}", highlight=False, markup=False)
    verdict = "all invariants hold" if summary.check_ok else "VIOLATIONS (see above)"
    console.print(f"lake check: {verdict}", highlight=False)
    console.print(f"summary: {visible(str(summary.summary_file))}", highlight=False, markup=False)


def print_rescore_diff(console: Console, diff: RescoreDiff, *, as_json: bool) -> None:
    if as_json:
        console.print_json(jsonsafe.dumps(diff.to_dict()))
        return
    table = Table(title=f"rescore {diff.rubric_from} -> {diff.rubric_to}, by env type")
    for column in diff.by_env_type.columns:
        table.add_column(column, justify="left" if column == "env_type" else "right")
    for row in diff.by_env_type.rows():
        table.add_row(*(_cell(value) for value in row))
    print_table(console, table)
    moves = Table(title="agent versions by mean score")
    for column in diff.ranking.columns:
        moves.add_column(column, justify="left" if column.startswith("agent") else "right")
    for row in diff.ranking.rows():
        moves.add_row(*(_cell(value) for value in row))
    print_table(console, moves)
    for note in [*diff.unscored_notes(), *diff.notes]:
        console.print(f"note: {visible(note)}", highlight=False, markup=False)
    if diff.surface_changes.is_empty() and diff.letter_distribution.is_empty():
        return
    _print_frame(
        console,
        diff.surface_changes,
        f"surface grades that move ({diff.surface_changes.height} server(s), latest version)",
        left=("server", "server_version", "letter_from", "letter_to"),
    )
    _print_frame(console, diff.letter_distribution, "fleet letters", left=("letter",))


def _print_frame(console: Console, frame: pl.DataFrame, title: str, left: tuple[str, ...]) -> None:
    table = Table(title=title)
    for column in frame.columns:
        table.add_column(column, justify="left" if column in left else "right")
    for row in frame.rows():
        table.add_row(*(_cell(value) for value in row))
    print_table(console, table)


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    return "-" if value is None else str(value)
