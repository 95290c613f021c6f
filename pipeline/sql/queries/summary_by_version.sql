-- The closing summary of `make run`: runs, mean score and pass rate by agent and version,
-- both over scored runs (the run-level aggregates of macros/metrics.sql), versions in the
-- order they were first graded.
with versions as (
    select
        agent,
        agent_version,
        min(graded_at) as first_graded,
        unnest(run_aggregates(status, score, passed))
    from task_runs
    group by agent, agent_version
)
select agent, agent_version, runs, grader_errors, mean_score_runs, pass_rate_runs
from versions
order by agent, first_graded, agent_version
