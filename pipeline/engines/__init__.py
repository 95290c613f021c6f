"""How scoring runs: the local engine and Spark, over the same Arrow stages."""
