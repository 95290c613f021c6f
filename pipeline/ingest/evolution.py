"""What a batch brings that the lake has never held: new fields, finding kinds, components,
env types.

A grader that starts writing a new field, a probe that emits a new finding
kind, or a rubric-less component must not break a nightly run (they land), but
a person should hear of it: the run and nightly summaries list them.

The names the lake holds are kept in ``_state/schema.json`` and grow with each
ingest in the same transaction as its rows, so a nightly batch is compared with
that short list, never with the whole history (``schema_news`` does the full
comparison; it is also how a lake made before the list existed gets its list).
A lake's first batch sets the list and is news to nobody.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import polars as pl

from pipeline.core.sql import run_sql
from pipeline.storage import lake as lk
from pipeline.storage.state import SCHEMA
from pipeline.storage.store import LakeStore

# news key -> (table, column, JSON record column or not)
NEWS: dict[str, tuple[str, str, bool]] = {
    "task_fields": ("task_runs", "record", True),
    "surface_fields": ("surface_runs", "record", True),
    "finding_kinds": ("surface_findings", "kind", False),
    "components": ("task_components", "component", False),
    "env_types": ("task_runs", "env_type", False),
}
# How a summary names each kind of news.
NEWS_LABELS = {
    "task_fields": "task record fields",
    "surface_fields": "report fields",
    "finding_kinds": "finding kinds",
    "components": "components",
    "env_types": "env types",
}
SCHEMA_STATE = SCHEMA


def _names(frame: pl.DataFrame, column: str, is_record: bool) -> pl.DataFrame:
    """Distinct names: the top-level keys of JSON records, or a column's values."""
    if is_record:
        keys = run_sql("evolution/top_level_keys.sql", {"records": frame.select(record=column)})
        return keys.select(pl.col("name").cast(pl.String))
    return frame.select(name=pl.col(column).cast(pl.String)).drop_nulls().unique()


def schema_news(batch_tables: Mapping[str, pl.DataFrame], lake: Path) -> dict[str, list[str]]:
    """New top-level fields, finding kinds and component names of a batch, sorted.

    Compared with every other batch the lake holds, so it gives the same answer
    called before or after the batch is committed.
    """
    news: dict[str, list[str]] = {}
    for key, (table, column, is_record) in NEWS.items():
        batch = batch_tables.get(table)
        if batch is None or batch.height == 0:
            news[key] = []
            continue
        own_batches = batch.select("batch_id").unique()
        landed = (
            LakeStore(lake)
            .landed(table)
            .select(column, "batch_id")
            .join(own_batches.lazy(), on="batch_id", how="anti")
            .collect()
        )
        fresh = _names(batch, column, is_record).join(
            _names(landed, column, is_record), on="name", how="anti"
        )
        news[key] = fresh["name"].sort().to_list()
    return news


def names_of(
    tables: Mapping[str, pl.DataFrame], task_keys: pl.DataFrame | None = None
) -> dict[str, set[str]]:
    """Per news key, the distinct names that landed tables (one chunk's) hold.

    ``task_keys`` (top_keys: each landed task record's top-level keys, as ingest
    parsed them) spares a second parse of every record: at 100k records that
    parse costs a third of the ingest.
    """
    found: dict[str, set[str]] = {}
    for key, (table, column, is_record) in NEWS.items():
        if key == "task_fields" and task_keys is not None:
            found[key] = set(task_keys["top_keys"].explode().drop_nulls().unique().to_list())
            continue
        frame = tables.get(table)
        if frame is None or frame.height == 0:
            found[key] = set()
            continue
        found[key] = set(_names(frame, column, is_record)["name"].to_list())
    return found


def _history(lake: Path) -> dict[str, set[str]] | None:
    """Every name the lake's landed tables hold (a full scan), None when no run landed."""
    columns: dict[str, set[str]] = {}
    for table, column, _ in NEWS.values():
        columns.setdefault(table, set()).add(column)
    tables = {
        table: LakeStore(lake).landed(table).select(sorted(wanted)).collect()
        for table, wanted in columns.items()
    }
    if tables["task_runs"].height == 0 and tables["surface_runs"].height == 0:
        return None
    return {
        key: set(_names(tables[table], column, is_record)["name"].to_list())
        for key, (table, column, is_record) in NEWS.items()
    }


def known_names(lake: Path) -> dict[str, set[str]] | None:
    """The names the lake holds, from its list (made from its history when missing);
    None for a lake that has landed nothing yet."""
    document = LakeStore(lake).read_state(SCHEMA_STATE, None)
    if document is None:
        return _history(lake)
    return {key: set(document.get(key, [])) for key in NEWS}


def news_of(
    found: Mapping[str, set[str]], known: Mapping[str, set[str]] | None
) -> dict[str, list[str]]:
    """What ``found`` holds that ``known`` does not, sorted; nothing against no history."""
    if known is None:
        return {key: [] for key in NEWS}
    return {key: sorted(found.get(key, set()) - known[key]) for key in NEWS}


def remember(
    tx: lk.Transaction,
    lake: Path,
    found: Mapping[str, set[str]],
    known: Mapping[str, set[str]] | None,
) -> None:
    """Write the lake's list of names grown by ``found``, in ``tx``."""
    grown = {key: sorted(found.get(key, set()) | (known or {}).get(key, set())) for key in NEWS}
    LakeStore(lake).stage_state(tx, SCHEMA_STATE, grown)


def merge(into: dict[str, set[str]], found: Mapping[str, set[str]]) -> None:
    for key, names in found.items():
        into.setdefault(key, set()).update(names)
