-- The closing summary of `make run`: runs and mean score by agent and version.
select
    agent,
    agent_version,
    count(*) as runs,
    count(*) filter (where status = 'grader_error') as grader_errors,
    avg(score) as mean_score,
    avg(case when passed then 1.0 when not passed then 0.0 end) as pass_rate
from task_runs
group by agent, agent_version
order by agent, min(graded_at)
