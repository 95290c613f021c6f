"""The bench's arithmetic: ratios, rates, goals and the rescore breakdown, by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.run import build_rows, markdown, rescore_breakdown
from bench.whole import commands, rounds, summary

REPO = Path(__file__).resolve().parents[3]

GIB = 1024**3


def stage(seconds: float, peak_gib: float = 1.0, **extra: Any) -> dict[str, Any]:
    return {"seconds": seconds, "peak_rss": int(peak_gib * GIB), **extra}


RESULTS = {
    "polars_read": stage(2.0),
    "ingest": stage(5.0, 3.0),
    "duckdb_scan": stage(0.5),
    "rescore": stage(
        4.0, 4.5, score_stages={"plan": 2.0, "checks": 0.5, "writes": 1.0}, engine="local"
    ),
    "python_scorer": stage(1.0, sample=1_000),
    "query": stage(0.25),
}


def test_rows_compare_each_stage_with_its_floor() -> None:
    # 100,000 runs in 50 MB; the Python scorer did 1,000 runs in 1 s, so 100 s for N.
    rows = {row.stage: row for row in build_rows(100_000, 100_000, 50_000_000, RESULTS)}
    ingest, rescore, python = rows["ingest"], rows["rescore"], rows["python"]
    assert ingest.ratio == pytest.approx(2.5)  # 5 s / 2 s
    assert ingest.goal == "missed (≤2x)"
    assert ingest.mb_per_s == pytest.approx(10.0)  # 50 MB / 5 s
    assert ingest.runs_per_s == pytest.approx(20_000.0)
    assert rescore.ratio == pytest.approx(8.0)  # 4 s / 0.5 s
    assert rescore.goal == "missed (≤2x), peak ≥4 GiB"  # 4.5 GiB
    assert python.seconds == pytest.approx(100.0)
    assert python.ratio == pytest.approx(25.0)  # 100 s / 4 s
    assert rows["query"].runs_per_s == pytest.approx(400_000.0)
    assert rows["bare read"].what == "pl.read_ndjson"


def test_goals_met_and_replicated_lakes_are_labelled() -> None:
    fast = {
        **RESULTS,
        "ingest": stage(3.0),
        "rescore": stage(1.0, 1.0),
        "polars_read": stage(2.0, batched=True),
    }
    rows = {row.stage: row for row in build_rows(1_000_000, 100_000, 10**8, fast)}
    assert rows["ingest"].goal == "met (≤2x)"  # 1.5x
    assert rows["rescore"].goal == "met (≤2x), peak <4 GiB"  # 2.0x is within
    assert rows["ingest"].what == "jobs.ingest, 100,000 runs"
    assert rows["bare read"].what == "pl.scan_ndjson, batches, 100,000 runs"
    # Ingest rates count the runs ingested; rescoring counts every run of the lake.
    assert rows["ingest"].runs_per_s == pytest.approx(100_000 / 3.0)
    assert rows["rescore"].runs_per_s == pytest.approx(1_000_000.0)


def test_rescore_breakdown_names_the_rest() -> None:
    # 4 s in all: 2 + 0.5 + 1 measured, 0.5 s commit, lock and warehouse.
    assert rescore_breakdown(RESULTS["rescore"]) == (
        "plan 2.00 s, checks 0.50 s, writes 1.00 s, rest 0.50 s"
    )
    assert rescore_breakdown(stage(3.0)) == ""  # Spark reports no stages
    # Parts scored side by side: plan and checks are the workers' seconds added up (here
    # more than the wall time); the caller's 4 s are 2.5 awaited, 1 writing, 0.5 the rest.
    side = {
        **RESULTS["rescore"],
        "score_stages": {"plan": 3.0, "checks": 0.75, "awaited": 2.5, "writes": 1.0},
    }
    assert rescore_breakdown(side) == (
        "plan 3.00 s, checks 0.75 s, awaited 2.50 s, writes 1.00 s, rest 0.50 s"
    )


def test_markdown_holds_the_table_and_how_it_was_made() -> None:
    rows = build_rows(100_000, 100_000, 50_000_000, RESULTS)
    meta = {
        "n": 100_000,
        "jsonl_mb": 50.0,
        "components": 400_000,
        "replicate": 1,
        "ingested": 100_000,
        "env_types": ["exploit", "detect", "patch"],
        "rescore_breakdown": rescore_breakdown(RESULTS["rescore"]),
        "command": "python -m bench.run --n 100000",
        "machine": "2 cores",
        "when": "now",
        "generate_seconds": 1.0,
        "total_seconds": 20.0,
        "load_average": [1.0, 2.0],
    }
    text = markdown(rows, meta)
    assert "400,000 component rows scored; env types exploit, detect, patch" in text
    assert "| rescore | jobs.score full, local | 4.00 | - | 25,000 | bare scan | 8.0x |" in text
    assert "Rescore, where the time went: plan 2.00 s" in text
    assert "Command: `python -m bench.run --n 100000`" in text


def test_peer_rows_give_each_issue_16_ratio_and_goal() -> None:
    from bench.run import peer_markdown, peer_rows

    results = {
        **RESULTS,
        "duckdb_peer": stage(4.0, 1.5),
        "polars_peer": stage(2.0, 0.5),
        "help": stage(0.45, 0.0),
        "import": stage(0.3, 0.0),
    }
    run, score, startup = peer_rows(100_000, results)
    assert run.ratio == pytest.approx(1.25)  # ingest 5 s / peer 4 s
    assert run.goal == "missed (≤1.2x)"
    assert score.ratio == pytest.approx(2.0)  # rescore 4 s / peer 2 s
    assert score.goal == "missed (≤1.2x)"
    assert startup.ratio == pytest.approx(1.5)
    assert startup.goal == "met (<0.5 s)"
    text = "\n".join(peer_markdown([run, score, startup]))
    assert "| ingest + score, 100,000 runs | pipeline run (jobs.ingest) | 5.00 | 3.00 |" in text
    assert "| 1.25x | missed (≤1.2x) |" in text
    # Without the peers' stages (an older results file) there is no such table.
    assert peer_rows(100_000, RESULTS) == []


def test_the_rescore_as_commands_gets_its_own_ratio() -> None:
    from bench.run import peer_rows

    results = {
        **RESULTS,
        "polars_peer": stage(2.0, 0.5),
        "score_command": stage(3.3, 0.0),
        "polars_peer_command": stage(3.0, 0.0),
    }
    score, commands = peer_rows(100_000, results)
    assert score.ratio == pytest.approx(2.0)
    assert commands.pipeline == "python -m pipeline score"
    assert commands.ratio == pytest.approx(1.1)  # 3.3 s / 3.0 s
    assert commands.goal == "met (≤1.2x)"
    slower = peer_rows(100_000, {**results, "score_command": stage(3.9, 0.0)})[1]
    assert slower.ratio == pytest.approx(1.3)
    assert slower.goal == "missed (≤1.2x)"


def test_the_rescore_under_a_changed_rubric_gets_its_own_ratio() -> None:
    from bench.run import peer_rows

    results = {
        **RESULTS,
        "score_rubric_change": stage(2.8, 0.0),
        "polars_peer_rubric_change": stage(1.12, 0.0),
    }
    (changed,) = peer_rows(100_000, results)
    assert changed.pipeline == "python -m pipeline score --rubric CHANGED"
    assert changed.ratio == pytest.approx(2.5)  # 2.8 s / 1.12 s
    assert changed.goal == "missed (≤1.2x)"


def test_the_changed_rubric_halves_the_penalty_scale_and_nothing_else(tmp_path: Path) -> None:
    from bench.run import changed_rubric
    from pipeline.rubric import load_rubric

    default = REPO / "rubrics" / "default.toml"
    changed = changed_rubric(default, tmp_path / "changed.toml")
    before, after = load_rubric(default), load_rubric(changed)
    assert before.task.penalty_scale == 1.0
    assert after.task.penalty_scale == 0.5
    assert after.rubric_id != before.rubric_id
    assert after.task.envs == before.task.envs
    # Only the one line differs.
    old_lines, new_lines = default.read_text().splitlines(), changed.read_text().splitlines()
    assert [(a, b) for a, b in zip(old_lines, new_lines, strict=True) if a != b] == [
        ("penalty_scale = 1.0", "penalty_scale = 0.5")
    ]
    (tmp_path / "partial.toml").write_text("[task]\nfailure_threshold = 0.5\n")
    with pytest.raises(ValueError, match="no penalty_scale line"):
        changed_rubric(tmp_path / "partial.toml", tmp_path / "out.toml")


def test_a_prepare_step_runs_untimed_before_each_run_of_its_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import bench.run as bench_run

    events: list[str] = []
    clock = iter([0.0, 1.0, 1.0, 1.5, 2.0, 4.0, 4.0, 4.5])
    monkeypatch.setattr(bench_run.subprocess, "run", lambda args, **_: events.append(args[-1]))
    monkeypatch.setattr(bench_run.time, "perf_counter", lambda: next(clock))
    timed = bench_run.time_alternating(
        {"ours": ("-c", "a"), "peer": ("-c", "b")},
        repeats=2,
        prepare={"ours": lambda: events.append("copy")},
    )
    assert events == ["copy", "a", "b", "copy", "a", "b"]
    assert timed["ours"]["all_seconds"] == [1.0, 2.0]
    # fresh_copy: the target is the source again, whatever a run left in it.
    source, target = tmp_path / "lake", tmp_path / "copy"
    source.mkdir()
    (source / "a.txt").write_text("a")
    copy = bench_run.fresh_copy(source, target)
    copy()
    (target / "a.txt").write_text("changed")
    (target / "extra.txt").write_text("left by a run")
    copy()
    assert sorted(p.name for p in target.iterdir()) == ["a.txt"]
    assert (target / "a.txt").read_text() == "a"


def test_commands_are_timed_in_turn_and_their_medians_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import bench.run as bench_run

    ran: list[str] = []
    clock = iter([0.0, 1.0, 1.0, 1.5, 2.0, 5.0, 5.0, 5.25, 6.0, 8.0, 8.0, 8.75])
    monkeypatch.setattr(bench_run.subprocess, "run", lambda args, **_: ran.append(args[-1]))
    monkeypatch.setattr(bench_run.time, "perf_counter", lambda: next(clock))
    timed = bench_run.time_alternating({"ours": ("-c", "a"), "peer": ("-c", "b")}, repeats=3)
    assert ran == ["a", "b", "a", "b", "a", "b"]
    assert timed["ours"]["all_seconds"] == [1.0, 3.0, 2.0]
    assert timed["ours"]["seconds"] == 2.0
    assert timed["peer"]["all_seconds"] == [0.5, 0.25, 0.75]
    assert timed["peer"]["seconds"] == 0.5


def test_whole_process_medians_and_ratios_by_hand() -> None:
    measured = {
        "score": [(2.0, 3.0), (1.0, 5.0), (1.5, 2.0)],
        "peer": [(1.0, 1.0), (0.5, 2.0), (2.0, 1.5)],
        "import": [(0.3, 0.4)],
    }
    medians = summary(measured)
    assert (medians["score_cpu"], medians["score_wall"]) == (1.5, 3.0)
    assert (medians["peer_cpu"], medians["peer_wall"]) == (1.0, 1.5)
    assert medians["ratio_cpu"] == pytest.approx(1.5)  # 1.5 s / 1.0 s
    assert medians["ratio_wall"] == pytest.approx(2.0)  # 3.0 s / 1.5 s
    assert medians["import_cpu"] == pytest.approx(0.3)


@pytest.mark.slow
def test_whole_process_rounds_run_score_and_the_peer(
    sample_lake_copy: Path, tmp_path: Path
) -> None:
    measured = rounds(commands(sample_lake_copy, tmp_path / "peer", None), 1)
    assert sorted(measured) == ["import", "peer", "score"]
    assert all(cpu > 0 and wall > 0 for pairs in measured.values() for cpu, wall in pairs)
    assert (tmp_path / "peer" / "runs.parquet").is_file()


def test_a_replicated_lake_holds_every_copy_as_a_whole_part(tmp_path: Path) -> None:
    from bench.stages import replicate
    from pipeline.jobs import commands as jobs
    from pipeline.jobs.check import check_lake
    from pipeline.rubric import parse_rubric
    from tools.simulate import write_task_jsonl

    runs, copies = 40, 3
    write_task_jsonl(tmp_path / "runs.jsonl", runs, seed=3)
    lake = tmp_path / "lake"
    rubric = parse_rubric({})
    jobs.ingest([tmp_path / "runs.jsonl"], lake, rubric)
    assert replicate({"lake": str(lake), "copies": copies})["parts"] == copies
    # Every twin passes its manifest check, so a full rescore scores every copy.
    assert jobs.score(lake, rubric).task_runs == runs * copies
    assert check_lake(lake).violations == []


def test_score_commands_pair_the_pipeline_and_the_peer_under_one_rubric(tmp_path: Path) -> None:
    from bench.run import score_commands

    lake, copy, out, rubric = (tmp_path / n for n in ("lake", "copy", "out", "r.toml"))
    assert score_commands(copy, lake, out, rubric, "rubric_change") == {
        "score_rubric_change": (
            "-m",
            "pipeline",
            "score",
            "--lake",
            str(copy),
            "--rubric",
            str(rubric),
        ),
        "polars_peer_rubric_change": (
            "-m",
            "bench.peers.polars_rescore",
            str(lake),
            str(out),
            "--rubric",
            str(rubric),
        ),
    }
    # Without a rubric both use the lake's own.
    plain = score_commands(lake, lake, out, None, "command")
    assert plain["score_command"][-2:] == ("--lake", str(lake))
    assert plain["polars_peer_command"][-2:] == (str(lake), str(out))
