"""Random sequences of the commands a team runs over weeks, against a plain model of the lake.

A Hypothesis state machine ingests good, bad, duplicate and re-spelled files,
rescores under rubric A, B or none, runs the nightly job, replays the
quarantine, gates a comparison, kills a run at a seeded point, damages a score file and
moves the lake. After every step `pipeline check` must pass, and the warehouse must show
exactly what the model says of every line: landed (once), quarantined
(unresolved) or skipped, under the rubric the lake remembers.

Every command runs in-process (typer's CliRunner): a step costs about a second, a process
start-up three more. A kill at a seeded write runs in-process too (tests/crash.py leaves the
lake as kill -9 would); one rule of LongLakeSequences kills a real
`python -m pipeline run`, at most once a sequence, for what only a process shows: dying
with the lake's lock and files open.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.storage import lake as lake_module
from tests.crash import damage_first_page, killed_at
from tests.examples import examples, sized

runner = CliRunner()
DEFAULT_ID = "default"  # the model's name for "whatever id the defaults have"

RUBRICS = {
    "A": """rubric_id = "A"
[task.exploit]
weights = { defect_matching = 0.4, pov_quality = 0.4, summary_quality = 0.1, target_calls = 0.1 }
""",
    # B also knows the env type `fuzz`, so the quarantined fuzz lines can be replayed under it.
    "B": """rubric_id = "B"
[task.exploit]
weights = { defect_matching = 0.7, pov_quality = 0.1, summary_quality = 0.1, target_calls = 0.1 }
[task.fuzz]
weights = { crash = 1.0 }
""",
}
FUZZ_RUBRICS = {"B"}
# A `run` on these lakes passes 8 (all seen before) to 22 (a new file, a new batch) writes
# and moves: a seeded point past them kills nothing.
CRASH_POINTS = st.integers(1, 24)


def record(run_id: str, version: str, problem: str, env: str = "exploit", **sub: float) -> str:
    if env == "fuzz":
        subscores, weights = {"crash": sub.get("crash", 1.0)}, {"crash": 1.0}
    else:
        names = ("defect_matching", "pov_quality", "summary_quality", "target_calls")
        subscores = {n: sub.get(n, 1.0 if n == "defect_matching" else 0.5) for n in names}
        weights = dict(zip(names, (0.6, 0.2, 0.1, 0.1), strict=True))
    return json.dumps(
        {
            "run_id": run_id,
            "agent": "atlas",
            "agent_version": version,
            "problem_id": problem,
            "env_type": env,
            "graded_at": "2026-11-01T00:00:00Z",
            "grade": {"subscores": subscores, "weights": weights},
        },
        sort_keys=True,
    )


def inspect_record(eval_id: str, sample: str, uuid: str) -> str:
    """A sample as the Inspect reader writes it: one attempt (its uuid) lands once, under
    the run_id it first landed with, whichever log (a retry's carries it over) is read first."""
    run = json.loads(record(f"inspect:{eval_id}/{sample}#1", "3.0", sample))
    run["grade"]["metadata"] = {"inspect": {"eval_id": eval_id, "sample_uuid": uuid}}
    return json.dumps(run, sort_keys=True)


# Each file: its lines, and what each line is (a run_id that lands, "fuzz:<run_id>" that
# lands only under a rubric knowing fuzz, "attempt:<uuid>:<run_id>" that lands unless its
# attempt has, or "bad" that never lands).
FILES: dict[str, list[tuple[str, str]]] = {
    "v1.jsonl": [
        (record(f"v1-p{i}", "1.0", f"p{i}", pov_quality=0.2 * i), f"v1-p{i}") for i in range(1, 6)
    ],
    "v2.jsonl": [
        (record(f"v2-p{i}", "2.0", f"p{i}", pov_quality=0.9 - 0.1 * i), f"v2-p{i}")
        for i in range(1, 6)
    ],
    "mixed.jsonl": [
        (record("v1-p1", "1.0", "p1", pov_quality=0.2), "v1-p1"),  # an exact duplicate of v1
        (record("fz-1", "1.0", "f1", env="fuzz"), "fuzz:fz-1"),
        ("{not json", "bad"),
        (record("m-1", "1.0", "p9"), "m-1"),
    ],
    "eval.jsonl": [
        (inspect_record("E1", sample, f"U{sample}"), f"attempt:U{sample}:inspect:E1/{sample}#1")
        for sample in ("a", "b", "c")
    ],
    # eval_retry's log: a and c carried over (their uuids), b run again (a new one).
    "retry.jsonl": [
        (inspect_record("E2", sample, uuid), f"attempt:{uuid}:inspect:E2/{sample}#1")
        for sample, uuid in (("a", "Ua"), ("b", "Ub2"), ("c", "Uc"))
    ],
}


class LakeSequences(RuleBasedStateMachine):
    # Real processes killed per sequence (LongLakeSequences allows one).
    real_kills_allowed = 0

    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="lake-seq-"))
        self.files = self.root / "files"
        self.files.mkdir()
        for name, lines in FILES.items():
            (self.files / name).write_text("".join(text + "\n" for text, _ in lines))
        for name, text in RUBRICS.items():
            (self.root / f"{name}.toml").write_text(text)
        self.inbox = self.root / "inbox"
        self.inbox.mkdir()
        self.lake = self.root / "lake-0"
        self.moves = 0
        self.real_kills = 0
        # The model.
        self.landed: set[str] = set()
        self.quarantined: set[tuple[str, int]] = set()
        self.rubric: str | None = None  # None until something has scored
        self.scored = False
        self.nightly_done: set[str] = set()
        # Places of fuzz lines that landed or were released by a replay.
        self.settled: set[tuple[str, int]] = set()
        # The Inspect attempts landed (their uuids).
        self.attempts: set[str] = set()

    def teardown(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    # -- the model ------------------------------------------------------------------

    def knows_fuzz(self, rubric: str | None) -> bool:
        return rubric in FUZZ_RUBRICS

    def land_file(self, path: Path, rubric: str | None) -> None:
        source = str(path.resolve())
        for number, (_, kind) in enumerate(FILES[path.name], start=1):
            key = (source, number)
            if kind == "bad":
                self.quarantined.add(key)
            elif kind.startswith("fuzz:"):
                run_id = kind.removeprefix("fuzz:")
                if key in self.settled:
                    continue  # this very line landed (or was released): read again it is seen
                if not self.knows_fuzz(rubric):
                    # Refused by this rubric, even when its twin landed from another file.
                    self.quarantined.add(key)
                elif run_id not in self.landed:
                    # Accepted now: it lands, and resolves its own earlier quarantine row.
                    self.landed.add(run_id)
                    self.quarantined.discard(key)
                    self.settled.add(key)
                # else: an exact duplicate of a landed run, skipped (a row held at this
                # place stays held until replay-quarantine releases it).
            elif kind.startswith("attempt:"):
                _, uuid, run_id = kind.split(":", 2)
                if uuid not in self.attempts:
                    self.attempts.add(uuid)
                    self.landed.add(run_id)
            else:
                self.landed.add(kind)

    def replay(self, rubric: str | None) -> None:
        if not self.knows_fuzz(rubric):
            return
        fuzz_lines = {
            (source, number)
            for source, number in self.quarantined
            if FILES[Path(source).name][number - 1][1].startswith("fuzz:")
        }
        for source, number in fuzz_lines:
            self.landed.add(FILES[Path(source).name][number - 1][1].removeprefix("fuzz:"))
        self.quarantined -= fuzz_lines
        self.settled |= fuzz_lines

    def effective(self, given: str | None) -> str | None:
        """The rubric a command uses: the one given, else the lake's, else the defaults."""
        return given if given is not None else (self.rubric or DEFAULT_ID)

    def rubric_args(self, given: str | None) -> list[str]:
        return [] if given is None else ["--rubric", str(self.root / f"{given}.toml")]

    def invoke(self, *args: str) -> str:
        result = runner.invoke(app, [*args, "--lake", str(self.lake)])
        assert result.exit_code == 0, (args, result.output, result.exception)
        return result.output

    # -- rules ----------------------------------------------------------------------

    @initialize()
    def first_run(self) -> None:
        self.invoke("run", str(self.files / "v1.jsonl"))
        self.land_file(self.files / "v1.jsonl", DEFAULT_ID)
        self.rubric, self.scored = DEFAULT_ID, True

    @rule(
        name=st.sampled_from(sorted(FILES)),
        given=st.sampled_from([None, "A", "B"]),
        spelling=st.sampled_from(["plain", "dotdot", "relative"]),
    )
    def run_file(self, name: str, given: str | None, spelling: str) -> None:
        path = self.files / name
        if spelling == "dotdot":
            path = self.files / ".." / "files" / name
        shown = str(os.path.relpath(path)) if spelling == "relative" else str(path)
        self.invoke("run", shown, *self.rubric_args(given))
        self.rubric = self.effective(given)
        self.land_file(self.files / name, self.rubric)

    @rule(name=st.sampled_from(sorted(FILES)))
    def ingest_file(self, name: str) -> None:
        self.invoke("ingest", str(self.files / name))
        self.land_file(self.files / name, self.rubric)

    @rule(given=st.sampled_from([None, "A", "B"]))
    def score(self, given: str | None) -> None:
        self.invoke("score", *self.rubric_args(given))
        self.rubric = self.effective(given)

    @rule(name=st.sampled_from(sorted(FILES)), given=st.sampled_from([None, "A", "B"]))
    def nightly(self, name: str, given: str | None) -> None:
        dropped = self.inbox / name
        if not dropped.exists():
            shutil.copyfile(self.files / name, dropped)
        output = self.invoke("nightly", "--inbox", str(self.inbox), *self.rubric_args(given))
        assert "lake check: all invariants hold" in output, output
        self.rubric = self.effective(given)
        # The ledger: a file whose content was ingested by an earlier night is not read again.
        if name not in self.nightly_done:
            self.nightly_done.add(name)
            self.land_file(dropped, self.rubric)

    @rule(given=st.sampled_from([None, "A", "B"]))
    def replay_quarantine(self, given: str | None) -> None:
        self.invoke("replay-quarantine", *self.rubric_args(given))
        self.rubric = self.effective(given)
        self.replay(self.rubric)

    @precondition(lambda self: {"v1-p1", "v2-p1"} <= self.landed)
    @rule()
    def compare_gate(self) -> None:
        result = runner.invoke(
            app,
            [
                "compare",
                "--agent",
                "atlas",
                "--baseline",
                "1.0",
                "--candidate",
                "2.0",
                "--json",
                "--fail-on-regression",
                "--lake",
                str(self.lake),
            ],
        )
        assert result.exit_code in (0, 1), result.output
        report = json.loads(result.output)
        numbers = [report[k] for k in ("delta", "ci_low", "ci_high") if report.get(k) is not None]
        assert all(math.isfinite(n) for n in numbers), report
        # Exit 1 exactly when the gate fails: a regression (overall, or an env type after
        # Holm), or fewer than two paired problems (nothing measured).
        assert (result.exit_code == 1) == (
            report["verdict"] == "regression"
            or bool(report.get("regressed_env_types"))
            or report["paired_problems"] < 2
        ), report

    @rule(name=st.sampled_from(sorted(FILES)), crash_at=CRASH_POINTS)
    def killed_run_then_rerun(self, name: str, crash_at: int) -> None:
        """Killed at a seeded write (in-process, tests/crash.py); the next run converges to one
        uninterrupted run."""
        with killed_at(self.lake, crash_at):
            # Reached only when the run has fewer writes than crash_at: it must have succeeded.
            self.invoke("run", str(self.files / name))
        self.invoke("run", str(self.files / name))
        self.land_file(self.files / name, self.rubric)

    @precondition(lambda self: self.real_kills < self.real_kills_allowed)
    @rule(name=st.sampled_from(sorted(FILES)), crash_at=CRASH_POINTS)
    def killed_process_then_rerun(self, name: str, crash_at: int) -> None:
        """A real kill -9 at a seeded write: the process dies holding the lake's lock and its
        open files, which the next run must get past."""
        self.real_kills += 1
        command = [
            sys.executable,
            "-m",
            "pipeline",
            "run",
            str(self.files / name),
            "--lake",
            str(self.lake),
        ]
        env = {**os.environ, lake_module.CRASH_AT_ENV: str(crash_at)}
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode in (0, -9), done.stderr
        self.invoke("run", str(self.files / name))
        self.land_file(self.files / name, self.rubric)

    @rule()
    def damaged_score_page_named_then_mended(self) -> None:
        """A page of a current score file damaged behind a good footer: check names it, and
        `score` under the lake's rubric writes it again (the model does not move)."""
        current = json.loads((self.lake / "_state" / "current_rubric.json").read_text())
        key = lake_module.rubric_key(current["rubric_id"])
        files = sorted((self.lake / "scores" / key / "task_scores").glob("*.parquet"))
        if not files:
            return
        target = files[0]
        damage_first_page(target)
        result = runner.invoke(app, ["check", "--lake", str(self.lake), "--json"])
        assert result.exit_code == 1, result.output
        violations = json.loads(result.output)["violations"]
        assert any(f"{target} is not a readable Parquet file" in v for v in violations)
        self.invoke("score")

    @rule()
    def move_lake(self) -> None:
        self.moves += 1
        target = self.root / f"lake-{self.moves}"
        shutil.move(self.lake, target)
        self.lake = target

    # -- what must hold after every step ----------------------------------------------

    @invariant()
    def lake_is_right(self) -> None:
        if not self.lake.exists():
            return
        result = runner.invoke(app, ["check", "--lake", str(self.lake), "--json"])
        assert result.exit_code == 0, result.output
        # Opened the way an analyst would, from somewhere else, with no command run first.
        here = os.getcwd()
        os.chdir(self.root)
        try:
            con = duckdb.connect(str(self.lake / "warehouse.duckdb"), read_only=True)
            runs = con.execute("select run_id, rubric_id, status from task_runs").fetchall()
            held = con.execute("select source, line from quarantine where line > 0").fetchall()
            con.close()
        finally:
            os.chdir(here)
        assert {r[0] for r in runs} == self.landed
        assert len(runs) == len(self.landed)
        assert all(r[2] is not None for r in runs), "a landed run without a status"
        assert set(held) == self.quarantined
        assert len(held) == len(self.quarantined), "a line quarantined twice"
        rubric_ids = {r[1] for r in runs}
        expected = self.rubric
        if expected == DEFAULT_ID:
            assert len(rubric_ids) == 1 and next(iter(rubric_ids)).startswith("sha256:")
        else:
            assert rubric_ids == {expected}


def _settings(count: int, steps: int) -> Any:
    return settings(
        max_examples=count,
        stateful_step_count=steps,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


class LongLakeSequences(LakeSequences):
    real_kills_allowed = 1


TestLakeSequences = LakeSequences.TestCase
TestLakeSequences.settings = _settings(count=examples(3), steps=4)


@pytest.mark.slow
def test_long_sequences() -> None:
    """Longer histories than TestLakeSequences draws (a kill, then a move, then a replay under
    another rubric ...), and the one rule that kills a real process (at most once a sequence).

    Each step is a real command on a real lake and costs about a second, the kill four; the
    soak profile runs four times as many sequences (12 of 8 steps; 40 of 12 once held a CI
    worker for ten minutes). A failure prints the steps that reproduce it.
    """
    from hypothesis.stateful import run_state_machine_as_test

    # Two sequences by default (each ~10 s); soak keeps its twelve.
    count = sized(2, examples(3))
    run_state_machine_as_test(LongLakeSequences, settings=_settings(count=count, steps=8))
