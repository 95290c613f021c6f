"""Compare every view of two warehouse files: same views, same columns (name, type, order)
and the same rows (as multisets, exact). For a change that must keep the views' meaning:

    python -m tools.compare_warehouses BEFORE.duckdb AFTER.duckdb

Prints one line per view and exits 1 when any differs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb

VIEWS = (
    "select table_name from information_schema.tables "
    "where table_catalog = ? and table_type = 'VIEW'"
)
COLUMNS = (
    "select column_name, data_type from information_schema.columns "
    "where table_catalog = ? and table_name = ? order by ordinal_position"
)


def _rounded(columns: list[tuple[str, str]]) -> str:
    """A select list with each DOUBLE at 12 significant digits: a parallel float sum may
    differ in its last bit from one run to the next, in either build."""
    return ", ".join(
        f"printf('%.12g', \"{name}\")" if kind == "DOUBLE" else f'"{name}"'
        for name, kind in columns
    )


def _rows_differ(con: duckdb.DuckDBPyConnection, select: str) -> tuple[int, int]:
    # Table names are ours (x_<n>); the select list comes from the files' catalogs.
    counts = [
        con.execute(
            f"select count(*) from (select {select} from {x} except all select {select} from {y})"  # noqa: S608
        ).fetchone()
        for x, y in (("before", "after"), ("after", "before"))
    ]
    return (counts[0] or (0,))[0], (counts[1] or (0,))[0]


def _compare(con: duckdb.DuckDBPyConnection, view: str, columns: list[tuple[str, str]]) -> str:
    # Each view evaluated once per build, so both comparisons see the same rows.
    for db, table in (("a", "before"), ("b", "after")):
        con.execute(f'create or replace temp table {table} as from {db}."{view}"')
    everything = ", ".join(f'"{name}"' for name, _ in columns)
    missing, extra = _rows_differ(con, everything)
    if not missing and not extra:
        return ""
    if _rows_differ(con, _rounded(columns)) == (0, 0):
        return "same to 12 significant digits (float sums in another order)"
    return f"{missing} rows only before, {extra} only after"


def differences(before: Path, after: Path) -> dict[str, str]:
    """View name -> what differs ('' when the view is the same in both)."""
    con = duckdb.connect()
    try:
        con.execute("attach ? as a (read_only)", [str(before)])
        con.execute("attach ? as b (read_only)", [str(after)])
        views = {db: {r[0] for r in con.execute(VIEWS, [db]).fetchall()} for db in ("a", "b")}
        found: dict[str, str] = {}
        for view in sorted(views["a"] | views["b"]):
            if view not in views["a"] or view not in views["b"]:
                found[view] = "only in " + ("after" if view in views["b"] else "before")
                continue
            cols = [con.execute(COLUMNS, [db, view]).fetchall() for db in ("a", "b")]
            if cols[0] != cols[1]:
                found[view] = f"columns differ: {cols[0]} != {cols[1]}"
                continue
            found[view] = _compare(con, view, cols[0])
        return found
    finally:
        con.close()


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    found = differences(Path(argv[0]), Path(argv[1]))
    for view, what in found.items():
        print(f"{view}: {what or 'same'}")
    return 1 if any(what and not what.startswith("same") for what in found.values()) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
