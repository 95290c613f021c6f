"""Inspect AI eval logs as task grades (CONTRACT 2b).

Shaped like inspect_ai's own ``analysis/_dataframe`` entity folders: ``columns`` says
which log field becomes which task-grade field, ``extract`` holds the small
derivations, ``table`` reads a log's samples into task-grade JSON records, the same
records a ``.jsonl`` file holds, so validation, quarantine, scoring and the views
stay one path. ``members`` says what a ``.eval`` log's ZIP holds and bounds it before
Inspect reads it; ``attempts`` and ``shared`` read the landed runs' provenance. Only
``table`` imports inspect_ai, and only when a log is read; this package imports nothing
heavy (the rubric reads ``columns`` at start-up).
"""
