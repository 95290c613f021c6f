"""The release gate's numbers do not move between two runs over the same lake.

Float sums depend on the order of their terms, and Polars' multithreaded group_bys
and joins do not fix that order: before pipeline.core.repeatable, ``compare --json``
and ``history --json`` differed in the last bits from one run to the next. Here the
same lake is compared again in-process and in subprocesses with one Polars thread and
with the default pool, byte for byte, and the lake's ``version_regressions`` table is
checked against ``compare --json`` with ``==``, not a tolerance.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.compare.documents import GATE_FIELDS
from pipeline.core import repeatable
from pipeline.warehouse import connect_read_only
from tests.paths import ROOT

runner = CliRunner()
# The sample agent with three versions: history has two steps, compare one pair.
AGENT = "borealis"
COMPARE = ["--agent", AGENT, "--baseline", "2025-01-15", "--candidate", "2025-02-20", "--json"]
HISTORY = ["--agent", AGENT, "--json"]
FLOAT_FIELDS = [f for f in GATE_FIELDS if f not in ("paired_problems", "verdict", "gate_verdict")]
# A fresh interpreter, its Polars pool sized at start (POLARS_MAX_THREADS), runs each command
# given as JSON in argv[1] and prints their outputs as one JSON list.
FRESH_PROCESS = """
import json, sys
from typer.testing import CliRunner
from pipeline.cli import app
runner, outputs = CliRunner(), []
for args in json.loads(sys.argv[1]):
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    outputs.append(result.stdout)
print(json.dumps(outputs))
"""


@pytest.fixture
def lake(sample_lake: Path) -> Path:
    """The session's sample lake: these tests only read it."""
    return sample_lake


def _in_process(command: str, args: list[str], lake: Path) -> str:
    result = runner.invoke(app, [command, *args, "--lake", str(lake)])
    assert result.exit_code == 0, result.output
    return result.stdout


def _fresh_process(commands: list[list[str]], lake: Path, threads: str | None) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "POLARS_MAX_THREADS"}
    if threads is not None:
        env["POLARS_MAX_THREADS"] = threads
    arguments = [[*command, "--lake", str(lake)] for command in commands]
    done = subprocess.run(
        [sys.executable, "-c", FRESH_PROCESS, json.dumps(arguments)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    outputs: list[str] = json.loads(done.stdout)
    return outputs


@pytest.mark.slow
def test_json_is_byte_identical_run_after_run_and_across_thread_counts(lake: Path) -> None:
    # Both commands in each fresh interpreter: one start per thread count, not per command.
    commands = [["compare", *COMPARE], ["history", *HISTORY]]
    first = [_in_process(command, args, lake) for command, *args in commands]
    assert all(json.loads(output) for output in first)  # real documents, not empty outputs
    assert [_in_process(command, args, lake) for command, *args in commands] == first
    assert _fresh_process(commands, lake, threads="1") == first
    assert _fresh_process(commands, lake, threads=None) == first


@pytest.mark.slow
def test_version_regressions_equal_compare_json_bit_for_bit(lake: Path) -> None:
    con = connect_read_only(lake)
    try:
        table = con.sql("select * from version_regressions order by all").pl()
    finally:
        con.close()
    steps = table.select("agent", "baseline", "candidate").unique().sort(pl.all())
    assert steps.height >= 3  # every sample agent has a step; borealis two
    for agent, baseline, candidate in steps.rows():
        args = ["--agent", agent, "--baseline", baseline, "--candidate", candidate, "--json"]
        report = json.loads(_in_process("compare", args, lake))
        expected = {"all": report, **{r["env_type"]: r for r in report["per_env_type"]}}
        rows = table.filter(
            (pl.col("agent") == agent)
            & (pl.col("baseline") == baseline)
            & (pl.col("candidate") == candidate)
        )
        assert sorted(rows["env_type"].to_list()) == sorted(expected)
        for row in rows.to_dicts():
            want = expected[row["env_type"]]
            for field in FLOAT_FIELDS:
                if field in want:
                    assert row[field] == want[field], (agent, candidate, row["env_type"], field)
            assert row["paired_problems"] == want["paired_problems"]
            assert row["verdict"] == want["verdict"]


def test_repeatable_aggregations_ignore_row_order() -> None:
    rng = np.random.default_rng(3)
    # Values of mixed magnitude make a plain sum's last bit depend on the order.
    values = rng.random(20_000) * 10.0 ** rng.integers(-8, 8, 20_000)
    frame = pl.DataFrame({"g": rng.integers(0, 3, values.size), "x": values})
    results = {
        frame.sample(fraction=1.0, shuffle=True, seed=seed)
        .group_by("g")
        .agg(s=repeatable.total("x"), m=repeatable.mean("x"), sd=repeatable.std("x"))
        .sort("g")
        .rows()
        .__repr__()
        for seed in range(6)
    }
    assert len(results) == 1
    # ... and they are still the sum, mean and sd (the formula is unchanged).
    whole = frame.select(s=repeatable.total("x"), m=repeatable.mean("x"), sd=repeatable.std("x"))
    assert whole["s"].item() == pytest.approx(math.fsum(values), rel=1e-12)
    assert whole["m"].item() == pytest.approx(math.fsum(values) / values.size, rel=1e-12)
    assert whole["sd"].item() == pytest.approx(float(np.std(values, ddof=1)), rel=1e-9)


def test_repeatable_aggregations_by_hand() -> None:
    frame = pl.DataFrame({"g": [1, 1, 1, 2, 2, 3], "x": [1.0, None, 3.0, None, None, 2.0]})
    got = (
        frame.group_by("g")
        .agg(s=repeatable.total("x"), m=repeatable.mean("x"), sd=repeatable.std("x"))
        .sort("g")
    )
    # Nulls are skipped, as by sum/mean/std: {1, 3} -> 4, 2, sqrt(2); {} -> 0, null, null.
    expected: dict[str, list[Any]] = {
        "s": [4.0, 0.0, 2.0],
        "m": [2.0, None, 2.0],
        "sd": [math.sqrt(2.0), None, None],
    }
    assert {k: got[k].to_list() for k in expected} == expected
