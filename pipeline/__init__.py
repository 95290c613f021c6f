"""Graded AI-agent runs and mcp-xray surface grades into a DuckDB warehouse."""

import warnings

# pandera imports pyspark's pandas layer whenever the optional Spark extra is
# installed; its version nag is about pandas-on-Spark, which we never use.
warnings.filterwarnings(
    "ignore", message="PySpark does not yet fully support pandas", category=FutureWarning
)
