-- version_history: every version of every agent in order of its first graded
-- run, with mean score and pass rate over problems (trials averaged within a
-- problem first, grader errors excluded and counted), 95% t intervals
-- clustered by problem (Miller 2024: SE = sd / sqrt(n) over problems), and the
-- step against the previous version.
--
-- The step here is UNPAIRED and approximate (difference of means, normal
-- interval from both standard errors): good for scanning. `python -m pipeline
-- history` recomputes every step as a paired comparison on the problems both
-- versions attempted, which is the one to act on.
create or replace view version_history as
with t_table (df, t975) as (
    -- Student t 0.975 quantiles, df 1..30 (scipy.stats.t.ppf(0.975, df)).
    values
        (1, 12.706205), (2, 4.302653), (3, 3.182446), (4, 2.776445), (5, 2.570582),
        (6, 2.446912), (7, 2.364624), (8, 2.306004), (9, 2.262157), (10, 2.228139),
        (11, 2.200985), (12, 2.178813), (13, 2.160369), (14, 2.144787), (15, 2.131450),
        (16, 2.119905), (17, 2.109816), (18, 2.100922), (19, 2.093024), (20, 2.085963),
        (21, 2.079614), (22, 2.073873), (23, 2.068658), (24, 2.063899), (25, 2.059539),
        (26, 2.055529), (27, 2.051831), (28, 2.048407), (29, 2.045230), (30, 2.042272)
),
problem_means as (
    select
        agent,
        agent_version,
        problem_id,
        env_type,
        avg(score) as score,
        avg(cast(passed as double)) as passed
    from task_runs
    where status = 'scored'
    group by agent, agent_version, problem_id, env_type
),
run_counts as (
    select
        agent,
        agent_version,
        min(graded_at) as first_graded_at,
        count(*) as runs,
        count(*) filter (where status = 'grader_error') as grader_errors
    from task_runs
    group by agent, agent_version
),
per_version as (
    select
        agent,
        agent_version,
        count(*) as problems,
        avg(score) as mean_score,
        stddev_samp(score) / sqrt(count(*)) as score_se,
        avg(passed) as pass_rate,
        stddev_samp(passed) / sqrt(count(*)) as pass_rate_se
    from problem_means
    group by agent, agent_version
),
joined as (
    select
        rc.agent,
        rc.agent_version,
        rc.first_graded_at,
        rc.runs,
        rc.grader_errors,
        coalesce(pv.problems, 0) as problems,
        pv.mean_score,
        pv.score_se,
        pv.pass_rate,
        pv.pass_rate_se,
        case
            when pv.problems >= 2 then coalesce(
                tt.t975,
                -- Beyond df 30: Cornish-Fisher expansion of the t quantile
                -- (Abramowitz & Stegun 26.7.5), error < 1e-5 at df 31.
                1.959963984540054
                + 2.372271230298562 / (pv.problems - 1)
                + 2.8224986157396112 / power(pv.problems - 1, 2)
                + 2.555849679507722 / power(pv.problems - 1, 3)
            )
        end as t_crit
    from run_counts as rc
    left join per_version as pv
        on pv.agent = rc.agent and pv.agent_version = rc.agent_version
    left join t_table as tt on tt.df = pv.problems - 1
),
ordered as (
    select
        *,
        lag(agent_version) over w as previous_version,
        lag(mean_score) over w as previous_mean_score,
        lag(score_se) over w as previous_score_se,
        row_number() over w as version_index
    from joined
    window w as (partition by agent order by first_graded_at, agent_version)
)
select
    agent,
    agent_version,
    version_index,
    first_graded_at,
    runs,
    grader_errors,
    problems,
    mean_score,
    score_se,
    mean_score - t_crit * score_se as score_ci_low,
    mean_score + t_crit * score_se as score_ci_high,
    pass_rate,
    pass_rate - t_crit * pass_rate_se as pass_rate_ci_low,
    pass_rate + t_crit * pass_rate_se as pass_rate_ci_high,
    previous_version,
    mean_score - previous_mean_score as step_delta,
    mean_score - previous_mean_score
    - 1.959963984540054 * sqrt(score_se * score_se + previous_score_se * previous_score_se)
        as step_ci_low,
    mean_score - previous_mean_score
    + 1.959963984540054 * sqrt(score_se * score_se + previous_score_se * previous_score_se)
        as step_ci_high,
    case
        when previous_version is null then null
        when score_se is null or previous_score_se is null then 'no_change'
        when mean_score - previous_mean_score
            + 1.959963984540054 * sqrt(score_se * score_se + previous_score_se * previous_score_se)
            < 0 then 'regression'
        when mean_score - previous_mean_score
            - 1.959963984540054 * sqrt(score_se * score_se + previous_score_se * previous_score_se)
            > 0 then 'improvement'
        else 'no_change'
    end as step_verdict_approx
from ordered
