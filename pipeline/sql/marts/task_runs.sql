-- task_runs: one row per graded attempt, its context and its score under the
-- current rubric. status is 'scored', 'grader_error' or 'total_out_of_range' (no
-- score: the grader broke, or a total overflowed; excluded from every mean and rate);
-- score_as_graded uses the record's own weights; anomalies lists what looked wrong in
-- the record (never silently fixed).
create or replace view task_runs as
select
    r.run_id,
    r.agent,
    r.agent_version,
    r.problem_id,
    r.env_type,
    r.defect_id,
    r.cwe,
    r.project,
    r.trial,
    r.graded_at,
    s.status,
    s.score,
    s.score_as_graded,
    s.weighted,
    s.weighted_as_graded,
    s.penalty_total,
    s.gate_component,
    s.gate_passed,
    s.gated_out,
    s.passed,
    s.anomalies,
    s.rubric_id,
    r.cost_usd,
    r.tokens,
    r.wall_seconds,
    r.failure_logs,
    r.source,
    r.line,
    r.batch_id,
    r.content_hash,
    r.record
from stg_task_runs as r
left join stg_task_scores as s using (run_id)
