"""The DuckDB warehouse: built from the lake by the views in sql/, and its read-only door.

``build`` writes the file from the lake (``loads`` runs its inserts side by side),
``models`` orders and applies the views,
``file`` opens it and reads its facts, ``query`` runs an analyst's SQL over it.
"""

from pipeline.warehouse.build import PART_COLUMN, Build, build_warehouse, check_lake_path
from pipeline.warehouse.file import (
    OLDEST_READER,
    STORAGE_VERSION,
    WAREHOUSE_NAME,
    WarehouseError,
    built_rubric_id,
    connect_read_only,
    existing_warehouse,
    open_commands,
    reading,
    warehouse_path,
)
from pipeline.warehouse.models import STAGE_PREFIX, create_views, models, staged_tables, view_order

__all__ = [
    "OLDEST_READER",
    "PART_COLUMN",
    "STAGE_PREFIX",
    "STORAGE_VERSION",
    "WAREHOUSE_NAME",
    "Build",
    "WarehouseError",
    "build_warehouse",
    "built_rubric_id",
    "check_lake_path",
    "connect_read_only",
    "create_views",
    "existing_warehouse",
    "models",
    "open_commands",
    "reading",
    "staged_tables",
    "view_order",
    "warehouse_path",
]
