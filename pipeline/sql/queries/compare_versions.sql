-- The versions of one agent, in order of first graded run.
-- Parameters: 1 agent (VARCHAR).
select
    agent_version,
    min(graded_at) as first_graded_at,
    count(*) as runs
from task_runs
where agent = ?
group by agent_version
order by first_graded_at, agent_version
