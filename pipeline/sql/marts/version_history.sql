-- version_history: every version of every agent in order of its first graded run, with
-- the metrics of macros/metrics.sql over all its env types: mean_score_problems (95% t interval
-- over problems, clustered as in Miller 2024) and pass_rate_problems (95% Wilson), and the
-- run-level mean_score_runs (normal) and pass_rate_runs (Wilson); grader errors excluded
-- and counted. `python -m pipeline history` shows the same numbers (pipeline/compare/metrics.py).
--
-- The step here is UNPAIRED and approximate (difference of mean_score_problems, normal
-- interval from both standard errors): good for scanning. The paired steps, per env type
-- with the Holm-corrected gate, are in the view version_regressions (and `history`).
create or replace view version_history as
with run_level as (
    select
        agent,
        agent_version,
        min(graded_at) as first_graded_at,
        unnest(run_aggregates(status, score, passed))
    from task_runs
    group by agent, agent_version
),
problem_level as (
    select
        agent,
        agent_version,
        count(*) as problems,
        avg(score order by env_type, problem_id) as mean_score_problems,
        stddev_samp(score order by env_type, problem_id) as score_sd_problems,
        stddev_samp(score order by env_type, problem_id) / sqrt(count(*)) as score_se,
        pass_rate_problems(passes) as pass_rate_problems
    from int_problem_outcomes
    group by agent, agent_version
),
joined as (
    select * replace (coalesce(problems, 0) as problems)
    from run_level
    left join problem_level using (agent, agent_version)
),
ordered as (
    select
        *,
        lag(agent_version) over w as previous_version,
        lag(mean_score_problems) over w as previous_mean_score,
        lag(score_se) over w as previous_score_se,
        row_number() over w as version_index
    from joined
    window w as (partition by agent order by first_graded_at, agent_version)
),
stepped as (
    select
        *,
        mean_score_problems - previous_mean_score as step_delta,
        z95() * sqrt(score_se * score_se + previous_score_se * previous_score_se) as step_half
    from ordered),
measured as (
    select
        *,
        problem_level_metrics(
            mean_score_problems, score_sd_problems, problems, pass_rate_problems
        ) as by_problem
    from stepped
)
select
    agent,
    agent_version,
    version_index,
    first_graded_at,
    runs,
    grader_errors,
    scored_runs,
    problems,
    mean_score_problems,
    score_se,
    by_problem.mean_score_problems_ci_low,
    by_problem.mean_score_problems_ci_high,
    by_problem.mean_score_problems_ci_method,
    pass_rate_problems,
    by_problem.pass_rate_problems_ci_low,
    by_problem.pass_rate_problems_ci_high,
    unnest(run_level_metrics(
        mean_score_runs, score_sd_runs, scored_runs, pass_rate_runs, pass_n_runs
    )),
    previous_version,
    step_delta,
    step_delta - step_half as step_ci_low,
    step_delta + step_half as step_ci_high,
    case
        -- No step to judge: the first version, or a side without a scored problem.
        when previous_version is null or step_delta is null then null
        when score_se is null or previous_score_se is null then 'no_change'
        when step_delta + step_half < 0 then 'regression'
        when step_delta - step_half > 0 then 'improvement'
        else 'no_change'
    end as step_verdict_approx
from measured
