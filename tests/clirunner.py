"""The command line in-process: typer's CliRunner over the app. ``Commands.main`` gives it
the exit codes and one-line errors ``python -m pipeline`` has, without a process's start-up."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from typer.testing import CliRunner

from pipeline.cli import app


@dataclass(frozen=True)
class Done:
    """What a command did, named like ``subprocess.CompletedProcess``."""

    returncode: int
    stdout: str
    stderr: str


def pipeline(*args: str | Path) -> Done:
    result = CliRunner().invoke(app, [str(arg) for arg in args])
    return Done(result.exit_code, result.stdout, result.stderr)


def summary_counts(done: Done) -> dict[str, int | float]:
    """An ingest summary's counts by their headers (files, lines, task, ..., seen, s)."""
    lines = done.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.split()[:2] == ["files", "lines"])
    values = (float(v) if "." in v else int(v) for v in lines[at + 2].split())
    return dict(zip(lines[at].split(), values, strict=True))
