"""relabel.relabelled keeps a score table's rows only where a reload would give the same
rows in the same order: each guard by itself, on two parts of surface_finding_scores held
under rubric A and written again under rubric B."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl
import pytest

from pipeline.storage import lake as lk
from pipeline.warehouse.build import _create_table
from pipeline.warehouse.loads import insert
from pipeline.warehouse.models import STAGE_PREFIX, staged_tables
from pipeline.warehouse.relabel import relabelled

TABLE = "surface_finding_scores"
PARTS = ("p1", "p2")


def scores(part: str, rubric_id: str) -> pl.DataFrame:
    """Four findings of two runs of ``part`` under ``rubric_id``."""
    return pl.DataFrame(
        {
            "run_id": [f"{part}-r{i // 2}" for i in range(4)],
            "finding_index": [0, 1, 0, 1],
            "rubric_id": [rubric_id] * 4,
            "kind": ["token_cost", "schema_smell", "token_cost", "jit_candidate"],
            "severity": [0.25, 0.5, 0.125, 1.0],
            "severity_display": [0.25, 0.5, 0.125, 1.0],
            "reported_severity": [0.25, None, 0.125, 1.0],
        },
        schema=staged_tables()[TABLE],
    )


@dataclass
class Held:
    """A staging table holding the A files of both parts, and B files beside them."""

    lake: Path
    con: duckdb.DuckDBPyConnection

    def held(self, part: str) -> Path:
        return self.lake / "A" / f"{part}.parquet"

    def new(self, part: str) -> Path:
        return self.lake / "B" / f"{part}.parquet"

    def relabels(self, sha256: Callable[[Path], str] | None = None) -> dict[str, str]:
        def digest(path: Path) -> str:
            return hashlib.sha256(path.read_bytes()).hexdigest()

        drop = pl.DataFrame(
            {
                "part": list(PARTS),
                "path": [f"A/{part}.parquet" for part in PARTS],
                "sha256": [(sha256 or digest)(self.held(part)) for part in PARTS],
            }
        )
        load = pl.DataFrame({"part": list(PARTS), "path": [f"B/{part}.parquet" for part in PARTS]})
        return relabelled(self.con, self.lake, {TABLE: drop}, {TABLE: load})


@pytest.fixture
def held(tmp_path: Path) -> Iterator[Held]:
    for part in PARTS:
        lk.write_parquet_atomic(scores(part, "A"), tmp_path / "A" / f"{part}.parquet")
        lk.write_parquet_atomic(scores(part, "B"), tmp_path / "B" / f"{part}.parquet")
    with duckdb.connect() as con:
        _create_table(con, TABLE)
        insert(con, TABLE, [str(tmp_path / "A" / f"{part}.parquet") for part in PARTS])
        yield Held(tmp_path, con)


def test_files_that_differ_only_in_the_rubric_keep_their_rows(held: Held) -> None:
    assert held.relabels() == {TABLE: "B"}


def test_a_held_file_not_as_the_warehouse_loaded_it_is_reloaded(held: Held) -> None:
    # Its recorded SHA-256 is of other bytes (rewritten since it was loaded): the stored
    # rows need not be its rows.
    assert held.relabels(lambda path: "0" * 64) == {}


def test_a_part_whose_stored_rows_are_not_the_files_is_reloaded(held: Held) -> None:
    held.con.execute(f"delete from {STAGE_PREFIX}{TABLE} where run_id = 'p2-r1'")  # noqa: S608
    assert held.relabels() == {}


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda frame: frame.with_columns(severity=pl.col("severity") * 2), id="value"),
        pytest.param(lambda frame: frame.reverse(), id="order"),
        pytest.param(
            lambda frame: frame.with_columns(
                rubric_id=pl.when(pl.col("finding_index") == 0)
                .then(pl.lit("B"))
                .otherwise(pl.lit("C"))
            ),
            id="two rubrics",
        ),
        pytest.param(lambda frame: frame.head(3), id="a row fewer"),
    ],
)
def test_a_new_file_that_holds_other_rows_is_reloaded(
    held: Held, change: Callable[[pl.DataFrame], pl.DataFrame]
) -> None:
    lk.write_parquet_atomic(change(scores("p2", "B")), held.new("p2"))
    assert held.relabels() == {}
