"""The hand-written DuckDB peer of ``pipeline run`` (issue 16): what a team would write
instead. It reads the JSON Lines with ``read_json`` and explicit column types, scores every
run by docs/scoring.md (rubric weights, gates, minimization, penalties, clamp, as graded,
passed) and writes runs and components to Parquet. No validation, quarantine, dedupe,
lineage or warehouse: that is the pipeline's extra work.

    python -m bench.peers.duckdb_run RUNS.jsonl OUT_DIR [--rubric FILE]

Writes OUT_DIR/runs.parquet and OUT_DIR/components.parquet.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from bench.peers.rubric import PeerRubric, peer_main

# The input's columns with their types: read_json parses each line once into these.
LOAD_RUNS = """
create table runs as
select * exclude (grade),
    grade.subscores, grade.weights, grade.penalties, grade.metadata,
    coalesce(grade.env_internal_failure, false) as env_internal_failure,
    coalesce(grade.allow_unbounded, false) as allow_unbounded,
    (grade.metadata ->> '$.minimization.final_size')::double as final_size,
    (grade.metadata ->> '$.minimization.minimal_size')::double as minimal_size
from read_json($path, format = 'newline_delimited', columns = {
    run_id: 'VARCHAR', agent: 'VARCHAR', agent_version: 'VARCHAR', problem_id: 'VARCHAR',
    env_type: 'VARCHAR', graded_at: 'TIMESTAMPTZ', defect_id: 'VARCHAR', cwe: 'VARCHAR',
    project: 'VARCHAR', trial: 'BIGINT', cost_usd: 'DOUBLE', tokens: 'DOUBLE',
    wall_seconds: 'DOUBLE',
    grade: 'STRUCT(subscores MAP(VARCHAR, DOUBLE), weights MAP(VARCHAR, DOUBLE),
        penalties MAP(VARCHAR, DOUBLE), env_internal_failure BOOLEAN, allow_unbounded BOOLEAN,
        metadata JSON)'})
"""

# Every component of the record or of the rubric for its env type; subscores rescored.
COMPONENTS = """
create table components as
with recorded as (
    select run_id, entry.key as component, entry.value as stored_subscore,
        map_extract_value(weights, entry.key) as record_weight
    from (select run_id, weights, unnest(map_entries(subscores)) as entry from runs)
),
expected as (
    select run_id, component, weight, is_gate from runs join rubric using (env_type)
),
joined as (
    select coalesce(r.run_id, x.run_id) as run_id, coalesce(r.component, x.component) as component,
        r.stored_subscore, r.record_weight, coalesce(x.weight, 0) as weight,
        coalesce(x.is_gate, false) as is_gate,
        r.run_id is not null as in_record, x.run_id is not null as in_rubric
    from recorded r full join expected x on r.run_id = x.run_id and r.component = x.component
)
select j.*,
    case when component = 'minimization' and final_size is not null and minimal_size is not null
        then (case when final_size / minimal_size <= 1 then 1.0
                   when final_size / minimal_size >= $multiple then 0.0
                   else 1 - (final_size / minimal_size - 1) / ($multiple - 1) end)
        else coalesce(stored_subscore, 0) end as subscore
from joined j join runs using (run_id)
"""

# A gate passes when its subscore > 0; when it fails every other component contributes 0.
GATES = """
create table gates as
select runs.run_id, runs.env_internal_failure, g.env_type is not null as has_gate,
    coalesce(max(c.subscore) filter (where c.is_gate), 0) > 0 as gate_ok,
    coalesce(max(c.stored_subscore) filter (where c.is_gate), 0) > 0 as stored_gate_ok
from runs
left join (select distinct env_type from rubric where is_gate) g using (env_type)
left join components c using (run_id)
group by all
"""

COMPONENT_SCORES = """
create table component_scores as
select c.run_id, c.component, c.subscore, c.stored_subscore, c.weight,
    c.record_weight as weight_as_graded, c.is_gate, c.in_record, c.in_rubric,
    not g.env_internal_failure and g.has_gate and not g.gate_ok and not c.is_gate as gated_out,
    case when not g.env_internal_failure then
        case when gated_out then 0 else c.subscore * c.weight end end as contribution,
    case when not g.env_internal_failure then
        case when g.has_gate and not g.stored_gate_ok and not c.is_gate then 0
        else coalesce(c.stored_subscore, 0) * coalesce(c.record_weight, 0) end
    end as contribution_as_graded
from components c join gates g using (run_id)
"""

RUN_SCORES = """
with totals as (
    select run_id, sum(contribution) as weighted, sum(contribution_as_graded) as weighted_as_graded
    from component_scores group by run_id
),
scored as (
    select r.* exclude (subscores, weights, penalties, final_size, minimal_size),
        g.has_gate, g.gate_ok,
        case when not r.env_internal_failure then coalesce(t.weighted, 0) end as weighted,
        case when not r.env_internal_failure then coalesce(t.weighted_as_graded, 0) end
            as weighted_as_graded,
        case when not r.env_internal_failure
            then coalesce(list_sum(map_values(r.penalties)), 0) * $penalty_scale end
            as penalty_total
    from runs r join gates g using (run_id) left join totals t using (run_id)
),
clamped as (
    select * exclude (has_gate, gate_ok),
        case when has_gate and not env_internal_failure then gate_ok end as gate_passed,
        case when not env_internal_failure then has_gate and not gate_ok end as gated_out,
        -- greatest and least skip nulls: a grader error's null totals are kept null.
        case when env_internal_failure then null
            when allow_unbounded then weighted - penalty_total
            else greatest(0, least(1, weighted - penalty_total)) end as score,
        case when env_internal_failure then null
            when allow_unbounded then weighted_as_graded - penalty_total
            else greatest(0, least(1, weighted_as_graded - penalty_total)) end as score_as_graded,
        (not has_gate or gate_ok) as gate_part, has_gate
    from scored
)
select * exclude (gate_part, has_gate),
    case when env_internal_failure then 'grader_error' else 'scored' end as status,
    case when not env_internal_failure then gate_part and
        case when $threshold is null then has_gate or score > 0 else score >= $threshold end
    end as passed
from clamped
"""


def run(jsonl: Path, out: Path, rubric: PeerRubric) -> None:
    out.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    con.execute(
        "create table rubric(env_type varchar, component varchar, weight double, is_gate bool)"
    )
    con.executemany("insert into rubric values (?, ?, ?, ?)", rubric.weights)
    con.execute(LOAD_RUNS, {"path": str(jsonl)})
    con.execute(COMPONENTS, {"multiple": rubric.minimization_multiple})
    con.execute(GATES)
    con.execute(COMPONENT_SCORES)
    con.execute(
        f"copy ({RUN_SCORES}) to '{out / 'runs.parquet'}' (format parquet)",
        {"penalty_scale": rubric.penalty_scale, "threshold": rubric.failure_threshold},
    )
    con.execute(f"copy component_scores to '{out / 'components.parquet'}' (format parquet)")
    con.close()


def main(argv: list[str] | None = None) -> int:
    return peer_main("python -m bench.peers.duckdb_run", "jsonl", run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
