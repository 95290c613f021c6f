"""What the nightly's summary table says, on a summary made by hand."""

from __future__ import annotations

import io

from rich.console import Console

from pipeline.cli.printing import print_nightly_summary
from pipeline.jobs.nightly import NightlySummary


def test_the_nightly_counts_task_runs_and_surface_grades_scored_apart() -> None:
    # One "runs scored" row had added task runs and surface grades (442 = 428 + 14).
    summary = NightlySummary(
        started_at="2026-12-05T00:00:00+00:00",
        inbox="inbox",
        files_in_inbox=2,
        files_new=2,
        runs_scored=442,
        task_runs_scored=428,
        surface_grades_scored=14,
        check_ok=True,
    )
    out = io.StringIO()
    print_nightly_summary(Console(file=out, width=100, color_system=None), summary)
    rows = {" ".join(line.strip("│ ").split()) for line in out.getvalue().splitlines()}
    assert {"scored (task runs) │ 428", "scored (surface grades) │ 14"} <= rows, rows
    assert not any("442" in row for row in rows)
