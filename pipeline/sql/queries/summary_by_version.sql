-- The closing summary of `make run`: runs, mean score and pass rate by agent and version,
-- both over scored runs (the run-level metrics of macros/metrics.sql).
select
    agent,
    agent_version,
    count(*) as runs,
    count(*) filter (where status = 'grader_error') as grader_errors,
    mean_score_runs(status, score) as mean_score_runs,
    pass_rate_runs(status, passed) as pass_rate_runs
from task_runs
group by agent, agent_version
order by agent, min(graded_at)
