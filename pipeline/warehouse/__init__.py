"""The DuckDB warehouse: built from the lake by the views in sql/, and its read-only door."""
