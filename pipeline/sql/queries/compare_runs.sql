-- Runs of one agent at the given versions, for compare and history.
-- Parameters: 1 agent (VARCHAR), 2 versions (VARCHAR[]).
select
    run_id,
    agent,
    agent_version,
    problem_id,
    env_type,
    graded_at,
    status,
    score,
    weighted,
    penalty_total,
    gate_passed,
    passed,
    cost_usd,
    tokens,
    wall_seconds
from task_runs
where agent = ? and list_contains(?, agent_version)
order by run_id
