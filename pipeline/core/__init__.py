"""Small shared pieces: Polars expression helpers, JSON-safe output, the SQL loader."""
