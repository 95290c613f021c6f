"""Graded AI-agent runs and mcp-xray surface grades into a DuckDB warehouse."""
