"""Peak RSS of one ``pipeline run`` over a hostile shape (issue 12), in its own process.

    python -m bench.hostile_run [SHAPE=SCALE ...] [--cap-gib 8] [--good 200]

Each shape is written next to ``--good`` valid records into a fresh folder and
run into a fresh lake; the child is killed once its RSS passes ``--cap-gib``
(so a shape that still blows up reports "killed" instead of taking the machine).
Prints one row per shape: exit code, seconds, peak RSS, and what landed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.hostile import SHAPES, good_records

REPO_ROOT = Path(__file__).resolve().parents[1]
GIB = 1024**3
# The shapes at the size that took a run down on main (issue 12's table).
FULL_SCALE = {
    "components": 30_000,
    "metadata_list": 100_000,
    "findings": 10_000,
    "empty_objects": 21_000_000,
    "gzip_bomb": 1_000_000_000,
    "long_line": 4 * GIB,
    "sparse": 3_000_000_000,
    "int64": 3,
}


@dataclass
class Measured:
    shape: str
    scale: int
    exit_code: int
    seconds: float
    peak_rss_gib: float
    killed: bool
    tail: str


def _rss_bytes(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def measure(inputs: list[Path], lake: Path, cap_bytes: int) -> tuple[int, float, int, bool, str]:
    """Exit code, seconds, peak RSS and whether the cap killed it, for one ``run``."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "pipeline", "run", *map(str, inputs), "--lake", str(lake)],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    peak, killed = 0, False
    while child.poll() is None:
        peak = max(peak, _rss_bytes(child.pid))
        if peak > cap_bytes:
            child.kill()
            killed = True
            break
        time.sleep(0.05)
    out, _ = child.communicate()
    return child.returncode, time.perf_counter() - started, peak, killed, out[-600:]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("shapes", nargs="*", help="SHAPE=SCALE; default every shape at full scale")
    parser.add_argument("--cap-gib", type=float, default=8.0)
    parser.add_argument("--good", type=int, default=200)
    args = parser.parse_args(argv)
    chosen = [s.split("=") for s in args.shapes] or [[k, str(v)] for k, v in FULL_SCALE.items()]
    rows: list[Measured] = []
    for name, scale in chosen:
        with tempfile.TemporaryDirectory(prefix="hostile-") as tmp:
            folder = Path(tmp) / "in"
            folder.mkdir()
            SHAPES[name](folder, int(scale))
            good_records(folder, args.good)
            code, seconds, peak, killed, tail = measure(
                [folder], Path(tmp) / "lake", int(args.cap_gib * GIB)
            )
        rows.append(
            Measured(name, int(scale), code, round(seconds, 2), round(peak / GIB, 3), killed, tail)
        )
        row = asdict(rows[-1])
        row.pop("tail")
        print(json.dumps(row), flush=True)
        if code not in (0,) or killed:
            print(tail, file=sys.stderr)


if __name__ == "__main__":
    main()
