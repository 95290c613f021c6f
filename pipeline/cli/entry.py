"""The command line (CONTRACT section 7): one typer app over the command modules
(``lake``, ``comparison``, ``query``), and the one place failures become exit codes.

Exit codes: 0 done (quarantined records are not an error); 2 bad usage, a bad setting or a
refused rubric, before any work; 1 anything else that failed.
"""

from __future__ import annotations

import contextlib
import gc
import io
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import typer
from rich.markup import escape

# typer vendors click; its usage errors are not re-exported under a public name.
from typer._click.exceptions import NoArgsIsHelpError, UsageError
from typer.core import TyperGroup

from pipeline.cli import comparison, lake, query
from pipeline.cli.options import EXIT_FAILED, EXIT_OK, EXIT_USAGE, errors
from pipeline.core.settings import SettingError
from pipeline.core.stages import set_track
from pipeline.core.visible import visible
from pipeline.storage.lake import InputError, LakeBusyError, StateFileError


class _ReaderMayLeave:
    """Standard output a reader may close before the end (`| head`): writes after that go
    nowhere and the command ends with its own exit code (a gate's verdict too), not with a
    broken pipe's."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._gone = False

    def write(self, text: str) -> int:
        if not self._gone:
            try:
                return int(self._stream.write(text))
            except BrokenPipeError:
                self._leave()
        return len(text)

    def flush(self) -> None:
        if not self._gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._leave()

    def _leave(self) -> None:
        self._gone = True
        # The interpreter flushes stdout once more as it exits: that goes nowhere too.
        with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation):
            os.dup2(os.open(os.devnull, os.O_WRONLY), self._stream.fileno())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


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
        stdout = sys.stdout
        sys.stdout = _ReaderMayLeave(stdout)
        try:
            code = super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        except Exception as exc:
            code = _failure_code(exc)
        finally:
            sys.stdout = stdout
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
        said = escape(visible(exc.format_message()))
        errors.print(f"[bold red]usage:[/] {said}{hint}", highlight=False)
        return EXIT_USAGE
    if isinstance(exc, typer.Abort):
        errors.print("[bold red]aborted[/]", highlight=False)
        return EXIT_FAILED
    if isinstance(exc, SettingError):
        # Resolved below a command's entry (a library path the CLI did not foresee).
        errors.print(f"[bold red]bad setting:[/] {escape(visible(str(exc)))}", highlight=False)
        return EXIT_USAGE
    if isinstance(exc, LakeBusyError):
        errors.print(f"[bold red]busy:[/] {escape(visible(str(exc)))}", highlight=False)
        return EXIT_FAILED
    # Imported here, not at the top: the warehouse pulls in DuckDB and Polars,
    # which `--help` and usage errors never need.
    from pipeline.warehouse import WarehouseError

    named = (
        ""
        if isinstance(exc, InputError | WarehouseError | StateFileError)
        else f"{type(exc).__name__}: "
    )
    errors.print(f"[bold red]failed:[/] {named}{escape(visible(str(exc)))}", highlight=False)
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
# By name, in the order `--help` lists them: the lake's life, then reading it.
COMMANDS = (
    ("run", lake.run),
    ("ingest", lake.ingest),
    ("score", lake.score),
    ("nightly", lake.nightly),
    ("rescore-diff", comparison.rescore_diff),
    ("surface-diff", comparison.surface_diff),
    ("compare", comparison.compare),
    ("history", comparison.history),
    ("query", query.query),
    ("check", lake.check),
    ("replay-quarantine", lake.replay_quarantine),
)
for _name, _command in COMMANDS:
    # The listing shows each docstring's first line whole (click would cut it to fit).
    _summary = (_command.__doc__ or "").strip().splitlines()[0]
    app.command(_name, short_help=_summary)(_command)


def main() -> None:
    """``python -m pipeline``: exit codes come from ``Commands.main``; the process ends here."""
    try:
        app()
    finally:
        # At exit the interpreter collects cycles over every object the imports made
        # (Polars, DuckDB, typer): ~0.1 s of a 1.6 s `score` of 300k runs. Frozen objects
        # are skipped. Nothing waits on a cycle's finalizer: each command has written,
        # fsync'd and closed its files in with-blocks before it returns.
        gc.freeze()


def _bar(items: Iterable[Any], description: str, total: int | None = None) -> Iterator[Any]:
    """The stages' progress as a bar (pipeline/cli/progress.py), loaded when first shown."""
    from pipeline.cli.progress import progress

    yield from progress(items, description, total)


set_track(_bar)
