-- Component contributions of the runs of one agent at the given versions.
-- Parameters: 1 agent (VARCHAR), 2 versions (VARCHAR[]).
select
    c.run_id,
    c.component,
    c.contribution,
    c.is_gate
from task_components as c
join task_runs as r on r.run_id = c.run_id
where r.agent = ? and list_contains(?, r.agent_version)
order by c.run_id, c.component
