"""The rubric file as the rows both peers need: one TOML read, no pipeline code."""

from __future__ import annotations

import argparse
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

DEFAULT_RUBRIC = Path(__file__).resolve().parents[2] / "rubrics" / "default.toml"


@dataclass(frozen=True)
class PeerRubric:
    # (env_type, component, weight, is_gate), one row per weighted component.
    weights: list[tuple[str, str, float, bool]]
    minimization_multiple: float
    penalty_scale: float
    failure_threshold: float | None


def load(path: Path = DEFAULT_RUBRIC) -> PeerRubric:
    """A complete rubric file (every task key given, as rubrics/default.toml)."""
    task = tomllib.loads(path.read_text())["task"]
    envs = {name: env for name, env in task.items() if isinstance(env, dict)}
    return PeerRubric(
        weights=[
            (env_type, component, float(weight), component == env.get("gate"))
            for env_type, env in envs.items()
            for component, weight in env["weights"].items()
        ],
        minimization_multiple=float(task["minimization_multiple"]),
        penalty_scale=float(task["penalty_scale"]),
        failure_threshold=task.get("failure_threshold"),
    )


def peer_main(
    prog: str, source: str, work: Callable[[Path, Path, PeerRubric], None], argv: list[str] | None
) -> int:
    """A peer's command line: ``<source> <out> [--rubric FILE]``, then ``work`` on them."""
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument(source, type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--rubric", type=Path, default=DEFAULT_RUBRIC)
    args = parser.parse_args(argv)
    work(getattr(args, source), args.out, load(args.rubric))
    return 0
