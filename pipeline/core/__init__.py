"""Small shared pieces: the settings (every PIPELINE_* limit, declared once), Polars
expression helpers, JSON-safe output, the SQL loader."""
