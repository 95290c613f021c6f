"""Task grades (CONTRACT sections 2 and 4), one module a stage.

Reading order: ``fields`` (the record's fields, declared once) → ``parse`` (the parse
SQL's generated parts; accepted records to the landed task tables) → ``validate`` (the
fields' rules, a reason or null per record) → ``score`` (CONTRACT 4 as lazy Polars:
``formulas`` are its expressions; ``keys``, ``components``, ``totals`` and ``anomalies``
its steps; ``sums`` its order-independent sums). The names below are loaded on first
use, so importing the package stays cheap.
"""

from __future__ import annotations

from pipeline.core.lazy import lazy_getattr

_HOMES = {
    "TASK_FIELDS": "fields",
    "Field": "fields",
    "Kind": "fields",
    "RUN_ID_MAX_CHARS": "fields",
    "task_tables": "parse",
    "validate_task_records": "validate",
    "TaskScoring": "score",
    "ScoringInputError": "score",
    "PLAN_CHECKED": "score",
    "score_tasks": "score",
    "RUN_COLUMNS": "keys",
    "COMPONENT_COLUMNS": "keys",
    "PENALTY_COLUMNS": "keys",
    "repeatable_sum": "sums",
    "with_repeatable_sums": "sums",
}

__all__ = sorted(_HOMES)
__getattr__ = lazy_getattr(__name__, _HOMES)
