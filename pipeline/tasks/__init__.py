"""Task grades (CONTRACT sections 2 and 4), one module a stage.

Reading order: ``fields`` (the record's fields, declared once) → ``parse`` (the parse
SQL's generated parts; accepted records to the landed task tables) → ``validate`` (the
fields' rules, a reason or null per record) → ``score`` (CONTRACT 4 as lazy Polars:
``formulas`` are its expressions; ``keys``, ``components``, ``totals`` and ``anomalies``
its steps; its order-independent sums are ``pipeline.core.repeatable``'s). The names below
are loaded on first use, so importing the package stays cheap.
"""

from __future__ import annotations

from pipeline.core.lazy import by_name, lazy_getattr

_HOMES = by_name(
    {
        "fields": ("TASK_FIELDS", "Field", "Kind", "RUN_ID_MAX_CHARS"),
        "parse": ("task_tables",),
        "validate": ("validate_task_records",),
        "score": ("TaskScoring", "ScoringInputError", "PLAN_CHECKED", "score_tasks"),
        "keys": ("RUN_COLUMNS", "COMPONENT_COLUMNS", "PENALTY_COLUMNS"),
    }
)

__all__ = sorted(_HOMES)
__getattr__ = lazy_getattr(__name__, _HOMES)
