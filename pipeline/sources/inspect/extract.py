"""Small derivations from an Inspect AI log's values to task-grade fields (plain data in,
plain data out: no inspect_ai types, so each is tested without a log)."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.sources.blocks import UTF8_BOM
from pipeline.sources.inspect.columns import (
    EXPLANATION_KEY,
    LETTER_GRADES,
    MAX_RUN_ID,
    PROVENANCE_KEY,
    RESERVED_METADATA,
    RUN_ID_PREFIX,
    SAMPLE_METADATA_KEY,
    SCORE_METADATA_KEY,
)

EVAL_SUFFIX = ".eval"
JSON_SUFFIX = ".json"
# Inspect writes a .json log's fields in a fixed order (EvalLog: "the order of these
# fields is important for the log file format"): version, then status. An mcp-xray
# report starts otherwise, so a few hundred bytes tell the two apart.
SNIFF_BYTES = 512
_JSON_LOG_START = re.compile(rb'^\s*\{\s*"version"\s*:\s*\d+\s*,\s*"status"\s*:')


# Inspect's eval_set writes two indexes beside its logs: eval-set.json (the set's tasks) and
# logs.json (each log's header by file name, {} before the first). Neither is a log.
INSPECT_INDEX_NAMES = ("eval-set.json", "logs.json")
_INDEX_START = re.compile(rb'^\s*\{\s*(\}|"eval_set_id"|"[^"]*\.(eval|json)"\s*:\s*\{)')


def _head(path: Path) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read(SNIFF_BYTES).removeprefix(UTF8_BOM)
    except OSError:
        return None  # the reader names a file it cannot open


def is_inspect_log(path: Path) -> bool:
    """A ``.eval`` file, or a ``.json`` file that starts like an Inspect log."""
    if path.name.endswith(EVAL_SUFFIX):
        return True
    if not path.name.endswith(JSON_SUFFIX):
        return False
    head = _head(path)
    return head is not None and bool(_JSON_LOG_START.match(head))


def is_inspect_index(path: Path) -> bool:
    """One of the index files eval_set writes beside its logs, by its name and first bytes."""
    if path.name not in INSPECT_INDEX_NAMES:
        return False
    head = _head(path)
    return head is not None and bool(_INDEX_START.match(head))


@dataclass(frozen=True)
class ScoreParts:
    """One scorer's Score, as plain data."""

    value: Any
    metadata: Mapping[str, Any] | None = None
    explanation: str | None = None


@dataclass
class Components:
    """Every scorer's value as subscores; what could not be scored, and why."""

    subscores: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    explanation: str | dict[str, str] | None = None
    unscored: list[str] = field(default_factory=list)


def to_subscore(value: Any) -> Any:
    """A score value as a subscore: a number as a float, a letter grade or a boolean word by
    Inspect's own value_to_float table; NaN (Inspect's "unscored") as None. Anything else is
    returned as it is, so validation refuses it with a reason (Inspect would warn and use 0)."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        number = float(value)
        return None if math.isnan(number) else number
    if isinstance(value, str):
        if value in LETTER_GRADES:
            return LETTER_GRADES[value]
        if value.lower() in LETTER_GRADES:
            return LETTER_GRADES[value.lower()]
        try:
            number = float(value)
        except ValueError:
            return value
        return number if math.isfinite(number) else value
    return value


def _named(scorer: str, key: str, several: bool) -> str:
    return f"{scorer}/{key}" if several else key


def components(scores: Mapping[str, ScoreParts]) -> Components:
    """Subscores from every scorer: a dict value gives one component per key, any other
    value one component named after its scorer. With several scorers each component, and
    each scorer's metadata and explanation, is named ``<scorer>/...``, so none collide."""
    out = Components()
    several = len(scores) > 1
    explanations: dict[str, str] = {}
    for scorer, score in scores.items():
        values = score.value if isinstance(score.value, dict) else {scorer: score.value}
        for key, value in values.items():
            name = _named(scorer, str(key), several and isinstance(score.value, dict))
            subscore = to_subscore(value)
            if subscore is None:
                out.unscored.append(name)
            else:
                out.subscores[name] = subscore
        if score.metadata:
            if several:
                out.metadata[scorer] = dict(score.metadata)
            else:
                out.metadata.update(score.metadata)
        if score.explanation is not None:
            explanations[scorer] = score.explanation
    if several:
        out.explanation = explanations or None
    else:
        out.explanation = next(iter(explanations.values()), None)
    return out


def equal_weights(subscores: Mapping[str, Any]) -> dict[str, float]:
    """1/n for each of n components: Inspect gives none (the rubric's weights score the run)."""
    return {name: 1.0 / len(subscores) for name in subscores}


def grade_metadata(
    score_metadata: Mapping[str, Any],
    explanation: str | dict[str, str] | None,
    sample_metadata: Mapping[str, Any],
    provenance: Mapping[str, Any],
) -> dict[str, Any]:
    """grade.metadata: the score's metadata at the top (where failure_reasons reads
    ``<gate>.reason`` and scoring reads ``recall``, ``precision``, ``minimization``), then
    the pipeline's keys; a score key named like one of those moves under score_metadata."""
    kept = {k: v for k, v in score_metadata.items() if k not in RESERVED_METADATA}
    moved = {k: v for k, v in score_metadata.items() if k in RESERVED_METADATA}
    out: dict[str, Any] = dict(kept)
    if moved:
        out[SCORE_METADATA_KEY] = moved
    if explanation is not None:
        out[EXPLANATION_KEY] = explanation
    if sample_metadata:
        out[SAMPLE_METADATA_KEY] = dict(sample_metadata)
    out[PROVENANCE_KEY] = dict(provenance)
    return out


def first_named(key: str, *sources: Mapping[str, Any] | None) -> Any:
    """The value of ``key`` in the first mapping that has it (None when none has)."""
    for source in sources:
        if source and source.get(key) is not None:
            return source[key]
    return None


def as_name(value: Any) -> Any:
    """A number given for a name (``--metadata agent_version=2`` parses as an int) as text;
    anything else unchanged, for validation to judge."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return value


def run_id(eval_id: str, sample_id: str, epoch: int) -> str:
    """``inspect:<eval id>/<sample id>#<epoch>``; past 256 characters the sample id is hashed."""
    plain = f"{RUN_ID_PREFIX}{eval_id}/{sample_id}#{epoch}"
    if len(plain) <= MAX_RUN_ID:
        return plain
    digest = hashlib.sha256(sample_id.encode()).hexdigest()
    return f"{RUN_ID_PREFIX}{eval_id}/sha256:{digest}#{epoch}"[:MAX_RUN_ID]


@dataclass(frozen=True)
class Usage:
    tokens: int | None
    cost_usd: float | None


def usage_totals(usages: Iterable[tuple[int, float | None]]) -> Usage:
    """Tokens and cost summed over a sample's models ((total_tokens, total_cost) each);
    None when no model was called, or no model reported a cost."""
    pairs = list(usages)
    costs = [cost for _, cost in pairs if cost is not None]
    return Usage(
        tokens=sum(tokens for tokens, _ in pairs) if pairs else None,
        cost_usd=math.fsum(costs) if costs else None,
    )
