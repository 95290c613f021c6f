"""Table models declared once, checked in Polars, explained by pandera.

A model is written like a pandera ``DataFrameModel`` (typed fields, ``Field(...)`` with
pandera's own keywords, a ``Config``) but declaring one imports nothing beyond Polars:
``import pandera`` costs about 1.2 s of CPU (its package imports pandas and, with the
Spark extra installed, ``pyspark.pandas``), more than a whole rescore of 100k runs.

Every rule a model declares is checked by the very Polars expressions pandera's Polars
backend evaluates for it (``pandera/backends/polars/builtin_checks.py``: ``ge`` is
``col >= v`` and so on; a null passes a check where the column is nullable). A frame that
passes all of them is returned as is; one that fails any goes to the pandera model built
from the same declaration (``pandera_model``), whose ``SchemaErrors`` names each failing
column and check, as before. The rules here may be stricter than pandera's, never looser:
a frame they refuse but pandera accepts is returned by pandera, so what passes is exactly
what pandera passes.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import polars as pl

if TYPE_CHECKING:
    import pandera.polars as pa

# The keywords of pandera's Field this project uses; any other is refused when a model is
# declared, so no rule can be declared that the Polars checks below would skip.
RULES = ("ge", "gt", "le", "isin", "str_length")


@dataclass(frozen=True)
class FieldInfo:
    """What ``Field(...)`` declared for one column (pandera's keywords, same meaning)."""

    nullable: bool = False
    unique: bool = False
    rules: dict[str, Any] = field(default_factory=dict)


def Field(*, nullable: bool = False, unique: bool = False, **rules: Any) -> Any:
    """pandera's ``Field``, for the keywords in ``RULES`` (typed Any like pandera's, so a
    field reads ``run_id: str = Field(unique=True)``)."""
    unknown = set(rules) - set(RULES)
    if unknown:
        raise TypeError(f"Field does not support {sorted(unknown)}")
    return FieldInfo(nullable=nullable, unique=unique, rules=dict(rules))


@dataclass(frozen=True)
class Column:
    name: str
    annotation: Any  # as written: str, bool, a Polars dtype class or instance
    dtype: pl.DataType
    info: FieldInfo


_PYTHON_TYPES: dict[Any, pl.DataType] = {str: pl.String(), bool: pl.Boolean()}


def _dtype(annotation: Any) -> pl.DataType:
    if annotation in _PYTHON_TYPES:
        return _PYTHON_TYPES[annotation]
    if isinstance(annotation, pl.DataType):
        return annotation
    if isinstance(annotation, type) and issubclass(annotation, pl.DataType):
        return annotation()
    raise TypeError(f"unsupported column type {annotation!r}")


class Model:
    """Base of every table model: its columns in declaration order, and ``Config``
    (``strict``, ``coerce``, ``unique``: pandera's options of the same names)."""

    columns: ClassVar[dict[str, Column]] = {}
    # Made once per model: a pl.Schema validates its dtypes when made, and a run asks for
    # the schemas some 600 times (empty frames, typed scans).
    schema: ClassVar[pl.Schema] = pl.Schema()

    class Config:
        strict = True
        coerce = False
        unique: list[str] | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # Annotations are text under ``from __future__ import annotations``; they are
        # evaluated in the model's module, as pandera does.
        scope = vars(sys.modules[cls.__module__])
        columns = {}
        for name, written in vars(cls).get("__annotations__", {}).items():
            annotation = eval(written, scope) if isinstance(written, str) else written
            info = vars(cls).get(name, FieldInfo())
            columns[name] = Column(name, annotation, _dtype(annotation), info)
        cls.columns = columns
        cls.schema = pl.Schema({name: column.dtype for name, column in columns.items()})

    @classmethod
    def unique(cls) -> list[str]:
        """``Config.unique``, else the one field declared ``unique=True``, else none."""
        together = getattr(cls.Config, "unique", None)
        if together:
            return list(together)
        return [name for name, column in cls.columns.items() if column.info.unique]


def _rule(column: pl.Expr, rule: str, value: Any) -> pl.Expr:
    """The expression pandera's Polars backend evaluates for a built-in check."""
    if rule == "ge":
        return column.ge(value)
    if rule == "gt":
        return column.gt(value)
    if rule == "le":
        return column.le(value)
    if rule == "isin":
        return column.is_in(list(value))
    low, high = value.get("min_value"), value.get("max_value")
    chars = column.str.len_chars()
    if low is None:
        return chars.le(high)
    return chars.ge(low) if high is None else chars.is_between(low, high)


def rules(model: type[Model]) -> list[pl.Expr]:
    """One boolean per declared rule, true when every row keeps it."""
    checks: list[pl.Expr] = []
    for name, column in model.columns.items():
        col = pl.col(name)
        if not column.info.nullable:
            checks.append(col.is_not_null().all())
        for rule, value in column.info.rules.items():
            checks.append((_rule(col, rule, value) | col.is_null()).all())
        if column.info.unique:
            checks.append(col.is_unique().all())
    together = getattr(model.Config, "unique", None)
    if together:
        checks.append(pl.struct(list(together)).is_unique().all())
    return [check.alias(f"rule_{index}") for index, check in enumerate(checks)]


def keeps_rules(model: type[Model], frame: pl.DataFrame) -> bool:
    """True when the frame has the model's columns, types and every value rule."""
    if frame.schema != polars_schema(model):
        return False
    checks = rules(model)
    return not checks or all(frame.select(checks).row(0))


def polars_schema(model: type[Model]) -> pl.Schema:
    """The Polars schema a model describes, for empty frames and typed scans (one shared
    object per model: read it, never change it)."""
    return model.schema


def _options(config: type) -> dict[str, Any]:
    return {key: value for key, value in vars(config).items() if not key.startswith("__")}


_PANDERA: dict[type[Model], type[pa.DataFrameModel]] = {}


def pandera_model(model: type[Model]) -> type[pa.DataFrameModel]:
    """The pandera model of the same declaration, of the same name (its errors name it)."""
    if model in _PANDERA:
        return _PANDERA[model]
    import pandera.polars as pa

    namespace: dict[str, Any] = {
        "__module__": model.__module__,
        "__qualname__": model.__qualname__,
        "__doc__": model.__doc__,
        "__annotations__": {name: c.annotation for name, c in model.columns.items()},
        "Config": type("Config", (), _options(model.Config)),
    }
    for name, column in model.columns.items():
        info = column.info
        namespace[name] = pa.Field(nullable=info.nullable, unique=info.unique, **info.rules)
    built = type(model.__name__, (pa.DataFrameModel,), namespace)
    _PANDERA[model] = built
    return built
