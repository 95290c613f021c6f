"""Every table the CLI prints stays whole at 80 columns, in a terminal or not: no number cut."""

from __future__ import annotations

import io
import json
import random
import shutil
from pathlib import Path

import pytest
from rich.console import Console
from rich.table import Table
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.cli.tables import print_table
from tests.paths import ROOT

SAMPLE = ROOT / "data" / "sample"
runner = CliRunner()


def _words(text: str) -> set[str]:
    return {w.strip("│┃|[](),;") for w in text.split()}


def _render(table: Table, width: int) -> str:
    out = io.StringIO()
    console = Console(file=out, width=width, force_terminal=False, color_system=None)
    print_table(console, table)
    return out.getvalue()


# The interval cells of the last _random_table.
intervals: list[str] = []


def _random_table(rng: random.Random, columns: int, rows: int) -> tuple[Table, list[str]]:
    table = Table(title="numbers")
    numbers: list[str] = []
    intervals.clear()
    for c in range(columns):
        table.add_column(rng.choice(["x", "mean_score", "pass_rate_ci_high", f"col{c}"]))
    for _ in range(rows):
        cells = []
        for _ in range(columns):
            kind = rng.random()
            if kind < 0.5:
                cell = f"{rng.uniform(-1e6, 1e6):.{rng.randint(0, 6)}f}"
                numbers.append(cell)
            elif kind < 0.7:
                low, high = sorted(rng.uniform(-1, 1) for _ in range(2))
                interval = f"[{low:+.3f}, {high:+.3f}]"
                numbers += [f"{low:+.3f}", f"{high:+.3f}"]
                intervals.append(interval)
                # Alone, or under its value (history's steps, the version metrics).
                cell = interval if rng.random() < 0.5 else f"{low + high:+.3f}\n{interval}"
                if "\n" in cell:
                    numbers.append(f"{low + high:+.3f}")
            else:
                cell = " ".join(rng.choice(["regression", "patch", "a", "paired_t"]) for _ in "ab")
            cells.append(cell)
        table.add_row(*cells)
    return table, numbers


@pytest.mark.parametrize("seed", range(40))
def test_no_number_is_ever_cut_at_any_width(seed: int) -> None:
    rng = random.Random(seed)
    width = rng.choice([40, 60, 80, 100, 160])
    table, numbers = _random_table(rng, columns=rng.randint(1, 12), rows=rng.randint(1, 6))
    text = _render(table, width)
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= width
    words = _words(text)
    for number in numbers:
        assert number in words, (number, width)
    # An interval is one value, on one line: split, its upper bound sat beside the next
    # column's number and read as the interval's.
    for interval in intervals:
        assert interval in text, (interval, width)


@pytest.mark.parametrize("width", range(40, 120, 4))
def test_an_interval_under_its_value_stays_on_one_line(width: int) -> None:
    # history's steps and the version metrics show a value over its interval; the interval
    # had been split at 48-76 columns (and at 130 in `history`).
    table = Table("version", "mean", "step", "verdict", "note")
    for i in range(3):
        table.add_row(
            f"1.{i}.0",
            "0.4123\n[0.3012, 0.5234]",
            "+0.018\n[-0.013, +0.049]",
            "no_change",
            "a somewhat long note about this step",
        )
    text = _render(table, width)
    assert "[-0.013, +0.049]" in text and "[0.3012, 0.5234]" in text, text
    assert max(len(line) for line in text.splitlines()) <= width


def test_a_number_wider_than_the_space_beside_the_names_gets_the_whole_width() -> None:
    # At 20 columns a row of records has 18 beside a 1-character name but 10 beside a
    # 8-character one: the number had been folded over two lines.
    table = Table("n", "a_name_x", "m")
    table.add_row("5", "1234567890.123456", "1234567890.654321")
    text = _render(table, 20)
    assert text.splitlines()[0].startswith("1 of 1"), text
    assert max(len(line) for line in text.splitlines()) <= 20
    assert {"1234567890.123456", "1234567890.654321"} <= _words(text), text
    assert "a_name_x" in text.splitlines()


def test_a_narrow_table_stays_a_grid_and_a_wide_one_becomes_records() -> None:
    narrow = Table("agent", "mean")
    narrow.add_row("atlas", "0.3123456789")
    assert "┃ agent ┃" in _render(narrow, 80)
    wide = Table(*(f"column_{i}" for i in range(20)))
    wide.add_row(*(f"{i}.123456" for i in range(20)))
    text = _render(wide, 80)
    assert text.splitlines()[0].startswith("1 of 1")
    assert all(f"column_{i}  " in text and f"{i}.123456" in _words(text) for i in range(20))


# --------------------------------------------------------------------------- the commands


def _invoke(*args: str) -> str:
    result = runner.invoke(app, list(args), env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert "…" not in result.stdout
    return result.stdout


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tables")
    inbox = root / "inbox"
    shutil.copytree(SAMPLE, inbox)
    lake = root / "lake"
    # nightly works on a lake that run or ingest made (CONTRACT section 7).
    _invoke("ingest", str(SAMPLE / "bad"), "--lake", str(lake))
    out = _invoke("nightly", "--inbox", str(inbox), "--lake", str(lake))
    summary = json.loads(Path(out.rsplit("summary: ", 1)[1].strip()).read_text())
    for value in (summary["lines_read"], summary["landed_task_runs"], summary["quarantined"]):
        assert str(value) in _words(out)
    return lake


@pytest.mark.slow
def test_run_summary_at_80_columns(lake: Path) -> None:
    out = _invoke("run", str(SAMPLE / "tasks" / "atlas.jsonl"), "--lake", str(lake))
    assert {"atlas", "1.3.0", "1.4.0", "duplicates"} <= _words(out)


@pytest.mark.slow
def test_compare_at_80_columns(lake: Path) -> None:
    args = ("--agent", "atlas", "--baseline", "1.3.0", "--candidate", "1.4.0", "--lake", str(lake))
    report = json.loads(_invoke("compare", *args, "--json"))
    words = _words(_invoke("compare", *args))
    for row in [report, *report["per_env_type"]]:
        for key in ("delta", "ci_low", "ci_high"):
            assert f"{row[key]:+.3f}" in words, (key, row)
        assert row["verdict"] in words
    for row in report["regressed_problems"]:
        assert f"{row['delta']:+.3f}" in words and row["problem_id"] in words


# The fast tier's two commands read (a copy of) the session's sample lake, so that only the
# slow tier builds the nightly lake above.
def test_history_at_80_columns(sample_lake: Path) -> None:
    lake = sample_lake
    history = json.loads(_invoke("history", "--agent", "borealis", "--lake", str(lake), "--json"))
    words = _words(_invoke("history", "--agent", "borealis", "--lake", str(lake)))
    for row in history["versions"]:
        shown = (row["mean_score_problems"], row["pass_rate_problems"])
        assert all(f"{value:.3f}" in words for value in shown)
        if row["step"] is not None:
            assert f"{row['step']['delta']:+.3f}" in words


def test_rescore_diff_at_80_columns(sample_lake_copy: Path, tmp_path: Path) -> None:
    lake = sample_lake_copy
    before = json.loads(
        _invoke(
            "query",
            "select value from _meta where key = 'rubric_id'",
            "--lake",
            str(lake),
            "--json",
        )
    )[0]["value"]
    rubric = tmp_path / "r.toml"
    rubric.write_text(
        'rubric_id = "heavier-pov"\n[task.exploit]\nweights = '
        "{ defect_matching = 0.5, pov_quality = 0.3 }\n"
    )
    _invoke("score", "--lake", str(lake), "--rubric", str(rubric))
    diff = json.loads(
        _invoke(
            "rescore-diff", "--from", before, "--to", "heavier-pov", "--lake", str(lake), "--json"
        )
    )
    words = _words(
        _invoke("rescore-diff", "--from", before, "--to", "heavier-pov", "--lake", str(lake))
    )
    numbers = [v for row in diff["by_env_type"] for v in row.values() if isinstance(v, float)]
    assert numbers
    for value in numbers:
        assert f"{value:.4f}" in words


def test_records_keep_long_names_and_values_whole() -> None:
    long_name = "a_column_name_longer_than_half_the_width"
    table = Table(long_name, *(f"c{i}" for i in range(30)))
    table.add_row("0.125", *(f"{i}.5" for i in range(30)))
    text = _render(table, 60)
    assert long_name in text.splitlines()
    assert {"0.125", *(f"{i}.5" for i in range(30))} <= _words(text)
    assert max(len(line) for line in text.splitlines()) <= 60
