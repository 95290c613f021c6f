"""Benchmarks and the plain-Python baseline scorer they are measured against."""
