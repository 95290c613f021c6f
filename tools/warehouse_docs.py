"""The warehouse's documentation, from pipeline/sql/schema.yml: its views and columns, the
data dictionary of docs/warehouse.md generated from them, and the YAML's tests as queries.

    python -m tools.warehouse_docs            print the data dictionary
    python -m tools.warehouse_docs --write    write it into docs/warehouse.md
    python -m tools.warehouse_docs --check    exit 1 when docs/warehouse.md is not up to date
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tools.generated import with_generated

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "pipeline" / "sql" / "schema.yml"
DOCS = ROOT / "docs" / "warehouse.md"
BEGIN = (
    "<!-- data dictionary: generated from pipeline/sql/schema.yml by tools/warehouse_docs.py -->"
)
END = "<!-- end of the data dictionary -->"
GROUPS = ("Task grades", "Surface grades", "Bad input", "Intermediate")


class SchemaDocError(ValueError):
    pass


@dataclass(frozen=True)
class Column:
    name: str
    description: str
    tests: tuple[Any, ...]


@dataclass(frozen=True)
class ModelDoc:
    name: str
    description: str
    group: str
    columns: tuple[Column, ...]
    tests: tuple[Any, ...]


def _flat(entries: list[Any]) -> list[dict[str, Any]]:
    """Column entries, a YAML alias of another model's column list spliced in place."""
    flat: list[dict[str, Any]] = []
    for entry in entries:
        flat.extend(_flat(entry) if isinstance(entry, list) else [entry])
    return flat


def _column(model: str, entry: dict[str, Any], shared: dict[str, str]) -> Column:
    name = entry.get("name")
    if not isinstance(name, str):
        raise SchemaDocError(f"{model}: a column without a name: {entry!r}")
    description = entry.get("description", shared.get(name))
    if not isinstance(description, str) or not description.strip():
        raise SchemaDocError(f"{model}.{name}: no description (none here nor in shared_columns)")
    return Column(name, description.strip(), tuple(entry.get("tests", ())))


def load(path: Path = SCHEMA) -> list[ModelDoc]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    shared: dict[str, str] = data.get("shared_columns", {})
    models: list[ModelDoc] = []
    for raw in data["models"]:
        name = raw["name"]
        if raw.get("group") not in GROUPS:
            raise SchemaDocError(f"{name}: group must be one of {', '.join(GROUPS)}")
        columns = tuple(_column(name, entry, shared) for entry in _flat(raw.get("columns", [])))
        names = [c.name for c in columns]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise SchemaDocError(f"{name}: columns documented twice: {', '.join(twice)}")
        models.append(
            ModelDoc(
                name,
                str(raw["description"]).strip(),
                raw["group"],
                columns,
                tuple(raw.get("tests", ())),
            )
        )
    seen = [m.name for m in models]
    twice = sorted({n for n in seen if seen.count(n) > 1})
    if twice:
        raise SchemaDocError(f"views documented twice: {', '.join(twice)}")
    return models


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "\\<").replace("\n", " ")


def dictionary(models: list[ModelDoc]) -> str:
    """The data dictionary as Markdown: per group, each view, what a row is, its columns."""
    lines: list[str] = []
    for group in GROUPS:
        lines += [f"## {group}", ""]
        for model in (m for m in models if m.group == group):
            lines += [
                f"### `{model.name}`",
                "",
                model.description[0].upper() + model.description[1:] + ".",
                "",
            ]
            lines += ["| column | description |", "|---|---|"]
            lines += [f"| `{c.name}` | {_cell(c.description)} |" for c in model.columns]
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def with_dictionary(text: str, models: list[ModelDoc]) -> str:
    """``text`` (docs/warehouse.md) with the part between the markers generated anew."""
    return with_generated(text, BEGIN, END, dictionary(models), DOCS.name)


def _quoted(name: str) -> str:
    if not name.replace("_", "").isalnum():
        raise SchemaDocError(f"not a plain name: {name!r}")
    return f'"{name}"'


def _failing(view: str, where: str, cols: str = "") -> str:
    """A query counting the rows of ``view`` matching ``where`` (or, given ``cols``, the
    groups of ``cols`` that occur more than once). Names are checked plain identifiers."""
    if cols:
        return f"select count(*) from (select {cols} from {view} where {where} group by all having count(*) > 1)"  # noqa: S608, E501
    return f"select count(*) from {view} where {where}"  # noqa: S608


def _model_tests(model: ModelDoc) -> dict[str, tuple[str, list[Any]]]:
    queries: dict[str, tuple[str, list[Any]]] = {}
    for test in model.tests:
        ((kind, args),) = test.items()
        if kind != "unique_combination_of_columns":
            raise SchemaDocError(f"{model.name}: unknown model test {kind!r}")
        cols = ", ".join(_quoted(c) for c in args["combination_of_columns"])
        queries[f"{model.name}: unique ({cols})"] = (
            _failing(_quoted(model.name), "true", cols),
            [],
        )
    return queries


def _column_test(view: str, col: str, kind: str, args: dict[str, Any]) -> tuple[str, list[Any]]:
    if kind == "not_null":
        return _failing(view, f"{col} is null"), []
    if kind == "unique":
        return _failing(view, f"{col} is not null", col), []
    if kind == "accepted_values":
        values = [str(v) for v in args["values"]]
        return _failing(view, f"{col} is not null and not list_contains(?, {col}::varchar)"), [
            values
        ]
    raise SchemaDocError(f"{view}.{col}: unknown column test {kind!r}")


def check_queries(models: list[ModelDoc]) -> dict[str, tuple[str, list[Any]]]:
    """Each YAML test as a query (and its parameters) counting the rows that fail it."""
    queries: dict[str, tuple[str, list[Any]]] = {}
    for model in models:
        queries.update(_model_tests(model))
        for column in model.columns:
            for test in column.tests:
                kind, args = (test, {}) if isinstance(test, str) else next(iter(test.items()))
                queries[f"{model.name}.{column.name}: {kind}"] = _column_test(
                    _quoted(model.name), _quoted(column.name), kind, args
                )
    return queries


def main(argv: list[str]) -> int:
    models = load()
    if not argv:
        sys.stdout.write(dictionary(models))
        return 0
    if argv not in (["--write"], ["--check"]):
        print(__doc__, file=sys.stderr)
        return 2
    current = DOCS.read_text(encoding="utf-8")
    wanted = with_dictionary(current, models)
    if argv == ["--write"]:
        DOCS.write_text(wanted, encoding="utf-8")
        return 0
    if current != wanted:
        print(f"{DOCS} is not generated from {SCHEMA}: run python -m tools.warehouse_docs --write")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
