"""The rubric: every weight, threshold and constant used to (re)compute scores.

CONTRACT.md section 6. A rubric file may give only some keys; every key it
leaves out takes the default below (tables are merged key by key, so
``[task.exploit] weights = { pov_quality = 0.3, summary_quality = 0.0 }``
changes two weights and keeps the other two). The checks the seed's server
refuses to start with run here, before anything is read or written.
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import json
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.compare.names import ALL_ENV_TYPES
from pipeline.sources.inspect.columns import InspectMapping, parse_mapping
from pipeline.surface.rubric import SURFACE_DEFAULTS, SurfaceRubric


def _defect_env() -> dict[str, Any]:
    """exploit's and detect's gate and weights, the same for both (docs/rubric.md)."""
    return {
        "gate": "defect_matching",
        "weights": {
            "defect_matching": 0.60,
            "pov_quality": 0.20,
            "summary_quality": 0.10,
            "target_calls": 0.10,
        },
    }


DEFAULT_RUBRIC: dict[str, Any] = {
    "task": {
        "minimization_multiple": 3.0,
        "penalty_scale": 1.0,
        "exploit": _defect_env(),
        "detect": _defect_env(),
        "patch": {
            "gate": "patch_verified",
            "weights": {
                "patch_verified": 0.25,
                "number_of_attempts": 0.25,
                "size_of_patch": 0.25,
                "minimization": 0.25,
            },
        },
        "audit": {"weights": {"audit": 1.0}},
    },
    "surface": SURFACE_DEFAULTS,
}

# Keys whose value is a free-form name -> number table: any name may appear.
_OPEN_TABLES = {
    ("surface", "smell_severity"),
    ("surface", "letter_bands"),
}
_ENV_KEYS = {"gate", "weights"}
# A rubric's exploit and detect weights sum to 1 as written (math.fsum), to rounding only.
RUBRIC_WEIGHT_SUM_TOLERANCE = 1e-9
# Sane bounds, so that no total made of a rubric's numbers can overflow: every number of a
# rubric lies in [0, RUBRIC_NUMBER_MAX] (the largest default is 12000), and a gated env's
# weights in [0, 1] (a subscore lies in [0, 1], so its weighted sum stays a fraction).
RUBRIC_NUMBER_MAX = 1e6
GATED_WEIGHT_MAX = 1.0


class RubricError(ValueError):
    """A rubric the pipeline refuses to start with (exit code 2)."""


@dataclass(frozen=True)
class EnvRubric:
    env_type: str
    gate: str | None
    weights: Mapping[str, float]


@dataclass(frozen=True)
class TaskRubric:
    minimization_multiple: float
    failure_threshold: float | None
    penalty_scale: float
    envs: Mapping[str, EnvRubric]


@dataclass(frozen=True)
class Rubric:
    rubric_id: str
    task: TaskRubric
    surface: SurfaceRubric
    # The merged rubric as plain data, for lineage: what exactly scored a run.
    resolved: Mapping[str, Any]
    # [sources.inspect]: how Inspect AI logs name agent, version and env type.
    inspect: InspectMapping = field(default_factory=InspectMapping)

    @property
    def surface_weights(self) -> Mapping[str, float]:
        return self.surface.weights

    @property
    def is_default_surface(self) -> bool:
        """mcp-xray's own grade can only be checked under its own constants."""
        return self.surface.is_default


def _fail(key: str, value: Any, why: str) -> RubricError:
    return RubricError(f"rubric key {key} = {value!r}: {why}")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _float(key: str, value: Any) -> float:
    """A TOML number as a float; an integer too large for one is refused, naming the key."""
    try:
        return float(value)
    except OverflowError as exc:
        raise _fail(key, value, f"must lie in [0, {RUBRIC_NUMBER_MAX:g}]") from exc


def _bounded(key: str, value: float, high: float = RUBRIC_NUMBER_MAX) -> None:
    if not (math.isfinite(value) and 0.0 <= value <= high):
        raise _fail(key, value, f"must be a finite number in [0, {high:g}]")


def _merge(default: Any, given: Any, path: tuple[str, ...]) -> Any:
    dotted = ".".join(path)
    if isinstance(default, dict):
        if not isinstance(given, dict):
            raise _fail(dotted, given, "expected a table")
        merged = copy.deepcopy(default)
        for key, value in given.items():
            sub = (*path, key)
            if key in default:
                merged[key] = _merge(default[key], value, sub)
            elif path in _OPEN_TABLES:
                if not _is_number(value):
                    raise _fail(".".join(sub), value, "expected a number")
                merged[key] = _float(".".join(sub), value)
            elif path == ("task",) and isinstance(value, dict):
                # A new env type: its own gate and weights, nothing inherited.
                merged[key] = _merge_env(value, sub)
            elif len(path) == 2 and path[0] == "task" and key == "gate":
                # CONTRACT 6: an env type may name a gate, even one whose default has none.
                if not isinstance(value, str) or not value:
                    raise _fail(".".join(sub), value, "expected a component name")
                merged[key] = value
            elif len(path) == 3 and path[0] == "task" and path[2] == "weights":
                if not _is_number(value):
                    raise _fail(".".join(sub), value, "expected a number")
                merged[key] = _float(".".join(sub), value)
            else:
                raise _fail(".".join(sub), value, "unknown key")
        return merged
    if isinstance(default, list):
        if not isinstance(given, list) or not all(isinstance(v, str) for v in given):
            raise _fail(dotted, given, "expected a list of names")
        return list(given)
    if isinstance(default, str):
        if not isinstance(given, str) or not given:
            raise _fail(dotted, given, "expected a non-empty string")
        return given
    if isinstance(default, float):
        if not _is_number(given):
            raise _fail(dotted, given, "expected a number")
        return _float(dotted, given)
    raise _fail(dotted, given, "unsupported value")  # pragma: no cover - defaults are fixed


def _merge_env(given: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    for key in given:
        if key not in _ENV_KEYS:
            raise _fail(".".join((*path, key)), given[key], "unknown key")
    weights = given.get("weights")
    if not isinstance(weights, dict) or not weights:
        raise _fail(".".join((*path, "weights")), weights, "a new env type needs a weights table")
    env: dict[str, Any] = {"weights": {}}
    for name, value in weights.items():
        key = ".".join((*path, "weights", name))
        if not _is_number(value):
            raise _fail(key, value, "expected a number")
        env["weights"][name] = _float(key, value)
    if "gate" in given:
        gate = given["gate"]
        if not isinstance(gate, str) or not gate:
            raise _fail(".".join((*path, "gate")), gate, "expected a component name")
        env["gate"] = gate
    return env


def _check_task(task: dict[str, Any]) -> None:
    multiple = task["minimization_multiple"]
    if not (math.isfinite(multiple) and multiple > 1):
        raise _fail("task.minimization_multiple", multiple, "must be greater than 1")
    _bounded("task.minimization_multiple", multiple)
    if "failure_threshold" in task:
        threshold = task["failure_threshold"]
        if not (0.0 <= threshold <= 1.0):
            raise _fail("task.failure_threshold", threshold, "must lie in [0, 1]")
    _bounded("task.penalty_scale", task["penalty_scale"])
    if ALL_ENV_TYPES in task:
        raise _fail(
            f"task.{ALL_ENV_TYPES}",
            task[ALL_ENV_TYPES],
            f"'{ALL_ENV_TYPES}' names every env type together (compare, history, "
            "version_regressions): give this env type another name",
        )
    for env_type, env in task.items():
        if not isinstance(env, dict):
            continue
        gate = env.get("gate")
        for name, weight in env["weights"].items():
            key = f"task.{env_type}.weights.{name}"
            if not (math.isfinite(weight) and weight >= 0):
                raise _fail(key, weight, "weights must be >= 0")
            _bounded(key, weight, GATED_WEIGHT_MAX if gate is not None else RUBRIC_NUMBER_MAX)
        if gate is not None and gate not in env["weights"]:
            raise _fail(f"task.{env_type}.gate", gate, "the gate must be one of the weights")
    for env_type in ("exploit", "detect"):
        weights = task[env_type]["weights"]
        total = math.fsum(weights.values())
        if abs(total - 1.0) > RUBRIC_WEIGHT_SUM_TOLERANCE:
            raise _fail(
                f"task.{env_type}.weights",
                weights,
                f"must sum to 1.0, they sum to {total}{_added_names(env_type, weights)}",
            )


def _added_names(env_type: str, weights: Mapping[str, float]) -> str:
    """Why a sum is off when the file adds a name: its table merges into the defaults, so a
    misspelt weight (pov_qualty) is added beside the one meant, which keeps its default."""
    known = list(DEFAULT_RUBRIC["task"][env_type]["weights"])
    said = [
        f"{name} is not one of the default {env_type} weights"
        + (f" (the closest: {closest})" if closest else "")
        for name in weights
        if name not in known
        for closest in [closest_name(name, known)]
    ]
    merges = "a table merges key by key: a name it adds is a weight beside the defaults"
    return f"; {'; '.join(said)}; {merges}" if said else ""


# difflib's own default: how alike a name must be to be offered as the one meant.
CLOSE_NAME_CUTOFF = 0.6


def closest_name(name: str, names: list[str]) -> str | None:
    matches = difflib.get_close_matches(name, names, n=1, cutoff=CLOSE_NAME_CUTOFF)
    return matches[0] if matches else None


def _check(resolved: dict[str, Any]) -> None:
    _check_task(resolved["task"])
    surface = resolved["surface"]
    for key, value in surface.items():
        if isinstance(value, float):
            _bounded(f"surface.{key}", value)
    for name, weight in surface["weights"].items():
        if not (math.isfinite(weight) and weight >= 0):
            raise _fail(f"surface.weights.{name}", weight, "weights must be >= 0")
        _bounded(f"surface.weights.{name}", weight)
    if not math.fsum(surface["weights"].values()) > 0:
        # Nothing could be averaged: every server would show 0.0 and an F.
        raise _fail("surface.weights", surface["weights"], "at least one weight must be > 0")
    for key in ("smell_severity", "letter_bands"):
        for name, value in surface[key].items():
            _bounded(f"surface.{key}.{name}", value)
    # Open, but a letter that is one of the defaults in another case is a typo: it would
    # add a letter beside the default, not move it.
    meant = {letter.casefold(): letter for letter in SURFACE_DEFAULTS["letter_bands"]}
    for name, value in surface["letter_bands"].items():
        if name not in meant.values() and name.casefold() in meant:
            raise _fail(
                f"surface.letter_bands.{name}",
                value,
                f"letters are case-sensitive: {meant[name.casefold()]} moves that letter's "
                "cutoff, another name adds a letter",
            )
    for good, bad in (
        ("tokens_per_tool_good", "tokens_per_tool_bad"),
        ("surface_tokens_good", "surface_tokens_bad"),
    ):
        if not surface[good] < surface[bad]:
            raise _fail(f"surface.{bad}", surface[bad], f"must be greater than surface.{good}")


# A rubric without a rubric_id is named by its content: this prefix and 16 hex digits of
# its hash. Only such an id may start with it, so no rubric can take another's content id.
CONTENT_ID_PREFIX = "sha256:"


def _content_id(resolved: Mapping[str, Any]) -> str:
    canonical = json.dumps(resolved, sort_keys=True, separators=(",", ":"))
    return CONTENT_ID_PREFIX + hashlib.sha256(canonical.encode()).hexdigest()[:16]


def _sources(given: Any, envs: set[str]) -> InspectMapping | None:
    """The ``[sources]`` table (only ``[sources.inspect]`` so far), checked; None when absent."""
    if given is None:
        return None
    if not isinstance(given, dict):
        raise _fail("sources", given, "expected a table")
    for key, value in given.items():
        if key != "inspect":
            raise _fail(f"sources.{key}", value, "unknown key")
    try:
        mapping = parse_mapping(given.get("inspect", {}))
    except ValueError as exc:
        raise RubricError(str(exc)) from exc
    for task, env_type in mapping.env_types.items():
        if env_type not in envs:
            raise _fail(f"sources.inspect.env_types.{task}", env_type, "not an env type of [task]")
    return mapping


def parse_rubric(data: Mapping[str, Any]) -> Rubric:
    """Merge a parsed rubric document onto the defaults and check it."""
    given = dict(data)
    rubric_id = given.pop("rubric_id", None)
    sources_given = given.pop("sources", None)
    if rubric_id is not None and (not isinstance(rubric_id, str) or not rubric_id.strip()):
        raise _fail("rubric_id", rubric_id, "expected a non-empty string")
    task_given = given.get("task")
    threshold: Any = None
    if isinstance(task_given, dict) and "failure_threshold" in task_given:
        task_given = dict(task_given)
        threshold = task_given.pop("failure_threshold")
        if not _is_number(threshold) or not math.isfinite(
            _float("task.failure_threshold", threshold)
        ):
            raise _fail("task.failure_threshold", threshold, "expected a number")
        given["task"] = task_given
    resolved: dict[str, Any] = _merge(DEFAULT_RUBRIC, given, ())
    if threshold is not None:
        resolved["task"]["failure_threshold"] = float(threshold)
    _check(resolved)
    task = resolved["task"]
    inspect = _sources(sources_given, {k for k, v in task.items() if isinstance(v, dict)})
    if inspect is not None:
        # Only a rubric that gives [sources] holds it: the default rubric's id is unchanged.
        resolved["sources"] = {"inspect": inspect.resolved()}
    content_id = _content_id(resolved)
    spoofed = isinstance(rubric_id, str) and rubric_id.startswith(CONTENT_ID_PREFIX)
    if spoofed and rubric_id != content_id:
        raise _fail(
            "rubric_id",
            rubric_id,
            f"an id starting {CONTENT_ID_PREFIX!r} names a rubric by its content, and this "
            f"rubric's is {content_id}: give another id, or none",
        )
    envs = {
        name: EnvRubric(env_type=name, gate=env.get("gate"), weights=dict(env["weights"]))
        for name, env in task.items()
        if isinstance(env, dict)
    }
    return Rubric(
        rubric_id=rubric_id if rubric_id is not None else content_id,
        task=TaskRubric(
            minimization_multiple=task["minimization_multiple"],
            failure_threshold=task.get("failure_threshold"),
            penalty_scale=task["penalty_scale"],
            envs=envs,
        ),
        surface=SurfaceRubric.from_table(resolved["surface"]),
        resolved=resolved,
        inspect=inspect or InspectMapping(),
    )


# A rubric is a few dozen keys: these bounds only stop input that is not one.
MAX_RUBRIC_BYTES = 1024 * 1024
MAX_RUBRIC_BRACKETS = 10_000


def load_rubric(path: Path | None) -> Rubric:
    """The rubric in ``path``, or the default one; RubricError names what is wrong."""
    if path is None:
        return parse_rubric({})
    try:
        with open(path, "rb") as handle:
            # Read one byte past the cap, so /dev/zero or a huge file is refused, not read.
            data = handle.read(MAX_RUBRIC_BYTES + 1)
        if len(data) > MAX_RUBRIC_BYTES:
            raise RubricError(
                f"rubric file {path}: larger than {MAX_RUBRIC_BYTES} bytes, not a rubric"
            )
        # A BOM is what some editors save UTF-8 with; TOML does not allow one.
        text = data.decode("utf-8").removeprefix("\ufeff")
    except (OSError, UnicodeDecodeError) as exc:
        raise RubricError(f"rubric file {path}: cannot be read ({exc})") from exc
    nesting = max(text.count("["), text.count("{"))
    if nesting > MAX_RUBRIC_BRACKETS:
        raise RubricError(
            f"rubric file {path}: {nesting} brackets, over the limit of {MAX_RUBRIC_BRACKETS}"
        )
    try:
        parsed = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RubricError(f"rubric file {path}: not valid TOML ({exc})") from exc
    except RecursionError as exc:
        raise RubricError(f"rubric file {path}: nests too deep to be a rubric") from exc
    given_id = parsed.get("rubric_id")
    if isinstance(given_id, str) and not given_id.isprintable():
        # A new id is printed by every later command on the lake, and stored there: an escape
        # sequence in it would retitle every reader's terminal. (Ids a lake already holds
        # are read as they are, and shown escaped.)
        raise _fail("rubric_id", given_id, "expected printable characters only")
    return parse_rubric(parsed)
