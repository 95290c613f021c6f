"""Models of every table the pipeline writes, checked before each write.

The models are declared in ``schemas.model`` terms (pandera's field keywords, no pandera
import); ``checked`` runs their rules in Polars and hands a frame that breaks one to
pandera, whose error names the column and the check (see ``schemas.model``).
"""

from __future__ import annotations

import polars as pl

from schemas.model import Model, keeps_rules, pandera_model, polars_schema

__all__ = ["Model", "checked", "checked_by_plan", "polars_schema", "unique_keys"]


def checked(model: type[Model], frame: pl.DataFrame) -> pl.DataFrame:
    """Validate values as well as schema, in the model's column order."""
    ordered = frame.select(list(polars_schema(model)))
    if keeps_rules(model, ordered):
        return ordered
    # pandera has the last word: it raises naming what failed, or passes a frame that only
    # the stricter side of our rules refused.
    validated: pl.DataFrame = pandera_model(model).validate(ordered, lazy=True)
    return validated


def unique_keys(model: type[Model]) -> list[str]:
    """The columns a model requires unique together: its ``Config.unique``, else the one
    field declared ``unique=True`` (empty when nothing must be unique)."""
    return model.unique()


def _strictly_ascending(frame: pl.DataFrame, keys: list[str]) -> bool:
    """Each row's keys above the previous row's, in order: unique by construction."""
    after: pl.Expr = pl.lit(False)
    # Built from the last key back: (k1 > k1') | (k1 == k1' & ((k2 > k2') | ...)).
    for key in reversed(keys):
        column, previous = pl.col(key), pl.col(key).shift(1)
        after = (column > previous) | ((column == previous) & after)
    return bool(frame.select(after.slice(1).all()).item())


def checked_by_plan(model: type[Model], frame: pl.DataFrame) -> pl.DataFrame:
    """``checked`` for a frame whose values its plan guarantees and which is sorted by the
    model's unique keys (the task scores: every value rule of TaskScore and
    TaskComponentScore follows from the landed tables' checks and the rubric's).

    Checked here: the columns and their types, no nulls where the model allows none, and
    uniqueness, as keys strictly ascending row by row (a compare of neighbours instead of
    hashing every key). Anything that fails goes to ``checked``: all the rules, then
    pandera, whose error names what failed; a frame that is only out of order passes there.
    """
    ordered = frame.select(list(polars_schema(model)))
    required = [name for name, column in model.columns.items() if not column.info.nullable]
    if (
        ordered.schema == polars_schema(model)
        and not any(ordered.select(pl.col(required).has_nulls()).row(0))
        and _strictly_ascending(ordered, unique_keys(model))
    ):
        return ordered
    return checked(model, frame)
