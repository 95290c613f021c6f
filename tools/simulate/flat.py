"""Flat frames (dotted column names) as nested JSON Lines, and byte-stable file writes."""

from __future__ import annotations

import gzip
import io
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, cast

import polars as pl

# ---------------------------------------------------------------------------
# Flat frame -> nested JSON Lines (absent = null column, never a JSON null).
# ---------------------------------------------------------------------------
_Tree = dict[str, Any]


def _tree(columns: Sequence[str]) -> _Tree:
    root: _Tree = {}
    for column in columns:
        node = root
        *parents, leaf = column.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = column
    return root


def _node_expr(name: str, node: Any) -> pl.Expr:
    if isinstance(node, str):
        return pl.col(node).alias(name)
    return pl.struct([_node_expr(key, node[key]) for key in sorted(node)]).alias(name)


def nested_exprs(columns: Sequence[str]) -> list[pl.Expr]:
    """Struct expressions that nest dotted column names, keys in sorted order."""
    tree = _tree(columns)
    return [_node_expr(key, tree[key]) for key in sorted(tree)]


def _shapes(flat: pl.DataFrame) -> list[pl.DataFrame]:
    """Split rows by which columns are null: each part has one set of present keys."""
    nullable = [name for name in flat.columns if flat[name].null_count() > 0]
    if not nullable:
        return [flat]
    keys = [f"__null_{k}" for k in range(len(nullable))]
    flags = [pl.col(name).is_null().alias(key) for name, key in zip(nullable, keys, strict=True)]
    return flat.with_columns(flags).partition_by(keys, maintain_order=True, include_key=False)


def write_flat_ndjson(flat: pl.DataFrame, out: IO[bytes]) -> None:
    """Write a flat frame as nested JSON Lines; a null cell means the key is absent."""
    for part in _shapes(flat):
        present = [name for name in part.columns if part[name].null_count() == 0]
        part.select(nested_exprs(present)).write_ndjson(out)


def flat_ndjson_bytes(flat: pl.DataFrame) -> bytes:
    buffer = io.BytesIO()
    write_flat_ndjson(flat, buffer)
    return buffer.getvalue()


def write_flat_file(path: Path, flat: pl.DataFrame) -> Path:
    """``write_flat_ndjson`` into ``path`` (gzipped, without a time stamp, for ``.gz``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as raw:
        if path.name.endswith(".gz"):
            with gzip.GzipFile(
                filename="", mode="wb", fileobj=raw, compresslevel=6, mtime=0
            ) as zipped:
                write_flat_ndjson(flat, cast(IO[bytes], zipped))
        else:
            write_flat_ndjson(flat, raw)
    return path


def write_bytes(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.name.endswith(".gz"):
        # mtime=0 and no file name in the header: the same bytes every time.
        data = gzip.compress(data, compresslevel=9, mtime=0)
    path.write_bytes(data)
    return path
