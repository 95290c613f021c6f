-- by_agent: per (agent, agent_version, env_type): runs, grader errors (counted
-- apart, never in a mean), mean score with its standard error and 95% interval,
-- pass rate with a 95% Wilson interval, mean cost per run.
create or replace view by_agent as
with scored as (
    select
        agent,
        agent_version,
        env_type,
        count(*) as runs,
        count(*) filter (where status = 'grader_error') as grader_errors,
        count(score) as scored_runs,
        avg(score) as mean_score,
        stddev_samp(score) / sqrt(count(score)) as score_se,
        avg(case when passed then 1.0 when not passed then 0.0 end) as pass_rate,
        count(passed) as pass_n,
        avg(cost_usd) as mean_cost_usd
    from task_runs
    group by agent, agent_version, env_type
)
select
    agent,
    agent_version,
    env_type,
    runs,
    grader_errors,
    scored_runs,
    mean_score,
    score_se,
    mean_score - 1.96 * score_se as score_ci_low,
    mean_score + 1.96 * score_se as score_ci_high,
    pass_rate,
    wilson_low(pass_rate, pass_n) as pass_rate_ci_low,
    wilson_high(pass_rate, pass_n) as pass_rate_ci_high,
    mean_cost_usd
from scored
