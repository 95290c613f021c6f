"""Every command the CLI has, and every option it takes, is in docs/commands.md's table, and
every command in the README's: a command added or renamed fails here until the pages follow."""

from __future__ import annotations

import re

import pytest
import typer.core
import typer.main

from pipeline.cli import app
from tests.paths import ROOT

COMMANDS = typer.main.get_command(app)
assert isinstance(COMMANDS, typer.core.TyperGroup)
NAMES = sorted(COMMANDS.commands)


def table_rows(text: str) -> dict[str, str]:
    """Each command table row by its command's name: `name ...` or `python -m pipeline name`."""
    rows = {}
    for line in text.splitlines():
        found = re.match(r"\| `(?:python -m pipeline )?([a-z-]+)\b([^`]*)`", line)
        if found:
            rows[found.group(1)] = found.group(2)
    return rows


DOCS = table_rows((ROOT / "docs" / "commands.md").read_text("utf-8"))
README = table_rows((ROOT / "README.md").read_text("utf-8"))


def test_the_cli_has_commands() -> None:
    assert {"run", "ingest", "score", "check", "surface-diff"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_every_command_is_in_both_tables(name: str) -> None:
    assert name in DOCS, f"docs/commands.md has no row for {name}"
    assert name in README, f"the README's command table has no row for {name}"


@pytest.mark.parametrize("name", NAMES)
def test_the_options_a_row_shows_are_the_commands(name: str) -> None:
    command = COMMANDS.commands[name]
    options = {flag for param in command.params for flag in getattr(param, "opts", ())}
    for row in (DOCS[name], README[name]):
        shown = set(re.findall(r"--[a-z-]+", row))
        assert shown <= options, f"{name}: {sorted(shown - options)} are not its options"


@pytest.mark.parametrize("name", NAMES)
def test_every_option_says_what_it_does(name: str) -> None:
    command = COMMANDS.commands[name]
    silent = [
        param.name
        for param in command.params
        if getattr(param, "opts", None) and not getattr(param, "help", None)
    ]
    assert not silent, f"{name}: options without help: {silent}"


def test_the_listing_shows_each_commands_summary_whole() -> None:
    from typer.testing import CliRunner

    listing = CliRunner().invoke(app, ["--help"], terminal_width=80).output
    text = " ".join(listing.split())
    for name in NAMES:
        summary = (COMMANDS.commands[name].callback.__doc__ or "").strip().splitlines()[0]
        assert " ".join(summary.split()) in text, name
    commands = listing.split("Commands:", 1)[1]
    assert "..." not in commands


@pytest.mark.parametrize("name", NAMES)
def test_the_line_help_lists_is_a_whole_sentence(name: str) -> None:
    # `--help` lists each command by its docstring's first paragraph; one that runs on past
    # a line there was cut mid-sentence ("... refused (exit 2). SQL that").
    summary = COMMANDS.commands[name].get_short_help_str(limit=1000)
    assert summary.endswith((".", "?", ")")), f"{name}: {summary!r}"
