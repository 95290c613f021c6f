"""Deterministic synthetic data: the sample in ``data/sample/`` and bulk runs for benchmarks.

A development tool, not part of the runtime package (the wheel ships ``pipeline``
and ``schemas`` only; nothing in ``pipeline`` imports ``tools``).
``python -m tools.simulate --out data/sample`` (``make sample``) rewrites the
committed sample. Modules: ``tasks`` (the vectorized task-record builder),
``sample_tasks``, ``servers``, ``surface``, ``xray_reference`` (mcp-xray's grading
in plain Python, the oracle the tests check the pipeline against), ``sample``,
``bulk``, ``flat`` (flat frame to JSON Lines) and ``records`` (single records for
tests, built from the same field lists).

Everything is derived from one integer seed (no wall clock, no global random
state): the same seed writes byte-identical files. JSON keys are sorted, gzip
headers carry no time stamp.

What ``write_sample(out, seed)`` writes
---------------------------------------
- ``tasks/<agent>.jsonl`` (``tasks/cinder.jsonl.gz`` gzipped): task grades
  (CONTRACT section 2) of three agents with two or three versions each over 40
  problems (10 per env type, five projects, defects with CWE ids) and one to
  three trials per problem. ``SAMPLE_AGENTS`` holds each version's skill per
  env type: the newest version of every agent is better on some env types and
  worse on others. Gate outcomes and qualities use common random numbers per
  (agent, problem, trial), so a version's change of skill moves every paired
  problem the same way and a paired comparison detects it.
  Special records (``SPECIAL_ROLES``): grader errors, record weights not
  summing to 1, a failed gate with other stored subscores > 0, a non-binary
  gate subscore, an audit subscore that is not recall x precision, a missing
  component, an unknown component, and an unbounded (unclamped) patch.
- ``bad/malformed.jsonl``: quarantine at work (CONTRACT section 8), in order:
    1. a copy of a good task record from ``tasks/`` (lands, or is skipped when
       ``tasks/`` landed first);
    2. the same line again: an exact duplicate, always skipped;
    3. not JSON (a truncated object);
    4. a required field missing (``graded_at``);
    5. a wrong type (``trial`` is a string);
    6. a subscore outside [0, 1];
    7. a non-finite number (``cost_usd`` is ``1e999``);
    8. a negative weight;
    9. a negative penalty;
    10. subscores and weights with different keys;
    11. an unknown env_type;
    12. line 1's run_id again with different content (always quarantined,
        whichever of line 1 and its copy in ``tasks/`` landed).
  So ingesting this file alone lands 1 line, skips 1, quarantines 10.
- ``surface/<server>-<version>/report.json``: mcp-xray-shaped reports
  (CONTRACT section 3) of five servers over two or three versions, phased and
  unphased, with and without the ``noise`` probe, labeled and proxy-only
  selection, every finding kind. Their ``grade`` is computed with mcp-xray's
  own arithmetic (rounding as it goes, ``xray_reference``), so a regrade must agree within 0.1.
- ``surface/extra.jsonl``: two more reports, one per line (one carries its own
  ``run_id``).

Bulk generation (benchmarks, scale and comparison tests)
--------------------------------------------------------
``generate_task_frame(n, seed)`` builds ``n`` valid records as one flat frame
(dotted column names, null meaning "absent"); ``write_task_jsonl`` writes them
as JSON Lines; ``generate_versions`` / ``write_versions_jsonl`` produce two
versions of one agent whose mean score per env type differs by exactly the
injected ``effect`` under the default rubric. Records are built with numpy and
Polars expressions, one nested frame per shape of record (``write_flat_ndjson``),
never one Python dict per record.
"""

from tools.simulate.bulk import (
    generate_task_frame,
    generate_versions,
    write_task_jsonl,
    write_versions_jsonl,
)
from tools.simulate.flat import flat_ndjson_bytes, write_flat_file, write_flat_ndjson
from tools.simulate.sample import bad_lines, write_sample
from tools.simulate.sample_tasks import GRADER_ERRORS, SAMPLE_AGENTS, sample_task_flat
from tools.simulate.surface import build_report, extra_reports, sample_reports
from tools.simulate.tasks import (
    ENV_GATES,
    ENV_TYPES,
    ENV_WEIGHTS,
    GATE_FAIL_REASONS,
    GRADER_VERSION,
    HARNESS,
    RUN_COLUMNS,
    build_task_flat,
)

__all__ = [
    "ENV_GATES",
    "ENV_TYPES",
    "ENV_WEIGHTS",
    "GATE_FAIL_REASONS",
    "GRADER_ERRORS",
    "GRADER_VERSION",
    "HARNESS",
    "RUN_COLUMNS",
    "SAMPLE_AGENTS",
    "bad_lines",
    "build_report",
    "build_task_flat",
    "extra_reports",
    "flat_ndjson_bytes",
    "generate_task_frame",
    "generate_versions",
    "sample_reports",
    "sample_task_flat",
    "write_flat_file",
    "write_flat_ndjson",
    "write_sample",
    "write_task_jsonl",
    "write_versions_jsonl",
]
