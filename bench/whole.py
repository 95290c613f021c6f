"""``score`` and the hand-written Polars rescoring as whole processes (issue 16).

    python -m bench.whole LAKE [--rounds 3] [--rubric FILE]

``make bench`` times each stage after its process has imported the pipeline, so start-up
(imports: a second or more of CPU before this pass) counts on neither side. Here each
command runs as a user runs it, in a fresh interpreter, round after round in turn:
``python -m pipeline score --lake LAKE`` and ``python -m bench.peers.polars_rescore LAKE
OUT``, beside ``python -c "import polars, duckdb"``. CPU is the child's user + system time
(all threads, from ``wait4``): on the shared 2-core machine it moves much less with the
load than wall time. A lake comes from ``python -m bench.run --n N --keep --workdir DIR``.
``score`` scores the lake again (under the same rubric every score file gets the bytes it
had, and is left in place).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def run_process(args: list[str]) -> tuple[float, float]:
    """CPU seconds (user + system, every thread) and wall seconds of ``python ARGS``."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, *args],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    said = child.stderr.read().decode(errors="replace") if child.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"python {' '.join(args)} failed:\n{said[-2000:]}")
    return usage.ru_utime + usage.ru_stime, wall


def commands(lake: Path, out: Path, rubric: Path | None) -> dict[str, list[str]]:
    chosen = ["--rubric", str(rubric)] if rubric else []
    return {
        "score": ["-m", "pipeline", "score", "--lake", str(lake), *chosen],
        "peer": ["-m", "bench.peers.polars_rescore", str(lake), str(out), *chosen],
        "import": ["-c", "import polars, duckdb"],
    }


def rounds(runs: dict[str, list[str]], count: int) -> dict[str, list[tuple[float, float]]]:
    """Each command once per round, in turn, so the load of a moment hits all of them."""
    measured: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
    for _ in range(count):
        for name, args in runs.items():
            measured[name].append(run_process(args))
    return measured


def summary(measured: dict[str, list[tuple[float, float]]]) -> dict[str, float]:
    """Medians of CPU and wall per command, and score's ratios to the peer."""
    medians: dict[str, float] = {}
    for name, pairs in measured.items():
        medians[f"{name}_cpu"] = statistics.median(cpu for cpu, _ in pairs)
        medians[f"{name}_wall"] = statistics.median(wall for _, wall in pairs)
    for kind in ("cpu", "wall"):
        peer = medians[f"peer_{kind}"]
        medians[f"ratio_{kind}"] = medians[f"score_{kind}"] / peer if peer > 0 else float("nan")
    return medians


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.whole", description=__doc__)
    parser.add_argument("lake", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rubric", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds: expected at least 1")
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-whole-") as out:
        measured = rounds(commands(args.lake.resolve(), Path(out), args.rubric), args.rounds)
    medians = summary(measured)
    lines = [
        f"{name}: CPU {medians[f'{name}_cpu']:.2f} s, wall {medians[f'{name}_wall']:.2f} s "
        f"(median of {args.rounds}; CPU "
        + " / ".join(f"{cpu:.2f}" for cpu, _ in measured[name])
        + ")"
        for name in measured
    ]
    lines.append(
        f"score / peer: CPU {medians['ratio_cpu']:.2f}x, wall {medians['ratio_wall']:.2f}x; "
        f"load {load_before:.1f} -> {os.getloadavg()[0]:.1f}"
    )
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
