"""How scoring runs: the local engine and Spark, over the same Arrow stages.

The engine types import nothing heavy; the engines' modules load when used.
"""

from pipeline.engines.engine import DEFAULT_SPARK_MASTER, Engine, LocalEngine, SparkEngine

__all__ = ["DEFAULT_SPARK_MASTER", "Engine", "LocalEngine", "SparkEngine"]
