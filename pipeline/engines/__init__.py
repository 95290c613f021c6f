"""How scoring runs: the local engine and Spark, through the same stage.

``stage.score_tables`` turns one batch's flat landed tables into its checked score
tables. The local engine (``local``) hands it each landed part as lazy scans; Spark
(``spark``) hands it each Arrow batch through ``arrow_stages``, which unnests the
batch's nested children first and nests the scores after. ``engine`` holds the engine
types and the one writer of score files. The engine types import nothing heavy; the
engines' modules load when used.
"""

from pipeline.engines.engine import DEFAULT_SPARK_MASTER, Engine, LocalEngine, SparkEngine

__all__ = ["DEFAULT_SPARK_MASTER", "Engine", "LocalEngine", "SparkEngine"]
