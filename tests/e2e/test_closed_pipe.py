"""A reader that leaves early (`| head -1`) ends nothing but the output: the command exits
with its own code (0, or a gate's verdict), and says nothing about a broken pipe."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import ROOT


def first_line_then_leave(*args: str) -> tuple[int, str, str]:
    """Run ``python -m pipeline ARGS`` reading one line of its output, then closing it."""
    child = subprocess.Popen(
        [sys.executable, "-m", "pipeline", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdout is not None and child.stderr is not None
    first = child.stdout.readline().decode()
    child.stdout.close()
    code = child.wait(timeout=300)
    return code, first, child.stderr.read().decode()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["query", "select * from run_metadata", "--csv"], 0),
        (["score", "--dry-run", "--rubric", "default"], 0),
        # The sample's borealis regressed from 2025-02-20 to 2025-03-28: the gate says so.
        (
            [
                "compare",
                "--agent",
                "borealis",
                "--baseline",
                "2025-02-20",
                "--candidate",
                "2025-03-28",
                "--fail-on-regression",
            ],
            1,
        ),
        (["compare", "--agent", "atlas", "--baseline", "1.3.0", "--candidate", "1.4.0"], 0),
    ],
    ids=["query", "dry-run", "gate", "compare"],
)
def test_a_reader_that_leaves_early_changes_no_exit_code(
    sample_lake: Path, args: list[str], expected: int
) -> None:
    code, first, err = first_line_then_leave(*args, "--lake", str(sample_lake))
    assert first.strip()
    assert code == expected, err
    assert "Broken" not in err and "Traceback" not in err, err
