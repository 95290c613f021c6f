-- by_agent: per (agent, agent_version, env_type): runs, grader errors (counted apart, never
-- in a mean), and the metrics of macros/metrics.sql at both levels:
--   mean_score_runs, pass_rate_runs          over scored runs
--   mean_score_problems, pass_rate_problems  over problems (trials averaged; a problem
--                                            passes on a majority of its trials)
-- each with a 95% interval (*_ci_low, *_ci_high): rates Wilson, means as *_ci_method says.
-- The contract's mean_score and pass_rate are the run-level ones (aliases), as are
-- score_se, score_ci_low/high and pass_rate_ci_low/high.
create or replace view by_agent as
with run_level as (
    select
        agent,
        agent_version,
        env_type,
        unnest(run_aggregates(status, score, passed)),
        -- Over scored runs, as every mean here and cost_per_solved; in a fixed order, as a
        -- float sum in another order differs in the last bit from run to run.
        avg(cost_usd order by run_id) filter (where status = 'scored') as mean_cost_usd
    from task_runs
    group by agent, agent_version, env_type
),
problem_level as (
    -- Ordered: int_problem_outcomes comes from a parallel aggregate whose row order varies,
    -- and a float sum in another order differs in the last bit from run to run.
    select
        agent,
        agent_version,
        env_type,
        count(*) as problems,
        avg(score order by problem_id) as mean_score_problems,
        stddev_samp(score order by problem_id) as score_sd_problems,
        pass_rate_problems(passes) as pass_rate_problems
    from int_problem_outcomes
    group by agent, agent_version, env_type
),
joined as (
    select * replace (coalesce(problems, 0) as problems)
    from run_level
    left join problem_level using (agent, agent_version, env_type)
)
select
    agent,
    agent_version,
    env_type,
    runs,
    grader_errors,
    scored_runs,
    problems,
    unnest(run_metrics(
        mean_score_runs, score_sd_runs, scored_runs, pass_rate_runs, pass_n_runs
    )),
    unnest(problem_level_metrics(
        mean_score_problems, score_sd_problems, problems, pass_rate_problems
    )),
    mean_cost_usd
from joined
