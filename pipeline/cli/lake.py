"""The lake commands (CONTRACT section 7): run, ingest, score, nightly, check and
replay-quarantine, each a thin call of its job (pipeline/jobs/) and its printing."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from pipeline.cli.options import (
    DEFAULT_SAMPLE,
    EXIT_FAILED,
    EXIT_OK,
    Engine,
    EngineOption,
    JsonOption,
    LakeOption,
    MaxBytesOption,
    MaxDepthOption,
    RubricOption,
    SparkMasterOption,
    console,
    engine_or_exit,
    inputs_or_exit,
    lake_or_exit,
    rubric_or_exit,
    settings_or_exit,
    usage_error,
)
from pipeline.core.settings import Settings
from pipeline.core.visible import visible
from pipeline.rubric import Rubric
from pipeline.storage.lake import DEFAULT_LAKE


def _landing_or_exit(
    inputs: list[Path],
    lake: Path,
    flags: dict[str, int | None],
    rubric: str | None = None,
) -> tuple[Settings, Rubric | None, list[Path]]:
    """What run and ingest check before any work, in this order, else exit 2: the settings
    with the command's flags, the lake (created if new), the rubric given, the inputs."""
    settings = settings_or_exit(**flags)
    lake_or_exit(lake, may_create=True)
    chosen = rubric_or_exit(rubric, lake)
    return settings, chosen, inputs_or_exit(inputs, lake)


def run(
    inputs: Annotated[list[Path] | None, typer.Argument(help="Files or directories.")] = None,
    lake: LakeOption = DEFAULT_LAKE,
    rubric: RubricOption = None,
    max_record_bytes: MaxBytesOption = None,
    max_depth: MaxDepthOption = None,
) -> None:
    """Ingest, score and refresh the warehouse (no INPUT: data/sample/)."""
    flags = {"max_record_bytes": max_record_bytes, "max_depth": max_depth}
    settings, chosen, paths = _landing_or_exit(inputs or [DEFAULT_SAMPLE], lake, flags, rubric)
    from pipeline.jobs import commands as jobs

    summary = jobs.run(paths, lake, chosen, settings)
    from pipeline.cli import printing

    printing.print_run_summary(console, summary, lake)


def ingest(
    inputs: Annotated[list[Path], typer.Argument(help="Files or directories.")],
    lake: LakeOption = DEFAULT_LAKE,
    max_record_bytes: MaxBytesOption = None,
    max_depth: MaxDepthOption = None,
) -> None:
    """Validate, land and score graded runs; quarantine what is malformed."""
    from pipeline.jobs import commands as jobs

    flags = {"max_record_bytes": max_record_bytes, "max_depth": max_depth}
    settings, _, paths = _landing_or_exit(inputs, lake, flags)
    report = jobs.ingest(paths, lake, settings=settings)
    from pipeline.cli import printing

    printing.print_ingest_report(console, report)
    if report.scored is not None:
        printing.print_score_result(console, report.scored)


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
        raise usage_error("--json needs --dry-run (a real rescoring prints its summary)")
    if dry_run and engine is not Engine.local:
        raise usage_error("--dry-run scores here; it does not take --engine spark")
    settings = settings_or_exit()
    runner = engine_or_exit(engine, spark_master)
    lake_or_exit(lake)
    chosen = rubric_or_exit(rubric, lake)
    from pipeline.cli import printing
    from pipeline.jobs import commands as jobs

    if dry_run:
        diff = jobs.dry_run(lake, chosen, settings)
        printing.print_rescore_diff(console, diff, as_json=as_json)
        if not as_json:
            console.print(
                "dry run: nothing was written; the lake stays under rubric "
                + visible(diff.rubric_from),
                highlight=False,
                markup=False,
            )
        return
    result = jobs.score(lake, chosen, engine=runner, settings=settings)
    printing.print_score_result(console, result)


def nightly(
    inbox: Annotated[Path, typer.Option("--inbox", help="Folder where new graded runs arrive.")],
    lake: LakeOption = DEFAULT_LAKE,
    rubric: RubricOption = None,
    engine: EngineOption = Engine.local,
    spark_master: SparkMasterOption = None,
) -> None:
    """Land new inbox files, score them, rescore all history when the rubric changed."""
    settings = settings_or_exit()
    runner = engine_or_exit(engine, spark_master)
    lake_or_exit(lake)
    chosen = rubric_or_exit(rubric, lake)
    if inbox.exists() and not inbox.is_dir():
        raise usage_error(f"--inbox is not a folder: {inbox}")
    inputs_or_exit([inbox], lake)
    from pipeline.cli import printing
    from pipeline.jobs import nightly as job

    summary = job.nightly(inbox, lake, chosen, engine=runner, settings=settings)
    printing.print_nightly_summary(console, summary)
    if summary.check_ok is False:
        # The night's work is committed; what the check found is for a person (cron mails a
        # failing job's output), not for the next night to pass over.
        raise typer.Exit(EXIT_FAILED)


def check(lake: LakeOption = DEFAULT_LAKE, as_json: JsonOption = False) -> None:
    """Verify the lake's invariants: exit 0 when all hold, 1 listing each violation."""
    settings = settings_or_exit()  # DuckDB's limits apply to check's reads too
    lake_or_exit(lake)
    import json

    from pipeline.core.settings import use_settings
    from pipeline.jobs.check import check_lake

    with use_settings(settings):
        report = check_lake(lake)
    if as_json:
        document = {
            "lake": report.lake,
            "ok": report.ok,
            "checked": report.checked,
            "violations": report.violations,
            "notes": report.notes,
        }
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    else:
        for violation in report.violations:
            console.print(f"violation: {visible(violation)}", highlight=False, markup=False)
        for note in report.notes:
            console.print(f"note: {visible(note)}", highlight=False, markup=False)
        verdict = "all invariants hold" if report.ok else f"{len(report.violations)} violation(s)"
        console.print(
            f"{visible(str(lake))}: {verdict} ({', '.join(report.checked)})",
            highlight=False,
            markup=False,
        )
    raise typer.Exit(EXIT_OK if report.ok else EXIT_FAILED)


def replay_quarantine(lake: LakeOption = DEFAULT_LAKE, rubric: RubricOption = None) -> None:
    """Re-ingest quarantined lines, say once the rubric knows their env type."""
    settings = settings_or_exit()
    lake_or_exit(lake)
    chosen = rubric_or_exit(rubric, lake)
    from pipeline.cli import printing
    from pipeline.jobs import replay

    report = replay.replay_quarantine(lake, chosen, settings=settings)
    if report.scored is not None:
        change = printing.rubric_change_line(
            report.scored.rubric_before,
            report.scored.rubric_id,
            report.scored.task_runs,
            report.scored.surface_runs,
        )
        if change:
            console.print(change, highlight=False, markup=False)
    console.print(
        f"replayed {report.tried} of {report.held} quarantined line(s) under rubric "
        f"{visible(report.rubric_id)}: {report.landed_task_runs} task and "
        f"{report.landed_surface_runs} surface run(s) landed, "
        f"{report.skipped_duplicates} already landed, "
        f"{report.still_quarantined} still quarantined, {report.not_replayable} not replayable "
        f"(no whole record kept to read again) in {report.seconds:.2f}s",
        highlight=False,
        markup=False,
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
    for note in report.notes:
        console.print(f"note: {visible(note)}", highlight=False, markup=False)
