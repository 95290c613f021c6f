"""``python -m tools.simulate [--out DIR] [--seed N]``: (re)write the deterministic sample."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from tools.simulate.sample import DEFAULT_SEED, write_sample

DEFAULT_OUT = Path("data/sample")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.simulate",
        description="Write the deterministic sample data (task grades, mcp-xray reports, "
        "bad lines).",
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="Folder to write.")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = parser.parse_args(argv)
    for path in write_sample(args.out, seed=args.seed):
        sys.stdout.write(f"wrote {path}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
