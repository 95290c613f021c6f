"""The comparison commands (CONTRACT section 7): compare and history (agent versions),
surface-diff (MCP server versions), rescore-diff (rubrics), and their printing."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pipeline.cli.options import (
    DEFAULT_RUBRIC_WORD,
    EXIT_FAILED,
    EXIT_OK,
    JsonOption,
    LakeOption,
    console,
    errors,
    lake_or_exit,
    usage_error,
    warehouse_or_exit,
)
from pipeline.core.visible import visible
from pipeline.storage.lake import DEFAULT_LAKE, command_on, write_text_atomic

if TYPE_CHECKING:
    from pipeline.surface.diff import SurfaceDiff


def rescore_diff(
    rubric_from: Annotated[
        str, typer.Option("--from", help="rubric_id before ('default': the built-in rubric).")
    ],
    rubric_to: Annotated[
        str, typer.Option("--to", help="rubric_id after ('default': the built-in rubric).")
    ],
    lake: LakeOption = DEFAULT_LAKE,
    as_json: JsonOption = False,
) -> None:
    """What a rubric change did: changed scores and pass/fail by env type, ranking moves."""
    lake_or_exit(lake)
    from pipeline.cli import printing
    from pipeline.jobs import lineage
    from pipeline.rubric import load_rubric
    from pipeline.storage.rubrics import known_rubrics

    # As --rubric default names it: the built-in rubric, by its content id.
    default_id = load_rubric(None).rubric_id
    rubric_from, rubric_to = (
        default_id if r == DEFAULT_RUBRIC_WORD else r for r in (rubric_from, rubric_to)
    )
    if rubric_from == rubric_to:
        # As compare and surface-diff refuse one version twice: a table of zeros, exit 0, is
        # a "nothing changed" no comparison found ('default' is its own id, so after it).
        raise usage_error(f"--from and --to are both rubric {rubric_from}: nothing to compare")
    known = known_rubrics(lake)
    unknown = [r for r in (rubric_from, rubric_to) if r not in known]
    if unknown:
        raise usage_error(
            f"no scores under rubric {', '.join(unknown)}; "
            f"the lake holds: {', '.join(sorted(known)) or 'none'}"
        )
    import polars as pl

    try:
        diff = lineage.rescore_diff(lake, rubric_from, rubric_to)
    except (OSError, pl.exceptions.PolarsError) as exc:
        # A damaged score file of a rubric no command works under any more (check names it).
        said = visible(" ".join(str(exc).split()))
        errors.print(
            f"a score file of {visible(rubric_from)} or {visible(rubric_to)} cannot be read "
            f"({said}); {command_on(lake, 'check')} names it",
            highlight=False,
            markup=False,
        )
        raise typer.Exit(EXIT_FAILED) from exc
    printing.print_rescore_diff(console, diff, as_json=as_json)


def surface_diff(
    server: Annotated[str, typer.Option("--server", help="server.name (else its fingerprint).")],
    from_version: Annotated[
        str | None,
        typer.Option(
            "--from", help="Earlier version, given with --to (neither: the latest two versions)."
        ),
    ] = None,
    to_version: Annotated[
        str | None,
        typer.Option(
            "--to", help="Later version, given with --from (neither: the latest two versions)."
        ),
    ] = None,
    lake: LakeOption = DEFAULT_LAKE,
    as_json: JsonOption = False,
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
    _not_a_folder("--sarif", sarif)
    warehouse_or_exit(lake)
    from pipeline.surface import diff as sd

    try:
        threshold = None if fail_on_new is None else sd.parse_severity(fail_on_new)
        diff = sd.fetch_diff(lake, server, from_version, to_version)
    except sd.DiffUsageError as exc:
        raise usage_error(str(exc)) from exc
    if sarif is not None:
        sd.write_sarif(diff, sarif)
    if as_json:
        console.out(json.dumps(diff.to_dict(threshold), default=str), highlight=False)
    else:
        print_surface_diff(diff, threshold)
        if sarif is not None:
            console.print(f"wrote {visible(str(sarif))}", highlight=False, markup=False)
    failed = threshold is not None and diff.failing(threshold).height > 0
    raise typer.Exit(EXIT_FAILED if failed else EXIT_OK)


def compare(
    agent: Annotated[str, typer.Option("--agent", help="The agent, as task_runs.agent names it.")],
    baseline: Annotated[str, typer.Option("--baseline", help="The version compared against.")],
    candidate: Annotated[str, typer.Option("--candidate", help="The version judged.")],
    lake: LakeOption = DEFAULT_LAKE,
    as_json: JsonOption = False,
    html: Annotated[
        Path | None, typer.Option("--html", help="Write a self-contained page.")
    ] = None,
    fail_on_regression: Annotated[
        bool,
        typer.Option(
            "--fail-on-regression",
            help="Exit 1 when the overall verdict is regression, when any env type's is after "
            "a Holm correction over the env types, or when fewer than 2 problems are paired "
            "(nothing measured).",
        ),
    ] = False,
) -> None:
    """Is the candidate version better or worse than the baseline, where, and why?"""
    if baseline == candidate:
        # Every pair would differ by nothing: a "no change" no comparison found.
        raise usage_error(f"--baseline and --candidate are both {baseline}: nothing to compare")
    _not_a_folder("--html", html)
    warehouse_or_exit(lake)
    from pipeline import compare as cmp
    from pipeline.compare import render

    _versions_or_exit(cmp.check_versions(lake, agent, [baseline, candidate]))
    result = cmp.fetch_comparison(lake, agent=agent, baseline=baseline, candidate=candidate)
    if as_json:
        print_json(result.report, pretty=console.is_terminal)
    else:
        print_blocks(render.comparison(result.report))
    if html is not None:
        write_text_atomic(cmp.render_comparison(result.report, result.pairs), html)
        if not as_json:
            console.print(f"wrote {visible(str(html))}", highlight=False, markup=False)
    failed = fail_on_regression and result.report["gate"]["fails"]
    raise typer.Exit(EXIT_FAILED if failed else EXIT_OK)


def history(
    agent: Annotated[str, typer.Option("--agent", help="The agent, as task_runs.agent names it.")],
    lake: LakeOption = DEFAULT_LAKE,
    as_json: JsonOption = False,
) -> None:
    """Every version of an agent in order, each step's verdict against the one before."""
    warehouse_or_exit(lake)
    from pipeline import compare as cmp
    from pipeline.compare import render

    rows = cmp.fetch_history(lake, agent, _versions_or_exit(cmp.check_versions(lake, agent, [])))
    if as_json:
        print_json(cmp.history_document(agent, rows), pretty=False)
    else:
        print_blocks(render.history(agent, rows))


def _not_a_folder(option: str, path: Path | None) -> None:
    """A file to write that names a folder, or lies under a file, is a usage error found
    before any work: exit 1 after the work would read as the gate failing."""
    if path is None:
        return
    if path.is_dir():
        raise usage_error(f"{option} names a folder, not a file to write: {path}")
    under = next((p for p in path.parents if p.exists()), None)
    if under is not None and not under.is_dir():
        raise usage_error(f"{option} {path} lies under {under}, which is a file, not a folder")


def _versions_or_exit(checked: list[str] | str) -> list[str]:
    """The agent's versions, or exit 2 saying which agent or version is unknown."""
    if isinstance(checked, str):
        raise usage_error(checked)
    return checked


# ------------------------------------------------------------------------------ printing


def print_json(document: Any, *, pretty: bool) -> None:
    from pipeline.core.jsonsafe import dumps

    text = dumps(document)
    console.print_json(text) if pretty else console.out(text, highlight=False)


def print_blocks(blocks: Sequence[Any]) -> None:
    """Tables fitted to the console's width (numbers never cut), lines as markup."""
    from rich.table import Table

    from pipeline.cli.tables import print_table

    for block in blocks:
        if isinstance(block, Table):
            print_table(console, block, markup=True)
        else:
            console.print(block, highlight=False)


def print_surface_diff(diff: SurfaceDiff, threshold: float | None) -> None:
    """The grade's move, each dimension's, then every finding that changed."""
    import polars as pl
    from rich.table import Table

    from pipeline.cli.tables import print_table

    g = diff.grade
    console.print(
        visible(
            f"{diff.server}: {diff.from_version} -> {diff.to_version}  overall "
            f"{g['overall_before']} {g['letter_before']} -> {g['overall_after']} "
            f"{g['letter_after']} ({_signed(g['overall_display_delta'])})"
        ),
        highlight=False,
        markup=False,
    )
    dims = Table(title="dimensions (as mcp-xray shows them)")
    for column in ("dimension", "change"):
        dims.add_column(column)
    for key, value in g.items():
        if key.endswith("_delta") and key not in ("overall_delta", "overall_display_delta"):
            dims.add_row(key.removesuffix("_delta"), _signed(value))
    print_table(console, dims)
    counts = diff.counts()
    table = Table(title=", ".join(f"{n} {change}" for change, n in counts.items()))
    for column in ("change", "kind", "tool", "identity", "before", "after"):
        table.add_column(column, overflow="fold")
    shown = diff.changes.select(
        "change",
        "kind",
        # A finding of no tool (mcp-xray's [] target) is about the whole surface; a tool
        # named "" is one tool, so the list's length decides, not the joined text.
        pl.when(pl.col("tools").list.len() > 0)
        .then(pl.col("tool"))
        .otherwise(pl.lit("(whole surface)"))
        .alias("tool"),
        "identity",
        *(
            pl.col(name).round(3).cast(pl.String).fill_null("-")
            for name in ("severity_before", "severity_after")
        ),
    )
    for cells in shown.rows():
        table.add_row(*(str(cell) for cell in cells))
    print_table(console, table)
    for gap in diff.unmeasured_probes():
        console.print(
            visible(
                f"note: probe {gap['probe']} ran in {gap['ran_in']}, not in {gap['not_in']}"
                + (
                    f": its {gap['findings']} finding(s) show as {gap['change']}, "
                    f"but {gap['not_in']} did not measure them"
                    if gap["findings"]
                    else ""
                )
            ),
            highlight=False,
            markup=False,
        )
    if threshold is not None:
        failing = diff.failing(threshold).height
        console.print(
            f"--fail-on-new {threshold}: {failing} new or worse finding(s) at or above it",
            highlight=False,
        )


def _signed(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1f}"
