"""Which field of an Inspect AI log becomes which field of a task grade.

One sample x epoch of a log is one task run (CONTRACT 2b):

- run_id: ``inspect:<eval id>/<sample id>#<epoch>`` (a new eval id is new runs, but a
  sample a retry carries over, its uuid kept, lands once: ATTEMPT_KEY below)
- problem_id, trial: the sample's id, its epoch (Inspect counts epochs from 1)
- graded_at: the sample's ``completed_at``, else the eval's ``stats.completed_at``,
  else its ``created``
- agent, agent_version, env_type: sample metadata, eval metadata, then the rubric's
  ``[sources.inspect]`` (InspectMapping below)
- grade.subscores: the score's value; a dict gives its keys, a number or a letter
  grade one component named after the scorer (extract.to_subscore)
- grade.weights: 1/n for each of n components (Inspect has none; the rubric's
  weights score the run)
- grade.metadata: the score's metadata, ``explanation``, ``sample`` (the sample's
  metadata) and ``inspect`` (provenance: eval id, task, task version, sample uuid)
- grade.env_internal_failure: the sample has an error, no score, or an unscored value
- cost_usd, tokens, wall_seconds: sums over the sample's model usage, its total_time
- defect_id, cwe, project: sample metadata keys of those names, when they are strings
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pipeline.tasks.fields import RUN_ID_MAX_CHARS

# The rubric table that configures this source, and its keys.
RUBRIC_TABLE = "sources.inspect"
FIELD_KEYS = ("agent_field", "agent_version_field", "env_type_field")
TASKS_KEY = "env_types"

# Letter grades as Inspect's own value_to_float reads them (inspect_ai.scorer._metric):
# CORRECT, PARTIAL, INCORRECT, NOANSWER, and the boolean words it accepts.
LETTER_GRADES: Mapping[str, float] = {
    "C": 1.0,
    "P": 0.5,
    "I": 0.0,
    "N": 0.0,
    "yes": 1.0,
    "true": 1.0,
    "no": 0.0,
    "false": 0.0,
}

# grade.metadata keys the pipeline writes; a score-metadata key of the same name moves
# under SCORE_METADATA_KEY so that nothing the scorer said is lost.
PROVENANCE_KEY = "inspect"
SAMPLE_METADATA_KEY = "sample"
EXPLANATION_KEY = "explanation"
SCORE_METADATA_KEY = "score_metadata"
RESERVED_METADATA = (PROVENANCE_KEY, SAMPLE_METADATA_KEY, EXPLANATION_KEY, SCORE_METADATA_KEY)

# The provenance field naming one attempt at a sample. eval_retry and eval_set carry a
# finished sample over into the retry's log under a new eval id (so a new run_id) and
# keep its uuid; a sample run again gets a new one. The ingest lands an attempt once,
# under the run_id it first landed with (ingest.dedupe), and finds it in run_metadata
# under ATTEMPT_KEY.
ATTEMPT_FIELD = "sample_uuid"
ATTEMPT_KEY = f"{PROVENANCE_KEY}.{ATTEMPT_FIELD}"
# The provenance field naming the task. A problem is (problem_id, env_type) and problem_id
# is the sample's id, which Inspect numbers 1..N in every dataset without ids of its own:
# an ingest notes tasks of one env type whose samples share ids (inspect/shared.py).
TASK_FIELD = "task"
TASK_KEY = f"{PROVENANCE_KEY}.{TASK_FIELD}"
# The provenance field naming one run of a task: eval_retry and eval_set retry an eval
# under a new eval id with the same task id, which tells a killed eval's retry.
TASK_ID_FIELD = "task_id"
TASK_ID_KEY = f"{PROVENANCE_KEY}.{TASK_ID_FIELD}"

# Sample metadata keys lifted to the record's optional top-level fields (CONTRACT 2).
LIFTED_SAMPLE_FIELDS = ("defect_id", "cwe", "project")

# A run_id longer than a record's may be is hashed.
MAX_RUN_ID = RUN_ID_MAX_CHARS
RUN_ID_PREFIX = "inspect:"

# Sample fields never needed for a task grade: left unread (a transcript may be large).
UNREAD_SAMPLE_FIELDS = frozenset(
    {"messages", "events", "store", "attachments", "events_data", "timelines", "output"}
)

# The extra's name as pip knows it (pyproject's project name).
MISSING_EXTRA = (
    "reading Inspect AI logs needs the inspect extra: .venv/bin/pip install -e '.[inspect]' in "
    "the repository, pip install 'agent-grades-pipeline[inspect]' elsewhere (tested with "
    "inspect-ai 0.3.285)"
)


@dataclass(frozen=True)
class InspectMapping:
    """The rubric's ``[sources.inspect]`` table: where agent, version and env type come from.

    Each ``*_field`` names a metadata key looked up in the sample's metadata, then in
    the eval's (``--metadata agent=... agent_version=...``); ``env_types`` maps a task
    name to an env type for logs whose metadata names none. With no version found,
    the model name is the version; with no agent, the solver's name.
    """

    agent_field: str = "agent"
    agent_version_field: str = "agent_version"
    env_type_field: str = "env_type"
    env_types: Mapping[str, str] = field(default_factory=dict)

    def resolved(self) -> dict[str, Any]:
        """As plain data, for the rubric's resolved content (and so its id)."""
        return {
            **{key: getattr(self, key) for key in FIELD_KEYS},
            TASKS_KEY: dict(sorted(self.env_types.items())),
        }


def _refuse(key: str, value: Any, why: str) -> ValueError:
    return ValueError(f"rubric key {RUBRIC_TABLE}.{key} = {value!r}: {why}")


def _name(key: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _refuse(key, value, "expected a non-empty string")
    return value


def parse_mapping(table: Any) -> InspectMapping:
    """The ``[sources.inspect]`` table checked; a ValueError names the key and value."""
    if not isinstance(table, dict):
        raise ValueError(f"rubric key {RUBRIC_TABLE} = {table!r}: expected a table")
    fields: dict[str, str] = {}
    tasks: dict[str, str] = {}
    for key, value in table.items():
        if key in FIELD_KEYS:
            fields[key] = _name(key, value)
        elif key == TASKS_KEY:
            if not isinstance(value, dict):
                raise _refuse(key, value, "expected a table of task name = env type")
            tasks = {task: _name(f"{key}.{task}", env) for task, env in value.items()}
        else:
            raise _refuse(key, value, "unknown key")
    return InspectMapping(**fields, env_types=tasks)
