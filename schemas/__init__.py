"""Pandera models of every table the pipeline writes, checked before each write."""

from __future__ import annotations

import functools

import pandera.polars as pa
import polars as pl


@functools.cache
def polars_schema(model: type[pa.DataFrameModel]) -> pl.Schema:
    """The Polars schema a model describes, for empty frames and typed scans.

    One shared object per model (read it, never change it): pandera rebuilds its schema
    on each to_schema() and a pl.Schema validates its dtypes when made, about 1.5 ms
    together, and a run asks some 600 times.
    """
    columns = model.to_schema().columns
    return pl.Schema({name: column.dtype.type for name, column in columns.items()})


def checked(model: type[pa.DataFrameModel], frame: pl.DataFrame) -> pl.DataFrame:
    """Validate values as well as schema, in the model's column order."""
    ordered = frame.select(list(polars_schema(model)))
    if ordered.height == 0 and ordered.schema == polars_schema(model):
        # No values to check, and pandera's checks cost 5-40 ms a table even then
        # (every chunk of an ingest has several empty tables). Any other schema
        # goes to pandera, so the error is its own.
        return ordered
    validated: pl.DataFrame = model.validate(ordered, lazy=True)
    return validated


def unique_keys(model: type[pa.DataFrameModel]) -> list[str]:
    """The columns a model requires unique together: its ``Config.unique``, else the one
    field declared ``unique=True`` (empty when nothing must be unique)."""
    schema = model.to_schema()
    if schema.unique:
        return list(schema.unique)
    return [name for name, column in schema.columns.items() if column.unique]


def _strictly_ascending(frame: pl.DataFrame, keys: list[str]) -> bool:
    """Each row's keys above the previous row's, in order: unique by construction."""
    after: pl.Expr = pl.lit(False)
    # Built from the last key back: (k1 > k1') | (k1 == k1' & ((k2 > k2') | ...)).
    for key in reversed(keys):
        column, previous = pl.col(key), pl.col(key).shift(1)
        after = (column > previous) | ((column == previous) & after)
    return bool(frame.select(after.slice(1).all()).item())


def checked_by_plan(model: type[pa.DataFrameModel], frame: pl.DataFrame) -> pl.DataFrame:
    """``checked`` for a frame whose values its plan guarantees and which is sorted by the
    model's unique keys (the task scores: every value rule of TaskScore and
    TaskComponentScore follows from the landed tables' checks and the rubric's).

    Checked here: the columns and their types, no nulls where the model allows none, and
    uniqueness, as keys strictly ascending row by row (a compare of neighbours instead of
    hashing every key). Anything that fails goes to pandera, whose error names it; a frame
    that is only out of order passes there.
    """
    ordered = frame.select(list(model.to_schema().columns))
    columns = model.to_schema().columns
    required = [name for name, column in columns.items() if not column.nullable]
    if (
        ordered.schema == polars_schema(model)
        and not any(ordered.select(pl.col(required).has_nulls()).row(0))
        and _strictly_ascending(ordered, unique_keys(model))
    ):
        return ordered
    return checked(model, frame)
