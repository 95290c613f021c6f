"""Peak RSS of one ``pipeline run`` over a hostile shape (issue 12), in its own process.

    python -m bench.hostile_run [SHAPE=SCALE ...] [--cap-gib 8] [--good 200]
    python -m bench.hostile_run --mixed [SHAPE=SCALE ...] [--good 200]

Each shape is written next to ``--good`` valid records into a fresh folder and
run into a fresh lake; the child is killed once its RSS passes ``--cap-gib``
(so a shape that still blows up reports "killed" instead of taking the machine).
Prints one row per shape: exit code, seconds, peak RSS, and what landed.

``--mixed`` is issue 12's acceptance scenario: ONE ``run`` over one folder holding the
normal records and every shape of MIXED_SCALE (SHAPE=SCALE overrides a size), then the
warehouse is read back: every normal run landed, and per input file every line read is
landed or quarantined and counted (``mixed_check``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import duckdb

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
    "gzip_renamed": 1_000_000_000,
    "long_line": 4 * GIB,
    "sparse": 3_000_000_000,
    "int64": 3,
}


# The acceptance scenario's shapes (issue 12, "How it is checked"), at full size.
MIXED_SCALE = {
    "real_600_tools": 1,
    "findings": 10_000,
    "components": 30_000,
    "metadata_list": 100_000,
    "empty_objects": 21_000_000,
    "gzip_bomb": 1_000_000_000,
    "gzip_renamed": 1_000_000_000,
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


def lines_in(path: Path) -> int:
    """Input lines of one file as the reader numbers them (a report is one; a last line
    without a newline counts), read in blocks; gzip (by name or by its bytes) through every
    member."""
    if path.name.endswith(".json"):
        return 1
    with open(path, "rb") as probe:
        compressed = probe.read(2) == b"\x1f\x8b"  # gzip bytes are gzip whatever the name
    opener = gzip.open if path.name.endswith(".gz") or compressed else open
    count, last = 0, b"\n"
    with opener(path, "rb") as handle:
        while block := handle.read(16 * 1024 * 1024):
            count += block.count(b"\n")
            last = block[-1:]
    return count + (last != b"\n")


def mixed_check(folder: Path, lake: Path, good: Path, good_runs: int) -> dict[str, object]:
    """What one run over ``folder`` left in ``lake``'s warehouse, checked per input file:
    lines read (from the files) against runs landed + quarantined lines counted."""
    con = duckdb.connect(str(lake / "warehouse.duckdb"), read_only=True)
    try:
        per_source = dict(
            con.execute(
                "select source, sum(n)::bigint from ("
                " select source, count(*) as n from task_runs group by source"
                " union all select source, count(*) from surface_runs group by source"
                " union all select source, sum(lines) from quarantine group by source"
                ") group by source"
            ).fetchall()
        )
        (landed_good,) = con.execute(
            "select count(*) from task_runs where source = ?", [str(good.resolve())]
        ).fetchone() or (0,)
        landed = dict(
            con.execute(
                "select source, count(*)::bigint from ("
                " select source from task_runs union all select source from surface_runs"
                ") group by source"
            ).fetchall()
        )
    finally:
        con.close()
    files = {str(p.resolve()): lines_in(p) for p in sorted(folder.iterdir())}
    unaccounted = {
        name: {"lines": lines, "counted": per_source.get(name, 0)}
        for name, lines in files.items()
        if per_source.get(name, 0) != lines
    }
    return {
        "normal_landed": landed_good,
        "normal_expected": good_runs,
        "lines_read": sum(files.values()),
        "lines_counted": sum(per_source.get(name, 0) for name in files),
        "unaccounted": unaccounted,
        # Runs landed per input file (by name): a large record landed, not quarantined.
        "landed": {Path(name).name: runs for name, runs in sorted(landed.items())},
        "ok": landed_good == good_runs and not unaccounted,
    }


def run_mixed(overrides: dict[str, int], good_runs: int, cap_bytes: int) -> dict[str, object]:
    """Issue 12's acceptance scenario: one run over every shape and the normal records."""
    scales = {**MIXED_SCALE, **overrides}
    with tempfile.TemporaryDirectory(prefix="hostile-mixed-") as tmp:
        folder = Path(tmp) / "in"
        folder.mkdir()
        for name, scale in scales.items():
            SHAPES[name](folder, scale)
        good = good_records(folder, good_runs)
        code, seconds, peak, killed, tail = measure([folder], Path(tmp) / "lake", cap_bytes)
        checked = mixed_check(folder, Path(tmp) / "lake", good, good_runs) if code == 0 else {}
    return {
        "scenario": "mixed",
        "scales": scales,
        "exit_code": code,
        "killed": killed,
        "seconds": round(seconds, 1),
        "peak_rss_gib": round(peak / GIB, 3),
        **checked,
        **({} if code == 0 else {"tail": tail}),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("shapes", nargs="*", help="SHAPE=SCALE; default every shape at full scale")
    parser.add_argument("--cap-gib", type=float, default=8.0)
    parser.add_argument("--good", type=int, default=200)
    parser.add_argument("--mixed", action="store_true", help="one run over every shape at once")
    args = parser.parse_args(argv)
    if args.mixed:
        overrides = {name: int(scale) for name, scale in (s.split("=") for s in args.shapes)}
        result = run_mixed(overrides, args.good, int(args.cap_gib * GIB))
        print(json.dumps(result), flush=True)
        if not result.get("ok"):
            sys.exit(1)
        return
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
