"""What an independent recomputation of the views (an analyst's oracle) found, pinned."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pipeline.compare.fetch import fetch_comparison
from pipeline.jobs import commands as jobs
from pipeline.rubric import parse_rubric
from tests.e2e.test_warehouse import DEFAULT, con_of, grade

# A new env type whose gate is not a plain identifier: run_metadata quotes such a key
# ("crash-check".reason), as it does any key that is not an ASCII letter then letters, digits
# or _.
FUZZ = parse_rubric(
    {
        "rubric_id": "fuzz",
        "task": {"fuzz": {"gate": "crash-check", "weights": {"crash-check": 0.7, "cov": 0.3}}},
    }
)


def _fuzz(run_id: str, crashed: float) -> str:
    record = json.loads(grade(run_id, "1", run_id, 1.0, 1.0))
    record["env_type"] = "fuzz"
    record["grade"] = {
        "subscores": {"crash-check": crashed, "cov": 0.5},
        "weights": {"crash-check": 0.7, "cov": 0.3},
        "metadata": {"crash-check": {"reason": "no crash in 60 s", "seeds": ["a", "b"]}},
    }
    return json.dumps(record)


def test_failure_reasons_read_a_gate_whose_metadata_key_is_quoted(tmp_path: Path) -> None:
    # failure_reasons looked for keys starting `crash-check.`; run_metadata writes them
    # `"crash-check".reason`, so the reason and the gate's metadata were null.
    source = tmp_path / "a.jsonl"
    source.write_text(_fuzz("f1", 0.0) + "\n" + _fuzz("f2", 1.0) + "\n")
    jobs.run([source], tmp_path / "lake", FUZZ)
    rows = (
        con_of(tmp_path / "lake")
        .execute("select run_id, gate_component, reason, gate_metadata from failure_reasons")
        .fetchall()
    )
    assert len(rows) == 1
    run_id, gate, reason, gate_metadata = rows[0]
    assert (run_id, gate, reason) == ("f1", "crash-check", "no crash in 60 s")
    assert json.loads(gate_metadata) == {"reason": "no crash in 60 s", "seeds": ["a", "b"]}


def test_by_defect_names_the_least_cwe_its_runs_give(tmp_path: Path) -> None:
    # by_defect took any_value(cwe): which CWE a defect graded under two showed depended on
    # the order the aggregate met its rows. It is the least one now, whatever the order.
    source = tmp_path / "a.jsonl"
    lines = [
        grade("r1", "1", "p1", 1.0, 1.0, defect_id="D", cwe="CWE-787"),
        grade("r2", "1", "p2", 1.0, 1.0, defect_id="D", cwe="CWE-125"),
        grade("r3", "1", "p3", 1.0, 1.0, defect_id="D", cwe=None),
    ]
    source.write_text("\n".join(lines) + "\n")
    jobs.run([source], tmp_path / "lake", DEFAULT)
    row = con_of(tmp_path / "lake").execute("select cwe, runs from by_defect").fetchall()
    assert row == [("CWE-125", 3)]


def _surface(version: str, at: str, tools: list[str]) -> str:
    surface = {
        "probe": "t",
        "kind": "token_cost",
        "target": tools,
        "measurement": {
            "scope": "surface",
            "tokens": 150 * len(tools),
            "tool_count": len(tools),
            "tokens_per_tool_avg": 150,
        },
    }
    server = {"name": "srv", "version": version, "fingerprint": "f", "tool_count": len(tools)}
    report = {"generated_at": at, "server": server, "coverage": {"ran": []}, "findings": [surface]}
    return json.dumps(report)


def test_a_whole_surface_finding_shows_the_to_versions_tools_either_way_round(
    tmp_path: Path,
) -> None:
    # The surface token_cost finding matches across versions whatever its tools (its key
    # leaves them out); tools is the to side's, the earlier version's when steps < 0, as
    # schema.yml now says (it had said the later version's).
    source = tmp_path / "r.jsonl"
    lines = [
        _surface("1", "2026-11-01T00:00:00Z", ["a"]),
        _surface("2", "2026-11-02T00:00:00Z", ["a", "b"]),
    ]
    source.write_text("\n".join(lines) + "\n")
    jobs.run([source], tmp_path / "lake", DEFAULT)
    rows = (
        con_of(tmp_path / "lake")
        .execute(
            "select steps, from_label, to_label, tools, change "
            "from surface_finding_changes_all order by steps"
        )
        .fetchall()
    )
    assert rows == [(-1, "2", "1", ["a"], "same"), (1, "1", "2", ["a", "b"], "same")]


def test_an_old_version_reported_again_keeps_its_place(tmp_path: Path) -> None:
    # version_order goes by a version's first report, as an agent's versions go by their first
    # graded run: 1.0 graded again after 2.0 stays before it, and by_server's latest stays 2.0
    # (it had become 1.0, so surface-diff's default pair read 2.0 -> 1.0 as the newest step);
    # the report standing for 1.0 is its newest.
    source = tmp_path / "r.jsonl"
    lines = [
        _surface("1.0", "2026-11-01T00:00:00Z", ["a"]),
        _surface("2.0", "2026-11-02T00:00:00Z", ["a", "b"]),
        _surface("1.0", "2026-11-03T00:00:00Z", ["a"]),
    ]
    source.write_text("\n".join(lines) + "\n")
    jobs.run([source], tmp_path / "lake", DEFAULT)
    con = con_of(tmp_path / "lake")
    order = con.execute(
        "select server_version, version_order, generated_at::varchar from surface_versions "
        "order by version_order"
    ).fetchall()
    assert order == [
        ("1.0", 1, "2026-11-03 00:00:00+00"),
        ("2.0", 2, "2026-11-02 00:00:00+00"),
    ]
    latest = con.execute(
        "select server_version, previous_version, versions, reports from by_server"
    ).fetchall()
    assert latest == [("2.0", "1.0", 2, 3)]


def test_a_run_whose_total_overflowed_counts_in_runs_alone(tmp_path: Path) -> None:
    # docs/warehouse.md now says so: neither a grader error nor scored, in no mean or rate.
    # An empty grader error is flagged by the same rules as any record (docs/scoring.md).
    overflowed = json.loads(grade("big", "1", "p2", 1.0, 1.0, cost_usd=3.0))
    overflowed["grade"]["allow_unbounded"] = True
    overflowed["grade"]["penalties"] = {"huge": 1e13}
    empty_error = json.loads(grade("err", "1", "p3", 1.0, 1.0))
    empty_error["grade"] = {"subscores": {}, "weights": {}, "env_internal_failure": True}
    source = tmp_path / "a.jsonl"
    lines = [grade("ok", "1", "p1", 1.0, 1.0), json.dumps(overflowed), json.dumps(empty_error)]
    source.write_text("\n".join(lines) + "\n")
    jobs.run([source], tmp_path / "lake", DEFAULT)
    con = con_of(tmp_path / "lake")
    assert con.execute(
        "select runs, grader_errors, scored_runs, problems, mean_score from by_agent"
    ).fetchall() == [(3, 1, 1, 1, 0.8)]
    assert con.execute(
        "select runs, problems, solved_problems, cost_usd from cost_per_solved"
    ).fetchall() == [(3, 3, 1, None)]
    statuses = con.execute(
        "select run_id, status, score, anomalies from task_runs order by run_id"
    ).fetchall()
    assert statuses == [
        (
            "big",
            "total_out_of_range",
            None,
            ["total_out_of_range:penalty_total,score,score_as_graded"],
        ),
        (
            "err",
            "grader_error",
            None,
            [
                "missing_component:defect_matching",
                "missing_component:pov_quality",
                "missing_component:summary_quality",
                "missing_component:target_calls",
                "weights_sum:0.0",
            ],
        ),
        ("ok", "scored", 0.8, []),
    ]


def test_a_reason_named_twice_reads_as_the_least_text(tmp_path: Path) -> None:
    # A metadata key named twice lands as two run_metadata rows (README); failure_reasons
    # takes the least text for reason whatever the order, as schema.yml now says (the SQL's
    # comment had said "the first text found").
    record = grade("r1", "1", "p1", 0.0, 0.0).replace(
        '"reason": "frame mismatch"', '"reason": "zeta, first", "reason": "alpha, second"'
    )
    source = tmp_path / "a.jsonl"
    source.write_text(record + "\n")
    jobs.run([source], tmp_path / "lake", DEFAULT)
    row = con_of(tmp_path / "lake").execute("select reason from failure_reasons").fetchall()
    assert row == [("alpha, second",)]


def _gate_metadata(tmp_path: Path, record: dict[str, Any]) -> str:
    """failure_reasons.gate_metadata of ``record``, landed alone in a new lake."""
    source = tmp_path / "a.jsonl"
    source.write_text(json.dumps(record) + "\n")
    jobs.run([source], tmp_path / "lake", DEFAULT)
    (gate_metadata,) = (
        con_of(tmp_path / "lake").execute("select gate_metadata from failure_reasons").fetchone()
        or ()
    )
    return str(gate_metadata)


def test_gate_metadata_says_a_list_once(tmp_path: Path) -> None:
    # run_metadata has a list whole and item by item; gate_metadata had both
    # ({"frames": [1, [2, 3]], "frames[0]": 1, "frames[1]": [2, 3], "frames[1][0]": 2, ...}),
    # where compare's reasons say a list once.
    record = json.loads(grade("r1", "1", "p1", 0.0, 0.0))
    record["grade"]["metadata"]["defect_matching"]["frames"] = [1, [2, 3], {"at": "f"}]
    gate_metadata = _gate_metadata(tmp_path, record)
    assert json.loads(gate_metadata) == {
        "reason": "frame mismatch",
        "frames": [1, [2, 3], {"at": "f"}],
    }


def test_gate_metadata_says_a_list_once_below_a_list_over_the_limit(tmp_path: Path) -> None:
    # frames is over run_metadata's 1 MiB (no text), so its items stand for it; each item is
    # a list kept whole, and gate_metadata had it again item by item (frames[0] beside
    # frames[0][0], frames[0][1]): the items were matched to the outermost list, not the one
    # they are in.
    items = 600
    record = json.loads(grade("r1", "1", "p1", 0.0, 0.0))
    record["grade"]["metadata"]["defect_matching"]["frames"] = [
        ["x" * 2000, i] for i in range(items)
    ]
    gate_metadata = _gate_metadata(tmp_path, record)
    said = json.loads(gate_metadata)
    assert said.pop("reason") == "frame mismatch"
    assert said == {f"frames[{i}]": ["x" * 2000, i] for i in range(items)}


def test_compare_reads_the_reason_of_a_gate_whose_metadata_key_is_quoted(tmp_path: Path) -> None:
    # compare's regressed problems read "<component>.<reason>" from run_metadata, whose keys
    # quote "crash-check": failing_reason was null.
    lines = []
    for version, crashed in (("1", 1.0), ("2", 0.0)):
        for problem in ("p1", "p2"):
            record = json.loads(_fuzz(f"{version}-{problem}", crashed))
            record.update(agent_version=version, problem_id=problem)
            record["graded_at"] = f"2026-0{version}-01T00:00:00Z"
            lines.append(json.dumps(record))
    source = tmp_path / "a.jsonl"
    source.write_text("\n".join(lines) + "\n")
    jobs.run([source], tmp_path / "lake", FUZZ)
    comparison = fetch_comparison(tmp_path / "lake", agent="crab", baseline="1", candidate="2")
    regressed = comparison.report["regressed_problems"]
    assert [(r["failing_component"], r["failing_reason"]) for r in regressed] == [
        ("crash-check", "no crash in 60 s"),
        ("crash-check", "no crash in 60 s"),
    ]


def test_gate_metadata_lists_its_keys_in_key_order(tmp_path: Path) -> None:
    # json_group_object took the rows in the order the join met them: the same keys came out
    # in another order from one run to the next ({"trace.depth":…,"reason":…,"trace.top_frame"…}
    # beside {"trace.top_frame":…,"trace.depth":…,"reason":…}). Sorted by key, the text of two
    # runs with the same keys reads alike, and a query gives one text.
    lines = []
    for i in range(40):
        record = json.loads(grade(f"r{i}", "1", f"p{i}", 0.0, 0.0))
        record["grade"]["metadata"]["defect_matching"] = {
            "reason": "frame mismatch",
            "trace": {"depth": i, "top_frame": f"f{i}"},
            "attempts": i,
        }
        lines.append(json.dumps(record))
    source = tmp_path / "a.jsonl"
    source.write_text("\n".join(lines) + "\n")
    jobs.run([source], tmp_path / "lake", DEFAULT)
    texts = (
        con_of(tmp_path / "lake").execute("select gate_metadata from failure_reasons").fetchall()
    )
    assert len(texts) == 40
    for (text,) in texts:
        assert list(json.loads(text)) == ["attempts", "reason", "trace.depth", "trace.top_frame"]
