"""A rubric naming a component no landed run carries (a typo of a weight's name) is applied
and said, by every command that applies or previews a rubric; a rubric without one says
nothing."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from pipeline.rubric import load_rubric
from tests.clirunner import pipeline
from tests.strategies import task_record

TYPO_TOML = "[task.patch]\nweights = { number_of_attempt = 0.4 }\n"
STRICT_TOML = 'rubric_id = "strict"\n[task]\nfailure_threshold = 0.9\n'
TYPO_NOTE = (
    "[task.patch] weights name number_of_attempt, which no landed patch run carries (the "
    "closest landed component: number_of_attempts); every patch run scores it 0 (anomaly "
    "missing_component)"
)


def records(*run_ids: str) -> list[dict[str, Any]]:
    # r0..r7 are exploit, patch and audit runs with the default components.
    return [task_record(random.Random(run_id), run_id) for run_id in run_ids]


def write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def notes(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("note: ")]


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    lake = tmp_path / "lake"
    landed = pipeline(
        "ingest", write(tmp_path / "in" / "a.jsonl", records("r0", "r1")), "--lake", lake
    )
    assert landed.returncode == 0, landed.stdout
    return lake


def rubric_file(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.slow
def test_score_with_a_typo_says_so_and_a_rubric_without_one_says_nothing(
    tmp_path: Path, lake: Path
) -> None:
    typo = rubric_file(tmp_path, "typo.toml", TYPO_TOML)
    typo_id = load_rubric(typo).rubric_id
    done = pipeline("score", "--lake", lake, "--rubric", typo)
    assert done.returncode == 0, done.stdout
    assert notes(done.stdout) == [f"note: rubric {typo_id}: {TYPO_NOTE}"]

    strict = rubric_file(tmp_path, "strict.toml", STRICT_TOML)
    done = pipeline("score", "--lake", lake, "--rubric", strict)
    assert done.returncode == 0 and notes(done.stdout) == [], done.stdout
    done = pipeline("score", "--lake", lake, "--rubric", "default")
    assert done.returncode == 0 and notes(done.stdout) == [], done.stdout

    # Previewed: a dry run and the diff of the stored scores say it too, as JSON as well.
    done = pipeline("score", "--lake", lake, "--rubric", typo, "--dry-run")
    assert notes(done.stdout) == [f"note: rubric {typo_id}: {TYPO_NOTE}"], done.stdout
    done = pipeline("score", "--lake", lake, "--rubric", typo, "--dry-run", "--json")
    assert json.loads(done.stdout)["notes"] == [f"rubric {typo_id}: {TYPO_NOTE}"]
    done = pipeline("rescore-diff", "--lake", lake, "--from", "strict", "--to", typo_id)
    assert notes(done.stdout) == [f"note: rubric {typo_id}: {TYPO_NOTE}"], done.stdout
    done = pipeline("rescore-diff", "--lake", lake, "--from", typo_id, "--to", "strict")
    assert notes(done.stdout) == [], done.stdout


@pytest.mark.slow
def test_nightly_that_changes_the_rubric_says_so(tmp_path: Path, lake: Path) -> None:
    typo = rubric_file(tmp_path, "typo.toml", TYPO_TOML)
    inbox = tmp_path / "inbox"
    write(inbox / "b.jsonl", records("r5"))
    done = pipeline("nightly", "--inbox", inbox, "--lake", lake, "--rubric", typo)
    assert done.returncode == 0, done.stdout
    typo_id = load_rubric(typo).rubric_id
    assert f"note: rubric {typo_id}: {TYPO_NOTE}" in notes(done.stdout)
    (summary,) = (lake / "_runs").glob("nightly-*.json")
    assert f"rubric {typo_id}: {TYPO_NOTE}" in json.loads(summary.read_text())["notes"]
    # The next night applies no rubric: it has nothing to say about one.
    write(inbox / "c.jsonl", records("r6"))
    done = pipeline("nightly", "--inbox", inbox, "--lake", lake, "--rubric", typo)
    assert done.returncode == 0 and notes(done.stdout) == [], done.stdout


def test_replay_under_a_rubric_with_a_typo_says_so(tmp_path: Path, lake: Path) -> None:
    fuzz = records("f1")[0] | {
        "env_type": "fuzz",
        "grade": {
            "subscores": {"crash": 1.0, "triage": 0.5},
            "weights": {"crash": 1.0, "triage": 0.0},
        },
    }
    assert (
        pipeline("ingest", write(tmp_path / "in" / "f.jsonl", [fuzz]), "--lake", lake).returncode
        == 0
    )
    rubric = rubric_file(
        tmp_path,
        "fuzz.toml",
        '[task.fuzz]\ngate = "crash"\nweights = { crash = 0.5, triag = 0.5 }\n',
    )
    done = pipeline("replay-quarantine", "--lake", lake, "--rubric", rubric)
    assert done.returncode == 0, done.stdout
    assert "1 task and 0 surface run(s) landed" in done.stdout
    rubric_id = load_rubric(rubric).rubric_id
    assert notes(done.stdout) == [
        f"note: rubric {rubric_id}: [task.fuzz] weights name triag, which no landed fuzz run "
        "carries (the closest landed component: triage); every fuzz run scores it 0 (anomaly "
        "missing_component)",
        f"note: rubric {rubric_id}: landed fuzz runs carry triage, which [task.fuzz] weights "
        "give no weight; they count 0 in every score (anomaly unknown_component)",
    ]
